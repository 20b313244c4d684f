#!/bin/bash
# v18 call 3: where ffn=ring loses - bench_gemv --shape ffn with the per-block timelines, and the step trace of both
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
timeout 100 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "bench rc $?"; cat $OUT/bench_ffn.tsv
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $S; KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval run q39.yaml --db $OUT/q39.db > $OUT/q39.log 2>&1; echo "q39 rc $?"
grep -E "^\[" $OUT/q39.log | cut -c1-120
cd $OUT && sqlite3 q39.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz q39.db q39.log bench_ffn.tsv && rm -f q39.db q39.log bench_ffn.tsv
