#!/bin/bash
# v18 call 12: the wide down projection with x in registers (q8t_wdot=reg): test_kernels, bench dtma, same bits, speed
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
timeout 200 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok" $OUT/tk.tap | cut -c1-300
timeout 100 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; echo "bench rc $?"; grep down $OUT/bench_dtma.tsv
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w9.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w9.gguf; do
  timeout 120 $B/engine_diff --a $E/shipped.so --b $E/libkestrel-cuda.so --b-options q8t_wdot=reg --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "shipped vs reg $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-150)"
done
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
[ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null
cd $G; KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval run q42.yaml --db $OUT/q42.db > $OUT/q42.log 2>&1; echo "q42 rc $?"
grep -E "^\[" $OUT/q42.log | cut -c1-120
cd $OUT && sqlite3 q42.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz q42.db q42.log tk.tap bench_dtma.tsv && rm -f q42.db q42.log tk.tap bench_dtma.tsv
