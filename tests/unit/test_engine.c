/*
 * test_engine.c - TAP tests of the CPU reference engine (cpu_engine.c) on
 * tiny random qwen35 GGUF models written here with the C GGUF writer:
 * f32, q8_0 and q4_0 weights, kh != vh (tiled v-heads), a tied variant.
 *
 * Checks: determinism (reset-then-replay, two handles, threads=1 vs 2),
 * teacher forcing T tokens in one call == T one-token calls (bit-identical),
 * info and readback shapes, and each bad-input class with its exact error.
 *
 * `test_engine --write PATH f32|f16|q8_0|q4_0 [tied]` only writes a model
 * (used by tests/engine-logits.sh).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "kestrel/engine.h"
#include "quant.h"
#include "tap.h"

/* ---- the tiny model: D 64, 5 layers (GDN GDN GDN ATTN GDN), kh 2 != vh 4 ---- */
enum { D = 64, L = 5, F = 96, V = 100, H = 4, HKV = 2, HD = 32, NROT = 8, KCONV = 4, KH = 2, VH = 4, KD = 16,
       VD = 16, CD = 2 * KH * KD + VH * VD, INTERVAL = 4, CTX = 64 };

enum kind { K_EMB, K_MAT, K_NORM, K_SSM_A, K_DT, K_CONV };

typedef struct tdesc {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[2];
    enum kind kind;
    uint32_t type;
    uint32_t seed; /* values depend only on the name, so every variant shares them */
} tdesc;

typedef struct gen_opts {
    uint32_t mat_type;         /* type of every matrix (and token_embd) */
    int tied;                  /* no output.weight */
    const char *arch;          /* general.architecture */
    const char *skip_tensor;   /* leave this tensor out */
    const char *skip_key;      /* leave this key out */
    const char *bad_shape;     /* give this 2-D tensor ne1 - 8 */
    const char *bad_type;      /* store this f32 vector as q8_0 */
} gen_opts;

static uint32_t name_seed(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h ? h : 1;
}

static float next_rand(uint32_t *st) { /* xorshift32 -> [-1, 1) */
    *st ^= *st << 13;
    *st ^= *st >> 17;
    *st ^= *st << 5;
    return (float)(*st >> 8) / (float)(1u << 23) - 1.0f;
}

static int n_desc;
static tdesc descs[128];

