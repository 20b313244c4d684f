#!/bin/bash
# v17 call 7: knockout attribution (timing only) of the default step, 27B ctx 1
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $S; sha256sum knock.so | cut -c1-16
KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run q36.yaml --db $OUT/q36.db > $OUT/q36.log 2>&1; echo "q36 rc $?"
grep -E "^\[" $OUT/q36.log | cut -c1-110
cd $OUT && sqlite3 q36.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz q36.db q36.log && rm -f q36.db q36.log
