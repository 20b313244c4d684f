#!/bin/bash
# report-formats.sh - `kestrel-eval report --format md|json|junit` and -o: the
# JSON parses and has the documented keys, the JUnit is valid XML with one
# testcase per case and a <failure>/<error> for regressed/crashed cases, the
# Markdown is a table; kernel_profile rows give a top-kernels block; -o writes
# the whole file or nothing; bad arguments exit 2.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
need_python
plan 19

DB=$T/f.db
newdb "$DB"
E=$(sha_of engine) M=$(sha_of model)
add_run "$DB" 1 "$E" "$M"
add_run "$DB" 2 "$E" "$M"
for r in 1 2; do
  add_case "$DB" $r $((r * 10 + 1)) 'acc <&"x">' oracle pass
  add_case "$DB" $r $((r * 10 + 2)) speed decode-bench pass
done
add_metric "$DB" 11 max_rel 1e-6 '<= 1e-05' 1
add_metric "$DB" 21 max_rel 5e-6 '<= 1e-05' 1
add_samples "$DB" 12 ms_per_token $(seq_samples 10 0.01 10)
add_samples "$DB" 22 ms_per_token $(seq_samples 10.005 0.01 10)
add_case "$DB" 2 23 boom oracle crash '' 'killed by SIGSEGV
stderr tail: line "one" & <two>'
sql "$DB" "INSERT INTO kernel_profile (case_id, kernel, calls, total_ms, ms_per_step) VALUES
  (22, 'gemv_q8_0', 100, 60, 0.6), (22, 'gdn_delta', 100, 30, 0.3), (22, 'rmsnorm', 200, 10, 0.1),
  (12, 'gemv_q8_0', 100, 50, 0.5), (12, 'gdn_delta', 100, 30, 0.3);"
# the in-run floor of the current speed case: 2 ms per step (gemv_q8_0's 0.6 ms is 30% of it)
add_metric "$DB" 22 floor_ms_per_token 2.0 '' ''

K=$KESTREL_EVAL
run_cmd "$K" report 2 --against 1 --format json --db "$DB"
is 1 "$RC" "json report: exit 1 (regressed + crashed)"
printf '%s\n' "$OUT" >"$T/r.json"
run_cmd "$PYTHON" - "$T/r.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(sorted(r.keys()))
print(sorted(r["run"].keys()), sorted(r["against"].keys()), sorted(r["summary"].keys()))
print(sorted(r["cases"][0].keys()), sorted(r["cases"][0]["lines"][0].keys()))
print([(c["name"], c["verdict"]) for c in r["cases"]])
print([(k["kernel"], round(k["share"], 2)) for k in r["kernels"]])
print([(k["kernel"], k["floor_share"] and round(k["floor_share"], 3), k["baseline_ms_per_step"]) for k in r["kernels"]])
EOF
is "['against', 'cases', 'differences', 'format', 'kernels', 'run', 'summary', 'suspect']
['engine_sha256', 'id', 'started_at', 'status', 'suite'] ['label', 'run_id', 'started_at'] ['cases', 'crashed', 'exit_code', 'gate_failures', 'improved', 'inconclusive', 'missing', 'new', 'ok', 'regressed']
['baseline_status', 'error', 'kind', 'lines', 'name', 'status', 'verdict'] ['baseline', 'baseline_text', 'current', 'current_text', 'delta', 'metric', 'rule', 'verdict']
[('acc <&\"x\">', 'regressed'), ('speed', 'ok'), ('boom', 'crashed')]
[('gemv_q8_0', 0.6), ('gdn_delta', 0.3), ('rmsnorm', 0.1)]
[('gemv_q8_0', 0.3, 0.5), ('gdn_delta', 0.15, 0.3), ('rmsnorm', 0.05, None)]" "$OUT" \
  "JSON parses with the documented keys, verdicts, kernel shares of the step and of the floor, baseline ms/step"

