#!/bin/bash
# v43 call 3: library 9b40a081cb01aaed = call 1-2's with norm_split's range 1..32 (was 1..8; clamped to the row's
# warps: 20 at the 27B's 5120, 16 at the 9B's 4096); the kernels the same as 212c1dddd41fd7bc's (ptx_diff against HEAD:
# 217 same, 3 only-new).
# Call 2: norm_split 8 vs 4 (both norm_lean=1) ab 0.9962 [0.9919, 0.9986], 2 vs 4 0.9999 [0.9987, 1.0008];
# lean + split 4 vs the default: 27B ctx 1 0.9947 [0.9914, 0.9956], prompt 512 0.9939 [0.9923, 0.9953], 9B ctx 1
# 0.9953 [0.9940, 1.0032]. Here: more blocks than 8.
# Prediction (written before the call): 20 (one warp per block) vs 8: 0.998-1.002; 10 vs 8: 0.999-1.001; 9B 16 vs 8:
# 0.998-1.002.
# Rule (written before the call): norm_split's default is 32 (one block per warp of the row) if the 27B's 20 vs 8 is
# "B faster" (CI upper end below 1) and the 9B's 16 vs 8 is not "B slower"; else 8. norm_lean=1 with it. Then the
# official run.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b
devcall_test_kernels
grep -E "lean|norm_split" $OUT/tk.tap | cut -c1-200
devcall_same cuda "" cuda "norm_lean=1,norm_split=32" $DEVCALL_TMP/w27.gguf
wait $mp; cat $OUT/models.txt
devcall_mark checks
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 cuda "graph=1,ctx=4608,norm_lean=1,norm_split=8" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=20" "norm_split=20 (B) vs 8 (A), both norm_lean=1, 27B context 1"
devcall_mark ab8
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 2-q142.yaml q27-ctx1 cuda "graph=1,ctx=4608,norm_lean=1,norm_split=8" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=10" "norm_split=10 (B) vs 8 (A), both norm_lean=1, 27B context 1"
devcall_mark ab9
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=120 devcall_ab 2-q142.yaml q9-ctx1 cuda "graph=1,ctx=4608,norm_lean=1,norm_split=8" cuda "graph=1,ctx=4608,norm_lean=1,norm_split=16" "norm_split=16 (B) vs 8 (A), both norm_lean=1, 9B context 1"
devcall_mark ab10
devcall_close $OUT/ab.db
