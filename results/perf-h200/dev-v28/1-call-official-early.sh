#!/bin/bash
# v28 call 1: library L = HEAD (0192d12e010b) + dev-v27/5-prep-early-default.patch (gdn_prep's conv weights before
# its PDL wait, prep_early=2 the default) + attn_early=1 the default (attn_prep's q/k norm weight and RoPE frequency
# before its PDL wait). Why together: v27 rows 4-5 measured prep_early at -0.2 to -0.5% (`ab` 0.9955, 0.9976,
# 0.9969, CIs at or across 1: not resolvable alone); attn_early removes the same kind of after-wait HBM round trip
# (plus a double-precision pow) from the 16 attention layers' attn_prep (predicted -0.5 to -1 us per attention
# layer, -0.01 to -0.02 ms). In one call: the official job of L (GPU check with the new pairs, then the perf job),
# then `ab` L vs 0192d12e010b (both defaults: one variable, the library) on the 27B. Then call 1b on the warm
# machine. Ship if the 27B pairs of calls 1 and 1b both have their CI below 1.
# Pack: the patch and this change applied; build; tools/gpu_check.sh --pack BUILD; copy this script, 1b-call-ab.sh,
# 1-q94.yaml and base.so.xz (0192d12e010b, xz -9) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "base $(devcall_sha $G/base.so)"
bash tools/official_h200.sh; echo "official rc $?"
devcall_models 27b 9b
devcall_ab 1-q94.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L (B, prep_early=2 attn_early=1) vs 0192d12e010b (A), 27B ctx 1"
devcall_close $OUT/ab.db
