#!/bin/bash
# query-basic.sh - `kestrel-eval query`: read-only connection (writes refused
# with a clear error and exit 2, the DB unchanged), table/CSV/JSON output that
# parses with Python's csv and json, NULLs, several statements, bad SQL.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
need_python
plan 14

DB=$T/q.db
newdb "$DB"
add_run "$DB" 1 "$(sha_of e)" "$(sha_of m)"
add_case "$DB" 1 11 'a,b "c"' oracle pass
add_metric "$DB" 11 max_rel 2.5e-6 '<= 1e-05' 1 'line1
line2'
add_metric "$DB" 11 rms_rel 1e-7
K=$KESTREL_EVAL
SUM=$(sha256sum "$DB" | cut -c1-64)

run_cmd "$K" query "SELECT case_name, metric, value FROM v_results ORDER BY metric" --db "$DB"
is "0" "$RC" "query: exit 0"
like "$OUT" '^case_name +metric +value$' "table: header"
like "$OUT" '^\(2 rows\)$' "table: row count"

run_cmd "$K" query "SELECT c.name, m.name AS metric, m.value, m.text, m.gate_pass, NULL AS empty FROM metrics m JOIN cases c ON c.id = m.case_id ORDER BY m.name" --format csv --db "$DB"
printf '%s\n' "$OUT" >"$T/q.csv"
run_cmd "$PYTHON" -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
print(rows)' "$T/q.csv"
is "[['name', 'metric', 'value', 'text', 'gate_pass', 'empty'], ['a,b \"c\"', 'max_rel', '2.5000000000000002e-06', 'line1\nline2', '1', ''], ['a,b \"c\"', 'rms_rel', '9.9999999999999995e-08', '', '', '']]" \
  "$OUT" "CSV: RFC 4180 quoting of comma, quotes and newline; NULL as an empty field"

run_cmd "$K" query "SELECT c.name, m.name AS metric, m.value, m.text, NULL AS empty FROM metrics m JOIN cases c ON c.id = m.case_id ORDER BY m.name" --format json --db "$DB"
is "[{'name': 'a,b \"c\"', 'metric': 'max_rel', 'value': 2.5e-06, 'text': 'line1\nline2', 'empty': None}, {'name': 'a,b \"c\"', 'metric': 'rms_rel', 'value': 1e-07, 'text': None, 'empty': None}]" \
  "$(printf '%s' "$OUT" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin))')" "JSON: an array of objects, numbers as numbers, NULL as null"
run_cmd "$K" query "SELECT 1 WHERE 0" --format json --db "$DB"
is "[]" "$OUT" "JSON of no rows is []"

for w in "DELETE FROM runs" "UPDATE runs SET label = 'x'" "INSERT INTO baselines VALUES ('x', 1, 'now', NULL)" "DROP TABLE runs" "CREATE TABLE t (x)"; do
  run_cmd "$K" query "$w" --db "$DB"
  is "2|kestrel-eval: query: statement 1 would write to $DB; query runs on a read-only connection (refused: $w)" "$RC|$ERR" "write refused: ${w%% *}"
done
run_cmd "$K" query "SELECT 1; DELETE FROM runs" --format csv --db "$DB"
is "2|" "$RC|$OUT" "a write after a read: refused, nothing half-printed"
is "$SUM|1" "$(sha256sum "$DB" | cut -c1-64)|$(sqlite3 "$DB" 'SELECT COUNT(*) FROM runs')" "the database is unchanged"
run_cmd "$K" query "SELEC 1" --db "$DB"
like "$RC|$ERR" '^2\|kestrel-eval: query: statement 1: near "SELEC": syntax error$' "bad SQL: one error line, exit 2"
done_testing
