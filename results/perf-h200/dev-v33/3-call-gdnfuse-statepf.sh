#!/bin/bash
# v33 call 3. Call 2 (engine ce2f8ee65306): same bits; `ab` 27B 1.0071 [1.0050, 1.0088], 9B 1.0098 (B slower,
# below min_effect). Trace (ms/step, gdn_fuse 0 -> 1): qkv+z 0.416 -> 0.461, delta + gdn_prep 0.211 + 0.110 ->
# 0.363, out projections 0.595 -> 0.533. The beta/alpha rows' L2 prefetch did not move the delta rule (0.362 in
# call 1): what it lost is the state. With gdn_prep between them, the delta rule's blocks were resident (its
# state's L2 prefetch issued, v27) while gdn_prep ran and HBM idled; now they become resident as the GEMV's
# blocks leave, just before their wait, so the 3 MB of state come from HBM after it. Change (N = this tree):
# the GEMV's producer warps also L2-prefetch the layer's state once their last stage is issued (5 MB with the
# beta/alpha rows, ~1.1 us of HBM in the GEMV's tail). ptx_diff: the 164 existing kernels the same as 43c56c5's.
# Prediction: same bits; delta_step_prep ~0.27-0.30, qkv+z ~0.47-0.48; 27B ab 1 vs 0 0.985-1.0.
# Ship rule, written before the call: gdn_fuse=1 stays the default only if the 27B ab's upper end is below 1
# and the 9B ab is not "B slower" with its upper end at most 1.01 (then test_kernels and the GPU check in the
# official run); otherwise the change is dropped as a patch and the shipped library stays 646b543aac73.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_same cuda "gdn_fuse=0" cuda "" $DEVCALL_TMP/w27.gguf
devcall_same cuda "gdn_fuse=0" cuda "" $DEVCALL_TMP/w9.gguf
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=220 devcall_ab 3-q110.yaml N-a cuda "graph=1,ctx=4608,gdn_fuse=0" cuda "graph=1,ctx=4608" "gdn_fuse=1 (B) vs 0 (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 3-q110.yaml q9-N-a cuda "graph=1,ctx=4608,gdn_fuse=0" cuda "graph=1,ctx=4608" "gdn_fuse=1 (B) vs 0 (A), one library, 9B ctx 1"
devcall_suite 3-q110.yaml q110 'trace,gdn|trace,delta|trace,matvec2|trace,matvec_out'
devcall_close $OUT/q110.db $OUT/ab.db
