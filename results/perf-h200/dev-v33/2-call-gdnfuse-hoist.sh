#!/bin/bash
# v33 call 2. Call 1 (engine 10fd722275ab): same bits everywhere (test_kernels 443/443, the six same-bits
# pairs), but `ab` gdn_fuse 1 vs 0 27B 1.0394 [1.0356, 1.0414], 9B 1.0364 (B slower). Trace (ms/step): qkv+z
# GEMV 0.410 -> 0.621, delta + gdn_prep 0.208 + 0.110 -> 0.362, out projections 0.572 -> 0.539. Why: (1) each
# row's conv inputs were loaded at its stage, so every stage of the GEMV waited one HBM round trip (~0.6 us x
# 8 stages); (2) the delta rule's blocks are resident only as the GEMV's leave (registers), so the 40 KB of
# beta/alpha rows per head it copies before its wait come from HBM at the wait, where gdn_prep's small
# blocks had loaded them beside the GEMV. Changes (N = this tree): lane j of each warp holds the conv inputs of
# its row in stage u0 + j, all loaded at the start (weights before the PDL wait, history L2-prefetched
# before it and loaded after), and computes that row's conv itself; the GEMV's producer warps L2-prefetch the
# beta/alpha rows (2 MB) once their last stage is issued. tools/ptx_diff.sh: the 164 existing kernels the
# same PTX as 43c56c5's.
# Prediction: same bits; qkv+z back to ~0.41-0.43, delta_step_prep ~0.25-0.28; 27B ab 1 vs 0 0.98-0.995.
# Ship rule, written before the call: as call 1's (test_kernels, every same-bits pair, 27B ab upper end < 1,
# 9B not "B slower" with its upper end <= 1.01); otherwise gdn_fuse's default becomes 0 or the change is dropped.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'gdn_fuse' $OUT/tk.tap | cut -c1-300
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same cuda "gdn_fuse=0" cuda "" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "pdl=0,gdn_fuse=0" cuda "pdl=0" $DEVCALL_TMP/$m.gguf
done
devcall_same cuda "graph=0,gdn_fuse=0" cuda "graph=0" $DEVCALL_TMP/w27.gguf
devcall_same cuda "delta_trig=1,gdn_fuse=0" cuda "delta_trig=1" $DEVCALL_TMP/w27.gguf
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=220 devcall_ab 2-q109.yaml N-a cuda "graph=1,ctx=4608,gdn_fuse=0" cuda "graph=1,ctx=4608" "gdn_fuse=1 (B) vs 0 (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 2-q109.yaml q9-N-a cuda "graph=1,ctx=4608,gdn_fuse=0" cuda "graph=1,ctx=4608" "gdn_fuse=1 (B) vs 0 (A), one library, 9B ctx 1"
devcall_suite 2-q109.yaml q109 'trace,gdn|trace,delta|trace,matvec2|trace,matvec_out'
devcall_close $OUT/q109.db $OUT/ab.db
