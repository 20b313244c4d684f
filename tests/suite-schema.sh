#!/bin/sh
# suite-schema.sh - schemas/suite.schema.json (JSON Schema 2020-12) agrees with
# the parser: it is a valid 2020-12 schema; every shipped suite (suites/*.yaml)
# and every valid test suite validates; malformed suites are rejected by BOTH
# the schema (at the expected place) and `kestrel-eval check`; and the keys the
# schema allows at each place are exactly the keys the parser knows.
# Needs python3 with yaml and jsonschema >= 4 (Debian python3-yaml, python3-jsonschema).
. "$top_srcdir/tests/lib.sh"

[ -n "${PYTHON:-}" ] || skip_all "no python3 (configure found none)"
"$PYTHON" -c 'import yaml; from jsonschema import Draft202012Validator' 2>/dev/null ||
  skip_all "$PYTHON lacks yaml or jsonschema with Draft 2020-12 (apt-get install python3-yaml python3-jsonschema)"

SCHEMA=$top_srcdir/schemas/suite.schema.json
CHECKER=$top_srcdir/tests/suites/schema_check.py
SUITES=$top_srcdir/tests/suites

# schema-rejected suite | where the schema's best error is (path in the JSON data)
cat >"$T/rejects" <<'TABLE'
unknown-key-case.yaml|cases/0
unknown-key-top.yaml|(top)
unknown-gate.yaml|cases/0/gates
type-list.yaml|defaults/timeout
type-string-number.yaml|cases/0/iterations
type-bool.yaml|cases/0/hidden
missing-suite.yaml|(top)
missing-kind.yaml|cases/0
missing-lib.yaml|engines/cpu
unknown-kind.yaml|cases/0/kind
kind-needs-oracle.yaml|cases/0
kind-needs-model.yaml|cases/0
kind-needs-prompts.yaml|cases/0
gate-kind.yaml|cases/0/gates
key-kind.yaml|cases/0
bad-sha256.yaml|engines/pinned/sha256
bad-number.yaml|cases/0/gates/max_rel
negative-timeout.yaml|cases/0/timeout
not-integer.yaml|cases/0/iterations
zero-iterations.yaml|cases/0/iterations
fraction-range.yaml|cases/0/gates/argmax
fraction-alpha.yaml|cases/0/gates/alpha
greedy-word.yaml|cases/0/gates/greedy
bitexact-false.yaml|cases/0/gates/bitexact
bad-name.yaml|suite
cases-empty.yaml|cases
prompts-both.yaml|prompts/p
prompt-negative.yaml|prompts/p/tokens/1/1
no-engine.yaml|cases/0
control-in-options.yaml|engines/cpu/options
TABLE

# the shipped suites, the valid test suites and the example in docs/suites.md
sed -n '/^```yaml$/,/^```$/p' "$top_srcdir/docs/suites.md" | sed '1d;$d' >"$T/docs-example.yaml"
ls "$top_srcdir"/suites/*.yaml "$SUITES"/valid/*.yaml "$T/docs-example.yaml" 2>/dev/null >"$T/valid.list"
n_valid=$(wc -l <"$T/valid.list")
n_rej=$(wc -l <"$T/rejects")
plan $((1 + n_valid + 2 * n_rej + 5))

ok "grep -q '\"\$schema\": \"https://json-schema.org/draft/2020-12/schema\"' '$SCHEMA'" \
  "the schema declares Draft 2020-12"

# shellcheck disable=SC2046
"$PYTHON" "$CHECKER" "$SCHEMA" $(cat "$T/valid.list") >"$T/valid.out" 2>&1
while read -r f; do
  got=$(awk -F'\t' -v f="$f" '$1 == f { print $2 }' "$T/valid.out")
  case $f in "$T"/*) name="the example in docs/suites.md" ;; *) name=${f#"$top_srcdir"/} ;; esac
  is "valid" "$got" "schema accepts $name"
done <"$T/valid.list"

cd "$SUITES/bad" || exit 1
# shellcheck disable=SC2046
"$PYTHON" "$CHECKER" "$SCHEMA" $(cut -d'|' -f1 "$T/rejects") >"$T/rejects.out" 2>&1
while IFS='|' read -r f where; do
  got=$(awk -F'\t' -v f="$f" '$1 == f { sub(/:.*/, "", $3); print $2 "\t" $3 }' "$T/rejects.out")
  is "invalid	$where" "$got" "schema rejects $f at $where"
  run_cmd "$KESTREL_EVAL" check "$f"
  is 2 "$RC" "check rejects $f too"
done <"$T/rejects"

# The keys valid at each place: the parser's "(valid keys: ...)" list vs the schema's properties.
keys_from_parser() { # yaml text with the bogus key -> sorted key list
  printf '%s\n' "$1" >"$T/k.yaml"
  "$KESTREL_EVAL" check "$T/k.yaml" 2>&1 | sed -n 's/.*(valid keys: \(.*\))$/\1/p' | tr -d ' ' | tr ',' '\n' | sort | tr '\n' ' '
}
keys_from_schema() { # python expression on the schema s -> sorted key list
  "$PYTHON" -c "import json,sys; s=json.load(open(sys.argv[1])); print(' '.join(sorted($1)) + ' ')" "$SCHEMA"
}
is "$(keys_from_schema "s['properties']")" \
   "$(keys_from_parser 'zzzzzzzzzz: 1')" "top-level keys agree"
is "$(keys_from_schema "s['properties']['defaults']['properties']")" \
   "$(keys_from_parser 'suite: k
defaults: {zzzzzzzzzz: 1}')" "defaults keys agree"
is "$(keys_from_schema "s['\$defs']['engine_lib'] and s['properties']['engines']['additionalProperties']['oneOf'][1]['properties']")" \
   "$(keys_from_parser 'suite: k
engines: {e: {zzzzzzzzzz: 1}}')" "engine keys agree"
is "$(keys_from_schema "s['\$defs']['case']['properties']")" \
   "$(keys_from_parser 'suite: k
cases: [{name: c, zzzzzzzzzz: 1}]')" "case keys agree"
is "$(keys_from_schema "s['\$defs']['case']['properties']['gates']['properties']")" \
   "$(keys_from_parser 'suite: k
engines: {e: cpu}
cases: [{name: c, kind: bandwidth, engine: e, gates: {zzzzzzzzzz: 1}}]')" "gate keys agree"
done_testing
