#!/bin/bash
# v30 call 2. Why ffn=splitk lost (call 1: bench FFN after FFN 46.05 vs 42.83 us, the 27B step 5.03 vs 4.64 ms):
# bench_gemv --shape ffn with the kernel's per-block timeline (entry, PDL wait, last unit done, grid barrier
# passed; then the sums' end) and its bounds (timing only, g_q8t_skip: 4 no barrier and sums, +2 no dots, +1 no
# weight bytes), each with its timeline.
set -u
. tools/devcall.sh
timeout 300 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $?"
grep -E 'splitk|tma_quantising' $OUT/bench_ffn.tsv
