#!/bin/bash
# v37 call 4, PREPARED for the next session's first call (not run: no device time was left): the knockout attribution
# of v17 redone on today's kernels. The library: 3d61fa4 + 4-knockout.patch (option knock=MASK, scratch, never shipped:
# bit i leaves every launch of kernel family i out of the step; timing only, the numbers are wrong). Build it in a
# scratch folder (not /tmp/build-lead), pack it with tools/gpu_check.sh --pack, copy this script and 4-q127.yaml.
# Why: v17's table (5.14 ms era) bounded every piecewise plan; since then the step lost 0.5 ms and the trace books
# each wait to the kernel that waits, overstating the small kernels (v17: up to 2.4x). What each family costs in the
# step today says where ctx 1's ~1.4 ms over the floor is (PERF-NOTES "After v37" item 1).
# Prediction (v17 scaled by what changed since): norms 0.10-0.16 ms, gdn_prep 0.03-0.07, delta 0.15-0.22, attention
# (with attn_prep inside) 0.08-0.14, out projections 0.35-0.45, qkv+z ~0.45-0.5 (their bytes), SwiGLU 1.5-1.7, down
# 0.8-0.95, q/k/v ~0.14, lm_head ~0.17; all small kernels (15) 0.45-0.7; all GEMVs but the lm_head (496) 3.3-3.6.
# This call ships nothing; its table goes to PERF-NOTES as v17's did.
set -u
. tools/devcall.sh
echo "N $(devcall_sha) (the knockout build: not a library to ship)"
devcall_models 27b || exit 1
DEVCALL_RUN_TIMEOUT=300 devcall_suite 4-q127.yaml q127
devcall_close $OUT/q127.db
