#!/bin/bash
# v38 call 5 (the session's last ~335 device-seconds): (a) "After v38" item 2's first measurement, bench_gemv
# --shape attnkv (new): attention_kvcx over the same bytes and blocks through caches of 4, 2 and 1 kv heads (nkv = 4
# the engine's layout, each kv head's 1 KB rows 4 KB apart; nkv = 1 each slot's 32 rows one contiguous 32 KB), 64
# and 96 blocks, n = 4096 and 16384 positions per kv head of the 27B; (b) `ab` 9B prompt 12288, B =
# attn_kvc=8,attn_kvc_sp=3 vs A = default (3 pairs), for "After v38" item 1.
# Library: 0ae04581d466 (the shipped one; bench_gemv rebuilt from 5b2a203's kernels with the new shape).
# Prediction: if the read pattern is the bound, nkv = 1 at 16384 reaches 3.5-4.2 TB/s where nkv = 4 gets ~2.6-2.8
# (64 / 96 blocks); if it is not (the merge, the per-row work), all three within 10%. 9B ab 0.97-0.99 (call 2:
# 1.886 vs 1.919).
# Rule: ships nothing; a head-major cache is planned (After v38 item 2) only if nkv = 1 is >= 20% faster at 16384.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 9b &
DEVCALL_BENCH_TIMEOUT=60 devcall_bench attnkv 'attention_kvcx'
awk -F'\t' '$1 == "attnkv" { print $2 "\t" $5 " us\t" $6 " GB/s" }' $OUT/bench_attnkv.tsv
wait
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=150 devcall_ab 5-q130.yaml q9-p12288 cuda "graph=1,ctx=12800" cuda "graph=1,ctx=12800,attn_kvc=8,attn_kvc_sp=3" "attn_kvc=8,attn_kvc_sp=3 (B: 3 clusters of 8 per kv head, attention_kvcx) vs the default (A: attention_kvct, one cluster of 16), 9B prompt 12288"
devcall_close $OUT/ab.db
