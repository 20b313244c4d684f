#!/bin/bash
# v31 call 2. Call 1 measured the two forms of the x-broadcast down projection as options of one library:
# x by bulk copies in pieces (q8t_bcx) was slower (its skeleton +1.3 us: 68 small bulk copies issue slower than
# the one-round-trip loads) and is dropped from the tree (1-bc-forms.patch); the stages as two column halves
# (q8t_bch) looked faster (27B 4.599 / 4.602 vs 4.644 / 4.624, bench FFN 41.54 vs 41.72 us, down alone 14.84
# vs 15.44 us) but had no ab of its own. L = this tree with q8t_bch=1 the default, O = b73ae0812cf0.
# Prediction: same bits; 27B ab L vs O 0.990-0.997; 9B within noise.
# Ship rule, written before the call: ship L if test_kernels passes, every same-bits pair passes, the 27B ab
# L vs O (12 pairs) has its interval's upper end below 1, and the 9B ab L vs O is not "B slower" with its
# upper end at most 1.01 (else q8t_bch=1 only where it wins, measured again); then its official run (call 3).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 2-q102.yaml and base.so.xz (O).
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "L $(devcall_sha) O $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'x-broadcast forms' $OUT/tk.tap | cut -c1-60,400-700
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "q8t_bch=0" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "pdl=0" $DEVCALL_TMP/$m.gguf
done
timeout 100 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; grep -E '_bc' $OUT/bench_dtma.tsv
timeout 100 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; grep -E 'tma_quant|MISMATCH' $OUT/bench_ffn.tsv | head -40
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=200 devcall_ab 2-q102.yaml O-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L q8t_bch=1 default (B) vs b73ae0812cf0 (A), 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 2-q102.yaml q9-O-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L q8t_bch=1 default (B) vs b73ae0812cf0 (A), 9B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 2-q102.yaml L0-a cuda "graph=1,ctx=4608,q8t_bch=0" cuda "graph=1,ctx=4608" "q8t_bch=1 (B) vs 0 (A), one library, 27B ctx 1"
devcall_suite 2-q102.yaml q102
devcall_close $OUT/q102.db $OUT/ab.db
