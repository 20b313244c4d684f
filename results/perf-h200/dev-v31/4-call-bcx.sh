#!/bin/bash
# v31 call 4. x stored into the down projection's shared memory piece by piece inside its first stage (option
# q8t_bcx=1, the default of this library P): the loads are issued as before (7 int4 per consumer thread, all in
# flight), but the values of each piece (128 blocks) are stored just before the first chunk that reads it, behind
# a barrier of the 256 consumer threads, so the first dots start when the first piece has arrived instead of all
# 26 KB (call 1's bulk copies of the same pieces lost to their issue cost). L = 6336ed88ada5 (shipped in call 3).
# P's piece kernels hold 167-168 registers (1 block per SM: no occupancy cost) with an 8-byte spill (27B).
# Prediction: same bits; bench FFN after FFN -0.2..-0.7 us; 27B step -0.01..-0.04 ms (ab 0.991-0.998).
# Ship rule, written before the call: make q8t_bcx=1 the default only if test_kernels passes, every same-bits
# pair passes, the 27B ab P vs L (12 pairs) has its interval's upper end below 1, and the 9B ab P vs L is not
# "B slower" (upper end at most 1.01); then its official run (call 5). Else the option leaves the tree.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 4-q103.yaml and base.so.xz (L).
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "P $(devcall_sha) L $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'x-broadcast forms' $OUT/tk.tap | cut -c1-60,480-800
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "q8t_bcx=0" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "" cuda "pdl=0" $DEVCALL_TMP/$m.gguf
done
timeout 100 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; grep -E '_bc' $OUT/bench_dtma.tsv
timeout 100 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; grep -E 'down_bc|MISMATCH' $OUT/bench_ffn.tsv | head -40
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=200 devcall_ab 4-q103.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "P q8t_bcx=1 default (B) vs 6336ed88ada5 (A), 27B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 4-q103.yaml q9-L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "P q8t_bcx=1 default (B) vs 6336ed88ada5 (A), 9B ctx 1"
DEVCALL_AB_ROUNDS=8 devcall_ab 4-q103.yaml P0-a cuda "graph=1,ctx=4608,q8t_bcx=0" cuda "graph=1,ctx=4608" "q8t_bcx=1 (B) vs 0 (A), one library, 27B ctx 1"
devcall_suite 4-q103.yaml q103
devcall_close $OUT/q103.db $OUT/ab.db
