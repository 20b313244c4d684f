#!/bin/bash
# v22 call 4 (after the official call 3b, whose GPU check failed on its own impossible case ctx=60000):
# the GPU check again with that case at ctx=50176, same library 11149ade4ed0; then ab rms_fold=1 vs the
# default on the 9B ctx 1 (call 3: 1.732 vs 1.781 in one pair).
# Pack: tools/gpu_check.sh --pack of 11149ade4ed0; copy this script and 4-q61.yaml into .carry/gpu-check/.
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
( mkdir -p /tmp/kestrel-perf; $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
mkdir -p $OUT/gc
OUT=$OUT/gc timeout 300 bash tools/gpu_check.sh --run > $OUT/gc/stdout.txt 2>&1; echo "gpu_check rc $?"
grep -n ": FAIL" $OUT/gc/report.txt | head; tail -4 $OUT/gc/report.txt
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval ab 4-q61.yaml --case q9-fold --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,rms_fold=1" --rounds 8 --db $OUT/ab.db --label "rms_fold=1 (B) vs default (A), 11149ade4ed0, 9B ctx 1" 2>&1 | tail -4
cd $OUT && sqlite3 ab.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; xz -9 ab.db
cd $OUT/gc && for d in *.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; for d in *.db; do xz -9 $d; done; ls
