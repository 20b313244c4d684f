#!/bin/bash
# v34 call 1. The long context ("After v21" item 2, untouched since): at n = 4096 the clustered short attention
# takes ~37.5 us per 27B attention layer (bench, v21) for 34 MB of K/V (~7.5 us at the probe's bandwidth): each
# of the 24 q heads' 4 blocks reads its kv head's rows (6 x the bytes through L2) in 16 dependent round trips per
# warp. attention_kv (option attn_long=kv|kvpf, new): grid (nkv, 32), each block the G = 6 q heads of its kv head
# over a chunk of positions, every K/V row read once into registers, an online softmax per head in each warp,
# partials + ticket + merge as attention_gqa; kvpf first prefetches the block's rows into L2 (one bulk prefetch
# per 1 KB row). N = this tree (the shipped kernels' PTX unchanged; the defaults take none of the new code).
# Prediction: bench at n = 4096 10-16 us (cluster 37.5); 27B prompt 4096 step -0.3 to -0.45 ms (5.08 -> ~4.7),
# 9B -0.1 to -0.2 ms; ctx 1 untouched (n <= 128 takes the one-block kernel).
# This call measures; the ship rule goes with call 2's ab (written before it).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 1-q111.yaml.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'attention_(kv|gqa|split|short)' $OUT/tk.tap | grep -E 'kv|not ok' | cut -c1-240
timeout 150 $B/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench_attn rc $?"
grep -E 'n=(512|1024|4096|8192|16384|32768)' $OUT/bench_attn.tsv | grep -E 'short_cl\(4\)|gqa n=[0-9]+ skip=0|attention_kv' | cut -f2,5
devcall_wide 27b 9b
# engine_diff over 16 prompt tokens and 48 greedy ones: steps of up to 64 positions, so attention_kv (past
# attn_cl=8) also merges 2 splits (32 positions per split at least)
ed() { # LABEL MODEL AOPTS BOPTS TOL [engine_diff arguments]
  local l=$1 m=$2 ao=$3 bo=$4 t=$5
  shift 5
  timeout 120 $B/engine_diff --a $E/libkestrel-cuda.so --a-options "$ao" --b $E/libkestrel-cuda.so --b-options "$bo" \
    --model $DEVCALL_TMP/$m.gguf --tokens "$DEVCALL_TOKENS" --greedy 48 --tol "$t" "$@" > $OUT/ed-$l-$m.txt 2>&1
  echo "$l on $m [$ao] vs [$bo] tol $t: rc $? $(tail -1 $OUT/ed-$l-$m.txt | cut -c1-120)"
}
L=attn_short=4,attn_cl=8
for m in w27 w9; do
  ed kv-split $m attn=split,dot=f32 $L,attn_long=kv,dot=f32,profile=1 1e-3 --b-kernel attention_kv --b-no-kernel attention_gqa
  ed kv-kvpf $m $L,attn_long=kv $L,attn_long=kvpf 0
  ed kv-pdl0 $m $L,attn_long=kv $L,attn_long=kv,pdl=0 0
done
ed kvpf-graph0 w27 $L,attn_long=kvpf $L,attn_long=kvpf,graph=0 0
wait
devcall_suite 1-q111.yaml q111
devcall_close $OUT/q111.db
