#!/bin/bash
# v25 call 2 - option delta=part (PERF-NOTES v25): the delta rule with each column's 128 rows in 4 runs of
# 32 on 4 threads (512 threads per head, runs met by shuffles), and every variant's dk sums in those runs
# (the CPU twin too: ops.c delta_step), against the default (delta=reg, now with the runs) and the shipped
# 7e10b2082a80 (base.so, the serial sums). test_kernels (part bit for bit against reg, with and without
# the gated norm), same bits (tol 0) part vs reg, the suite 2-q76.yaml with traces, ab part vs reg.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 2-q76.yaml and base.so.xz into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
grep -E "delta_step" $OUT/tk.tap | cut -c1-200
for m in w27 w9; do devcall_same cuda "" cuda "delta=part" $DEVCALL_TMP/$m.gguf; done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,delta=part" $DEVCALL_TMP/w27.gguf
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 2-q76.yaml --db $OUT/q76.db > $OUT/q76-log.txt 2>&1; echo "q76 rc $?"
grep -E "^\[" $OUT/q76-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q76.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q76-kernels.csv
grep -E "delta|matvec_out|gdn_prep" $OUT/q76-kernels.csv
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 2-q76.yaml --case N-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta=part" --rounds 6 --db $OUT/ab.db --label "delta=part (B) vs reg (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 2-q76.yaml --case q9-N --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta=part" --rounds 6 --db $OUT/ab.db --label "delta=part (B) vs reg (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q76.db $OUT/ab.db
