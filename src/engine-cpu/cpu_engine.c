/*
 * cpu_engine.c - libkestrel-cpu.so, the plain-C reference engine for the
 * Qwen3.5 text model (transformers `Qwen3_5ForCausalLM`) read from a GGUF
 * file with llama.cpp `qwen35` names (BRIEF §1, §2; docs/engine-abi.md).
 *
 * Read it top to bottom: config -> weights -> run state -> forward -> ABI.
 * It is the spec the CUDA engine is held to, so it favours clarity: one
 * token at a time (a T-token forward is T one-token steps, bit for bit),
 * f32 arithmetic, weights decoded on the fly from their stored type (never
 * expanded: a 27B q4_0 file runs in RAM). Only matvec is multithreaded.
 *
 * It deliberately is not: a batched prefill, a sampler, or a tokenizer.
 *
 * Letters in shapes: D n_embd, F n_ff, V n_vocab, L n_layers, K conv kernel,
 * kh/vh GDN key/value heads, kd/vd their head dims, CD conv_dim = 2*kh*kd + vh*vd,
 * H attention heads, Hkv kv heads, hd head dim, P max_context, T tokens.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "gguf.h"
#include "kestrel/engine.h"
#include "ops.h"
#include "quant.h"

#ifndef KESTREL_CPU_BUILD_FLAGS
#define KESTREL_CPU_BUILD_FLAGS "unknown"
#endif

#define MAX_THREADS 64
#define DEFAULT_MAX_THREADS 16
#define DEFAULT_CTX 4096

/* ------------------------------------------------------------------------ */
/* config: the qwen35.* keys                                                 */

typedef struct config {
    int n_vocab, n_layers, n_embd, n_ff; /* V, L, D, F */
    int n_head, n_head_kv, head_dim, n_rot; /* H, Hkv, hd, rotary dims */
    float eps, rope_base;
    int conv_k, kh, vh, kd, vd, conv_dim; /* K, kh, vh, kd, vd, CD */
    int interval;                         /* full_attention_interval */
    int context_length;
} config;

/* A weight matrix (n_out, n_in) of any supported type, pointing into the mapped file. */
typedef struct wmat {
    const void *data;
    uint32_t type;
    int n_in, n_out;
} wmat;

typedef struct layer_weights {
    float *attn_norm;      /* (D,) stored 1+w */
    float *post_norm;      /* (D,) stored 1+w */
    wmat ffn_gate, ffn_up; /* (F, D) */
    wmat ffn_down;         /* (D, F) */
    /* GDN layers */
    wmat qkv;              /* (CD, D) */
    wmat z;                /* (vh*vd, D) attn_gate */
    wmat beta, alpha;      /* (vh, D) ssm_beta, ssm_alpha */
    wmat ssm_out;          /* (D, vh*vd) */
    float *conv_w;         /* (CD, K) */
    float *dt_bias;        /* (vh,) */
    float *ssm_a;          /* (vh,) = -exp(A_log) */
    float *ssm_norm;       /* (vd,) plain w */
    /* attention layers */
    wmat wq;               /* (2*H*hd, D): per head [q(hd) | gate(hd)] */
    wmat wk, wv;           /* (Hkv*hd, D) */
    wmat wo;               /* (D, H*hd) */
    float *q_norm, *k_norm;/* (hd,) stored 1+w */
} layer_weights;

/* Per-layer run state. GDN: S, conv and the last step's intermediates; attention: KV cache. */
typedef struct layer_state {
    float *S;      /* (vh, kd, vd) */
    float *conv;   /* (K-1, CD) previous inputs, oldest first */
    float *qkv;    /* (CD,) in_proj_qkv output, the conv's input */
    float *conv_out; /* (CD,) after conv + SiLU: [q (kh, kd) | k (kh, kd) | v (vh, vd)] */
    float *q, *k;  /* (kh, kd) after conv, SiLU, l2norm (q also * 1/sqrt(kd)) */
    float *z;      /* (vh, vd) attn_gate projection */
    float *b, *a;  /* (vh,) ssm_beta and ssm_alpha projections */
    float *beta, *g; /* (vh,) */
    float *o;      /* (vh, vd) delta rule output */
    float *o_norm; /* (vh, vd) gated RMSNorm output */
    float *kc, *vc; /* (P, Hkv*hd) attention KV cache */
} layer_state;

enum prof_op {
    PROF_EMBED, PROF_RMSNORM, PROF_MATVEC, PROF_CONV_STEP, PROF_L2NORM, PROF_GDN_BETA_G,
    PROF_DELTA_STEP, PROF_GATED_RMSNORM, PROF_ROPE_NEOX, PROF_ATTENTION, PROF_SWIGLU, PROF_LM_HEAD,
    PROF_QUANTIZE_Q8, PROF_MATVEC_Q8, PROF_N
};
static const char *const prof_names[PROF_N] = {
    "embed", "rmsnorm", "matvec", "conv_step", "l2norm", "gdn_beta_g",
    "delta_step", "gated_rmsnorm", "rope_neox", "attention", "swiglu", "lm_head",
    "quantize_q8", "matvec_q8",
};

struct kestrel_engine {
    char *path;
    gguf_file *gf;
    config c;
    uint8_t *layer_types; /* (L,) enum kestrel_layer_type */
    /* weights */
    const gguf_tensor *tok_embd; /* {D, V} */
    float *output_norm;          /* (D,) stored 1+w */
    wmat lm_head;                /* (V, D): output.weight or token_embd when tied */
    layer_weights *lw;           /* (L,) */
    uint64_t weight_bytes;
    /* options */
    int n_threads, max_ctx, profile;
    int dot_q8;      /* option dot=q8: q4_0 matrices take 8-bit activations (quantize_q8 + matvec_q8) */
    ops_pool *pool;
    char device[64];
    /* run state */
    int pos;                     /* tokens seen since reset */
    layer_state *ls;             /* (L,) */
    /* scratch, one token */
    float *x;        /* (D,) residual stream */
    float *xn;       /* (D,) normed input of a sub-block */
    float *mix;      /* (D,) token mixer / FFN output */
    float *ff_g, *ff_u; /* (F,) */
    float *qg;       /* (H, 2*hd) q_proj output */
    float *aq, *ag;  /* (H, hd) query and gate, split */
    float *att_out;  /* (H, hd) */
    float *att;      /* (P,) attention scores */
    float *logits;   /* (V,) when the caller passes none */
    q8_block *xq;    /* (max n_in / 32,) quantised input of a q4_0 matvec (dot=q8 only, else NULL) */
    /* capture of the last forward() */
    int last_n;      /* tokens in the last forward (0 after reset) */
    int cap_n;       /* positions captured (0 when not captured) */
    size_t cap_size; /* floats allocated in cap_h */
    float *cap_h;    /* (T, L, D) */
    float *cap_hfinal; /* (T, D) */
    /* profile */
    uint64_t prof_calls[PROF_N];
    double prof_ms[PROF_N];
    char err[512];
};

