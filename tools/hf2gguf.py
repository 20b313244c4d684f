#!/usr/bin/env python3
"""hf2gguf.py - convert a Hugging Face Qwen3.5 text checkpoint to GGUF with llama.cpp `qwen35` names.

  hf2gguf.py HF_DIR -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0] [--name NAME]

What it is for: making the engines' model files (and the test fixtures) from safetensors, with
numpy alone.  It accepts Qwen3_5ForCausalLM (model_type qwen3_5_text, tensors model.layers.*)
and Qwen3_5ForConditionalGeneration (text_config, tensors model.language_model.*; the vision
tower and MTP weights are skipped).  Safetensors are parsed here (8-byte header length, JSON
header, raw data; F32, F16, BF16), single file or sharded with model.safetensors.index.json.
What it is not: a general converter (no other architectures, no tokenizer export, no k-quants).

Layout and transforms follow llama.cpp's converter for Qwen3.5 (conversion/qwen.py; see
/work/shared/design/BRIEF.md section 2 and docs/formats.md):
  - every norm weight is stored as 1 + w, except linear_attn.norm (ssm_norm), stored raw;
  - ssm_a = -exp(A_log); dt_bias -> ssm_dt.bias; conv1d [C, 1, K] -> [C, K];
  - when kh != vh the v-heads go from grouped (v-head h uses k-head h // (vh/kh)) to tiled order
    (v-head h uses k-head h % kh) in the V rows of attn_qkv, the rows of attn_gate, ssm_alpha,
    ssm_beta, ssm_a, ssm_dt.bias, the V channels of ssm_conv1d and the columns of ssm_out;
  - attn_q keeps HF's per-head [q | gate] rows;
  - the transforms are computed in float32 and, like llama.cpp (which applies them in the
    source dtype), rounded back to the source dtype when that is f16 or bf16.
Types: 2-D weight matrices get --type (q8_0/q4_0 only when ne0 % 32 == 0, else f32), except
ssm_conv1d, which stays f32 like every 1-D tensor.  The quantisers are ggml's reference ones
(tools/kgguf.py).  Streaming: one tensor is converted at a time, straight from a memory map.
Errors: one line `hf2gguf.py: <file>: <what> (tensor|key '<name>')`, exit 2, and no output
file (it is written to OUT.tmp and renamed at the end).
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kgguf  # noqa: E402

PROG = "hf2gguf.py"
ARCH = "qwen35"
# llama.cpp LlamaFileType values
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "bf16": 32}
ST_DTYPES = {"F32": (np.dtype("<f4"), 4), "F16": (np.dtype("<f2"), 2), "BF16": (np.dtype("<u2"), 2)}


class ConvertError(Exception):
    pass


# ---------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------

class SafeTensors:
    """All tensors of a checkpoint: name -> (file, dtype string, shape, absolute byte offset, nbytes).
    Data is read lazily through one np.memmap per file."""

    def __init__(self, hf_dir):
        self.hf_dir = hf_dir
        self.entries = {}
        self.maps = {}
        index = os.path.join(hf_dir, "model.safetensors.index.json")
        single = os.path.join(hf_dir, "model.safetensors")
        if os.path.isfile(index):
            self.where = index
            try:
                with open(index) as f:
                    wmap = json.load(f)["weight_map"]
                if not isinstance(wmap, dict):
                    raise TypeError("weight_map is not an object")
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise ConvertError("%s: bad index (%s) (key 'weight_map')" % (index, e))
            files = sorted(set(wmap.values()))
            for fn in files:
                self._read_header(os.path.join(hf_dir, fn))
            for name, fn in wmap.items():
                if name not in self.entries or self.entries[name][0] != os.path.join(hf_dir, fn):
                    raise ConvertError("%s: tensor '%s' is not in %s" % (index, name, fn))
        elif os.path.isfile(single):
            self.where = single
            self._read_header(single)
        else:
            raise ConvertError("%s: no model.safetensors or model.safetensors.index.json" % hf_dir)

    def _read_header(self, path):
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                raw = f.read(8)
                if len(raw) != 8:
                    raise ConvertError("%s: truncated safetensors header (offset 0)" % path)
                n = struct.unpack("<Q", raw)[0]
                if n > size - 8 or n > (1 << 30):
                    raise ConvertError("%s: header length %d past the end of the file (offset 0)" % (path, n))
                hdr = json.loads(f.read(n).decode("utf-8"))
        except OSError as e:
            raise ConvertError("%s: cannot read (%s)" % (path, e.strerror or e))
        except (ValueError, UnicodeDecodeError) as e:
            raise ConvertError("%s: safetensors header is not JSON (%s) (offset 8)" % (path, e))
        if not isinstance(hdr, dict):
            raise ConvertError("%s: safetensors header is not a JSON object (offset 8)" % path)
        base = 8 + n
        for name, info in hdr.items():
            if name == "__metadata__":
                continue
            try:
                dtype, shape, (b, e) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise ConvertError("%s: bad header entry (tensor '%s')" % (path, name))
            if not (0 <= b <= e and base + e <= size):
                raise ConvertError("%s: data offsets [%d, %d) out of range (tensor '%s')" % (path, b, e, name))
            if name in self.entries:
                raise ConvertError("%s: duplicate tensor '%s'" % (path, name))
            self.entries[name] = (path, dtype, shape, base + b, e - b)

    def has(self, name):
        return name in self.entries

    def shape(self, name):
        return self.entries[name][2]

    def check_dtype(self, name):
        path, dtype, shape, _, nbytes = self.entries[name]
        if dtype not in ST_DTYPES:
            raise ConvertError("%s: tensor '%s' has unsupported dtype %s (F32, F16, BF16 only)" % (path, name, dtype))
        want = ST_DTYPES[dtype][1] * int(np.prod(shape, dtype=np.int64))
        if nbytes != want:
            raise ConvertError("%s: tensor '%s' has %d data bytes, shape %s %s needs %d"
                               % (path, name, nbytes, shape, dtype, want))

    def load(self, name):
        """-> (float32 array of the tensor's shape, source dtype string)."""
        path, dtype, shape, off, nbytes = self.entries[name]
        if path not in self.maps:
            self.maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        raw = self.maps[path][off:off + nbytes]
        npdt = ST_DTYPES[dtype][0]
        a = raw.view(npdt).reshape(shape)
        if dtype == "BF16":
            a = kgguf.bf16_to_f32(a)
        else:
            a = a.astype(np.float32)
        return a, dtype


def round_to_source(a, src):
    """a: float32 array -> rounded through the source dtype (llama.cpp transforms in it)."""
    if src == "BF16":
        return kgguf.bf16_to_f32(kgguf.f32_to_bf16(a))
    if src == "F16":
        return a.astype(np.float16).astype(np.float32)
    return a


def tile_v_heads(a, axis, kh, vh, width):
    """a: array whose `axis` holds vh*width entries grouped by k-head ((kh, vh/kh, width) order)
    -> the same entries in tiled order ((vh/kh, kh, width)): tiled v-head j*kh + k is grouped
    v-head k*(vh/kh) + j."""
    if kh == vh:
        return a
    shape = list(a.shape)
    r = vh // kh
    b = a.reshape(shape[:axis] + [kh, r, width] + shape[axis + 1:])
    b = np.swapaxes(b, axis, axis + 1)
    return np.ascontiguousarray(b).reshape(shape)


# ---------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------

def read_config(hf_dir):
    path = os.path.join(hf_dir, "config.json")
    try:
        with open(path) as f:
            cfg = json.load(f)
    except OSError as e:
        raise ConvertError("%s: cannot read (%s)" % (path, e.strerror or e))
    except ValueError as e:
        raise ConvertError("%s: not JSON (%s)" % (path, e))
    archs = cfg.get("architectures") or []
    arch = archs[0] if archs else None
    mtype = cfg.get("model_type")
    if arch == "Qwen3_5ForCausalLM" or (arch is None and mtype == "qwen3_5_text"):
        text, prefixes = cfg, ["model.", "model.language_model."]
        tied = cfg.get("tie_word_embeddings", False)
    elif arch == "Qwen3_5ForConditionalGeneration" or (arch is None and mtype == "qwen3_5"):
        text = cfg.get("text_config")
        if not isinstance(text, dict):
            raise ConvertError("%s: missing text_config (key 'text_config')" % path)
        prefixes = ["model.language_model.", "model."]
        tied = text.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))
    else:
        raise ConvertError("%s: unsupported architecture '%s' (key 'architectures')" % (path, arch or mtype))
    return path, cfg, text, prefixes, bool(tied)