static void add(const char *name, uint64_t ne0, uint64_t ne1, enum kind k, uint32_t mat_type) {
    tdesc *t = &descs[n_desc++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = ne1 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1 ? ne1 : 1;
    t->kind = k;
    t->type = (k == K_EMB || k == K_MAT) ? mat_type : GGML_TYPE_F32;
    /* output.weight shares token_embd's values, so the tied and untied variants agree */
    t->seed = name_seed(strcmp(name, "output.weight") == 0 ? "token_embd.weight" : name);
}

static void build_descs(const gen_opts *o) {
    char nm[64];
    n_desc = 0;
    add("token_embd.weight", D, V, K_EMB, o->mat_type);
    add("output_norm.weight", D, 0, K_NORM, 0);
    if (!o->tied) add("output.weight", D, V, K_EMB, o->mat_type);
    for (int l = 0; l < L; l++) {
#define N(s) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), nm)
        add(N("attn_norm.weight"), D, 0, K_NORM, 0);
        add(N("post_attention_norm.weight"), D, 0, K_NORM, 0);
        add(N("ffn_gate.weight"), D, F, K_MAT, o->mat_type);
        add(N("ffn_up.weight"), D, F, K_MAT, o->mat_type);
        add(N("ffn_down.weight"), F, D, K_MAT, o->mat_type);
        if ((l + 1) % INTERVAL != 0) {
            add(N("attn_qkv.weight"), D, CD, K_MAT, o->mat_type);
            add(N("attn_gate.weight"), D, VH * VD, K_MAT, o->mat_type);
            add(N("ssm_conv1d.weight"), KCONV, CD, K_CONV, 0);
            add(N("ssm_dt.bias"), VH, 0, K_DT, 0);
            add(N("ssm_a"), VH, 0, K_SSM_A, 0);
            add(N("ssm_beta.weight"), D, VH, K_MAT, o->mat_type);
            add(N("ssm_alpha.weight"), D, VH, K_MAT, o->mat_type);
            add(N("ssm_norm.weight"), VD, 0, K_NORM, 0);
            add(N("ssm_out.weight"), VH * VD, D, K_MAT, o->mat_type);
        } else {
            add(N("attn_q.weight"), D, 2 * H * HD, K_MAT, o->mat_type);
            add(N("attn_k.weight"), D, HKV * HD, K_MAT, o->mat_type);
            add(N("attn_v.weight"), D, HKV * HD, K_MAT, o->mat_type);
            add(N("attn_output.weight"), H * HD, D, K_MAT, o->mat_type);
            add(N("attn_q_norm.weight"), HD, 0, K_NORM, 0);
            add(N("attn_k_norm.weight"), HD, 0, K_NORM, 0);
        }
#undef N
    }
    for (int i = 0; i < n_desc; i++) {
        if (o->bad_shape && strcmp(descs[i].name, o->bad_shape) == 0) descs[i].ne[1] -= 8;
        if (o->bad_type && strcmp(descs[i].name, o->bad_type) == 0) descs[i].type = GGML_TYPE_Q8_0;
    }
}

/* One row's values. row: (ne0,) */
static void gen_row(const tdesc *t, uint32_t *st, float *row) {
    for (uint64_t i = 0; i < t->ne[0]; i++) {
        float r = next_rand(st);
        switch (t->kind) {
        case K_EMB: row[i] = r; break;
        case K_MAT: row[i] = r * 1.0f / sqrtf((float)t->ne[0]); break;
        case K_NORM: row[i] = 1.0f + 0.1f * r; break; /* stored 1+w */
        case K_SSM_A: row[i] = -expf(0.5f * r); break; /* -exp(A_log) */
        case K_DT: row[i] = 0.5f * r; break;
        case K_CONV: row[i] = 0.5f * r; break;
        }
    }
}

static int kv_all(gguf_writer *w, const gen_opts *o) {
    static const int32_t sections[4] = {11, 11, 10, 0};
    struct { const char *key; uint32_t v; } u32s[] = {
        {"qwen35.block_count", L}, {"qwen35.context_length", CTX}, {"qwen35.embedding_length", D},
        {"qwen35.feed_forward_length", F}, {"qwen35.attention.head_count", H},
        {"qwen35.attention.head_count_kv", HKV}, {"qwen35.attention.key_length", HD},
        {"qwen35.attention.value_length", HD}, {"qwen35.rope.dimension_count", NROT},
        {"qwen35.ssm.conv_kernel", KCONV}, {"qwen35.ssm.state_size", KD}, {"qwen35.ssm.group_count", KH},
        {"qwen35.ssm.time_step_rank", VH}, {"qwen35.ssm.inner_size", VH * VD},
        {"qwen35.full_attention_interval", INTERVAL},
    };
    if (gguf_writer_kv_str(w, "general.architecture", o->arch ? o->arch : "qwen35")) return -1;
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++)
        if (!(o->skip_key && strcmp(o->skip_key, u32s[i].key) == 0) && gguf_writer_kv_u32(w, u32s[i].key, u32s[i].v))
            return -1;
    if (gguf_writer_kv_f32(w, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f) ||
        gguf_writer_kv_f32(w, "qwen35.rope.freq_base", 10000.0f) ||
        gguf_writer_kv_arr_i32(w, "qwen35.rope.dimension_sections", sections, 4))
        return -1;
    return 0;
}

/* Write the tiny model. Returns 0 or prints the writer's error. */
static int write_model(const char *path, const gen_opts *o) {
    int ret = -1;
    char err[512];
    gguf_writer *w = NULL;
    float *row = NULL;
    uint8_t *qrow = NULL;
    build_descs(o);
    if (gguf_writer_open(path, &w, err, sizeof err) != 0) {
        printf("# %s\n", err);
        return -1;
    }
    if (kv_all(w, o)) goto cleanup;
    for (int i = 0; i < n_desc; i++) {
        if (o->skip_tensor && strcmp(o->skip_tensor, descs[i].name) == 0) continue;
        if (gguf_writer_tensor(w, descs[i].name, descs[i].type, descs[i].n_dims, descs[i].ne)) goto cleanup;
    }
    if (gguf_writer_begin_data(w)) goto cleanup;
    row = malloc(sizeof(float) * 512);
    qrow = malloc(4 * 512);
    for (int i = 0; i < n_desc; i++) {
        const tdesc *t = &descs[i];
        if (o->skip_tensor && strcmp(o->skip_tensor, t->name) == 0) continue;
        uint32_t st = t->seed;
        uint64_t rb = ggml_row_bytes(t->type, t->ne[0]);
        for (uint64_t r = 0; r < t->ne[1]; r++) {
            gen_row(t, &st, row);
            switch (t->type) {
            case GGML_TYPE_F32: memcpy(qrow, row, rb); break;
            case GGML_TYPE_F16:
                for (uint64_t j = 0; j < t->ne[0]; j++) ((uint16_t *)qrow)[j] = f32_to_f16(row[j]);
                break;
            case GGML_TYPE_Q8_0: quantize_row_q8_0(row, (block_q8_0 *)qrow, (int64_t)t->ne[0]); break;
            case GGML_TYPE_Q4_0: quantize_row_q4_0(row, (block_q4_0 *)qrow, (int64_t)t->ne[0]); break;
            default: goto cleanup;
            }
            if (gguf_writer_write(w, qrow, rb)) goto cleanup;
        }
    }
    if (gguf_writer_finish(w)) goto cleanup;
    w = NULL;
    ret = 0;
cleanup:
    if (w) {
        printf("# writing %s: %s\n", path, gguf_writer_error(w));
        gguf_writer_abort(w);
    }
    free(row);
    free(qrow);
    return ret;
}