static int set_err(kestrel_engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_err(kestrel_engine *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof e->err, fmt, ap);
    va_end(ap);
    return -1;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Time one op into e->prof_* when profiling. */
#define PROF(e, id, ...)                                                               \
    do {                                                                               \
        double t0_ = (e)->profile ? now_ms() : 0.0;                                    \
        __VA_ARGS__;                                                                   \
        if ((e)->profile) { (e)->prof_ms[id] += now_ms() - t0_; (e)->prof_calls[id]++; } \
    } while (0)

/* ------------------------------------------------------------------------ */
/* options: threads=N, ctx=N, profile=0|1, dot=f32|q8                        */

typedef struct options {
    int threads; /* 0 = default */
    int ctx;     /* 0 = default */
    int profile;
    int dot_q8;  /* 0: dot=f32 (default), 1: dot=q8 */
} options;

static int parse_options(const char *s, options *o, char *err, size_t err_len) {
    memset(o, 0, sizeof *o);
    if (!s) return 0;
    const char *p = s;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[128];
        if (len == 0 || len >= sizeof item) {
            snprintf(err, err_len, "options '%s': empty or over-long item at offset %zu", s, (size_t)(p - s));
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(err, err_len, "options '%s': '%s' is not key=value", s, item);
            return -1;
        }
        *eq = '\0';
        const char *val = eq + 1;
        char *vend;
        errno = 0;
        long v = strtol(val, &vend, 10);
        int bad_num = (*val == '\0' || *vend != '\0' || errno != 0);
        if (strcmp(item, "threads") == 0) {
            if (bad_num || v < 1 || v > MAX_THREADS) {
                snprintf(err, err_len, "options: threads=%s: expected an integer in [1, %d]", val, MAX_THREADS);
                return -1;
            }
            o->threads = (int)v;
        } else if (strcmp(item, "ctx") == 0) {
            if (bad_num || v < 1 || v > (1L << 24)) {
                snprintf(err, err_len, "options: ctx=%s: expected a positive integer", val);
                return -1;
            }
            o->ctx = (int)v;
        } else if (strcmp(item, "profile") == 0) {
            if (bad_num || (v != 0 && v != 1)) {
                snprintf(err, err_len, "options: profile=%s: expected 0 or 1", val);
                return -1;
            }
            o->profile = (int)v;
        } else if (strcmp(item, "dot") == 0) {
            if (strcmp(val, "f32") == 0) o->dot_q8 = 0;
            else if (strcmp(val, "q8") == 0) o->dot_q8 = 1;
            else {
                snprintf(err, err_len, "options: dot=%s: expected f32 or q8", val);
                return -1;
            }
        } else {
            snprintf(err, err_len, "options: unknown option '%s' (the cpu engine knows threads, ctx, profile, dot)",
                     item);
            return -1;
        }
        p = end ? end + 1 : p + len;
        if (end && *p == '\0') {
            snprintf(err, err_len, "options '%s': trailing comma", s);
            return -1;
        }
    }
    return 0;
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > DEFAULT_MAX_THREADS) n = DEFAULT_MAX_THREADS;
    return (int)n;
}

/* ------------------------------------------------------------------------ */
/* loading: config keys, then every tensor checked for presence, type, shape */

#define T_MAT ((1u << GGML_TYPE_F32) | (1u << GGML_TYPE_F16) | (1u << GGML_TYPE_BF16) | \
               (1u << GGML_TYPE_Q8_0) | (1u << GGML_TYPE_Q4_0))
#define T_VEC ((1u << GGML_TYPE_F32) | (1u << GGML_TYPE_F16) | (1u << GGML_TYPE_BF16))

static int get_pos_int(kestrel_engine *e, const char *key, int *out) {
    int64_t v;
    char err[512];
    if (gguf_get_int(e->gf, key, &v, err, sizeof err) != 0) return set_err(e, "%s", err);
    if (v < 1 || v > (1 << 30)) return set_err(e, "%s: key '%s' = %lld, expected a positive integer", e->path, key, (long long)v);
    *out = (int)v;
    return 0;
}

static int get_float(kestrel_engine *e, const char *key, float *out) {
    double v;
    char err[512];
    if (gguf_get_float(e->gf, key, &v, err, sizeof err) != 0) return set_err(e, "%s", err);
    if (!isfinite(v) || v <= 0) return set_err(e, "%s: key '%s' = %g, expected a positive number", e->path, key, v);
    *out = (float)v;
    return 0;
}

