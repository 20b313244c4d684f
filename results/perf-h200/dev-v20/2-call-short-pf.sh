#!/bin/bash
# v20 call 2: attn=short and delta_pf (options of one library; default kernels' PTX the same as the
# shipped c67314982e5d by tools/ptx_diff.sh): test_kernels, same bits of the default and of delta_pf
# vs the shipped library (p9.so), attn=short vs the default within rounding (dot=f32), bench attn,
# the suite 2-q52.yaml, ab both vs the default (27B ctx 1).
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null;
  [ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
timeout 150 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok" $OUT/tk.tap | cut -c1-300
grep -E "short|_pf" $OUT/tk.tap | cut -c1-200 | head -40
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w9.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w9.gguf; do for o in "" "delta_pf=1" "delta_pf=1,pdl=0" "delta_pf=1,graph=0"; do
  timeout 60 $B/engine_diff --a $G/p9.so --b $E/libkestrel-cuda.so ${o:+--b-options $o} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "c67314982e5d vs new $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done
  for o in "attn=short" "attn=short,attn_short=8" "attn=short,pdl=0" "attn=short,graph=0"; do
  timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options dot=f32 --b $E/libkestrel-cuda.so --b-options dot=f32,$o --model $m --tokens "$toks" --greedy 16 --tol 1e-3 > /tmp/ed.txt 2>&1; echo "f32 default vs $o $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-120)"
  done
  timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options attn=short --b $E/libkestrel-cuda.so --b-options attn=short,pdl=0,graph=0 --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "attn=short vs itself pdl=0,graph=0 $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done
timeout 100 $B/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench rc $?"; grep -E "split|short" $OUT/bench_attn.tsv
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 2-q52.yaml --db $OUT/q52.db > $OUT/q52.log 2>&1; echo "q52 rc $?"
grep -E "^\[" $OUT/q52.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval ab 2-q52.yaml --case d-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,attn=short,delta_pf=1" --rounds 6 --db $OUT/ab.db --label "attn=short,delta_pf=1 (B) vs the default (A), same library, 27B ctx 1" 2>&1 | tail -5
cd $OUT && for d in q52.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q52.db q52.log ab.db tk.tap bench_attn.tsv && rm -f q52.db q52.log ab.db tk.tap bench_attn.tsv
