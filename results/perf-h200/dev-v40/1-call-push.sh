#!/bin/bash
# v40 call 1: the push merges of the clustered attentions (options attn_kvc_push, attn_cl_push; kernels.cu
# attention_kvc_body, attn_short_cl_finish), and v39's prepared ab at prompt 1536 (../dev-v39/4-call-mid.sh, its
# prediction and rule unchanged, run here on this call's library: the options it compares route as in a02143b17a5c).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 1-q133.yaml into .carry/gpu-check/.
# Order: test_kernels first (the push forms bit for bit against the pull forms before any timing), then the engine
# bit for bit (engine_diff --tol 0, w27: steps by kv head and by q-head cluster), then the benches, then the abs.
# Prediction (v39 attntl: 3.8 us from the partials visible to the end of kvct(16), 5.1 with kvcx's ticket; push
# removes the second cluster barrier, one DSMEM round trip and the gate's load after the merge, and lets the
# non-merging blocks exit at once): attntl end -1.5 to -2.5 us per launch (kvct(16) n=256 8.70 -> 6.2-7.2;
# kvcx(8x3) 9.98 -> 7.5-8.5); bench short_cl(4) at n=512 -0.5 to -1.5 us. Per token, 16 attention layers on the 27B:
# -25 to -40 us: ab 27B p4096 (attn_kvc_push=1 vs 0) 0.991-0.995; p512 (attn_cl_push=1 vs 0) 0.994-0.998.
# Rule, written before the call: a push option becomes the default if test_kernels and the bit-for-bit engine
# checks pass and its ab's upper end is below 1 (B faster beyond noise) or, with its median below 1, the lower
# end below 0.997 and the bench's per-launch time lower; else it stays an option, off. (The prompt-1536 ab: v39's
# rule, in ../dev-v39/4-call-mid.sh.)
set -u
. tools/devcall.sh
t0=$(date +%s)
el() { echo "[+$(( $(date +%s) - t0 )) s] $*"; }
echo "N $(devcall_sha)"
devcall_models 27b 9b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b
el wide
devcall_test_kernels
grep -E "push" $OUT/tk.tap | cut -c1-220
el test_kernels
w27=$DEVCALL_TMP/w27.gguf
devcall_same cuda "attn_short=4,attn_kvc_from=8" cuda "attn_short=4,attn_kvc_from=8,attn_kvc_push=1" $w27
devcall_same cuda "attn_short=4" cuda "attn_short=4,attn_cl_push=1" $w27
el same
DEVCALL_BENCH_TIMEOUT=60 devcall_bench attntl zzz
grep "^# attntl" $OUT/bench_attntl.tsv
el attntl
DEVCALL_BENCH_TIMEOUT=120 devcall_bench attn 'short_cl\(4\)|kvct\(16\)|kvcx\(8x3\)' 'n=(256|512|1024|4096|16384)( |$)'
el attn
wait $mp; cat $OUT/models.txt
el models
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q133.yaml q27-p4096 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvc_push=1" "attn_kvc_push=1 (B) vs the pull merge (A), 27B prompt 4096"
el ab1
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=100 devcall_ab 1-q133.yaml q27-p512 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_cl_push=1" "attn_cl_push=1 (B) vs the pull merge (A), 27B prompt 512"
el ab2
A="graph=1,ctx=2048,attn_kvc=16,attn_kvc_sp=1"
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=120 devcall_ab 1-q133.yaml q27-p1536 cuda "$A" cuda "graph=1,ctx=2048" "the default (B, 3 clusters of 8) vs one cluster of 16 (A), 27B prompt 1536"
el ab3
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=80 devcall_ab 1-q133.yaml q9-p1536 cuda "$A" cuda "graph=1,ctx=2048" "the default (B, 3 clusters of 8) vs one cluster of 16 (A), 9B prompt 1536"
el ab4
devcall_close $OUT/ab.db
