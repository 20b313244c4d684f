#!/bin/bash
# v33 call 1. gdn_prep's launch, by v32's reasoning (a dependency costs where nothing can preload: between the
# qkv+z GEMV and the delta rule HBM idles while gdn_prep runs, trace 0.110 ms per 27B token). gdn_fuse=1 (this
# tree's default): the conv + SiLU of each qkv row in the qkv+z GEMV's epilogue (matvec_q8t_conv_kernel: the
# row's 4 weights and 3 history values loaded by lane 0 before the stage's wait, history advanced there), the
# q/k L2 norms and beta/g (the f32 beta/alpha rows copied into shared memory by cp.async before the PDL wait, xn
# after it) in the delta rule's prologue (delta_step_prep_kernel<3, 1>: 176 registers, no frame), each with
# gdn_prep's arithmetic and 128-thread reduction tree. One launch less per GDN layer (48 on the 27B). N = this
# tree; tools/ptx_diff.sh: all 164 existing kernels the same PTX as 43c56c5's (the shipped 646b543aac73), 12 new.
# Prediction: same bits; 27B ab 1 vs 0 0.975-0.99 (-1.5 to -2.5 us per GDN layer); 9B (24 GDN layers) 0.98-0.995.
# Ship rule, written before the call: gdn_fuse=1 stays the default if test_kernels passes (with the new bit-exact
# tests, 27B/9B/2B shapes), every same-bits pair passes, the 27B ab 1 vs 0 (12 pairs) has its interval's upper
# end below 1, and the 9B ab is not "B slower" with its upper end at most 1.01; then its official run.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 1-q108.yaml.
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
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=220 devcall_ab 1-q108.yaml N-a cuda "graph=1,ctx=4608,gdn_fuse=0" cuda "graph=1,ctx=4608" "gdn_fuse=1 (B) vs 0 (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 1-q108.yaml q9-N-a cuda "graph=1,ctx=4608,gdn_fuse=0" cuda "graph=1,ctx=4608" "gdn_fuse=1 (B) vs 0 (A), one library, 9B ctx 1"
devcall_suite 1-q108.yaml q108 'trace,gdn|trace,delta|trace,matvec2|trace,matvec_out'
devcall_close $OUT/q108.db $OUT/ab.db
