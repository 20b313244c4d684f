#!/bin/bash
# v24 call 3: the step trace of e4fa971d53b8 and of its three bound builds (2-build-bounds.sh: skip 1 no weight
# bytes, 2 no dots, 3 neither), 27B twice (a/b) and 9B: for each kernel, its segment of the critical path as
# the skeleton (3), with the weight stream (2), with the dots (1), and whole (the shipped build).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 3-q70.yaml, traces.tar.xz (trace-skip*.so).
set -u
. tools/devcall.sh
tar xJf $G/traces.tar.xz -C $G
devcall_models 27b 9b
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 3-q70.yaml --db $OUT/q70.db > $OUT/q70-log.txt 2>&1; echo "q70 rc $?"
grep -E "^\[" $OUT/q70-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q70.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q70-kernels.csv
wc -l $OUT/q70-kernels.csv
devcall_close $OUT/q70.db
