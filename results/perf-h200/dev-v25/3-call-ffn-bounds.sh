#!/bin/bash
# v25 call 3 - bounds of the FFN's epilogues (timing only; PERF-NOTES v25): the shipped kernels compiled
# with -DKC_Q8T_SKIPC=4 (the SwiGLU writes y but does not quantise it: no barrier, fence, group counters
# or reloads at its end; the down projection reads the previous token's q8 x), 8 (the x-broadcast down
# projection does not load x into shared memory) and 12 (both), built by dev-v24/2-build-bounds.sh with
# SKIPS="4 8 12" TRACE_SKIPS="4 12" (bounds.tar.xz), against the same kernels whole (N) and 7e10b2082a80.
# Their outputs are garbage; only their ms/token and traces mean something.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
mkdir -p $G/bounds && tar -xJf $G/bounds.tar.xz -C $G/bounds && ls $G/bounds
devcall_models 27b 9b
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 3-q77.yaml --db $OUT/q77.db > $OUT/q77-log.txt 2>&1; echo "q77 rc $?"
grep -E "^\[" $OUT/q77-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q77.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q77-kernels.csv
grep -E "swiglu|matvec_add|rmsnorm_q8" $OUT/q77-kernels.csv
devcall_close $OUT/q77.db