static int load_config(kestrel_engine *e) {
    config *c = &e->c;
    char err[512];
    char *arch = NULL;
    if (gguf_get_str(e->gf, "general.architecture", &arch, err, sizeof err) != 0) return set_err(e, "%s", err);
    if (strcmp(arch, "qwen35") != 0) {
        set_err(e, "%s: unsupported architecture '%s' (key 'general.architecture'); the cpu engine runs 'qwen35'",
                e->path, arch);
        free(arch);
        return -1;
    }
    free(arch);
    if (get_pos_int(e, "qwen35.block_count", &c->n_layers) || get_pos_int(e, "qwen35.context_length", &c->context_length) ||
        get_pos_int(e, "qwen35.embedding_length", &c->n_embd) || get_pos_int(e, "qwen35.feed_forward_length", &c->n_ff) ||
        get_pos_int(e, "qwen35.attention.head_count", &c->n_head) ||
        get_pos_int(e, "qwen35.attention.head_count_kv", &c->n_head_kv) ||
        get_pos_int(e, "qwen35.attention.key_length", &c->head_dim) ||
        get_pos_int(e, "qwen35.rope.dimension_count", &c->n_rot) ||
        get_pos_int(e, "qwen35.ssm.conv_kernel", &c->conv_k) || get_pos_int(e, "qwen35.ssm.state_size", &c->kd) ||
        get_pos_int(e, "qwen35.ssm.group_count", &c->kh) || get_pos_int(e, "qwen35.ssm.time_step_rank", &c->vh) ||
        get_pos_int(e, "qwen35.full_attention_interval", &c->interval) ||
        get_float(e, "qwen35.attention.layer_norm_rms_epsilon", &c->eps) ||
        get_float(e, "qwen35.rope.freq_base", &c->rope_base))
        return -1;
    int vlen, inner;
    if (get_pos_int(e, "qwen35.attention.value_length", &vlen) || get_pos_int(e, "qwen35.ssm.inner_size", &inner))
        return -1;
    /* the facts the forward pass relies on, asserted up front */
    if (vlen != c->head_dim)
        return set_err(e, "%s: key 'qwen35.attention.value_length' = %d differs from key_length %d (unsupported)",
                       e->path, vlen, c->head_dim);
    if (c->n_head % c->n_head_kv != 0)
        return set_err(e, "%s: key 'qwen35.attention.head_count' = %d is not a multiple of head_count_kv %d", e->path,
                       c->n_head, c->n_head_kv);
    if (c->n_rot % 2 != 0 || c->n_rot > c->head_dim)
        return set_err(e, "%s: key 'qwen35.rope.dimension_count' = %d must be even and <= key_length %d", e->path,
                       c->n_rot, c->head_dim);
    if (c->vh % c->kh != 0)
        return set_err(e, "%s: key 'qwen35.ssm.time_step_rank' = %d is not a multiple of ssm.group_count %d", e->path,
                       c->vh, c->kh);
    if (inner % c->vh != 0)
        return set_err(e, "%s: key 'qwen35.ssm.inner_size' = %d is not a multiple of ssm.time_step_rank %d", e->path,
                       inner, c->vh);
    c->vd = inner / c->vh;
    /* products used as sizes must fit an int (the tensors' shapes then bound them by the file size) */
    int64_t conv_dim = 2 * (int64_t)c->kh * c->kd + (int64_t)c->vh * c->vd;
    int64_t q_rows = 2 * (int64_t)c->n_head * c->head_dim;
    if (conv_dim > INT32_MAX / 4 || q_rows > INT32_MAX / 4 || (int64_t)c->vh * c->kd * c->vd > INT32_MAX / 4)
        return set_err(e, "%s: head counts and dims too large (conv_dim %lld, attention rows %lld)", e->path,
                       (long long)conv_dim, (long long)q_rows);
    c->conv_dim = (int)conv_dim;
    return 0;
}

/* Fetch a weight matrix (n_out, n_in): GGUF {n_in, n_out}, any matrix type. */
static int load_mat(kestrel_engine *e, const char *name, int n_in, int n_out, wmat *out) {
    const gguf_tensor *t;
    char err[512];
    uint64_t ne[2] = {(uint64_t)n_in, (uint64_t)n_out};
    if (gguf_expect_tensor(e->gf, name, T_MAT, 2, ne, &t, err, sizeof err) != 0) return set_err(e, "%s", err);
    out->data = t->data;
    out->type = t->type;
    out->n_in = n_in;
    out->n_out = n_out;
    e->weight_bytes += t->n_bytes;
    return 0;
}

/* Fetch a small tensor (n_dims, ne) of a float type and convert it to a malloc'd f32 array. */
static int load_vec(kestrel_engine *e, const char *name, uint32_t n_dims, const uint64_t *ne, float **out) {
    const gguf_tensor *t;
    char err[512];
    if (gguf_expect_tensor(e->gf, name, T_VEC, n_dims, ne, &t, err, sizeof err) != 0) return set_err(e, "%s", err);
    float *v = malloc(sizeof(float) * t->n_elements);
    if (!v) return set_err(e, "%s: out of memory for tensor '%s'", e->path, name);
    dequantize_row(t->type, t->data, v, (int64_t)t->n_elements);
    e->weight_bytes += t->n_bytes;
    *out = v;
    return 0;
}

static int load_vec1(kestrel_engine *e, const char *name, int n, float **out) {
    uint64_t ne[1] = {(uint64_t)n};
    return load_vec(e, name, 1, ne, out);
}

static int load_weights(kestrel_engine *e) {
    const config *c = &e->c;
    char err[512], name[96];
    uint64_t ne_embd[2] = {(uint64_t)c->n_embd, (uint64_t)c->n_vocab};
    /* token_embd {D, V}: V comes from the tensor itself (there is no vocab key we rely on) */
    const gguf_tensor *te = gguf_find_tensor(e->gf, "token_embd.weight");
    if (!te) return set_err(e, "%s: missing tensor 'token_embd.weight'", e->path);
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > (1u << 30))
        return set_err(e, "%s: tensor 'token_embd.weight': expected 2 dims {%d, n_vocab}", e->path, c->n_embd);
    e->c.n_vocab = (int)te->ne[1];
    ne_embd[1] = te->ne[1];
    if (gguf_expect_tensor(e->gf, "token_embd.weight", T_MAT, 2, ne_embd, &e->tok_embd, err, sizeof err) != 0)
        return set_err(e, "%s", err);
    if (load_vec1(e, "output_norm.weight", c->n_embd, &e->output_norm)) return -1;
    /* lm_head: output.weight, or the embedding matrix when tied (then it is read every token) */
    if (gguf_find_tensor(e->gf, "output.weight")) {
        if (load_mat(e, "output.weight", c->n_embd, c->n_vocab, &e->lm_head)) return -1;
    } else {
        e->lm_head = (wmat){e->tok_embd->data, e->tok_embd->type, c->n_embd, c->n_vocab};
        e->weight_bytes += e->tok_embd->n_bytes;
    }
    e->lw = calloc((size_t)c->n_layers, sizeof *e->lw);
    if (!e->lw) return set_err(e, "%s: out of memory", e->path);
    int D = c->n_embd, F = c->n_ff;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &e->lw[l];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
        if (load_vec1(e, NAME("attn_norm.weight"), D, &w->attn_norm) ||
            load_vec1(e, NAME("post_attention_norm.weight"), D, &w->post_norm) ||
            load_mat(e, NAME("ffn_gate.weight"), D, F, &w->ffn_gate) ||
            load_mat(e, NAME("ffn_up.weight"), D, F, &w->ffn_up) ||
            load_mat(e, NAME("ffn_down.weight"), F, D, &w->ffn_down))
            return -1;
        if (e->layer_types[l] == KESTREL_LAYER_GDN) {
            int VV = c->vh * c->vd;
            uint64_t ne_conv[2] = {(uint64_t)c->conv_k, (uint64_t)c->conv_dim};
            if (load_mat(e, NAME("attn_qkv.weight"), D, c->conv_dim, &w->qkv) ||
                load_mat(e, NAME("attn_gate.weight"), D, VV, &w->z) ||
                load_mat(e, NAME("ssm_beta.weight"), D, c->vh, &w->beta) ||
                load_mat(e, NAME("ssm_alpha.weight"), D, c->vh, &w->alpha) ||
                load_mat(e, NAME("ssm_out.weight"), VV, D, &w->ssm_out) ||
                load_vec(e, NAME("ssm_conv1d.weight"), 2, ne_conv, &w->conv_w) ||
                load_vec1(e, NAME("ssm_dt.bias"), c->vh, &w->dt_bias) ||
                load_vec1(e, NAME("ssm_a"), c->vh, &w->ssm_a) ||
                load_vec1(e, NAME("ssm_norm.weight"), c->vd, &w->ssm_norm))
                return -1;
        } else {
            int hd = c->head_dim;
            if (load_mat(e, NAME("attn_q.weight"), D, 2 * c->n_head * hd, &w->wq) ||
                load_mat(e, NAME("attn_k.weight"), D, c->n_head_kv * hd, &w->wk) ||
                load_mat(e, NAME("attn_v.weight"), D, c->n_head_kv * hd, &w->wv) ||
                load_mat(e, NAME("attn_output.weight"), c->n_head * hd, D, &w->wo) ||
                load_vec1(e, NAME("attn_q_norm.weight"), hd, &w->q_norm) ||
                load_vec1(e, NAME("attn_k_norm.weight"), hd, &w->k_norm))
                return -1;
        }
