#!/bin/bash
# tools/official_h200.sh - the official issue-6 job of ONE engine build in ONE device call: the GPU check
# (tools/gpu_check.sh --run) and then the performance job (tools/perf_h200.sh) of the same packed
# binaries, so the numbers and the correctness verdict are of one binary on one machine.
#
#   here:   tools/gpu_check.sh --pack BUILD_DIR          (then carry [".carry/gpu-check"])
#   device: tools/official_h200.sh                       (run tool; about 410 s on the lent H200, v37)
#
# Under $OUT (what the device tool brings back; ~17 MB): gc-gpu.db.xz and perf-perf.db.xz (the results
# DBs, WAL folded in, each xz -9 on its own) and texts.tgz (every other file of both jobs: gc/report.txt,
# test_kernels.tap, sanitizer.log, metrics.txt; perf/log.txt, perf-report.md, perf-metrics.csv,
# ab-metrics.csv, kernel-profile.csv, engines.sha256, sanity logs); on stdout a summary: each job's exit
# code, the GPU check's last lines, the perf cases, the ab ratio and the sanity verdict.
# Exit: 0 when the GPU check passed and the perf job ran with a sanity PASS (its gate failures, e.g. the
# 3.6 ms target, are results: perf_h200.sh's exit 1 alone is not an error here); 1 when the GPU check
# failed, the perf job failed otherwise (exit > 1, or no "sanity: PASS" in its log); 2 when OUT is not set,
# the pack is missing, or a file its SHA256SUMS lists is missing or altered, or the GPU is not an H200 (each
# checked before any job runs).
# Environment: OUT (required), WORK (scratch, default /tmp/official-h200; wiped), PERF_TIMEOUT (seconds,
# default 420), GPU_CHECK_CARRY (as tools/gpu_check.sh), and GPU_CHECK / PERF_JOB / GPU_NAME_CMD: the two jobs'
# commands (each run with OUT set to its own folder) and the one that prints the GPU's name (default
# nvidia-smi's); tests/tools-official.sh substitutes stubs.
set -u
cd "$(dirname "$0")/.." || exit 2
[ -n "${OUT:-}" ] || { echo "official_h200: OUT is not set (the folder the results go to)" >&2; exit 2; }
FINAL=$OUT
W=${WORK:-/tmp/official-h200}
CARRY=${GPU_CHECK_CARRY:-.carry/gpu-check}
GPU_CHECK=${GPU_CHECK:-bash tools/gpu_check.sh --run}
PERF_JOB=${PERF_JOB:-timeout ${PERF_TIMEOUT:-420} bash tools/perf_h200.sh}
if [ "$GPU_CHECK" = "bash tools/gpu_check.sh --run" ] && [ ! -x "$CARRY/bin/kestrel-eval" ]; then
    echo "official_h200: no pack in $CARRY (tools/gpu_check.sh --pack BUILD_DIR first, carry it)" >&2
    exit 2
fi
# every packed file present and unaltered before any device time goes (v41: a pack carried without its trace
# library ran the whole job to fail its profile=trace step and the perf suite's cuda-trace cases)
if [ "$GPU_CHECK" = "bash tools/gpu_check.sh --run" ] && [ -f "$CARRY/SHA256SUMS" ]; then
    bad=$(cd "$CARRY" && sha256sum -c --quiet SHA256SUMS 2>/dev/null | head -1)
    [ -z "$bad" ] || { echo "official_h200: the pack in $CARRY is incomplete or altered (SHA256SUMS: $bad)" >&2; exit 2; }
fi
# the official runs are H200 runs (issue 6; results/perf-h200, whose floor and history are that card's): on any other
# card (the lent pool has H100s too) nothing runs, so no device time goes into numbers file_official.sh would refuse
GPU_NAME_CMD=${GPU_NAME_CMD:-nvidia-smi --query-gpu=name --format=csv,noheader}
gpu=$($GPU_NAME_CMD 2>/dev/null | head -1)
case $gpu in
*H200*) ;;
"") echo "official_h200: cannot read the GPU's name ($GPU_NAME_CMD): nothing run" >&2; exit 2 ;;
*) echo "official_h200: the GPU is '$gpu', not an H200 (results/perf-h200 holds H200 runs only): nothing run" >&2; exit 2 ;;
esac
mkdir -p "$FINAL" || exit 2
rm -rf "$W" && mkdir -p "$W/gc" "$W/perf" || exit 2

OUT=$W/gc $GPU_CHECK > "$W/gc/stdout.txt" 2>&1
gc_rc=$?
echo "gpu_check: exit $gc_rc"
[ -f "$W/gc/report.txt" ] && tail -3 "$W/gc/report.txt"
OUT=$W/perf $PERF_JOB > "$W/perf/log.txt" 2>&1
perf_rc=$?
echo "perf: exit $perf_rc"
grep -E "^\[|^ratio|^verdict|^sanity:" "$W/perf/log.txt" | cut -c1-160 | head -40

# the DBs: WAL folded in, then each compressed on its own; everything else in one archive
shopt -s nullglob
pack_rc=0
sh tools/db_fold.sh "$W"/gc/*.db "$W"/perf/*.db || pack_rc=1 # a log it cannot fold stays (into texts.tgz)
for d in "$W"/gc/*.db "$W"/perf/*.db; do
    rel=${d#"$W"/}
    xz -9 -T4 -c "$d" > "$FINAL/${rel//\//-}.xz" || pack_rc=1
done
(cd "$W" && tar czf "$FINAL/texts.tgz" --exclude='*.db' gc perf) || pack_rc=1
ls -la "$FINAL"

rc=0
[ "$gc_rc" -eq 0 ] || { echo "official_h200: the GPU check failed (exit $gc_rc): gc/report.txt in texts.tgz"; rc=1; }
if [ "$perf_rc" -gt 1 ] || ! grep -q "^sanity: PASS" "$W/perf/log.txt"; then
    echo "official_h200: the perf job failed (exit $perf_rc$(grep -q '^sanity: PASS' "$W/perf/log.txt" || echo ', no sanity PASS'))"
    rc=1
fi
[ "$pack_rc" -eq 0 ] || { echo "official_h200: packing the results into $FINAL failed"; rc=1; }
exit $rc
