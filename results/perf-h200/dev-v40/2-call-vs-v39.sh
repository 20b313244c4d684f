#!/bin/bash
# v40 call 2: the new defaults (632a4dfba18c: the push merges, attn_kvc_push=1, attn_cl_push=1) against the v39
# library (a02143b17a5c, HEAD b704f4f's build: the pull merges, attention_kvc's shared memory 16.6 KB smaller) by
# `ab` of the two libraries, 3 pairs each. Why: the official run of 632a4dfba18c put the 27B at ctx 4096 at 4.874
# ms/token against v39's 4.811 (+1.3%; 9B +1.7%) where ctx 1, unchanged, moved +0.7% with a probe 0.4% lower: the
# lease, or the larger dynamic shared memory (AKC_SMEM grew by the push's receive rows in both merges, so call 1's
# push-vs-pull ab could not see it). Pack: tools/gpu_check.sh --pack /tmp/build-lead (632a4dfba18c), the v39
# library copied in as engines/libkestrel-cuda-a02143b17a5c.so; this script and 1-q133.yaml (+ the ctx-1 case).
# Prediction: 27B prompt 4096 0.993-0.999, prompt 512 0.988-0.996, ctx 1 0.997-1.003 (no change there).
# Rule, written before the call: if the prompt-4096 ab's lower end is above 1 (the new default slower beyond
# noise), attention_kvc's receive rows are allocated only with push and the push default is measured again; if
# the ctx-1 ab's lower end is above 1, the new build's step itself is slower and is looked into before anything
# ships on it; else the defaults stand and the official's ctx-4096 gap is the lease's.
set -u
. tools/devcall.sh
t0=$(date +%s)
el() { echo "[+$(( $(date +%s) - t0 )) s] $*"; }
echo "N $(devcall_sha)"
OLD=$E/libkestrel-cuda-a02143b17a5c.so
echo "A $(devcall_sha $OLD)"
devcall_models 27b
el models
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 2-q134.yaml q27-p4096 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "632a4dfba18c (B) vs a02143b17a5c (A), defaults, 27B prompt 4096"
el ab1
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=100 devcall_ab 2-q134.yaml q27-p512 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "632a4dfba18c (B) vs a02143b17a5c (A), defaults, 27B prompt 512"
el ab2
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=80 devcall_ab 2-q134.yaml q27-ctx1 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "632a4dfba18c (B) vs a02143b17a5c (A), defaults, 27B ctx 1"
el ab3
devcall_close $OUT/ab.db
