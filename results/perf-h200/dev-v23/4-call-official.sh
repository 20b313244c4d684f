#!/bin/bash
# v23 call 4: the official job of L = the shipped 8192a5b49fe6's kernels (kernels.ptx byte-identical) with
# q8t_ogrid=auto (the 27B's out projections on 216 blocks, resident beside the delta rule's 48; the 9B
# unchanged), library e4fa971d53b8: tools/official_h200.sh (GPU check, then the perf job), then `ab` L vs
# 8192a5b49fe6 on the 27B at ctx 1 (both defaults).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 4-q66.yaml and base.so.xz into .carry/gpu-check/.
set -u
G=$PWD/.carry/gpu-check
xz -dk $G/base.so.xz
FINAL=$OUT
bash tools/official_h200.sh; echo "official rc $?"
mkdir -p /tmp/kestrel-perf
[ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $G/bin/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null
cd $G && LD_LIBRARY_PATH=$G/lib KESTREL_ENGINE_DIR=$G/engines timeout 150 $G/bin/kestrel-eval ab 4-q66.yaml --case L-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $FINAL/ab.db --label "e4fa971d53b8 (B, q8t_ogrid=auto) vs 8192a5b49fe6 (A), 27B ctx 1" 2>&1 | tail -4
sqlite3 $FINAL/ab.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f $FINAL/ab.db-*; xz -9 $FINAL/ab.db
