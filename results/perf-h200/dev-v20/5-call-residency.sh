#!/bin/bash
# v20 call 5: block residency beside the next kernel. L1 = the committed tree with rmsnorm8_q8 capped at
# 24 registers (its block fits beside two 80-register TMA GEMV blocks), against the committed
# 9ca295f3f4ba (base.so): test_kernels, same bits, the suite 5-q54.yaml (also the out projections at
# one block per SM with a 200 KB ring, q8t_osm=1,q8t_okb=200), ab L1 vs base.
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null;
  [ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
timeout 150 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok" $OUT/tk.tap | cut -c1-300
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w9.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w9.gguf; do for o in "" "pdl=0" "q8t_osm=1,q8t_okb=200"; do
  timeout 60 $B/engine_diff --a $G/base.so ${o:+--a-options $o} --b $E/libkestrel-cuda.so ${o:+--b-options $o} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "9ca295f3f4ba vs L1 $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done; done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run 5-q54.yaml --db $OUT/q54.db > $OUT/q54.log 2>&1; echo "q54 rc $?"
grep -E "^\[" $OUT/q54.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 5-q54.yaml --case L1-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "L1 (B, rmsnorm8_q8 at 24 registers) vs 9ca295f3f4ba (A), 27B ctx 1" 2>&1 | tail -4
cd $OUT && for d in q54.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q54.db q54.log ab.db tk.tap && rm -f q54.db q54.log ab.db tk.tap
