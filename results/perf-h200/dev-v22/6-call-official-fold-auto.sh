#!/bin/bash
# v22 call 6: L4 = rms_fold=auto as the default (the FFN norm folded where the model is at most 4096
# wide: the 9B; the 27B unchanged), kernels PTX-identical to 11149ade4ed0: the official job
# (tools/official_h200.sh: GPU check + perf of the same binary), then ab on the 9B ctx 1: L4's default
# (B) vs rms_fold=0 (A). Pack: tools/gpu_check.sh --pack of L4; copy this script and 4-q61.yaml.
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
bash tools/official_h200.sh > /tmp/official-stdout.txt 2>&1; echo "official rc $?"; tail -32 /tmp/official-stdout.txt
export LD_LIBRARY_PATH=$G/lib
cd $G; KESTREL_ENGINE_DIR=$E timeout 120 $B/kestrel-eval ab 4-q61.yaml --case q9-d --a cuda --a-options "graph=1,ctx=4608,rms_fold=0" --b cuda --b-options "graph=1,ctx=4608" --rounds 8 --db $OUT/ab-fold9.db --label "L4 default rms_fold=auto (B, the FFN fold on the 9B) vs rms_fold=0 (A), 9B ctx 1" 2>&1 | tail -4
cd $OUT && sqlite3 ab-fold9.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; xz -9 ab-fold9.db; ls
