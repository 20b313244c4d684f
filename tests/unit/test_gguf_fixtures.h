/*
 * test_gguf_fixtures.h - small deterministic GGUF files for the gguf-family
 * tests (test_gguf --write-fixtures, test_gguf_mutate), written with the
 * library's writer:
 *   fixture_model:  a tiny qwen35-style model, one tensor of every float type,
 *                   a 10-entry string array (inspect abbreviates it) and an
 *                   int array;
 *   fixture_oracle: a valid oracle dump (oracle.h), 2 prompts x 2 layers,
 *                   n_embd 4, n_vocab 8; prompt 0 has a 2-token greedy
 *                   continuation, prompt 1 none.
 * and fixture_read_file, a file's bytes (both programs mutate/reread images).
 * Header-only (static functions) so each test program stands alone.
 */
#ifndef KESTREL_TEST_GGUF_FIXTURES_H
#define KESTREL_TEST_GGUF_FIXTURES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

/* The whole file at path, malloc'd (+1 byte of slack), its size in *n; NULL if it cannot be read. */
static __attribute__((unused)) uint8_t *fixture_read_file(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    uint8_t *p = NULL;
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
    if (len >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (p = malloc((size_t)len + 1)) != NULL &&
        fread(p, 1, (size_t)len, fp) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(fp);
    *n = len >= 0 ? (size_t)len : 0;
    return p;
}

/* Write n f32 values v[i] = sin(seed + 0.37 i) converted to `type` (n a multiple of 32 for q4_0/q8_0). */
static int fixture_write_values(gguf_writer *w, uint32_t type, int64_t n, float seed) {
    int rc = -1;
    float *x = malloc((size_t)n * sizeof(float));
    void *out = malloc((size_t)n * 4 + 64);
    if (!x || !out) goto cleanup;
    for (int64_t i = 0; i < n; i++) x[i] = sinf(seed + 0.37f * (float)i);
    uint64_t bytes = ggml_row_bytes(type, (uint64_t)n);
    switch (type) {
    case GGML_TYPE_F32: memcpy(out, x, (size_t)bytes); break;
    case GGML_TYPE_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)out)[i] = f32_to_f16(x[i]); break;
    case GGML_TYPE_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)out)[i] = f32_to_bf16(x[i]); break;
    case GGML_TYPE_Q4_0: quantize_row_q4_0(x, out, n); break;
    case GGML_TYPE_Q8_0: quantize_row_q8_0(x, out, n); break;
    default: goto cleanup;
    }
    rc = gguf_writer_write(w, out, bytes);
cleanup:
    free(x);
    free(out);
    return rc;
}

static int fixture_finish(gguf_writer *w, int rc, char *err, size_t err_len) {
    if (rc == 0) rc = gguf_writer_finish(w);
    if (rc != 0) {
        snprintf(err, err_len, "%s", gguf_writer_error(w));
        gguf_writer_abort(w);
    }
    return rc;
}

static int fixture_model(const char *path, char *err, size_t err_len) {
    gguf_writer *w = NULL;
    if (gguf_writer_open(path, &w, err, err_len)) return -1;
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "a", "b", "c", "hello", " world", "!", "\\n"};
    static const int32_t sections[] = {11, 11, 10, 0};
    static const struct { const char *name; uint32_t type, n_dims; uint64_t ne[2]; } T[] = {
        {"token_embd.weight", GGML_TYPE_Q8_0, 2, {64, 10}},
        {"output_norm.weight", GGML_TYPE_F32, 1, {64, 1}},
        {"blk.0.attn_qkv.weight", GGML_TYPE_Q4_0, 2, {64, 96}},
        {"blk.0.ffn_up.weight", GGML_TYPE_F16, 2, {64, 32}},
        {"blk.0.ffn_down.weight", GGML_TYPE_BF16, 2, {32, 64}},
    };
    int rc = 0;
    rc |= gguf_writer_kv_str(w, "general.architecture", "qwen35");
    rc |= gguf_writer_kv_str(w, "general.name", "kestrel-test-tiny");
    rc |= gguf_writer_kv_u32(w, "general.alignment", 32);
    rc |= gguf_writer_kv_u32(w, "qwen35.block_count", 1);
    rc |= gguf_writer_kv_u32(w, "qwen35.embedding_length", 64);
    rc |= gguf_writer_kv_f32(w, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f);
    rc |= gguf_writer_kv_u64(w, "qwen35.context_length", 262144);
    rc |= gguf_writer_kv_i32(w, "kestrel.test.i32", -5);
    rc |= gguf_writer_kv_bool(w, "kestrel.test.flag", 1);
    rc |= gguf_writer_kv_arr_i32(w, "qwen35.rope.dimension_sections", sections, 4);
    rc |= gguf_writer_kv_arr_str(w, "tokenizer.ggml.tokens", toks, 10);
    for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++) rc |= gguf_writer_tensor(w, T[i].name, T[i].type, T[i].n_dims, T[i].ne);
    rc |= gguf_writer_begin_data(w);
    for (size_t i = 0; i < sizeof(T) / sizeof(T[0]) && rc == 0; i++)
        rc |= fixture_write_values(w, T[i].type, (int64_t)(T[i].ne[0] * T[i].ne[1]), (float)i);
    return fixture_finish(w, rc, err, err_len);
}

