#!/bin/bash
# v28 call 2: where the rest of the step goes on today's kernels — v17's knockout attribution (row 3 there) redone
# on the shipped a21521bc56b1: knock.so = that library + 2-knockout.patch (engine option knock=MASK: the step's
# launches of the named kernel kinds are not made; wrong numbers, timing only), 27B ctx 1, each mask twice (a, b in
# mirrored order). Masks: 1 rmsnorm_q8, 2 gdn_prep, 4 delta, 8 attention_short, 16 attn_prep, 32 out projections,
# 64 qkv+z, 128 SwiGLU, 256 down, 512 q/k/v, 1024 lm_head, 31 every small kind, 992 every GEMV kind but the lm_head.
# Pack: HEAD's build packed (tools/gpu_check.sh --pack BUILD); knock.so.xz (the patched library, stripped, xz -9) and
# 2-q95.yaml copied into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/knock.so.xz
echo "knock $(devcall_sha $G/knock.so) default $(devcall_sha)"
devcall_models 27b
devcall_suite 2-q95.yaml q95
devcall_close $OUT/q95.db
