#!/bin/bash
# v31 call 1. The x-broadcast down projection (matvec_q8t_bc_kernel, the 27B's and 9B's default) in two new
# forms, options of one library N (this tree): q8t_bcx=1, x by bulk copies in 5 (27B) pieces of 128 blocks on
# their own barriers, the first stage waiting for each only before the chunk that reads it (the one-round-trip
# load of all 26 KB of x, read by every SM at once while the ring sits full, took ~1.6 us after the wait in
# v29's FFN timeline); q8t_bch=1, each stage's columns as two ring slots released one after the other (the
# SwiGLU's q8t_half for this kernel: 2 slots of 78 KB -> 4 of 42 KB). O = b73ae0812cf0 (the shipped library).
# Predictions: same bits everywhere; bench FFN after FFN with the bc down: x -0.3..-0.7 us, h -0.2..-0.5 us;
# 27B step with both -0.02..-0.07 ms (ab 0.985-0.996); N's default (the kernel's source restructured, its PTX
# changed) vs O within noise.
# Ship rule, written before the call: make q8t_bcx=1,q8t_bch=1 (or the one of them that wins alone) the default
# only if test_kernels passes, every same-bits pair passes, the 27B ab NXH vs N (12 pairs) has its interval's
# upper end below 1, N vs O is not "B slower", and the 9B ab is not "B slower"; then a library with the new
# default against O in the next call (ab, 12 pairs) and its official run.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 1-q101.yaml and base.so.xz (O).
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "N $(devcall_sha) O $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'x-broadcast forms' $OUT/tk.tap | head -4
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "q8t_bcx=1" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "q8t_bch=1" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "q8t_bcx=1,q8t_bch=1" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "q8t_bcx=1,q8t_bch=1" cuda "q8t_bcx=1,q8t_bch=1,pdl=0" $DEVCALL_TMP/$m.gguf
done
timeout 100 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; grep -E '_bc' $OUT/bench_dtma.tsv
timeout 100 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; grep -E 'tma_quant|MISMATCH|after' $OUT/bench_ffn.tsv | head -40
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q101.yaml N-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_bcx=1,q8t_bch=1" "q8t_bcx=1,q8t_bch=1 (B) vs default (A), one library, 27B ctx 1"
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=150 devcall_ab 1-q101.yaml O-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "N default (B) vs b73ae0812cf0 (A), 27B ctx 1"
devcall_ab 1-q101.yaml q9-N-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,q8t_bcx=1,q8t_bch=1" "q8t_bcx=1,q8t_bch=1 (B) vs default (A), 9B ctx 1"
devcall_suite 1-q101.yaml q101
devcall_close $OUT/q101.db $OUT/ab.db
