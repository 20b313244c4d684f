#!/bin/sh
# suite-valid.sh - `kestrel-eval check` on valid suites (tests/suites/valid/):
# exit 0 and "SUITE: ok (N cases)"; the --list table and the --json dump of
# the resolved suite (shorthands expanded, defaults applied, paths absolute,
# prompt files read) compared in full with *.expect files; paths resolve
# against the suite file whatever the working directory; --engine overrides;
# no leaks or invalid reads under valgrind (when installed).
. "$top_srcdir/tests/lib.sh"

VALID=$(cd "$top_srcdir/tests/suites/valid" && pwd -P)
TESTS=$(cd "$VALID/../.." && pwd -P)
plan 17

# suite | number of cases
while IFS='|' read -r file n; do
  run_cmd "$KESTREL_EVAL" check "$VALID/$file"
  is "0|$VALID/$file: ok ($n)|" "$RC|$OUT|$ERR" "$file: ok ($n)"
done <<'TABLE'
full.yaml|6 cases
minimal.yaml|1 case
anchors.yaml|4 cases
TABLE
is 3 "$(ls "$VALID"/*.yaml | wc -l)" "every suite under tests/suites/valid is checked here"

# the case table; the working directory does not matter, the path in messages is as given
cd "$VALID/.." || exit 1
run_cmd "$KESTREL_EVAL" check valid/full.yaml --list
expect_file_eq "$VALID/full.list.expect" "$T/out" "--list table of full.yaml"

for s in full minimal; do
  sed "s|@TESTS@|$TESTS|g" "$VALID/$s.json.expect" >"$T/$s.json.expect"
  (cd / && "$KESTREL_EVAL" check "$VALID/$s.yaml" --json) >"$T/$s.json" 2>&1
  expect_file_eq "$T/$s.json.expect" "$T/$s.json" "--json of $s.yaml: shorthands, defaults, absolute paths, prompt file"
done

# the JSON is JSON (when a python is at hand)
if [ -n "${PYTHON:-}" ]; then
  ok "'$PYTHON' -c 'import json,sys; json.load(open(sys.argv[1]))' '$T/full.json'" "--json output parses as JSON"
else
  echo "ok $((_tap_n = _tap_n + 1)) - --json output parses as JSON # SKIP no python"
fi

# relative paths resolve against the suite's own directory, also through a symlink to it
mkdir -p "$T/suite/sub" "$T/elsewhere"
: >"$T/suite/model.gguf"
printf '3 4\n' >"$T/suite/sub/p.txt"
cat >"$T/suite/sub/s.yaml" <<'YAML'
suite: rel
engines: {e: {lib: ../model.gguf}}
models: {m: ../model.gguf}
prompts: {p: {file: p.txt}}
cases: [{name: c, kind: bitexact, engine: e, model: m, prompts: p}]
YAML
ln -s "$T/suite/sub/s.yaml" "$T/elsewhere/link.yaml"
TP=$(cd "$T" && pwd -P)
(cd "$T/elsewhere" && "$KESTREL_EVAL" check link.yaml --json) >"$T/rel.json" 2>&1
like "$(cat "$T/rel.json")" "\"path\": \"$TP/suite/model.gguf\"" "model path resolved against the suite's directory"
like "$(cat "$T/rel.json")" "\"lib\": \"$TP/suite/model.gguf\"" "engine library path resolved against the suite's directory"
like "$(cat "$T/rel.json")" "\"file\": \"$TP/suite/sub/p.txt\", \"pos\": \"4:11\", \"tokens\": \\[\\[3, 4\\]\\]" \
  "prompt file resolved and read"

# the example in docs/suites.md is a valid suite (with stand-ins for its files)
D=$T/doc
mkdir -p "$D/suites/prompts" "$D/build/engines" "$D/tests/fixtures"
for f in build/engines/libkestrel-cpu.so tests/fixtures/mini27-f32.gguf tests/fixtures/mini27-q4_0.gguf \
         tests/fixtures/mini27.oracle.gguf.zst; do : >"$D/$f"; done
printf '1 2 3\n' >"$D/suites/prompts/long.txt"
sed -n '/^```yaml$/,/^```$/p' "$top_srcdir/docs/suites.md" | sed '1d;$d' >"$D/suites/smoke.yaml"
run_cmd "$KESTREL_EVAL" check "$D/suites/smoke.yaml"
is "0|$D/suites/smoke.yaml: ok (3 cases)|" "$RC|$OUT|$ERR" "the example in docs/suites.md checks ok"

# --engine NAME=LIB replaces the library and drops the pin
run_cmd "$KESTREL_EVAL" check "$VALID/full.yaml" --json --engine pinned=cuda
like "$OUT" '"name": "pinned", "lib": "cuda", "sha256": null, "options": "threads=2"' "--engine pinned=cuda: lib replaced, pin dropped"
cd "$TESTS" || exit 1
run_cmd "$KESTREL_EVAL" check "$VALID/full.yaml" --json --engine=cpu=./lib.sh
like "$OUT" "\"name\": \"cpu\", \"lib\": \"$TESTS/lib.sh\"" "--engine cpu=PATH: path relative to the working directory"

# memory: valgrind on a valid suite and an invalid one (skipped without valgrind or under ASan)
if command -v valgrind >/dev/null 2>&1 && ! ldd "$KESTREL_EVAL" 2>/dev/null | grep -q libasan; then
  for s in "$VALID/full.yaml" "$TESTS/suites/bad/unknown-model.yaml" "$TESTS/suites/bad/prompt-bad-token.yaml"; do
    valgrind -q --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all --error-exitcode=99 \
      "$KESTREL_EVAL" check "$s" --json >/dev/null 2>"$T/vg"
    rc=$?
    ok "[ $rc -ne 99 ] && ! grep -q '^==' '$T/vg'" "valgrind clean: check $(basename "$s") (exit $rc)"
    [ $rc -eq 99 ] && sed 's/^/#   /' "$T/vg" | head -30
  done
else
  for i in 1 2 3; do echo "ok $((_tap_n = _tap_n + 1)) - valgrind $i # SKIP no valgrind (or an ASan build)"; done
fi
done_testing
