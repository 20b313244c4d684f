#!/usr/bin/env python3
"""export_oracle.py - write an oracle dump (docs/formats.md, src/lib/oracle.h) from HF transformers.

What it is for: the reference the engines are held to.  It runs a Qwen3.5 text model
(transformers `Qwen3_5ForCausalLM`) on CPU and records, per prompt, the teacher-forced logits,
the residual stream after every decoder layer, the final-normed hidden state, and a greedy
continuation made through the model's own cached decode path with each step's logits.
What it is not: a converter (tools/hf2gguf.py makes the engine's GGUF) or a benchmark.

  export_oracle.py --hf-dir DIR --prompts SPEC [--greedy N] -o DUMP.gguf[.zst]
  export_oracle.py --config CFG.json --seed S --write-hf DIR --prompts SPEC [--greedy N] -o DUMP...

--config builds a Qwen3_5ForCausalLM from Qwen3_5TextConfig(**CFG) with every parameter drawn
from numpy's default_rng(S) at a realistic scale (see randomise()), saves it with
save_pretrained(DIR) in float32, then runs it.  SPEC is a comma-separated list of prompt
lengths (tokens drawn uniformly from the vocabulary with default_rng(S + 1)) or `@FILE`,
a JSON list of token-id lists.  Runs in float64 when the modelling code accepts it (it
casts RMSNorm and the gated delta rule to float32 internally) and falls back to float32
with deterministic algorithms; the dtype used is recorded as kestrel.oracle.dtype.
Needs torch + transformers (>= 5) and numpy; the pure-numpy parts (prompt specs, the dump
writer) import nothing else, so they are testable without torch.
Errors: one line `export_oracle.py: <file>: <what>` and exit 2.
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kgguf  # noqa: E402

PROG = "export_oracle.py"


class UserError(Exception):
    pass


# ---------------------------------------------------------------------------------------
# pure numpy: prompts, hashing, the dump
# ---------------------------------------------------------------------------------------

def parse_prompts(spec, n_vocab, seed):
    """spec: "1,5,80" (random prompts of those lengths) or "@file.json" -> list of int64 arrays."""
    if spec.startswith("@"):
        path = spec[1:]
        try:
            with open(path) as f:
                lists = json.load(f)
        except (OSError, ValueError) as e:
            raise UserError("%s: cannot read prompt list (%s)" % (path, e))
        if not isinstance(lists, list) or not lists:
            raise UserError("%s: expected a non-empty JSON list of token-id lists" % path)
        out = []
        for i, p in enumerate(lists):
            if (not isinstance(p, list) or not p or
                    not all(isinstance(t, int) and 0 <= t < n_vocab for t in p)):
                raise UserError("%s: prompt %d: expected a non-empty list of token ids in [0, %d)"
                                % (path, i, n_vocab))
            out.append(np.array(p, dtype=np.int64))
        return out
    rng = np.random.default_rng(seed + 1)
    out = []
    for i, item in enumerate(spec.split(",")):
        try:
            n = int(item)
        except ValueError:
            n = 0
        if n <= 0:
            raise UserError("--prompts: item %d '%s' is not a positive length" % (i, item))
        out.append(rng.integers(0, n_vocab, size=n, dtype=np.int64))
    return out


def sha256_of_weights(hf_dir):
    """SHA-256 of model.safetensors; for a sharded model, of the shards' bytes in name order."""
    files = sorted(glob.glob(os.path.join(hf_dir, "*.safetensors")))
    if not files:
        raise UserError("%s: no *.safetensors files" % hf_dir)
    h = hashlib.sha256()
    for p in files:
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def write_dump(path, prompts, n_layers, n_embd, n_vocab, provenance):
    """prompts: list of dicts with numpy arrays
         tokens (T,) int, logits (T, V), hidden (L, T, D), hfinal (T, D),
         greedy_tokens (N,) int, greedy_logits (N, V);
       provenance: dict of strings (transformers_version, torch_version, dtype, config, seed,
       hf_model_sha256, created_at).  path ending in .zst: written uncompressed then compressed
       with the zstd command (-19), the plain file removed."""
    plain = path[:-4] if path.endswith(".zst") else path
    w = kgguf.Writer(plain)
    w.add("general.architecture", kgguf.STRING, "kestrel-oracle")
    w.add("general.alignment", kgguf.UINT32, kgguf.DEFAULT_ALIGNMENT)
    w.add("kestrel.oracle.version", kgguf.UINT32, 1)
    w.add("kestrel.oracle.n_prompts", kgguf.UINT32, len(prompts))
    w.add("kestrel.oracle.n_layers", kgguf.UINT32, n_layers)
    w.add("kestrel.oracle.n_embd", kgguf.UINT32, n_embd)
    w.add("kestrel.oracle.n_vocab", kgguf.UINT32, n_vocab)
    for key in ("transformers_version", "torch_version", "dtype", "config", "seed",
                "hf_model_sha256", "created_at"):
        w.add("kestrel.oracle." + key, kgguf.STRING, str(provenance.get(key, "")))
    for i, p in enumerate(prompts):
        T = len(p["tokens"])
        checks = [("logits", (T, n_vocab)), ("hidden", (n_layers, T, n_embd)), ("hfinal", (T, n_embd))]
        for k, shape in checks:
            if tuple(p[k].shape) != shape:
                raise UserError("%s: prompt %d: %s has shape %s, expected %s"
                                % (path, i, k, p[k].shape, shape))
        w.add_array("p%d.tokens" % i, np.asarray(p["tokens"], dtype=np.int32), kgguf.I32)
        w.add_array("p%d.logits" % i, np.asarray(p["logits"], dtype=np.float32), kgguf.F32)
        for l in range(n_layers):
            w.add_array("p%d.h.%d" % (i, l), np.asarray(p["hidden"][l], dtype=np.float32), kgguf.F32)
        w.add_array("p%d.hfinal" % i, np.asarray(p["hfinal"], dtype=np.float32), kgguf.F32)
        N = len(p["greedy_tokens"])
        if N:
            if tuple(p["greedy_logits"].shape) != (N, n_vocab):
                raise UserError("%s: prompt %d: greedy logits have shape %s, expected %s"
                                % (path, i, p["greedy_logits"].shape, (N, n_vocab)))
            w.add_array("p%d.greedy.tokens" % i, np.asarray(p["greedy_tokens"], dtype=np.int32), kgguf.I32)
            w.add_array("p%d.greedy.logits" % i, np.asarray(p["greedy_logits"], dtype=np.float32), kgguf.F32)
    w.write()
    if plain != path:
        tmp = path + ".tmp"
        try:
            subprocess.run(["zstd", "-q", "-f", "-19", plain, "-o", tmp], check=True)
            os.replace(tmp, path)
        except (OSError, subprocess.CalledProcessError) as e:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise UserError("%s: zstd failed (%s); the uncompressed dump is %s" % (path, e, plain))
        os.unlink(plain)


