#!/bin/bash
# v20 call 6: attn=short's clustered form (kc_attention_short_cl, option attn_cl / attn_clsize; default
# off, the default kernels' PTX that of 9ca295f3f4ba): test_kernels; the default bit for bit against
# 9ca295f3f4ba (base.so); the clustered form within rounding of the split kernel (dot=f32), against
# itself without PDL / the graph; bench attn; the suite 6-q55.yaml; ab cl4 vs the default at prompt 512.
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
CL="attn_short=8,attn_cl=4096"
for m in /tmp/w27.gguf /tmp/w9.gguf; do
  timeout 60 $B/engine_diff --a $G/base.so --b $E/libkestrel-cuda.so --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "9ca295f3f4ba vs new default $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
  for cs in 2 4 8; do
    timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options attn=split,dot=f32 --b $E/libkestrel-cuda.so --b-options $CL,attn_clsize=$cs,dot=f32 --model $m --tokens "$toks" --greedy 16 --tol 1e-3 > /tmp/ed.txt 2>&1; echo "split vs cl$cs dot=f32 $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
  done
  for o in pdl=0 graph=0; do
    timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options $CL --b $E/libkestrel-cuda.so --b-options $CL,$o --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "cl4 vs cl4,$o $m rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
  done
done
timeout 150 $B/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench rc $?"; grep -E "split|short" $OUT/bench_attn.tsv
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 250 $B/kestrel-eval run 6-q55.yaml --db $OUT/q55.db > $OUT/q55.log 2>&1; echo "q55 rc $?"
grep -E "^\[" $OUT/q55.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 6-q55.yaml --case d-512 --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,attn_cl=1024,attn_clsize=4" --rounds 6 --db $OUT/ab.db --label "attn_cl=1024 attn_clsize=4 (B) vs the default (A), same library, 27B prompt 512" 2>&1 | tail -4
cd $OUT && for d in q55.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q55.db q55.log ab.db tk.tap bench_attn.tsv && rm -f q55.db q55.log ab.db tk.tap bench_attn.tsv
