#!/bin/bash
# v43 call 2 (the same library as call 1, 212c1dddd41fd7bc: HEAD c99468c + options norm_lean and norm_split).
# Call 1: norm_lean=1 vs 0 ab 0.9967 [0.9954, 0.9987]; norm_split=4 vs 1 (both lean) 0.9956 [0.9932, 0.9966]; trace
# rmsnorm_q8 0.406 (default) / 0.421 (lean) / 0.341 (lean + split 4) ms/step.
# This call: the block count (8 and 2 against 4, both with norm_lean=1), and the pair against the default where it
# has not been measured: the 27B at prompt 512, the 9B at context 1 (rms_fold=ffn there by default: only its input
# norms launch), and the 27B at context 1 again (the two abs of call 1 composed).
# Prediction (written before the call): split 8 vs 4 0.998-1.002 (each block's stores 1.4 -> 0.7 KB, twice the blocks
# loading x and delaying a ring block of the next GEMV); split 2 vs 4 1.000-1.003; lean+split 4 vs default: 27B
# context 1 0.990-0.995, prompt 512 0.992-0.997, 9B context 1 0.996-0.999.
# Rule (written before the call): norm_split's default is the count whose ab against 4 is "B faster" (CI upper end
# below 1), else 4; norm_lean=1 and that count become the defaults if none of the three abs against the default is
# "B slower"; then an official run in its own call.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b > $OUT/models.txt 2>&1
cat $OUT/models.txt
devcall_mark models
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 cuda "graph=1,ctx=4608,norm_lean=1,norm_split=4" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=8" "norm_split=8 (B) vs 4 (A), both norm_lean=1, 27B context 1"
devcall_mark ab3
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 cuda "graph=1,ctx=4608,norm_lean=1,norm_split=4" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=2" "norm_split=2 (B) vs 4 (A), both norm_lean=1, 27B context 1"
devcall_mark ab4
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=4" "norm_lean=1,norm_split=4 (B) vs the default (A), 27B context 1"
devcall_mark ab5
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=120 devcall_ab 2-q142.yaml q9-ctx1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=4" "norm_lean=1,norm_split=4 (B) vs the default (A), 9B context 1"
devcall_mark ab6
DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=170 devcall_ab 2-q142.yaml q27-p512 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=4" "norm_lean=1,norm_split=4 (B) vs the default (A), 27B prompt 512"
devcall_mark ab7
devcall_close $OUT/ab.db
