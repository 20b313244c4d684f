#!/bin/bash
# v24 call 2: the step's bounds (timing only). The shipped e4fa971d53b8 (N, packed) against its own kernels
# built with -DKC_Q8T_SKIPC=1|2|3 (2-build-bounds.sh: every TMA GEMV of the step without its weight bulk
# copies, without its dots, without both); the 27B and 9B ctx 1, interleaved; the trace of N and of skip 1
# (which kernels' segments shrink when no weight byte is read). Answers: with the weights free, how long
# is the step's critical path (sync + x + compute)? A persistent step that streams weights independently
# can approach max(floor, that), no less.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 2-q69.yaml, bounds.tar.xz (skip*.so, trace-skip1.so).
set -u
. tools/devcall.sh
tar xJf $G/bounds.tar.xz -C $G
devcall_models 27b 9b
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 2-q69.yaml --db $OUT/q69.db > $OUT/q69-log.txt 2>&1; echo "q69 rc $?"
grep -E "^\[" $OUT/q69-log.txt | cut -c1-110
KESTREL_ENGINE_DIR=$E $B/kestrel-eval report latest --db $OUT/q69.db > $OUT/q69-report.txt 2>&1
$B/kestrel-eval query --db $OUT/q69.db "select c.name, k.kernel, round(k.ms_per_step,3) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" | head -34
devcall_close $OUT/q69.db
