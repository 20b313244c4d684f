#!/bin/bash
# v24 call 6: (a) the x-broadcast down projection under compute-sanitizer (memcheck and racecheck: its
# partials in shared memory are written per lane and read across warps after a barrier) in the engine's
# step on the 9B- and 27B-wide 4-layer models, 3 tokens; (b) the bounds of the shipped 7e10b2082a80
# (2-build-bounds.sh with SKIPS="1 2" TRACE_SKIPS="1 2" of commit b400d74's build): ms/token and traces.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 6-q73.yaml, bounds.tar.xz.
set -u
. tools/devcall.sh
tar xJf $G/bounds.tar.xz -C $G
devcall_models 27b 9b &
devcall_wide 27b 9b
for m in w9 w27; do for t in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $t --error-exitcode 9 $B/engine_diff --a $E/libkestrel-cuda.so --b $E/libkestrel-cuda.so \
    --b-options "q8t_wu=1" --model $DEVCALL_TMP/$m.gguf --tokens 1,2,3 --tol 0 > $OUT/san-$t-$m.txt 2>&1
  echo "$t $m rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san-$t-$m.txt | head -2 | tr '\n' ' ') $(grep -E 'PASS|FAIL' $OUT/san-$t-$m.txt | tail -1 | cut -c1-80)"
done; done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run 6-q73.yaml --db $OUT/q73.db > $OUT/q73-log.txt 2>&1; echo "q73 rc $?"
grep -E "^\[" $OUT/q73-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q73.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q73-kernels.csv
grep -E "matvec_add|swiglu" $OUT/q73-kernels.csv
devcall_close $OUT/q73.db
