#!/bin/sh
# suite-fuzz-replay.sh - the suite reader's fuzz target (tests/fuzz/fuzz_suite.c) with its
# standalone driver over the test suites and the fuzzer's corpus (tests/fuzz/corpus-suite: a
# libFuzzer run of the target with ASan and UBSan, merged to the inputs that cover its edges), so
# every input the fuzzer found stays a regression test. The target abort()s on a broken promise of
# an accepted suite or on a rejection that is not one "PATH:LINE:COL: message" line (the fuzzer's
# first find: a YAML scalar with a newline made a two-line error).
. "$top_srcdir/tests/lib.sh"
FUZZ=$top_builddir/tests/fuzz/fuzz_suite
[ -x "$FUZZ" ] || skip_all "fuzz_suite not built"
plan 7

run_cmd "$FUZZ" "$top_srcdir/tests/suites/valid/anchors.yaml" "$top_srcdir/tests/suites/valid/full.yaml" \
  "$top_srcdir/tests/suites/valid/minimal.yaml"
is "0 fuzz_suite: 3 inputs, 3 accepted, 0 rejected" "$RC $(printf '%s\n' "$OUT" | tail -n 1)" \
  "the valid test suites are accepted in the fuzz target's scratch folder"

n_bad=$(ls "$top_srcdir"/tests/suites/bad/*.yaml | wc -l)
run_cmd "$FUZZ" "$top_srcdir"/tests/suites/bad/*.yaml
is "0 fuzz_suite: $n_bad inputs, 0 accepted, $n_bad rejected" "$RC $(printf '%s\n' "$OUT" | tail -n 1)" \
  "every bad test suite is rejected, none aborts"
like "$OUT" "newline-in-value.yaml: rejected: 3:13: model 'm': file not found: .*\\\\x0a\.\./lib\.sh$" \
  "a value with a newline is shown as \\x0a in a one-line error"

run_cmd "$FUZZ" "$top_srcdir/tests/fuzz/corpus-suite"
is 0 "$RC" "the corpus replays without an abort ($ERR)"
is "fuzz_suite: 377 inputs, 15 accepted, 362 rejected" "$(printf '%s\n' "$OUT" | tail -n 1)" \
  "the corpus splits as when it was merged (a changed split is a change of what the reader accepts)"
bad=$(printf '%s\n' "$OUT" | sed '$d' | grep -Ev ': (ok \([0-9]+ cases\)|rejected: [0-9]+:[0-9]+: .+|rejected: <scratch>/.+)$' | head -n 3)
is "" "$bad" "the corpus: one well-formed line per input"

run_cmd "$FUZZ" "$T/none"
is 1 "$RC" "a missing input: exit 1"
done_testing
