#!/bin/bash
# v38 call 4: data for a later ship decision on attn_kvc_sp (the official run of 0ae04581d466, call 3, has it off).
# Call 2 had the 9B prompt 12288 at 1.848 (7 clusters of 4) / 1.886 (3 of 8) vs 1.919 and the 27B at 5.113 (3 of
# 8) vs 5.180, 7 of 4 not run there. Here: `ab` 9B prompt 12288, B = attn_kvc=4,attn_kvc_sp=7 vs A = the default
# (3 rounds); the 27B prompt-12288 cases X47, D, X83 in one run.
# Prediction: 9B ab 0.96-0.975 (B faster); 27B X47 5.05-5.10 vs D 5.13-5.18, X83 ~0.06 under D.
# Rule: this call ships nothing (no device time is left for another official run); a later session makes the faster
# form the default past a threshold if its own ab of the 27B confirms >= 0.08 ms at prompt 12288.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 4-q129.yaml q9-p12288 cuda "graph=1,ctx=12800" cuda "graph=1,ctx=12800,attn_kvc=4,attn_kvc_sp=7" "attn_kvc=4,attn_kvc_sp=7 (B: 7 clusters of 4 per kv head, attention_kvcx) vs the default (A: attention_kvct, one cluster of 16), 9B prompt 12288"
DEVCALL_RUN_TIMEOUT=230 devcall_suite 4-q129.yaml q129 '^q27.*,attention'
devcall_close $OUT/ab.db $OUT/q129.db
