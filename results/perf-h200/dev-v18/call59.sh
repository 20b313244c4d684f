#!/bin/bash
# v18 call 9: GPU check and the official perf job of library 4cdbcd06b2bf (q8t_wu=1 default)
set -u
R=$PWD
mkdir -p $OUT/gc $OUT/perf
OUT=$OUT/gc bash tools/gpu_check.sh --run > /dev/null 2>&1; echo "gpu_check rc $?"; tail -3 $OUT/gc/report.txt
OUT=$OUT/perf timeout 420 bash tools/perf_h200.sh > $OUT/perf/log.txt 2>&1; echo "perf rc $?"; tail -40 $OUT/perf/log.txt | cut -c1-160
cd $OUT && for d in gc/gpu.db perf/*.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f gc/*.db-* perf/*.db-*; tar czf all.tgz gc perf && rm -rf gc perf
