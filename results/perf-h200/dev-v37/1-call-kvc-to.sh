#!/bin/bash
# v37 call 1: the shipped library 945660dae8fe (commit 6f369b6: option attn_kvc_to, default 16384; its official run
# is this session's first call) against its own attn_kvc_to=8192, which is v36's routing (the steps past attn_cl=8192
# by attention_gqa), at prompt 12288 (ctx 12800); then the step trace there (attribution of the long context).
# Prediction (v36 call 4 measured these kernels with attn_cl=16384): 9B ab (B = default) 0.92-0.95; 27B D 0.45-0.55 ms
# under A (5.17 vs 5.65-5.75); trace: the attention (attention_kvct) 0.65-0.75 ms/step, the out projections within
# 0.05 of ctx 1's 0.586, every other kernel within 0.02 of ctx 1.
# Rule, written before the call: the routing stays shipped if the 9B ab is "B faster" with its upper end below 1 and
# the 27B pair agrees in sign; else attn_kvc_to's default goes back to 8192 (a routing option, no kernel change).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 1-q123.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 9b || exit 1
devcall_models 27b &
y=1-q123.yaml # devcall_ab and devcall_suite run in the pack
DEVCALL_AB_ROUNDS=4 DEVCALL_AB_TIMEOUT=230 devcall_ab $y q9-p12288 cuda "graph=1,ctx=12800,attn_kvc_to=8192" cuda "graph=1,ctx=12800" "attn_kvc_to=16384 (B, the default: attention_kvct past 8192) vs 8192 (A: attention_gqa past attn_cl), 9B prompt 12288"
wait
DEVCALL_RUN_TIMEOUT=260 devcall_suite $y q123 'p12288-T|p1-T'
devcall_close $OUT/ab.db $OUT/q123.db
