#!/bin/bash
# v29 call 1. (a) The persistent step's remaining question (PERF-NOTES "After v28" item 2): bench_gemv --shape ffn
# with KC_Q8T_DUMP (every TMA block's entry, wait, first stage and end with its SM, 20 more FFNs): per SM, how
# long after the SwiGLU's last block there exits does the down projection's block enter and issue its first bulk
# copy (the residency-bound part of the boundary, which a persistent step could fill; resgap.py); --shape gdnwin.
# (b) The bounds of v24 row 2 redone on a21521bc56b1 (its kernels with -DKC_Q8T_SKIPC=1|2|3,
# dev-v24/2-build-bounds.sh) and the traces of the default, skip 1 and skip 2. (c) 1-q8t-half.patch (option
# q8t_half=1: the SwiGLU's gate and up rows in separate ring slots, released after each dot): test_kernels (its
# forms bit for bit against the CPU twin), same bits against a21521bc56b1 and q8t_half=0 on the 27B- and 9B-wide
# models, the suite, then `ab` q8t_half=1 vs 0 in the one library (ship rule, written before the call: ship
# only if this ab's interval and a second ab's (12 pairs, next call) both lie below 1 and the 9B is not slower).
# Pack: tools/gpu_check.sh --pack /tmp/v29/build (a21521bc56b1 + the patch); copy this script, 1-q96.yaml,
# bounds.tar.xz (skip*.so, trace-skip1.so, trace-skip2.so) and base.so.xz (a21521bc56b1).
set -u
. tools/devcall.sh
tar xJf $G/bounds.tar.xz -C $G
xz -dkf $G/base.so.xz
for l in base skip1 skip2 skip3 trace-skip1 trace-skip2; do echo "$l $(devcall_sha $G/$l.so)"; done
echo "default $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "q8t_half=1" $DEVCALL_TMP/$m.gguf
done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,q8t_half=1" $DEVCALL_TMP/w27.gguf
devcall_same cuda "rms_fold=ffn" cuda "rms_fold=ffn,q8t_half=1" $DEVCALL_TMP/w27.gguf
KC_Q8T_DUMP=$OUT/ffn-blocks.tsv KC_Q8T_DUMP_REPS=20 timeout 150 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $? $(wc -l < $OUT/ffn-blocks.tsv) records"
grep "# timeline" $OUT/bench_ffn.tsv
timeout 120 $B/bench_gemv --shape gdnwin > $OUT/bench_gdnwin.tsv 2>&1; echo "gdnwin rc $?"
grep "^#" $OUT/bench_gdnwin.tsv | head -20
xz -9 $OUT/ffn-blocks.tsv
wait
devcall_suite 1-q96.yaml q96 "swiglu|matvec_add|out_add|matvec2|rmsnorm|delta|gdn_prep"
devcall_ab 1-q96.yaml C-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_half=1" "q8t_half=1 (B) vs 0 (A), a21521bc56b1 + 1-q8t-half.patch, 27B ctx 1"
devcall_close $OUT/q96.db $OUT/ab.db
