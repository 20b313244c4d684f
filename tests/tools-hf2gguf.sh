#!/bin/sh
# tools-hf2gguf.sh - tools/hf2gguf.py on tiny fake HF checkpoints written here with numpy:
# text-only, multimodal (language_model.* + skipped visual/mtp), sharded, BF16, tied; names,
# shapes, metadata and every transform (v-head tiling, 1 + w norms, ssm_a = -exp(A_log), conv
# squeeze); output types per --type; error cases (exit 2, exact message, no output); and the
# committed fixtures re-convert byte for byte from their HF directories.
. "$top_srcdir/tests/lib.sh"
need_python

cat >"$T/checks.py" <<'EOF'
import json, os, struct, subprocess, sys
import numpy as np
TOOLS, T = sys.argv[1], sys.argv[2]
FIX = sys.argv[3]
PY = sys.executable
sys.path.insert(0, TOOLS)
import kgguf as k

def check(desc, expected, actual):
    print("%s\t%s\t%s" % (desc, expected, actual))

def write_st(path, tensors):
    """tensors: list of (name, float32 array, dtype 'F32'|'F16'|'BF16'|'I64') -> a safetensors file."""
    hdr, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a, dt in tensors:
        if dt == "F32":
            b = np.asarray(a, "<f4").tobytes()
        elif dt == "F16":
            b = np.asarray(a, np.float32).astype("<f2").tobytes()
        elif dt == "BF16":   # truncation is fine here: the test compares against these exact bf16 values
            b = (np.asarray(a, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        else:
            b = np.asarray(a, "<i8").tobytes()
        hdr[name] = {"dtype": dt, "shape": list(np.shape(a)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

def bf16(a):
    return (np.asarray(a, np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)

# tiny model: D 32, V 64, F 64, 4 layers (3 GDN + 1 attention), H 2, Hkv 1, hd 32,
# GDN kh 2, vh 6 (3 v-heads per k-head), kd 32, vd 32 -> conv_dim 2*2*32 + 6*32 = 320
D, V, F, L, H, HKV, HD, KH, VH, KD, VD, K = 32, 64, 64, 4, 2, 1, 32, 2, 6, 32, 32, 4
CD = 2 * KH * KD + VH * VD
cfg = {"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", "vocab_size": V,
       "hidden_size": D, "intermediate_size": F, "num_hidden_layers": L, "num_attention_heads": H,
       "num_key_value_heads": HKV, "head_dim": HD, "linear_num_key_heads": KH, "linear_num_value_heads": VH,
       "linear_key_head_dim": KD, "linear_value_head_dim": VD, "linear_conv_kernel_dim": K,
       "rms_norm_eps": 1e-6, "max_position_embeddings": 2048, "tie_word_embeddings": False,
       "layer_types": ["linear_attention"] * 3 + ["full_attention"],
       "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25,
                           "mrope_section": [11, 11, 10], "mrope_interleaved": True}}
rng = np.random.default_rng(5)
def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)
W = {"embed_tokens.weight": r(V, D), "norm.weight": r(D)}
for i in range(L):
    p = "layers.%d." % i
    W[p + "input_layernorm.weight"] = r(D)
    W[p + "post_attention_layernorm.weight"] = r(D)
    W[p + "mlp.gate_proj.weight"] = r(F, D)
    W[p + "mlp.up_proj.weight"] = r(F, D)
    W[p + "mlp.down_proj.weight"] = r(D, F)
    if i < 3:
        la = p + "linear_attn."
        W[la + "in_proj_qkv.weight"] = r(CD, D)
        W[la + "in_proj_z.weight"] = r(VH * VD, D)
        W[la + "in_proj_a.weight"] = r(VH, D)
        W[la + "in_proj_b.weight"] = r(VH, D)
        W[la + "conv1d.weight"] = r(CD, 1, K)
        W[la + "dt_bias"] = r(VH)
        W[la + "A_log"] = r(VH)
        W[la + "norm.weight"] = r(VD)
        W[la + "out_proj.weight"] = r(D, VH * VD)
    else:
        sa = p + "self_attn."
        W[sa + "q_proj.weight"] = r(2 * H * HD, D)
        W[sa + "k_proj.weight"] = r(HKV * HD, D)
        W[sa + "v_proj.weight"] = r(HKV * HD, D)
        W[sa + "o_proj.weight"] = r(D, H * HD)
        W[sa + "q_norm.weight"] = r(HD)
        W[sa + "k_norm.weight"] = r(HD)
LM = r(V, D)

def make(name, prefix="model.", config=None, dtype="F32", shards=1, extra=(), drop=(), lm=True, mutate=None):
    d = os.path.join(T, name)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config or cfg, f)
    ts = [(prefix + n, a, dtype) for n, a in W.items() if prefix + n not in drop]
    if lm:
        ts.append(("lm_head.weight", LM, dtype))
    ts += list(extra)
    if mutate:
        ts = mutate(ts)
    if shards == 1:
        write_st(os.path.join(d, "model.safetensors"), ts)
    else:
        wmap = {}
        for s in range(shards):
            fn = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = ts[s::shards]
            write_st(os.path.join(d, fn), part)
            wmap.update({n: fn for n, _, _ in part})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": wmap}, f)
    return d

def conv(d, out, typ="f32", name="tiny"):
    p = subprocess.run([PY, os.path.join(TOOLS, "hf2gguf.py"), d, "-o", out, "--type", typ, "--name", name],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stderr.strip()

# ---- text-only layout, f32 -------------------------------------------------------------------
d = make("text")
rc, err = conv(d, T + "/text.gguf")
check("text-only: exit 0", "0", "%d%s" % (rc, " " + err if rc else ""))
g = k.Reader(T + "/text.gguf")
t = g.tensors
names0 = ("attn_norm.weight attn_qkv.weight attn_gate.weight ssm_conv1d.weight ssm_dt.bias ssm_a "
          "ssm_beta.weight ssm_alpha.weight ssm_norm.weight ssm_out.weight post_attention_norm.weight "
          "ffn_gate.weight ffn_up.weight ffn_down.weight").split()
names3 = ("attn_norm.weight attn_q.weight attn_k.weight attn_v.weight attn_output.weight attn_q_norm.weight "
          "attn_k_norm.weight post_attention_norm.weight ffn_gate.weight ffn_up.weight ffn_down.weight").split()
want = (["token_embd.weight"] + ["blk.%d.%s" % (i, n) for i in range(3) for n in names0] +
        ["blk.3." + n for n in names3] + ["output_norm.weight", "output.weight"])
check("tensor names and order", " ".join(want), " ".join(t))
shapes = {"token_embd.weight": (D, V), "output.weight": (D, V), "blk.0.attn_qkv.weight": (D, CD),
          "blk.0.attn_gate.weight": (D, VH * VD), "blk.0.ssm_conv1d.weight": (K, CD), "blk.0.ssm_dt.bias": (VH,),
          "blk.0.ssm_a": (VH,), "blk.0.ssm_beta.weight": (D, VH), "blk.0.ssm_alpha.weight": (D, VH),
          "blk.0.ssm_norm.weight": (VD,), "blk.0.ssm_out.weight": (VH * VD, D), "blk.0.ffn_down.weight": (F, D),
          "blk.3.attn_q.weight": (D, 2 * H * HD), "blk.3.attn_k.weight": (D, HKV * HD),
          "blk.3.attn_output.weight": (H * HD, D), "blk.3.attn_q_norm.weight": (HD,)}
for n, ne in shapes.items():
    check("ggml ne of %s" % n, str(ne), str(t[n].ne))
kv = {"general.architecture": "qwen35", "general.name": "tiny", "general.file_type": 0, "general.alignment": 32,
      "qwen35.block_count": 4, "qwen35.context_length": 2048, "qwen35.embedding_length": D,
      "qwen35.feed_forward_length": F, "qwen35.attention.head_count": H, "qwen35.attention.head_count_kv": HKV,
      "qwen35.attention.key_length": HD, "qwen35.attention.value_length": HD,
      "qwen35.rope.dimension_count": 8, "qwen35.rope.dimension_sections": [11, 11, 10, 0],
      "qwen35.ssm.conv_kernel": K, "qwen35.ssm.state_size": KD, "qwen35.ssm.group_count": KH,
      "qwen35.ssm.time_step_rank": VH, "qwen35.ssm.inner_size": VH * VD, "qwen35.full_attention_interval": 4,
      "qwen35.rope.freq_base": 1e7, "qwen35.attention.layer_norm_rms_epsilon": float(np.float32(1e-6))}
for key, v in kv.items():
    check("metadata %s" % key, repr(v), repr(g.value(key)))
check("rope.dimension_sections is an i32 array", str(k.INT32), str(g.kv["qwen35.rope.dimension_sections"][1][0]))

# grouped -> tiled with kh 2, vh 6: tiled head j*kh + k is grouped head k*3 + j, i.e. the
# tiled order of grouped heads is [0, 3, 1, 4, 2, 5] (worked out by hand)
perm = [0, 3, 1, 4, 2, 5]
rows = np.concatenate([np.arange(h * VD, (h + 1) * VD) for h in perm])
la = "layers.1.linear_attn."
A = lambda n: t[n].array()
eq = lambda a, b: str(bool(np.array_equal(a, b)))
check("ssm_a = -exp(A_log), tiled", "True",
      str(bool(np.allclose(A("blk.1.ssm_a"), -np.exp(W[la + "A_log"].astype(np.float64))[perm], rtol=1e-7, atol=0))))
check("ssm_dt.bias = dt_bias tiled", "True", eq(A("blk.1.ssm_dt.bias"), W[la + "dt_bias"][perm]))
check("ssm_beta rows tiled", "True", eq(A("blk.1.ssm_beta.weight"), W[la + "in_proj_b.weight"][perm]))
check("ssm_alpha rows tiled", "True", eq(A("blk.1.ssm_alpha.weight"), W[la + "in_proj_a.weight"][perm]))
check("attn_gate rows tiled in blocks of vd", "True", eq(A("blk.1.attn_gate.weight"), W[la + "in_proj_z.weight"][rows]))
qkv = W[la + "in_proj_qkv.weight"]
check("attn_qkv: q and k rows unchanged", "True", eq(A("blk.1.attn_qkv.weight")[:2 * KH * KD], qkv[:2 * KH * KD]))
check("attn_qkv: v rows tiled", "True", eq(A("blk.1.attn_qkv.weight")[2 * KH * KD:], qkv[2 * KH * KD:][rows]))
cw = W[la + "conv1d.weight"][:, 0, :]
check("ssm_conv1d squeezed, qk channels unchanged", "True", eq(A("blk.1.ssm_conv1d.weight")[:2 * KH * KD], cw[:2 * KH * KD]))
check("ssm_conv1d v channels tiled", "True", eq(A("blk.1.ssm_conv1d.weight")[2 * KH * KD:], cw[2 * KH * KD:][rows]))
check("ssm_out columns tiled", "True", eq(A("blk.1.ssm_out.weight"), W[la + "out_proj.weight"][:, rows]))
check("ssm_norm stored raw", "True", eq(A("blk.1.ssm_norm.weight"), W[la + "norm.weight"]))
for gn, hn in [("blk.1.attn_norm.weight", "layers.1.input_layernorm.weight"),
               ("blk.1.post_attention_norm.weight", "layers.1.post_attention_layernorm.weight"),
               ("blk.3.attn_q_norm.weight", "layers.3.self_attn.q_norm.weight"),
               ("blk.3.attn_k_norm.weight", "layers.3.self_attn.k_norm.weight"),
               ("output_norm.weight", "norm.weight")]:
    check("%s = 1 + w" % gn, "True", eq(A(gn), W[hn] + np.float32(1)))
check("attn_q keeps HF's [q | gate] rows", "True", eq(A("blk.3.attn_q.weight"), W["layers.3.self_attn.q_proj.weight"]))
check("ffn_down unchanged", "True", eq(A("blk.0.ffn_down.weight"), W["layers.0.mlp.down_proj.weight"]))
check("output = lm_head", "True", eq(A("output.weight"), LM))
check("all f32", "{0}", str(set(x.type for x in t.values())))
ref = open(T + "/text.gguf", "rb").read()

# ---- multimodal layout (language_model prefix; visual and mtp weights skipped) ------------------
mm = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": dict(cfg),
      "vision_config": {"depth": 1}, "tie_word_embeddings": False}
del mm["text_config"]["architectures"]
mm["text_config"]["model_type"] = "qwen3_5_text"
d = make("mm", prefix="model.language_model.", config=mm,
         extra=[("model.visual.blocks.0.attn.qkv.weight", r(96, 32), "F32"), ("mtp.fc.weight", r(32, 64), "F32"),
                ("model.visual.pos_ids", np.arange(4), "I64")])
rc, err = conv(d, T + "/mm.gguf")
check("multimodal: exit 0", "0", "%d%s" % (rc, " " + err if rc else ""))
check("multimodal: byte-identical to the text-only conversion", "True", str(rc == 0 and open(T + "/mm.gguf", "rb").read() == ref))

# ---- sharded --------------------------------------------------------------------------------------
d = make("sharded", shards=3)
rc, err = conv(d, T + "/sh.gguf")
check("sharded (3 files + index): exit 0", "0", "%d%s" % (rc, " " + err if rc else ""))
check("sharded: byte-identical to the single-file conversion", "True", str(rc == 0 and open(T + "/sh.gguf", "rb").read() == ref))

# ---- bf16 source ----------------------------------------------------------------------------------
d = make("bf16", dtype="BF16")
rc, err = conv(d, T + "/bf.gguf")
check("bf16 source: exit 0", "0", "%d%s" % (rc, " " + err if rc else ""))
tb = k.Reader(T + "/bf.gguf").tensors
check("bf16: matrices are the exact bf16 values", "True", eq(tb["blk.0.ffn_up.weight"].array(), bf16(W["layers.0.mlp.up_proj.weight"])))
check("bf16: 1 + w rounded to bf16 (as llama.cpp does it in the source dtype)", "True",
      eq(tb["blk.0.attn_norm.weight"].array(),
         k.bf16_to_f32(k.f32_to_bf16(np.float32(1) + bf16(W["layers.0.input_layernorm.weight"])))))
check("bf16: ssm_a = bf16(-exp(A_log)) tiled", "True",
      eq(tb["blk.1.ssm_a"].array(), k.bf16_to_f32(k.f32_to_bf16(
          (-np.exp(bf16(W[la + "A_log"]).astype(np.float64))).astype(np.float32)))[perm]))

# ---- f16 source ------------------------------------------------------------------------------
d = make("f16src", dtype="F16")
rc, err = conv(d, T + "/f16src.gguf")
th = k.Reader(T + "/f16src.gguf").tensors
f16 = lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
check("f16 source: exit 0, matrices are the exact f16 values", "0 True",
      "%d %s" % (rc, np.array_equal(th["blk.0.ffn_up.weight"].array(), f16(W["layers.0.mlp.up_proj.weight"]))))
check("f16 source: 1 + w rounded to f16", "True",
      eq(th["output_norm.weight"].array(), f16(np.float32(1) + f16(W["norm.weight"]))))

# ---- output types ---------------------------------------------------------------------------------
for typ, gt in [("q8_0", k.Q8_0), ("q4_0", k.Q4_0), ("f16", k.F16), ("bf16", k.BF16)]:
    rc, err = conv(os.path.join(T, "text"), T + "/%s.gguf" % typ, typ)
    tq = k.Reader(T + "/%s.gguf" % typ)
    types = {n: x.type for n, x in tq.tensors.items()}
    mats = [n for n in types if len(tq.tensors[n].shape) == 2 and "ssm_conv1d" not in n]
    check("%s: exit 0, every 2-D matrix %s" % (typ, typ), "0 True", "%d %s" % (rc, all(types[n] == gt for n in mats)))
    check("%s: ssm_conv1d, norms, ssm_a, ssm_dt stay f32" % typ, "True",
          str(all(types[n] == k.F32 for n in types if n not in mats)))
    check("%s: general.file_type" % typ, str({"q8_0": 7, "q4_0": 2, "f16": 1, "bf16": 32}[typ]), str(tq.value("general.file_type")))
    if typ in ("q8_0", "q4_0"):
        qf = k.quantize_q8_0 if typ == "q8_0" else k.quantize_q4_0
        check("%s: ffn_gate bytes = reference quantiser" % typ, "True",
              eq(tq.tensors["blk.0.ffn_gate.weight"].data, qf(W["layers.0.mlp.gate_proj.weight"]).reshape(-1)))
        check("%s: attn_qkv bytes = quantiser of the tiled matrix" % typ, "True",
              eq(tq.tensors["blk.1.attn_qkv.weight"].data, qf(A("blk.1.attn_qkv.weight")).reshape(-1)))

# ---- tied embeddings ----------------------------------------------------------------------------
tied = dict(cfg, tie_word_embeddings=True)
d = make("tied", config=tied, lm=False)
rc, err = conv(d, T + "/tied.gguf")
check("tied: exit 0 and no output.weight", "0 False", "%d %s" % (rc, "output.weight" in k.Reader(T + "/tied.gguf").tensors if rc == 0 else err))

# ---- errors: exit 2, one exact line, no output ----------------------------------------------------
def bad(desc, d, message):
    out = T + "/bad.gguf"
    rc, err = conv(d, out)
    check(desc + ": exit 2", "2", str(rc))
    check(desc + ": message", "hf2gguf.py: " + message, err)
    check(desc + ": no output, no .tmp", "False False", "%s %s" % (os.path.exists(out), os.path.exists(out + ".tmp")))

d = make("missing", drop=("model.layers.3.self_attn.k_norm.weight",))
bad("missing tensor", d, "%s/model.safetensors: missing tensor 'model.layers.3.self_attn.k_norm.weight'" % d)
d = make("nolm", lm=False)
bad("missing lm_head when untied", d, "%s/model.safetensors: missing tensor 'lm_head.weight'" % d)
d = make("arch", config=dict(cfg, architectures=["LlamaForCausalLM"], model_type="llama"))
bad("unsupported architecture", d, "%s/config.json: unsupported architecture 'LlamaForCausalLM' (key 'architectures')" % d)
d = make("shape", mutate=lambda ts: [(n, a[:, :, :3] if n.endswith("layers.0.linear_attn.conv1d.weight") else a, dt) for n, a, dt in ts])
bad("unexpected shape", d, "%s/model.safetensors: tensor 'model.layers.0.linear_attn.conv1d.weight' has shape [320, 1, 3], expected [320, 1, 4]" % d)
d = make("dtype", mutate=lambda ts: [(n, a, "I64" if n.endswith("layers.2.linear_attn.dt_bias") else dt) for n, a, dt in ts])
bad("bad dtype", d, "%s/model.safetensors: tensor 'model.layers.2.linear_attn.dt_bias' has unsupported dtype I64 (F32, F16, BF16 only)" % d)
d = make("layers", config=dict(cfg, layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention"]))
bad("unsupported layer pattern", d, "%s/config.json: unsupported layer_types (full_attention must be exactly every n-th layer, layers n-1, 2n-1, ...) (key 'layer_types')" % d)
os.makedirs(T + "/empty")
with open(T + "/empty/config.json", "w") as f:
    json.dump(cfg, f)
bad("no weights", T + "/empty", "%s/empty: no model.safetensors or model.safetensors.index.json" % T)
with open(T + "/exists.gguf", "w") as f:
    f.write("keep")
rc, err = conv(T + "/missing", T + "/exists.gguf")
check("a failed conversion leaves an existing output untouched", "2 keep", "%d %s" % (rc, open(T + "/exists.gguf").read()))

# ---- committed fixtures re-convert byte for byte ----------------------------------------------------
for m in ("mini27", "minivk", "minitied"):
    if not os.path.isdir(os.path.join(FIX, m + ".hf")):
        continue
    for typ in ("f32", "q8_0", "q4_0"):
        out = "%s/%s-%s.gguf" % (T, m, typ)
        p = subprocess.run([PY, os.path.join(TOOLS, "hf2gguf.py"), os.path.join(FIX, m + ".hf"), "-o", out, "--type", typ],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        same = p.returncode == 0 and open(out, "rb").read() == open("%s/%s-%s.gguf" % (FIX, m, typ), "rb").read()
        check("fixture %s-%s.gguf re-converts byte-identically from %s.hf" % (m, typ, m), "True", str(same))
EOF

py_checks "$T/checks.py" "$top_srcdir/tools" "$T" "$FIX"
done_testing
