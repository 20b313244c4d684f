#!/bin/bash
# v20 call 3: the library with attn=short (one block per q head up to 128 positions, a graph per kind
# of step) as its default: test_kernels; its attn=split bit for bit against the shipped
# c67314982e5d (p9.so); its default within rounding of p9 (dot=f32) and against itself without PDL
# / the graph; bench attn (the short kernel alone at every n); the suite 3-q53.yaml; ab of the new
# library against p9 and of delta_pf against the default.
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
for m in /tmp/w27.gguf /tmp/w9.gguf; do
  for o in "attn=split" "attn=split,delta_pf=1" "attn=short,attn_short=0"; do
    timeout 60 $B/engine_diff --a $G/p9.so --b $E/libkestrel-cuda.so --b-options $o --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "c67314982e5d vs new $o $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
  done
  timeout 60 $B/engine_diff --a $G/p9.so --a-options dot=f32 --b $E/libkestrel-cuda.so --b-options dot=f32 --model $m --tokens "$toks" --greedy 16 --tol 1e-3 > /tmp/ed.txt 2>&1; echo "c67314982e5d vs new default, dot=f32 tol 1e-3 $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
  for pair in "graph=1:pdl=0" "graph=1:graph=0" "attn_short=8:attn_short=8,graph=0" "attn_short=8:attn_short=8,pdl=0"; do
    timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options ${pair%%:*} --b $E/libkestrel-cuda.so --b-options ${pair#*:} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "new vs new $pair $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
  done
done
timeout 120 $B/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench rc $?"; grep -E "split|short" $OUT/bench_attn.tsv
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 3-q53.yaml --db $OUT/q53.db > $OUT/q53.log 2>&1; echo "q53 rc $?"
grep -E "^\[" $OUT/q53.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 3-q53.yaml --case d-a --a $G/p9.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "the new library (B, attn=short up to 128 positions) vs the shipped c67314982e5d (A), 27B ctx 1" 2>&1 | tail -4
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 3-q53.yaml --case d-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_pf=1" --rounds 6 --db $OUT/ab.db --label "delta_pf=1 (B) vs the default (A), same library, 27B ctx 1" 2>&1 | tail -4
cd $OUT && for d in q53.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q53.db q53.log ab.db tk.tap bench_attn.tsv && rm -f q53.db q53.log ab.db tk.tap bench_attn.tsv