#undef NAME
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* run state                                                                 */

static float *falloc(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static int alloc_state(kestrel_engine *e) {
    const config *c = &e->c;
    size_t P = (size_t)e->max_ctx;
    e->ls = calloc((size_t)c->n_layers, sizeof *e->ls);
    if (!e->ls) goto oom;
    for (int l = 0; l < c->n_layers; l++) {
        layer_state *s = &e->ls[l];
        if (e->layer_types[l] == KESTREL_LAYER_GDN) {
            size_t KK = (size_t)c->kh * c->kd, VV = (size_t)c->vh * c->vd;
            s->S = falloc((size_t)c->vh * c->kd * c->vd);
            s->conv = falloc((size_t)(c->conv_k - 1) * c->conv_dim);
            s->qkv = falloc((size_t)c->conv_dim);
            s->conv_out = falloc((size_t)c->conv_dim);
            s->q = falloc(KK);
            s->k = falloc(KK);
            s->z = falloc(VV);
            s->o = falloc(VV);
            s->o_norm = falloc(VV);
            s->b = falloc((size_t)c->vh);
            s->a = falloc((size_t)c->vh);
            s->beta = falloc((size_t)c->vh);
            s->g = falloc((size_t)c->vh);
            if (!s->S || !s->conv || !s->qkv || !s->conv_out || !s->q || !s->k || !s->z || !s->o || !s->o_norm ||
                !s->b || !s->a || !s->beta || !s->g)
                goto oom;
        } else {
            size_t row = (size_t)c->n_head_kv * c->head_dim;
            s->kc = falloc(P * row);
            s->vc = falloc(P * row);
            if (!s->kc || !s->vc) goto oom;
        }
    }
    size_t Hhd = (size_t)c->n_head * c->head_dim;
    e->x = falloc((size_t)c->n_embd);
    e->xn = falloc((size_t)c->n_embd);
    e->mix = falloc((size_t)c->n_embd);
    e->ff_g = falloc((size_t)c->n_ff);
    e->ff_u = falloc((size_t)c->n_ff);
    e->qg = falloc(2 * Hhd);
    e->aq = falloc(Hhd);
    e->ag = falloc(Hhd);
    e->att_out = falloc(Hhd);
    e->att = falloc(P);
    e->logits = falloc((size_t)c->n_vocab);
    if (!e->x || !e->xn || !e->mix || !e->ff_g || !e->ff_u || !e->qg ||
        !e->aq || !e->ag || !e->att_out || !e->att || !e->logits)
        goto oom;
    if (e->dot_q8) {
        /* the widest matvec input: xn (D), the FFN's (F), GDN out_proj's (vh*vd), attention o_proj's (H*hd) */
        size_t max_in = (size_t)c->n_embd;
        if ((size_t)c->n_ff > max_in) max_in = (size_t)c->n_ff;
        if ((size_t)c->vh * c->vd > max_in) max_in = (size_t)c->vh * c->vd;
        if (Hhd > max_in) max_in = Hhd;
        e->xq = calloc(max_in / 32 + 1, sizeof *e->xq);
        if (!e->xq) goto oom;
    }
    return 0;
oom:
    return set_err(e, "%s: out of memory allocating the run state (max_context %d)", e->path, e->max_ctx);
}

static void clear_state(kestrel_engine *e) {
    const config *c = &e->c;
    size_t P = (size_t)e->max_ctx;
    for (int l = 0; l < c->n_layers; l++) {
        layer_state *s = &e->ls[l];
        if (e->layer_types[l] == KESTREL_LAYER_GDN) {
            size_t KK = (size_t)c->kh * c->kd, VV = (size_t)c->vh * c->vd;
            memset(s->S, 0, sizeof(float) * (size_t)c->vh * c->kd * c->vd);
            memset(s->conv, 0, sizeof(float) * (size_t)(c->conv_k - 1) * c->conv_dim);
            memset(s->qkv, 0, sizeof(float) * (size_t)c->conv_dim);
            memset(s->conv_out, 0, sizeof(float) * (size_t)c->conv_dim);
            memset(s->q, 0, sizeof(float) * KK);
            memset(s->k, 0, sizeof(float) * KK);
            memset(s->z, 0, sizeof(float) * VV);
            memset(s->b, 0, sizeof(float) * (size_t)c->vh);
            memset(s->a, 0, sizeof(float) * (size_t)c->vh);
            memset(s->o, 0, sizeof(float) * VV);
            memset(s->o_norm, 0, sizeof(float) * VV);
            memset(s->beta, 0, sizeof(float) * (size_t)c->vh);
            memset(s->g, 0, sizeof(float) * (size_t)c->vh);
        } else {
            size_t row = (size_t)c->n_head_kv * c->head_dim;
            memset(s->kc, 0, sizeof(float) * P * row);
            memset(s->vc, 0, sizeof(float) * P * row);
        }
    }
    e->pos = 0;
    e->last_n = 0;
    e->cap_n = 0;
}

/* ------------------------------------------------------------------------ */
/* forward: one token                                                        */

/* out = W x, the one place the forward pass multiplies by a weight matrix. W: (n_out, n_in) of `type`;
 * x: (n_in,); out: (n_out,). With dot=q8 a q4_0 matrix gets x quantised to 8 bits per block of 32
 * (quantize_q8 into e->xq) and integer dot products (matvec_q8), the CUDA engine's dp4a path;
 * every other type, and dot=f32, runs matvec on x itself. prof: the profile entry of the product
 * (PROF_MATVEC, or PROF_LM_HEAD for the lm_head; dot=q8 books matvecs as matvec_q8 + quantize_q8). */
static void engine_matvec(kestrel_engine *e, int prof, float *out, const void *W, uint32_t type, const float *x,
                          int n_in, int n_out) {
    if (e->dot_q8 && type == GGML_TYPE_Q4_0) {
        PROF(e, PROF_QUANTIZE_Q8, quantize_q8(e->xq, x, n_in));
        PROF(e, prof == PROF_MATVEC ? PROF_MATVEC_Q8 : prof, matvec_q8(e->pool, out, W, type, e->xq, n_in, n_out));
    } else {
        PROF(e, prof, matvec(e->pool, out, W, type, x, n_in, n_out));
    }
}

/* Gated DeltaNet token mixer (HF Qwen3_5GatedDeltaNet, recurrent form). xn: (D,) -> e->mix (D,) */
static void gdn_layer(kestrel_engine *e, int l) {
    const config *c = &e->c;
    const layer_weights *w = &e->lw[l];
    layer_state *s = &e->ls[l];
    int KK = c->kh * c->kd;
    /* mixed_qkv = self.in_proj_qkv(hidden_states); z = self.in_proj_z(...); b = in_proj_b; a = in_proj_a */
    engine_matvec(e, PROF_MATVEC, s->qkv, w->qkv.data, w->qkv.type, e->xn, w->qkv.n_in, w->qkv.n_out);
    engine_matvec(e, PROF_MATVEC, s->z, w->z.data, w->z.type, e->xn, w->z.n_in, w->z.n_out);
    engine_matvec(e, PROF_MATVEC, s->b, w->beta.data, w->beta.type, e->xn, w->beta.n_in, w->beta.n_out);
    engine_matvec(e, PROF_MATVEC, s->a, w->alpha.data, w->alpha.type, e->xn, w->alpha.n_in, w->alpha.n_out);
    /* mixed_qkv = self.causal_conv1d_update(mixed_qkv, conv_state, weight, activation="silu") */
    PROF(e, PROF_CONV_STEP, conv_step(s->conv_out, s->conv, s->qkv, w->conv_w, c->conv_dim, c->conv_k));
    /* query, key, value = torch.split(mixed_qkv, [key_dim, key_dim, value_dim]) */
    const float *cq = s->conv_out, *ck = s->conv_out + KK, *cv = s->conv_out + 2 * KK; /* (kh,kd) (kh,kd) (vh,vd) */
    /* query = l2norm(query); key = l2norm(key) (per head, eps 1e-6); query = query * scale */
    float scale = 1.0f / sqrtf((float)c->kd);
    PROF(e, PROF_L2NORM, {
        for (int h = 0; h < c->kh; h++) {
            l2norm(s->q + h * c->kd, cq + h * c->kd, c->kd);
            l2norm(s->k + h * c->kd, ck + h * c->kd, c->kd);
        }
    });
    for (int i = 0; i < KK; i++) s->q[i] *= scale;
    /* beta = b.sigmoid(); g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias) */
    PROF(e, PROF_GDN_BETA_G, gdn_beta_g(s->beta, s->g, s->b, s->a, w->ssm_a, w->dt_bias, c->vh));
    /* core_attn_out, last_recurrent_state = torch_recurrent_gated_delta_rule(q, k, v, g, beta, state) */
    PROF(e, PROF_DELTA_STEP, delta_step(s->S, s->o, s->q, s->k, cv, s->g, s->beta, c->kh, c->vh, c->kd, c->vd));
    /* core_attn_out = self.norm(core_attn_out, z)  (per v-head over vd) */
    PROF(e, PROF_GATED_RMSNORM, {
        for (int h = 0; h < c->vh; h++)
            gated_rmsnorm(s->o_norm + h * c->vd, s->o + h * c->vd, s->z + h * c->vd, w->ssm_norm, c->vd, c->eps);
    });
    /* output = self.out_proj(core_attn_out) */
    engine_matvec(e, PROF_MATVEC, e->mix, w->ssm_out.data, w->ssm_out.type, s->o_norm, w->ssm_out.n_in,
                  w->ssm_out.n_out);
}

/* Gated full attention (HF Qwen3_5Attention) at position pos. xn: (D,) -> e->mix (D,) */
static void attn_layer(kestrel_engine *e, int l, int pos) {
    const config *c = &e->c;
    const layer_weights *w = &e->lw[l];
    layer_state *s = &e->ls[l];
    int H = c->n_head, Hkv = c->n_head_kv, hd = c->head_dim;
    size_t row = (size_t)Hkv * hd;
    float *kp = s->kc + (size_t)pos * row, *vp = s->vc + (size_t)pos * row; /* (Hkv, hd) this position */
    /* query_states, gate = torch.chunk(self.q_proj(hidden_states).view(..., -1, head_dim * 2), 2, dim=-1) */
    engine_matvec(e, PROF_MATVEC, e->qg, w->wq.data, w->wq.type, e->xn, w->wq.n_in, w->wq.n_out);
    for (int h = 0; h < H; h++) {
        memcpy(e->aq + (size_t)h * hd, e->qg + (size_t)h * 2 * hd, sizeof(float) * (size_t)hd);
        memcpy(e->ag + (size_t)h * hd, e->qg + (size_t)h * 2 * hd + hd, sizeof(float) * (size_t)hd);
    }
    /* key_states = self.k_proj(...); value_states = self.v_proj(...) straight into the cache */
    engine_matvec(e, PROF_MATVEC, kp, w->wk.data, w->wk.type, e->xn, w->wk.n_in, w->wk.n_out);
    engine_matvec(e, PROF_MATVEC, vp, w->wv.data, w->wv.type, e->xn, w->wv.n_in, w->wv.n_out);
    /* query_states = self.q_norm(query_states); key_states = self.k_norm(key_states) */
    PROF(e, PROF_RMSNORM, {
        for (int h = 0; h < H; h++) rmsnorm(e->aq + (size_t)h * hd, e->aq + (size_t)h * hd, w->q_norm, hd, c->eps);
        for (int h = 0; h < Hkv; h++) rmsnorm(kp + (size_t)h * hd, kp + (size_t)h * hd, w->k_norm, hd, c->eps);
    });
    /* query_states, key_states = apply_rotary_pos_emb(q, k, cos, sin)  (partial: first n_rot dims) */
    PROF(e, PROF_ROPE_NEOX, {
        rope_neox(e->aq, H, hd, c->n_rot, pos, c->rope_base);
        rope_neox(kp, Hkv, hd, c->n_rot, pos, c->rope_base);
    });
    /* attn_output = softmax(q k^T / sqrt(hd)) v (causal, GQA); attn_output * torch.sigmoid(gate) */
    PROF(e, PROF_ATTENTION, attention(e->att_out, e->aq, e->ag, s->kc, s->vc, H, Hkv, hd, pos + 1, e->att));
    /* attn_output = self.o_proj(attn_output) */
    engine_matvec(e, PROF_MATVEC, e->mix, w->wo.data, w->wo.type, e->att_out, w->wo.n_in, w->wo.n_out);
}

/* One token through the whole model. logits: (V,) or NULL (then no lm_head).
 * cap_h: (L, D) or NULL, cap_hfinal: (D,) or NULL. */
static void forward_token(kestrel_engine *e, int32_t token, float *logits, float *cap_h, float *cap_hfinal) {
    const config *c = &e->c;
    int D = c->n_embd;
    float *x = e->x;
    /* hidden_states = self.embed_tokens(input_ids) */
    PROF(e, PROF_EMBED, {
        const uint8_t *row = (const uint8_t *)e->tok_embd->data + (size_t)token * ggml_row_bytes(e->tok_embd->type, (uint64_t)D);
        dequantize_row(e->tok_embd->type, row, x, D);
    });
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *w = &e->lw[l];
        /* hidden_states = self.input_layernorm(hidden_states) */
        PROF(e, PROF_RMSNORM, rmsnorm(e->xn, x, w->attn_norm, D, c->eps));
        /* linear_attn or self_attn */
        if (e->layer_types[l] == KESTREL_LAYER_GDN) gdn_layer(e, l);
        else attn_layer(e, l, e->pos);
        /* hidden_states = residual + hidden_states */
        for (int i = 0; i < D; i++) x[i] += e->mix[i];
        /* hidden_states = self.mlp(self.post_attention_layernorm(hidden_states)) */
        PROF(e, PROF_RMSNORM, rmsnorm(e->xn, x, w->post_norm, D, c->eps));
        engine_matvec(e, PROF_MATVEC, e->ff_g, w->ffn_gate.data, w->ffn_gate.type, e->xn, D, c->n_ff);
        engine_matvec(e, PROF_MATVEC, e->ff_u, w->ffn_up.data, w->ffn_up.type, e->xn, D, c->n_ff);
        /* down_proj(act_fn(gate_proj(x)) * up_proj(x)) */
        PROF(e, PROF_SWIGLU, swiglu(e->ff_g, e->ff_g, e->ff_u, c->n_ff));
        engine_matvec(e, PROF_MATVEC, e->mix, w->ffn_down.data, w->ffn_down.type, e->ff_g, c->n_ff, D);
        /* hidden_states = residual + hidden_states */
        for (int i = 0; i < D; i++) x[i] += e->mix[i];
        if (cap_h) memcpy(cap_h + (size_t)l * D, x, sizeof(float) * (size_t)D);
    }
    /* hidden_states = self.norm(hidden_states) */
    PROF(e, PROF_RMSNORM, rmsnorm(e->xn, x, e->output_norm, D, c->eps));
    if (cap_hfinal) memcpy(cap_hfinal, e->xn, sizeof(float) * (size_t)D);
    /* logits = self.lm_head(hidden_states) */
    if (logits)
        engine_matvec(e, PROF_LM_HEAD, logits, e->lm_head.data, e->lm_head.type, e->xn, D, c->n_vocab);
    e->pos++;
}

