#!/bin/bash
# v29 call 4 (after the ship): where q8t_half's gain sits. bench_gemv of the shipped build (62c23104ea05's kernels)
# with the SwiGLU in both forms (KC_Q8T_HALF=0 / 1, interleaved twice): `--shape dtma` (the SwiGLU alone back to
# back: full, dots alone (no copies), streaming alone (no dots), skeleton) and `--shape ffn` with KC_Q8T_DUMP (every
# block's entry, wait, first stage, end and SM over 20 FFNs): does the SwiGLU's stream run closer to its
# streaming-alone time, and do its blocks' ends move, or the down projection's start?
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script.
set -u
. tools/devcall.sh
for h in 0 1 0 1; do
  KC_Q8T_HALF=$h timeout 120 $B/bench_gemv --shape dtma > $OUT/dtma-h$h.tsv 2>&1; echo "dtma half=$h rc $?"
  grep swiglu $OUT/dtma-h$h.tsv
done
for h in 0 1; do
  KC_Q8T_HALF=$h KC_Q8T_DUMP=$OUT/ffn-blocks-h$h.tsv KC_Q8T_DUMP_REPS=20 timeout 150 $B/bench_gemv --shape ffn > $OUT/ffn-h$h.tsv 2>&1
  echo "ffn half=$h rc $?"; grep "# timeline ffn_split" $OUT/ffn-h$h.tsv
  xz -9 $OUT/ffn-blocks-h$h.tsv
done
