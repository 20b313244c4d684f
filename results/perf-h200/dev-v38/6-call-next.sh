#!/bin/bash
# v38 call 6, PREPARED for the next session's first call (not run: no device time was left): "After v38" item 1, the
# `ab`s that decide attn_kvc=8,attn_kvc_sp=3 as the default, on the shipped 0ae04581d466 (no rebuild: the option is
# in it). Pack: tools/gpu_check.sh --pack /tmp/build-lead (HEAD builds 0ae04581d466 there); copy this script and
# 6-q131.yaml into .carry/gpu-check/. Two calls (ab takes 3 rounds at least, a round 2 runs): `6-call-next.sh 12288`
# (~420 device-seconds: ~62 s per run) and `6-call-next.sh 4096` (~160: ~22 s per run).
# Prediction (v38 calls 2 and 4: 5.113 / 5.064 vs 5.180 / 5.163; prompt 4096 4.819 vs 4.832): 27B prompt 12288 ab
# 0.980-0.990, prompt 4096 0.995-1.000.
# Rule, written before the call: set ATTN_KVC_DEFAULT 8 and ATTN_KVC_SP_DEFAULT 3 in cuda/cuda_engine.cu (host code
# only) and run the official job, if the prompt-12288 ab's upper end is below 1 and the prompt-4096 ab's lower end is
# below 1.003 (not slower beyond noise); else the option stays off.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b
X="graph=1,ctx=12800,attn_kvc=8,attn_kvc_sp=3"
p=${1:?usage: 6-call-next.sh 12288|4096}
case $p in 12288) t=450 ;; 4096) t=200 ;; *) echo "6-call-next: prompt $p: expected 12288 or 4096" >&2; exit 2 ;; esac
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=$t devcall_ab 6-q131.yaml q27-p$p cuda "graph=1,ctx=12800" cuda "$X" "attn_kvc=8,attn_kvc_sp=3 (B) vs the default (A), 27B prompt $p"
devcall_close $OUT/ab.db
