#!/bin/sh
# run-errors: input errors exit 2 with one clear line and write NOTHING
# (no database file; no run row in an existing one): malformed suite, pinned
# sha256 mismatch, unknown --engine NAME, --case glob matching nothing,
# missing engine library, bad flags, --against of an unknown baseline.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/run-lib.sh"
plan 26

DB=$T/k.db
LIB=$(readlink -f "$KESTREL_ENGINE_DIR/libkestrel-cpu.so")
printf 'suite: bad\ncases:\n  - name: x\n    kind: oracle\n   bad-indent: [\n' >"$T/malformed.yaml"
run_cmd "$KESTREL_EVAL" run "$T/malformed.yaml" --db "$DB"
is 2 "$RC" "malformed suite: exit 2"
like "$ERR" "^kestrel-eval: $T/malformed.yaml:[0-9]+:[0-9]+: " "malformed suite: one line file:line:col"
is 1 "$(printf '%s\n' "$ERR" | wc -l)" "malformed suite: exactly one error line"
ok "[ ! -e '$DB' ] && [ ! -e '$DB-wal' ]" "malformed suite: no database file created"

PIN=00ab000000000000000000000000000000000000000000000000000000000000
cat >"$T/pinned.yaml" <<YAML
suite: pinned
engines:
  x: {lib: $LIB, sha256: $PIN}
defaults: {engine: x}
cases:
  - {name: bw, kind: bandwidth, bytes: 1048576, iterations: 1}
YAML
run_cmd "$KESTREL_EVAL" run "$T/pinned.yaml" --db "$DB"
is 2 "$RC" "pinned sha256 mismatch: exit 2"
ACTUAL=$(sha "$LIB")
like "$ERR" "^kestrel-eval: engine 'x': sha256 mismatch: suite pins 00ab\.\.\., $LIB is $(printf %.4s "$ACTUAL")\.\.\." "pinned sha256 mismatch: the message names both hashes and the library"
ok "[ ! -e '$DB' ]" "pinned sha256 mismatch: nothing written"
sed "s/$PIN/$ACTUAL/" "$T/pinned.yaml" >"$T/pinned-ok.yaml"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB"
is 0 "$RC" "the right pinned sha256 runs (bandwidth case)"
like "$(DB=$DB sql "SELECT name || ' ' || (value > 0) || ' ' || unit FROM metrics WHERE name = 'gbps'")" "^gbps 1 GB/s$" "bandwidth case stores gbps"
RUNS=$(sql "SELECT count(*) FROM runs")

run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --engine nosuch=cpu
is 2 "$RC" "--engine with an unknown name: exit 2"
like "$ERR" "^kestrel-eval: --engine nosuch=cpu: suite 'pinned' has no engine 'nosuch' \(known: x\)" "--engine unknown name: message"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --case 'zz*'
is 2 "$RC" "--case matching nothing: exit 2"
like "$ERR" "^kestrel-eval: $T/pinned-ok.yaml: no case matches --case 'zz\*' \(the suite has 1 case\)$" "--case matching nothing: message"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --tag nosuchtag
is 2 "$RC" "--tag matching nothing: exit 2"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --engine x=$T/missing/libnope.so
is 2 "$RC" "--engine NAME=PATH with a missing library: exit 2"
echo 'not a library' >"$T/libfake.so"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --engine x="$T/libfake.so"
is 2 "$RC" "--engine NAME=PATH that is not a library: exit 2"
like "$ERR" "^kestrel-eval: engine 'x': $T/libfake.so: cannot load engine: " "not a library: message"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --bogus
is 2 "$RC" "unknown flag: exit 2"
like "$ERR" "usage: kestrel-eval run SUITE.yaml" "unknown flag: usage line"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$DB" --against nosuch-baseline
is 2 "$RC" "--against an unknown baseline: exit 2"
like "$ERR" "nosuch-baseline" "--against: the message names it"
is "$RUNS" "$(sql "SELECT count(*) FROM runs")" "no run row was added by any refused run"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$T/fresh.db" --against nosuch-baseline
is 2 "$RC" "--against with no database: exit 2"
ok "[ ! -e '$T/fresh.db' ]" "--against with no database: no database created"
run_cmd "$KESTREL_EVAL" run "$T/pinned-ok.yaml" --db "$T/no/such/dir/k.db"
is 2 "$RC" "database in a missing directory: exit 2"
like "$ERR" "^kestrel-eval: $T/no/such/dir/k.db: cannot create results database: its directory does not exist$" "missing directory: message"
done_testing
