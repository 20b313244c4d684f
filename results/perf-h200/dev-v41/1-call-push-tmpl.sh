#!/bin/bash
# v41 call 1, prepared in v40 as dev-v40/4-call-next.sh (not run there: no device time left; moved here, where it ran,
# its header below as written then): "After v40" item 1 with the push
# merges as kernels of their own. Build: in a checkout of HEAD (HEAD's CUDA sources are b704f4f's), `git apply
# results/perf-h200/dev-v40/push-merge-tmpl.patch`, build in /tmp/build-lead as usual; tools/ptx_diff.sh of that
# build's cuda/kernels.ptx against HEAD's must say "188 same, 0 differ, 0 only-old, 29 only-new" (checked on the
# CPU in v40: the pull kernels byte-identical to v39's, the push ones new). Pack: tools/gpu_check.sh --pack
# /tmp/build-lead, HEAD's library (a02143b17a5c) copied in as engines/libkestrel-cuda-a02143b17a5c.so, this script
# and 2-q134.yaml. ~420 s of wall (within one call), ~510 device-seconds with the start.
# Order: test_kernels (the push kernels bit for bit against the pull ones) and engine_diff --tol 0 push vs pull
# first; then three abs against v39's library, 3 pairs each: B = the patch's defaults (both push options 1) at 27B
# prompt 4096 and prompt 512, and B = the patch with attn_kvc_push=0,attn_cl_push=0 at prompt 4096 (the control:
# the same kernels as A, only the host code differs).
# Why this form: v40's run-time-switch build was slower in the step than v39 (prompt 4096 ab 1.0162) though its push
# benched faster; its kvcx<6, PREP> PTX was 2.7x v39's (the body unswitched on the switch, the merge loop unrolled):
# here the pull kernels are v39's byte for byte and the push kernels no larger (3822 PTX lines against 4077).
# Prediction: the control 0.997-1.003; prompt 4096 0.990-0.998 (v40 bench: push 1.4-2.8 us per launch faster, 16
# layers); prompt 512 0.992-1.000; attntl as v40's push rows (kvct(16) period ~10.2 us at n = 256).
# Rule, written before the call: ship the patch with both defaults 1 (then its official run) if the control's CI
# holds 1, the prompt-4096 ab's upper end is below 1 (or its median below 1 with the lower end below 0.997) and
# the prompt-512 ab's lower end is not above 1; an option whose ab is slower beyond noise defaults to 0. If the
# control is slower beyond noise, the host code is at fault: nothing ships, PERF-NOTES says what to look at.
# Run in v41 on the patch (applied to 75da11f: commit b5341f2, `git show b5341f2`) built in /tmp/build-lead:
# bbbf8cdcefba (bbbf8cdcefba202607178af2d2245301326ab21f84f01e981433cac6fdf9fb52); tools/ptx_diff.sh against 75da11f's
# build (a02143b17a5c): "188 same, 0 differ, 0 only-old, 29 only-new" (checked). Suite renamed q135 (1-q135.yaml,
# else as dev-v40/2-q134.yaml). The control at the end was refused by ab (it needs --force): run in call 2.
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
