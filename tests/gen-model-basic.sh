#!/bin/sh
# gen-model: the tiny preset in f32/q8_0/q4_0 opens (inspect), holds every expected tensor
# with the right shape and type and realistic values, is deterministic (same seed -> same
# bytes, other seed -> other bytes, any thread count -> same bytes), and the CPU engine
# runs it with finite logits.
. "$top_srcdir/tests/lib.sh"
plan 29

sha() { sha256sum "$1" | cut -d' ' -f1; }

# expected tensors of the tiny preset (ggml ne order), "big" = the --type of the file
expected() {
  echo "token_embd.weight big 64,512"
  echo "output_norm.weight f32 64"
  echo "output.weight big 64,512"
  for l in 0 1 2 3; do
    echo "blk.$l.attn_norm.weight f32 64"
    if [ $l -eq 3 ]; then
      echo "blk.$l.attn_q.weight big 64,512"
      echo "blk.$l.attn_k.weight big 64,64"
      echo "blk.$l.attn_v.weight big 64,64"
      echo "blk.$l.attn_output.weight big 256,64"
      echo "blk.$l.attn_q_norm.weight f32 64"
      echo "blk.$l.attn_k_norm.weight f32 64"
    else
      echo "blk.$l.attn_qkv.weight big 64,320"
      echo "blk.$l.attn_gate.weight big 64,192"
      echo "blk.$l.ssm_conv1d.weight f32 4,320"
      echo "blk.$l.ssm_dt.bias f32 6"
      echo "blk.$l.ssm_a f32 6"
      echo "blk.$l.ssm_beta.weight f32 64,6"
      echo "blk.$l.ssm_alpha.weight f32 64,6"
      echo "blk.$l.ssm_norm.weight f32 32"
      echo "blk.$l.ssm_out.weight big 192,64"
    fi
    echo "blk.$l.post_attention_norm.weight f32 64"
    echo "blk.$l.ffn_gate.weight big 64,128"
    echo "blk.$l.ffn_up.weight big 64,128"
    echo "blk.$l.ffn_down.weight big 128,64"
  done
}

for ty in f32 q8_0 q4_0; do
  run_cmd "$KESTREL_EVAL" gen-model --preset tiny --type $ty --seed 7 -o "$T/tiny-$ty.gguf"
  is 0 "$RC" "gen-model tiny $ty: exit code"
  like "$OUT" "tensor bytes [0-9]+ .* bytes read per token [0-9]+" "gen-model tiny $ty: prints the byte budget"
  run_cmd "$KESTREL_EVAL" inspect "$T/tiny-$ty.gguf"
  is 0 "$RC" "inspect tiny-$ty.gguf opens it"
  # independent reader (tools/kgguf.py): names, types, shapes, value ranges
  if [ -n "${PYTHON:-}" ]; then
    expected | sed "s/ big / $ty /" >"$T/expect-$ty"
    "$PYTHON" - "$T/tiny-$ty.gguf" >"$T/actual-$ty" 2>"$T/py-err-$ty" <<'PY'
import sys
sys.path.insert(0, __import__("os").environ["top_srcdir"] + "/tools")
import kgguf
r = kgguf.Reader(sys.argv[1])
names = {0: "f32", 1: "f16", 2: "q4_0", 8: "q8_0"}
for t in r.tensors.values():
    print(t.name, names.get(t.type, t.type), ",".join(str(n) for n in t.ne))
PY
    expect_file_eq "$T/expect-$ty" "$T/actual-$ty" "tiny-$ty: every tensor with its type and shape (kgguf)"
    run_cmd "$PYTHON" - "$T/tiny-$ty.gguf" <<'PY'
import sys, numpy as np
sys.path.insert(0, __import__("os").environ["top_srcdir"] + "/tools")
import kgguf
r = kgguf.Reader(sys.argv[1])
kv = {k: v[1] for k, v in r.kv.items()}
bad = []
need = ["general.architecture", "qwen35.block_count", "qwen35.context_length", "qwen35.embedding_length",
        "qwen35.feed_forward_length", "qwen35.attention.head_count", "qwen35.attention.head_count_kv",
        "qwen35.attention.key_length", "qwen35.attention.value_length",
        "qwen35.attention.layer_norm_rms_epsilon", "qwen35.rope.freq_base", "qwen35.rope.dimension_count",
        "qwen35.rope.dimension_sections", "qwen35.ssm.conv_kernel", "qwen35.ssm.state_size",
        "qwen35.ssm.group_count", "qwen35.ssm.time_step_rank", "qwen35.ssm.inner_size",
        "qwen35.full_attention_interval"]
