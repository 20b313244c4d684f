#!/bin/bash
# next session's first call (written in session 12, not run: the device time was spent): PERF-NOTES
# "After v20" item 1 - the clustered short attention at ctx 4096 (attn_cl=65536; the bench put it at
# 37.4 us per layer against the split kernel's 47.5), also at 5 blocks per head and against attn=gqa.
# Pack: tools/gpu_check.sh --pack of the committed tree (0936a1967a7c); copy this script and 8-q56.yaml
# into .carry/gpu-check/; carry [".carry/gpu-check"].
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
[ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null
cd $G; KESTREL_ENGINE_DIR=$E timeout 400 $B/kestrel-eval run 8-q56.yaml --db $OUT/q56.db > $OUT/q56.log 2>&1; echo "q56 rc $?"
grep -E "^\[" $OUT/q56.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 180 $B/kestrel-eval ab 8-q56.yaml --case d-4096 --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,attn_cl=65536" --rounds 6 --db $OUT/ab.db --label "attn_cl=65536 (B) vs the default (A), same library, 27B prompt 4096" 2>&1 | tail -4
cd $OUT && for d in q56.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q56.db q56.log ab.db && rm -f q56.db q56.log ab.db