/* ---- TAP ---- */
/* bit-identical float arrays a, b: (n,) */
static void is_bits(const float *a, const float *b, size_t n, const char *desc) {
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    ok(diff == 0, "%s", desc);
    if (diff) printf("#   %zu/%zu elements differ\n", diff, n);
}

static const kestrel_engine_api *api;
static char dir[256];

static kestrel_engine *open_ok(const char *path, const char *opts) {
    kestrel_engine *e = NULL;
    char err[512];
    if (api->open(path, opts, &e, err, sizeof err) != 0) {
        printf("# open %s (%s): %s\n", path, opts ? opts : "", err);
        return NULL;
    }
    return e;
}

/* Run tokens (T,) teacher-forced with ALL_LOGITS | CAPTURE; logits: (T, V). A failure is a
 * failed test point (the plan is printed at the end: the checks it skips would go unnoticed). */
static int run_all(kestrel_engine *e, const int32_t *tokens, int T, float *logits) {
    if (api->forward(e, tokens, T, KESTREL_FWD_ALL_LOGITS | KESTREL_FWD_CAPTURE, logits, NULL) != 0) {
        ok(0, "forward of %d tokens: %s", T, api->last_error(e));
        return -1;
    }
    return 0;
}

static const int32_t seq[12] = {3, 17, 42, 99, 0, 5, 5, 61, 23, 77, 8, 50};
enum { T = 12 };

static void test_open_error(const char *path, const char *opts, const char *exp, const char *desc) {
    kestrel_engine *e = (kestrel_engine *)1;
    char err[512] = "";
    int rc = api->open(path, opts, &e, err, sizeof err);
    ok(rc != 0 && e == NULL, "%s", desc);
    char d[200];
    snprintf(d, sizeof d, "%s: exact message", desc);
    is_str(exp, err, d);
}

