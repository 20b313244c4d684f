#!/bin/bash
# v35 call 1: the clustered steps by kv head (option attn_kvc=C, attention_kvc_kernel<G, PREP>): a cluster of C
# blocks per kv head, block r the positions [r c, (r+1) c), each K/V row read once for the G q heads (the
# clustered short attention reads it once per q head: 6 x 34 MB through L2 per 27B layer at n = 4096, bench
# 37.5 us, ~5 TB/s: L2-bound); a producer warp streams the block's K rows then its V rows through a 4-slot ring of
# 32 rows (128 KB); pass 1 the scores of 2 rows x G heads per warp reduced together (a 16-sum reduce-scatter),
# pass 2 p x V; the C partials merged through distributed shared memory (no ticket); attn_prep inside (attn_fuse
# bit 2, the default). N = this tree, the defaults unchanged (PTX of the 164 existing kernels identical).
# Prediction: bench n = 4096 12-20 us (cluster(4) 37.6); 27B prompt 4096 -0.15 to -0.35 ms; prompt 512 within +-1%.
# Ship rule, written before the call: attn_kvc=C (C the faster of 16 and 8 at prompt 4096) becomes the default of
# the clustered steps if test_kernels passes, the kvc-vs-cluster diffs (dot=f32 tol 1e-3, routing checked) and
# the bit-identity pairs (pdl=0, graph=0) pass, and (call 2) the 27B prompt-4096 ab (B = attn_kvc) has its upper
# end below 1, the 27B prompt-512 ab is not "B slower", and the 9B prompt-4096 ab is not "B slower" with its upper
# end at most 1.01; then the GPU check and the official run. Call 2 only if K is 1% under D at prompt 4096 here.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 1-q114.yaml.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'attention_kvc|kvc\(' $OUT/tk.tap | cut -c1-220 | head -20
timeout 150 $B/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench_attn rc $?"
grep -E 'n=(128|256|512|1024|4096|8192|16384)\b' $OUT/bench_attn.tsv | grep -E 'short_cl\(4\)|gqa n=[0-9]+ skip=0|attention_kvc' | cut -f2,5
devcall_wide 27b 9b
ed() { # LABEL MODEL AOPTS BOPTS TOL [engine_diff arguments]: 16 prompt + 48 greedy tokens
  local l=$1 m=$2 ao=$3 bo=$4 t=$5
  shift 5
  timeout 120 $B/engine_diff --a $E/libkestrel-cuda.so --a-options "$ao" --b $E/libkestrel-cuda.so --b-options "$bo" \
    --model $DEVCALL_TMP/$m.gguf --tokens "$DEVCALL_TOKENS" --greedy 48 --tol "$t" "$@" > $DEVCALL_TMP/ed.txt 2>&1
  local rc=$?
  { echo "== $l on $m"; cat $DEVCALL_TMP/ed.txt; } >> $OUT/ed.txt
  echo "$l on $m [$ao] vs [$bo] tol $t: rc $rc $(tail -1 $DEVCALL_TMP/ed.txt | cut -c1-120)"
}
L=attn_short=4
for m in w27 w9; do
  ed kvc16-cl $m $L,dot=f32 $L,attn_kvc=16,dot=f32,profile=1 1e-3 --b-kernel attention_kvc --b-no-kernel attention_short_cl_prep
  ed kvc16-noprep $m $L,dot=f32 $L,attn_kvc=16,attn_fuse=1,dot=f32,profile=1 1e-3 --b-kernel attention_kvc --b-kernel attn_prep --b-no-kernel attention_short_cl
  ed kvc8-cl $m $L,dot=f32 $L,attn_kvc=8,dot=f32 1e-3
  ed kvc3-cl $m $L,dot=f32 $L,attn_kvc=3,dot=f32 1e-3
  ed kvc16-pdl0 $m $L,attn_kvc=16 $L,attn_kvc=16,pdl=0 0
done
ed kvc16-graph0 w27 $L,attn_kvc=16 $L,attn_kvc=16,graph=0 0
wait
devcall_suite 1-q114.yaml q114
for c in p4096-D-a p4096-K16-a p4096-K8-a p4096-K16-b p4096-D-b p512-D-a p512-K16-a p512-K8-a q9-p4096-D-a q9-p4096-K16-a; do
  echo "$c $(grep -E "$c " $OUT/q114-log.txt | sed 's/.*ms\/token=\([0-9.]*\).*/\1/' | head -1)"
done
devcall_close $OUT/q114.db
