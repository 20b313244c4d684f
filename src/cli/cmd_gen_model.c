/*
 * cmd_gen_model.c - `kestrel-eval gen-model`: write a synthetic Qwen3.5 GGUF of
 * a real shape (presets in docs/presets.md) with llama.cpp `qwen35` tensor
 * names and metadata and random weights of realistic scale.
 *
 * What it is for: performance work on full-size shapes (the 27B q4_0 file is
 * ~15 GB) and CI models of any shape, without downloading anything. What it is
 * NOT: a model that says anything sensible; there is no tokenizer.
 *
 * How it is fast and deterministic:
 *  - quantised tensors are generated as q4_0 / q8_0 blocks directly (random
 *    quants + a per-block scale), never as floats that are then quantised;
 *  - every block (quantised) or element (f32/f16) draws from a counter-based
 *    PRNG keyed by (seed, tensor index, block/element index), so the bytes do
 *    not depend on how the work is split: any thread count gives the same file;
 *  - the file is cut into chunks of whole blocks; worker threads fill a ring of
 *    chunk buffers, the main thread appends them to the streaming GGUF writer
 *    in order. Memory use is ring size x chunk size, never the model.
 *
 * Value distributions (docs/presets.md): matrices ~ zero-mean, std
 * 1/sqrt(fan_in) (fan_in = ne0); zero-centred norm weights stored as 1 + w with
 * w ~ std 0.05; ssm_norm ~ 1 (stored raw); ssm_a = -exp(A_log), A_log ~ U(log 1,
 * log 16); ssm_dt.bias = log(expm1(dt)), dt log-uniform in [1e-3, 1e-1];
 * ssm_conv1d ~ std 0.25. 1-D tensors, ssm_conv1d and the ssm_alpha / ssm_beta
 * projections are f32 (as BRIEF §3's byte budget assumes); every other matrix
 * has the requested --type.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gguf.h"
#include "quant.h"

#define GEN_CHUNK_BYTES (4u << 20) /* bytes of one work chunk (whole blocks) */
#define GEN_MAX_THREADS 256
#define GEN_NAME_LEN 64

/* ---------------------------------------------------------------------- */
/* presets                                                                 */

typedef struct gen_preset {
    const char *name;
    int n_embd, n_layers, n_ff, n_vocab, n_ctx;
    int kh, vh, kd, vd, conv_k;   /* GDN: k-heads, v-heads, key/value head dims, conv taps */
    int n_head, n_head_kv, head_dim, n_rot;
    float rope_theta, rms_eps;
    int attn_interval;            /* layer i is full attention iff (i+1) % interval == 0 */
    int tied;                     /* 1: no output.weight, lm_head = token_embd */
} gen_preset;

/* Shapes: 27B from BRIEF §1; 9B and 2B from the Qwen3.5 model cards (docs/presets.md). */
static const gen_preset presets[] = {
    {"qwen3.5-27b", 5120, 64, 17408, 248320, 262144, 16, 48, 128, 128, 4, 24, 4, 256, 64, 1e7f, 1e-6f, 4, 0},
    {"qwen3.5-9b", 4096, 32, 12288, 248320, 262144, 16, 32, 128, 128, 4, 16, 4, 256, 64, 1e7f, 1e-6f, 4, 0},
    {"qwen3.5-2b", 2048, 24, 6144, 248320, 262144, 16, 16, 128, 128, 4, 8, 2, 256, 64, 1e7f, 1e-6f, 4, 1},
    /* tiny: every kind of tensor, vh = 3 kh (tiled v-heads), runs in milliseconds */
    {"tiny", 64, 4, 128, 512, 512, 2, 6, 32, 32, 4, 4, 1, 64, 16, 1e4f, 1e-6f, 4, 0},
};