static void test_f32_model(const char *path) {
    float *a = malloc(sizeof(float) * T * V), *b = malloc(sizeof(float) * T * V), *c = malloc(sizeof(float) * T * V);
    kestrel_engine *e = open_ok(path, "threads=2"), *e2 = open_ok(path, "threads=1");
    ok(e && e2, "f32: open with threads=2 and threads=1");
    if (!e || !e2) goto cleanup;
    kestrel_info in;
    api->info(e, &in);
    is_int(V, in.n_vocab, "info: n_vocab");
    is_int(L, in.n_layers, "info: n_layers");
    is_int(D, in.n_embd, "info: n_embd");
    is_int(CTX, in.max_context, "info: max_context = min(context_length, 4096)");
    is_str("cpu (2 threads)", in.device, "info: device");
    char types[L + 1];
    for (int l = 0; l < L; l++) types[l] = (char)('0' + in.layer_types[l]);
    types[L] = '\0';
    is_str("00010", types, "info: layer_types from full_attention_interval 4");
    /* weight bytes: every tensor except token_embd; f32 so 4 bytes per element */
    uint64_t wb = 0;
    for (int i = 0; i < n_desc; i++)
        if (strcmp(descs[i].name, "token_embd.weight") != 0) wb += 4 * descs[i].ne[0] * descs[i].ne[1];
    is_int((long long)wb, (long long)in.weight_bytes_per_token, "info: weight_bytes_per_token");
    is_int(2LL * 4 * 4 * (VH * KD * VD + (KCONV - 1) * CD), (long long)in.state_bytes_per_token,
           "info: state_bytes_per_token = 2 * (S + conv) of 4 GDN layers");

    /* reset-then-replay */
    if (run_all(e, seq, T, a) || api->reset(e) || run_all(e, seq, T, b)) goto cleanup;
    is_bits(a, b, (size_t)T * V, "f32: reset then replay is bit-identical");
    int finite = 1;
    for (int i = 0; i < T * V; i++) finite &= isfinite(a[i]) != 0;
    ok(finite, "f32: logits finite");
    /* threads=1 handle in the same process */
    if (run_all(e2, seq, T, c)) goto cleanup;
    is_bits(a, c, (size_t)T * V, "f32: threads=1 vs threads=2 bit-identical (second handle, same process)");

    /* teacher forcing: T one-token calls == one T-token call, logits, argmax, h, state */
    api->reset(e2);
    float hT[D], h1[D], S1[VH * KD * VD], ST[VH * KD * VD];
    size_t n = 0;
    int rb_ok = api->readback(e, "h", 2, 7, hT, D, &n) == 0 && n == D;
    int32_t am[T], am1;
    int am_ok = 1;
    for (int t = 0; t < T; t++) {
        if (api->forward(e2, &seq[t], 1, KESTREL_FWD_CAPTURE, c + (size_t)t * V, &am1) != 0) {
            ok(0, "one-token forward at position %d: %s", t, api->last_error(e2));
            goto cleanup;
        }
        if (t == 7) rb_ok &= api->readback(e2, "h", 2, 0, h1, D, &n) == 0;
        am[t] = am1;
    }
    is_bits(a, c, (size_t)T * V, "f32: T one-token calls == one T-token call (logits bit-identical)");
    ok(rb_ok, "readback h at (layer 2, pos 7) in both modes");
    is_bits(hT, h1, D, "f32: hidden state h layer 2 pos 7 identical in both modes");
    rb_ok = api->readback(e, "S", 4, -1, ST, VH * KD * VD, &n) == 0 && api->readback(e2, "S", 4, 0, S1, VH * KD * VD, &n) == 0;
    ok(rb_ok, "readback S of layer 4 after the last token");
    is_bits(ST, S1, VH * KD * VD, "f32: GDN state S identical in both modes");
    /* argmax of the T-token call */
    int32_t amT[T];
    api->reset(e);
    if (api->forward(e, seq, T, KESTREL_FWD_ALL_LOGITS, NULL, amT) != 0) {
        ok(0, "forward with argmax only: %s", api->last_error(e));
        goto cleanup;
    }
    for (int t = 0; t < T; t++) {
        int best = 0;
        for (int i = 1; i < V; i++) if (a[(size_t)t * V + i] > a[(size_t)t * V + best]) best = i;
        am_ok &= amT[t] == best && am[t] == best;
    }
    ok(am_ok, "argmax: per position, without logits, equals the argmax of the logits");

    /* readback shapes */
    api->reset(e);
    if (run_all(e, seq, 5, a)) goto cleanup;
    struct { const char *name; int layer; int pos; size_t n; } shapes[] = {
        {"h", 0, 0, D}, {"h", L - 1, 4, D}, {"hfinal", 0, 4, D}, {"S", 0, -1, VH * KD * VD},
        {"conv", 1, 4, (KCONV - 1) * CD}, {"q", 2, -1, KH * KD}, {"k", 2, -1, KH * KD}, {"v", 2, -1, VH * VD},
        {"z", 0, -1, VH * VD}, {"beta", 0, -1, VH}, {"g", 0, -1, VH}, {"o", 4, -1, VH * VD},
        {"o_norm", 4, -1, VH * VD}, {"qkv", 1, -1, CD}, {"q_conv", 1, -1, KH * KD}, {"k_conv", 1, -1, KH * KD},
        {"b", 2, -1, VH}, {"a", 2, -1, VH},
    };
    int shapes_ok = 1;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        n = 0;
        if (api->readback(e, shapes[i].name, shapes[i].layer, shapes[i].pos, NULL, 0, &n) != 0 || n != shapes[i].n) {
            printf("#   readback %s: n = %zu, expected %zu (%s)\n", shapes[i].name, n, shapes[i].n, api->last_error(e));
            shapes_ok = 0;
        }
    }
    ok(shapes_ok, "readback: element counts of h, hfinal, S, conv, qkv, q, k, v, q_conv, k_conv, z, b, a, beta, g, o, o_norm");
    /* the step intermediates are consistent with each other: beta = sigmoid(b), k = l2norm(k_conv),
     * and the newest row of the conv history is this token's qkv */
    {
        float bb[VH], bt[VH], kc[KH * KD], kk[KH * KD], qkv[CD], hist[(KCONV - 1) * CD];
        api->readback(e, "b", 1, -1, bb, VH, &n);
        api->readback(e, "beta", 1, -1, bt, VH, &n);
        api->readback(e, "k_conv", 1, -1, kc, KH * KD, &n);
        api->readback(e, "k", 1, -1, kk, KH * KD, &n);
        api->readback(e, "qkv", 1, -1, qkv, CD, &n);
        api->readback(e, "conv", 1, -1, hist, (KCONV - 1) * CD, &n);
        int cons = 1;
        for (int h = 0; h < VH; h++) cons &= fabsf(bt[h] - 1.0f / (1.0f + expf(-bb[h]))) < 1e-6f;
        for (int h = 0; h < KH; h++) {
            double s2 = 0;
            for (int i = 0; i < KD; i++) s2 += (double)kc[h * KD + i] * kc[h * KD + i];
            for (int i = 0; i < KD; i++) cons &= fabs(kk[h * KD + i] - kc[h * KD + i] / sqrt(s2 + 1e-6)) < 1e-5;
        }
        cons &= memcmp(qkv, hist + (KCONV - 2) * CD, sizeof qkv) == 0;
        ok(cons, "readback: beta = sigmoid(b), k = l2norm(k_conv), conv history's newest row = qkv");
    }
    /* conv history after 5 tokens holds the last 3 qkv inputs: nonzero; the q readback is l2-normed * 1/sqrt(kd) */
    float q[KH * KD];
    api->readback(e, "q", 0, -1, q, KH * KD, &n);
    double ss = 0;
    for (int i = 0; i < KD; i++) ss += (double)q[i] * q[i];
    ok(fabs(ss - 1.0 / KD) < 1e-5, "readback q: per head |q|^2 = 1/kd (l2norm then scale)");
    float beta[VH];
    api->readback(e, "beta", 0, -1, beta, VH, &n);
    ok(beta[0] > 0 && beta[0] < 1 && beta[3] > 0 && beta[3] < 1, "readback beta in (0, 1)");

    /* readback errors */
    float buf[8];
    ok(api->readback(e, "S", 3, -1, NULL, 0, &n) != 0, "readback S of an attention layer fails");
    is_str("readback 'S': layer 3 is a full-attention layer, not a GDN layer", api->last_error(e),
           "readback S of an attention layer: message");
    api->readback(e, "nope", 0, 0, NULL, 0, &n);
    is_str("readback: unknown name 'nope' (h, hfinal, S, conv, qkv, q, k, v, q_conv, k_conv, z, b, a, beta, g, o, "
           "o_norm)", api->last_error(e),
           "readback unknown name: message");
    ok(api->readback(e, "h", 0, 0, buf, 8, &n) != 0, "readback into a too-small buffer fails");
    is_str("readback 'h': buffer holds 8 floats, need 64", api->last_error(e), "readback too small: message");
    api->readback(e, "h", 0, 5, NULL, 0, &n);
    is_str("readback 'h': position 5 out of range [0, 5)", api->last_error(e), "readback h past the last position");
    api->readback(e, "S", 0, 2, NULL, 0, &n);
    is_str("readback 'S': state is only kept after the last token (pos -1 or 4), not 2", api->last_error(e),
           "readback state at an earlier position");
    if (api->forward(e, seq, 1, 0, NULL, NULL) != 0) {
        ok(0, "forward without CAPTURE: %s", api->last_error(e));
        goto cleanup;
    }
    ok(api->readback(e, "hfinal", 0, 0, NULL, 0, &n) != 0, "readback hfinal without CAPTURE fails");

    /* forward errors change nothing: bad token, then context overflow, then replay */
    api->reset(e);
    int32_t bad[3] = {1, V, 2};
    ok(api->forward(e, bad, 3, KESTREL_FWD_ALL_LOGITS, a, NULL) != 0, "forward with token id V fails");
    is_str("forward: token 100 at position 1 is out of range [0, 100)", api->last_error(e), "bad token: message");
    int32_t many[CTX + 1];
    for (int i = 0; i <= CTX; i++) many[i] = i % V;
    api->forward(e, many, CTX + 1, 0, NULL, NULL);
    is_str("forward: 65 tokens at position 0 exceed max_context 64 (option ctx=N)", api->last_error(e),
           "context overflow: message");
    if (run_all(e, seq, T, b)) goto cleanup;
    api->reset(e2);
    if (run_all(e2, seq, T, c)) goto cleanup;
    is_bits(c, b, (size_t)T * V, "failed forward calls leave the state untouched");

    /* profile */
    {
        kestrel_engine *ep = open_ok(path, "profile=1,threads=1,ctx=16");
        kestrel_prof_entry pe[32];
        int32_t np = 0;
        int prof_ok = ep && api->forward(ep, seq, 3, 0, a, NULL) == 0 && api->profile(ep, pe, 32, &np) == 0;
        int has_matvec = 0;
        for (int i = 0; prof_ok && i < np; i++)
            if (strcmp(pe[i].name, "matvec") == 0 && pe[i].calls > 0 && pe[i].total_ms >= 0) has_matvec = 1;
        ok(prof_ok && has_matvec, "profile=1: per-op entries include matvec with calls");
        kestrel_info pi;
        if (ep) api->info(ep, &pi);
        is_int(16, ep ? pi.max_context : -1, "option ctx=16 sets max_context");
        api->profile(e, pe, 32, &np);
        is_int(0, np, "profile without profile=1 reports nothing");
        api->close(ep);
    }
