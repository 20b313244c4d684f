#!/bin/bash
# v44 call 1. Libraries: A = 39f5851f7c0c (HEAD 18b6c7d, the shipped v43 defaults norm_lean=1, norm_split=8; packed
# as engines-base/), B = d78e03b12faf (HEAD + dev-v43/6-norm-body-dedupe.patch: the split norm kernel through
# rmsnorm8_q8_body, one shape test in kc_rmsnorm_q8; its split kernels' machine code changes, branch layout only).
# Runs from the repository root after `cp results/perf-h200/dev-v43/2-q142.yaml .carry/gpu-check/`.
#
# 1. v43's prepared control (dev-v43/5-call-control.sh, not run there): the shipped defaults (B side) against
#    norm_lean=0,norm_split=1 (A side: v42's norms) in one lease, one library (39f5851f7c0c), 27B and 9B ctx 1.
#    Prediction (v43's, unchanged): 27B 0.989-0.994; 9B 0.995-1.001.
#    Rule (v43's): the defaults stay unless either ab is "B slower"; if one is, back to 0 and 1 (host code only).
# 2. The dedupe: test_kernels on B (the norm lines: lean and split bit for bit against one block), B vs A bit for bit
#    (engine_diff --tol 0, 27B-wide 4-layer model), then ab B vs A at the same (default) options, 27B ctx 1.
#    Prediction (written before the call): 0.998-1.002 (the same arithmetic; only the split kernels' branch layout).
#    Rule (written before the call): the patch is committed if test_kernels passes, the same-bits pair passes and
#    the ab is not "B slower"; then the official run of B in its own call (H200 only). Else it stays a patch.
set -u
. tools/devcall.sh
A=$G/engines-base/libkestrel-cuda.so
echo "A $(devcall_sha "$A")  B $(devcall_sha)"
devcall_models 27b 9b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b 9b
devcall_test_kernels
grep -E "lean|norm_split" $OUT/tk.tap | cut -c1-200
devcall_same "$A" "" cuda "" $DEVCALL_TMP/w27.gguf
devcall_same "$A" "" cuda "" $DEVCALL_TMP/w9.gguf
devcall_same cuda "norm_lean=0,norm_split=1" cuda "" $DEVCALL_TMP/w27.gguf
wait $mp; cat $OUT/models.txt
devcall_mark checks
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 "$A" "graph=1,ctx=4608,norm_lean=0,norm_split=1" "$A" "graph=1,ctx=4608" "v43 control: the default (B: norm_lean=1, norm_split=8) vs norm_lean=0,norm_split=1 (A: v42's norms), 39f5851f7c0c, 27B context 1"
devcall_mark ab1
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=100 devcall_ab 2-q142.yaml q9-ctx1 "$A" "graph=1,ctx=4608,norm_lean=0,norm_split=1" "$A" "graph=1,ctx=4608" "v43 control: the default (B: norm_lean=1, norm_split=8) vs norm_lean=0,norm_split=1 (A: v42's norms), 39f5851f7c0c, 9B context 1"
devcall_mark ab2
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 "$A" "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "the norm body dedupe (B: d78e03b12faf) vs 39f5851f7c0c (A), the default options, 27B context 1"
devcall_mark ab3
devcall_close $OUT/ab.db