static const gen_preset *find_preset(const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* tensors                                                                 */

enum gen_init {
    INIT_MATRIX,   /* zero-mean, std = scale */
    INIT_NORM_1PW, /* 1 + w, w ~ std scale (zero-centred RMSNorm stored as llama.cpp does) */
    INIT_SSM_A,    /* -exp(A_log), A_log ~ U(log 1, log 16) */
    INIT_DT_BIAS,  /* log(expm1(dt)), dt log-uniform in [1e-3, 1e-1] */
};

typedef struct gen_tensor {
    char name[GEN_NAME_LEN];
    uint32_t type;               /* enum ggml_type */
    uint32_t n_dims;
    uint64_t ne[2];              /* ggml order: ne[0] contiguous */
    enum gen_init init;
    float scale;
    uint64_t n_elements, n_bytes;
    uint64_t key;                /* PRNG key of this tensor */
} gen_tensor;

typedef struct gen_model {
    gen_tensor *t;  /* (n,) in file order */
    int n, cap;
} gen_model;

static uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void add_tensor(gen_model *m, uint64_t seed, uint32_t type, enum gen_init init, float scale,
                       uint64_t ne0, uint64_t ne1, const char *fmt, int layer) {
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->t = xrealloc(m->t, sizeof(gen_tensor) * (size_t)m->cap);
    }
    gen_tensor *t = &m->t[m->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, fmt, layer);
    t->type = type;
    t->n_dims = ne1 > 0 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1 > 0 ? ne1 : 1;
    t->init = init;
    t->scale = scale;
    t->n_elements = t->ne[0] * t->ne[1];
    t->n_bytes = ggml_row_bytes(type, ne0) * t->ne[1];
    t->key = splitmix64(seed ^ splitmix64(0x6B657374726C00ull + (uint64_t)m->n));
    m->n++;
}

static int is_attn_layer(const gen_preset *p, int il) {
    return p->attn_interval > 0 && (il + 1) % p->attn_interval == 0;
}

/* The tensor list of preset p, llama.cpp `qwen35` names (BRIEF §2). wtype: type of the big matrices. */
static void build_model(gen_model *m, const gen_preset *p, uint32_t wtype, uint64_t seed) {
    const uint64_t D = (uint64_t)p->n_embd, F = (uint64_t)p->n_ff, V = (uint64_t)p->n_vocab;
    const uint64_t conv_dim = (uint64_t)(2 * p->kh * p->kd + p->vh * p->vd);
    const uint64_t inner = (uint64_t)(p->vh * p->vd);
    const uint64_t qdim = (uint64_t)(p->n_head * p->head_dim);
    const uint64_t kvdim = (uint64_t)(p->n_head_kv * p->head_dim);
    const float sD = 1.0f / sqrtf((float)D);
    const uint32_t F32 = GGML_TYPE_F32;

    add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, V, "token_embd.weight", 0);
    add_tensor(m, seed, F32, INIT_NORM_1PW, 0.05f, D, 0, "output_norm.weight", 0);
    if (!p->tied) add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, V, "output.weight", 0);
    for (int il = 0; il < p->n_layers; il++) {
        add_tensor(m, seed, F32, INIT_NORM_1PW, 0.05f, D, 0, "blk.%d.attn_norm.weight", il);
        if (is_attn_layer(p, il)) {
            add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, 2 * qdim, "blk.%d.attn_q.weight", il);
            add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, kvdim, "blk.%d.attn_k.weight", il);
            add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, kvdim, "blk.%d.attn_v.weight", il);
            add_tensor(m, seed, wtype, INIT_MATRIX, 1.0f / sqrtf((float)qdim), qdim, D,
                       "blk.%d.attn_output.weight", il);
            add_tensor(m, seed, F32, INIT_NORM_1PW, 0.05f, (uint64_t)p->head_dim, 0, "blk.%d.attn_q_norm.weight", il);
            add_tensor(m, seed, F32, INIT_NORM_1PW, 0.05f, (uint64_t)p->head_dim, 0, "blk.%d.attn_k_norm.weight", il);
        } else {
            add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, conv_dim, "blk.%d.attn_qkv.weight", il);
            add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, inner, "blk.%d.attn_gate.weight", il);
            add_tensor(m, seed, F32, INIT_MATRIX, 0.25f, (uint64_t)p->conv_k, conv_dim,
                       "blk.%d.ssm_conv1d.weight", il);
            add_tensor(m, seed, F32, INIT_DT_BIAS, 0.0f, (uint64_t)p->vh, 0, "blk.%d.ssm_dt.bias", il);
            add_tensor(m, seed, F32, INIT_SSM_A, 0.0f, (uint64_t)p->vh, 0, "blk.%d.ssm_a", il);
            add_tensor(m, seed, F32, INIT_MATRIX, sD, D, (uint64_t)p->vh, "blk.%d.ssm_beta.weight", il);
            add_tensor(m, seed, F32, INIT_MATRIX, sD, D, (uint64_t)p->vh, "blk.%d.ssm_alpha.weight", il);
            add_tensor(m, seed, F32, INIT_NORM_1PW, 0.05f, (uint64_t)p->vd, 0, "blk.%d.ssm_norm.weight", il);
            add_tensor(m, seed, wtype, INIT_MATRIX, 1.0f / sqrtf((float)inner), inner, D,
                       "blk.%d.ssm_out.weight", il);
        }
        add_tensor(m, seed, F32, INIT_NORM_1PW, 0.05f, D, 0, "blk.%d.post_attention_norm.weight", il);
        add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, F, "blk.%d.ffn_gate.weight", il);
        add_tensor(m, seed, wtype, INIT_MATRIX, sD, D, F, "blk.%d.ffn_up.weight", il);
        add_tensor(m, seed, wtype, INIT_MATRIX, 1.0f / sqrtf((float)F), F, D, "blk.%d.ffn_down.weight", il);
    }
}

