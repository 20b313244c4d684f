#!/bin/sh
# engine-logits.sh - `kestrel-eval logits` on tiny generated qwen35 models (written by
# test_engine --write): the .npy parses with numpy and has shape (T, V); --top output
# format and order; threads=1 vs 2 identical; every bad input is one line and exit 2.
. "$top_srcdir/tests/lib.sh"

GEN=$top_builddir/test_engine
[ -x "$GEN" ] || skip_all "test_engine not built"
# the generator is code under test too: a model it cannot write is a failure, not a skip
gen() {
  "$GEN" --write "$@" >"$T/gen.out" 2>&1 ||
    { sed 's/^/# /' "$T/gen.out"; echo "Bail out! test_engine --write $* failed"; exit 1; }
}
gen "$T/m.gguf" f32
gen "$T/q4.gguf" q4_0 tied
gen "$T/q8.gguf" q8_0
E="$KESTREL_EVAL logits --engine cpu"

# --out: a float32 (T, V) .npy
run_cmd $E --model "$T/m.gguf" --tokens 3,17,42,99 --out "$T/a.npy" --options threads=2
is 0 "$RC" "logits --out: exit 0"
is "" "$OUT" "logits --out alone prints nothing"
if [ -n "${PYTHON:-}" ]; then
  shape=$("$PYTHON" -c "import numpy as np, sys; a = np.load(sys.argv[1]); print(a.dtype, a.shape, bool(np.isfinite(a).all()))" "$T/a.npy" 2>&1)
  is "float32 (4, 100) True" "$shape" "logits .npy: float32, shape (T, V) = (4, 100), finite"
else
  echo "ok 3 # SKIP no python3 with numpy"; _tap_n=$((_tap_n + 1))
fi

# threads do not change the numbers
run_cmd $E --model "$T/m.gguf" --tokens 3,17,42,99 --out "$T/b.npy" --options threads=1
ok "cmp -s '$T/a.npy' '$T/b.npy'" "logits: threads=1 and threads=2 write identical files"

# --top K: one line per position, K (id (logit)) pairs, descending
run_cmd $E --model "$T/m.gguf" --tokens 3,17,42,99 --top 3
is 0 "$RC" "logits --top 3: exit 0"
is 4 "$(printf '%s\n' "$OUT" | grep -cE '^pos [0-9]+: [0-9]+ \(-?[0-9]+\.[0-9]{4}\) [0-9]+ \(-?[0-9]+\.[0-9]{4}\) [0-9]+ \(-?[0-9]+\.[0-9]{4}\)$')" \
   "logits --top 3: 4 lines 'pos t: id (logit) x3'"
is "pos 0: pos 1: pos 2: pos 3:" "$(printf '%s\n' "$OUT" | awk '{printf "%s%s %s", (NR > 1 ? " " : ""), $1, $2}')" \
   "logits --top: positions in order"
sorted=$(printf '%s\n' "$OUT" | sed 's/[^(]*(\([^)]*\))/\1 /g' | awk '{ok = ($1 >= $2 && $2 >= $3); if (!ok) bad = 1} END {print bad ? "no" : "yes"}')
is yes "$sorted" "logits --top: logits descending within each line"
if [ -n "${PYTHON:-}" ]; then
  top1=$(printf '%s\n' "$OUT" | awk '{printf "%s%s", (NR > 1 ? "," : ""), $3}')
  am=$("$PYTHON" -c "import numpy as np, sys; print(','.join(str(int(i)) for i in np.load(sys.argv[1]).argmax(1)))" "$T/a.npy")
  is "$am" "$top1" "logits --top: first id of each line is the argmax of the .npy row"
else
  echo "ok $((_tap_n + 1)) # SKIP no python3 with numpy"; _tap_n=$((_tap_n + 1))
fi
run_cmd $E --model "$T/m.gguf" --tokens 5
is 1 "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" "logits without --out/--top prints the top 5 of the one position"
like "$OUT" '^pos 0: ([0-9]+ \(-?[0-9.]+\) ?){5}$' "default top 5 format"

# quantised and tied models run
run_cmd $E --model "$T/q4.gguf" --tokens 1,2,3 --top 1
is 0 "$RC" "logits on a tied q4_0 model: exit 0"
run_cmd $E --model "$T/q8.gguf" --tokens 1,2,3 --top 1
is 0 "$RC" "logits on a q8_0 model: exit 0"

# bad inputs: one line, exit 2, nothing written
run_cmd $E --model "$T/m.gguf" --tokens 1,100,2 --out "$T/bad.npy"
is 2 "$RC" "token id = vocab: exit 2"
is "kestrel-eval: logits: --tokens: token 100 at position 1 is out of range for $T/m.gguf (vocab 100)" "$ERR" \
   "token id = vocab: message names token and position"
ok "[ ! -e '$T/bad.npy' ]" "token id = vocab: no .npy written"
run_cmd $E --model "$T/m.gguf" --tokens 1,,2
is 2 "$RC" "malformed --tokens: exit 2"
is "kestrel-eval: logits: --tokens '1,,2': expected comma-separated non-negative token ids" "$ERR" "malformed --tokens: message"
run_cmd $E --model "$T/nope.gguf" --tokens 1
is 2 "$RC" "missing model file: exit 2"
is 1 "$(printf '%s\n' "$ERR" | wc -l | tr -d ' ')" "missing model file: one line"
like "$ERR" "^kestrel-eval: $T/nope.gguf: " "missing model file: names the file"
run_cmd $E --model "$T/m.gguf" --tokens 1 --options threads=2,foo=1
is 2 "$RC" "unknown engine option: exit 2"
is "kestrel-eval: options: unknown option 'foo' (the cpu engine knows threads, ctx, profile, dot)" "$ERR" "unknown engine option: message"
run_cmd $E --model "$T/m.gguf" --tokens 1,2,3,4,5 --options ctx=4
is 2 "$RC" "more tokens than ctx: exit 2"
is "kestrel-eval: logits: --tokens: 5 tokens exceed the engine's max_context 4 (see --options ctx=N)" "$ERR" "more tokens than ctx: message"
run_cmd $KESTREL_EVAL logits --engine cpu --tokens 1
is 2 "$RC" "missing --model: exit 2"
run_cmd $E --model "$T/m.gguf" --tokens 1 --top 0
is 2 "$RC" "--top 0: exit 2"

# an engine library that speaks another ABI version is refused by the loader
MIS=$top_builddir/tests/engines/.libs/libkestrel-abi-mismatch.so
if [ -f "$MIS" ]; then
  MISR=$(cd "$(dirname "$MIS")" && pwd -P)/$(basename "$MIS")
  run_cmd $KESTREL_EVAL logits --engine "$MIS" --model "$T/m.gguf" --tokens 1
  is 2 "$RC" "engine built for ABI version 2: exit 2"
  is "kestrel-eval: $MISR: engine does not support ABI version 1" "$ERR" "engine built for ABI version 2: message"
  run_cmd env KESTREL_TEST_ABI_IGNORE=1 $KESTREL_EVAL logits --engine "$MIS" --model "$T/m.gguf" --tokens 1
  is 2 "$RC" "engine that hands out an ABI version 2 table when asked for 1: exit 2"
  is "kestrel-eval: $MISR: engine ABI version 2, kestrel-eval speaks 1" "$ERR" \
     "engine that hands out an ABI version 2 table: message"
else
  echo "not ok $((_tap_n + 1)) - abi-mismatch test library missing ($MIS)"; _tap_n=$((_tap_n + 1)); _tap_fail=1
fi

plan "$_tap_n"
done_testing