cleanup:
    api->close(e);
    api->close(e2);
    free(a);
    free(b);
    free(c);
}

/* Quantised model: runs deterministically across threads; logits near the f32 model's. ref: (T, V) */
static void test_quant_model(const char *path, const char *tname, const float *ref, double gate) {
    float *a = malloc(sizeof(float) * T * V), *b = malloc(sizeof(float) * T * V);
    kestrel_engine *e = open_ok(path, "threads=2"), *e1 = open_ok(path, "threads=1");
    char d[160];
    snprintf(d, sizeof d, "%s: open", tname);
    ok(e && e1, d);
    if (!e || !e1) goto cleanup;
    if (run_all(e, seq, T, a) || run_all(e1, seq, T, b)) goto cleanup;
    snprintf(d, sizeof d, "%s: threads=1 vs threads=2 bit-identical", tname);
    is_bits(a, b, (size_t)T * V, d);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        double md = 0, mr = 0;
        for (int i = 0; i < V; i++) {
            double dd = fabs((double)a[t * V + i] - ref[t * V + i]);
            if (!(dd <= md)) md = dd;
            if (fabs(ref[t * V + i]) > mr) mr = fabs(ref[t * V + i]);
        }
        if (!(md / mr <= worst)) worst = md / mr;
    }
    snprintf(d, sizeof d, "%s: logits max_rel vs the f32 model %.4f <= %.2f", tname, worst, gate);
    ok(worst <= gate, d);