# ---------------------------------------------------------------------------------------
# torch side
# ---------------------------------------------------------------------------------------

def randomise(model, seed):
    """Overwrite every parameter of a Qwen3_5ForCausalLM from default_rng(seed), in name order:
       zero-centred norms (input/post-attention/final/q/k)  N(0, 0.1)   (HF applies 1 + w)
       linear_attn.norm (gated, plain w)                     1 + N(0, 0.1)
       A_log  log U(0.1, 4);  dt_bias  U(-3, 0.5);  conv1d  N(0, 0.3)
       embed_tokens  N(0, 1) (N(0, 0.5) when tied: it is also the output matrix)
       lm_head  N(0, 2/sqrt(D));  every other matrix  N(0, 1/sqrt(fan_in))
    so activations stay O(1) and the logits are far from flat."""
    import torch
    rng = np.random.default_rng(seed)
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    unknown = []
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            shape = tuple(p.shape)
            if name.endswith("linear_attn.norm.weight"):
                v = 1.0 + 0.1 * rng.standard_normal(shape)
            elif name.endswith("norm.weight"):
                v = 0.1 * rng.standard_normal(shape)
            elif name.endswith("A_log"):
                v = np.log(rng.uniform(0.1, 4.0, shape))
            elif name.endswith("dt_bias"):
                v = rng.uniform(-3.0, 0.5, shape)
            elif "conv1d" in name:
                v = 0.3 * rng.standard_normal(shape)
            elif name.endswith("embed_tokens.weight"):
                v = (0.5 if tied else 1.0) * rng.standard_normal(shape)
            elif name.endswith("lm_head.weight"):
                v = 2.0 / np.sqrt(shape[1]) * rng.standard_normal(shape)
            elif p.dim() == 2:
                v = rng.standard_normal(shape) / np.sqrt(shape[1])
            else:
                unknown.append(name)
                v = 0.1 * rng.standard_normal(shape)
            p.copy_(torch.from_numpy(np.asarray(v, dtype=np.float32)))
    if unknown:
        print("%s: warning: parameters with no rule got N(0, 0.1): %s" % (PROG, ", ".join(unknown)),
              file=sys.stderr)


