#!/bin/bash
# v32 call 1. "After v23" item 1, never tried: the 27B SwiGLU's 2176 stages over 264 blocks give 64 blocks a
# ninth stage, and an SM holding two of them 18 stages against a mean of 16.5 (v23 row 4: those SMs end last,
# ~1.35 us per layer). q8t_rows=1: each block takes a share of rows (65-66; its last stage partial), so every
# SM holds 130-132 rows. Same bits by construction (each row's dots unchanged, groups quantised from the same
# values). N = this tree (q8t_rows default 0; tools/ptx_diff.sh: all 160 default kernels' PTX the same as
# 018446a's, only the 6 new instantiations added: its default is the shipped 6336ed88ada5's kernels).
# Prediction: same bits; bench FFN after FFN -0.3 to -1.2 us; 27B ab 1 vs 0 0.985-0.997; 9B (1536 stages,
# 5.8 per block, 1.03 max/mean) within noise.
# Ship rule, written before the call: q8t_rows=1 becomes the default if test_kernels passes (with the new
# row-share test), every same-bits pair passes, the 27B ab 1 vs 0 (12 pairs) has its interval's upper end
# below 1, and the 9B ab is not "B slower" with its upper end at most 1.01; then its official run.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 1-q105.yaml.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'q8t_rows' $OUT/tk.tap | cut -c1-200
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same cuda "" cuda "q8t_rows=1" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "pdl=0" cuda "pdl=0,q8t_rows=1" $DEVCALL_TMP/$m.gguf
done
devcall_same cuda "rms_fold=ffn" cuda "rms_fold=ffn,q8t_rows=1" $DEVCALL_TMP/w27.gguf
for r in 0 1 0 1; do
  KC_Q8T_ROWS=$r timeout 100 $B/bench_gemv --shape ffn > $OUT/bench_ffn-rows$r.tsv 2>&1
  echo "rows=$r: $(grep -E 'tma_quant|MISMATCH' $OUT/bench_ffn-rows$r.tsv | head -3 | tr '\n' '|')"
done
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=220 devcall_ab 1-q105.yaml N-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_rows=1" "q8t_rows=1 (B) vs 0 (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 1-q105.yaml q9-N-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_rows=1" "q8t_rows=1 (B) vs 0 (A), one library, 9B ctx 1"
devcall_suite 1-q105.yaml q105 'trace,matvec_swiglu|trace,rmsnorm|trace,matvec_add'
devcall_close $OUT/q105.db $OUT/ab.db
