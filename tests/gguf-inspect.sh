#!/bin/sh
# gguf-inspect.sh - `kestrel-eval inspect` on fixtures written by
# `test_gguf --write-fixtures` (a tiny model, an oracle dump): full output
# diffed against the expected text (sizes and offsets worked out by hand in
# the comments), --kv-only / --tensors-only, the .zst path, and bad files and
# bad usage (exit 2, one error line, nothing on stdout).
. "$top_srcdir/tests/lib.sh"
MKFIX=$top_builddir/tests/unit/test_gguf
[ -x "$KESTREL_EVAL" ] && [ -x "$MKFIX" ] || skip_all "kestrel-eval or test_gguf not built"
plan 21

"$MKFIX" --write-fixtures "$T" || { echo "Bail out! fixtures"; exit 1; }
M=$T/model.gguf
O=$T/oracle.gguf

# header: 24 bytes + 11 KVs + 5 tensor infos = 887 bytes, padded to 896.
# q8_0 {64,10}: 20 blocks x 34 = 680, next offset 704; f32 {64}: 256 -> 960;
# q4_0 {64,96}: 192 blocks x 18 = 3456 -> 4416; f16 {64,32}: 4096 -> 8512;
# bf16 {32,64}: 4096; file = 896 + 8512 + 4096 = 13504.
cat >"$T/expect" <<END
file: $M
GGUF v3, alignment 32, data offset 896, 13504 bytes
kv (11):
  general.architecture                     str        "qwen35"
  general.name                             str        "kestrel-test-tiny"
  general.alignment                        u32        32
  qwen35.block_count                       u32        1
  qwen35.embedding_length                  u32        64
  qwen35.attention.layer_norm_rms_epsilon  f32        9.99999997e-07
  qwen35.context_length                    u64        262144
  kestrel.test.i32                         i32        -5
  kestrel.test.flag                        bool       true
  qwen35.rope.dimension_sections           i32[4]     [11, 11, 10, 0]
  tokenizer.ggml.tokens                    str[10]    ["<unk>", "<s>", "</s>", "a", "b", "c", "hello", " world", ...]
tensors (5):
  name                   type   shape            bytes        offset
  token_embd.weight      q8_0   {64, 10}           680             0
  output_norm.weight     f32    {64}               256           704
  blk.0.attn_qkv.weight  q4_0   {64, 96}          3456           960
  blk.0.ffn_up.weight    f16    {64, 32}          4096          4416
  blk.0.ffn_down.weight  bf16   {32, 64}          4096          8512
total: 5 tensors, 12584 bytes (f32 256, f16 4096, bf16 4096, q8_0 680, q4_0 3456)
END
"$KESTREL_EVAL" inspect "$M" >"$T/actual" 2>"$T/err"; rc=$?
is 0 "$rc" "model: exit 0"
expect_file_eq "$T/expect" "$T/actual" "model: full output"
is "" "$(cat "$T/err")" "model: nothing on stderr"

"$KESTREL_EVAL" inspect --kv-only "$M" >"$T/actual" 2>&1
sed -n '1,14p' "$T/expect" >"$T/expect-kv"
expect_file_eq "$T/expect-kv" "$T/actual" "--kv-only: header and KVs only"
"$KESTREL_EVAL" inspect "$M" --tensors-only >"$T/actual" 2>&1
{ sed -n '1,2p' "$T/expect"; sed -n '15,$p' "$T/expect"; } >"$T/expect-t"
expect_file_eq "$T/expect-t" "$T/actual" "--tensors-only: header and tensor table only"

# oracle dump: 12 tensors, 12 + 96 + 3*48 + 8 + 64 + 4 + 32 + 3*16 = 408 bytes (i32 24, f32 384)
cat >"$T/expect" <<END
file: $O
GGUF v3, alignment 32, data offset 960, 1520 bytes
tensors (12):
  name              type   shape          bytes        offset
  p0.tokens         i32    {3}               12             0
  p0.logits         f32    {8, 3}            96            32
  p0.h.0            f32    {4, 3}            48           128
  p0.h.1            f32    {4, 3}            48           192
  p0.hfinal         f32    {4, 3}            48           256
  p0.greedy.tokens  i32    {2}                8           320
  p0.greedy.logits  f32    {8, 2}            64           352
  p1.tokens         i32    {1}                4           416
  p1.logits         f32    {8, 1}            32           448
  p1.h.0            f32    {4, 1}            16           480
  p1.h.1            f32    {4, 1}            16           512
  p1.hfinal         f32    {4, 1}            16           544
