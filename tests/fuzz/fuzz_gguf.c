/*
 * fuzz_gguf.c - fuzz target for the GGUF and oracle readers (src/lib/gguf.c,
 * src/lib/oracle.c): each input is a whole file image, opened with
 * gguf_open and oracle_open; an input that starts with the zstd magic is also
 * opened through a ".zst" name, so the decompression path is fuzzed too.
 * Accepted files are walked and their promises checked (every string, array
 * and tensor inside the image; names findable; oracle pointers in bounds,
 * token ids in range); a broken promise or a malformed error message abort()s,
 * which the fuzzer reports like a crash.
 *
 * libFuzzer build (clang), from the source tree root:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DKESTREL_LIBFUZZER -D_GNU_SOURCE -Isrc/lib \
 *     tests/fuzz/fuzz_gguf.c src/lib/gguf.c src/lib/quant.c src/lib/oracle.c -lzstd -lm -o fuzz_gguf
 *   mkdir -p corpus && build/tests/unit/test_gguf --write-fixtures corpus
 *   ./fuzz_gguf -max_total_time=300 -max_len=65536 corpus
 *
 * Without -DKESTREL_LIBFUZZER this file has its own main (the make-check smoke,
 * tests/gguf-fuzz-smoke.sh): `fuzz_gguf FILE|DIR...` runs each file through
 * the same target and prints one line per input, "<path>: accepted" or
 * "<path>: rejected: <error>", then a count line.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfd = -1;
static char plain_path[64], zst_link[300];
static char last_err[1024];
static int last_accepted;

static void die(const char *what) {
    fprintf(stderr, "fuzz_gguf: %s\n", what);
    abort();
}

static void setup(void) {
    if (memfd >= 0) return;
    memfd = memfd_create("fuzz_gguf", MFD_CLOEXEC);
    if (memfd < 0) die("memfd_create failed");
    snprintf(plain_path, sizeof(plain_path), "/proc/self/fd/%d", memfd);
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/fuzz_gguf.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) die("mkdtemp failed");
    snprintf(zst_link, sizeof(zst_link), "%s/in.gguf.zst", dir);
    if (symlink(plain_path, zst_link) != 0) die("symlink failed");
}

static int in_image(const gguf_file *f, const void *p, uint64_t n) {
    const uint8_t *q = p;
    return q >= f->base && q <= f->base + f->size && n <= (uint64_t)(f->base + f->size - q);
}

static void check_message(const char *path, const char *err) {
    size_t pl = strlen(path);
    if (strncmp(err, path, pl) != 0 || err[pl] != ':' || err[pl + 1] != ' ' || !err[pl + 2] || strchr(err, '\n'))
        die("error message is not one line starting with the file name");
}

static void check_gguf(const gguf_file *f) {
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        if (kv->type == GGUF_VT_STRING && !in_image(f, kv->v.str.ptr, kv->v.str.len)) die("string outside the image");
        if (kv->type == GGUF_VT_ARRAY && kv->arr_strs)
            for (uint64_t j = 0; j < kv->arr_n; j++)
                if (!in_image(f, kv->arr_strs[j].ptr, kv->arr_strs[j].len)) die("array string outside the image");
        if (gguf_find_kv(f, kv->key) != kv) die("key not findable");
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (!in_image(f, t->data, t->n_bytes) || (const uint8_t *)t->data < f->base + f->data_offset)
            die("tensor data outside the data section");
        if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS || !ggml_type_name(t->type)) die("bad tensor header accepted");
        if (t->ne[0] && ggml_row_bytes(t->type, t->ne[0]) == 0) die("row size not representable");
        if (gguf_find_tensor(f, t->name) != t) die("tensor not findable");
    }
}

static void check_oracle(const oracle *o) {
    const gguf_file *f = o->file;
    uint64_t V = (uint64_t)o->n_vocab, D = (uint64_t)o->n_embd;
    for (int32_t i = 0; i < o->n_prompts; i++) {
        const oracle_prompt *p = &o->prompts[i];
        uint64_t T = (uint64_t)p->n_tokens, N = (uint64_t)p->n_greedy;
        if (!in_image(f, p->tokens, T * 4) || !in_image(f, p->logits, T * V * 4) || !in_image(f, p->hfinal, T * D * 4))
            die("oracle pointer outside the image");
        for (int32_t l = 0; l < o->n_layers; l++)
            if (!in_image(f, p->hidden[l], T * D * 4)) die("oracle hidden pointer outside the image");
        if (N && (!in_image(f, p->greedy_tokens, N * 4) || !in_image(f, p->greedy_logits, N * V * 4)))
            die("oracle greedy pointer outside the image");
        for (uint64_t j = 0; j < T; j++)
            if (p->tokens[j] < 0 || p->tokens[j] >= o->n_vocab) die("oracle token id out of range");
    }
}

static void run_one(const char *path) {
    char err[1024] = "";
    gguf_file *f = NULL;
    if (gguf_open(path, &f, err, sizeof(err)) == 0) {
        check_gguf(f);
        gguf_close(f);
        last_accepted = 1;
    } else {
        check_message(path, err);
        snprintf(last_err, sizeof(last_err), "%s", err + strlen(path) + 2); /* without "<path>: " */
    }
    oracle *o = NULL;
    if (oracle_open(path, &o, err, sizeof(err)) == 0) {
        check_oracle(o);
        oracle_close(o);
    } else {
        check_message(path, err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size) die("cannot write the input");
    last_accepted = 0;
    last_err[0] = 0;
    run_one(plain_path);
    if (size >= 4 && memcmp(data, "\x28\xb5\x2f\xfd", 4) == 0) run_one(zst_link);
    return 0;
}

#ifndef KESTREL_LIBFUZZER
static long n_inputs, n_accepted;

static int run_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "fuzz_gguf: %s: cannot open\n", path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) die("out of memory");
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, fp);
        if (r == 0) break;
        n += r;
    }
    fclose(fp);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    n_inputs++;
    n_accepted += last_accepted;
    if (last_accepted) printf("%s: accepted\n", path);
    else printf("%s: rejected: %s\n", path, last_err);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_gguf FILE|DIR...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            struct dirent **ents = NULL;
            int n = scandir(argv[i], &ents, NULL, alphasort); /* sorted: stable output */
            for (int k = 0; k < n; k++) {
                if (ents[k]->d_name[0] != '.') {
                    char p[4096];
                    snprintf(p, sizeof(p), "%s/%s", argv[i], ents[k]->d_name);
                    if (run_file(p)) rc = 2;
                }
                free(ents[k]);
            }
            free(ents);
            if (n < 0) {
                fprintf(stderr, "fuzz_gguf: %s: cannot read directory\n", argv[i]);
                rc = 2;
            }
        } else if (run_file(argv[i])) {
            rc = 2;
        }
    }
    if (zst_link[0]) {
        unlink(zst_link);
        *strrchr(zst_link, '/') = 0;
        rmdir(zst_link);
    }
    printf("fuzz_gguf: %ld inputs, %ld accepted, %ld rejected\n", n_inputs, n_accepted, n_inputs - n_accepted);
    return rc;
}
#endif
