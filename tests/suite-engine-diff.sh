#!/bin/sh
# suite-engine-diff.sh - the engine-diff case kind in schemas/suite.schema.json: each
# malformed engine-diff suite under tests/suites/bad (whose `kestrel-eval check` error
# line tests/suite-errors.sh pins) is rejected by the schema too, at the expected
# place; the one the schema cannot see (an unknown reference: a cross-reference) is
# only caught by check. The engine-diff example in docs/suites.md (the `yml` block)
# passes the schema and check, and runs with both cases passing. Needs python3 with yaml and jsonschema >= 4, like suite-schema.sh.
. "$top_srcdir/tests/lib.sh"

[ -n "${PYTHON:-}" ] || skip_all "no python3 (configure found none)"
"$PYTHON" -c 'import yaml; from jsonschema import Draft202012Validator' 2>/dev/null ||
  skip_all "$PYTHON lacks yaml or jsonschema with Draft 2020-12 (apt-get install python3-yaml python3-jsonschema)"

SCHEMA=$top_srcdir/schemas/suite.schema.json
CHECKER=$top_srcdir/tests/suites/schema_check.py

# suite | schema verdict and where (path in the JSON data)
cat >"$T/table" <<'TABLE'
engine-diff-bad-greedy.yaml|invalid	cases/0/greedy
engine-diff-empty-tokens.yaml|invalid	cases/0/tokens
engine-diff-gate-kind.yaml|invalid	cases/0/gates
engine-diff-greedy-gate.yaml|invalid	cases/0
engine-diff-median-gate-oracle.yaml|invalid	cases/0/gates
engine-diff-min-argmax.yaml|invalid	cases/0/gates/min_argmax
engine-diff-negative-token.yaml|invalid	cases/0/tokens/2
engine-diff-no-reference.yaml|invalid	cases/0
engine-diff-no-tokens.yaml|invalid	cases/0
engine-diff-oracle-tokens.yaml|invalid	cases/0
engine-diff-tokens-map.yaml|invalid	cases/0/tokens
engine-diff-unknown-reference.yaml|valid	
TABLE
n=$(wc -l <"$T/table")
plan $((2 * n + 9))
cd "$top_srcdir/tests/suites/bad" || exit 1
is "$(ls engine-diff-*.yaml | wc -l)" "$n" "every engine-diff suite under tests/suites/bad is in this table"
# shellcheck disable=SC2046
"$PYTHON" "$CHECKER" "$SCHEMA" $(cut -d'|' -f1 "$T/table") >"$T/schema.out" 2>&1
while IFS='|' read -r f want; do
  got=$(awk -F'\t' -v f="$f" '$1 == f { sub(/:.*/, "", $3); print $2 "\t" $3 }' "$T/schema.out")
  is "$want" "$got" "schema on $f"
  run_cmd "$KESTREL_EVAL" check "$f"
  is 2 "$RC" "check rejects $f"
done <"$T/table"

# the example in docs/suites.md, next to the shipped fixtures it names (../tests/fixtures)
D=$T/doc
mkdir -p "$D/suites" "$D/tests"
ln -s "$top_srcdir/tests/fixtures" "$D/tests/fixtures"
sed -n '/^```yml$/,/^```$/p' "$top_srcdir/docs/suites.md" | sed '1d;$d' >"$D/suites/dot-paths.yaml"
is "$D/suites/dot-paths.yaml	valid" "$("$PYTHON" "$CHECKER" "$SCHEMA" "$D/suites/dot-paths.yaml" 2>&1)" \
  "schema accepts the engine-diff example in docs/suites.md"
run_cmd "$KESTREL_EVAL" check "$D/suites/dot-paths.yaml"
is "0|$D/suites/dot-paths.yaml: ok (2 cases)|" "$RC|$OUT|$ERR" "check accepts it"
run_cmd "$KESTREL_EVAL" run "$D/suites/dot-paths.yaml" --db "$T/doc.db"
is 0 "$RC" "it runs (exit 0)"
like "$OUT" "^dot-paths: run 1 passed: 2 pass, 0 fail" "both cases pass"
# check --json carries the engine-diff keys and gates
run_cmd "$KESTREL_EVAL" check "$D/suites/dot-paths.yaml" --json
is 0 "$RC" "check --json exits 0"
printf '%s\n' "$OUT" >"$T/doc.json"
got=$("$PYTHON" -c '
import json, sys
c = json.load(open(sys.argv[1]))["cases"]
a, b = c[0], c[1]
print(a["reference"], a["greedy"], a["tokens"], sorted(a["gates"].items()))
print(b["reference"], b["greedy"], len(b["tokens"]), b["tokens"][8], sorted(b["gates"].items()))
' "$T/doc.json" 2>&1)
is "cpu 8 [1, 2, 3, 4, 5, 6, 7, 8] [('greedy', 'exact'), ('max_rel', 0), ('min_argmax', 1)]" "$(echo "$got" | sed -n 1p)" \
  "check --json: reference, greedy, tokens and gates of the first case"
is "cpu 0 16 200 [('max_rel', 0.5), ('median_rel', 0.1), ('min_argmax', 0.5)]" "$(echo "$got" | sed -n 2p)" \
  "check --json: the second case's median_rel and min_argmax gates"
like "$(head -c 2000 "$T/doc.json")" '"kind": "engine-diff"' "check --json names the kind"
done_testing
