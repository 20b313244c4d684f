#!/bin/bash
# v21 call 5: GPU check and the
# official perf job of library 99b5960eceab (attn=short: one block per head up to 128 positions, a cluster of 4 up to 8192, by kv head beyond: attn_long=gqa); each DB xz-compressed on its own
set -u
W=/tmp/v21run5; rm -rf $W; mkdir -p $W/gc $W/perf
OUT=$W/gc bash tools/gpu_check.sh --run > /dev/null 2>&1; echo "gpu_check rc $?"; tail -3 $W/gc/report.txt
OUT=$W/perf timeout 420 bash tools/perf_h200.sh > $W/perf/log.txt 2>&1; echo "perf rc $?"
grep -E "^\[|ms/token|ratio|verdict|sanity|PASS|FAIL" $W/perf/log.txt | cut -c1-160 | head -60
cd $W && for d in gc/*.db perf/*.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f gc/*.db-* perf/*.db-*
ls -la gc perf
for d in gc/*.db perf/*.db; do xz -9 -T4 -c $d > $OUT/$(echo $d | tr / -).xz; done
tar czf $OUT/texts.tgz --exclude='*.db' gc perf; ls -la $OUT