run_cmd "$K" report 2 --against 1 --format json --only-regressions --db "$DB"
is "['acc <&\"x\">', 'boom']" "$(printf '%s' "$OUT" | "$PYTHON" -c 'import json,sys; print([c["name"] for c in json.load(sys.stdin)["cases"]])')" \
  "--only-regressions in JSON keeps regressed and crashed cases"

run_cmd "$K" report 2 --against 1 --format junit -o "$T/j.xml" --db "$DB"
is "1|" "$RC|$OUT" "junit -o: exit 1, nothing on stdout"
run_cmd "$PYTHON" - "$T/j.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
s = root.find("testsuite")
print(s.get("tests"), s.get("failures"), s.get("errors"))
for tc in s.findall("testcase"):
    kids = [k.tag for k in tc]
    print(tc.get("name"), kids)
print("max_rel: regressed" in s.find("testcase/failure").text, "SIGSEGV" in s.find("testcase/error").text)
EOF
is '3 1 1
acc <&"x"> ['"'failure'"']
speed ['"'system-out'"']
boom ['"'error'"']
True True' "$OUT" "JUnit: valid XML, a testcase per case, failure for regressed, error for crashed, escaped names"

run_cmd "$K" report 2 --against 1 --format md --db "$DB"
like "$OUT" '^\| case \| metric \| baseline \| current \| delta \| verdict \| rule \|$' "md: a table header"
like "$OUT" '^\| `acc &lt;&"x">` \*\*regressed\*\* \| max_rel \|' "md: a row per line, verdict in bold, < escaped"
like "$OUT" '^\*\*FAIL\*\*: 3 cases' "md: a FAIL summary"
like "$OUT" '^\| speed \| gemv_q8_0 \| 100 \| 60.000 \| 60.0% \| 0.600 \| 30.0% \| 0.500 \(\+20.0%\) \|$' \
  "md: top kernels with their share of the step, of the floor and the baseline's ms/step"
like "$OUT" '^\| speed \| rmsnorm \| 200 \| 10.000 \| 10.0% \| 0.100 \| 5.0% \| - \|$' "md: a kernel absent from the baseline"

run_cmd "$K" report 2 --against 1 --db "$DB"
like "$OUT" 'speed +gemv_q8_0 +100 calls +60.000 ms +60.0% +0.600 ms/step +30.0% of floor  baseline 0.500 \(\+20.0%\)$' \
  "text: top kernels block with ms/step, share of the floor and the baseline"
run_cmd "$K" report 2 --db "$DB"
like "$OUT" 'speed +rmsnorm +200 calls +10.000 ms +10.0% +0.100 ms/step +5.0% of floor$' \
  "text without a baseline: no baseline column"
ok "! printf '%s' \"\$OUT\" | grep -q \$'\\033'" "text: no colour codes when stdout is not a terminal"

OUT=$(TERM=xterm script -qec "'$K' report 2 --against 1 --db '$DB'" /dev/null)
like "$OUT" $'boom.*\033\\[31;1mcrashed' "text on a terminal: verdicts in colour"

run_cmd "$K" report 2 --format yaml --db "$DB"
is "2|kestrel-eval: report: unknown format 'yaml' (text, md, json, junit, html)" "$RC|$ERR" "unknown format: exit 2"
run_cmd "$K" report 2 --bogus --db "$DB"
is 2 "$RC" "unknown option: exit 2"
run_cmd "$K" report --db "$T/none.db"
is "2|no" "$RC|$([ -e "$T/none.db" ] && echo yes || echo no)" "missing DB: exit 2 and no file created"
run_cmd "$K" report 2 --against 1 --format json -o "$T/nodir/r.json" --db "$DB"
is "2|no" "$RC|$(ls "$T"/nodir 2>/dev/null | wc -l | sed 's/^0$/no/')" "-o into a missing directory: exit 2, nothing written"
ok "[ -z \"\$(ls '$T' | grep '\\.tmp\\.')\" ]" "no temporary files left behind"
done_testing
