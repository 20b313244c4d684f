#!/bin/bash
# v30 call 5. The delta rule's q and k read from shared memory as float4 (delta_column<128>): the same values
# in the same order, so the same bits; the change is that NVVM no longer picks the loads' vector widths itself,
# which it did differently from one compilation of one source to the next (two builds of e88132a: two
# libraries). N = b73ae0812cf0 (this tree, built twice here: the same SHA-256), O = 745286ba907e (e88132a's
# sources built at /tmp/v30base). Prediction: the same bits; the step within noise (the loads were already
# vectorised in part; -0 to -0.3%).
# Ship rule, written before the call: ship N if engine_diff --tol 0 finds N and O the same on the 27B- and
# 9B-wide models (also with gdn=fused, the other kernel that calls delta_column<128>), test_kernels passes,
# the 27B `ab` (12 pairs) is not "B slower" with its interval's upper end below 1.01, and the 9B's likewise;
# then its official run (call 6) with the full GPU check.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 5-q100.yaml and base.so.xz (O).
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "N $(devcall_sha) O $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_test_kernels
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  devcall_same $G/base.so "gdn=fused" cuda "gdn=fused" $DEVCALL_TMP/$m.gguf
  devcall_same $G/base.so "delta_trig=0,delta_pf=0" cuda "delta_trig=0,delta_pf=0" $DEVCALL_TMP/$m.gguf
done
wait
devcall_suite 5-q100.yaml q100
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=250 devcall_ab 5-q100.yaml O-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "b73ae0812cf0 (B, float4 delta loads) vs 745286ba907e (A, e88132a), 27B ctx 1"
devcall_ab 5-q100.yaml q9-O-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "b73ae0812cf0 (B) vs 745286ba907e (A), 9B ctx 1"
devcall_close $OUT/q100.db $OUT/ab.db
