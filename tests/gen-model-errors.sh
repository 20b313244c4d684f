#!/bin/sh
# gen-model: every bad argument gets one clear error line and exit code 2, and no file.
. "$top_srcdir/tests/lib.sh"
plan 23

bad() { # bad "expected stderr line" desc args...
  want=$1; desc=$2; shift 2
  run_cmd "$KESTREL_EVAL" gen-model "$@"
  is 2 "$RC" "$desc: exit code 2"
  is "$want" "$(printf '%s\n' "$ERR" | head -1)" "$desc: message"
}

bad "kestrel-eval: gen-model: unknown preset 'qwen3.5-999b' (known: qwen3.5-27b, qwen3.5-9b, qwen3.5-2b, tiny)" \
  "unknown preset" --preset qwen3.5-999b --type q4_0 --seed 1 -o "$T/x.gguf"
bad "kestrel-eval: gen-model: unsupported --type 'q5_1' (known: q4_0, q8_0, f16, f32)" \
  "unknown type" --preset tiny --type q5_1 --seed 1 -o "$T/x.gguf"
bad "kestrel-eval: gen-model: missing --seed" "missing seed" --preset tiny --type q4_0 -o "$T/x.gguf"
bad "kestrel-eval: gen-model: missing -o FILE" "missing output" --preset tiny --type q4_0 --seed 1
bad "kestrel-eval: gen-model: --seed 'x1': expected a non-negative integer" \
  "bad seed" --preset tiny --type q4_0 --seed x1 -o "$T/x.gguf"
bad "kestrel-eval: gen-model: --vocab '0': expected an integer in 1..16777216" \
  "zero vocab" --preset tiny --type q4_0 --seed 1 --vocab 0 -o "$T/x.gguf"
bad "kestrel-eval: gen-model: --layers '2x': expected an integer in 1..4096" \
  "bad layers" --preset tiny --type q4_0 --seed 1 --layers 2x -o "$T/x.gguf"
bad "kestrel-eval: gen-model: -j '0': expected an integer in 1..256" \
  "zero threads" --preset tiny --type q4_0 --seed 1 -j 0 -o "$T/x.gguf"
bad "kestrel-eval: gen-model: unknown argument '--frobnicate'" \
  "unknown flag" --preset tiny --type q4_0 --seed 1 --frobnicate -o "$T/x.gguf"
bad "kestrel-eval: gen-model: option '--seed' needs a value" "flag without value" --preset tiny --type q4_0 -o "$T/x.gguf" --seed
# an output path that cannot be created: one line naming it
run_cmd "$KESTREL_EVAL" gen-model --preset tiny --type q4_0 --seed 1 -o "$T/no/such/dir/x.gguf"
is 2 "$RC" "unwritable output: exit code 2"
like "$ERR" "$T/no/such/dir/x.gguf" "unwritable output: the message names the file"
ok '[ ! -e "$T/x.gguf" ] && [ -z "$(ls "$T" | grep gguf)" ]' "no output file after any error"
done_testing
