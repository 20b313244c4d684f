#!/bin/bash
# v40 call 3: the push merge with its receive rows overlaying q, k, v and the block accumulators (AKC_SMEM back to
# v39's size; phase 1 of the cluster barrier arrived after each block's pass 2 instead of at its top) against the
# v39 library a02143b17a5c. Why: call 2 found the v40 defaults (632a4dfba18c, AKC_SMEM 16.6 KB larger) slower than
# v39 at 27B prompt 4096 beyond noise (ab 1.0162 [1.0137, 1.0223]) while call 1's push-vs-pull ab, both forms at the
# larger size, saw no difference (0.9987): the size, not the push, is the suspect (the out projection's blocks under
# PDL no longer fitting beside the attention's on an SM). ~450 device-seconds with the start: test_kernels and the
# same-bits checks first (the overlay changes where the push stores), the benches, then one ab, 3 pairs.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead, the v39 library as engines/libkestrel-cuda-a02143b17a5c.so,
# this script and 2-q134.yaml.
# Prediction: bench push kvcx(8x3) n=4096 within 0.3 us of call 1's 18.42; ab 27B prompt 4096 (B this library's
# defaults, A v39) 0.990-0.998.
# Rule, written before the call: attn_kvc_push stays 1 if test_kernels and the same-bits checks pass and the ab's
# upper end is below 1, or its median below 1 with the lower end below 0.997; else attn_kvc_push defaults to 0.
set -u
. tools/devcall.sh
t0=$(date +%s)
el() { echo "[+$(( $(date +%s) - t0 )) s] $*"; }
echo "N $(devcall_sha)"
OLD=$E/libkestrel-cuda-a02143b17a5c.so
echo "A $(devcall_sha $OLD)"
devcall_models 27b > $OUT/models.txt 2>&1 &
mp=$!
devcall_wide 27b
devcall_test_kernels
grep -E "push" $OUT/tk.tap | cut -c1-160
el test_kernels
w27=$DEVCALL_TMP/w27.gguf
devcall_same cuda "attn_short=4,attn_kvc_from=8" cuda "attn_short=4,attn_kvc_from=8,attn_kvc_push=0" $w27
devcall_same cuda "attn_short=4,attn_kvc_from=8,attn_kvc=16,attn_kvc_sp=1" cuda "attn_short=4,attn_kvc_from=8,attn_kvc=16,attn_kvc_sp=1,attn_kvc_push=0" $w27
el same
DEVCALL_BENCH_TIMEOUT=60 devcall_bench attntl zzz
grep "^# attntl" $OUT/bench_attntl.tsv
DEVCALL_BENCH_TIMEOUT=60 devcall_bench attn 'kvct\(16\)|kvcx\(8x3\)' 'n=(1024|4096)( |$)'
el bench
wait $mp; cat $OUT/models.txt
el models
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 2-q134.yaml q27-p4096 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "the overlay push (B, defaults) vs a02143b17a5c (A), 27B prompt 4096"
el ab1
devcall_close $OUT/ab.db
