#!/bin/bash
# v31 call 5 (the session's last device seconds). Call 4's x stored piece by piece won alone and lost in the
# step, its kernel at 168 registers; the hypothesis: a down block of 48 K registers leaves the next kernels'
# blocks no room under PDL. Here the same code as its own kernel (matvec_q8t_bcx_kernel) with __maxnreg__(120)
# (119-120 registers, no spills), option q8t_bcx=1, default 0 in this library Q.
# Prediction: if the registers were the cause, q8t_bcx=1 vs 0 at or below 1 (0.993-1.000); if not, ~1.008 again.
# Rule, written before the call: no official run is left this session, so nothing ships from this call; if the
# 27B ab (12 pairs) has its upper end below 1 and the 9B's is not "B slower", the next session makes it the
# default and measures that library against 6336ed88ada5 with an official run; else the option leaves the tree.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 5-q104.yaml.
set -u
. tools/devcall.sh
echo "Q $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same cuda "" cuda "q8t_bcx=1" $DEVCALL_TMP/$m.gguf
done
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=150 devcall_ab 5-q104.yaml Q-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_bcx=1" "q8t_bcx=1 capped (B) vs 0 (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=90 devcall_ab 5-q104.yaml q9-Q-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_bcx=1" "q8t_bcx=1 capped (B) vs 0 (A), one library, 9B ctx 1"
devcall_close $OUT/ab.db
