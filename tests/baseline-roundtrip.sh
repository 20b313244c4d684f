#!/bin/bash
# baseline-roundtrip.sh - baseline set / export / import: the archives of the
# baseline run and of the current run, imported into a fresh database after the
# original is deleted, give a report with identical verdicts and lines; import
# keeps sha256s, sets runs.imported_from, is idempotent; archives are plain
# zstd frames holding a SQLite database (docs/baselines.md).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
command -v zstd >/dev/null 2>&1 || skip_all "no zstd CLI (Debian package zstd)"
need_python
plan 20

cat >"$T/rt.yaml" <<EOF
suite: roundtrip
engines: {cpu: cpu}
models: {m: $FIX/mini27-q8_0.gguf, f: $FIX/mini27-f32.gguf}
oracles: {o: $FIX/mini27.oracle.gguf.zst}
prompts: {short: {tokens: [[1, 2, 3, 4], [9]]}}
defaults: {engine: cpu, threads: 2, warmup: 1, iterations: 8}
cases:
  - {name: rt-oracle, kind: oracle, model: f, oracle: o, gates: {max_rel: 5e-5, argmax: all, greedy: exact}}
  - {name: rt-decode, kind: decode-bench, model: m, prompt_len: 4, step_tokens: 1}
  - {name: rt-bitexact, kind: bitexact, model: m, prompts: short, gates: {bitexact: true}}
EOF
DB=$T/a.db
K=$KESTREL_EVAL
"$K" run "$T/rt.yaml" --db "$DB" >/dev/null
"$K" run "$T/rt.yaml" --db "$DB" >/dev/null
run_cmd "$K" baseline set 1 main --note "first run" --db "$DB"
is "0|baseline 'main' -> run 1" "$RC|$OUT" "baseline set RUN NAME"
run_cmd "$K" baseline set latest current --db "$DB"
is "0|baseline 'current' -> run 2" "$RC|$OUT" "baseline set latest NAME"
run_cmd "$K" baseline list --db "$DB"
like "$OUT" '^main +1 .* first run$' "baseline list shows name, run and note"
run_cmd "$K" baseline show main --db "$DB"
like "$OUT" 'rt-decode +decode-bench +pass +[0-9]+ metrics +8 samples' "baseline show lists the cases with their samples"

# the verdicts, lines and values of `report 2 --against main` (ids left out)
verdicts() {
  "$K" report "$1" --against main --format json --db "$2" | "$PYTHON" -c '
import json, sys
r = json.load(sys.stdin)
for c in r["cases"]:
    for l in c["lines"]:
        print(c["name"], c["verdict"], l["metric"], l["verdict"], l["baseline"], l["current"], l["rule"])
print("suspect", r["suspect"], "exit", r["summary"]["exit_code"])'
}
verdicts 2 "$DB" >"$T/expect"
ok "[ \$(wc -l <'$T/expect') -ge 6 ]" "original report has lines for every case"

run_cmd "$K" baseline export main -o "$T/main.kbase.zst" --db "$DB"
is 0 "$RC" "baseline export main"
"$K" baseline export current -o "$T/current.kbase.zst" --db "$DB" >/dev/null
is "SQLite format 3" "$(zstd -q -d -c "$T/main.kbase.zst" | head -c 15)" "the archive is a zstd frame holding a SQLite database"
zstd -q -d -c "$T/main.kbase.zst" >"$T/arc.db"
is "1|1|rt-decode|8|main" "$(sqlite3 "$T/arc.db" "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM baselines),
  (SELECT name FROM cases WHERE kind = 'decode-bench'), (SELECT COUNT(*) FROM samples), (SELECT name FROM baselines)" | tr '\n' ' ' | sed 's/ $//')" \
  "the archive holds one run, its samples and one baseline row"
SHA_ORIG=$(sqlite3 "$DB" "SELECT group_concat(sha256, ',') FROM (SELECT sha256 FROM artifacts WHERE run_id = 1 ORDER BY kind, name)")

rm -f "$DB" "$DB-wal" "$DB-shm"
DB2=$T/fresh.db
run_cmd "$K" baseline import "$T/main.kbase.zst" --db "$DB2"
is "0|baseline 'main' imported from $T/main.kbase.zst as run 1" "$RC|$OUT" "import into a fresh DB"
run_cmd "$K" baseline import "$T/current.kbase.zst" --db "$DB2"
like "$OUT" "as run 2\$" "import the current run's archive"
verdicts 2 "$DB2" >"$T/actual"
expect_file_eq "$T/expect" "$T/actual" "report against the imported baseline: identical verdicts, lines and values"
is "$SHA_ORIG" "$(sqlite3 "$DB2" "SELECT group_concat(sha256, ',') FROM (SELECT sha256 FROM artifacts WHERE run_id = 1 ORDER BY kind, name)")" \
  "import keeps the artifacts' sha256"
is "main" "$(sqlite3 "$DB2" "SELECT imported_from FROM runs WHERE id = 1")" "runs.imported_from names the archive's baseline"
is "$(sqlite3 "$T/arc.db" "SELECT COUNT(*) || '/' || SUM(length(data)) FROM outputs")" \
   "$(sqlite3 "$DB2" "SELECT COUNT(*) || '/' || SUM(length(o.data)) FROM outputs o JOIN cases c ON c.id = o.case_id WHERE c.run_id = 1")" "every archived output imported"

run_cmd "$K" baseline import "$T/main.kbase.zst" --db "$DB2"
is "0|2" "$RC|$(sqlite3 "$DB2" 'SELECT COUNT(*) FROM runs')" "importing the same archive twice is idempotent (no new run)"
like "$OUT" 'already holds this run as run 1' "second import says the run is already there"
run_cmd "$K" baseline import "$T/main.kbase.zst" --name main-copy --db "$DB2"
is "0|1|2" "$RC|$(sqlite3 "$DB2" "SELECT run_id FROM baselines WHERE name = 'main-copy'")|$(sqlite3 "$DB2" 'SELECT COUNT(*) FROM runs')" \
  "import --name adds a second name for the same run"
sqlite3 "$DB2" "UPDATE baselines SET run_id = 2 WHERE name = 'main'"
run_cmd "$K" baseline import "$T/main.kbase.zst" --db "$DB2"
is "2|kestrel-eval: $T/main.kbase.zst: baseline 'main' already exists in $DB2 (run 2); import under another name with --name" \
   "$RC|$ERR" "import refuses to repoint an existing name at another run"

printf 'not an archive' >"$T/bad.zst"
run_cmd "$K" baseline import "$T/bad.zst" --db "$DB2"
is "2|kestrel-eval: $T/bad.zst: not a baseline archive (no zstd frame with a known size)" "$RC|$ERR" "import of a non-archive: one error line, exit 2"
head -c 300 "$T/main.kbase.zst" >"$T/trunc.zst"
run_cmd "$K" baseline import "$T/trunc.zst" --db "$DB2"
is "2|2" "$RC|$(sqlite3 "$DB2" 'SELECT COUNT(*) FROM runs')" "truncated archive: exit 2, nothing imported"
done_testing
