#!/bin/bash
# v18 call 1: ffn=ring - test_kernels, bench_gemv --shape ffn, same bits vs the default (2B- and 27B-wide), then speed 27B/9B ctx 1
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
sha256sum $E/libkestrel-cuda.so | cut -c1-16
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
timeout 200 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok|ffn_ring" $OUT/tk.tap | cut -c1-250
timeout 100 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "bench rc $?"; cat $OUT/bench_ffn.tsv
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-2b --type q4_0 --seed 3 --layers 4 --vocab 4096 -o /tmp/w2.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
for m in /tmp/w2.gguf /tmp/w27.gguf; do for o in "ffn=ring" "ffn=ring,pdl=0" "ffn=ring,graph=0"; do
  timeout 120 $B/engine_diff --a $E/libkestrel-cuda.so --b $E/libkestrel-cuda.so --b-options "$o" --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "same_bits $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-150)"
done; done
mkdir -p /tmp/kestrel-perf
T0=$(date +%s); $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null; echo "gen $(( $(date +%s) - T0 )) s"
cd $S; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run q37.yaml --db $OUT/q37.db > $OUT/q37.log 2>&1; echo "q37 rc $?"
grep -E "^\[" $OUT/q37.log | cut -c1-120
cd $OUT && sqlite3 q37.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz q37.db q37.log tk.tap bench_ffn.tsv && rm -f q37.db q37.log tk.tap bench_ffn.tsv
