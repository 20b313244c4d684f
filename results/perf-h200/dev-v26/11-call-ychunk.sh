#!/bin/bash
# v26 call 11: the x-stationary TMA GEMV (matvec_q8t_kernel) loads the residual's old values of four
# stages at once (the first four in the x load's round trip) instead of one per stage before its wait.
# Why: bench_gemv --shape gdnwin (v25 row 7; call 10 today) has the 27B out projection ~1 us from its
# wait to its first stage (x's load, one L2 round trip) and ~2.8 us more for 3 stages of 8 rows with
# every weight already in shared memory: each warp's row waited on its own y[r] load before its write,
# and the next row's load was issued only after that write, so a warp's 3 rows cost 3 round trips
# while their dots (6 blocks per lane) are a fraction of one. The skeleton bound (v24: no dots, no
# weight bytes) skips the write, so it booked that chain to the dots. Predicted: the out projection's
# end ~2 us earlier per launch, -0.1 ms per 27B token (64 out projections). Same bits (the same
# arithmetic; only when loads issue). Library Y (packed), base = the shipped 7e10b2082a80 (base.so).
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 11-q82.yaml, base.so.xz (HEAD's library) and
# bench_gemv.base.xz (HEAD's bench) into .carry/gpu-check/ (xz: the 64 MiB carry limit).
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/bench_gemv.base.xz
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "pdl=0,graph=0" cuda "pdl=0,graph=0" $DEVCALL_TMP/w27.gguf
for b in base y; do
    bg=$B/bench_gemv; [ $b = base ] && bg=$G/bench_gemv.base
    timeout 60 $bg --shape gdnwin > $OUT/gdnwin-$b.txt 2>&1; echo "gdnwin $b rc $?"
    grep "^# gdnwin" $OUT/gdnwin-$b.txt | grep -v "without" | sed 's/, us from.*max\]://'
done
wait
devcall_suite 11-q82.yaml q82 "matvec_out|matvec2|matvec3|delta"
cd $G
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 11-q82.yaml --case Y-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "y chunks (B) vs 7e10b2082a80 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 11-q82.yaml --case q9-Y --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "y chunks (B) vs 7e10b2082a80 (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q82.db $OUT/ab.db