/* ------------------------------------------------------------------------ */
/* the ABI                                                                   */

static void cpu_close(kestrel_engine *e) {
    if (!e) return;
    ops_pool_destroy(e->pool);
    if (e->lw) {
        for (int l = 0; l < e->c.n_layers; l++) {
            layer_weights *w = &e->lw[l];
            free(w->attn_norm); free(w->post_norm); free(w->conv_w); free(w->dt_bias);
            free(w->ssm_a); free(w->ssm_norm); free(w->q_norm); free(w->k_norm);
        }
        free(e->lw);
    }
    if (e->ls) {
        for (int l = 0; l < e->c.n_layers; l++) {
            layer_state *s = &e->ls[l];
            free(s->S); free(s->conv); free(s->qkv); free(s->conv_out); free(s->q); free(s->k); free(s->z);
            free(s->b); free(s->a); free(s->beta); free(s->g); free(s->o); free(s->o_norm); free(s->kc); free(s->vc);
        }
        free(e->ls);
    }
    free(e->x); free(e->xn); free(e->mix);
    free(e->ff_g); free(e->ff_u); free(e->qg); free(e->aq); free(e->ag); free(e->att_out);
    free(e->att); free(e->logits); free(e->cap_h); free(e->cap_hfinal); free(e->xq);
    free(e->output_norm);
    free(e->layer_types);
    gguf_close(e->gf);
    free(e->path);
    free(e);
}

