#!/bin/bash
# call 2 (v21): the dependency bench with the dependency alone (n = 0, 256) and the attention kernels
# at 8192..32768 positions (bench_gemv --shape attn, ctx 32768): where the clustered short attention
# stops beating the split kernel, before attn_cl's default is raised past 1024 (call 1: ctx 4096 -7%).
# Pack: tools/gpu_check.sh --pack; cp cuda/bench_sync into .carry/gpu-check/bin; carry [".carry/gpu-check"].
set -u
G=.carry/gpu-check
timeout 150 $G/bin/bench_sync > $OUT/bench_sync.tsv 2>&1; echo "bench_sync rc $?"
timeout 240 $G/bin/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench attn rc $?"
grep -E "split|short" $OUT/bench_attn.tsv | awk -F'\t' '{print $2, $5}' | grep -E "n=(1024|4096|8192|16384|32768)$"
cat $OUT/bench_sync.tsv
