#!/bin/sh
# tools-oracle.sh - the committed oracle dumps (tests/fixtures/NAME.oracle.gguf.zst): format
# (keys, provenance, every tensor's shape, greedy tokens = argmax of their logits rows) and an
# independent float64 numpy forward pass of NAME-f32.gguf (llama.cpp layout: tiled v-heads,
# 1 + w norms, ssm_a) that must reproduce the oracle's hidden states, final hidden and logits,
# teacher-forced and along the greedy continuation.  This ties converter and exporter together:
# a wrong transform in either shows up as an O(1) error.  Also export_oracle.py's numpy side
# (prompt specs, the dump writer), which runs without torch.
. "$top_srcdir/tests/lib.sh"
need_python
command -v zstd >/dev/null 2>&1 || skip_all "no zstd command to read the .zst dumps"

cat >"$T/checks.py" <<'PYEOF'
import hashlib, json, os, sys
import numpy as np
TOOLS, FIX = sys.argv[1], sys.argv[2]
sys.path.insert(0, TOOLS)
import kgguf

def check(desc, expected, actual):
    print("%s\t%s\t%s" % (desc, expected, actual))

TOL = 1e-5   # f32 GGUF weights == the HF float32 weights; the oracle ran in float64 (f32 inside norms/GDN)

