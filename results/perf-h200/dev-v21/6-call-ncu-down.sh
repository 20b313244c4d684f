#!/bin/bash
# next session's first call (written in session 13, not run: the device time was spent): PERF-NOTES
# "After v21" item 1 - where the down projection's dots wait, per SASS instruction (Nsight Compute's
# source counters: warp stall samples by reason), one launch of matvec_q8t_kernel<17, 1> in
# bench_gemv --shape dtma (the 11th launch: down_tma200, full), then the same for its skip1 form (dots
# alone) by a larger --launch-skip (3 variants x 183 launches per skip level: 560 is skip1's
# tma200, the 12th launch), then the quantising SwiGLU. Pack: tools/gpu_check.sh --pack; carry [".carry/gpu-check"].
set -u
B=.carry/gpu-check/bin
for skip in 10 560; do
  timeout 200 ncu --clock-control none --kill yes -k regex:matvec_q8t_kernel --launch-skip $skip --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    $B/bench_gemv --shape dtma > $OUT/ncu-down-sass-$skip.csv 2> $OUT/ncu-err-$skip.txt
  echo "skip $skip rc $? $(wc -l < $OUT/ncu-down-sass-$skip.csv) lines"; head -c 400 $OUT/ncu-err-$skip.txt
done
# the SwiGLU (streaming-bound in v18: 25.3 us streaming alone of 27.9 full), its first variant's 11th launch
timeout 200 ncu --clock-control none --kill yes -k regex:matvec_swiglu_q8t_kernel --launch-skip 10 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
  $B/bench_gemv --shape dtma > $OUT/ncu-swiglu-sass.csv 2> $OUT/ncu-err-swiglu.txt
echo "swiglu rc $? $(wc -l < $OUT/ncu-swiglu-sass.csv) lines"; head -c 400 $OUT/ncu-err-swiglu.txt
