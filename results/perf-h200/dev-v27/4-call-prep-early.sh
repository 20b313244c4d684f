#!/bin/bash
# v27 call 4: gdn_prep's conv inputs before its PDL wait (option prep_early): each thread's conv channel's K
# weights into registers (weights: allowed before the wait) and (1) its history's lines L2-prefetched with an
# evict_last hint (the history was written a token ago by this kernel; a prefetch reads nothing into the kernel).
# Why: after its wait gdn_prep's conv loads its weights and history from HBM (~280 KB per GDN layer, one dependent
# HBM round trip) while HBM is otherwise idle (the out projection is launched only after the delta rule's state
# returns, v27 row 1), so that round trip is on the step's path; from L2 / registers it is one L2 round trip
# (predicted -0.5 to -1 us per GDN layer, -0.02 to -0.05 ms per 27B token). Library N = HEAD (0192d12e010b's
# source) + option prep_early; comparisons inside N (options only).
# Pack: tools/gpu_check.sh --pack BUILD; copy this script and 4-q91.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
devcall_same cuda "" cuda "prep_early=1" $DEVCALL_TMP/w27.gguf
devcall_same cuda "" cuda "prep_early=2,pdl=0" $DEVCALL_TMP/w27.gguf
devcall_same cuda "" cuda "prep_early=1,graph=0" $DEVCALL_TMP/w9.gguf
wait
devcall_suite 4-q91.yaml q91 "gdn_prep|delta|matvec_out|matvec2"
devcall_ab 4-q91.yaml E1-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=1" "prep_early=1 (B) vs default (A), 27B ctx 1"
DEVCALL_AB_TIMEOUT=100 devcall_ab 4-q91.yaml q9-E1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=1" "prep_early=1 (B) vs default (A), 9B ctx 1"
xz -9 $OUT/tk.tap
devcall_close $OUT/q91.db $OUT/ab.db
