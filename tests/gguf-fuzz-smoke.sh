#!/bin/sh
# gguf-fuzz-smoke.sh - the fuzz target (tests/fuzz/fuzz_gguf.c) built with its
# standalone driver, run over valid fixtures, truncated and damaged copies
# and .zst copies: the harness itself works, accepts what is valid and rejects
# what is not, with the reader's error line; and the fuzzer's corpus replayed
# (tests/fuzz/corpus-gguf: a libFuzzer run of this target, 10 minutes with ASan and
# UBSan, 532652 inputs and no finding, merged to the 186 that cover its edges), so
# every input it found stays a regression test. Real fuzzing: see the header of
# tests/fuzz/fuzz_gguf.c.
. "$top_srcdir/tests/lib.sh"
FUZZ=$top_builddir/tests/fuzz/fuzz_gguf
MKFIX=$top_builddir/tests/unit/test_gguf
[ -x "$FUZZ" ] && [ -x "$MKFIX" ] || skip_all "fuzz_gguf or test_gguf not built"
plan 10

mkdir -p "$T/c"
run_cmd "$MKFIX" --write-fixtures "$T/c"
is 0 "$RC" "fixtures written ($ERR)"

# damaged copies: cut at a few places, and the magic broken
size=$(wc -c <"$T/c/model.gguf")
for cut in 0 3 23 100 $((size / 2)) $((size - 1)); do
  head -c "$cut" "$T/c/model.gguf" >"$T/c/model-cut-$cut.gguf"
done
{ printf 'GGUX'; tail -c +5 "$T/c/model.gguf"; } >"$T/c/model-magic.gguf"

run_cmd "$FUZZ" "$T/c"
is 0 "$RC" "driver ran every input without a crash ($ERR)"
is "fuzz_gguf: 9 inputs, 2 accepted, 7 rejected" "$(printf '%s\n' "$OUT" | tail -n 1)" "count line"
like "$OUT" "^$T/c/model.gguf: accepted$" "the model fixture is accepted"
like "$OUT" "^$T/c/oracle.gguf: accepted$" "the oracle fixture is accepted"
like "$OUT" "^$T/c/model-magic.gguf: rejected: not a GGUF file \(magic 'GGUX'\)$" "broken magic rejected with the reader's message"
like "$OUT" "^$T/c/model-cut-$((size - 1)).gguf: rejected: tensor 'blk.0.ffn_down.weight': data \[[0-9]+, [0-9]+\) past end of file \($((size - 1)) bytes\)$" \
  "a file one byte short is rejected naming the last tensor"

# the corpus: every input accepted or rejected with one line (a broken promise aborts), the same split as
# when it was merged; a changed split is a change of what the readers accept
run_cmd "$FUZZ" "$top_srcdir/tests/fuzz/corpus-gguf"
is "0 fuzz_gguf: 186 inputs, 59 accepted, 127 rejected" "$RC $(printf '%s\n' "$OUT" | tail -n 1)" \
  "the fuzz corpus replays: every input answered, none crashes"
bad=$(printf '%s\n' "$OUT" | sed '$d' | grep -Ev ': (accepted|rejected: .+)$' | head -n 3)
is "" "$bad" "the corpus: one well-formed line per input"

# a .zst input goes through the decompression path as well
if command -v zstd >/dev/null 2>&1; then
  mkdir -p "$T/z"
  zstd -q -o "$T/z/model.gguf.zst" "$T/c/model.gguf"
  run_cmd "$FUZZ" "$T/z/model.gguf.zst"
  is "0 fuzz_gguf: 1 inputs, 1 accepted, 0 rejected" "$RC $(printf '%s\n' "$OUT" | tail -n 1)" "a .zst input is accepted through the zstd path"
else
  _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP no zstd command"
fi
done_testing