total: 12 tensors, 408 bytes (f32 384, i32 24)
oracle: 2 prompts, 2 layers, n_embd 4, n_vocab 8
  prompt 0: T=3, greedy N=2
  prompt 1: T=1, greedy N=0
END
"$KESTREL_EVAL" inspect --tensors-only "$O" >"$T/actual" 2>&1; rc=$?
is 0 "$rc" "oracle: exit 0"
expect_file_eq "$T/expect" "$T/actual" "oracle: tensor table and per-prompt summary"
"$KESTREL_EVAL" inspect "$O" >"$T/actual" 2>&1
like "$(cat "$T/actual")" '^  kestrel.oracle.n_vocab +u32 +8$' "oracle: KVs listed"

# .zst: the same listing, marked decompressed
if command -v zstd >/dev/null 2>&1; then
  zstd -q -o "$T/model.gguf.zst" "$M"
  "$KESTREL_EVAL" inspect "$T/model.gguf.zst" >"$T/actual" 2>&1; rc=$?
  "$KESTREL_EVAL" inspect "$M" | sed -e "s|^file: .*|file: $T/model.gguf.zst|" \
    -e 's|^\(GGUF v3, .* bytes\)$|\1 (decompressed)|' >"$T/expect"
  is 0 "$rc" ".zst: exit 0"
  expect_file_eq "$T/expect" "$T/actual" ".zst: same listing, marked decompressed"
else
  for i in 1 2; do _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP no zstd command"; done
fi

# bad files: exit 2, exactly one error line naming the file, nothing on stdout
head -c 100 "$M" >"$T/cut.gguf"
run_cmd "$KESTREL_EVAL" inspect "$T/cut.gguf"
is 2 "$RC" "truncated file: exit 2"
is "kestrel-eval: $T/cut.gguf: truncated: header declares 11 KVs and 5 tensors, needing at least 303 bytes at offset 24, file has 100" \
  "$ERR" "truncated file: one error line"
is "" "$OUT" "truncated file: nothing on stdout"
printf 'hello world\n' >"$T/text.gguf"
run_cmd "$KESTREL_EVAL" inspect "$T/text.gguf"
is "2|kestrel-eval: $T/text.gguf: not a GGUF file (magic 'hell')" "$RC|$ERR" "text file: exit 2, not a GGUF file"

# an oracle dump with a token id out of range: inspect validates the dump before printing.
# p0.tokens lies at data offset 960 + tensor offset 0; write 0x7fffffff over token 0.
cp "$O" "$T/bad-oracle.gguf"
printf '\377\377\377\177' | dd of="$T/bad-oracle.gguf" bs=1 seek=960 conv=notrunc 2>/dev/null
run_cmd "$KESTREL_EVAL" inspect "$T/bad-oracle.gguf"
is "2|kestrel-eval: $T/bad-oracle.gguf: tensor 'p0.tokens': element 0 = 2147483647 is not a token id in [0, 8)" \
  "$RC|$ERR" "bad oracle: exit 2, names tensor and element"
is "" "$OUT" "bad oracle: nothing on stdout"

run_cmd "$KESTREL_EVAL" inspect "$T/missing.gguf"
is "2|kestrel-eval: $T/missing.gguf: cannot open: No such file or directory" "$RC|$ERR" "missing file: exit 2"

# usage errors
run_cmd "$KESTREL_EVAL" inspect
is "2" "$RC" "no FILE: exit 2"
run_cmd "$KESTREL_EVAL" inspect --kv-only --tensors-only "$M"
like "$RC|$ERR" "^2\|kestrel-eval: inspect: --kv-only and --tensors-only exclude each other" "both --kv-only and --tensors-only: exit 2"
run_cmd "$KESTREL_EVAL" inspect --bogus "$M"
like "$RC|$ERR" "^2\|kestrel-eval: inspect: unknown option '--bogus'" "unknown option: exit 2"
run_cmd "$KESTREL_EVAL" inspect "$M" "$O"
like "$RC|$ERR" "^2\|kestrel-eval: inspect: one FILE expected" "two files: exit 2"
done_testing
