#!/bin/bash
# next session's first call (written in session 14, not run: the device time was spent). PERF-NOTES
# "After v22" items 1 and 3: where the GEMVs that now wait on their streams lose time.
# 1. bench_gemv --shape ffn: the per-block %globaltimer timelines of the default FFN (SwiGLU then down,
#    back to back under PDL) with v22's kernels: entry, wait, first stage, end per block, [min med max].
# 2. bench_gemv --shape dtma: the down projection and the SwiGLU with phases left out (v18 row 2).
# 3. ncu per-SASS stall samples of the out projection (ssm_out, 5120 x 6144, matvec_q8t_kernel<6, 0>)
#    and of qkv+z (16384 x 5120, <5, 0>), each the 11th PDL launch of its default ring shape (100 KB x 2
#    per SM: the third tma variant, launches 734-1100 of the kernel; its PDL batch from 917).
# Pack: tools/gpu_check.sh --pack of the shipped build; copy this script into .carry/gpu-check/.
set -u
. tools/devcall.sh # B, the library path; prints the packed library's stripped SHA prefix
timeout 120 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $?"; grep -E "^#|ffn_split" $OUT/bench_ffn.tsv | head -20
timeout 60 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; echo "dtma rc $?"; grep -E "skip|stream" $OUT/bench_dtma.tsv | head -12
for sh in ssm_out qkv+z; do
  timeout 200 ncu --clock-control none --kill yes -k regex:matvec_q8t_kernel --launch-skip 927 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    $B/bench_gemv --shape "$sh" > "$OUT/ncu-$sh-sass.csv" 2> "$OUT/ncu-err-$sh.txt"
  echo "ncu $sh rc $? $(wc -l < "$OUT/ncu-$sh-sass.csv") lines"; head -c 300 "$OUT/ncu-err-$sh.txt"
done
