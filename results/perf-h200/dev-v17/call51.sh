#!/bin/bash
# v17 call 6: attn=gqa v4: bench, GPU check of the candidate library, default path vs the shipped engine bit for bit, gqa vs split in one run
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf $OUT/gc
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
( $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
  $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
GEN=$!
sha256sum $E/*.so $S/shipped.so | cut -c1-16
timeout 60 $B/bench_gemv --shape attn 2>&1 | grep attn | cut -f2,5 | tee $OUT/bench-attn.tsv
T0=$(date +%s)
OUT=$OUT/gc timeout 240 tools/gpu_check.sh --run > $OUT/gc/gpu_check.log 2>&1; echo "gpu_check rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^(not ok|Bail)" $OUT/gc/*.tap 2>/dev/null | head; tail -1 $OUT/gc/test_kernels.tap; grep -E "^-- " $OUT/gc/report.txt
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf > /dev/null
$B/kestrel-eval gen-model --preset qwen3.5-2b --type q4_0 --seed 3 --layers 4 --vocab 4096 -o /tmp/w2.gguf > /dev/null
for m in w27 w2; do timeout 60 $B/engine_diff --a $S/shipped.so --b $E/libkestrel-cuda.so --model /tmp/$m.gguf --tokens 1,2,3,4,5,6,7,8,9,10,11,12 --greedy 16 --tol 0 > /tmp/ed.log 2>&1; echo "shipped vs new default $m rc $? $(tail -2 /tmp/ed.log | tr '\n' ' ')"; done
wait $GEN
cd $S
T0=$(date +%s)
KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run q35.yaml --db $OUT/q35.db > $OUT/q35.log 2>&1; echo "q35 rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^\[" $OUT/q35.log | cut -c1-110
$B/kestrel-eval query "select c.name, k.kernel, printf('%.4f', k.ms_per_step), k.calls from kernel_profile k join cases c on c.id=k.case_id where k.kernel like 'attention%' order by c.name" --db $OUT/q35.db 2>&1 | head
cd $OUT && for d in q35.db gc/gpu.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-* gc/gpu.db-*; tar czf all.tgz gc q35.db q35.log bench-attn.tsv && rm -rf gc q35.db q35.log bench-attn.tsv && ls -la
