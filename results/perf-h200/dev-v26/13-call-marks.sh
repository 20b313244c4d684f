#!/bin/bash
# v26 call 13: where the out projection's ~2.8 us after its first stage go (calls 11-12: not the residual
# loads, not x's load; v25 row 7: not the weights either — the same with no bulk copies at all). Bench
# only (the library is the shipped 7e10b2082a80, byte for byte): bench_gemv --shape gdnwin with the
# third mark moved (KC_GDNWIN_MARK: k = the out projection's k-th stage done, 9 = the delta rule's
# state stored), then Nsight Compute on one out projection of the no-copies half (kernel alone under
# ncu: its warps' stall reasons and, per SASS instruction, where they wait).
# Pack: tools/gpu_check.sh --pack BUILD; copy this script into .carry/gpu-check/.
set -u
. tools/devcall.sh
for m in 0 1 2 3 9; do
    KC_GDNWIN_MARK=$m timeout 60 $B/bench_gemv --shape gdnwin > $OUT/gdnwin-mark$m.txt 2>&1; echo "gdnwin mark=$m rc $?"
    grep "^# gdnwin" $OUT/gdnwin-mark$m.txt | sed 's/, us from.*max\]://'
done
N="ncu --clock-control none --cache-control none -k regex:matvec_q8t_kernel --launch-skip 20 --launch-count 1"
timeout 200 $N --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats --section Occupancy $B/bench_gemv --shape gdnwin > $OUT/ncu-out-sections.txt 2>&1; echo "ncu sections rc $?"
grep -E "matvec_q8t_kernel|Duration|Warp Cycles Per Issued|Issued Warp|Eligible|Active Warps|Executed Instructions |No Eligible" $OUT/ncu-out-sections.txt | head -20
timeout 200 $N --section SourceCounters --section WarpStateStats --page source --print-source sass --csv $B/bench_gemv --shape gdnwin > $OUT/ncu-out-source.csv 2>&1; echo "ncu source rc $?"
wc -l $OUT/ncu-out-source.csv; xz -9 $OUT/ncu-out-source.csv
