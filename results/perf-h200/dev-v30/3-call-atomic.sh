#!/bin/bash
# v30 call 3. What ffn=splitk's deterministic end costs: ffn=splitka, the same kernel with each block's partial
# sums added into y by atomics (no partials buffer, no grid barrier, no sums; the bits vary from run to run, so
# an option for measurement only). Call 2's bounds put splitk's FFN at 40.9 us without its barrier and sums
# (47.7 with them) against the two launches' 43.1. Prediction: bench FFN after FFN 41-42 us; the 27B step within
# +-1% of the default (the blocks' end spread, 9 us, stays). No ship rule: not reproducible bit for bit.
# (1) bench_gemv --shape ffn (every variant, splitka's timeline); (2) 3-q99.yaml; (3) `ab` splitka vs split.
set -u
. tools/devcall.sh
echo "default $(devcall_sha)"
devcall_models 27b 9b &
timeout 300 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $?"
grep -E 'splitk|tma_quantising' $OUT/bench_ffn.tsv | grep -v skip
wait
devcall_suite 3-q99.yaml q99 "swiglu|matvec_add|ffn_splitk|rmsnorm|out_add"
devcall_ab 3-q99.yaml C-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,ffn=splitka" "ffn=splitka (B) vs split (A), one library, 27B ctx 1"
devcall_close $OUT/q99.db $OUT/ab.db
