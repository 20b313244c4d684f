#!/bin/bash
# v26 call 14: matvec_q8t_kernel's row loop with its bookkeeping off each row's path. Why (call 13, ncu of
# the 27B out projection alone; bench_gemv --shape gdnwin with KC_GDNWIN_MARK): each stage (one row of 6
# blocks per lane per warp, weights already in shared memory) takes ~0.77 us, the same with no weight
# copies at all; ncu: 262 instructions per row, ~100 of them besides the dot (a run-time division for
# the ring slot and lap, the barriers' shared addresses, the lane's weight offsets recomputed each row),
# 4 warps per scheduler at 0.38 issued per cycle: the stage phase is paced by its instruction count.
# Counters instead of the division, the addresses once per warp (q8t_dot_at). Same arithmetic (same
# bits); the SwiGLU's PTX unchanged (tools/ptx_diff.sh: only matvec_q8t_kernel's instantiations differ).
# Predicted: ~-25% of each stage's time in the out projections, qkv+z and q/k/v after their wait,
# -0.03 to -0.06 ms per 27B token.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 14-q84.yaml, base.so.xz, base-trace.so.xz
# (HEAD's libraries) and bench_gemv.marks.xz (HEAD's kernels with the timeline marks) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/base-trace.so.xz $G/bench_gemv.marks.xz
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "pdl=0,graph=0" cuda "pdl=0,graph=0" $DEVCALL_TMP/w27.gguf
for b in base lean; do
    bg=$B/bench_gemv; [ $b = base ] && bg=$G/bench_gemv.marks
    for m in 0 3; do
        KC_GDNWIN_MARK=$m timeout 60 $bg --shape gdnwin > $OUT/gdnwin-$b-mark$m.txt 2>&1; echo "gdnwin $b mark=$m rc $?"
        grep "^# gdnwin" $OUT/gdnwin-$b-mark$m.txt | grep "out projection (entry" | sed 's/, us from.*max\]://'
    done
done
wait
devcall_suite 14-q84.yaml q84 "matvec_out|matvec2|matvec3"
cd $G
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 14-q84.yaml --case L-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "lean row loop (B) vs 7e10b2082a80 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 14-q84.yaml --case q9-L --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "lean row loop (B) vs 7e10b2082a80 (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q84.db $OUT/ab.db