/* ---------------------------------------------------------------------- */
/* value generation: counter-based, so any split of the work gives the same bytes */

/* uniform in [0, 1) from the top 24 bits */
static inline float u01(uint64_t r) { return (float)(r >> 40) * (1.0f / 16777216.0f); }

/* one f32 value of element i of tensor t */
static float gen_value(const gen_tensor *t, uint64_t i) {
    uint64_t r = splitmix64(t->key ^ (i * 0xD1B54A32D192ED03ull));
    float a = u01(r), b = u01(r << 24); /* two independent 24-bit uniforms */
    float tri = (a + b - 1.0f) * 2.44948974f; /* triangular, mean 0, std 1 */
    switch (t->init) {
    case INIT_MATRIX: return t->scale * tri;
    case INIT_NORM_1PW: return 1.0f + t->scale * tri;
    case INIT_SSM_A: return -expf(a * logf(16.0f));
    case INIT_DT_BIAS: {
        float dt = expf(logf(1e-3f) + a * (logf(1e-1f) - logf(1e-3f)));
        return logf(expm1f(dt));
    }
    }
    return 0.0f;
}

/* std of the zero-mean triangular quant values below: q4 = a + b - 7 with a, b in 0..7,
 * q8 = a - b with a, b in 0..127 */
#define Q4_TRI_STD 3.2403703f  /* sqrt(2 * 63/12) */
#define Q8_TRI_STD 52.2510367f /* sqrt(2 * 16383/12) */

/* block scale: target std / quant std, jittered by +-25% per block */
static uint16_t block_scale(const gen_tensor *t, uint64_t r, float qstd) {
    float jitter = 0.75f + 0.5f * u01(r);
    return f32_to_f16(t->scale / qstd * jitter);
}

/* q4_0 byte j of a block holds weight j (low nibble) and j+16 (high nibble). Each weight is a
 * zero-mean triangular quant (a + b - 7) + 8 from 6 random bits (a, b uniform in 0..7), so 12
 * random bits make one byte: q4_byte[r12]. Filled once before the worker threads start. */
static uint8_t q4_byte[4096];

static void init_q4_byte(void) {
    for (int r = 0; r < 4096; r++) {
        int lo = r & 63, hi = r >> 6;
        int qlo = (lo & 7) + (lo >> 3) + 1, qhi = (hi & 7) + (hi >> 3) + 1; /* 1..15, mean 8 */
        q4_byte[r] = (uint8_t)(qlo | (qhi << 4));
    }
}

/* Fill blocks [b0, b1) of quantised tensor t into out. */
static void gen_blocks_q4_0(const gen_tensor *t, uint64_t b0, uint64_t b1, block_q4_0 *out /* (b1-b0,) */) {
    for (uint64_t b = b0; b < b1; b++) {
        uint64_t s = t->key ^ (b * 0xD1B54A32D192ED03ull);
        uint64_t r[4] = {splitmix64(s), splitmix64(s + 1), splitmix64(s + 2), splitmix64(s + 3)};
        block_q4_0 *blk = &out[b - b0];
        for (int j = 0; j < QK4_0 / 2; j++) /* 12 bits per byte: 5 fields from each of r[0..2], 1 from r[3] */
            blk->qs[j] = q4_byte[(r[j / 5] >> (12 * (j % 5))) & 4095];
        blk->d = block_scale(t, r[3], Q4_TRI_STD); /* u01 uses r[3]'s top 24 bits, not the low 12 */
    }
}

