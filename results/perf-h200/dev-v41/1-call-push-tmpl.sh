#!/bin/bash
# v41 call 1: dev-v40/4-call-next.sh as prepared there (its header holds the why, the prediction and the rule, written
# before this ran; unchanged here), run on the patch dev-v40/push-merge-tmpl.patch applied to 75da11f and built in
# /tmp/build-lead: bbbf8cdcefba (bbbf8cdcefba202607178af2d2245301326ab21f84f01e981433cac6fdf9fb52). tools/ptx_diff.sh of
# its kernels.ptx against 75da11f's build (a02143b17a5c): "188 same, 0 differ, 0 only-old, 29 only-new" (checked).
# Suite renamed q135 (1-q135.yaml, else as dev-v40/2-q134.yaml).
# Prediction (v40's): the control 0.997-1.003; prompt 4096 0.990-0.998; prompt 512 0.992-1.000.
# Rule (v40's): ship the patch with both defaults 1 (then its official run) if the control's CI holds 1, the
# prompt-4096 ab's upper end is below 1 (or its median below 1 with the lower end below 0.997) and the prompt-512
# ab's lower end is not above 1; an option whose ab is slower beyond noise defaults to 0. If the control is slower
# beyond noise, the host code is at fault: nothing ships.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
OLD=$E/libkestrel-cuda-a02143b17a5c.so
echo "A $(devcall_sha $OLD)"
devcall_models 27b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b
devcall_test_kernels
grep -E "push" $OUT/tk.tap | cut -c1-160
devcall_mark test_kernels
w27=$DEVCALL_TMP/w27.gguf
devcall_same cuda "attn_short=4,attn_kvc_from=8" cuda "attn_short=4,attn_kvc_from=8,attn_kvc_push=0" $w27
devcall_same cuda "attn_short=4" cuda "attn_short=4,attn_cl_push=0" $w27
devcall_mark same
DEVCALL_BENCH_TIMEOUT=60 devcall_bench attntl zzz
grep "^# attntl" $OUT/bench_attntl.tsv
devcall_mark bench
wait $mp; cat $OUT/models.txt
devcall_mark models
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q135.yaml q27-p4096 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "the push kernels (B, defaults) vs a02143b17a5c (A), 27B prompt 4096"
devcall_mark ab1
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=100 devcall_ab 1-q135.yaml q27-p512 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "the push kernels (B, defaults) vs a02143b17a5c (A), 27B prompt 512"
devcall_mark ab2
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q135.yaml q27-p4096 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvc_push=0,attn_cl_push=0" "control: the patch with both push options 0 (B) vs a02143b17a5c (A), 27B prompt 4096"
devcall_mark ab3
devcall_close $OUT/ab.db