def build_random(cfg_path, seed, hf_out):
    import torch
    import transformers
    try:
        with open(cfg_path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise UserError("%s: cannot read config (%s)" % (cfg_path, e))
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    config = Qwen3_5TextConfig(**cfg)
    torch.manual_seed(seed)
    model = Qwen3_5ForCausalLM(config).to(torch.float32)
    use_eager(model)
    randomise(model, seed)   # tied: lm_head shares embed_tokens' Parameter, set once
    model.save_pretrained(hf_out)
    print("%s: wrote %s (transformers %s)" % (PROG, hf_out, transformers.__version__), file=sys.stderr)
    return model


def use_eager(model):
    """Eager attention: plain matmul + softmax, any dtype, deterministic."""
    try:
        model.set_attn_implementation("eager")
    except (AttributeError, ValueError, TypeError) as e:
        print("%s: note: keeping attention %s (%s)" % (PROG, getattr(model.config, "_attn_implementation", "?"), e),
              file=sys.stderr)


def load_hf(hf_dir):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    if not os.path.isfile(os.path.join(hf_dir, "config.json")):
        raise UserError("%s: no config.json" % hf_dir)
    AutoConfig.from_pretrained(hf_dir)
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager")
    return model


def text_parts(model):
    """-> (decoder layers, final norm, text config) for ForCausalLM or ForConditionalGeneration."""
    inner = model.model
    lm = getattr(inner, "language_model", inner)
    cfg = getattr(model.config, "text_config", model.config)
    return lm.layers, lm.norm, cfg


def run_prompt(model, tokens, n_greedy, dtype):
    """tokens: (T,) int64 -> dict of numpy arrays (see write_dump) plus self-check numbers."""
    import torch
    layers, norm, cfg = text_parts(model)
    L = len(layers)
    captured = {}

    def grab(key):
        def hook(_mod, _inp, out):
            captured[key] = (out[0] if isinstance(out, (tuple, list)) else out).detach()
        return hook

    handles = [layers[l].register_forward_hook(grab(l)) for l in range(L)]
    handles.append(norm.register_forward_hook(grab("final")))
    ids = torch.from_numpy(np.asarray(tokens, dtype=np.int64))[None, :]
    try:
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    logits = out.logits[0].to(torch.float64).numpy()                        # (T, V)
    hidden = np.stack([captured[l][0].to(torch.float64).numpy() for l in range(L)])  # (L, T, D)
    hfinal = captured["final"][0].to(torch.float64).numpy()                 # (T, D)

    # greedy continuation through the cached decode path: prefill, then one token a step
    try:
        g_tokens, g_logits = greedy_manual(model, ids, n_greedy)
    except Exception as e:  # an API difference in this transformers version: use generate()
        print("%s: note: manual cached decode failed (%s: %s); using generate()"
              % (PROG, type(e).__name__, str(e).splitlines()[0][:200]), file=sys.stderr)
        g_tokens, g_logits = greedy_generate(model, ids, n_greedy)
    res = dict(tokens=np.asarray(tokens), logits=logits, hidden=hidden, hfinal=hfinal,
               greedy_tokens=np.asarray(g_tokens, dtype=np.int64),
               greedy_logits=np.asarray(g_logits).reshape(len(g_logits), logits.shape[1]))
    # self-check: the cached decode path against one teacher-forced pass over prompt + greedy
    if n_greedy > 1:
        full = torch.from_numpy(np.concatenate([tokens, g_tokens[:-1]]).astype(np.int64))[None, :]
        with torch.no_grad():
            tf = model(input_ids=full, use_cache=False).logits[0, len(tokens) - 1:].to(torch.float64).numpy()
        gl = res["greedy_logits"]
        res["decode_vs_prefill"] = float(np.max(np.abs(tf - gl)) / max(np.max(np.abs(tf)), 1e-30))
    return res


def greedy_manual(model, ids, n_greedy):
    """ids: (1, T) -> ([N] tokens, [N] rows of V logits); row j's argmax is token j."""
    import torch
    g_tokens, g_logits = [], []
    with torch.no_grad():
        o = model(input_ids=ids, use_cache=True)
        past = o.past_key_values
        row = o.logits[0, -1]
        for j in range(n_greedy):
            g_logits.append(row.to(torch.float64).numpy())
            tok = int(torch.argmax(row))
            g_tokens.append(tok)
            if j + 1 == n_greedy:
                break
            o = model(input_ids=torch.tensor([[tok]], dtype=torch.int64), past_key_values=past, use_cache=True)
            past = o.past_key_values
            row = o.logits[0, -1]
    return g_tokens, g_logits


def greedy_generate(model, ids, n_greedy):
    """The same through model.generate (greedy, cache on, each step's logits kept)."""
    import torch
    if n_greedy == 0:
        return [], []
    with torch.no_grad():
        out = model.generate(input_ids=ids, max_new_tokens=n_greedy, min_new_tokens=n_greedy,
                             do_sample=False, use_cache=True, output_logits=True,
                             return_dict_in_generate=True, pad_token_id=0)
    toks = out.sequences[0, ids.shape[1]:].tolist()
    rows = [l[0].to(torch.float64).numpy() for l in out.logits]
    return toks, rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--hf-dir", help="HF model directory to load")
    src.add_argument("--config", help="Qwen3_5TextConfig JSON for a random model (needs --seed, --write-hf)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write-hf", help="where --config saves the random model (save_pretrained)")
    ap.add_argument("--prompts", required=True, help="'1,5,80' (random prompts of those lengths) or @file.json")
    ap.add_argument("--greedy", type=int, default=0, help="greedy tokens per prompt")
    ap.add_argument("--dtype", choices=["auto", "float64", "float32"], default="auto")
    ap.add_argument("-o", "--output", required=True, help="DUMP.gguf or DUMP.gguf.zst")
    args = ap.parse_args(argv)
    try:
        if args.config and not args.write_hf:
            raise UserError("--config needs --write-hf DIR")
        if args.greedy < 0:
            raise UserError("--greedy must be >= 0")
        import torch
        import transformers
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
        if args.config:
            model = build_random(args.config, args.seed, args.write_hf)
            hf_dir = args.write_hf
        else:
            hf_dir = args.hf_dir
            model = load_hf(hf_dir)
        cfg_json = json.dumps(model.config.to_dict(), sort_keys=True, default=str)
        model.eval()
        weights_sha = sha256_of_weights(hf_dir)
        _, _, tcfg = text_parts(model)
        n_vocab, n_embd, n_layers = tcfg.vocab_size, tcfg.hidden_size, tcfg.num_hidden_layers
        prompts = parse_prompts(args.prompts, n_vocab, args.seed)

        order = ["float64", "float32"] if args.dtype == "auto" else [args.dtype]
        results, used, fallback_note = None, None, ""
        for dt in order:
            tdt = getattr(torch, dt)
            model.to(tdt)
            try:
                results = [run_prompt(model, p, args.greedy, tdt) for p in prompts]
            except Exception as e:  # the modelling code may refuse a dtype: try the next one
                if dt == order[-1]:
                    raise
                fallback_note = " (float64 failed: %s: %s)" % (type(e).__name__, str(e).splitlines()[0][:200])
                print("%s: %s; falling back to float32" % (PROG, fallback_note.strip()), file=sys.stderr)
                continue
            bad = [i for i, r in enumerate(results) if not np.all(np.isfinite(r["logits"]))]
            if bad:
                raise UserError("%s: non-finite logits for prompt(s) %s in %s" % (args.output, bad, dt))
            used = dt
            break
        dtype_desc = used
        if used == "float64":
            dtype_desc += " (transformers casts RMSNorm, gated RMSNorm and the gated delta rule to float32)"
        dtype_desc += fallback_note
        for i, r in enumerate(results):
            print("%s: prompt %d: T=%d greedy=%s logits std %.3f max|h| %.3f decode-vs-prefill max_rel %s"
                  % (PROG, i, len(r["tokens"]), r["greedy_tokens"].tolist(), float(np.std(r["logits"])),
                     float(np.max(np.abs(r["hidden"]))), r.get("decode_vs_prefill", "n/a")), file=sys.stderr)
        prov = dict(transformers_version=transformers.__version__, torch_version=torch.__version__,
                    dtype=dtype_desc, config=cfg_json, seed=str(args.seed) if args.config else "",
                    hf_model_sha256=weights_sha,
                    created_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        write_dump(args.output, results, n_layers, n_embd, n_vocab, prov)
        print("%s: wrote %s (%s, %d prompts)" % (PROG, args.output, used, len(results)), file=sys.stderr)
    except (UserError, kgguf.GGUFError) as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
