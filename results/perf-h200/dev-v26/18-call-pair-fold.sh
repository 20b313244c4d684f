#!/bin/bash
# v26 call 18 - PREPARED, NOT RUN (the session's device time was spent): "After v26" item 1. Call 17 made the out
# projections ~0.037 ms/step faster (two stages per iteration where the block's share fits its ring) and the
# norm after them as much slower: under PDL the SwiGLU's blocks start their ~26 MB ring preload as the out
# projection's blocks leave, and the norm's loads queue behind it. With rms_fold=ffn there is no norm launch
# between: the SwiGLU computes the norm in its prologue (its x load after the wait, as its own x load was).
# Does the out projection's gain then reach the step? Library P = HEAD with 17-pair-fit.patch; base = the
# shipped 7e10b2082a80. Same bits (test_kernels; --tol 0 against base, and with rms_fold=ffn on both sides).
# Predicted: PF vs baseF -0.02 to -0.04 ms per 27B token; baseF vs base as v25 row 4 (4.69 vs 4.67).
# Pack: git apply results/perf-h200/dev-v26/17-pair-fit.patch; build; tools/gpu_check.sh --pack BUILD; copy
# this script, 18-q87.yaml, base.so.xz and base-trace.so.xz (HEAD's libraries, xz -9) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/base-trace.so.xz
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "rms_fold=ffn" cuda "rms_fold=ffn" $DEVCALL_TMP/w27.gguf
wait
devcall_suite 18-q87.yaml q87 "matvec_out|matvec_swiglu|rmsnorm|matvec2"
devcall_ab 18-q87.yaml PF-a $G/base.so "graph=1,ctx=4608,rms_fold=ffn" cuda "graph=1,ctx=4608,rms_fold=ffn" "pair-fit (B) vs 7e10b2082a80 (A), both rms_fold=ffn, 27B ctx 1"
devcall_ab 18-q87.yaml baseF-a $G/base.so "graph=1,ctx=4608" $G/base.so "graph=1,ctx=4608,rms_fold=ffn" "rms_fold=ffn (B) vs 0 (A), 7e10b2082a80, 27B ctx 1"
DEVCALL_AB_TIMEOUT=100 devcall_ab 18-q87.yaml q9-PF $G/base.so "graph=1,ctx=4608,rms_fold=ffn" cuda "graph=1,ctx=4608,rms_fold=ffn" "pair-fit (B) vs 7e10b2082a80 (A), both rms_fold=ffn, 9B ctx 1"
xz -9 $OUT/tk.tap
devcall_close $OUT/q87.db $OUT/ab.db
