#!/bin/bash
# v17 call 3: attn=gqa slower at ctx 1: isolated kernel times, carveout=100, pdl=0
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $S; sha256sum $E/libkestrel-cuda.so | cut -c1-16
T0=$(date +%s)
KESTREL_ENGINE_DIR=$E timeout 280 $B/kestrel-eval run q34.yaml --db $OUT/q34.db > $OUT/q34.log 2>&1; echo "q34 rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^\[" $OUT/q34.log | cut -c1-110
$B/kestrel-eval query "select c.name, k.kernel, printf('%.4f', k.ms_per_step), k.calls, printf('%.2f', 1000*k.total_ms/k.calls) from kernel_profile k join cases c on c.id=k.case_id where k.kernel like 'att%' or k.kernel like 'matvec_out%' order by c.name, k.ms_per_step desc" --db $OUT/q34.db 2>&1 | head -24
cd $OUT && sqlite3 q34.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz q34.db q34.log && rm -rf q34.db q34.log && ls -la
