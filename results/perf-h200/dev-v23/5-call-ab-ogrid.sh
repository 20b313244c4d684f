#!/bin/bash
# v23 call 5: call 4's `ab` of e4fa971d53b8 against 8192a5b49fe6 said no difference (0.9990) where call 2's
# of q8t_ogrid=216 against the full grid inside one library said 0.9923: the same question once more inside
# the shipped library, 10 rounds: its default (q8t_ogrid=auto: 216) against q8t_ogrid=0 (264).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 5-q67.yaml into .carry/gpu-check/.
set -u
G=$PWD/.carry/gpu-check
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $G/bin/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $G && LD_LIBRARY_PATH=$G/lib KESTREL_ENGINE_DIR=$G/engines timeout 400 $G/bin/kestrel-eval ab 5-q67.yaml --case L-a --a cuda --a-options "graph=1,ctx=4608,q8t_ogrid=0" --b cuda --b-options "graph=1,ctx=4608" --rounds 10 --db $OUT/ab.db --label "e4fa971d53b8: default q8t_ogrid=auto (B) vs q8t_ogrid=0 (A), 27B ctx 1" 2>&1 | tail -4
sqlite3 $OUT/ab.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f $OUT/ab.db-*; xz -9 $OUT/ab.db