cleanup:
    api->close(e);
    api->close(e1);
    free(a);
    free(b);
}

/* per position max_rel = max|a - b| / max|b|; the worst over T positions. a, b: (T, V) */
static double worst_max_rel(const float *a, const float *b) {
    double worst = 0;
    for (int t = 0; t < T; t++) {
        double md = 0, mr = 0;
        for (int i = 0; i < V; i++) {
            double dd = fabs((double)a[t * V + i] - b[t * V + i]);
            if (!(dd <= md)) md = dd;
            if (fabs(b[t * V + i]) > mr) mr = fabs(b[t * V + i]);
        }
        if (!(md / mr <= worst)) worst = md / mr;
    }
    return worst;
}

/* Option dot=q8 (8-bit activations for every q4_0 matrix: quantize_q8 + matvec_q8).
 * pq4: the q4_0 model; pq8: the q8_0 model (no q4_0 matrix, so dot=q8 must change nothing). */
static void test_dot_q8(const char *pq4, const char *pq8) {
    float *f = malloc(sizeof(float) * T * V), *a = malloc(sizeof(float) * T * V);
    float *b = malloc(sizeof(float) * T * V), *c = malloc(sizeof(float) * T * V);
    kestrel_engine *ef = open_ok(pq4, "threads=2"), *e = open_ok(pq4, "threads=2,dot=q8");
    kestrel_engine *e1 = open_ok(pq4, "dot=q8,threads=1"), *ep = NULL, *e8 = NULL, *e8q = NULL;
    ok(ef && e && e1, "dot=q8: open the q4_0 model with dot=q8 (threads 2 and 1) and dot=f32");
    if (!ef || !e || !e1) goto cleanup;
    if (run_all(ef, seq, T, f) || run_all(e, seq, T, a) || api->reset(e) || run_all(e, seq, T, b) ||
        run_all(e1, seq, T, c))
        goto cleanup;
    int finite = 1;
    for (int i = 0; i < T * V; i++) finite &= isfinite(a[i]) != 0;
    ok(finite, "dot=q8: q4_0 logits finite");
    is_bits(a, b, (size_t)T * V, "dot=q8: reset then replay is bit-identical");
    is_bits(a, c, (size_t)T * V, "dot=q8: threads=1 vs threads=2 bit-identical");
    size_t same = 0;
    for (int i = 0; i < T * V; i++) same += memcmp(&a[i], &f[i], sizeof(float)) == 0;
    ok(same < (size_t)T * V, "dot=q8: differs from dot=f32 (the option takes effect): %zu/%d logits equal", same,
       T * V);
    /* measured 0.0077 on this model (random weights, 12 positions, gcc 12 x86-64); the gate 0.04 leaves 5x
     * margin and still catches a wrong scale, offset or block order (those give max_rel ~1) */
    double rel = worst_max_rel(a, f);
    int agree = 0;
    for (int t = 0; t < T; t++) {
        int ia = 0, ib = 0;
        for (int i = 1; i < V; i++) {
            if (a[t * V + i] > a[t * V + ia]) ia = i;
            if (f[t * V + i] > f[t * V + ib]) ib = i;
        }
        agree += ia == ib;
    }
    ok(rel <= 0.04, "dot=q8 vs dot=f32 on q4_0: worst max_rel %.4f <= 0.04 (argmax agrees %d/%d)", rel, agree, T);

    /* profile: every q4_0 product is quantize_q8 + matvec_q8 (the lm_head booked as lm_head), no matvec left.
     * 3 tokens, logits of the last only: per token 4 GDN layers x 5 + 1 attention layer x 4 + 5 FFNs x 3 = 39
     * matvecs, + 1 lm_head -> quantize_q8 3 * 39 + 1 = 118, matvec_q8 117, lm_head 1 */
    ep = open_ok(pq4, "profile=1,threads=1,dot=q8");
    kestrel_prof_entry pe[32];
    int32_t np = 0;
    long long n_quant = -1, n_mvq8 = -1, n_mv = 0, n_lm = -1;
    if (ep && api->forward(ep, seq, 3, 0, a, NULL) == 0 && api->profile(ep, pe, 32, &np) == 0) {
        for (int i = 0; i < np && i < 32; i++) {
            if (strcmp(pe[i].name, "quantize_q8") == 0) n_quant = (long long)pe[i].calls;
            if (strcmp(pe[i].name, "matvec_q8") == 0) n_mvq8 = (long long)pe[i].calls;
            if (strcmp(pe[i].name, "matvec") == 0) n_mv = (long long)pe[i].calls;
            if (strcmp(pe[i].name, "lm_head") == 0) n_lm = (long long)pe[i].calls;
        }
    }
    is_int(118, n_quant, "dot=q8 profile: quantize_q8 before each of the 118 q4_0 products of 3 tokens");
    is_int(117, n_mvq8, "dot=q8 profile: matvec_q8 calls (lm_head apart)");
    is_int(1, n_lm, "dot=q8 profile: lm_head calls");
    is_int(0, n_mv, "dot=q8 profile: no f32 matvec left on an all-q4_0 model");

    /* other weight types keep matvec: the q8_0 model gives the same bits with dot=q8 */
    e8 = open_ok(pq8, "threads=2");
    e8q = open_ok(pq8, "threads=2,dot=q8");
    if (!e8 || !e8q) {
        ok(0, "dot=q8: open the q8_0 model");
        goto cleanup;
    }
    if (run_all(e8, seq, T, b) || run_all(e8q, seq, T, c)) goto cleanup;
    is_bits(b, c, (size_t)T * V, "dot=q8 on a q8_0 model: bit-identical to dot=f32 (only q4_0 takes 8-bit activations)");
cleanup:
    api->close(ef);
    api->close(e);
    api->close(e1);
    api->close(ep);
    api->close(e8);
    api->close(e8q);
    free(f);
    free(a);
    free(b);
    free(c);
}

