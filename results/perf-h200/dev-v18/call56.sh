#!/bin/bash
# v18 call 5: ab ffn=ring (B) vs the default (A), same library, 27B ctx 1, 6 rounds
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $S; KESTREL_ENGINE_DIR=$E timeout 250 $B/kestrel-eval ab q40.yaml --case base-1 --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,ffn=ring" --rounds 6 --db $OUT/ab.db --label "ffn=ring (B) vs default (A), 27B ctx 1" 2>&1 | tail -12
cd $OUT && sqlite3 ab.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; tar czf all.tgz ab.db && rm -f ab.db
