#!/bin/bash
# v17 call 1: upper bound of the deferred norm: every rmsnorm_q8 launch but layer 0's removed (skip.so, timing only) vs shipped
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
mkdir -p /tmp/kestrel-perf
M=/tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
T0=$(date +%s); $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o $M >/dev/null; echo "gen $(( $(date +%s) - T0 )) s"
cd $S; sha256sum *.so | cut -c1-16
KESTREL_ENGINE_DIR=$E timeout 120 $B/kestrel-eval run q32.yaml --db $OUT/q32.db > $OUT/q32.log 2>&1; echo "q32 rc $?"
grep -E "^\[" $OUT/q32.log | cut -c1-110
KESTREL_ENGINE_DIR=$E timeout 110 $B/kestrel-eval ab q32.yaml --case base-1 --a $S/shipped.so --a-options "graph=1,ctx=4608" --b $S/skip.so --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "norm launches removed (B, timing only) vs shipped (A)" --force 2>&1 | tail -4
cd $OUT && for d in q32.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q32.db q32.log ab.db && rm -rf q32.db q32.log ab.db && ls -la