static int cpu_open(const char *model_path, const char *options_str, kestrel_engine **out, char *err,
                    size_t err_len) {
    int ret = -1;
    *out = NULL;
    options opt;
    if (parse_options(options_str, &opt, err, err_len) != 0) return -1;
    kestrel_engine *e = calloc(1, sizeof *e);
    if (!e || !(e->path = strdup(model_path))) {
        snprintf(err, err_len, "%s: out of memory", model_path);
        goto cleanup;
    }
    if (gguf_open(model_path, &e->gf, e->err, sizeof e->err) != 0) goto cleanup;
    if (load_config(e) != 0) goto cleanup;
    config *c = &e->c;
    /* layer_types: layer i is full attention iff (i + 1) % full_attention_interval == 0 */
    e->layer_types = malloc((size_t)c->n_layers);
    if (!e->layer_types) {
        set_err(e, "%s: out of memory", e->path);
        goto cleanup;
    }
    for (int l = 0; l < c->n_layers; l++)
        e->layer_types[l] = (l + 1) % c->interval == 0 ? KESTREL_LAYER_ATTN : KESTREL_LAYER_GDN;
    if (load_weights(e) != 0) goto cleanup;
    e->n_threads = opt.threads ? opt.threads : default_threads();
    e->max_ctx = c->context_length < DEFAULT_CTX ? c->context_length : DEFAULT_CTX;
    if (opt.ctx) {
        if (opt.ctx > c->context_length) {
            set_err(e, "%s: option ctx=%d exceeds the model's context_length %d", e->path, opt.ctx, c->context_length);
            goto cleanup;
        }
        e->max_ctx = opt.ctx;
    }
    e->profile = opt.profile;
    e->dot_q8 = opt.dot_q8;
    snprintf(e->device, sizeof e->device, "cpu (%d threads)", e->n_threads);
    if (ops_pool_create(e->n_threads, &e->pool) != 0) {
        set_err(e, "%s: cannot start %d threads", e->path, e->n_threads);
        goto cleanup;
    }
    if (alloc_state(e) != 0) goto cleanup;
    clear_state(e);
    *out = e;
    e = NULL;
    ret = 0;
cleanup:
    if (e) {
        if (e->err[0]) snprintf(err, err_len, "%s", e->err);
        cpu_close(e);
    }
    return ret;
}

