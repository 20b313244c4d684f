#!/bin/bash
# v16 call 2: the delta rule's loads at once, contraction pinned: gpu check of the candidate (incl. the memcheck step), vs the official engine, step, trace, ab
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf $OUT/gc
M=/tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
[ -s $M ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o $M >/dev/null &
GEN=$!
cp $S/base.so $E/base.so; sha256sum $E/*.so | cut -c1-16
OUT=$OUT/gc timeout 330 tools/gpu_check.sh --run > $OUT/gc/gpu_check.log 2>&1; echo "gpu_check rc $?"
grep -E "^(not ok|Bail)" $OUT/gc/*.tap 2>/dev/null | head; tail -1 $OUT/gc/test_kernels.tap; grep -E "^-- |FAIL|memcheck" $OUT/gc/report.txt | head -30; grep -iE "memcheck|ERROR SUMMARY" $OUT/gc/gpu_check.log | head
T="1,2,3,4,5,6,7,8"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf > /dev/null
for o in "" "--b-options pdl=0"; do timeout 60 $B/engine_diff --a $E/base.so --b $E/libkestrel-cuda.so $o --model /tmp/w27.gguf --tokens $T --greedy 16 --tol 0.05 > $OUT/gc/ed.log 2>&1; echo "engine_diff base vs new w27 $o rc $? $(tail -1 $OUT/gc/ed.log)"; done
wait $GEN
cd $S
KESTREL_ENGINE_DIR=$E timeout 120 $B/kestrel-eval run q30.yaml --db $OUT/q30.db > $OUT/q30.log 2>&1; echo "q30 rc $?"
grep -E "^\[" $OUT/q30.log | cut -c1-110
$B/kestrel-eval query "select k.kernel, printf('%.4f', k.ms_per_step), k.calls from kernel_profile k join cases c on c.id=k.case_id order by k.ms_per_step desc" --db $OUT/q30.db 2>&1 | head -14
KESTREL_ENGINE_DIR=$E timeout 110 $B/kestrel-eval ab q30.yaml --case new-1 --a $E/base.so --a-options "graph=1,ctx=4608" --b $E/libkestrel-cuda.so --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "delta loads at once + pinned contraction (B) vs 02503738c571 (A)" --force 2>&1 | tail -4
cd $OUT && for d in q30.db gc/gpu.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f q30.db-* gc/gpu.db-*; tar czf all.tgz gc q30.db q30.log ab.db && rm -rf gc q30.db q30.log ab.db && ls -la
