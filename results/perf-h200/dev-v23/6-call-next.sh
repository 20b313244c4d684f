#!/bin/bash
# next session's first call (written in session 15, not run): what call 1 lost and what "After v23" asks
# first. 1. ncu per-SASS stall samples of qkv+z (16384 x 5120, matvec_q8t_kernel<5, 0>, the 11th launch of
# its default ring shape: launch-skip 927, as session 14's script; the output named without the '+' that
# kept call 1's file from coming back). 2. The FFN's per-block records again (KC_Q8T_DUMP, 20 repetitions)
# on whatever the SwiGLU's shares are then, read by ffn_blocks.py here.
# Pack: tools/gpu_check.sh --pack of the shipped build; copy this script into .carry/gpu-check/.
set -u
. tools/devcall.sh
timeout 200 ncu --clock-control none --kill yes -k regex:matvec_q8t_kernel --launch-skip 927 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    $B/bench_gemv --shape "qkv+z" > "$OUT/ncu-qkvz-sass.csv" 2> "$OUT/ncu-err-qkvz.txt"
echo "ncu qkv+z rc $? $(wc -l < "$OUT/ncu-qkvz-sass.csv") lines"; head -c 300 "$OUT/ncu-err-qkvz.txt"
xz -9 "$OUT/ncu-qkvz-sass.csv"
KC_Q8T_DUMP=$OUT/ffn-blocks.tsv KC_Q8T_DUMP_REPS=20 timeout 150 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1
echo "ffn rc $? $(wc -l < $OUT/ffn-blocks.tsv) records"; grep "# timeline" $OUT/bench_ffn.tsv
python3 results/perf-h200/dev-v23/ffn_blocks.py $OUT/ffn-blocks.tsv || /usr/bin/python3 results/perf-h200/dev-v23/ffn_blocks.py $OUT/ffn-blocks.tsv
xz -9 $OUT/ffn-blocks.tsv