static int cpu_info(kestrel_engine *e, kestrel_info *out) {
    const config *c = &e->c;
    memset(out, 0, sizeof *out);
    out->engine_name = "kestrel-cpu";
    out->engine_version = PACKAGE_VERSION;
    out->build_flags = KESTREL_CPU_BUILD_FLAGS;
    out->device = e->device;
    out->n_vocab = c->n_vocab;
    out->n_layers = c->n_layers;
    out->n_embd = c->n_embd;
    out->max_context = e->max_ctx;
    out->layer_types = e->layer_types;
    out->weight_bytes_per_token = e->weight_bytes;
    uint64_t n_gdn = 0;
    for (int l = 0; l < c->n_layers; l++) n_gdn += e->layer_types[l] == KESTREL_LAYER_GDN;
    uint64_t per_layer = (uint64_t)c->vh * c->kd * c->vd + (uint64_t)(c->conv_k - 1) * c->conv_dim;
    out->state_bytes_per_token = 2 * n_gdn * per_layer * sizeof(float);
    return 0;
}

static int cpu_reset(kestrel_engine *e) {
    clear_state(e);
    e->err[0] = '\0';
    return 0;
}

static int cpu_forward(kestrel_engine *e, const int32_t *tokens, int32_t n, uint32_t flags, float *logits,
                       int32_t *argmax) {
    const config *c = &e->c;
    if (n < 1 || !tokens) return set_err(e, "forward: need at least one token (n = %d)", (int)n);
    if (flags & ~(uint32_t)(KESTREL_FWD_ALL_LOGITS | KESTREL_FWD_CAPTURE))
        return set_err(e, "forward: unknown flags 0x%x", (unsigned)flags);
    /* validate everything before touching the state: a failed call changes nothing */
    for (int32_t t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= c->n_vocab)
            return set_err(e, "forward: token %d at position %d is out of range [0, %d)", (int)tokens[t],
                           (int)t, c->n_vocab);
    if ((int64_t)e->pos + n > e->max_ctx)
        return set_err(e, "forward: %d tokens at position %d exceed max_context %d (option ctx=N)", (int)n, e->pos,
                       e->max_ctx);
    int capture = (flags & KESTREL_FWD_CAPTURE) != 0;
    if (capture) {
        size_t need = (size_t)n * (size_t)c->n_layers * (size_t)c->n_embd;
        if (need > e->cap_size) {
            float *h = realloc(e->cap_h, sizeof(float) * need);
            if (!h) return set_err(e, "forward: out of memory for the capture of %d positions", (int)n);
            e->cap_h = h;
            float *hf = realloc(e->cap_hfinal, sizeof(float) * (size_t)n * (size_t)c->n_embd);
            if (!hf) return set_err(e, "forward: out of memory for the capture of %d positions", (int)n);
            e->cap_hfinal = hf;
            e->cap_size = need;
        }
    }
    int all = (flags & KESTREL_FWD_ALL_LOGITS) != 0;
    int want_out = logits != NULL || argmax != NULL;
    for (int32_t t = 0; t < n; t++) {
        float *row = NULL; /* (V,) logits of this position, when someone wants them */
        if (want_out && (all || t == n - 1)) row = logits ? logits + (all ? (size_t)t * c->n_vocab : 0) : e->logits;
        forward_token(e, tokens[t], row, capture ? e->cap_h + (size_t)t * c->n_layers * c->n_embd : NULL,
                      capture ? e->cap_hfinal + (size_t)t * c->n_embd : NULL);
        if (row && argmax) { /* lowest id on ties; an all-NaN row (never seen) gives 0 */
            int64_t best = argmax_f32(row, c->n_vocab);
            argmax[all ? t : 0] = best < 0 ? 0 : (int32_t)best;
        }
    }
    e->last_n = n;
    e->cap_n = capture ? n : 0;
    return 0;
}

/* Named state of a GDN layer: pointer and element count, or NULL if the name is not a state name. */
static const float *state_tensor(kestrel_engine *e, const char *name, int layer, size_t *n) {
    const config *c = &e->c;
    const layer_state *s = &e->ls[layer];
    size_t KK = (size_t)c->kh * c->kd, VV = (size_t)c->vh * c->vd;
    if (strcmp(name, "S") == 0) { *n = (size_t)c->vh * c->kd * c->vd; return s->S; }
    if (strcmp(name, "conv") == 0) { *n = (size_t)(c->conv_k - 1) * c->conv_dim; return s->conv; }
    if (strcmp(name, "qkv") == 0) { *n = (size_t)c->conv_dim; return s->qkv; }
    if (strcmp(name, "q_conv") == 0) { *n = KK; return s->conv_out; }
    if (strcmp(name, "k_conv") == 0) { *n = KK; return s->conv_out + KK; }
    if (strcmp(name, "q") == 0) { *n = KK; return s->q; }
    if (strcmp(name, "k") == 0) { *n = KK; return s->k; }
    if (strcmp(name, "v") == 0) { *n = VV; return s->conv_out + 2 * KK; }
    if (strcmp(name, "z") == 0) { *n = VV; return s->z; }
    if (strcmp(name, "b") == 0) { *n = (size_t)c->vh; return s->b; }
    if (strcmp(name, "a") == 0) { *n = (size_t)c->vh; return s->a; }
    if (strcmp(name, "o") == 0) { *n = VV; return s->o; }
    if (strcmp(name, "o_norm") == 0) { *n = VV; return s->o_norm; }
    if (strcmp(name, "beta") == 0) { *n = (size_t)c->vh; return s->beta; }
    if (strcmp(name, "g") == 0) { *n = (size_t)c->vh; return s->g; }
    return NULL;
}

