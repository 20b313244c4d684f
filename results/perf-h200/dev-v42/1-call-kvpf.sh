#!/bin/bash
# v42 call 1: option attn_kvpf (the short attentions with attn_prep inside, attention_short_prep and
# attention_short_cl_prep(_push), L2-prefetch the K and V cache rows their scan reads right after the PDL wait).
# (The option's code: 1-kvpf-postwait.patch, `git apply` on d4bcdd5; not in the tree: dropped, PERF-NOTES v42.)
# Library: HEAD's sources with the option (default 0), built in /tmp/build-lead; tools/ptx_diff.sh against
# bbbf8cdcefba's build: "217 same, 0 differ, 0 only-old, 6 only-new" (the six _pf kernels); every default kernel the
# same, so the abs below compare the kernels alone (options of one library).
# Why: those rows were written steps ago and come from HBM (a token streams ~15 GB through the 50 MB L2); the scan
# asks for them only after the q/k prep (its loads, two block sums, RoPE, the append), then one HBM round trip per
# 8 rows of a warp (n <= 64: one, n <= 128: two; the cluster of 4 at n 512-612: three). The perf case at context 1
# measures n = 11..211 (warmup 10, 200 tokens): the one-block kernel to 128, the cluster of 4 past it.
# Also first on a GPU: test_kernels' attn_pair fixture (v41, compiled only).
# Prediction (written before the call): test_kernels all ok, the pf pairs bit for bit; trace attention_short_prep
# 0.120 -> 0.095-0.105 ms/step (-1 to -1.5 us per attention layer), attention_short_cl_prep at prompt 512 -1.5 to
# -3 us per layer; ab B (attn_kvpf=1) vs A (0): context 1 0.994-0.998, prompt 512 0.990-0.997.
# Rule (written before the call): attn_kvpf defaults to 1 (then the official run) if test_kernels and the same-bits
# pairs pass, neither ab is "B slower" (CI above 1) and at least one ab's CI upper end is below 1; else it stays an
# option at 0 and PERF-NOTES says what the trace showed.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b
devcall_test_kernels
grep -E "attn_kvpf|push merge|attention_short_prep" $OUT/tk.tap | cut -c1-200
devcall_mark test_kernels
w27=$DEVCALL_TMP/w27.gguf
devcall_same cuda "" cuda "attn_kvpf=1" $w27
devcall_same cuda "attn_short=4" cuda "attn_short=4,attn_kvpf=1" $w27
devcall_same cuda "attn_short=4,attn_cl_push=0" cuda "attn_short=4,attn_cl_push=0,attn_kvpf=1" $w27
devcall_mark same
wait $mp; cat $OUT/models.txt
devcall_mark models
devcall_suite 1-q137.yaml trace 'attention|matvec_out'
devcall_mark trace
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=230 devcall_ab 1-q136.yaml q27-ctx1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvpf=1" "attn_kvpf=1 (B) vs 0 (A), one library, 27B context 1"
devcall_mark ab1
DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=170 devcall_ab 1-q136.yaml q27-p512 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvpf=1" "attn_kvpf=1 (B) vs 0 (A), one library, 27B prompt 512"
devcall_mark ab2
devcall_close $OUT/ab.db $OUT/trace.db
