#!/bin/bash
# baseline-errors.sh - `kestrel-eval baseline` usage and input errors: each is
# one line naming the DB / name / run / file, exit 2, and nothing written;
# delete removes the name but keeps the run.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
command -v zstd >/dev/null 2>&1 || skip_all "no zstd CLI (Debian package zstd)"
plan 14

DB=$T/b.db
newdb "$DB"
add_run "$DB" 1 "$(sha_of e)" "$(sha_of m)"
K=$KESTREL_EVAL
"$K" baseline set 1 main --db "$DB" >/dev/null

run_cmd "$K" baseline set 7 x --db "$DB"
is "2|kestrel-eval: no run 7 in $DB" "$RC|$ERR" "set: unknown run"
run_cmd "$K" baseline set 1 'bad name!' --db "$DB"
is "2|kestrel-eval: baseline: invalid name 'bad name!' (use [A-Za-z0-9._-], at most 128 characters)" "$RC|$ERR" "set: invalid name"
run_cmd "$K" baseline show nosuch --db "$DB"
is "2|kestrel-eval: $DB: no baseline 'nosuch'" "$RC|$ERR" "show: unknown baseline"
run_cmd "$K" baseline export nosuch -o "$T/x.zst" --db "$DB"
is "2|no" "$RC|$([ -e "$T/x.zst" ] && echo yes || echo no)" "export: unknown baseline, no file written"
run_cmd "$K" baseline export main --db "$DB"
is "2|kestrel-eval: baseline export: -o FILE is required" "$RC|$(printf '%s' "$ERR" | head -1)" "export: -o required"
run_cmd "$K" baseline export main -o "$T/nodir/x.zst" --db "$DB"
like "$RC|$ERR" "^2\|kestrel-eval: $T/nodir/x.zst: cannot write: " "export: unwritable path, exit 2"
run_cmd "$K" baseline import "$T/none.zst" --db "$DB"
like "$RC|$ERR" "^2\|kestrel-eval: $T/none.zst: cannot read: " "import: missing file"
printf 'hello' | zstd -q -c >"$T/hello.zst"
run_cmd "$K" baseline import "$T/hello.zst" --db "$DB"
is "2|kestrel-eval: $T/hello.zst: not a baseline archive (no zstd frame with a known size)" "$RC|$ERR" "import: a zstd file that is not an archive"
run_cmd "$K" baseline frob --db "$DB"
is "2|kestrel-eval: baseline: unknown subcommand 'frob' (set, list, show, delete, export, import)" "$RC|$ERR" "unknown subcommand"
run_cmd "$K" baseline list --db "$T/missing.db"
is "2|no" "$RC|$([ -e "$T/missing.db" ] && echo yes || echo no)" "list: missing DB, exit 2, not created"
run_cmd "$K" baseline delete nosuch --db "$DB"
is "2|kestrel-eval: $DB: no baseline 'nosuch'" "$RC|$ERR" "delete: unknown baseline"
run_cmd "$K" baseline delete main --db "$DB"
is "0|baseline 'main' deleted (run 1 is kept)" "$RC|$OUT" "delete: removes the name"
is "0|1" "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM baselines')|$(sqlite3 "$DB" 'SELECT COUNT(*) FROM runs')" "delete: the run stays"
run_cmd "$K" report 1 --against main --db "$DB"
is 2 "$RC" "report against a deleted baseline: exit 2"
done_testing
