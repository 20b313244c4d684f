#!/bin/bash
# v16 official: the GPU check, then tools/perf_h200.sh, of the shipped engine (commit 473d92a)
set -u
R=$PWD; E=$R/.carry/gpu-check/engines
mkdir -p $OUT/gc $OUT/perf
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
sha256sum $E/*.so | cut -c1-16
T0=$(date +%s)
OUT=$OUT/gc timeout 290 tools/gpu_check.sh --run > $OUT/gc/gpu_check.log 2>&1; echo "gpu_check rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^(not ok|Bail)" $OUT/gc/*.tap 2>/dev/null | head -20
grep -E "^(--|- engine_diff)" $OUT/gc/report.txt | cut -c1-160 | head -40
T0=$(date +%s)
OUT=$OUT/perf timeout 290 tools/perf_h200.sh > $OUT/perf/perf.log 2>&1; echo "perf rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^=== .*exit|^\[|verdict|ratio|sanity" $OUT/perf/perf.log | cut -c1-150
cd $OUT && sqlite3 gc/gpu.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; sqlite3 perf/perf.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f gc/gpu.db-* perf/*.npy perf/*.db-*; tar czf all.tgz gc perf && rm -rf gc perf && ls -la
