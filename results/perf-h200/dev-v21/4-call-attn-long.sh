#!/bin/bash
# v21 call 4: attn_long=gqa (attn=short's steps past attn_cl by kv head; the bench put attention_gqa at
# 52.9 / 76.5 / 122.2 us against the clustered form's 67.1 / 124.0 / 237.7 at n = 8192 / 16384 / 32768,
# but at prompt 4096 the step had it 0.18 ms/token slower): 27B prompt 8192 and 16384, 9B 16384; first
# attn_long=gqa against the split kernel and itself (engine_diff) on a 27B-wide 4-layer model.
# Pack: tools/gpu_check.sh --pack of library afd6a4b90cbd; copy this script and 4-q57.yaml into .carry/gpu-check/.
set -u
G=$PWD/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null &
[ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null &
w27=/tmp/w27.gguf; $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o $w27 >/dev/null
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
L="attn_short=4,attn_cl=8,attn_long=gqa"
timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options attn=split,dot=f32 --b $E/libkestrel-cuda.so --b-options $L,dot=f32 --model $w27 --tokens "$toks" --greedy 16 --tol 1e-3 > /tmp/ed.txt 2>&1; echo "split vs $L dot=f32 rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
for o in pdl=0 graph=0; do
  timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --a-options $L --b $E/libkestrel-cuda.so --b-options $L,$o --model $w27 --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "$L vs +$o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 520 $B/kestrel-eval run 4-q57.yaml --db $OUT/q57.db > $OUT/q57.log 2>&1; echo "q57 rc $?"
grep -E "^\[" $OUT/q57.log | cut -c1-100
cd $OUT && sqlite3 q57.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; xz -9 q57.db