static void gen_blocks_q8_0(const gen_tensor *t, uint64_t b0, uint64_t b1, block_q8_0 *out /* (b1-b0,) */) {
    for (uint64_t b = b0; b < b1; b++) {
        uint64_t s = t->key ^ (b * 0xD1B54A32D192ED03ull);
        block_q8_0 *blk = &out[b - b0];
        for (int w = 0; w < 8; w++) {
            uint64_t r = splitmix64(s + (uint64_t)w);
            for (int k = 0; k < 4; k++) {
                uint64_t bits = r >> (16 * k);
                blk->qs[4 * w + k] = (int8_t)((int)(bits & 127) - (int)((bits >> 8) & 127));
            }
        }
        blk->d = block_scale(t, splitmix64(s + 8), Q8_TRI_STD);
    }
}

/* Fill "units" [u0, u1) of t into out: a unit is a block for q4_0/q8_0, an element otherwise.
 * out: (u1-u0,) blocks or f32/f16 elements */
static void gen_units(const gen_tensor *t, uint64_t u0, uint64_t u1, void *out /* (u1-u0,) units */) {
    switch (t->type) {
    case GGML_TYPE_Q4_0: gen_blocks_q4_0(t, u0, u1, out); break;
    case GGML_TYPE_Q8_0: gen_blocks_q8_0(t, u0, u1, out); break;
    case GGML_TYPE_F16: {
        uint16_t *o = out;
        for (uint64_t i = u0; i < u1; i++) o[i - u0] = f32_to_f16(gen_value(t, i));
        break;
    }
    default: {
        float *o = out;
        for (uint64_t i = u0; i < u1; i++) o[i - u0] = gen_value(t, i);
        break;
    }
    }
}

static uint64_t unit_bytes(uint32_t type) { return ggml_type_block_bytes(type); }
static uint64_t tensor_units(const gen_tensor *t) { return t->n_elements / ggml_type_block_size(t->type); }

/* ---------------------------------------------------------------------- */
/* the ordered pipeline: workers generate chunks into a ring, main writes in order */

typedef struct gen_chunk {
    int tensor;
    uint64_t u0, u1; /* units of that tensor */
    uint64_t bytes;
} gen_chunk;

typedef struct gen_pipe {
    const gen_model *m;
    const gen_chunk *chunks; /* (n_chunks,) */
    int64_t n_chunks;
    int n_slots;
    uint8_t **slot;          /* (n_slots,) buffers of GEN_CHUNK_BYTES */
    int64_t *slot_ready;     /* (n_slots,) chunk index held, -1 = none */
    int64_t next;            /* next chunk index to hand out */
    int64_t written;         /* chunks consumed by the writer */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv_free, cv_ready;
} gen_pipe;

static void *gen_worker(void *arg) {
    gen_pipe *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->stop && p->next < p->n_chunks && p->next >= p->written + p->n_slots)
            pthread_cond_wait(&p->cv_free, &p->mu);
        if (p->stop || p->next >= p->n_chunks) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        int64_t c = p->next++;
        pthread_mutex_unlock(&p->mu);

        const gen_chunk *ch = &p->chunks[c];
        gen_units(&p->m->t[ch->tensor], ch->u0, ch->u1, p->slot[c % p->n_slots]);

        pthread_mutex_lock(&p->mu);
        p->slot_ready[c % p->n_slots] = c;
        pthread_cond_broadcast(&p->cv_ready);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Cut every tensor into chunks of whole units of at most GEN_CHUNK_BYTES. */
static gen_chunk *make_chunks(const gen_model *m, int64_t *n_out) {
    int64_t n = 0, cap = 1024;
    gen_chunk *c = xmalloc(sizeof(gen_chunk) * (size_t)cap);
    for (int i = 0; i < m->n; i++) {
        const gen_tensor *t = &m->t[i];
        uint64_t ub = unit_bytes(t->type), nu = tensor_units(t), per = GEN_CHUNK_BYTES / ub;
        for (uint64_t u = 0; u < nu; u += per) {
            if (n == cap) c = xrealloc(c, sizeof(gen_chunk) * (size_t)(cap *= 2));
            uint64_t e = u + per < nu ? u + per : nu;
            c[n++] = (gen_chunk){i, u, e, (e - u) * ub};
        }
    }
    *n_out = n;
    return c;
}

