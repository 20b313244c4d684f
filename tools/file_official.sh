#!/bin/bash
# tools/file_official.sh - files ONE official run (what tools/official_h200.sh left under the device's $OUT) into
# results/ under the name of the engine it timed, so that every official run is recorded the same way:
#
#   results/perf-h200/  perf-X.db.xz  metrics-X.csv  kernel-profile-X.csv  ab-X.csv  log-X.txt  report-X.md
#                       sanity-27b-cpu-vs-cuda-X.txt  engines-X.sha256
#   results/cuda-check/ gpu-X.db.xz  report-X.txt  sanitizer-X.txt  test_kernels-X.tap
#
# X = the first 12 hex digits of the SHA-256 of the packed (stripped) libkestrel-cuda.so, read from the run's own
# perf/engines.sha256 — the library the run timed, not whatever is built here now.
#
#   usage: tools/file_official.sh DIR [RESULTS]
#     DIR      the run's files: gc-gpu.db.xz, perf-perf.db.xz and texts.tgz (the device tool's files_at folder)
#     RESULTS  the results folder (default: results/ of this repository)
#
# Exit 2, one line naming the file, the archive member or the key, and nothing written: a missing input or
# member, an engines.sha256 without the CUDA library's line, a run whose GPU (perf/gpu.txt, the perf job's
# nvidia-smi line) is not an H200, a destination that exists already (that engine's official run is filed:
# compare, do not overwrite). Exit 1, nothing written: a run that is not an official
# result — its GPU check has a step that did not pass (a "-- NAME: FAIL" line in gc/report.txt, or no
# "== summary" line: the check did not finish), or its perf log has no "sanity: PASS".
# On success: the files written, then the run's headline (probe, 27B ctx 1 median and share of the floor).
set -u
usage() { echo "usage: tools/file_official.sh DIR [RESULTS]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
dir=$1
res=${2:-$(cd "$(dirname "$0")/.." && pwd)/results}
die() { echo "file_official: $*" >&2; exit 2; }

for f in gc-gpu.db.xz perf-perf.db.xz texts.tgz; do
    [ -f "$dir/$f" ] || die "$dir/$f: missing (the official run's files: gc-gpu.db.xz, perf-perf.db.xz, texts.tgz)"
done
[ -d "$res/perf-h200" ] && [ -d "$res/cuda-check" ] || die "$res: no perf-h200/ and cuda-check/ folders (not a results folder)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/file-official.XXXXXX") || exit 2
staged=() moved=()
cleanup() { # on any exit before the end: the staged copies and whatever was already renamed go again
    local s
    for s in "${staged[@]}" "${moved[@]}"; do rm -f "$s"; done
    rm -rf "$tmp"
}
trap cleanup EXIT
tar xzf "$dir/texts.tgz" -C "$tmp" 2>/dev/null || die "$dir/texts.tgz: not a readable gzip tar archive"

# source (a member of texts.tgz, or a file of DIR) -> destination, in the order they are written
pairs=(
    "DIR:perf-perf.db.xz perf-h200/perf-@.db.xz"
    "perf/perf-metrics.csv perf-h200/metrics-@.csv"
    "perf/kernel-profile.csv perf-h200/kernel-profile-@.csv"
    "perf/ab-metrics.csv perf-h200/ab-@.csv"
    "perf/log.txt perf-h200/log-@.txt"
    "perf/perf-report.md perf-h200/report-@.md"
    "perf/sanity-compare.log perf-h200/sanity-27b-cpu-vs-cuda-@.txt"
    "perf/engines.sha256 perf-h200/engines-@.sha256"
    "DIR:gc-gpu.db.xz cuda-check/gpu-@.db.xz"
    "gc/report.txt cuda-check/report-@.txt"
    "gc/sanitizer.log cuda-check/sanitizer-@.txt"
    "gc/test_kernels.tap cuda-check/test_kernels-@.tap"
)
src_of() { case $1 in DIR:*) echo "$dir/${1#DIR:}" ;; *) echo "$tmp/$1" ;; esac; }
for p in "${pairs[@]}"; do
    s=${p%% *}
    [ -f "$(src_of "$s")" ] || die "$dir/texts.tgz: no member $s"
done

sha=$(awk '$2 ~ /(^|\/)libkestrel-cuda\.so$/ { print $1 }' "$tmp/perf/engines.sha256")
case $sha in
[0-9a-f]*) [ ${#sha} -eq 64 ] && [ -z "${sha//[0-9a-f]/}" ] ||
    die "$dir/texts.tgz: perf/engines.sha256: the libkestrel-cuda.so line's hash is not 64 hex digits ('$sha')" ;;
*) die "$dir/texts.tgz: perf/engines.sha256: no line for libkestrel-cuda.so" ;;
esac
x=${sha:0:12}

# results/perf-h200 holds H200 runs only (its floor and history are that card's; the lent pool has H100s too)
[ -f "$tmp/perf/gpu.txt" ] || die "$dir/texts.tgz: no member perf/gpu.txt (the perf job's nvidia-smi line: which GPU ran it)"
gpu=$(awk -F', *' 'NR == 2 { print $1 }' "$tmp/perf/gpu.txt")
case $gpu in
*H200*) ;;
*) die "$dir/texts.tgz: perf/gpu.txt: the run's GPU is '$gpu', not an H200 (results/perf-h200 holds H200 runs only)" ;;
esac

grep -q '^== summary' "$tmp/gc/report.txt" ||
    { echo "file_official: $dir: the GPU check did not finish (no '== summary' line in gc/report.txt): not filed" >&2; exit 1; }
failed=$(grep -E '^-- .*: FAIL' "$tmp/gc/report.txt" | head -3 | tr '\n' ';')
[ -z "$failed" ] || { echo "file_official: $dir: the GPU check has steps that did not pass ($failed): not filed" >&2; exit 1; }
grep -q '^sanity: PASS' "$tmp/perf/log.txt" ||
    { echo "file_official: $dir: the perf log has no 'sanity: PASS': not filed" >&2; exit 1; }

dest() { local r=${1#* }; echo "$res/${r//@/$x}"; }
for p in "${pairs[@]}"; do
    d=$(dest "$p")
    [ -e "$d" ] && die "$d: exists (engine $x's official run is filed already; compare, do not overwrite)"
done

# every file copied next to its destination first, then all renamed: a failure leaves nothing behind
for p in "${pairs[@]}"; do
    d=$(dest "$p")
    cp "$(src_of "${p%% *}")" "$d.tmp$$" && chmod 644 "$d.tmp$$" || die "$d: cannot write"
    staged+=("$d.tmp$$")
done
for p in "${pairs[@]}"; do
    d=$(dest "$p")
    mv "$d.tmp$$" "$d" || die "$d: cannot rename into place"
    moved+=("$d")
done
staged=() moved=()
for p in "${pairs[@]}"; do dest "$p"; done

awk -F, '$1 == "bandwidth" && $2 == "gbps" { printf "probe %.0f GB/s; ", $3 }
         $1 == "q27-ctx1" && $2 == "ms_per_token_median" { m = $3 }
         $1 == "q27-ctx1" && $2 == "pct_of_bandwidth" { p = $3 }
         END { if (m != "") printf "27B ctx 1 %.3f ms/token (%.1f%% of the floor)", m, p; print "" }' "$tmp/perf/perf-metrics.csv"
echo "engine $x (libkestrel-cuda.so $sha)"
exit 0