static int mk(char *out, size_t len, const char *name, const gen_opts *o) {
    snprintf(out, len, "%s/%s", dir, name);
    return write_model(out, o);
}

int main(int argc, char **argv) {
    api = kestrel_engine_entry(KESTREL_ENGINE_ABI_VERSION);
    if (argc >= 4 && strcmp(argv[1], "--write") == 0) {
        gen_opts o = {0};
        int ty = ggml_type_from_name(argv[3]);
        if (ty < 0) {
            fprintf(stderr, "test_engine: unknown type '%s'\n", argv[3]);
            return 2;
        }
        o.mat_type = (uint32_t)ty;
        o.tied = argc >= 5 && strcmp(argv[4], "tied") == 0;
        return write_model(argv[2], &o) == 0 ? 0 : 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kestrel-test-engine.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        printf("1..0 # SKIP cannot create a temporary directory\n");
        return 0;
    }
    char p32[300], pq8[300], pq4[300], ptied[300], puntied[300], pbad[300], exp[700];
    ok(api != NULL, "kestrel_engine_entry(KESTREL_ENGINE_ABI_VERSION) returns the table");
    ok(kestrel_engine_entry(KESTREL_ENGINE_ABI_VERSION + 1) == NULL, "kestrel_engine_entry(version + 1) is NULL");
    if (!api) goto done;
    is_int(KESTREL_ENGINE_ABI_VERSION, api->abi_version, "api: abi_version");
    is_int(sizeof(kestrel_engine_api), api->struct_size, "api: struct_size");

    gen_opts o32 = {.mat_type = GGML_TYPE_F32};
    ok(mk(p32, sizeof p32, "f32.gguf", &o32) == 0, "write the f32 model");
    test_f32_model(p32);

    /* reference logits of the f32 model for the quantised ones */
    float *ref = malloc(sizeof(float) * T * V);
    kestrel_engine *e = open_ok(p32, NULL);
    if (!e || run_all(e, seq, T, ref)) goto done;
    api->close(e);
    gen_opts oq8 = {.mat_type = GGML_TYPE_Q8_0}, oq4 = {.mat_type = GGML_TYPE_Q4_0};
    ok(mk(pq8, sizeof pq8, "q8_0.gguf", &oq8) == 0 && mk(pq4, sizeof pq4, "q4_0.gguf", &oq4) == 0,
       "write the q8_0 and q4_0 models");
    test_quant_model(pq8, "q8_0", ref, 0.03);
    test_quant_model(pq4, "q4_0", ref, 0.3);
    test_dot_q8(pq4, pq8);

    /* tied: no output.weight -> token_embd is the lm_head; equals an untied model whose output == token_embd */
    {
        gen_opts ot = {.mat_type = GGML_TYPE_Q8_0, .tied = 1}, ou = {.mat_type = GGML_TYPE_Q8_0};
        float *lt = malloc(sizeof(float) * T * V), *lu = malloc(sizeof(float) * T * V);
        ok(mk(ptied, sizeof ptied, "tied.gguf", &ot) == 0 && mk(puntied, sizeof puntied, "untied.gguf", &ou) == 0,
           "write tied and untied q8_0 models");
        kestrel_engine *et = open_ok(ptied, "threads=2"), *eu = open_ok(puntied, "threads=2");
        int run = et && eu && run_all(et, seq, T, lt) == 0 && run_all(eu, seq, T, lu) == 0;
        ok(run, "tied: runs");
        if (run) is_bits(lu, lt, (size_t)T * V, "tied: lm_head = token_embd gives the untied model's logits");
        kestrel_info ti, ui;
        if (run) {
            api->info(et, &ti);
            api->info(eu, &ui);
            is_int((long long)ui.weight_bytes_per_token, (long long)ti.weight_bytes_per_token,
                   "tied: weight_bytes_per_token counts token_embd as the lm_head");
        }
        api->close(et);
        api->close(eu);
        free(lt);
        free(lu);
    }

    /* bad inputs, each with its exact message */
    {
        gen_opts o = {.mat_type = GGML_TYPE_F32, .skip_tensor = "blk.3.attn_k.weight"};
        mk(pbad, sizeof pbad, "missing.gguf", &o);
        snprintf(exp, sizeof exp, "%s: missing tensor 'blk.3.attn_k.weight'", pbad);
        test_open_error(pbad, NULL, exp, "missing tensor");
    }
    {
        gen_opts o = {.mat_type = GGML_TYPE_F32, .bad_shape = "blk.1.attn_qkv.weight"};
        mk(pbad, sizeof pbad, "shape.gguf", &o);
        snprintf(exp, sizeof exp, "%s: tensor 'blk.1.attn_qkv.weight': shape {64, 120}, expected {64, 128}", pbad);
        test_open_error(pbad, NULL, exp, "wrong shape");
    }
    {
        gen_opts o = {.mat_type = GGML_TYPE_F32, .arch = "llama"};
        mk(pbad, sizeof pbad, "arch.gguf", &o);
        snprintf(exp, sizeof exp,
                 "%s: unsupported architecture 'llama' (key 'general.architecture'); the cpu engine runs 'qwen35'", pbad);
        test_open_error(pbad, NULL, exp, "unsupported architecture");
    }
    {
        gen_opts o = {.mat_type = GGML_TYPE_F32, .bad_type = "blk.0.attn_norm.weight"};
        mk(pbad, sizeof pbad, "type.gguf", &o);
        snprintf(exp, sizeof exp, "%s: tensor 'blk.0.attn_norm.weight': type q8_0 not allowed (want f32 or f16 or bf16)",
                 pbad);
        test_open_error(pbad, NULL, exp, "norm weight stored as q8_0 (unsupported type)");
    }
    {
        gen_opts o = {.mat_type = GGML_TYPE_F32, .skip_key = "qwen35.ssm.group_count"};
        mk(pbad, sizeof pbad, "key.gguf", &o);
        snprintf(exp, sizeof exp, "%s: missing key 'qwen35.ssm.group_count'", pbad);
        test_open_error(pbad, NULL, exp, "missing config key");
    }
    test_open_error(p32, "threads=2,foo=1",
                    "options: unknown option 'foo' (the cpu engine knows threads, ctx, profile, dot)", "unknown option");
    test_open_error(p32, "dot=x", "options: dot=x: expected f32 or q8", "dot=x");
    test_open_error(p32, "threads=1,dot=", "options: dot=: expected f32 or q8", "dot= (empty)");
    test_open_error(p32, "threads=0", "options: threads=0: expected an integer in [1, 64]", "threads=0");
    snprintf(exp, sizeof exp, "%s: option ctx=65 exceeds the model's context_length 64", p32);
    test_open_error(p32, "ctx=65", exp, "ctx beyond context_length");

    /* bandwidth probe */
    {
        double gbps = 0;
        char err[256] = "";
        int rc = api->bandwidth_probe("threads=2", 8u << 20, 3, &gbps, err, sizeof err);
        ok(rc == 0 && gbps > 0.01 && gbps < 10000, "bandwidth_probe: 8 MiB, 3 passes, a plausible GB/s");
        printf("#   cpu streaming read: %.2f GB/s\n", gbps);
        rc = api->bandwidth_probe("bogus=1", 8u << 20, 3, &gbps, err, sizeof err);
        ok(rc != 0, "bandwidth_probe: unknown option fails");
    }
    free(ref);
done:
    if (n_fail == 0) {
        const char *names[] = {"f32.gguf", "q8_0.gguf", "q4_0.gguf", "tied.gguf", "untied.gguf", "missing.gguf",
                               "shape.gguf", "arch.gguf", "type.gguf", "key.gguf"};
        char p[400];
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            unlink(p);
        }
        rmdir(dir);
    } else {
        printf("# models kept in %s\n", dir);
    }
    return tap_done();
}