bad += ["missing key " + k for k in need if k not in kv]
if kv.get("general.architecture") != "qwen35": bad.append("architecture %r" % kv.get("general.architecture"))
for t in r.tensors.values():
    a = t.array().astype(np.float64)
    if not np.all(np.isfinite(a)): bad.append(t.name + " not finite")
    if t.name.endswith(("attn_norm.weight", "post_attention_norm.weight", "output_norm.weight", "q_norm.weight", "k_norm.weight", "ssm_norm.weight")):
        if abs(a.mean() - 1) > 0.05 or a.std() > 0.2: bad.append("%s: norm mean %.3f std %.3f, want ~1" % (t.name, a.mean(), a.std()))
    elif t.name.endswith("ssm_a"):
        if not (np.all(a <= -1 + 1e-6) and np.all(a >= -16 - 1e-4)): bad.append("%s: %s outside [-16, -1]" % (t.name, a))
    elif t.name.endswith("ssm_dt.bias"):
        if not np.all((a > -7.5) & (a < -2.0)): bad.append("%s: %s" % (t.name, a))
    elif len(t.ne) == 2 and not t.name.endswith("ssm_conv1d.weight"):
        want = 1 / np.sqrt(t.ne[0])
        if abs(a.std() / want - 1) > 0.15 or abs(a.mean()) > 0.2 * want:
            bad.append("%s: mean %.4f std %.4f, want 0 / %.4f" % (t.name, a.mean(), a.std(), want))
print("\n".join(bad) if bad else "ok")
PY
    is "ok" "$OUT" "tiny-$ty: metadata keys and value scales (norms ~1, ssm_a in [-16,-1], std ~ 1/sqrt(fan_in))"
  else
    echo "ok $((_tap_n + 1)) # SKIP no python3 with numpy"; _tap_n=$((_tap_n + 1))
    echo "ok $((_tap_n + 1)) # SKIP no python3 with numpy"; _tap_n=$((_tap_n + 1))
  fi
  # the CPU engine runs it: finite top-3 logits at every position
  run_cmd "$KESTREL_EVAL" logits --engine cpu --model "$T/tiny-$ty.gguf" --tokens 1,2,3,500 --top 3
  is 0 "$RC" "logits on tiny-$ty: exit code"
  ok '[ "$(printf "%s\n" "$OUT" | grep -c "^pos [0-3]:")" -eq 4 ] && ! printf "%s\n" "$OUT" | grep -Eqi "nan|inf"' \
    "logits on tiny-$ty: 4 positions, all finite"
done

# determinism
"$KESTREL_EVAL" gen-model --preset tiny --type q4_0 --seed 7 -o "$T/again.gguf" >/dev/null 2>&1
is "$(sha "$T/tiny-q4_0.gguf")" "$(sha "$T/again.gguf")" "same seed -> same sha256"
"$KESTREL_EVAL" gen-model --preset tiny --type q4_0 --seed 8 -o "$T/other.gguf" >/dev/null 2>&1
ok '[ "$(sha "$T/tiny-q4_0.gguf")" != "$(sha "$T/other.gguf")" ]' "other seed -> other sha256"
# a shape big enough that tensors span several 4 MiB chunks: thread count must not change the bytes
for j in 1 3; do
  run_cmd "$KESTREL_EVAL" gen-model --preset qwen3.5-2b --type q8_0 --layers 1 --vocab 4096 --seed 3 -j $j -o "$T/2b-j$j.gguf"
  is 0 "$RC" "gen-model qwen3.5-2b --layers 1 -j $j: exit code"
done
is "$(sha "$T/2b-j1.gguf")" "$(sha "$T/2b-j3.gguf")" "-j 1 and -j 3 write the same bytes"
run_cmd "$KESTREL_EVAL" inspect "$T/2b-j3.gguf"
like "$OUT" "token_embd.weight" "qwen3.5-2b (tied): inspect lists token_embd.weight"
ok '! printf "%s\n" "$OUT" | grep -q "output\.weight"' "qwen3.5-2b (tied): no output.weight"
rm -f "$T"/2b-j*.gguf
ok '[ -z "$(ls "$T" | grep "\.tmp")" ]' "no temporary files left behind"
done_testing
