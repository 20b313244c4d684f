# tests/run-lib.sh - helpers for the run-* tests (sourced after tests/lib.sh).
#   sql "SELECT ..."   query $DB with the sqlite3 CLI, else $PYTHON's sqlite3 module
#   sha FILE           sha256 of a file (sha256sum)
#   FAULT              path of the fault-injection engine (tests/engines/fault_engine.c)
FAULT=$top_builddir/tests/engines/.libs/libkestrel-fault.so
if command -v sqlite3 >/dev/null 2>&1; then
  sql() { sqlite3 -batch "$DB" "$1"; }
elif [ -n "${PYTHON:-}" ]; then
  sql() {
    "$PYTHON" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for row in c.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))' "$DB" "$1"
  }
else
  skip_all "neither the sqlite3 CLI nor python3 is available"
fi
sha() { sha256sum "$1" | cut -d' ' -f1; }
