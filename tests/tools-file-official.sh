#!/bin/sh
# tools/file_official.sh on a synthetic official run (the three files tools/official_h200.sh leaves): the twelve
# files land under the engine's 12-digit name with their sources' bytes; a second filing, a missing input or
# archive member, an engines.sha256 without the CUDA line, a run on another GPU than an H200 (or without its
# perf/gpu.txt) exit 2 with one line and write nothing; a GPU check
# with a FAIL step, one that did not finish, or a perf log without "sanity: PASS" exit 1 and write nothing.
. "$top_srcdir/tests/lib.sh"
command -v xz >/dev/null 2>&1 || skip_all "no xz"
plan 21
TOOL=$top_srcdir/tools/file_official.sh
SHA=62c23104ea05b0b073c01bad58ba283a38eefa89483742f98b2852af9324cefb
X=62c23104ea05

# mkrun DIR: a run's files; the members' contents name themselves so that a swapped copy shows
mkrun() {
    rm -rf "$1" "$T/src" && mkdir -p "$1" "$T/src/gc" "$T/src/perf"
    printf '== machine\n-- test_kernels: PASS\n-- compute-sanitizer: PASS\n== summary (23:21:48)\n' >"$T/src/gc/report.txt"
    echo "sanitizer" >"$T/src/gc/sanitizer.log"
    echo "ok 1 - tap" >"$T/src/gc/test_kernels.tap"
    echo "ab" >"$T/src/perf/ab-metrics.csv"
    printf '%s  /x/engines/libkestrel-cpu.so\n%s  /x/engines/libkestrel-cuda.so\n%s  /x/engines/libkestrel-cuda-trace.so\n' \
        3a3ed60e021fb378c52db3b18c7db5087fd1f602f063e432721c70f2d61fd9e5 $SHA \
        5cc06ccb5ea27dc677748a10743499edf160062456f02583d3a96f820ef1ccbc >"$T/src/perf/engines.sha256"
    echo "profile" >"$T/src/perf/kernel-profile.csv"
    printf '[2/11] q27-ctx1  fail\nsanity: PASS\n' >"$T/src/perf/log.txt"
    printf 'case_name,metric,value,unit\nbandwidth,gbps,4523.68,GB/s\nq27-ctx1,ms_per_token_median,4.6569,ms\nq27-ctx1,pct_of_bandwidth,70.3386,%%\n' \
        >"$T/src/perf/perf-metrics.csv"
    echo "report" >"$T/src/perf/perf-report.md"
    echo "sanity" >"$T/src/perf/sanity-compare.log"
    printf 'name, driver_version, memory.total [MiB]\nNVIDIA H200, 580.159.04, 143771 MiB\n' >"$T/src/perf/gpu.txt"
    (cd "$T/src" && tar czf "$1/texts.tgz" gc perf)
    echo "gpu db" | xz >"$1/gc-gpu.db.xz"
    echo "perf db" | xz >"$1/perf-perf.db.xz"
}
# fresh: an empty results folder
fresh() { rm -rf "$T/res" && mkdir -p "$T/res/perf-h200" "$T/res/cuda-check"; }
nfiles() { find "$T/res" -type f | wc -l | tr -d ' '; }
file_it() { run_cmd bash "$TOOL" "$T/run" "$T/res"; }

mkrun "$T/run"
fresh
file_it
is 0 "$RC" "a passing run is filed: exit 0"
is 12 "$(nfiles)" "twelve files written"
bad=""
for pair in gc/report.txt:cuda-check/report-$X.txt gc/sanitizer.log:cuda-check/sanitizer-$X.txt \
    gc/test_kernels.tap:cuda-check/test_kernels-$X.tap perf/ab-metrics.csv:perf-h200/ab-$X.csv \
    perf/engines.sha256:perf-h200/engines-$X.sha256 perf/kernel-profile.csv:perf-h200/kernel-profile-$X.csv \
    perf/log.txt:perf-h200/log-$X.txt perf/perf-metrics.csv:perf-h200/metrics-$X.csv \
    perf/perf-report.md:perf-h200/report-$X.md perf/sanity-compare.log:perf-h200/sanity-27b-cpu-vs-cuda-$X.txt; do
    cmp -s "$T/src/${pair%%:*}" "$T/res/${pair#*:}" || bad="$bad ${pair#*:}"
