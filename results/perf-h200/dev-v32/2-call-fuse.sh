#!/bin/bash
# v32 call 2. Call 1's row shares for the SwiGLU: no difference on the 27B, 9B slower (dropped). Here: the
# attention layers' window. Between the q/k/v GEMV and the out projection the step runs attn_prep (q/k norms,
# RoPE, KV append) and the one-block short attention as two dependent launches (trace 0.086 + 0.059 ms per
# 27B token, ~9 us per attention layer) while the out projection's 18 MB preload needs ~4 us: HBM idles
# there. attn_fuse=1 (attention_short_prep_kernel): each q head's block norms and rotates its q and its kv
# head's k itself (attn_prep's arithmetic), appends once per kv head, and takes the current position's K/V
# from shared memory: one launch and one dependency less per attention layer. N = this tree (attn_fuse
# default 0; tools/ptx_diff.sh: all 160 default kernels the same as 018446a's, the shipped 6336ed88ada5's).
# Prediction: same bits; 27B ab 1 vs 0 0.985-0.995 (-2 to -4 us per attention layer, 16 layers); 9B (8
# attention layers of 32) 0.99-1.0.
# Ship rule, written before the call: attn_fuse=1 becomes the default if test_kernels passes (with the new
# bit-exact test), every same-bits pair passes, the 27B ab 1 vs 0 (12 pairs) has its interval's upper end
# below 1, and the 9B ab is not "B slower" with its upper end at most 1.01; then its official run.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 2-q106.yaml.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'attention_short_prep' $OUT/tk.tap | cut -c1-240
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same cuda "" cuda "attn_fuse=1" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "pdl=0" cuda "pdl=0,attn_fuse=1" $DEVCALL_TMP/$m.gguf
done
devcall_same cuda "graph=0" cuda "graph=0,attn_fuse=1" $DEVCALL_TMP/w27.gguf
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=220 devcall_ab 2-q106.yaml N-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_fuse=1" "attn_fuse=1 (B) vs 0 (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 2-q106.yaml q9-N-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_fuse=1" "attn_fuse=1 (B) vs 0 (A), one library, 9B ctx 1"
devcall_suite 2-q106.yaml q106 'trace,attn|trace,attention|trace,matvec_out|trace,matvec3'
devcall_close $OUT/q106.db $OUT/ab.db