def forward(m, tokens):
    """m: kgguf.Reader of a qwen35 GGUF; tokens (T,) -> (hidden (L, T, D), hfinal (T, D), logits (T, V)), float64."""
    kv = lambda k: m.value("qwen35." + k)
    W = lambda n: m.tensors[n].array().astype(np.float64)
    L, D, eps = kv("block_count"), kv("embedding_length"), kv("attention.layer_norm_rms_epsilon")
    H, Hkv, hd, rd = kv("attention.head_count"), kv("attention.head_count_kv"), kv("attention.key_length"), kv("rope.dimension_count")
    K, kd, kh, vh = kv("ssm.conv_kernel"), kv("ssm.state_size"), kv("ssm.group_count"), kv("ssm.time_step_rank")
    vd, interval, theta = kv("ssm.inner_size") // vh, kv("full_attention_interval"), kv("rope.freq_base")
    rms = lambda x, w: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps) * w
    silu = lambda x: x / (1 + np.exp(-x))
    T = len(tokens)
    x = W("token_embd.weight")[tokens]                      # (T, D)
    hidden = []
    for l in range(L):
        b = "blk.%d." % l
        xn = rms(x, W(b + "attn_norm.weight"))
        if (l + 1) % interval:
            qkv = xn @ W(b + "attn_qkv.weight").T               # (T, conv_dim)
            z = (xn @ W(b + "attn_gate.weight").T).reshape(T, vh, vd)
            beta = 1 / (1 + np.exp(-(xn @ W(b + "ssm_beta.weight").T)))   # (T, vh)
            a = xn @ W(b + "ssm_alpha.weight").T + W(b + "ssm_dt.bias")
            g = W(b + "ssm_a") * np.logaddexp(0, a)             # (T, vh)
            cw = W(b + "ssm_conv1d.weight")                     # (conv_dim, K)
            pad = np.concatenate([np.zeros((K - 1, qkv.shape[1])), qkv])
            c = silu(sum(pad[j:j + T] * cw[:, j] for j in range(K)))
            q = c[:, :kh * kd].reshape(T, kh, kd)
            k = c[:, kh * kd:2 * kh * kd].reshape(T, kh, kd)
            v = c[:, 2 * kh * kd:].reshape(T, vh, vd)
            q = q / np.sqrt(np.sum(q * q, -1, keepdims=True) + 1e-6) / np.sqrt(kd)
            k = k / np.sqrt(np.sum(k * k, -1, keepdims=True) + 1e-6)
            kmap = np.arange(vh) % kh                           # tiled: v-head h uses k-head h % kh
            S = np.zeros((vh, kd, vd))
            o = np.zeros((T, vh, vd))
            for t in range(T):
                S *= np.exp(g[t])[:, None, None]
                kk, qq = k[t][kmap], q[t][kmap]                 # (vh, kd)
                delta = (v[t] - np.einsum("hkv,hk->hv", S, kk)) * beta[t][:, None]
                S += kk[:, :, None] * delta[:, None, :]
                o[t] = np.einsum("hkv,hk->hv", S, qq)
            o = rms(o, W(b + "ssm_norm.weight")) * silu(z)
            out = o.reshape(T, vh * vd) @ W(b + "ssm_out.weight").T
        else:
            qg = (xn @ W(b + "attn_q.weight").T).reshape(T, H, 2 * hd)
            q, gate = qg[..., :hd], qg[..., hd:].reshape(T, H * hd)
            k = (xn @ W(b + "attn_k.weight").T).reshape(T, Hkv, hd)
            v = (xn @ W(b + "attn_v.weight").T).reshape(T, Hkv, hd)
            q, k = rms(q, W(b + "attn_q_norm.weight")), rms(k, W(b + "attn_k_norm.weight"))
            inv = theta ** (-np.arange(0, rd, 2) / rd)
            ang = np.arange(T)[:, None] * inv[None, :]
            cos, sin = np.cos(np.concatenate([ang, ang], 1))[:, None], np.sin(np.concatenate([ang, ang], 1))[:, None]
            rot = lambda y: np.concatenate([-y[..., rd // 2:rd], y[..., :rd // 2]], -1)
            q = np.concatenate([q[..., :rd] * cos + rot(q) * sin, q[..., rd:]], -1)
            k = np.concatenate([k[..., :rd] * cos + rot(k) * sin, k[..., rd:]], -1)
            kvh = np.arange(H) // (H // Hkv)
            s = np.einsum("thd,shd->hts", q, k[:, kvh]) / np.sqrt(hd)
            s = np.where(np.tril(np.ones((T, T), bool))[None], s, -np.inf)
            p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
            o = np.einsum("hts,shd->thd", p, v[:, kvh]).reshape(T, H * hd)
            out = (o / (1 + np.exp(-gate))) @ W(b + "attn_output.weight").T
        x = x + out
        xn = rms(x, W(b + "post_attention_norm.weight"))
        x = x + (silu(xn @ W(b + "ffn_gate.weight").T) * (xn @ W(b + "ffn_up.weight").T)) @ W(b + "ffn_down.weight").T
        hidden.append(x)
    hf = rms(x, W("output_norm.weight"))
    out_w = W("output.weight") if "output.weight" in m.tensors else W("token_embd.weight")
    return np.stack(hidden), hf, hf @ out_w.T

def max_rel(a, ref):
    return float(np.max(np.abs(a - ref)) / np.max(np.abs(ref)))

# ---- export_oracle.py's numpy side (no torch needed): prompt specs and the dump writer ----------
import export_oracle as eo
ps = eo.parse_prompts("1,5,80", 256, 27)
check("prompt spec 1,5,80: lengths", "[1, 5, 80]", str([len(p) for p in ps]))
check("prompt spec: seeded (same seed, same tokens)", "True",
      str(all(np.array_equal(a, b) for a, b in zip(ps, eo.parse_prompts("1,5,80", 256, 27)))))
check("prompt spec: tokens inside the vocabulary", "True", str(all(p.min() >= 0 and p.max() < 256 for p in ps)))
o = kgguf.Reader(os.path.join(FIX, "mini27.oracle.gguf.zst"))
check("prompt spec: reproduces the committed mini27 prompts", "True",
      str(all(np.array_equal(ps[i], o.tensors["p%d.tokens" % i].array()) for i in range(3))))
def err(fn):
    try:
        fn()
    except eo.UserError as e:
        return str(e)
    return "no error"
check("prompt spec error", "--prompts: item 1 '0' is not a positive length", err(lambda: eo.parse_prompts("3,0", 16, 0)))
TMP = sys.argv[3]
with open(TMP + "/p.json", "w") as f:
    json.dump([[1, 2], [99]], f)
check("prompt file error names the file", TMP + "/p.json: prompt 1: expected a non-empty list of token ids in [0, 16)",
      err(lambda: eo.parse_prompts("@" + TMP + "/p.json", 16, 0)))
rng = np.random.default_rng(0)
Lx, Dx, Vx = 2, 32, 16
res = [dict(tokens=np.array([3, 4, 5]), logits=rng.standard_normal((3, Vx)), hidden=rng.standard_normal((Lx, 3, Dx)),
            hfinal=rng.standard_normal((3, Dx)), greedy_tokens=np.array([7, 1]), greedy_logits=rng.standard_normal((2, Vx))),
       dict(tokens=np.array([9]), logits=rng.standard_normal((1, Vx)), hidden=rng.standard_normal((Lx, 1, Dx)),
            hfinal=rng.standard_normal((1, Dx)), greedy_tokens=np.zeros(0, np.int64), greedy_logits=np.zeros((0, Vx)))]
prov = dict(transformers_version="t", torch_version="u", dtype="float64", config="{}", seed="3",
            hf_model_sha256="0" * 64, created_at="2026-01-01T00:00:00Z")
eo.write_dump(TMP + "/d.gguf.zst", res, Lx, Dx, Vx, prov)
d = kgguf.Reader(TMP + "/d.gguf.zst")
check("write_dump: .zst written, plain file removed", "True False",
      "%s %s" % (os.path.exists(TMP + "/d.gguf.zst"), os.path.exists(TMP + "/d.gguf")))
check("write_dump: tensor list (greedy tensors absent when N = 0)",
      "p0.tokens p0.logits p0.h.0 p0.h.1 p0.hfinal p0.greedy.tokens p0.greedy.logits p1.tokens p1.logits p1.h.0 p1.h.1 p1.hfinal",
      " ".join(d.tensors))
check("write_dump: logits ne {V, T} and values (f32)", "(16, 3) True",
      "%s %s" % (d.tensors["p0.logits"].ne, np.array_equal(d.tensors["p0.logits"].array(), res[0]["logits"].astype(np.float32))))
check("write_dump: h.1 is hidden[1]", "True", str(np.array_equal(d.tensors["p0.h.1"].array(), res[0]["hidden"][1].astype(np.float32))))
check("write_dump: provenance and counts", "kestrel-oracle 1 2 2 32 16 3 float64",
      " ".join(str(d.value(k)) for k in ("general.architecture", "kestrel.oracle.version", "kestrel.oracle.n_prompts",
                                          "kestrel.oracle.n_layers", "kestrel.oracle.n_embd", "kestrel.oracle.n_vocab",
                                          "kestrel.oracle.seed", "kestrel.oracle.dtype")))
res[1]["hfinal"] = np.zeros((2, Dx))
check("write_dump: shape mismatch is an error, nothing written",
      TMP + "/e.gguf: prompt 1: hfinal has shape (2, 32), expected (1, 32) False",
      err(lambda: eo.write_dump(TMP + "/e.gguf", res, Lx, Dx, Vx, prov)) + " " + str(os.path.exists(TMP + "/e.gguf")))

SEEDS = {"mini27": "27", "minivk": "11", "minitied": "7"}
for name in ("mini27", "minivk", "minitied"):
    o = kgguf.Reader(os.path.join(FIX, name + ".oracle.gguf.zst"))
    m = kgguf.Reader(os.path.join(FIX, name + "-f32.gguf"))
    L, D = m.value("qwen35.block_count"), m.value("qwen35.embedding_length")
    V = m.tensors["token_embd.weight"].shape[0]
    check("%s: architecture" % name, "kestrel-oracle", o.value("general.architecture"))
    check("%s: version, prompts, layers, embd, vocab" % name, "1 3 %d %d %d" % (L, D, V),
          " ".join(str(o.value("kestrel.oracle." + key)) for key in ("version", "n_prompts", "n_layers", "n_embd", "n_vocab")))
    prov = {key: o.value("kestrel.oracle." + key) for key in
            ("transformers_version", "torch_version", "dtype", "config", "seed", "hf_model_sha256", "created_at")}
    check("%s: provenance: seed" % name, SEEDS[name], prov["seed"])
    check("%s: provenance: versions, dtype, sha256 and date present" % name, "True",
          str(all(prov[key] for key in prov) and len(prov["hf_model_sha256"]) == 64 and prov["dtype"].startswith("float")))
    cfg = json.loads(prov["config"])
    check("%s: provenance config matches the GGUF" % name, "%d %d %d" % (L, D, V),
          "%s %s %s" % (cfg.get("num_hidden_layers"), cfg.get("hidden_size"), cfg.get("vocab_size")))
    hf = os.path.join(FIX, name + ".hf", "model.safetensors")
    if os.path.exists(hf):
        check("%s: hf_model_sha256 is the committed model.safetensors" % name, prov["hf_model_sha256"],
              hashlib.sha256(open(hf, "rb").read()).hexdigest())
    for i, T in enumerate((1, 5, 80)):
        t = o.tensors
        p = "p%d." % i
        shapes = ["%s%s" % (n, t[p + n].ne if p + n in t else None) for n in
                  ["tokens", "logits", "hfinal", "greedy.tokens", "greedy.logits"] + ["h.%d" % l for l in range(L)]]
        want = ["tokens(%d,)" % T, "logits(%d, %d)" % (V, T), "hfinal(%d, %d)" % (D, T), "greedy.tokens(16,)",
                "greedy.logits(%d, 16)" % V] + ["h.%d(%d, %d)" % (l, D, T) for l in range(L)]
        check("%s p%d: tensors and shapes" % (name, i), " ".join(want), " ".join(shapes))
        check("%s p%d: types (i32 tokens, f32 rest)" % (name, i), "True",
              str(t[p + "tokens"].type == kgguf.I32 and t[p + "greedy.tokens"].type == kgguf.I32 and
                  all(t[p + n].type == kgguf.F32 for n in ["logits", "hfinal", "greedy.logits"])))
        tok = t[p + "tokens"].array()
        gt = t[p + "greedy.tokens"].array()
        gl = t[p + "greedy.logits"].array()
        check("%s p%d: greedy token j = argmax of greedy logits row j" % (name, i), str(gt.tolist()), str(gl.argmax(1).tolist()))
        lg = t[p + "logits"].array()
        check("%s p%d: greedy logits row 0 = last teacher-forced row (max_rel < %g)" % (name, i, TOL), "True",
              str(max_rel(gl[0], lg[-1]) < TOL))
        # independent forward over prompt + greedy tokens (teacher forcing the continuation)
        full = np.concatenate([tok, gt[:-1]])
        h, hfin, logits = forward(m, full)
        errs = [max_rel(h[l][:T], t[p + "h.%d" % l].array()) for l in range(L)]
        check("%s p%d: numpy forward of %s-f32.gguf: hidden states (max_rel < %g)" % (name, i, name, TOL),
              "True", "%s%s" % (max(errs) < TOL, "" if max(errs) < TOL else " %g" % max(errs)))
        e = max_rel(hfin[:T], t[p + "hfinal"].array())
        check("%s p%d: numpy forward: final hidden" % (name, i), "True", "%s%s" % (e < TOL, "" if e < TOL else " %g" % e))
        e = max_rel(logits[:T], lg)
        check("%s p%d: numpy forward: teacher-forced logits" % (name, i), "True", "%s%s" % (e < TOL, "" if e < TOL else " %g" % e))
        e = max_rel(logits[T - 1:], gl)
        check("%s p%d: numpy forward: greedy-step logits (HF cached decode path)" % (name, i), "True",
              "%s%s" % (e < TOL, "" if e < TOL else " %g" % e))
PYEOF

py_checks "$T/checks.py" "$top_srcdir/tools" "$FIX" "$T"
done_testing