/* ---------------------------------------------------------------------- */
/* metadata                                                                */

static uint32_t llama_file_type(uint32_t wtype) {
    switch (wtype) { /* llama.cpp LLAMA_FTYPE_* */
    case GGML_TYPE_F32: return 0;
    case GGML_TYPE_F16: return 1;
    case GGML_TYPE_Q4_0: return 2;
    case GGML_TYPE_Q8_0: return 7;
    }
    return 0;
}

static int write_metadata(gguf_writer *w, const gen_preset *p, const char *preset_name, uint32_t wtype,
                          uint64_t seed) {
    char name[160];
    snprintf(name, sizeof name, "kestrel synthetic %s %s seed %llu", preset_name, ggml_type_name(wtype),
             (unsigned long long)seed);
    int half = p->n_rot / 2;
    int32_t sections[4] = {(half + 2) / 3, (half + 1) / 3, half / 3, 0}; /* 27B: [11, 11, 10, 0] */
    int rc = 0;
    rc |= gguf_writer_kv_str(w, "general.architecture", "qwen35");
    rc |= gguf_writer_kv_str(w, "general.name", name);
    rc |= gguf_writer_kv_str(w, "general.type", "model");
    rc |= gguf_writer_kv_u32(w, "general.file_type", llama_file_type(wtype));
    rc |= gguf_writer_kv_u32(w, "general.quantization_version", 2);
    rc |= gguf_writer_kv_u32(w, "general.alignment", GGUF_DEFAULT_ALIGNMENT);
    rc |= gguf_writer_kv_u32(w, "qwen35.block_count", (uint32_t)p->n_layers);
    rc |= gguf_writer_kv_u32(w, "qwen35.context_length", (uint32_t)p->n_ctx);
    rc |= gguf_writer_kv_u32(w, "qwen35.embedding_length", (uint32_t)p->n_embd);
    rc |= gguf_writer_kv_u32(w, "qwen35.feed_forward_length", (uint32_t)p->n_ff);
    rc |= gguf_writer_kv_u32(w, "qwen35.attention.head_count", (uint32_t)p->n_head);
    rc |= gguf_writer_kv_u32(w, "qwen35.attention.head_count_kv", (uint32_t)p->n_head_kv);
    rc |= gguf_writer_kv_u32(w, "qwen35.attention.key_length", (uint32_t)p->head_dim);
    rc |= gguf_writer_kv_u32(w, "qwen35.attention.value_length", (uint32_t)p->head_dim);
    rc |= gguf_writer_kv_f32(w, "qwen35.attention.layer_norm_rms_epsilon", p->rms_eps);
    rc |= gguf_writer_kv_f32(w, "qwen35.rope.freq_base", p->rope_theta);
    rc |= gguf_writer_kv_u32(w, "qwen35.rope.dimension_count", (uint32_t)p->n_rot);
    rc |= gguf_writer_kv_arr_i32(w, "qwen35.rope.dimension_sections", sections, 4);
    rc |= gguf_writer_kv_u32(w, "qwen35.ssm.conv_kernel", (uint32_t)p->conv_k);
    rc |= gguf_writer_kv_u32(w, "qwen35.ssm.state_size", (uint32_t)p->kd);
    rc |= gguf_writer_kv_u32(w, "qwen35.ssm.group_count", (uint32_t)p->kh);
    rc |= gguf_writer_kv_u32(w, "qwen35.ssm.time_step_rank", (uint32_t)p->vh);
    rc |= gguf_writer_kv_u32(w, "qwen35.ssm.inner_size", (uint32_t)(p->vh * p->vd));
    rc |= gguf_writer_kv_u32(w, "qwen35.full_attention_interval", (uint32_t)p->attn_interval);
    rc |= gguf_writer_kv_str(w, "kestrel.synthetic.preset", preset_name);
    rc |= gguf_writer_kv_u64(w, "kestrel.synthetic.seed", seed);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* the command                                                             */

typedef struct gen_args {
    const char *preset, *type, *out;
    long long seed, vocab, layers, threads;
    int seed_set;
} gen_args;

static int parse_args(int argc, char **argv, gen_args *a) {
    memset(a, 0, sizeof *a);
    a->vocab = a->layers = -1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    a->threads = cpus > 0 ? cpus : 1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int has = 1;
        if (strcmp(f, "--preset") == 0 && v) a->preset = v;
        else if (strcmp(f, "--type") == 0 && v) a->type = v;
        else if (strcmp(f, "-o") == 0 && v) a->out = v;
        else if (strcmp(f, "--seed") == 0 && v) {
            if (parse_int(v, &a->seed) || a->seed < 0) {
                cli_error("gen-model: --seed '%s': expected a non-negative integer", v);
                return -1;
            }
            a->seed_set = 1;
        } else if (strcmp(f, "--vocab") == 0 && v) {
            if (parse_int(v, &a->vocab) || a->vocab < 1 || a->vocab > (1ll << 24)) {
                cli_error("gen-model: --vocab '%s': expected an integer in 1..16777216", v);
                return -1;
            }
        } else if (strcmp(f, "--layers") == 0 && v) {
            if (parse_int(v, &a->layers) || a->layers < 1 || a->layers > 4096) {
                cli_error("gen-model: --layers '%s': expected an integer in 1..4096", v);
                return -1;
            }
        } else if ((strcmp(f, "-j") == 0 || strcmp(f, "--threads") == 0) && v) {
            if (parse_int(v, &a->threads) || a->threads < 1 || a->threads > GEN_MAX_THREADS) {
                cli_error("gen-model: %s '%s': expected an integer in 1..%d", f, v, GEN_MAX_THREADS);
                return -1;
            }
        } else {
            has = 0;
        }
        if (!has) {
            if (f[0] == '-' && !v && (strcmp(f, "--preset") == 0 || strcmp(f, "--type") == 0 ||
                                      strcmp(f, "-o") == 0 || strcmp(f, "--seed") == 0 ||
                                      strcmp(f, "--vocab") == 0 || strcmp(f, "--layers") == 0 ||
                                      strcmp(f, "-j") == 0 || strcmp(f, "--threads") == 0))
                cli_error("gen-model: option '%s' needs a value", f);
            else
                cli_error("gen-model: unknown argument '%s'", f);
            return -1;
        }
        i++;
    }
    if (!a->preset || !a->type || !a->out || !a->seed_set) {
        cli_error("gen-model: missing %s", !a->preset ? "--preset" : !a->type ? "--type" : !a->out ? "-o FILE" : "--seed");
        return -1;
    }
    return 0;
}

