#!/bin/bash
# v16 call 3: norm_tail (the next RMS norm in the residual GEMV's last block): gpu check (test_kernels' bitexact norm_tail, same_bits norm_tail on/off), step, trace, ab on/off
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
wait $GEN
cd $S
KESTREL_ENGINE_DIR=$E timeout 120 $B/kestrel-eval run q31.yaml --db $OUT/q31.db > $OUT/q31.log 2>&1; echo "q31 rc $?"
grep -E "^\[" $OUT/q31.log | cut -c1-110
$B/kestrel-eval query "select k.kernel, printf('%.4f', k.ms_per_step), k.calls from kernel_profile k join cases c on c.id=k.case_id order by k.ms_per_step desc" --db $OUT/q31.db 2>&1 | head -16
KESTREL_ENGINE_DIR=$E timeout 110 $B/kestrel-eval ab q31.yaml --case new-1 --a $E/libkestrel-cuda.so --a-options "graph=1,ctx=4608" --b $E/libkestrel-cuda.so --b-options "graph=1,ctx=4608,norm_tail=1" --rounds 6 --db $OUT/ab.db --label "norm_tail=1 (B) vs 0 (A), one library" 2>&1 | tail -4
cd $OUT && for d in q31.db gc/gpu.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f q31.db-* gc/gpu.db-*; tar czf all.tgz gc q31.db q31.log ab.db && rm -rf gc q31.db q31.log ab.db && ls -la
