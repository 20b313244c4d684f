#!/bin/bash
# v36 call 3: the ship rule's abs (written in 2-call-kvct.sh before call 2), measured on the library with
# attn_kvc_tm=1 as its default (B) against attn_kvc_tm=0 (A, the bulk copy per row of v35): the 27B prompt-4096 ab's
# upper end below 1; the 9B prompt-4096 ab not "B slower", its upper end at most 1.01. Call 2 (same kernels, the
# option off by default): 27B prompt 4096 4.850 vs 4.969 ms/token, 9B 1.736 vs 1.797.
# Prediction: 27B 0.970-0.985, 9B 0.960-0.975.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 3-q120.yaml into the pack.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b || exit 1
DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=330 devcall_ab 3-q120.yaml p4096 cuda "graph=1,ctx=4608,attn_kvc_tm=0" cuda "graph=1,ctx=4608" "attn_kvc_tm=1 (B, default: attention_kvct) vs attn_kvc_tm=0 (A), 27B prompt 4096"
DEVCALL_AB_ROUNDS=4 DEVCALL_AB_TIMEOUT=120 devcall_ab 3-q120.yaml q9-p4096 cuda "graph=1,ctx=4608,attn_kvc_tm=0" cuda "graph=1,ctx=4608" "attn_kvc_tm=1 (B, default: attention_kvct) vs attn_kvc_tm=0 (A), 9B prompt 4096"
devcall_close $OUT/ab.db
