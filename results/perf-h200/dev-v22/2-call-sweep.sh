#!/bin/bash
# v22 call 2: on L1 (ae606b4dedf4) the ring shapes and the norm options again (2-q59.yaml), the trace of
# L1's step. Pack: tools/gpu_check.sh --pack of L1; copy this script and 2-q59.yaml into .carry/gpu-check/.
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $G; KESTREL_ENGINE_DIR=$E timeout 400 $B/kestrel-eval run 2-q59.yaml --db $OUT/q59.db > $OUT/q59.log 2>&1; echo "q59 rc $?"
grep -E "^\[" $OUT/q59.log | cut -c1-100
KESTREL_ENGINE_DIR=$E $B/kestrel-eval report --db $OUT/q59.db 2>&1 | grep -A30 -i "kernel" | head -40
cd $OUT && sqlite3 q59.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; xz -9 q59.db
