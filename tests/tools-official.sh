#!/bin/sh
# tools/official_h200.sh with stub jobs (no GPU): both DBs come back xz-compressed and readable, every
# other file in texts.tgz (no .db there), the summary names each job's exit; a failed GPU check, a perf
# job without a sanity PASS or one that errs exits 1; no OUT, no pack, a pack missing or altering a file its
# SHA256SUMS lists, a GPU that is not an H200 or whose name cannot be read exits 2 with one line, before any job runs.
. "$top_srcdir/tests/lib.sh"
command -v sqlite3 >/dev/null 2>&1 || skip_all "no sqlite3 command line tool"
command -v xz >/dev/null 2>&1 || skip_all "no xz"
plan 19
TOOL=$top_srcdir/tools/official_h200.sh
# stub GPU check: a report, a results DB written in WAL mode (the sqlite3 tool checkpoints it on close),
# exit $GC_RC
cat >"$T/gc.sh" <<'S'
#!/bin/sh
echo "== summary: stub" >"$OUT/report.txt"
echo "ok 1 - stub" >"$OUT/test_kernels.tap"
sqlite3 "$OUT/gpu.db" "PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (42);" >/dev/null
exit "${GC_RC:-0}"
S
# stub perf job: a log with the suite's lines and a sanity verdict, a DB, exit $PERF_RC
cat >"$T/perf.sh" <<'S'
#!/bin/sh
printf '[2/11] q27-ctx1  fail  3.57s  ms/token=4.967\nratio B/A 1.0550\nsanity: %s\n' "${SANITY:-PASS}"
sqlite3 "$OUT/perf.db" "CREATE TABLE m (x REAL); INSERT INTO m VALUES (4.967);"
echo "4.967" >"$OUT/perf-metrics.csv"
exit "${PERF_RC:-1}"
S
chmod +x "$T/gc.sh" "$T/perf.sh"
# off [VAR=VALUE...]: the tool with the stubs and the given environment, results in $T/res
off() { run_cmd env OUT="$T/res" WORK="$T/work" GPU_CHECK="$T/gc.sh" PERF_JOB="$T/perf.sh" GPU_NAME_CMD="echo NVIDIA H200" "$@" bash "$TOOL"; }

off
is 0 "$RC" "GPU check passed, perf gates failed (exit 1) with a sanity PASS: exit 0"
is 42 "$(xz -dc "$T/res/gc-gpu.db.xz" >"$T/g.db" && sqlite3 "$T/g.db" 'SELECT v FROM t')" \
  "the GPU check's DB comes back compressed and readable"
is 4.967 "$(xz -dc "$T/res/perf-perf.db.xz" >"$T/p.db" && sqlite3 "$T/p.db" 'SELECT x FROM m')" "the perf DB comes back compressed"
tar tzf "$T/res/texts.tgz" | sort >"$T/list"
ok 'grep -qx "gc/report.txt" "$T/list" && grep -qx "gc/test_kernels.tap" "$T/list" && grep -qx "perf/log.txt" "$T/list" && grep -qx "perf/perf-metrics.csv" "$T/list"' \
  "texts.tgz holds both jobs' text files"
ok '! grep -q "\.db$" "$T/list"' "texts.tgz holds no DB"
like "$OUT" "^gpu_check: exit 0$" "summary: the GPU check's exit"
like "$OUT" "^perf: exit 1$" "summary: the perf job's exit"
like "$OUT" "^sanity: PASS$" "summary: the sanity verdict"

off GC_RC=1
is "1|yes" "$RC|$(echo "$OUT" | grep -q '^official_h200: the GPU check failed (exit 1)' && echo yes)" \
  "a failed GPU check: exit 1, said so"
ok '[ -s "$T/res/texts.tgz" ] && [ -s "$T/res/gc-gpu.db.xz" ]' "a failed GPU check: its files still come back"
off SANITY=FAIL
is "1|yes" "$RC|$(echo "$OUT" | grep -q 'the perf job failed (exit 1, no sanity PASS)' && echo yes)" \
  "a perf job without a sanity PASS: exit 1"
off PERF_RC=2
is 1 "$RC" "a perf job that errs (exit 2): exit 1"

# another card (the lent pool has H100s): nothing runs, nothing is written
rm -rf "$T/res" "$T/work"
off GPU_NAME_CMD="echo NVIDIA H100 80GB HBM3"
is "2|official_h200: the GPU is 'NVIDIA H100 80GB HBM3', not an H200 (results/perf-h200 holds H200 runs only): nothing run" \
  "$RC|$ERR" "an H100: exit 2, one line naming the card"
ok '[ ! -e "$T/res" ] && [ ! -e "$T/work" ]' "an H100: no job ran, nothing written"
off GPU_NAME_CMD=false
is "2|official_h200: cannot read the GPU's name (false): nothing run" "$RC|$ERR" "no GPU name: exit 2, one line"

run_cmd env -u OUT bash "$TOOL"
is "2|official_h200: OUT is not set (the folder the results go to)" "$RC|$ERR" "no OUT: exit 2, one line"
run_cmd env OUT="$T/res2" GPU_CHECK_CARRY="$T/nopack" bash "$TOOL"
is "2|official_h200: no pack in $T/nopack (tools/gpu_check.sh --pack BUILD_DIR first, carry it)" "$RC|$ERR" \
  "no pack: exit 2, one line"
# a pack whose SHA256SUMS names a file it lacks (the trace library left out) or one altered: exit 2 before any job
mkdir -p "$T/part/bin" "$T/part/engines"
printf '#!/bin/sh\nexit 0\n' >"$T/part/bin/kestrel-eval" && chmod +x "$T/part/bin/kestrel-eval"
echo lib >"$T/part/engines/libkestrel-cuda.so" && echo trace >"$T/part/engines/libkestrel-cuda-trace.so"
(cd "$T/part" && sha256sum bin/kestrel-eval engines/libkestrel-cuda.so engines/libkestrel-cuda-trace.so >SHA256SUMS)
rm "$T/part/engines/libkestrel-cuda-trace.so"
run_cmd env OUT="$T/res3" WORK="$T/w3" GPU_CHECK_CARRY="$T/part" bash "$TOOL"
is "2|official_h200: the pack in $T/part is incomplete or altered (SHA256SUMS: engines/libkestrel-cuda-trace.so: FAILED open or read)|no" \
  "$RC|$ERR|$([ -e "$T/w3" ] && echo yes || echo no)" "a packed file missing: exit 2 naming it, no job run"
echo trace >"$T/part/engines/libkestrel-cuda-trace.so" && echo altered >"$T/part/engines/libkestrel-cuda.so"
run_cmd env OUT="$T/res3" WORK="$T/w3" GPU_CHECK_CARRY="$T/part" bash "$TOOL"
is "2|official_h200: the pack in $T/part is incomplete or altered (SHA256SUMS: engines/libkestrel-cuda.so: FAILED)" \
  "$RC|$ERR" "a packed file altered: exit 2 naming it"
done_testing
