#!/bin/bash
# v27 call 6 - PREPARED, NOT RUN: the delta rule's state prefetch with an evict_last hint (delta_pf=2,
# 6-delta-pf-el.patch on HEAD; its own library, independent of call 5's). Why: the out projection's preload
# is best started at the delta rule's start (delta_trig=0: it then streams during gdn_prep, where HBM idles;
# call 3's Q0e had the out projections 0.561 -> 0.452 ms/step), but then the state's loads queued behind it
# (delta 0.261 -> 0.340): the state prefetched at the delta rule's block start (during the qkv+z GEMV's tail)
# was evicted by the weights streaming through L2 before its loads. With evict_last those lines outlive the
# stream; predicted: E0 vs D -0.02 to -0.05 ms per 27B token if the state then returns from L2 beside the
# preload; E3 = D. Comparisons inside the library (options only).
# Pack: git apply results/perf-h200/dev-v27/6-delta-pf-el.patch; build; tools/gpu_check.sh --pack BUILD; copy
# this script and 6-q93.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
devcall_same cuda "" cuda "delta_pf=2,delta_trig=0" $DEVCALL_TMP/w27.gguf
devcall_same cuda "" cuda "delta_pf=2,pdl=0" $DEVCALL_TMP/w9.gguf
wait
devcall_suite 6-q93.yaml q93 "delta|matvec_out|gdn_prep"
devcall_ab 6-q93.yaml E0-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_pf=2,delta_trig=0" "delta_pf=2,delta_trig=0 (B) vs default (A), 27B ctx 1"
devcall_ab 6-q93.yaml E3-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_pf=2" "delta_pf=2 (B) vs default (A), 27B ctx 1"
xz -9 $OUT/tk.tap
devcall_close $OUT/q93.db $OUT/ab.db
