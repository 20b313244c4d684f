#!/bin/bash
# v24 call 5: the official job of L = 7e10b2082a80 (q8t_wu=2, the x-broadcast down projection, the default;
# kernels.ptx byte-identical to call 4's library d8e4102c4b50): tools/official_h200.sh (GPU check, then the
# perf job), then `ab` L vs the shipped e4fa971d53b8 on the 27B and the 9B at ctx 1 (both defaults).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 5-q72.yaml and base.so.xz into .carry/gpu-check/.
set -u
G=$PWD/.carry/gpu-check
xz -dk $G/base.so.xz
FINAL=$OUT
bash tools/official_h200.sh; echo "official rc $?"
mkdir -p /tmp/kestrel-perf
for p in 27b 9b; do [ -s /tmp/kestrel-perf/qwen3.5-$p-q4_0.gguf ] || $G/bin/kestrel-eval gen-model --preset qwen3.5-$p --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-$p-q4_0.gguf >/dev/null; done
cd $G && LD_LIBRARY_PATH=$G/lib KESTREL_ENGINE_DIR=$G/engines timeout 100 $G/bin/kestrel-eval ab 5-q72.yaml --case L-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $FINAL/ab.db --label "7e10b2082a80 (B, q8t_wu=2) vs e4fa971d53b8 (A), 27B ctx 1" 2>&1 | tail -3
LD_LIBRARY_PATH=$G/lib KESTREL_ENGINE_DIR=$G/engines timeout 60 $G/bin/kestrel-eval ab 5-q72.yaml --case q9-L --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $FINAL/ab.db --label "7e10b2082a80 (B, q8t_wu=2) vs e4fa971d53b8 (A), 9B ctx 1" 2>&1 | tail -3
sqlite3 $FINAL/ab.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f $FINAL/ab.db-*; xz -9 $FINAL/ab.db
