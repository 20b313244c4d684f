#!/bin/bash
# v23 call 3: D = library with option q8t_deal (the TMA GEMVs' remainder stages dealt at run time: every
# block's static share floor(units/grid) stages, the rest one each to the blocks whose producers finish
# their share first; call 2's per-block records: the SwiGLU's 9-stage blocks end 1.35 us after the 8-stage
# ones, the same SMs late in every repetition) and q8t_ogrid (call 2: 216 blocks for the 27B's out
# projections `ab` 0.9923). test_kernels (the dealt forms bit for bit vs the CPU twin), same bits
# (deal masks vs the default, pdl=0, graph=0, 27B- and 9B-wide), the suite 3-q65.yaml against the shipped
# 8192a5b49fe6 (base), ab of the best.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead (D); copy this script, 3-q65.yaml, base.so.xz.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E "dealt|q8gemv=tma options" $OUT/tk.tap | cut -c1-260
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  for d in 15 8 2; do devcall_same cuda "" cuda "q8t_deal=$d" $DEVCALL_TMP/$m.gguf; done
  devcall_same cuda "pdl=0" cuda "pdl=0,q8t_deal=15" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "graph=0" cuda "graph=0,q8t_deal=15,q8t_ogrid=216" $DEVCALL_TMP/$m.gguf
done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 400 $B/kestrel-eval run 3-q65.yaml --db $OUT/q65.db > $OUT/q65-log.txt 2>&1; echo "q65 rc $?"
grep -E "^\[" $OUT/q65-log.txt | cut -c1-110
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 3-q65.yaml --case d15-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_deal=15" --rounds 6 --db $OUT/ab.db --label "q8t_deal=15 (B) vs the default (A), library D, 27B ctx 1" 2>&1 | tail -4
devcall_close $OUT/q65.db $OUT/ab.db
