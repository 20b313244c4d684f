#!/bin/bash
# v24 call 7 — PREPARED, NOT RUN (the session's device time was spent). After v24 item 1: the x-broadcast
# down projection's forms 1 (q8t_wu=3: each stage's rows reduced and written by the stage's last warp, a
# shared-memory counter per stage, instead of one barrier and a thread per row after the last stage) and
# 2 (q8t_wu=4: form 1 with the 8 scale rows in one bulk copy, unpadded) against form 0 (the default) and
# the shipped 7e10b2082a80 (base.so). The code is 7-bc-forms.patch against commit 64bc510 (it also folds the
# x prologue of the two wide kernels into q8t_x_to_smem: form 0's prologue address arithmetic changes in PTX,
# so its library is a new one, measured against base here). test_kernels (the forms bit for bit against
# the CPU twin, wloop cycling 0..4), same bits (tol 0) of forms 1 and 2 against 0 and against base, bench
# dtma (_bc, _bc1, _bc2), the suite 7-q74.yaml, ab of the best form against base.
# Pack: git apply 7-bc-forms.patch; build; tools/gpu_check.sh --pack BUILD; copy this script, 7-q74.yaml and
# base.so.xz (7e10b2082a80's stripped library) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  for o in q8t_wu=3 q8t_wu=4; do devcall_same cuda "" cuda "$o" $DEVCALL_TMP/$m.gguf; done
done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,q8t_wu=4" $DEVCALL_TMP/w27.gguf
timeout 150 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; echo "dtma rc $?"; grep -E "down_tma200" $OUT/bench_dtma.tsv | cut -f2,5
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 7-q74.yaml --db $OUT/q74.db > $OUT/q74-log.txt 2>&1; echo "q74 rc $?"
grep -E "^\[" $OUT/q74-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q74.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q74-kernels.csv
grep -E "matvec_add|rmsnorm_q8" $OUT/q74-kernels.csv
KESTREL_ENGINE_DIR=$E timeout 120 $B/kestrel-eval ab 7-q74.yaml --case F1-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_wu=${AB_FORM:-3}" --rounds 6 --db $OUT/ab.db --label "q8t_wu=${AB_FORM:-3} (B) vs 7e10b2082a80 (A), 27B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q74.db $OUT/ab.db
