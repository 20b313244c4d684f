#!/bin/sh
# run-store: the results store. A new database gets the schema (results.sql
# + migrations) in WAL mode; a version-1 database is migrated forward on the
# next read-write open with its rows kept; a database newer than the binary
# and a foreign SQLite file are refused (exit 2, unchanged); archived outputs
# are zstd blobs whose sha256 is that of the raw bytes.
. "$top_srcdir/tests/lib.sh"
[ -f "$FIX/mini27-q8_0.gguf" ] || skip_all "fixtures not built (tests/fixtures)"
. "$top_srcdir/tests/run-lib.sh"
plan 15

cat >"$T/tiny.yaml" <<YAML
suite: tiny
engines: {cpu: cpu}
models: {m: $FIX/mini27-q8_0.gguf}
prompts:
  p: {tokens: [[1, 2, 3], [9, 8]]}
defaults: {engine: cpu, threads: 1}
cases:
  - {name: be, kind: bitexact, model: m, prompts: p}
YAML
LATEST=$(ls "$top_srcdir"/schemas/migrations/*.sql | sed 's|.*/||; s|-.*||' | sort -n | tail -1 | sed 's/^0*//')

DB=$T/new.db
run_cmd "$KESTREL_EVAL" run "$T/tiny.yaml" --db "$DB"
is 0 "$RC" "run into a new database"
is "$LATEST" "$(sql "SELECT version FROM schema_version")" "new database: schema version $LATEST (results.sql + every migration)"
is wal "$(sql "PRAGMA journal_mode")" "new database: WAL mode"
is 1 "$(sql "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_metrics_name'")" "new database: migration 002's index"

# outputs: decompress a blob with the zstd CLI and check the stored sha256 and size
if command -v sqlite3 >/dev/null 2>&1 && command -v zstd >/dev/null 2>&1; then
  sqlite3 "$DB" "SELECT writefile('$T/blob.zst', data) FROM outputs WHERE name = 'p0.logits'" >/dev/null
  zstd -q -d "$T/blob.zst" -o "$T/blob.raw"
  is "$(sql "SELECT sha256 FROM outputs WHERE name = 'p0.logits'")" "$(sha "$T/blob.raw")" "outputs: sha256 of the decompressed blob"
  is "$(sql "SELECT (n_elements * 4) || ' ' || shape || ' ' || dtype FROM outputs WHERE name = 'p0.logits'")" \
     "$(stat -c %s "$T/blob.raw") [3,256] f32" "outputs: size, shape, dtype"
else
  echo "ok 5 # SKIP no sqlite3/zstd CLI"; echo "ok 6 # SKIP no sqlite3/zstd CLI"; _tap_n=$((_tap_n + 2))
fi

# a version-1 database (schemas/results.sql alone) with a run in it
DB=$T/v1.db
"${PYTHON:-python3}" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(open(sys.argv[2]).read())
c.execute("INSERT INTO runs (started_at, status, suite_name) VALUES (?, ?, ?)", ("2026-01-01T00:00:00Z", "passed", "old"))
c.commit()' "$DB" "$top_srcdir/schemas/results.sql"
is 1 "$(sql "SELECT version FROM schema_version")" "version-1 database made from schemas/results.sql"
run_cmd "$KESTREL_EVAL" run "$T/tiny.yaml" --db "$DB"
is 0 "$RC" "run on a version-1 database"
is "$LATEST" "$(sql "SELECT version FROM schema_version")" "migrated to version $LATEST"
is 1 "$(sql "SELECT count(*) FROM sqlite_master WHERE name = 'idx_metrics_name'")" "the migration ran"
is "1|old|passed
2|tiny|passed" "$(sql "SELECT id, suite_name, status FROM runs ORDER BY id")" "the old run is kept, the new one added"

# newer than the binary: refused, untouched
sql "UPDATE schema_version SET version = 99" >/dev/null
SUM=$(sha "$DB")
run_cmd "$KESTREL_EVAL" run "$T/tiny.yaml" --db "$DB"
is 2 "$RC" "database newer than the binary: exit 2"
is "kestrel-eval: $DB: schema version 99 is newer than this kestrel-eval supports ($LATEST); use a newer kestrel-eval" "$ERR" "newer database: message"
is "$SUM" "$(sha "$DB")" "newer database: file unchanged"

# a SQLite file that is not ours
DB=$T/foreign.db
"${PYTHON:-python3}" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE t (x)"); c.commit()' "$DB"
run_cmd "$KESTREL_EVAL" run "$T/tiny.yaml" --db "$DB"
like "$RC: $ERR" "^2: kestrel-eval: $DB: not a Kestrel results database \(no schema_version table\)$" "foreign SQLite file: exit 2 and message"
done_testing
