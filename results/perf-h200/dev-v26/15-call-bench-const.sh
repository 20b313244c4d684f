#!/bin/bash
# v26 call 15: the bench's timelines without the instrumentation's own loads. ncu of call 13 found a global
# load of bench_gemv's switches (g_q8t_skip, g_q8t_dbg_mark: __device__ ints) on every row's path of the
# TMA kernels in the KC_Q8T_DBG build, with the warps' largest stalls behind them; the library has none.
# Now they are __constant__ (bench_gemv, this pack); bench_gemv.dev is the same source with them as
# __device__ (as every earlier timeline). Both: gdnwin with the third mark at the first stage (0), the
# out projection's third stage done (3), the delta rule's state stored (9); the down/SwiGLU dtma table.
# The library is the shipped 7e10b2082a80, byte for byte. Bench only.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script and bench_gemv.dev.xz into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/bench_gemv.dev.xz && chmod +x $G/bench_gemv.dev
for b in dev const; do
    bg=$B/bench_gemv; [ $b = dev ] && bg=$G/bench_gemv.dev
    for m in 0 3 9; do
        KC_GDNWIN_MARK=$m timeout 60 $bg --shape gdnwin > $OUT/gdnwin-$b-mark$m.txt 2>&1; echo "gdnwin $b mark=$m rc $?"
        grep "^# gdnwin" $OUT/gdnwin-$b-mark$m.txt | sed 's/, us from.*max\]://'
    done
    timeout 120 $bg --shape dtma > $OUT/dtma-$b.txt 2>&1; echo "dtma $b rc $?"; grep -v "^#" $OUT/dtma-$b.txt | head -30
done