class HParams:
    def __init__(self, path, t):
        def need(key, default=None):
            v = t.get(key, default)
            if v is None:
                raise ConvertError("%s: missing key '%s'" % (path, key))
            return v

        def pos_int(key, default=None):
            v = need(key, default)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConvertError("%s: key '%s' must be a positive integer, not %r" % (path, key, v))
            return v

        self.n_vocab = pos_int("vocab_size")
        self.n_embd = pos_int("hidden_size")
        self.n_ff = pos_int("intermediate_size")
        self.n_layer = pos_int("num_hidden_layers")
        self.n_head = pos_int("num_attention_heads")
        self.n_head_kv = pos_int("num_key_value_heads")
        self.head_dim = pos_int("head_dim", 256)
        self.kh = pos_int("linear_num_key_heads", 16)
        self.vh = pos_int("linear_num_value_heads", 32)
        self.kd = pos_int("linear_key_head_dim", 128)
        self.vd = pos_int("linear_value_head_dim", 128)
        self.conv_k = pos_int("linear_conv_kernel_dim", 4)
        self.ctx = pos_int("max_position_embeddings", 32768)
        self.eps = float(need("rms_norm_eps", 1e-6))
        if self.vh % self.kh:
            raise ConvertError("%s: linear_num_value_heads %d is not a multiple of linear_num_key_heads %d "
                               "(key 'linear_num_value_heads')" % (path, self.vh, self.kh))
        rope = t.get("rope_parameters") or {}
        if not isinstance(rope, dict):
            raise ConvertError("%s: key 'rope_parameters' is not an object" % path)
        self.rope_theta = float(rope.get("rope_theta", t.get("rope_theta", 10000.0)))
        prf = rope.get("partial_rotary_factor", t.get("partial_rotary_factor", 0.25))
        self.rope_dim = int(self.head_dim * float(prf))
        sec = list(rope.get("mrope_section", [11, 11, 10]))
        if len(sec) > 4 or not all(isinstance(s, int) for s in sec):
            raise ConvertError("%s: bad mrope_section %r (key 'rope_parameters.mrope_section')" % (path, sec))
        self.rope_sections = sec + [0] * (4 - len(sec))
        # layer types: linear_attention x (n-1), full_attention, repeated
        lt = t.get("layer_types")
        interval = t.get("full_attention_interval")
        if lt is None:
            interval = interval or 4
            lt = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(self.n_layer)]
        if not isinstance(lt, list) or len(lt) != self.n_layer:
            raise ConvertError("%s: layer_types must list %d layers (key 'layer_types')" % (path, self.n_layer))
        if interval is None:
            interval = next((i + 1 for i, x in enumerate(lt) if x == "full_attention"), 0)
        want = ["full_attention" if interval and (i + 1) % interval == 0 else "linear_attention"
                for i in range(self.n_layer)]
        if not interval or lt != want:
            raise ConvertError("%s: unsupported layer_types (full_attention must be exactly every n-th layer, "
                               "layers n-1, 2n-1, ...) (key 'layer_types')" % path)
        self.layer_types = lt
        self.interval = interval
        self.conv_dim = 2 * self.kh * self.kd + self.vh * self.vd


