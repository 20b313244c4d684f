#!/bin/bash
# v36 call 4: "After v36" item 1 measured with the shipped library (cbf11b13baa6) and an existing option, no code
# change: attn_cl=16384 lets the steps with 8192 < n <= 16384 take the clustered kind, i.e. attention_kvct (16 blocks
# per kv head hold 1024 positions each: kc_attention_kvc_ok takes min(ctx, attn_cl) = 12800), where the default
# (attn_cl=8192) takes attention_gqa. Bench (call 2): kvct 32.85 vs gqa 52.57 us at n = 8192, 54.84 vs 75.91 at 16384.
# Prediction: at prompt 12288 (n ~12300-12400) kvct ~44 us vs gqa ~64 per attention layer: 27B -0.3 ms (16 layers
# x 20 us, ~5.5%), 9B (8 attention layers) -0.15 ms (~7%): ab 0.92-0.96.
# Rule, written before the call: if the 9B ab (B = attn_cl=16384) has its upper end below 1 and the 27B pair agrees in
# sign, the next session makes the steps past 8192 positions take attention_kvct where it takes the shape (a routing
# change, with its GPU-check routing pairs and an official run); this call ships nothing.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 4-q121.yaml and 4-q122.yaml.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 9b || exit 1
devcall_models 27b &
DEVCALL_AB_ROUNDS=4 DEVCALL_AB_TIMEOUT=230 devcall_ab 4-q122.yaml q9-p12288 cuda "graph=1,ctx=12800" cuda "graph=1,ctx=12800,attn_cl=16384" "attn_cl=16384 (B: attention_kvct past 8192) vs the default (A: attention_gqa past 8192), 9B prompt 12288"
wait
DEVCALL_RUN_TIMEOUT=200 devcall_suite 4-q121.yaml q121 'attention'
for c in p12288-D-a p12288-L-a; do
  echo "$c $(grep -E "$c " $OUT/q121-log.txt | sed 's/.*ms\/token=\([0-9.]*\).*/\1/' | head -1)"
done
devcall_close $OUT/ab.db $OUT/q121.db