int cmd_gen_model(int argc, char **argv) {
    int ret = EXIT_USAGE;
    gen_args a;
    gen_model m = {0};
    gen_chunk *chunks = NULL;
    gguf_writer *w = NULL;
    gen_pipe pipe = {0};
    pthread_t th[GEN_MAX_THREADS];
    int n_started = 0, sync_init = 0;
    char err[512];
#define GEN_WRITE(call)                                    \
    do {                                                   \
        if (call) {                                        \
            cli_error("%s", gguf_writer_error(w));         \
            goto cleanup;                                  \
        }                                                  \
    } while (0)

    if (parse_args(argc, argv, &a)) return cli_usage("gen-model");
    const gen_preset *base = find_preset(a.preset);
    if (!base) {
        cli_error("gen-model: unknown preset '%s' (known: qwen3.5-27b, qwen3.5-9b, qwen3.5-2b, tiny)", a.preset);
        return EXIT_USAGE;
    }
    int wt = ggml_type_from_name(a.type);
    if (wt != GGML_TYPE_F32 && wt != GGML_TYPE_F16 && wt != GGML_TYPE_Q4_0 && wt != GGML_TYPE_Q8_0) {
        cli_error("gen-model: unsupported --type '%s' (known: q4_0, q8_0, f16, f32)", a.type);
        return EXIT_USAGE;
    }
    gen_preset p = *base;
    if (a.vocab > 0) p.n_vocab = (int)a.vocab;
    if (a.layers > 0) p.n_layers = (int)a.layers;

    init_q4_byte();
    build_model(&m, &p, (uint32_t)wt, (uint64_t)a.seed);
    uint64_t total = 0, per_token = 0;
    for (int i = 0; i < m.n; i++) {
        if (m.t[i].n_bytes == 0) { /* ne0 not a multiple of the block size */
            cli_error("gen-model: tensor '%s': ne0 %llu is not a multiple of %llu for type %s", m.t[i].name,
                      (unsigned long long)m.t[i].ne[0], (unsigned long long)ggml_type_block_size(m.t[i].type),
                      ggml_type_name(m.t[i].type));
            goto cleanup;
        }
        total += m.t[i].n_bytes;
        /* bytes one decode step reads: everything but the embedding table (unless it is the lm_head) */
        if (strcmp(m.t[i].name, "token_embd.weight") != 0 || p.tied) per_token += m.t[i].n_bytes;
    }

    double t0 = now_seconds();
    if (gguf_writer_open(a.out, &w, err, sizeof err)) {
        cli_error("%s", err);
        goto cleanup;
    }
    GEN_WRITE(write_metadata(w, &p, a.preset, (uint32_t)wt, (uint64_t)a.seed));
    for (int i = 0; i < m.n; i++) GEN_WRITE(gguf_writer_tensor(w, m.t[i].name, m.t[i].type, m.t[i].n_dims, m.t[i].ne));
    GEN_WRITE(gguf_writer_begin_data(w));

    chunks = make_chunks(&m, &pipe.n_chunks);
    pipe.m = &m;
    pipe.chunks = chunks;
    pipe.n_slots = (int)(2 * a.threads + 2);
    pipe.slot = xcalloc((size_t)pipe.n_slots, sizeof(uint8_t *));
    pipe.slot_ready = xmalloc(sizeof(int64_t) * (size_t)pipe.n_slots);
    for (int s = 0; s < pipe.n_slots; s++) {
        pipe.slot[s] = xmalloc(GEN_CHUNK_BYTES);
        pipe.slot_ready[s] = -1;
    }
    pthread_mutex_init(&pipe.mu, NULL);
    pthread_cond_init(&pipe.cv_free, NULL);
    pthread_cond_init(&pipe.cv_ready, NULL);
    sync_init = 1;
    for (; n_started < a.threads; n_started++)
        if (pthread_create(&th[n_started], NULL, gen_worker, &pipe) != 0) {
            cli_error("gen-model: cannot start thread %d: %s", n_started, strerror(errno));
            goto cleanup;
        }

    for (int64_t c = 0; c < pipe.n_chunks; c++) {
        int s = (int)(c % pipe.n_slots);
        pthread_mutex_lock(&pipe.mu);
        while (pipe.slot_ready[s] != c) pthread_cond_wait(&pipe.cv_ready, &pipe.mu);
        pthread_mutex_unlock(&pipe.mu);
        GEN_WRITE(gguf_writer_write(w, pipe.slot[s], chunks[c].bytes));
        pthread_mutex_lock(&pipe.mu);
        pipe.slot_ready[s] = -1;
        pipe.written = c + 1;
        pthread_cond_broadcast(&pipe.cv_free);
        pthread_mutex_unlock(&pipe.mu);
    }
    GEN_WRITE(gguf_writer_finish(w)); /* on failure the writer is still ours to abort */
    w = NULL;                          /* finish freed it */
    double dt = now_seconds() - t0;
    printf("wrote %s: preset %s, type %s, seed %lld, %d layers, vocab %d, %d tensors\n", a.out, a.preset, a.type,
           a.seed, p.n_layers, p.n_vocab, m.n);
    printf("  tensor bytes %llu (%.3f GB), weight bytes read per token %llu (%.3f GB)\n",
           (unsigned long long)total, (double)total / 1e9, (unsigned long long)per_token, (double)per_token / 1e9);
    printf("  %.2f s, %.2f GB/s, %lld threads\n", dt, dt > 0 ? (double)total / 1e9 / dt : 0.0, a.threads);
    ret = EXIT_OK;
cleanup:
    if (sync_init) {
        pthread_mutex_lock(&pipe.mu);
        pipe.stop = 1;
        pthread_cond_broadcast(&pipe.cv_free);
        pthread_mutex_unlock(&pipe.mu);
    }
    for (int i = 0; i < n_started; i++) pthread_join(th[i], NULL);
    if (sync_init) {
        pthread_mutex_destroy(&pipe.mu);
        pthread_cond_destroy(&pipe.cv_free);
        pthread_cond_destroy(&pipe.cv_ready);
    }
    if (w) gguf_writer_abort(w);
    for (int s = 0; pipe.slot && s < pipe.n_slots; s++) free(pipe.slot[s]);
    free(pipe.slot);
    free(pipe.slot_ready);
    free(chunks);
    free(m.t);
    return ret;
#undef GEN_WRITE
}
