#!/bin/bash
# v22 call 3: L2 = L1 + the folded RMS norm with one round trip (rms_fold=1; the default path unchanged
# but for the fold's branch): test_kernels, same bits (L1 vs L2 default, L1 default vs L2 rms_fold=1,
# fold with pdl=0 / graph=0), the suite 3-q60.yaml, ab fold vs L2 default.
# Pack: tools/gpu_check.sh --pack of L2; copy this script, 3-q60.yaml and L1.so into .carry/gpu-check/.
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null;
  [ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
timeout 150 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok" $OUT/tk.tap | cut -c1-300; grep "rms_fold" $OUT/tk.tap | cut -c1-200
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w9.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w9.gguf; do for o in "|" "|rms_fold=1" "pdl=0|rms_fold=1,pdl=0" "graph=0|rms_fold=1,graph=0"; do
  ao=${o%|*}; bo=${o#*|}
  timeout 60 $B/engine_diff --a $G/L1.so ${ao:+--a-options $ao} --b $E/libkestrel-cuda.so ${bo:+--b-options $bo} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "L1 [$ao] vs L2 [$bo] $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done; done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run 3-q60.yaml --db $OUT/q60.db > $OUT/q60.log 2>&1; echo "q60 rc $?"
grep -E "^\[" $OUT/q60.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 170 $B/kestrel-eval ab 3-q60.yaml --case fold-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,rms_fold=1" --rounds 6 --db $OUT/ab.db --label "L2 rms_fold=1 (B) vs L2 default (A), 27B ctx 1" 2>&1 | tail -4
cd $OUT && for d in q60.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q60.db q60.log ab.db tk.tap && rm -f q60.db q60.log ab.db tk.tap