static int is_state_name(const char *name) {
    static const char *const names[] = {"S", "conv", "qkv", "q_conv", "k_conv", "q", "k", "v", "z", "b", "a",
                                        "beta", "g", "o", "o_norm"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return 1;
    return 0;
}

static int cpu_readback(kestrel_engine *e, const char *name, int32_t layer, int32_t pos, float *out, size_t cap,
                        size_t *n_out) {
    const config *c = &e->c;
    const float *src = NULL;
    size_t n = 0;
    if (!name) return set_err(e, "readback: no name");
    if (strcmp(name, "h") == 0 || strcmp(name, "hfinal") == 0) {
        int is_h = name[1] == '\0';
        if (e->cap_n == 0) return set_err(e, "readback '%s': the last forward() was not called with KESTREL_FWD_CAPTURE", name);
        if (pos < 0 || pos >= e->cap_n)
            return set_err(e, "readback '%s': position %d out of range [0, %d)", name, (int)pos, e->cap_n);
        if (is_h && (layer < 0 || layer >= c->n_layers))
            return set_err(e, "readback 'h': layer %d out of range [0, %d)", (int)layer, c->n_layers);
        n = (size_t)c->n_embd;
        src = is_h ? e->cap_h + ((size_t)pos * c->n_layers + (size_t)layer) * c->n_embd
                   : e->cap_hfinal + (size_t)pos * c->n_embd;
    } else if (is_state_name(name)) {
        if (layer < 0 || layer >= c->n_layers)
            return set_err(e, "readback '%s': layer %d out of range [0, %d)", name, (int)layer, c->n_layers);
        if (e->layer_types[layer] != KESTREL_LAYER_GDN)
            return set_err(e, "readback '%s': layer %d is a full-attention layer, not a GDN layer", name, (int)layer);
        if (pos != -1 && pos != e->last_n - 1)
            return set_err(e, "readback '%s': state is only kept after the last token (pos -1 or %d), not %d", name,
                           e->last_n - 1, (int)pos);
        src = state_tensor(e, name, layer, &n);
    } else {
        return set_err(e, "readback: unknown name '%s' (h, hfinal, S, conv, qkv, q, k, v, q_conv, k_conv, z, b, a, "
                          "beta, g, o, o_norm)", name);
    }
    *n_out = n;
    if (!out) return 0;
    if (cap < n) return set_err(e, "readback '%s': buffer holds %zu floats, need %zu", name, cap, n);
    memcpy(out, src, sizeof(float) * n);
    return 0;
}

static int cpu_profile(kestrel_engine *e, kestrel_prof_entry *out, int32_t cap, int32_t *n) {
    *n = 0;
    if (!e->profile) return 0;
    int32_t k = 0;
    for (int i = 0; i < PROF_N; i++) {
        if (e->prof_calls[i] == 0) continue;
        if (out && k < cap) {
            memset(&out[k], 0, sizeof out[k]);
            snprintf(out[k].name, sizeof out[k].name, "%s", prof_names[i]);
            out[k].calls = e->prof_calls[i];
            out[k].total_ms = e->prof_ms[i];
        }
        k++;
    }
    *n = k;
    return 0;
}

/* ---- bandwidth probe: every thread streams its slice of a buffer; median of passes ---- */
typedef struct bw_job {
    const float *buf; /* (n,) */
    size_t n;
    float sums[MAX_THREADS];
} bw_job;

static void bw_part(void *varg, int tid, int nth) {
    bw_job *j = varg;
    size_t i0 = j->n * (size_t)tid / (size_t)nth, i1 = j->n * (size_t)(tid + 1) / (size_t)nth;
    float acc[8] = {0};
    size_t i = i0;
    for (; i + 8 <= i1; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += j->buf[i + k];
    for (; i < i1; i++) acc[0] += j->buf[i];
    j->sums[tid] = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cpu_bandwidth_probe(const char *options_str, uint64_t bytes, int32_t iterations, double *gbps, char *err,
                               size_t err_len) {
    int ret = -1;
    ops_pool *pool = NULL;
    float *buf = NULL;
    double *times = NULL;
    options opt;
    if (parse_options(options_str, &opt, err, err_len) != 0) return -1;
    if (bytes < 4096 || iterations < 1) {
        snprintf(err, err_len, "bandwidth_probe: need bytes >= 4096 and iterations >= 1 (got %llu, %d)",
                 (unsigned long long)bytes, (int)iterations);
        return -1;
    }
    int nth = opt.threads ? opt.threads : default_threads();
    size_t n = (size_t)(bytes / sizeof(float));
    buf = malloc(n * sizeof(float));
    times = malloc(sizeof(double) * (size_t)iterations);
    if (!buf || !times) {
        snprintf(err, err_len, "bandwidth_probe: cannot allocate %llu bytes", (unsigned long long)bytes);
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023) * 1e-3f;
    if (ops_pool_create(nth, &pool) != 0) {
        snprintf(err, err_len, "bandwidth_probe: cannot start %d threads", nth);
        goto cleanup;
    }
    bw_job job;
    memset(&job, 0, sizeof job);
    job.buf = buf;
    job.n = n;
    ops_pool_run(pool, bw_part, &job); /* warm-up */
    volatile float sink = 0.0f;
    for (int32_t it = 0; it < iterations; it++) {
        double t0 = now_ms();
        ops_pool_run(pool, bw_part, &job);
        times[it] = now_ms() - t0;
        sink += job.sums[0];
    }
    (void)sink;
    qsort(times, (size_t)iterations, sizeof(double), cmp_double);
    double med = iterations % 2 ? times[iterations / 2] : 0.5 * (times[iterations / 2 - 1] + times[iterations / 2]);
    if (med <= 0) med = 1e-6;
    *gbps = (double)(n * sizeof(float)) / (med * 1e-3) / 1e9;
    ret = 0;
cleanup:
    ops_pool_destroy(pool);
    free(buf);
    free(times);
    return ret;
}

static const char *cpu_last_error(kestrel_engine *e) { return e ? e->err : ""; }

static const kestrel_engine_api cpu_api = {
    .abi_version = KESTREL_ENGINE_ABI_VERSION,
    .struct_size = sizeof(kestrel_engine_api),
    .open = cpu_open,
    .info = cpu_info,
    .reset = cpu_reset,
    .forward = cpu_forward,
    .readback = cpu_readback,
    .profile = cpu_profile,
    .bandwidth_probe = cpu_bandwidth_probe,
    .last_error = cpu_last_error,
    .close = cpu_close,
};

KESTREL_EXPORT const kestrel_engine_api *kestrel_engine_entry(uint32_t abi_version) {
    return abi_version == KESTREL_ENGINE_ABI_VERSION ? &cpu_api : NULL;
}
