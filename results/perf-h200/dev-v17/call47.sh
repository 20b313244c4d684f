#!/bin/bash
# v17 call 2: attn=gqa: gpu check of the candidate library (test_kernels' attention tests, same_bits/diffs), then gqa vs split in one run (27B ctx 1/512/4096, 9B 4096, traces at 4096), ab at ctx 512
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf $OUT/gc
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
  $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
GEN=$!
sha256sum $E/*.so | cut -c1-16
T0=$(date +%s)
OUT=$OUT/gc timeout 240 tools/gpu_check.sh --run > $OUT/gc/gpu_check.log 2>&1; echo "gpu_check rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^(not ok|Bail)" $OUT/gc/*.tap 2>/dev/null | head; tail -1 $OUT/gc/test_kernels.tap; grep -E "attention_(gqa|split)" $OUT/gc/test_kernels.tap | cut -c1-200
grep -E "^-- |FAIL|memcheck" $OUT/gc/report.txt | head -30; grep -B1 -A3 'attn=gqa' $OUT/gc/report.txt | cut -c1-200 | head -40
wait $GEN
cd $S
T0=$(date +%s)
KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run q33.yaml --db $OUT/q33.db > $OUT/q33.log 2>&1; echo "q33 rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^\[" $OUT/q33.log | cut -c1-110
$B/kestrel-eval query "select c.name, k.kernel, printf('%.4f', k.ms_per_step), k.calls from kernel_profile k join cases c on c.id=k.case_id where k.kernel like 'attention%' or k.ms_per_step > 0.3 order by c.name, k.ms_per_step desc" --db $OUT/q33.db 2>&1 | head -24
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab q33.yaml --case split-512 --a $E/libkestrel-cuda.so --a-options "graph=1,ctx=4608,attn=split" --b $E/libkestrel-cuda.so --b-options "graph=1,ctx=4608,attn=gqa" --rounds 6 --db $OUT/ab.db --label "attn=gqa (B) vs split (A), 27B ctx 512" 2>&1 | tail -4
cd $OUT && for d in q33.db gc/gpu.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-* gc/gpu.db-*; tar czf all.tgz gc q33.db q33.log ab.db && rm -rf gc q33.db q33.log ab.db && ls -la
