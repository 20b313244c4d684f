#!/bin/bash
# v26 call 16: matvec_q8t_kernel (x in registers) takes two stages per iteration when its ring has two slots or
# more: both rows' dots (q8t_dot_part) and their warp sums (warp_sum2, each value's butterfly in warp_sum's
# order) interleaved, both stages released together. Why: the out projection's stages take ~0.68 us each
# (calls 13, 15) whatever their loads (11, 12); ~45 fewer instructions per row (14) gave nothing the step
# resolves, so the stage is one row's dependent chain (shared loads, dp4a chains, the shuffle tree, the
# barriers), which two rows can share. Predicted: the out projection's 3 stages in 2 chains (-0.6 us per
# launch), qkv+z's 8 in 4: -0.04 to -0.07 ms per 27B token. Same bits; only matvec_q8t_kernel's x-in-register
# instantiations differ in PTX (tools/ptx_diff.sh). At most 8 files come back from a call: the window's
# timelines go into one file.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 16-q85.yaml, base.so.xz, base-trace.so.xz (HEAD's
# libraries, 7e10b2082a80) and bench_gemv.base.xz (HEAD's bench) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/base-trace.so.xz $G/bench_gemv.base.xz && chmod +x $G/bench_gemv.base
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "pdl=0,graph=0" cuda "pdl=0,graph=0" $DEVCALL_TMP/w27.gguf
for b in base pair; do
    bg=$B/bench_gemv; [ $b = base ] && bg=$G/bench_gemv.base
    for m in 0 3; do
        echo "== $b mark=$m" >> $OUT/gdnwin.txt
        KC_GDNWIN_MARK=$m timeout 60 $bg --shape gdnwin > $DEVCALL_TMP/g.txt 2>&1; echo "gdnwin $b mark=$m rc $?"
        cat $DEVCALL_TMP/g.txt >> $OUT/gdnwin.txt
        grep "^# gdnwin" $DEVCALL_TMP/g.txt | grep "out projection (entry" | sed 's/, us from.*max\]://'
    done
done
wait
devcall_suite 16-q85.yaml q85 "matvec_out|matvec2|matvec3"
cd $G
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 16-q85.yaml --case P-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "two stages per iteration (B) vs 7e10b2082a80 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 16-q85.yaml --case q9-P --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "two stages per iteration (B) vs 7e10b2082a80 (A), 9B ctx 1" 2>&1 | tail -3
rm -f $OUT/tk.tap.xz; xz -9 $OUT/tk.tap
devcall_close $OUT/q85.db $OUT/ab.db