def plan(hp, prefix, tied):
    """-> list of (gguf name, hf name, expected HF shape, transform(a) -> a) in output order."""
    D, V, F, L = hp.n_embd, hp.n_vocab, hp.n_ff, hp.n_layer
    kh, vh, kd, vd = hp.kh, hp.vh, hp.kd, hp.vd
    qk = 2 * kh * kd

    ident = None

    def plus1(a):
        return a + np.float32(1.0)

    def qkv(a):      # (conv_dim, D): tile the V rows
        return np.concatenate([a[:qk], tile_v_heads(a[qk:], 0, kh, vh, vd)], axis=0)

    def rows_vd(a):  # (vh*vd, D)
        return tile_v_heads(a, 0, kh, vh, vd)

    def rows_1(a):   # (vh, D) or (vh,)
        return tile_v_heads(a, 0, kh, vh, 1)

    def ssm_a(a):    # (vh,)
        return tile_v_heads(-np.exp(a.astype(np.float64)).astype(np.float32), 0, kh, vh, 1)

    def conv(a):     # (conv_dim, 1, K) -> (conv_dim, K), V channels tiled
        a = a.reshape(a.shape[0], a.shape[2])
        return np.concatenate([a[:qk], tile_v_heads(a[qk:], 0, kh, vh, vd)], axis=0)

    def cols_vd(a):  # (D, vh*vd)
        return tile_v_heads(a, 1, kh, vh, vd)

    out = [("token_embd.weight", prefix + "embed_tokens.weight", [V, D], ident)]
    for i in range(L):
        p, b = prefix + "layers.%d." % i, "blk.%d." % i
        out.append((b + "attn_norm.weight", p + "input_layernorm.weight", [D], plus1))
        if hp.layer_types[i] == "linear_attention":
            la = p + "linear_attn."
            out += [
                (b + "attn_qkv.weight", la + "in_proj_qkv.weight", [hp.conv_dim, D], qkv),
                (b + "attn_gate.weight", la + "in_proj_z.weight", [vh * vd, D], rows_vd),
                (b + "ssm_conv1d.weight", la + "conv1d.weight", [hp.conv_dim, 1, hp.conv_k], conv),
                (b + "ssm_dt.bias", la + "dt_bias", [vh], rows_1),
                (b + "ssm_a", la + "A_log", [vh], ssm_a),
                (b + "ssm_beta.weight", la + "in_proj_b.weight", [vh, D], rows_1),
                (b + "ssm_alpha.weight", la + "in_proj_a.weight", [vh, D], rows_1),
                (b + "ssm_norm.weight", la + "norm.weight", [vd], ident),
                (b + "ssm_out.weight", la + "out_proj.weight", [D, vh * vd], cols_vd),
            ]
        else:
            sa = p + "self_attn."
            hd = hp.head_dim
            out += [
                (b + "attn_q.weight", sa + "q_proj.weight", [2 * hp.n_head * hd, D], ident),
                (b + "attn_k.weight", sa + "k_proj.weight", [hp.n_head_kv * hd, D], ident),
                (b + "attn_v.weight", sa + "v_proj.weight", [hp.n_head_kv * hd, D], ident),
                (b + "attn_output.weight", sa + "o_proj.weight", [D, hp.n_head * hd], ident),
                (b + "attn_q_norm.weight", sa + "q_norm.weight", [hd], plus1),
                (b + "attn_k_norm.weight", sa + "k_norm.weight", [hd], plus1),
            ]
        out += [
            (b + "post_attention_norm.weight", p + "post_attention_layernorm.weight", [D], plus1),
            (b + "ffn_gate.weight", p + "mlp.gate_proj.weight", [F, D], ident),
            (b + "ffn_up.weight", p + "mlp.up_proj.weight", [F, D], ident),
            (b + "ffn_down.weight", p + "mlp.down_proj.weight", [D, F], ident),
        ]
    out.append(("output_norm.weight", prefix + "norm.weight", [D], plus1))
    if not tied:
        out.append(("output.weight", "lm_head.weight", [V, D], ident))
    return out