/* Defects for the oracle reader's error tests (0 = a valid dump). */
enum {
    ORACLE_OK = 0,
    ORACLE_BAD_ARCH,        /* general.architecture = "qwen35" */
    ORACLE_BAD_VERSION,     /* kestrel.oracle.version = 2 */
    ORACLE_NO_HFINAL,       /* p1.hfinal missing */
    ORACLE_BAD_SHAPE,       /* p0.h.1 is {4, 4} instead of {4, 3} */
    ORACLE_BAD_TOKEN,       /* p0.tokens[1] = 8 = n_vocab */
    ORACLE_BAD_TYPE,        /* p0.greedy.logits stored as f16 */
    ORACLE_ORPHAN_LOGITS,   /* p0.greedy.logits without p0.greedy.tokens */
    ORACLE_MANY_PROMPTS,    /* kestrel.oracle.n_prompts = 3 */
};

static int fixture_oracle(const char *path, int defect, char *err, size_t err_len) {
    enum { P = 2, L = 2, D = 4, V = 8 };
    static const uint64_t T[P] = {3, 1}, G[P] = {2, 0};
    int32_t tokens[P][3] = {{1, 6, 7}, {3, 0, 0}};
    static const int32_t greedy[2] = {8 - 1, 2};
    if (defect == ORACLE_BAD_TOKEN) tokens[0][1] = V;
    /* declared tensors, in file order */
    struct { char name[32]; uint32_t type; uint64_t ne0, ne1; uint32_t n_dims; const int32_t *ints; } t[16];
    int nt = 0;
#define ADD(TYPE, NDIMS, NE0, NE1, INTS, ...)                                                                     \
    do {                                                                                                            \
        snprintf(t[nt].name, sizeof(t[nt].name), __VA_ARGS__);                                                      \
        t[nt].type = (TYPE); t[nt].n_dims = (NDIMS); t[nt].ne0 = (NE0); t[nt].ne1 = (NE1); t[nt].ints = (INTS);     \
        nt++;                                                                                                       \
    } while (0)
    for (int p = 0; p < P; p++) {
        ADD(GGML_TYPE_I32, 1, T[p], 1, tokens[p], "p%d.tokens", p);
        ADD(GGML_TYPE_F32, 2, V, T[p], NULL, "p%d.logits", p);
        for (int l = 0; l < L; l++)
            ADD(GGML_TYPE_F32, 2, D, T[p] + (defect == ORACLE_BAD_SHAPE && p == 0 && l == 1), NULL, "p%d.h.%d", p, l);
        if (!(defect == ORACLE_NO_HFINAL && p == 1)) ADD(GGML_TYPE_F32, 2, D, T[p], NULL, "p%d.hfinal", p);
        if (G[p]) {
            if (defect != ORACLE_ORPHAN_LOGITS) ADD(GGML_TYPE_I32, 1, G[p], 1, greedy, "p%d.greedy.tokens", p);
            ADD(defect == ORACLE_BAD_TYPE ? GGML_TYPE_F16 : GGML_TYPE_F32, 2, V, G[p], NULL, "p%d.greedy.logits", p);
        }
    }
#undef ADD
    gguf_writer *w = NULL;
    if (gguf_writer_open(path, &w, err, err_len)) return -1;
    int rc = 0;
    rc |= gguf_writer_kv_str(w, "general.architecture", defect == ORACLE_BAD_ARCH ? "qwen35" : "kestrel-oracle");
    rc |= gguf_writer_kv_u32(w, "kestrel.oracle.version", defect == ORACLE_BAD_VERSION ? 2 : 1);
    rc |= gguf_writer_kv_u32(w, "kestrel.oracle.n_prompts", defect == ORACLE_MANY_PROMPTS ? 3 : P);
    rc |= gguf_writer_kv_u32(w, "kestrel.oracle.n_layers", L);
    rc |= gguf_writer_kv_u32(w, "kestrel.oracle.n_embd", D);
    rc |= gguf_writer_kv_u32(w, "kestrel.oracle.n_vocab", V);
    rc |= gguf_writer_kv_str(w, "kestrel.oracle.transformers_version", "5.17.0");
    rc |= gguf_writer_kv_str(w, "kestrel.oracle.dtype", "float32");
    for (int i = 0; i < nt; i++)
        rc |= gguf_writer_tensor(w, t[i].name, t[i].type, t[i].n_dims, (const uint64_t[]){t[i].ne0, t[i].ne1});
    rc |= gguf_writer_begin_data(w);
    for (int i = 0; i < nt && rc == 0; i++) {
        if (t[i].ints) rc |= gguf_writer_write(w, t[i].ints, t[i].ne0 * 4);
        else rc |= fixture_write_values(w, t[i].type, (int64_t)(t[i].ne0 * t[i].ne1), (float)i);
    }
    return fixture_finish(w, rc, err, err_len);
}

#endif
