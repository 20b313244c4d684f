#!/bin/bash
# v43 call 5 — PREPARED, NOT RUN (the session's device time ran out; the next session's first call). Call 4 was the
# official run of 39f5851f7c0c, filed. This call: the shipped library 39f5851f7c0c (commit 2b3db3d,
# defaults norm_lean=1, norm_split=8) against its own options set to the kernels before v43 (norm_lean=0,
# norm_split=1: v42's norms), the one pair no earlier call measured directly (calls 1-3 composed: 0.9947 for lean +
# split 4 vs the default, 0.9962 for split 8 vs 4). Also the 9B (no difference twice: 0.9953, 16 vs 8 1.0062).
# Prediction (written before the call): 27B context 1 0.989-0.994; 9B context 1 0.995-1.001.
# Rule (written before the call): the defaults stay if neither ab is "B slower"; if one is, they go back to 0 and 1
# (host code only) and PERF-NOTES says so.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b > $OUT/models.txt 2>&1
cat $OUT/models.txt
devcall_mark models
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 cuda "graph=1,ctx=4608,norm_lean=0,norm_split=1" cuda "graph=1,ctx=4608" "the default (B: norm_lean=1, norm_split=8) vs norm_lean=0,norm_split=1 (A: v42's norms), 27B context 1"
devcall_mark ab11
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=100 devcall_ab 2-q142.yaml q9-ctx1 cuda "graph=1,ctx=4608,norm_lean=0,norm_split=1" cuda "graph=1,ctx=4608" "the default (B: norm_lean=1, norm_split=8) vs norm_lean=0,norm_split=1 (A: v42's norms), 9B context 1"
devcall_mark ab12
devcall_close $OUT/ab.db
