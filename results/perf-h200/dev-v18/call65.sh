#!/bin/bash
# v18 call 15: y loaded before the stage wait, the stage released before y is written (all TMA GEMVs)
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null ) &
timeout 100 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok" $OUT/tk.tap | cut -c1-200
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-2b --type q4_0 --seed 3 --layers 4 --vocab 4096 -o /tmp/w2.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w2.gguf; do for o in "" "pdl=0"; do
  timeout 60 $B/engine_diff --a $G/shipped.so --b $E/libkestrel-cuda.so ${o:+--b-options $o} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "shipped vs new $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done; done
timeout 40 $B/bench_gemv --shape dtma 2>&1 | grep -E "skip0|skip1" | tee $OUT/bench_dtma.tsv
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval run q43.yaml --db $OUT/q43.db > $OUT/q43.log 2>&1; echo "q43 rc $?"
grep -E "^\[" $OUT/q43.log | cut -c1-100
cd $OUT && sqlite3 q43.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz q43.db q43.log tk.tap bench_dtma.tsv && rm -f q43.db q43.log tk.tap bench_dtma.tsv
