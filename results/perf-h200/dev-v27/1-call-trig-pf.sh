#!/bin/bash
# v27 call 1: the delta rule's state L2-prefetched before the PDL wait (delta_pf=1) with the out projection
# launched late (delta_trig=1|3). Why: launched at the delta rule's start (the default), the out projection's
# 18 MB ring preload queues in front of the state's 3 MB of loads, prefetched or not (v20 row 4: delta_pf alone
# 0.9988); launched once the state has returned (v26 row 9: delta_trig=3 alone 0.9992) the preload starts only
# after the state's HBM round trip and is not done when the delta rule ends. With both, the state is in L2
# before the wait (prefetched while gdn_prep runs and HBM idles), returns from L2 right after it, and the preload
# starts ~1-2 us earlier than with trig 3 alone without queueing in front of it. Predicted -0.03 to -0.08 ms per
# 27B token. Library N = HEAD + dev-v25/9-delta-trig3.patch + the PF form (delta_step_trig_kernel<TRIG, PF>);
# base = the shipped 7e10b2082a80. Also gdn=fused (v14: 1.0365) again on today's kernels.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 1-q88.yaml, base.so.xz, base-trace.so.xz into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/base-trace.so.xz
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same $G/base.so "" cuda "delta_trig=3,delta_pf=1" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "" cuda "delta_trig=1,delta_pf=1,graph=0" $DEVCALL_TMP/w27.gguf
devcall_same $G/base.so "" cuda "delta_trig=3,delta_pf=1,pdl=0" $DEVCALL_TMP/w27.gguf
wait
devcall_suite 1-q88.yaml q88 "delta|matvec_out|gdn_prep|rmsnorm_q8"
# refused (two variables): devcall_ab 1-q88.yaml T3P1-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_trig=3,delta_pf=1" "delta_trig=3,delta_pf=1 (B) vs 7e10b2082a80 (A), 27B ctx 1"
# refused (two variables): devcall_ab 1-q88.yaml T1P1-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_trig=1,delta_pf=1" "delta_trig=1,delta_pf=1 (B) vs 7e10b2082a80 (A), 27B ctx 1"
# refused (two variables): DEVCALL_AB_TIMEOUT=100 devcall_ab 1-q88.yaml q9-T3P1 $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_trig=3,delta_pf=1" "delta_trig=3,delta_pf=1 (B) vs 7e10b2082a80 (A), 9B ctx 1"
xz -9 $OUT/tk.tap
devcall_close $OUT/q88.db $OUT/ab.db
