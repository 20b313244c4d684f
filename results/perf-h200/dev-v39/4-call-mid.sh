#!/bin/bash
# v39 call 4, PREPARED for the next session (not run: no device time was left): the v39 default between 1024 and
# 4096 positions, where it was not measured. v39 made 3 clusters of 8 per kv head (attention_kvcx) the default for
# every step past attn_kvc_from = 1024 positions on the strength of 27B prompts 12288 and 4096; v38's bench put 3 x 8
# at 13.99 us against one cluster of 16 (attention_kvct) at 12.90 us at n = 1024, 18.45 vs 19.54 at 4096 (a
# crossing near ~2500 positions). Here: `ab` B = the default against A = `attn_kvc=16,attn_kvc_sp=1` (v38's default)
# at prompt 1536 (steps of 1537-1646 positions), 27B and 9B, on the library HEAD builds (a02143b17a5c at 2-12-02: the
# shipped 50b7b8b68e3c's routing for these options; it differs only for attn_kvc given alone).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and
# 4-q132.yaml into .carry/gpu-check/. ~150 device-seconds with the start (27B ~9 s per run, 9B ~3 s; 3 pairs each).
# Prediction (the bench's ~+0.8 us per attention layer at ~1600 positions, 16 layers; the 9B 8 layers): 27B
# 1.001-1.004, 9B 1.001-1.005: "no difference" or "B slower, below min_effect".
# Rule, written before the call: if either ab's lower end is above 1 (B slower beyond noise), the next change is a
# routing bound for the split form (attn_kvc_sp applied past a number of positions, its own option and ab at prompts
# 1536 and 4096); else the default stands as it is.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b
A="graph=1,ctx=2048,attn_kvc=16,attn_kvc_sp=1"
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=150 devcall_ab 4-q132.yaml q27-p1536 cuda "$A" cuda "graph=1,ctx=2048" "the default (B, 3 clusters of 8) vs one cluster of 16 (A), 27B prompt 1536"
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=90 devcall_ab 4-q132.yaml q9-p1536 cuda "$A" cuda "graph=1,ctx=2048" "the default (B, 3 clusters of 8) vs one cluster of 16 (A), 9B prompt 1536"
devcall_close $OUT/ab.db
