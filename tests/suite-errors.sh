#!/bin/sh
# suite-errors.sh - `kestrel-eval check` on malformed suites (tests/suites/bad/):
# each must fail with exit 2, print nothing on stdout and exactly ONE line on
# stderr, `kestrel-eval: FILE:LINE:COL: message`, compared here in full (control
# bytes of quoted values as \xNN: a YAML scalar may hold a newline; found by
# tests/fuzz/fuzz_suite.c).
# Also: usage errors, a missing suite file, --engine overrides that don't apply.
. "$top_srcdir/tests/lib.sh"

BAD=$(cd "$top_srcdir/tests/suites/bad" && pwd -P)
SUITES=$(dirname "$BAD")
TESTS=$(dirname "$SUITES")

# file | expected stderr after "kestrel-eval: " (@BAD@, @SUITES@, @TESTS@ = absolute dirs)
cat >"$T/table" <<'TABLE'
yaml-syntax.yaml|yaml-syntax.yaml:5:4: YAML syntax error: did not find expected '-' indicator (while parsing a block collection at 3:3)
yaml-flow.yaml|yaml-flow.yaml:3:6: YAML syntax error: did not find expected ',' or '}' (while parsing a flow mapping at 2:10)
yaml-tab.yaml|yaml-tab.yaml:3:1: YAML syntax error: found character that cannot start any token (while scanning for the next token at 3:1)
bad-utf8.yaml|bad-utf8.yaml:2:19: YAML syntax error: invalid trailing UTF-8 octet (byte 0x22)
empty.yaml|empty.yaml:1:1: empty suite file (expected a map with 'suite' and 'cases')
comment-only.yaml|comment-only.yaml:1:1: empty suite file (expected a map with 'suite' and 'cases')
two-docs.yaml|two-docs.yaml:5:1: a second YAML document (a suite file holds exactly one)
top-list.yaml|top-list.yaml:1:1: expected a map at the top level, got a list
unknown-key-case.yaml|unknown-key-case.yaml:9:5: unknown key 'iteration' in case 'x' (did you mean 'iterations'?)
unknown-key-top.yaml|unknown-key-top.yaml:2:1: unknown key 'case' at the top level (did you mean 'cases'?)
unknown-key-list.yaml|unknown-key-list.yaml:3:3: unknown key 'frobnicate' in defaults (valid keys: engine, timeout, warmup, iterations, threads)
unknown-gate.yaml|unknown-gate.yaml:11:13: unknown key 'max_rell' in gates of case 'x' (did you mean 'max_rel'?)
type-list.yaml|type-list.yaml:5:12: expected a number for 'timeout', got a list
type-string-number.yaml|type-string-number.yaml:4:57: expected an integer for 'iterations', got a string
type-cases-map.yaml|type-cases-map.yaml:3:3: expected a list for 'cases', got a map
type-null.yaml|type-null.yaml:4:5: expected a path or a map for model 'm', got null
type-bool.yaml|type-bool.yaml:6:71: expected true or false for 'hidden', got 'yes'
missing-suite.yaml|missing-suite.yaml:2:1: missing required key 'suite' (the suite's name)
missing-cases.yaml|missing-cases.yaml:1:1: missing required key 'cases'
missing-kind.yaml|missing-kind.yaml:4:5: case 'x': missing required key 'kind'
missing-lib.yaml|missing-lib.yaml:3:8: engine 'cpu': missing required key 'lib'
prompts-neither.yaml|prompts-neither.yaml:3:6: prompt set 'p': missing required key 'tokens' or 'file'
missing-file.yaml|missing-file.yaml:4:9: model 'mini': file not found: @TESTS@/fixtures/does-not-exist.gguf
missing-oracle-file.yaml|missing-oracle-file.yaml:4:13: oracle 'o': file not found: /nonexistent/dir/x.oracle.gguf.zst
missing-dir.yaml|missing-dir.yaml:4:6: model 'm': file not found: @BAD@/no-such-dir/../../../lib.sh
missing-engine-lib.yaml|missing-engine-lib.yaml:3:15: engine 'mine': file not found: @BAD@/build/libkestrel-mine.so
model-is-dir.yaml|model-is-dir.yaml:3:13: model 'm': is a directory, not a file: @SUITES@
bad-number.yaml|bad-number.yaml:12:16: '1e-5x' is not a number for 'max_rel'
negative-timeout.yaml|negative-timeout.yaml:7:14: 'timeout' must be > 0 seconds, got -1
not-integer.yaml|not-integer.yaml:5:70: '2.5' is not an integer for 'iterations'
zero-iterations.yaml|zero-iterations.yaml:5:70: 'iterations' must be >= 1, got 0
huge-threads.yaml|huge-threads.yaml:4:54: 'threads' must be at most 2147483647, got 99999999999999999999999
fraction-range.yaml|fraction-range.yaml:11:21: 'argmax' must be a fraction in (0, 1], got 1.5
fraction-alpha.yaml|fraction-alpha.yaml:10:14: 'alpha' must be a fraction in (0, 1), got 1
argmax-word.yaml|argmax-word.yaml:6:79: 'argmax' must be 'all' or a fraction in (0, 1], got 'most'
greedy-word.yaml|greedy-word.yaml:6:79: 'greedy' must be 'exact', got 'close'
bitexact-false.yaml|bitexact-false.yaml:6:84: 'bitexact' must be true (leave the gate out to not check it)
unknown-model.yaml|unknown-model.yaml:10:12: case 'x': unknown model 'foo' (known: a, b)
unknown-engine-typo.yaml|unknown-engine-typo.yaml:4:11: defaults: unknown engine 'cpuu' (did you mean 'cpu'? known: cpu, cuda)
unknown-prompts-none.yaml|unknown-prompts-none.yaml:5:63: case 'x': unknown prompt set 'short' (no prompts defined: add it under 'prompts')
no-engine.yaml|no-engine.yaml:4:5: case 'x': no engine (set 'engine' in the case or in 'defaults')
duplicate-case.yaml|duplicate-case.yaml:9:11: duplicate case name 'floor' (first defined at 5:5)
duplicate-key.yaml|duplicate-key.yaml:8:5: duplicate key 'timeout' in case 'x' (first at 7:5)
duplicate-model.yaml|duplicate-model.yaml:4:3: duplicate model name 'm' in 'models' (first defined at 3:3)
unknown-kind.yaml|unknown-kind.yaml:5:11: case 'x': unknown kind 'orcale' (did you mean 'oracle'?)
unknown-kind-far.yaml|unknown-kind-far.yaml:4:21: case 'x': unknown kind 'throughput' (kinds: oracle, decode-bench, bitexact, bandwidth, engine-diff)
kind-needs-oracle.yaml|kind-needs-oracle.yaml:5:5: case 'x': kind 'oracle' needs 'oracle'
kind-needs-model.yaml|kind-needs-model.yaml:4:5: case 'bench': kind 'decode-bench' needs 'model'
kind-needs-prompts.yaml|kind-needs-prompts.yaml:5:5: case 'same': kind 'bitexact' needs 'prompts' (or 'oracle', whose prompts it uses)
gate-kind.yaml|gate-kind.yaml:13:7: case 'x': gate 'max_ms_per_token' does not apply to kind 'oracle' (only decode-bench)
key-kind.yaml|key-kind.yaml:11:5: case 'x': 'prompt_len' does not apply to kind 'oracle' (only decode-bench)
bad-sha256.yaml|bad-sha256.yaml:5:13: engine 'pinned': sha256 must be 64 hex digits, got '3f5a' (4 chars)
bad-lib-name.yaml|bad-lib-name.yaml:3:6: engine 'e': lib 'my engine' is neither an engine name (cpu, cuda) nor a path to a .so
bad-name.yaml|bad-name.yaml:1:8: invalid suite name 'bad name' (use letters, digits, '.', '_' and '-')
bad-case-name.yaml|bad-case-name.yaml:3:16: invalid case name 'a b' (use letters, digits, '.', '_' and '-')
cases-empty.yaml|cases-empty.yaml:2:8: 'cases' is empty: a suite needs at least one case
prompts-both.yaml|prompts-both.yaml:5:5: prompt set 'p': give either 'tokens' or 'file', not both
prompt-bad-token.yaml|@BAD@/prompts/bad-token.txt:2:5: 'x6' is not a token id (prompt set 'p')
prompt-negative.yaml|prompt-negative.yaml:4:26: 'token id' must be >= 0, got -4
prompt-flat.yaml|prompt-flat.yaml:4:14: prompt set 'p': prompt 1 must be a list of token ids, got a number
prompt-empty-line.yaml|@BAD@/prompts/empty-prompt.txt:2:1: empty prompt (prompt set 'p')
engine-diff-bad-greedy.yaml|engine-diff-bad-greedy.yaml:5:94: 'greedy' must be >= 0, got -2
engine-diff-empty-tokens.yaml|engine-diff-empty-tokens.yaml:5:81: case 'x': 'tokens' is empty (give at least one token id)
engine-diff-gate-kind.yaml|engine-diff-gate-kind.yaml:13:7: case 'x': gate 'rms_rel' does not apply to kind 'engine-diff' (only oracle)
engine-diff-greedy-gate.yaml|engine-diff-greedy-gate.yaml:11:13: case 'x': gate 'greedy: exact' needs 'greedy: N' (N >= 1 tokens to compare)
engine-diff-median-gate-oracle.yaml|engine-diff-median-gate-oracle.yaml:6:71: case 'x': gate 'median_rel' does not apply to kind 'oracle' (only engine-diff)
engine-diff-min-argmax.yaml|engine-diff-min-argmax.yaml:5:106: 'min_argmax' must be a fraction in (0, 1], got 75
engine-diff-negative-token.yaml|engine-diff-negative-token.yaml:10:20: 'token id' must be >= 0, got -3
engine-diff-no-reference.yaml|engine-diff-no-reference.yaml:5:5: case 'x': kind 'engine-diff' needs 'reference' (the engine, from 'engines', to compare with)
engine-diff-no-tokens.yaml|engine-diff-no-tokens.yaml:5:5: case 'x': kind 'engine-diff' needs 'tokens' (a list of token ids)
engine-diff-oracle-tokens.yaml|engine-diff-oracle-tokens.yaml:6:63: case 'x': 'tokens' does not apply to kind 'oracle' (only engine-diff)
engine-diff-tokens-map.yaml|engine-diff-tokens-map.yaml:5:81: expected a list for 'tokens', got a map
engine-diff-unknown-reference.yaml|engine-diff-unknown-reference.yaml:5:61: case 'x': unknown reference engine 'cpu-q9' (did you mean 'cpu-q8'? known: cpu, cpu-q8)
newline-in-value.yaml|newline-in-value.yaml:3:13: model 'm': file not found: @SUITES@/\x0a../lib.sh
control-in-key.yaml|control-in-key.yaml:2:1: unknown key 'ca\x09ses' at the top level (did you mean 'cases'?)
control-in-options.yaml|control-in-options.yaml:2:36: engine 'cpu': 'options' holds a control byte (\x0a at offset 9)
TABLE

n_bad=$(ls "$BAD"/*.yaml | wc -l)
n_table=$(wc -l <"$T/table")
plan $((n_table * 3 + 1 + 9))

is "$n_bad" "$n_table" "every suite under tests/suites/bad has an expected error here"

cd "$BAD" || exit 1
while IFS='|' read -r file want; do
  want="kestrel-eval: $(printf '%s' "$want" | sed -e "s|@BAD@|$BAD|g" -e "s|@SUITES@|$SUITES|g" -e "s|@TESTS@|$TESTS|g")"
  run_cmd "$KESTREL_EVAL" check "$file"
  is 2 "$RC" "$file: exit code"
  is "$want" "$ERR" "$file: error line"
  is "" "$OUT" "$file: nothing on stdout"
done <"$T/table"

# usage errors and a suite that is not there
run_cmd "$KESTREL_EVAL" check
is 2 "$RC" "check without a suite: exit 2"
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" --frobnicate
is "kestrel-eval: check: unknown option '--frobnicate'" "$(printf '%s\n' "$ERR" | head -1)" "unknown option named"
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" "$SUITES/valid/full.yaml"
is 2 "$RC" "two suites: exit 2"
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" --list --json
is 2 "$RC" "--list with --json: exit 2"
run_cmd "$KESTREL_EVAL" check no-such-suite.yaml
is "2|kestrel-eval: no-such-suite.yaml: cannot open: No such file or directory" "$RC|$ERR" "missing suite file"

# --engine NAME=LIB, as `run` takes it
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" --engine gpu=cuda
is "2|kestrel-eval: --engine gpu=cuda: suite 'full-example' has no engine 'gpu' (known: cpu, pinned)" "$RC|$ERR" \
  "--engine with an unknown engine name"
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" --engine pinned=./nope/libkestrel-x.so
is "2|kestrel-eval: --engine pinned=./nope/libkestrel-x.so: file not found: $BAD/nope/libkestrel-x.so" "$RC|$ERR" \
  "--engine with a library path that does not exist (relative to the working directory)"
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" --engine pinned
is "2|kestrel-eval: check: --engine pinned: expected NAME=LIB" "$RC|$ERR" "--engine without =LIB"
run_cmd "$KESTREL_EVAL" check "$SUITES/valid/full.yaml" --engine "cpu=not a lib"
is "2|kestrel-eval: --engine cpu=not a lib: 'not a lib' is neither an engine name (cpu, cuda) nor a path to a .so" \
  "$RC|$ERR" "--engine with a malformed library"
done_testing