done
cmp -s "$T/run/gc-gpu.db.xz" "$T/res/cuda-check/gpu-$X.db.xz" || bad="$bad gpu-$X.db.xz"
cmp -s "$T/run/perf-perf.db.xz" "$T/res/perf-h200/perf-$X.db.xz" || bad="$bad perf-$X.db.xz"
is "" "$bad" "each file under the engine's 12-digit name holds its source's bytes"
like "$OUT" "27B ctx 1 4\.657 ms/token \(70\.3% of the floor\)" "the headline names the 27B ctx 1 median and its share of the floor"
is "" "$(find "$T/res" -name '*.tmp*')" "no staging copies left"

file_it
is "2|1" "$RC|$(printf '%s\n' "$ERR" | wc -l | tr -d ' ')" "filing the same engine again: exit 2, one line"
like "$ERR" "perf-$X\.db\.xz: exists" "the line names the file that exists"
is 12 "$(nfiles)" "nothing written the second time"

# check_refused EXPECTED_RC PATTERN DESC: after a change to the run, filing into an empty folder is refused
check_refused() {
    fresh
    file_it
    is "$1|0" "$RC|$(nfiles)" "$3: exit $1, nothing written"
    like "$ERR" "$2" "$3: the message"
}
mkrun "$T/run"
rm -f "$T/run/gc-gpu.db.xz"
fresh; file_it
is "2|0" "$RC|$(nfiles)" "a missing gc-gpu.db.xz: exit 2, nothing written"
mkrun "$T/run"
(cd "$T/src" && rm perf/sanity-compare.log && tar czf "$T/run/texts.tgz" gc perf)
check_refused 2 "no member perf/sanity-compare\.log" "a missing archive member"
mkrun "$T/run"
(cd "$T/src" && grep -v cuda.so perf/engines.sha256 >e && mv e perf/engines.sha256 && tar czf "$T/run/texts.tgz" gc perf)
check_refused 2 "no line for libkestrel-cuda\.so" "engines.sha256 without the CUDA library"
mkrun "$T/run"
(cd "$T/src" && sed -i 's/NVIDIA H200/NVIDIA H100 80GB HBM3/' perf/gpu.txt && tar czf "$T/run/texts.tgz" gc perf)
check_refused 2 "perf/gpu\.txt: the run's GPU is 'NVIDIA H100 80GB HBM3', not an H200" "a run on an H100"
is 1 "$(printf '%s\n' "$ERR" | wc -l | tr -d ' ')" "a run on an H100: one line"
mkrun "$T/run"
(cd "$T/src" && rm perf/gpu.txt && tar czf "$T/run/texts.tgz" gc perf)
check_refused 2 "no member perf/gpu\.txt" "a run without perf/gpu.txt"
mkrun "$T/run"
(cd "$T/src" && printf -- '-- engine_diff dot=q8: FAIL (rc 1)\n== summary\n' >>gc/report.txt && tar czf "$T/run/texts.tgz" gc perf)
fresh; file_it
is "1|0" "$RC|$(nfiles)" "a GPU check with a FAIL step: exit 1, nothing written"
mkrun "$T/run"
(cd "$T/src" && sed -i 's/^sanity: PASS/sanity: FAIL/' perf/log.txt && tar czf "$T/run/texts.tgz" gc perf)
fresh; file_it
is "1|0" "$RC|$(nfiles)" "a perf log without sanity PASS: exit 1, nothing written"
mkrun "$T/run"
(cd "$T/src" && sed -i '/^== summary/d' gc/report.txt && tar czf "$T/run/texts.tgz" gc perf)
fresh; file_it
is "1|0" "$RC|$(nfiles)" "a GPU check that did not finish (no summary): exit 1, nothing written"
done_testing
