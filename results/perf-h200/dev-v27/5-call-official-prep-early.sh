#!/bin/bash
# v27 call 5 - PREPARED, NOT RUN (this session's device time was spent): ship row 4 if it holds. Library L = HEAD
# + 5-prep-early-default.patch (4-prep-early.patch with prep_early=2 the default, its docs and GPU-check pairs).
# Calls 4 and 4b measured (options of one library): prep_early=1 `ab` 0.9955 [0.9930, 0.9994] and 0.9976
# [0.9948, 1.0003], prep_early=2 0.9955 [0.9931, 0.9984]; trace gdn_prep 0.131 -> 0.104 ms/step. Here, in one
# call: the official job of L (GPU check with the new prep_early pairs, then the perf job), then `ab` L vs the
# shipped 0192d12e010b (both defaults: one variable, the library) on the 27B; then call 5b on the warm machine:
# `ab` of the option inside L with 12 rounds (prep_early=0 vs the default) and the 9B. Ship (commit the patch,
# results as in dev-v27 call 2) if the 27B pairs both say faster; else keep the patch and drop the default.
# Pack: git apply results/perf-h200/dev-v27/5-prep-early-default.patch; build; tools/gpu_check.sh --pack BUILD; copy
# this script, 5b-call-ab.sh, 5-q92.yaml and base.so.xz (0192d12e010b: HEAD's library, xz -9) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "base $(devcall_sha $G/base.so)"
bash tools/official_h200.sh; echo "official rc $?"
devcall_models 27b 9b
devcall_ab 5-q92.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L (B, prep_early=2 the default) vs 0192d12e010b (A), 27B ctx 1"
devcall_close $OUT/ab.db
