#!/bin/sh
# engine-dot-q8.sh - the CPU engine's option dot=q8 (8-bit activations for every q4_0 matrix:
# quantize_q8 + matvec_q8, the CPU twin of the CUDA engine's dp4a GEMV) on the q4_0 fixtures,
# fed the oracle dumps' prompts. Per fixture and prompt:
#   - dot=q8 logits finite, and two runs byte-identical (threads=2 and threads=1, separate processes);
#   - dot=q8 vs dot=f32: worst per-position max_rel = max|q8 - f32| / max|f32| <= 0.6 and the mean
#     over positions <= 0.15; argmax agreement >= 70% (reported). Measured 2026-11-29 (docs/engine-abi.md):
#     worst 0.016..0.29 (minitied's 80-token prompt), mean <= 0.055, argmax 72/80..80/80; the gates leave
#     2x margin and still catch a wrong scale/offset/order (max_rel ~1, argmax ~chance);
#   - dot=q8 vs the HF oracle within the q4_0 magnitude gate of engine-oracle.sh (2.5).
# Plus the options error for a bad value (exit 2, one line).
. "$top_srcdir/tests/lib.sh"
need_python
ls "$FIX"/*-q4_0.gguf >/dev/null 2>&1 || skip_all "no q4_0 fixtures in tests/fixtures"
command -v zstd >/dev/null 2>&1 || skip_all "no zstd command (kgguf.py needs it for .zst)"

cat >"$T/finite.py" <<'PY'
import sys
import numpy as np
sys.exit(0 if np.isfinite(np.load(sys.argv[1])).all() else 1)
PY

TOOLS=$top_srcdir/tools
E="$KESTREL_EVAL logits --engine cpu"
for model in "$FIX"/*-q4_0.gguf; do
  name=$(basename "${model%-q4_0.gguf}")
  oracle=$FIX/$name.oracle.gguf.zst
  [ -f "$oracle" ] || continue
  "$PYTHON" "$top_srcdir/tests/oracle_tokens.py" "$TOOLS" "$oracle" "$T/$name" >"$T/$name.tokens" || { ok false "$name: read the oracle's tokens"; continue; }
  p=0
  while read -r toks; do
    pre=$T/$name-$p
    run_cmd $E --model "$model" --tokens "$toks" --options threads=2,dot=q8 --out "$pre-q8.npy"
    is 0 "$RC" "$name prompt $p: logits with dot=q8${ERR:+ ($ERR)}"
    run_cmd $E --model "$model" --tokens "$toks" --options dot=q8,threads=1 --out "$pre-q8b.npy"
    is 0 "$RC" "$name prompt $p: logits with dot=q8, threads=1${ERR:+ ($ERR)}"
    run_cmd $E --model "$model" --tokens "$toks" --options threads=2,dot=f32 --out "$pre-f32.npy"
    is 0 "$RC" "$name prompt $p: logits with dot=f32${ERR:+ ($ERR)}"
    if [ -f "$pre-q8.npy" ] && [ -f "$pre-q8b.npy" ] && [ -f "$pre-f32.npy" ]; then
      ok '"$PYTHON" "$T/finite.py" "$pre-q8.npy"' "$name prompt $p: dot=q8 logits finite"
      ok 'cmp -s "$pre-q8.npy" "$pre-q8b.npy"' "$name prompt $p: dot=q8 deterministic (threads=2 and threads=1 runs byte-identical)"
      res=$("$PYTHON" "$top_srcdir/tests/cmp_logits.py" "$pre-q8.npy" "$pre-f32.npy" 0.6 0.15 0.7); rc=$?
      echo "# $name prompt $p dot=q8 vs dot=f32: $res"
      is 0 "$rc" "$name prompt $p: dot=q8 vs dot=f32 worst max_rel <= 0.6, mean <= 0.15, argmax >= 70% ($res)"
      res=$("$PYTHON" "$top_srcdir/tests/cmp_logits.py" "$pre-q8.npy" "$T/$name-ref-$p.npy" 2.5 2.5 0); rc=$?
      echo "# $name prompt $p dot=q8 vs HF oracle: $res"
      is 0 "$rc" "$name prompt $p: dot=q8 vs the f32 oracle, q4_0 magnitude gate max_rel <= 2.5"
    fi
    p=$((p + 1))
  done <"$T/$name.tokens"
done
[ "$_tap_n" -gt 0 ] || skip_all "no q4_0 fixture with an oracle dump"

# a bad value: the options error, one line, exit 2
model=$(ls "$FIX"/*-q4_0.gguf | head -n 1)
run_cmd $E --model "$model" --tokens 1 --options threads=1,dot=x
is 2 "$RC" "dot=x: exit 2"
is "kestrel-eval: options: dot=x: expected f32 or q8" "$ERR" "dot=x: one-line options error"
run_cmd $E --model "$model" --tokens 1 --options dot=Q8
is "kestrel-eval: options: dot=Q8: expected f32 or q8" "$ERR" "dot=Q8: values are case-sensitive"
plan "$_tap_n"
done_testing
