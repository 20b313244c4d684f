#!/bin/bash
# v43 call 1: options norm_lean (the q8 norms whose f32 output no kernel reads — the 64 FFN norms, the 16 attention
# layers' input norms and the final norm of the 27B — write only their q8 blocks: rmsnorm8_q8_lean_kernel) and
# norm_split (the q8 norms over N blocks: each loads all of x and sums the squares in the one-block order, then
# emits only its share of y and yq: rmsnorm8_q8_split_kernel). Both the same bits by construction.
# Library: HEAD (c99468c) + the two options (default 0 and 1), built in /tmp/build-lead; tools/ptx_diff.sh against
# HEAD's PTX: "217 same, 0 differ, 0 only-old, 3 only-new" (the lean kernel, split<0>, split<1>): every default kernel
# the same, so the abs compare the kernels alone (options of one library).
# Why: the norm is one block of 640 threads on one SM (n = 5120); the next GEMV's PDL wait returns only when the
# norm's grid is complete, its stores included: 20 KB of f32 y (used only by gdn_prep's beta/alpha dots in GDN layers)
# plus 5.6 KB of q8 blocks, all through one SM's path to L2 at the step's critical point. The knockouts (v38) put the
# norms at 0.20 ms/token; no earlier change touched their tail.
# Prediction (written before the call): test_kernels all ok; the same-bits pairs PASS; trace rmsnorm_q8 0.39 ->
# 0.37-0.385 ms/step with norm_lean (81 of 129 norms ~0.1 us shorter), a further -0.005..-0.015 with norm_split=4;
# ab 1 (norm_lean=1 vs 0) 0.997-0.999; ab 2 (norm_lean=1,norm_split=4 vs norm_lean=1) 0.997-1.002 (the three more
# blocks load x and reduce too, and each may delay one ring block of the next GEMV: v20 row 5).
# Rule (written before the call): norm_lean defaults to 1 if test_kernels and the same-bits pairs pass, ab 1 is not
# "B slower" and its CI upper end is below 1; norm_split defaults to 4 under the same conditions on ab 2; else each
# stays out of the tree (patches in dev-v43) and PERF-NOTES says what the trace showed. Either default is then
# followed by an official run in its own call.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b 9b
devcall_test_kernels
grep -E "lean|norm_split" $OUT/tk.tap | cut -c1-200
devcall_mark test_kernels
w27=$DEVCALL_TMP/w27.gguf
w9=$DEVCALL_TMP/w9.gguf
devcall_same cuda "" cuda "norm_lean=1" $w27
devcall_same cuda "" cuda "norm_split=4" $w27
devcall_same cuda "" cuda "norm_lean=1,norm_split=4" $w27
devcall_same cuda "graph=0" cuda "graph=0,norm_lean=1,norm_split=3" $w27
devcall_same cuda "" cuda "norm_lean=1,norm_split=4" $w9
devcall_mark same
wait $mp; cat $OUT/models.txt
devcall_mark models
devcall_suite 1-q141.yaml trace 'rmsnorm|matvec_swiglu|matvec3|matvec2'
devcall_mark trace
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=210 devcall_ab 1-q140.yaml q27-ctx1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,norm_lean=1" "norm_lean=1 (B) vs 0 (A), one library, 27B context 1"
devcall_mark ab1
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=210 devcall_ab 1-q140.yaml q27-ctx1 cuda "graph=1,ctx=4608,norm_lean=1" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=4" "norm_split=4 (B) vs 1 (A), both norm_lean=1, one library, 27B context 1"
devcall_mark ab2
devcall_close $OUT/ab.db $OUT/trace.db
