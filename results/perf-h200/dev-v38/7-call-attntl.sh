#!/bin/bash
# v38 call 7, PREPARED for the next session (not run: no device time was left): "After v38" item 2, where the
# kv-head attention's ~10 us per launch goes, before any change to it: bench_gemv --shape attntl (new; kernels.cu
# KC_AKC_DBG, a bench-only build: the library's kernels are unchanged, HEAD still builds 0ae04581d466), the
# per-block marks of attention_kvct(16) and attention_kvcx(8x3) at n = 256 and 4096, 27B heads, back to back.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead (after `make cuda/bench_gemv` there); copy this script. ~60
# device-seconds with the start.
# Prediction (bench --shape attn: kvct(16) 10.6 / 19.5 us at n = 256 / 4096, kvcx(8x3) 12.1 / 18.5): the period
# as those; at n = 256, of kvct's ~10.6 us: the PDL wait passed ~1 us after entry (the previous launch's end), q
# ~0.5 us later, the first K slot ~1.5-2.5 us after q (an HBM round trip for a tensor copy), scores and p x V ~1 us
# each at 16 rows per block, the cluster barrier and merge ~1.5-2 us, kvcx's ticket merge +1-2 us at the end.
# Rule: ships nothing; the largest mark-to-mark gap at n = 256 names the next change (a first slot earlier: the K
# copies issued before the PDL wait where the cache rows are not this step's; fewer barriers; the merge).
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
DEVCALL_BENCH_TIMEOUT=60 devcall_bench attntl 'NONE'
grep '^# attntl' $OUT/bench_attntl.tsv
