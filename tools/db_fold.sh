#!/bin/sh
# tools/db_fold.sh - fold each SQLite results DB's write-ahead log into the DB file, so the file can be
# copied or compressed alone: a DB file taken without its -wal loses the rows still in the log. By the
# sqlite3 tool, or where it is missing (the lent GPU machine has none) by python3's sqlite3 module. A DB
# whose -wal is still not empty afterwards is named on stderr and keeps its files (exit 1); otherwise
# its (empty) -wal and -shm are removed. Session 16 found the older form deleting the -wal whether or not
# the fold had run (tools/devcall.sh, tools/official_h200.sh: no sqlite3 on the device).
# usage: tools/db_fold.sh DB...   (DB_FOLD_PYTHONS: the interpreters tried, default "python3 /usr/bin/python3":
# the python3 first on PATH may lack the module where Debian's has it)
rc=0
for d in "$@"; do
    [ -f "$d" ] || { echo "db_fold: no $d" >&2; rc=1; continue; }
    if [ -e "$d-wal" ]; then
        if command -v sqlite3 >/dev/null 2>&1; then
            sqlite3 "$d" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1
        else
            for py in ${DB_FOLD_PYTHONS:-python3 /usr/bin/python3}; do
                command -v "$py" >/dev/null 2>&1 &&
                    "$py" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.close()' "$d" 2>/dev/null && break
            done
        fi
    fi
    if [ -s "$d-wal" ]; then
        echo "db_fold: $d: its write-ahead log is not folded in (no sqlite3 tool or python3 sqlite3 module?): kept" >&2
        rc=1
        continue
    fi
    rm -f "$d-wal" "$d-shm"
done
exit $rc
