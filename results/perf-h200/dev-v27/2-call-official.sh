#!/bin/bash
# v27 call 2: the official job of L = 0192d12e010b (delta_trig=3 with delta_pf=1 the default; call 1's
# 484bf2c3e91d with its option defaults changed, the kernels' PTX identical): tools/official_h200.sh (GPU check
# with the new engine_diff pairs of delta_trig/delta_pf, then the perf job), then `ab` L vs the shipped
# 7e10b2082a80 on the 27B and the 9B at ctx 1 (both with their defaults: one variable, the library).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 2-q89.yaml and base.so.xz into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "base $(devcall_sha $G/base.so)"
bash tools/official_h200.sh; echo "official rc $?"
devcall_models 27b 9b
devcall_ab 2-q89.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "0192d12e010b (B, delta_trig=3,delta_pf=1) vs 7e10b2082a80 (A), 27B ctx 1"
DEVCALL_AB_TIMEOUT=100 devcall_ab 2-q89.yaml q9-L $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "0192d12e010b (B, delta_trig=3,delta_pf=1) vs 7e10b2082a80 (A), 9B ctx 1"
devcall_close $OUT/ab.db
