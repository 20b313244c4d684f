/*
 * test_gguf_mutate.c - deterministic mutation test of the GGUF and oracle
 * readers (the make-check companion of tests/fuzz/fuzz_gguf.c).
 *
 * Two valid images (a tiny model and an oracle dump, test_gguf_fixtures.h)
 * get a few thousand seeded random mutations: bit flips, "interesting"
 * integers written over header fields, truncations, inserted and deleted
 * runs. Each result is opened from a temporary file with gguf_open and
 * oracle_open, and a few hundred are compressed to .zst and opened that way.
 * Checked: nothing crashes (run it under --enable-sanitizers too); every
 * rejection is exactly one line starting with the file name; every accepted
 * file's strings, arrays and tensor data lie inside the file image; every
 * accepted oracle's pointers lie inside the image. A fixed seed keeps the
 * run reproducible; KESTREL_MUTATE_SEED and KESTREL_MUTATE_N override.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "gguf.h"
#include "oracle.h"
#include "test_gguf_fixtures.h"
#include "tap.h"


static uint64_t rng;
static uint64_t next_u64(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}
static uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }

static int write_all(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    int rc = (n && fwrite(p, 1, n, fp) != n) ? -1 : 0;
    if (fclose(fp) != 0) rc = -1;
    return rc;
}

/* Header length of a valid image (where mutations matter most). */
static size_t header_len(const char *path) {
    gguf_file *f = NULL;
    char err[512];
    if (gguf_open(path, &f, err, sizeof(err))) return 0;
    size_t n = (size_t)f->data_offset;
    gguf_close(f);
    return n;
}

/* One mutation of buf (len *n, capacity cap) in place. */
static void mutate(uint8_t *buf, size_t *n, size_t cap, size_t hdr) {
    static const uint64_t interesting[] = {0, 1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 255, 256, 0x7fff, 0xffff, 0x7fffffff,
                                           0x80000000u, 0xffffffffu, 1ull << 32, 1ull << 40, 1ull << 62, 1ull << 63,
                                           UINT64_MAX, UINT64_MAX - 31};
    size_t len = *n;
    if (len == 0) return;
    /* 85% of positions inside the header, the rest anywhere */
    size_t span = (below(100) < 85 && hdr && hdr <= len) ? hdr : len;
    size_t pos = (size_t)below(span);
    switch (below(6)) {
    case 0: /* flip 1..4 bits */
        for (uint64_t k = 1 + below(4); k; k--) buf[(size_t)below(span)] ^= (uint8_t)(1u << below(8));
        break;
    case 1: { /* interesting u64 / u32 at an arbitrary offset */
        uint64_t v = interesting[below(sizeof(interesting) / sizeof(interesting[0]))];
        size_t w = below(2) ? 8 : 4;
        if (pos + w <= len) memcpy(buf + pos, &v, w);
        break;
    }
    case 2: /* interesting value +- small delta, 8 bytes at an 8-aligned offset past the magic */
        pos = 4 + (pos & ~(size_t)7);
        if (pos + 8 <= len) {
            uint64_t v;
            memcpy(&v, buf + pos, 8);
            v += below(5) - 2;
            memcpy(buf + pos, &v, 8);
        }
        break;
    case 3: /* truncate */
        *n = (size_t)below(len);
        break;
    case 4: { /* delete a run */
        size_t k = 1 + (size_t)below(16);
        if (pos + k > len) k = len - pos;
        memmove(buf + pos, buf + pos + k, len - pos - k);
        *n = len - k;
        break;
    }
    default: { /* insert a run of random bytes */
        size_t k = 1 + (size_t)below(16);
        if (len + k > cap) break;
        memmove(buf + pos + k, buf + pos, len - pos);
        for (size_t i = 0; i < k; i++) buf[pos + i] = (uint8_t)next_u64();
        *n = len + k;
        break;
    }
    }
}

static int in_image(const gguf_file *f, const void *p, uint64_t n) {
    const uint8_t *q = p;
    return q >= f->base && q <= f->base + f->size && n <= (uint64_t)(f->base + f->size - q);
}

