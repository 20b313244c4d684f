#!/bin/bash
# v18 call 8: the wide down projection's dot unrolled (q8t_wu): test_kernels, bench dtma, same bits vs shipped, speed, ab
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
timeout 200 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok|wide \(x in" $OUT/tk.tap | cut -c1-300
timeout 100 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; echo "bench rc $?"; cat $OUT/bench_dtma.tsv
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w9.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w9.gguf; do
  timeout 120 $B/engine_diff --a $E/shipped.so --b $E/libkestrel-cuda.so --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "shipped vs new $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-150)"
  for o in "q8t_wu=0" "pdl=0" "graph=0"; do
  timeout 120 $B/engine_diff --a $E/libkestrel-cuda.so --b $E/libkestrel-cuda.so --b-options "$o" --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "same_bits $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-150)"
  done
done
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
[ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null
cd $G; KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval run q41.yaml --db $OUT/q41.db > $OUT/q41.log 2>&1; echo "q41 rc $?"
grep -E "^\[" $OUT/q41.log | cut -c1-120
KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval ab q41.yaml --case wu1-a --a cuda --a-options "graph=1,ctx=4608,q8t_wu=0" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "q8t_wu=1 (B, default) vs q8t_wu=0 (A), 27B ctx 1" 2>&1 | tail -5
cd $OUT && for d in q41.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q41.db q41.log ab.db tk.tap bench_dtma.tsv && rm -f q41.db q41.log ab.db tk.tap bench_dtma.tsv
