#!/bin/bash
# v17 call 5: attn=gqa v3 (512 threads, one split without merge up to 64 positions): bench, test_kernels, gqa vs split in one run, ab at ctx 512
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
( $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
  $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
GEN=$!
sha256sum $E/*.so | cut -c1-16
timeout 60 $B/bench_gemv --shape attn 2>&1 | grep attn | cut -f2,5 | tee $OUT/bench-attn.tsv
timeout 150 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "tk rc $?"; grep -E '^not ok|Bail' $OUT/tk.tap | head; grep -c 'attention_gqa.*vs CPU' $OUT/tk.tap; tail -1 $OUT/tk.tap
wait $GEN
cd $S
T0=$(date +%s)
KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run q33.yaml --db $OUT/q33.db > $OUT/q33.log 2>&1; echo "q33 rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^\[" $OUT/q33.log | cut -c1-110
$B/kestrel-eval query "select c.name, k.kernel, printf('%.4f', k.ms_per_step), k.calls from kernel_profile k join cases c on c.id=k.case_id where k.kernel like 'attention%' order by c.name" --db $OUT/q33.db 2>&1 | head
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab q33.yaml --case split-512 --a $E/libkestrel-cuda.so --a-options "graph=1,ctx=4608,attn=split" --b $E/libkestrel-cuda.so --b-options "graph=1,ctx=4608,attn=gqa" --rounds 6 --db $OUT/ab.db --label "attn=gqa v3 (B) vs split (A), 27B ctx 512" 2>&1 | tail -4
cd $OUT && for d in q33.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q33.db q33.log ab.db tk.tap bench-attn.tsv && rm -rf q33.db q33.log ab.db tk.tap bench-attn.tsv && ls -la
