#!/bin/bash
# v27 call 3: the delta rule's state L2-prefetched by gdn_prep, one kernel earlier (option prep_pf: 1 after
# gdn_prep's wait, when the qkv+z GEMV's weights no longer stream through L2; 2 before it) instead of by the
# delta rule at its own start (delta_pf=1, the default since call 2). Why: the trace of call 1 still books
# +0.1 ms/step on the out projection (its preload, launched once the state has returned, is not done at its
# wait); with the state already in L2 when the delta rule's blocks start, the projection could launch earlier
# (delta_trig=1) or at the delta rule's start (0, during gdn_prep, where HBM idles) without its preload
# overtaking the state's loads. Predicted: Q0e or Q1 vs D -0.02 to -0.06 ms per 27B token, Q3 = D.
# Library N = HEAD (0192d12e010b's source) + option prep_pf; every comparison inside N (options differ only).
# Pack: tools/gpu_check.sh --pack BUILD; copy this script and 3-q90.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
devcall_models 27b &
devcall_wide 27b 9b
devcall_test_kernels
devcall_same cuda "" cuda "prep_pf=2,delta_pf=0,delta_trig=0" $DEVCALL_TMP/w27.gguf
devcall_same cuda "" cuda "prep_pf=1,delta_pf=0,pdl=0" $DEVCALL_TMP/w9.gguf
wait
devcall_suite 3-q90.yaml q90 "delta|matvec_out|gdn_prep|matvec2"
devcall_ab 3-q90.yaml Q0e-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_pf=2,delta_pf=0,delta_trig=0" "prep_pf=2,delta_pf=0,delta_trig=0 (B) vs default (A), 27B ctx 1"
devcall_ab 3-q90.yaml Q1-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_pf=1,delta_pf=0,delta_trig=1" "prep_pf=1,delta_pf=0,delta_trig=1 (B) vs default (A), 27B ctx 1"
xz -9 $OUT/tk.tap
devcall_close $OUT/q90.db $OUT/ab.db
