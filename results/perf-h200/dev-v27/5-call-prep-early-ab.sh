#!/bin/bash
# v27 call 5 - PREPARED, NOT RUN (this session's device time was spent): call 4's `prep_early` again with more
# rounds before it becomes a default. Calls 4 and 4b measured prep_early=1 at `ab` 0.9955 [0.9930, 0.9994] and
# 0.9976 [0.9948, 1.0003], prep_early=2 at 0.9955 [0.9931, 0.9984] (27B ctx 1; the trace: gdn_prep 0.131 ->
# 0.104 ms/step): a gain of 0.2-0.5%, at the edge of what one 6-round `ab` resolves. Here 12 rounds each, both
# forms, and the 9B. If both stay below 1 with their intervals, ship the simpler form (2: the weights only) as
# the default: `o->prep_early = 2` in cuda/cuda_engine.cu, docs/cuda-engine.md's option row, then the official
# job (tools/official_h200.sh) with `ab` against 0192d12e010b (the dev-v27/2-call-official.sh pattern).
# Pack: git apply results/perf-h200/dev-v27/4-prep-early.patch; build; tools/gpu_check.sh --pack BUILD; copy
# this script and 4-q91.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
devcall_models 27b 9b
export DEVCALL_AB_ROUNDS=12
DEVCALL_AB_TIMEOUT=200 devcall_ab 4-q91.yaml E2-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=2" "prep_early=2 (B) vs default (A), 27B ctx 1, 12 rounds"
DEVCALL_AB_TIMEOUT=200 devcall_ab 4-q91.yaml E1-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=1" "prep_early=1 (B) vs default (A), 27B ctx 1, 12 rounds"
DEVCALL_AB_TIMEOUT=150 devcall_ab 4-q91.yaml q9-E1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=2" "prep_early=2 (B) vs default (A), 9B ctx 1, 12 rounds"
devcall_close $OUT/ab.db