typedef struct tally {
    int64_t opened, rejected, bad_msg, out_of_bounds, oracle_opened, oracle_bad;
    char first_problem[600];
} tally;

static void problem(tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(tally *t, const char *fmt, ...) {
    if (t->first_problem[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->first_problem, sizeof(t->first_problem), fmt, ap);
    va_end(ap);
}

static int good_message(const char *path, const char *err) {
    size_t pl = strlen(path);
    return strncmp(err, path, pl) == 0 && err[pl] == ':' && err[pl + 1] == ' ' && err[pl + 2] && !strchr(err, '\n');
}

/* Open path both ways and check everything the readers promise. */
static void check_file(const char *path, tally *t) {
    char err[1024] = "";
    gguf_file *f = NULL;
    if (gguf_open(path, &f, err, sizeof(err)) != 0) {
        t->rejected++;
        if (!good_message(path, err)) {
            t->bad_msg++;
            problem(t, "bad message: '%s'", err);
        }
    } else {
        t->opened++;
        int bad = 0;
        for (uint64_t i = 0; i < f->n_kv; i++) {
            const gguf_kv *kv = &f->kv[i];
            if (kv->type == GGUF_VT_STRING && !in_image(f, kv->v.str.ptr, kv->v.str.len)) bad = 1;
            if (kv->type == GGUF_VT_ARRAY && kv->arr_strs)
                for (uint64_t j = 0; j < kv->arr_n; j++)
                    if (!in_image(f, kv->arr_strs[j].ptr, kv->arr_strs[j].len)) bad = 1;
            if (kv->type == GGUF_VT_ARRAY && kv->arr && !in_image(f, kv->arr, 0)) bad = 1;
            if (gguf_find_kv(f, kv->key) != kv) bad = 1; /* unique and findable */
        }
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            const gguf_tensor *tt = &f->tensors[i];
            if (!in_image(f, tt->data, tt->n_bytes) || (const uint8_t *)tt->data < f->base + f->data_offset) bad = 1;
            if (ggml_row_bytes(tt->type, tt->ne[0]) == 0 && tt->ne[0] != 0) bad = 1;
            if (gguf_find_tensor(f, tt->name) != tt) bad = 1;
            volatile uint8_t sink = 0; /* touch first and last byte */
            if (tt->n_bytes) sink ^= ((const uint8_t *)tt->data)[0] ^ ((const uint8_t *)tt->data)[tt->n_bytes - 1];
            (void)sink;
        }
        if (bad) {
            t->out_of_bounds++;
            problem(t, "accepted file with an out-of-bounds or unfindable field");
        }
        gguf_close(f);
    }
    oracle *o = NULL;
    if (oracle_open(path, &o, err, sizeof(err)) != 0) {
        if (!good_message(path, err)) {
            t->bad_msg++;
            problem(t, "bad oracle message: '%s'", err);
        }
    } else {
        t->oracle_opened++;
        const gguf_file *of = o->file;
        int bad = 0;
        for (int32_t i = 0; i < o->n_prompts; i++) {
            const oracle_prompt *p = &o->prompts[i];
            uint64_t T = (uint64_t)p->n_tokens, V = (uint64_t)o->n_vocab, D = (uint64_t)o->n_embd;
            if (!in_image(of, p->tokens, T * 4) || !in_image(of, p->logits, T * V * 4) || !in_image(of, p->hfinal, T * D * 4))
                bad = 1;
            for (int32_t l = 0; l < o->n_layers; l++)
                if (!in_image(of, p->hidden[l], T * D * 4)) bad = 1;
            if (p->n_greedy && (!in_image(of, p->greedy_tokens, (uint64_t)p->n_greedy * 4) ||
                                !in_image(of, p->greedy_logits, (uint64_t)p->n_greedy * V * 4)))
                bad = 1;
            for (int32_t j = 0; j < p->n_tokens; j++)
                if (p->tokens[j] < 0 || p->tokens[j] >= o->n_vocab) bad = 1;
        }
        if (bad) {
            t->oracle_bad++;
            problem(t, "accepted oracle with out-of-bounds pointers or token ids");
        }
        oracle_close(o);
    }
}

int main(void) {
    const char *env_seed = getenv("KESTREL_MUTATE_SEED"), *env_n = getenv("KESTREL_MUTATE_N");
    uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : 20261129;
    long n_iter = env_n ? strtol(env_n, NULL, 0) : 3000;
    rng = seed ? seed : 1;

    char dir[256], err[512];
    snprintf(dir, sizeof(dir), "%s/kestrel-test-mutate.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    char base_path[2][300], mpath[300], zpath[300];
    snprintf(base_path[0], sizeof(base_path[0]), "%s/model.gguf", dir);
    snprintf(base_path[1], sizeof(base_path[1]), "%s/oracle.gguf", dir);
    snprintf(mpath, sizeof(mpath), "%s/m.gguf", dir);
    snprintf(zpath, sizeof(zpath), "%s/m.gguf.zst", dir);
    if (fixture_model(base_path[0], err, sizeof(err)) || fixture_oracle(base_path[1], ORACLE_OK, err, sizeof(err))) {
        printf("Bail out! fixtures: %s\n", err);
        return 1;
    }
    printf("# seed %" PRIu64 ", %ld mutations per image\n", seed, n_iter);

    for (int b = 0; b < 2; b++) {
        size_t n0 = 0;
        uint8_t *img = fixture_read_file(base_path[b], &n0);
        size_t hdr = header_len(base_path[b]);
        if (!img || !hdr) {
            printf("Bail out! cannot read %s\n", base_path[b]);
            return 1;
        }
        size_t cap = n0 + 16 * 8 + 64;
        uint8_t *buf = malloc(cap);
        uint8_t *z = malloc(ZSTD_compressBound(cap));
        tally t = {0};
        int64_t zst_runs = 0;
        for (long it = 0; it < n_iter; it++) {
            memcpy(buf, img, n0);
            size_t n = n0;
            for (uint64_t k = 1 + below(3); k; k--) mutate(buf, &n, cap, hdr);
            if (write_all(mpath, buf, n)) {
                printf("Bail out! cannot write %s\n", mpath);
                return 1;
            }
            check_file(mpath, &t);
            if (it % 10 == 0) { /* the same image through the .zst path */
                size_t zn = ZSTD_compress(z, ZSTD_compressBound(cap), buf, n, 1);
                if (!ZSTD_isError(zn)) {
                    if (it % 20 == 0 && zn > 8) z[8 + below(zn - 8)] ^= (uint8_t)(1u << below(8)); /* and a damaged frame */
                    write_all(zpath, z, zn);
                    check_file(zpath, &t);
                    zst_runs++;
                }
            }
        }
        const char *what = b == 0 ? "model" : "oracle";
        ok(t.bad_msg == 0, "%s: every rejection of %" PRId64 " is one line naming the file (%" PRId64 " bad)%s%s", what,
           t.rejected, t.bad_msg, t.first_problem[0] ? ": " : "", t.first_problem);
        ok(t.out_of_bounds == 0, "%s: every accepted file (%" PRId64 ") has its fields inside the image", what, t.opened);
        ok(t.oracle_bad == 0, "%s: every accepted oracle (%" PRId64 ") points inside the image with valid token ids", what,
           t.oracle_opened);
        /* the mutations must actually reach the parser: both outcomes occur often */
        ok(t.rejected > n_iter / 4 && t.opened > n_iter / 20,
           "%s: mutations exercise both paths (%" PRId64 " rejected, %" PRId64 " accepted, %" PRId64 " via .zst)", what,
           t.rejected, t.opened, zst_runs);
        free(buf);
        free(z);
        free(img);
    }
    unlink(mpath);
    unlink(zpath);
    unlink(base_path[0]);
    unlink(base_path[1]);
    rmdir(dir);
    return tap_done();
}
