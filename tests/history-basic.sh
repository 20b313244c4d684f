#!/bin/bash
# history-basic.sh - `kestrel-eval history`: a metric over time per case with
# the short engine sha256 of every point; --case GLOB, --metric, --last N;
# CSV (RFC 4180) and JSON parse with Python's csv and json; --kernel GLOB gives a kernel's
# ms per step from the kernel profiles; errors exit 2.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
need_python
plan 19

DB=$T/h.db
newdb "$DB"
M=$(sha_of model)
for r in 1 2 3 4; do
  add_run "$DB" $r "$(sha_of engine-$r)" "$M"
  add_case "$DB" $r $((r * 10 + 1)) acc-a oracle pass
  add_metric "$DB" $((r * 10 + 1)) max_rel "${r}e-6" '<= 1e-05' 1
  add_metric "$DB" $((r * 10 + 1)) rms_rel "${r}e-7"
  add_case "$DB" $r $((r * 10 + 2)) 'speed, "quoted"' decode-bench pass
  add_metric "$DB" $((r * 10 + 2)) ms_per_token_median "1$r.5"
done
# kernel profiles of the speed case in runs 2 and 4 (runs 1 and 3 were not profiled)
sql "$DB" "INSERT INTO kernel_profile (case_id, kernel, calls, total_ms, ms_per_step) VALUES
  (22, 'gemv_q8', 100, 50, 0.5), (22, 'rmsnorm', 100, 10, 0.1), (42, 'gemv_q8', 100, 60, 0.6), (42, 'rmsnorm', 100, 10, 0.1);"
E4=$(sha_of engine-4)
K=$KESTREL_EVAL

run_cmd "$K" history --db "$DB"
is 0 "$RC" "history: exit 0"
like "$OUT" '^acc-a  max_rel  \(4 points\)$' "oracle case: max_rel by default, 4 points"
like "$OUT" "^ +4  2026-11-29T10:04:00Z  ${E4:0:12}  4e-06 +pass\$" "a point: run, time, short engine sha256, value, status"
like "$OUT" '^speed, "quoted"  ms_per_token_median  \(4 points\)$' "decode-bench case: ms_per_token_median by default"

run_cmd "$K" history --case 'acc-*' --metric rms_rel --last 2 --db "$DB"
is "2" "$(printf '%s\n' "$OUT" | grep -c 'e-07')" "--metric rms_rel --last 2: two points"
ok "! printf '%s' \"\$OUT\" | grep -q speed" "--case GLOB selects cases"

run_cmd "$K" history --format csv --db "$DB"
printf '%s\n' "$OUT" >"$T/h.csv"
run_cmd "$PYTHON" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
print(len(rows), sorted(rows[0].keys()))
print(sorted({r["case"] for r in rows}))
print([r["value"] for r in rows if r["case"] == "acc-a"])' "$T/h.csv"
is "8 ['case', 'engine_sha256', 'metric', 'run_id', 'started_at', 'status', 'unit', 'value']
['acc-a', 'speed, \"quoted\"']
['9.9999999999999995e-07', '1.9999999999999999e-06', '3.0000000000000001e-06', '3.9999999999999998e-06']" "$OUT" "CSV parses with python csv (quoted field with comma and quotes)"
ok "head -c 200 '$T/h.csv' | grep -q \$'\\r'" "CSV lines end in CRLF (RFC 4180)"

run_cmd "$K" history --format json --case 'speed*' --db "$DB"
is "4 [11.5, 12.5, 13.5, 14.5] ${E4}" "$(printf '%s' "$OUT" | "$PYTHON" -c '
import json, sys
r = json.load(sys.stdin)
print(len(r), [p["value"] for p in r], r[-1]["engine_sha256"])')" "JSON parses: points oldest first with full engine sha256"

# on a terminal (util-linux `script` gives the command a pty): a sparkline, low to high
OUT=$(TERM=xterm script -qec "'$K' history --case acc-a --db '$DB'" /dev/null | head -1)
like "$OUT" $'acc-a.*max_rel +\\(4 points\\) +\xe2\x96\x81.*\xe2\x96\x88' "TTY: a sparkline from the lowest to the highest point"

run_cmd "$K" history --kernel 'gemv*' --db "$DB"
like "$OUT" '^speed, "quoted"  kernel gemv_q8 \[ms/step\]  \(2 points\)$' "--kernel: one series per case and kernel, 2 profiled runs"
like "$OUT" "^ +4  2026-11-29T10:04:00Z  ${E4:0:12}  0.6 +pass\$" "--kernel: a point is the run's ms per step of that kernel"
ok "! printf '%s' \"\$OUT\" | grep -q rmsnorm" "--kernel GLOB selects kernels"
run_cmd "$K" history --kernel '*' --format json --db "$DB"
is "['kernel gemv_q8', 'kernel gemv_q8', 'kernel rmsnorm', 'kernel rmsnorm'] [0.5, 0.6, 0.1, 0.1]" "$(printf '%s' "$OUT" | "$PYTHON" -c '
import json, sys
r = json.load(sys.stdin)
print([p["metric"] for p in r], [p["value"] for p in r])')" "--kernel in JSON: series named 'kernel NAME', oldest first"
run_cmd "$K" history --kernel '*' --metric max_rel --db "$DB"
is "2|kestrel-eval: history: --metric and --kernel exclude each other (a kernel's series is its ms per step)" "$RC|$ERR" \
  "--kernel with --metric: one error line, exit 2"
run_cmd "$K" history --kernel 'attention*' --db "$DB"
is "2|kestrel-eval: $DB: no kernel profile rows matching 'attention*' for cases matching '*' (the engine records them with profile=1 or profile=trace)" \
  "$RC|$ERR" "--kernel matching nothing: one error line naming the glob, exit 2"
run_cmd "$K" history --case 'nosuch*' --db "$DB"
is "2|kestrel-eval: $DB: no headline metric for cases matching 'nosuch*'" "$RC|$ERR" "nothing matches: one error line, exit 2"
run_cmd "$K" history --last 0 --db "$DB"
is 2 "$RC" "--last 0: exit 2"
run_cmd "$K" history --db "$T/missing.db"
is "2|no" "$RC|$([ -e "$T/missing.db" ] && echo yes || echo no)" "missing DB: exit 2, no file created"
done_testing
