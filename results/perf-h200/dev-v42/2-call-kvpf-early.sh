#!/bin/bash
# v42 call 2: option attn_kvpf in a second form: the short attentions' cache rows L2-prefetched BEFORE the PDL wait
# (the position read by ld.global.nc: a hint), so ahead of the out projection's ring preload, which the block's
# trigger (in kc_pdl_begin) starts. Call 1's form prefetched them after the wait: the kernels 0.7-2 us slower in the
# trace (attention_short_prep 0.080 -> 0.091 ms/step, attention_short_cl_prep at prompt 512 0.186 -> 0.220), ab
# context 1 1.0048 [1.0033, 1.0058], prompt 512 1.0086 [1.0056, 1.0096]: read as every prefetch queueing behind that
# 18 MB preload (the delta rule's state did the same before v27, and won once prefetched before its wait).
# (The code: 2-kvpf-prewait.patch, `git apply` on d4bcdd5; not in the tree: dropped, PERF-NOTES v42.)
# Library: HEAD + the option (default 0), tools/ptx_diff.sh against bbbf8cdcefba's build: 217 same, 6 only-new.
# Prediction (written before the call): same bits; trace attention_short_prep 0.080 -> 0.070-0.077 ms/step,
# attention_short_cl_prep (prompt 512) 0.186 -> 0.165-0.180; ab context 1 0.995-1.000, prompt 512 0.990-0.998.
# Rule (written before the call): attn_kvpf defaults to 1 (then the official run) if the same-bits pairs pass, neither
# ab is "B slower" and at least one ab's CI upper end is below 1; else the option is dropped from the tree (its
# patches kept in dev-v42/) and PERF-NOTES says what the two traces showed.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b
devcall_test_kernels
grep -E "attn_kvpf" $OUT/tk.tap | cut -c1-160
devcall_mark test_kernels
w27=$DEVCALL_TMP/w27.gguf
devcall_same cuda "" cuda "attn_kvpf=1" $w27
devcall_same cuda "attn_short=4" cuda "attn_short=4,attn_kvpf=1" $w27
devcall_same cuda "attn_short=4,attn_cl_push=0" cuda "attn_short=4,attn_cl_push=0,attn_kvpf=1" $w27
devcall_same cuda "attn_kvpf=1" cuda "attn_kvpf=1,graph=0" $w27
devcall_mark same
wait $mp; cat $OUT/models.txt
devcall_mark models
devcall_suite 2-q139.yaml trace 'attention|matvec_out'
devcall_mark trace
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=230 devcall_ab 2-q138.yaml q27-ctx1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvpf=1" "attn_kvpf=1 before the wait (B) vs 0 (A), one library, 27B context 1"
devcall_mark ab1
DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=170 devcall_ab 2-q138.yaml q27-p512 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvpf=1" "attn_kvpf=1 before the wait (B) vs 0 (A), one library, 27B prompt 512"
devcall_mark ab2
devcall_close $OUT/ab.db $OUT/trace.db