def out_type(gname, shape, want):
    """shape: the GGUF tensor's numpy shape -> ggml type."""
    if len(shape) != 2 or "ssm_conv1d" in gname or want == kgguf.F32:
        return kgguf.F32
    if want in (kgguf.Q8_0, kgguf.Q4_0) and shape[-1] % kgguf.QK:
        return kgguf.F32
    return want


def convert(hf_dir, out_path, type_name, name=None):
    cfg_path, cfg, text, prefixes, tied = read_config(hf_dir)
    hp = HParams(cfg_path, text)
    st = SafeTensors(hf_dir)
    prefix = next((p for p in prefixes if st.has(p + "embed_tokens.weight")), None)
    if prefix is None:
        raise ConvertError("%s: missing tensor '%s'" % (st.where, prefixes[0] + "embed_tokens.weight"))
    items = plan(hp, prefix, tied)
    # validate everything before writing anything
    for gname, hname, shape, _ in items:
        if not st.has(hname):
            raise ConvertError("%s: missing tensor '%s'" % (st.where, hname))
        st.check_dtype(hname)
        if st.shape(hname) != shape:
            raise ConvertError("%s: tensor '%s' has shape %s, expected %s"
                               % (st.entries[hname][0], hname, st.shape(hname), shape))
    want = kgguf.TYPE_BY_NAME[type_name]
    w = kgguf.Writer(out_path)
    w.add("general.architecture", kgguf.STRING, ARCH)
    w.add("general.name", kgguf.STRING, name or os.path.basename(os.path.normpath(hf_dir)))
    w.add("general.file_type", kgguf.UINT32, FILE_TYPE[type_name])
    w.add("general.quantization_version", kgguf.UINT32, 2)
    w.add("general.alignment", kgguf.UINT32, kgguf.DEFAULT_ALIGNMENT)
    a = ARCH + "."
    for key, vt, v in [
            ("block_count", kgguf.UINT32, hp.n_layer),
            ("context_length", kgguf.UINT32, hp.ctx),
            ("embedding_length", kgguf.UINT32, hp.n_embd),
            ("feed_forward_length", kgguf.UINT32, hp.n_ff),
            ("attention.head_count", kgguf.UINT32, hp.n_head),
            ("attention.head_count_kv", kgguf.UINT32, hp.n_head_kv),
            ("attention.key_length", kgguf.UINT32, hp.head_dim),
            ("attention.value_length", kgguf.UINT32, hp.head_dim),
            ("attention.layer_norm_rms_epsilon", kgguf.FLOAT32, hp.eps),
            ("rope.freq_base", kgguf.FLOAT32, hp.rope_theta),
            ("rope.dimension_count", kgguf.UINT32, hp.rope_dim),
            ("rope.dimension_sections", kgguf.ARRAY, (kgguf.INT32, hp.rope_sections)),
            ("ssm.conv_kernel", kgguf.UINT32, hp.conv_k),
            ("ssm.state_size", kgguf.UINT32, hp.kd),
            ("ssm.group_count", kgguf.UINT32, hp.kh),
            ("ssm.time_step_rank", kgguf.UINT32, hp.vh),
            ("ssm.inner_size", kgguf.UINT32, hp.vh * hp.vd),
            ("full_attention_interval", kgguf.UINT32, hp.interval)]:
        w.add(a + key, vt, v)

    def producer(hname, fn):
        def produce():
            arr, src = st.load(hname)
            if fn is not None:
                arr = round_to_source(fn(arr), src)
            return arr
        return produce

    for gname, hname, shape, fn in items:
        gshape = [shape[0], shape[2]] if "ssm_conv1d" in gname else shape
        w.add_tensor(gname, gshape, out_type(gname, gshape, want), producer(hname, fn))
    w.write()
    return len(items)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("hf_dir", metavar="HF_DIR")
    ap.add_argument("-o", "--output", required=True, metavar="OUT.gguf")
    ap.add_argument("--type", default="f32", choices=["f32", "f16", "bf16", "q8_0", "q4_0"])
    ap.add_argument("--name", help="general.name (default: the HF directory's name)")
    args = ap.parse_args(argv)
    try:
        n = convert(args.hf_dir, args.output, args.type, args.name)
    except (ConvertError, kgguf.GGUFError) as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    except OSError as e:
        print("%s: %s: %s" % (PROG, e.filename or args.output, e.strerror or e), file=sys.stderr)
        return 2
    print("%s: wrote %s (%d tensors, %s)" % (PROG, args.output, n, args.type), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
