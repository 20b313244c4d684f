/*
 * oracle.c - open and validate an oracle dump (see oracle.h and
 * docs/formats.md). Everything the runner later indexes is checked here once:
 * the header keys, every tensor's presence, type and exact shape, 4-byte
 * alignment of the data (the pointers are used as int32/float arrays), and
 * every token id against the vocabulary size.
 *
 * Not here: comparing anything (compare.c), provenance checks (the CLI prints
 * the provenance strings; it does not judge them).
 */
#include "oracle.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORACLE_VERSION 1

static void set_err(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (!err || err_len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

/* A positive header count that fits int32. */
static int get_count(const gguf_file *f, const char *key, int64_t min, int32_t *out, char *err, size_t err_len) {
    int64_t v;
    if (gguf_get_int(f, key, &v, err, err_len)) return -1;
    if (v < min || v > INT32_MAX) {
        set_err(err, err_len, "%s: key '%s': %" PRId64 " out of range %" PRId64 "..%d", f->path, key, v, min, INT32_MAX);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* Tensor `name` of `type` with shape (n_dims, ne...), data 4-byte aligned. */
static int expect(const gguf_file *f, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                  const void **data, char *err, size_t err_len) {
    const uint64_t ne[2] = {ne0, ne1};
    const gguf_tensor *t;
    if (gguf_expect_tensor(f, name, 1u << type, n_dims, ne, &t, err, err_len)) return -1;
    if ((uintptr_t)t->data % 4 != 0) {
        set_err(err, err_len, "%s: tensor '%s': data at offset %" PRIu64 " is not 4-byte aligned", f->path, name,
                f->data_offset + t->offset);
        return -1;
    }
    *data = t->data;
    return 0;
}

static int check_tokens(const gguf_file *f, const char *name, const int32_t *tok, int64_t n, int32_t n_vocab, char *err,
                        size_t err_len) {
    /* tok: (n,) */
    for (int64_t j = 0; j < n; j++) {
        if (tok[j] < 0 || tok[j] >= n_vocab) {
            set_err(err, err_len, "%s: tensor '%s': element %" PRId64 " = %" PRId32 " is not a token id in [0, %" PRId32 ")",
                    f->path, name, j, tok[j], n_vocab);
            return -1;
        }
    }
    return 0;
}

static int load_prompt(oracle *o, int32_t i, char *err, size_t err_len) {
    const gguf_file *f = o->file;
    oracle_prompt *p = &o->prompts[i];
    const uint64_t V = (uint64_t)o->n_vocab, D = (uint64_t)o->n_embd;
    char name[64];
    const void *data;

    /* tokens: their count defines T */
    snprintf(name, sizeof(name), "p%" PRId32 ".tokens", i);
    const gguf_tensor *tt = gguf_find_tensor(f, name);
    if (!tt) {
        set_err(err, err_len, "%s: missing tensor '%s'", f->path, name);
        return -1;
    }
    if (tt->ne[0] < 1 || tt->ne[0] > INT32_MAX) {
        set_err(err, err_len, "%s: tensor '%s': %" PRIu64 " tokens, expected 1..%d", f->path, name, tt->ne[0], INT32_MAX);
        return -1;
    }
    const uint64_t T = tt->ne[0];
    if (expect(f, name, GGML_TYPE_I32, 1, T, 1, &data, err, err_len)) return -1;
    p->n_tokens = (int32_t)T;
    p->tokens = data;
    if (check_tokens(f, name, p->tokens, p->n_tokens, o->n_vocab, err, err_len)) return -1;

    snprintf(name, sizeof(name), "p%" PRId32 ".logits", i);
    if (expect(f, name, GGML_TYPE_F32, 2, V, T, &data, err, err_len)) return -1;
    p->logits = data;

    p->hidden = calloc((size_t)o->n_layers, sizeof(*p->hidden));
    if (!p->hidden) {
        set_err(err, err_len, "%s: out of memory", f->path);
        return -1;
    }
    for (int32_t l = 0; l < o->n_layers; l++) {
        snprintf(name, sizeof(name), "p%" PRId32 ".h.%" PRId32, i, l);
        if (expect(f, name, GGML_TYPE_F32, 2, D, T, &data, err, err_len)) return -1;
        p->hidden[l] = data;
    }
    snprintf(name, sizeof(name), "p%" PRId32 ".hfinal", i);
    if (expect(f, name, GGML_TYPE_F32, 2, D, T, &data, err, err_len)) return -1;
    p->hfinal = data;

    /* greedy continuation: both tensors or neither */
    char lname[64];
    snprintf(name, sizeof(name), "p%" PRId32 ".greedy.tokens", i);
    snprintf(lname, sizeof(lname), "p%" PRId32 ".greedy.logits", i);
    const gguf_tensor *gt = gguf_find_tensor(f, name);
    if (!gt) {
        if (gguf_find_tensor(f, lname)) {
            set_err(err, err_len, "%s: tensor '%s' present without '%s'", f->path, lname, name);
            return -1;
        }
        return 0;
    }
    if (gt->ne[0] > INT32_MAX) {
        set_err(err, err_len, "%s: tensor '%s': %" PRIu64 " tokens, expected at most %d", f->path, name, gt->ne[0], INT32_MAX);
        return -1;
    }
    const uint64_t N = gt->ne[0];
    if (expect(f, name, GGML_TYPE_I32, 1, N, 1, &data, err, err_len)) return -1;
    p->n_greedy = (int32_t)N;
    p->greedy_tokens = data;
    if (check_tokens(f, name, p->greedy_tokens, p->n_greedy, o->n_vocab, err, err_len)) return -1;
    if (expect(f, lname, GGML_TYPE_F32, 2, V, N, &data, err, err_len)) return -1;
    p->greedy_logits = data;
    return 0;
}

void oracle_close(oracle *o) {
    if (!o) return;
    if (o->prompts)
        for (int32_t i = 0; i < o->n_prompts; i++) free((void *)o->prompts[i].hidden);
    free(o->prompts);
    gguf_close(o->file);
    free(o);
}

int oracle_open(const char *path, oracle **out, char *err, size_t err_len) {
    int ret = -1;
    char *arch = NULL;
    *out = NULL;
    oracle *o = calloc(1, sizeof(*o));
    if (!o) {
        set_err(err, err_len, "%s: out of memory", path);
        goto cleanup;
    }
    if (gguf_open(path, &o->file, err, err_len)) goto cleanup;
    const gguf_file *f = o->file;
    if (gguf_get_str(f, "general.architecture", &arch, err, err_len)) goto cleanup;
    if (strcmp(arch, "kestrel-oracle") != 0) {
        /* the value comes from the file: show at most 64 bytes, control bytes as '?' */
        for (char *q = arch; *q; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7f) *q = '?';
        set_err(err, err_len, "%s: key 'general.architecture': '%.64s', expected 'kestrel-oracle' (not an oracle dump)",
                path, arch);
        goto cleanup;
    }
    int64_t version;
    if (gguf_get_int(f, "kestrel.oracle.version", &version, err, err_len)) goto cleanup;
    if (version != ORACLE_VERSION) {
        set_err(err, err_len, "%s: key 'kestrel.oracle.version': %" PRId64 " not supported (need %d)", path, version,
                ORACLE_VERSION);
        goto cleanup;
    }
    if (get_count(f, "kestrel.oracle.n_prompts", 1, &o->n_prompts, err, err_len) ||
        get_count(f, "kestrel.oracle.n_layers", 1, &o->n_layers, err, err_len) ||
        get_count(f, "kestrel.oracle.n_embd", 1, &o->n_embd, err, err_len) ||
        get_count(f, "kestrel.oracle.n_vocab", 1, &o->n_vocab, err, err_len))
        goto cleanup;
    /* every prompt has at least 3 + n_layers tensors: a cheap bound before allocating */
    if ((uint64_t)o->n_prompts * (3 + (uint64_t)o->n_layers) > f->n_tensors) {
        set_err(err, err_len, "%s: %" PRId32 " prompts x %" PRId32 " layers need at least %" PRIu64 " tensors, file has %" PRIu64,
                path, o->n_prompts, o->n_layers, (uint64_t)o->n_prompts * (3 + (uint64_t)o->n_layers), f->n_tensors);
        goto cleanup;
    }
    o->prompts = calloc((size_t)o->n_prompts, sizeof(*o->prompts));
    if (!o->prompts) {
        set_err(err, err_len, "%s: out of memory", path);
        goto cleanup;
    }
    for (int32_t i = 0; i < o->n_prompts; i++)
        if (load_prompt(o, i, err, err_len)) goto cleanup;
    *out = o;
    o = NULL;
    ret = 0;
cleanup:
    free(arch);
    oracle_close(o);
    return ret;
}
