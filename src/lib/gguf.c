/*
 * gguf.c - GGUF v3 reader and streaming writer (see gguf.h, BRIEF §2,
 * docs/formats.md "GGUF files").
 *
 * Reader: the whole file image is mmap'd (or, for a path ending in ".zst",
 * decompressed into an aligned heap buffer) and parsed with a bounds-checked
 * cursor. Every count, length, offset and size is checked against the bytes
 * that remain before it is used, so a malformed file yields one error line and
 * never a read outside the image. Tensor data pointers point into the image.
 *
 * Writer: KVs and tensor declarations are buffered in memory; begin_data()
 * writes the header, then tensor bytes stream straight to <path>.tmp, which
 * finish() renames into place.
 *
 * Not here: tensors of ggml types other than enum ggml_type (rejected as
 * unknown), big-endian GGUF, GGUF v1/v2.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

/* deepest nesting of ARRAY inside ARRAY we accept (llama.cpp writes 1) */
#define GGUF_MAX_ARRAY_DEPTH 8
/* longest name we quote in an error message, and the buffer its escaped form needs */
#define ERR_NAME_MAX 96
#define ERR_NAME_BUF (ERR_NAME_MAX * 4 + 8)
/* a name as shown in an error message: control bytes escaped, long names cut */
#define SHOWN(s) show_name((s), (char[ERR_NAME_BUF]){0})
/* alignment of the heap image of a decompressed .zst file */
#define HEAP_IMAGE_ALIGN 64
/* largest element count of a tensor (see the shape checks in parse) */
#define MAX_ELEMENTS (UINT64_C(1) << 61)

static void set_err(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (!err || err_len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static const char *show_name(const char *s, char *buf) {
    /* buf: (ERR_NAME_BUF,) */
    size_t k = 0, i = 0;
    for (; s[i] && i < ERR_NAME_MAX; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || ch == '\\' || ch == '\'') k += (size_t)snprintf(buf + k, 5, "\\x%02x", ch);
        else buf[k++] = (char)ch;
    }
    if (s[i]) k += (size_t)snprintf(buf + k, 4, "...");
    buf[k] = 0;
    return buf;
}

/* ======================================================================== */
/* type facts                                                               */
/* ======================================================================== */

typedef struct type_info {
    uint32_t type;
    const char *name;
    uint64_t block_size;  /* elements per block */
    uint64_t block_bytes; /* bytes per block */
} type_info;

static const type_info type_table[] = {
    {GGML_TYPE_F32, "f32", 1, 4},
    {GGML_TYPE_F16, "f16", 1, 2},
    {GGML_TYPE_Q4_0, "q4_0", 32, 18},
    {GGML_TYPE_Q8_0, "q8_0", 32, 34},
    {GGML_TYPE_I32, "i32", 1, 4},
    {GGML_TYPE_BF16, "bf16", 1, 2},
};

static const type_info *find_type(uint32_t type) {
    for (size_t i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++)
        if (type_table[i].type == type) return &type_table[i];
    return NULL;
}

const char *ggml_type_name(uint32_t type) {
    const type_info *t = find_type(type);
    return t ? t->name : NULL;
}

int ggml_type_from_name(const char *name) {
    if (!name) return -1;
    for (size_t i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++)
        if (strcasecmp(type_table[i].name, name) == 0) return (int)type_table[i].type;
    return -1;
}

uint64_t ggml_type_block_size(uint32_t type) {
    const type_info *t = find_type(type);
    return t ? t->block_size : 0;
}

uint64_t ggml_type_block_bytes(uint32_t type) {
    const type_info *t = find_type(type);
    return t ? t->block_bytes : 0;
}

uint64_t ggml_row_bytes(uint32_t type, uint64_t n) {
    const type_info *t = find_type(type);
    if (!t || n % t->block_size != 0) return 0;
    uint64_t blocks = n / t->block_size;
    if (blocks > UINT64_MAX / t->block_bytes) return 0;
    return blocks * t->block_bytes;
}

/* size in bytes of a fixed-size KV value type; 0 for STRING/ARRAY/unknown */
static uint64_t vtype_size(uint32_t vt) {
    switch (vt) {
    case GGUF_VT_UINT8: case GGUF_VT_INT8: case GGUF_VT_BOOL: return 1;
    case GGUF_VT_UINT16: case GGUF_VT_INT16: return 2;
    case GGUF_VT_UINT32: case GGUF_VT_INT32: case GGUF_VT_FLOAT32: return 4;
    case GGUF_VT_UINT64: case GGUF_VT_INT64: case GGUF_VT_FLOAT64: return 8;
    default: return 0;
    }
}

static int vtype_known(uint32_t vt) { return vt <= GGUF_VT_FLOAT64; }

/* ======================================================================== */
/* name hash (duplicate detection and O(1) lookups)                         */
/* ======================================================================== */

typedef struct name_index {
    uint64_t *slot; /* (cap,) entry index + 1, 0 = empty */
    uint64_t cap;   /* power of two */
} name_index;

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int index_init(name_index *ix, uint64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    ix->slot = calloc(cap, sizeof(*ix->slot));
    ix->cap = cap;
    return ix->slot ? 0 : -1;
}

/* names: array of n_names strings reachable through get(i). Returns index of an
 * existing equal name, or -1 after inserting i. */
typedef const char *(*name_getter)(const void *arr, uint64_t i);

static int64_t index_insert(name_index *ix, const void *arr, name_getter get, uint64_t i) {
    const char *name = get(arr, i);
    uint64_t mask = ix->cap - 1;
    for (uint64_t h = hash_name(name) & mask;; h = (h + 1) & mask) {
        if (ix->slot[h] == 0) {
            ix->slot[h] = i + 1;
            return -1;
        }
        if (strcmp(get(arr, ix->slot[h] - 1), name) == 0) return (int64_t)(ix->slot[h] - 1);
    }
}

static int64_t index_find(const name_index *ix, const void *arr, name_getter get, const char *name) {
    if (!ix->slot) return -1;
    uint64_t mask = ix->cap - 1;
    for (uint64_t h = hash_name(name) & mask; ix->slot[h] != 0; h = (h + 1) & mask)
        if (strcmp(get(arr, ix->slot[h] - 1), name) == 0) return (int64_t)(ix->slot[h] - 1);
    return -1;
}

static const char *kv_name(const void *arr, uint64_t i) { return ((const gguf_kv *)arr)[i].key; }
static const char *tensor_name(const void *arr, uint64_t i) { return ((const gguf_tensor *)arr)[i].name; }

/* gguf_file plus the private lookup tables; gguf_open hands out &priv->pub. */
typedef struct gguf_file_priv {
    gguf_file pub;
    name_index kv_ix;
    name_index tensor_ix;
} gguf_file_priv;

/* ======================================================================== */
/* reading: file image                                                      */
/* ======================================================================== */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Open path read-only and check it is a regular file; its stat in *st. The fd, or -1 (err set). */
static int open_regular(const char *path, struct stat *st, char *err, size_t err_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0) {
        set_err(err, err_len, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        set_err(err, err_len, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    return fd;
}

/* Read a whole (compressed) file into a malloc'd buffer. */
static int slurp(const char *path, uint8_t **out, size_t *out_n, char *err, size_t err_len) {
    int ret = -1;
    uint8_t *buf = NULL;
    struct stat st;
    int fd = open_regular(path, &st, err, err_len);
    if (fd < 0) goto cleanup;
    size_t n = (size_t)st.st_size;
    buf = malloc(n ? n : 1);
    if (!buf) {
        set_err(err, err_len, "%s: out of memory reading %zu bytes", path, n);
        goto cleanup;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            set_err(err, err_len, "%s: read error: %s", path, strerror(errno));
            goto cleanup;
        }
        if (r == 0) {
            set_err(err, err_len, "%s: file shrank while reading (%zu of %zu bytes)", path, got, n);
            goto cleanup;
        }
        got += (size_t)r;
    }
    *out = buf;
    *out_n = n;
    buf = NULL;
    ret = 0;
cleanup:
    free(buf);
    if (fd >= 0) close(fd);
    return ret;
}

/* Decompress a .zst file into a HEAP_IMAGE_ALIGN-aligned buffer. */
static int load_zst(const char *path, uint8_t **out, uint64_t *out_n, char *err, size_t err_len) {
    int ret = -1;
    uint8_t *src = NULL, *dst = NULL;
    size_t src_n = 0;
    ZSTD_DCtx *dctx = NULL;
    if (slurp(path, &src, &src_n, err, err_len) != 0) goto cleanup;

    unsigned long long csize = ZSTD_getFrameContentSize(src, src_n);
    if (csize == ZSTD_CONTENTSIZE_ERROR) {
        set_err(err, err_len, "%s: not a zstd frame", path);
        goto cleanup;
    }
    if (csize != ZSTD_CONTENTSIZE_UNKNOWN && ZSTD_findFrameCompressedSize(src, src_n) == src_n) {
        /* one frame of known size: decompress in one call */
        if (posix_memalign((void **)&dst, HEAP_IMAGE_ALIGN, csize ? (size_t)csize : 1) != 0) {
            dst = NULL;
            set_err(err, err_len, "%s: out of memory for %llu decompressed bytes", path, csize);
            goto cleanup;
        }
        size_t r = ZSTD_decompress(dst, (size_t)csize, src, src_n);
        if (ZSTD_isError(r)) {
            set_err(err, err_len, "%s: zstd: %s", path, ZSTD_getErrorName(r));
            goto cleanup;
        }
        if (r != csize) {
            set_err(err, err_len, "%s: zstd: got %zu bytes, frame header says %llu", path, r, csize);
            goto cleanup;
        }
        *out_n = csize;
    } else {
        /* size unknown (or several frames): stream into a growing buffer */
        dctx = ZSTD_createDCtx();
        if (!dctx) {
            set_err(err, err_len, "%s: out of memory (zstd context)", path);
            goto cleanup;
        }
        size_t cap = src_n * 4 + 4096, used = 0;
        ZSTD_inBuffer in = {src, src_n, 0};
        size_t last = 0;
        for (;;) {
            if (!dst || used == cap) {
                size_t ncap = dst ? cap * 2 : cap;
                uint8_t *nd = NULL;
                if (ncap < cap || posix_memalign((void **)&nd, HEAP_IMAGE_ALIGN, ncap) != 0) {
                    set_err(err, err_len, "%s: out of memory decompressing (%zu bytes so far)", path, used);
                    goto cleanup;
                }
                if (dst) memcpy(nd, dst, used);
                free(dst);
                dst = nd;
                cap = ncap;
            }
            ZSTD_outBuffer ob = {dst, cap, used};
            size_t in_before = in.pos;
            last = ZSTD_decompressStream(dctx, &ob, &in);
            if (ZSTD_isError(last)) {
                set_err(err, err_len, "%s: zstd: %s", path, ZSTD_getErrorName(last));
                goto cleanup;
            }
            int progressed = ob.pos != used || in.pos != in_before;
            used = ob.pos;
            if (in.pos == in.size && used < cap) break; /* all input consumed, output drained */
            if (!progressed) {
                set_err(err, err_len, "%s: zstd: decoder made no progress at input byte %zu", path, in.pos);
                goto cleanup;
            }
        }
        if (last != 0) {
            set_err(err, err_len, "%s: zstd: truncated frame", path);
            goto cleanup;
        }
        *out_n = used;
    }
    *out = dst;
    dst = NULL;
    ret = 0;
cleanup:
    ZSTD_freeDCtx(dctx);
    free(src);
    free(dst);
    return ret;
}

static int map_file(const char *path, const uint8_t **out, uint64_t *out_n, char *err, size_t err_len) {
    int ret = -1;
    struct stat st;
    int fd = open_regular(path, &st, err, err_len);
    if (fd < 0) goto cleanup;
    if (st.st_size < 4) {
        set_err(err, err_len, "%s: not a GGUF file (%lld bytes, too short for the magic)", path,
                (long long)st.st_size);
        goto cleanup;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        set_err(err, err_len, "%s: cannot mmap: %s", path, strerror(errno));
        goto cleanup;
    }
    *out = p;
    *out_n = (uint64_t)st.st_size;
    ret = 0;
cleanup:
    if (fd >= 0) close(fd);
    return ret;
}

/* ======================================================================== */
/* reading: parser                                                          */
/* ======================================================================== */

typedef struct cursor {
    const char *path;
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    char *err;
    size_t err_len;
    char what[200]; /* what is being read, for truncation errors */
} cursor;

static void cur_what(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cur_what(cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof(c->what), fmt, ap);
    va_end(ap);
}

/* Check that n bytes are available at the cursor. */
static int need(cursor *c, uint64_t n) {
    if (n <= c->size - c->pos) return 0;
    set_err(c->err, c->err_len, "%s: truncated: %s needs %" PRIu64 " bytes at offset %" PRIu64 ", file has %" PRIu64,
            c->path, c->what, n, c->pos, c->size);
    return -1;
}

/* Truncation error for n elements of esz bytes each (the product may overflow). */
static int need_elems(cursor *c, uint64_t n, uint64_t esz, const char *at_least) {
    char need_s[40];
    if (n > UINT64_MAX / esz) snprintf(need_s, sizeof(need_s), "more than 2^64");
    else snprintf(need_s, sizeof(need_s), "%s%" PRIu64, at_least, n * esz);
    set_err(c->err, c->err_len, "%s: truncated: %s needs %s bytes at offset %" PRIu64 ", file has %" PRIu64, c->path,
            c->what, need_s, c->pos, c->size);
    return -1;
}

static int rd(cursor *c, void *dst, uint64_t n) {
    if (need(c, n)) return -1;
    memcpy(dst, c->base + c->pos, n);
    c->pos += n;
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v) { return rd(c, v, 4); }
static int rd_u64(cursor *c, uint64_t *v) { return rd(c, v, 8); }

/* A GGUF string: u64 length + bytes, left in the image. */
static int rd_str(cursor *c, gguf_str *s) {
    uint64_t len;
    if (rd_u64(c, &len) || need(c, len)) return -1;
    s->len = len;
    s->ptr = (const char *)c->base + c->pos;
    c->pos += len;
    return 0;
}

/* NUL-terminated copy of a name; names must not contain NUL bytes. */
static int dup_name(cursor *c, const gguf_str *s, char **out) {
    if (memchr(s->ptr, 0, s->len)) {
        set_err(c->err, c->err_len, "%s: %s contains a NUL byte", c->path, c->what);
        return -1;
    }
    char *p = malloc(s->len + 1);
    if (!p) {
        set_err(c->err, c->err_len, "%s: out of memory for %s (%" PRIu64 " bytes)", c->path, c->what, s->len);
        return -1;
    }
    memcpy(p, s->ptr, s->len);
    p[s->len] = 0;
    *out = p;
    return 0;
}

/* Validate (and skip) the elements of an array of type vt with n elements.
 * Fills kv->arr / kv->arr_strs when kv is non-NULL (top level only). */
static int rd_array_body(cursor *c, uint32_t vt, uint64_t n, int depth, gguf_kv *kv) {
    uint64_t remain = c->size - c->pos;
    if (!vtype_known(vt)) {
        set_err(c->err, c->err_len, "%s: %s: unknown array element type %" PRIu32, c->path, c->what, vt);
        return -1;
    }
    uint64_t esz = vtype_size(vt);
    if (esz) {
        if (n > remain / esz) return need_elems(c, n, esz, "");
        if (kv) kv->arr = c->base + c->pos;
        c->pos += n * esz;
        return 0;
    }
    if (vt == GGUF_VT_STRING) {
        if (n > remain / 8) return need_elems(c, n, 8, "at least "); /* each string has its 8-byte length */
        gguf_str *strs = NULL;
        if (kv) {
            strs = calloc(n ? n : 1, sizeof(*strs));
            if (!strs) {
                set_err(c->err, c->err_len, "%s: out of memory for %s (%" PRIu64 " strings)", c->path, c->what, n);
                return -1;
            }
            kv->arr_strs = strs; /* owned by kv from here on */
            kv->arr = c->base + c->pos;
        }
        for (uint64_t i = 0; i < n; i++) {
            gguf_str s;
            if (rd_str(c, &s)) return -1;
            if (strs) strs[i] = s;
        }
        return 0;
    }
    /* array of arrays */
    if (depth >= GGUF_MAX_ARRAY_DEPTH) {
        set_err(c->err, c->err_len, "%s: %s: arrays nested deeper than %d at offset %" PRIu64, c->path, c->what,
                GGUF_MAX_ARRAY_DEPTH, c->pos);
        return -1;
    }
    if (n > remain / 12) return need_elems(c, n, 12, "at least "); /* each nested array has its type and count */
    if (kv) kv->arr = c->base + c->pos;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t et;
        uint64_t en;
        if (rd_u32(c, &et) || rd_u64(c, &en)) return -1;
        if (rd_array_body(c, et, en, depth + 1, NULL)) return -1;
    }
    return 0;
}

static int rd_kv_value(cursor *c, gguf_kv *kv) {
    uint8_t b[8];
    switch (kv->type) {
    case GGUF_VT_UINT8: if (rd(c, b, 1)) return -1; kv->v.u64 = b[0]; return 0;
    case GGUF_VT_INT8: if (rd(c, b, 1)) return -1; kv->v.i64 = (int8_t)b[0]; return 0;
    case GGUF_VT_BOOL: if (rd(c, b, 1)) return -1; kv->v.b = b[0] != 0; return 0;
    case GGUF_VT_UINT16: { uint16_t v; if (rd(c, &v, 2)) return -1; kv->v.u64 = v; return 0; }
    case GGUF_VT_INT16: { int16_t v; if (rd(c, &v, 2)) return -1; kv->v.i64 = v; return 0; }
    case GGUF_VT_UINT32: { uint32_t v; if (rd(c, &v, 4)) return -1; kv->v.u64 = v; return 0; }
    case GGUF_VT_INT32: { int32_t v; if (rd(c, &v, 4)) return -1; kv->v.i64 = v; return 0; }
    case GGUF_VT_FLOAT32: { float v; if (rd(c, &v, 4)) return -1; kv->v.f64 = v; return 0; }
    case GGUF_VT_UINT64: { uint64_t v; if (rd(c, &v, 8)) return -1; kv->v.u64 = v; return 0; }
    case GGUF_VT_INT64: { int64_t v; if (rd(c, &v, 8)) return -1; kv->v.i64 = v; return 0; }
    case GGUF_VT_FLOAT64: { double v; if (rd(c, &v, 8)) return -1; kv->v.f64 = v; return 0; }
    case GGUF_VT_STRING: return rd_str(c, &kv->v.str);
    case GGUF_VT_ARRAY:
        if (rd_u32(c, &kv->arr_type) || rd_u64(c, &kv->arr_n)) return -1;
        return rd_array_body(c, kv->arr_type, kv->arr_n, 1, kv);
    default:
        set_err(c->err, c->err_len, "%s: %s: unknown value type %" PRIu32, c->path, c->what, kv->type);
        return -1;
    }
}

static int parse(gguf_file_priv *fp, char *err, size_t err_len) {
    gguf_file *f = &fp->pub;
    cursor cur = {.path = f->path, .base = f->base, .size = f->size, .pos = 0, .err = err, .err_len = err_len};
    cursor *c = &cur;

    /* header */
    if (f->size < 4 || memcmp(f->base, "GGUF", 4) != 0) {
        char m[4 * 4 + 1] = {0};
        size_t k = 0;
        for (uint64_t i = 0; i < 4 && i < f->size; i++) {
            uint8_t ch = f->base[i];
            if (ch >= 0x20 && ch < 0x7f && ch != '\'' && ch != '\\') m[k++] = (char)ch;
            else k += (size_t)snprintf(m + k, sizeof(m) - k, "\\x%02x", ch);
        }
        set_err(err, err_len, "%s: not a GGUF file (magic '%s')", f->path, m);
        return -1;
    }
    c->pos = 4;
    cur_what(c, "header");
    if (rd_u32(c, &f->version)) return -1;
    if (f->version != 3) {
        set_err(err, err_len, "%s: GGUF version %" PRIu32 " not supported (need 3)", f->path, f->version);
        return -1;
    }
    if (rd_u64(c, &f->n_tensors) || rd_u64(c, &f->n_kv)) return -1;

    /* Counts against the bytes left: a KV is at least 8 (key len) + 4 (type) + 1,
     * a tensor info at least 8 (name len) + 4 (n_dims) + 8 (ne0) + 4 (type) + 8 (offset). */
    uint64_t remain = f->size - c->pos;
    if (f->n_kv > (1ull << 48) || f->n_tensors > (1ull << 48)) {
        set_err(err, err_len, "%s: truncated: header declares %" PRIu64 " KVs and %" PRIu64 " tensors, far more than a %" PRIu64 "-byte file can hold",
                f->path, f->n_kv, f->n_tensors, f->size);
        return -1;
    }
    if (f->n_kv * 13 + f->n_tensors * 32 > remain) {
        set_err(err, err_len, "%s: truncated: header declares %" PRIu64 " KVs and %" PRIu64 " tensors, needing at least %" PRIu64 " bytes at offset %" PRIu64 ", file has %" PRIu64,
                f->path, f->n_kv, f->n_tensors, f->n_kv * 13 + f->n_tensors * 32, c->pos, f->size);
        return -1;
    }

    /* KVs */
    f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof(*f->kv));
    if (!f->kv || index_init(&fp->kv_ix, f->n_kv)) {
        set_err(err, err_len, "%s: out of memory for %" PRIu64 " KVs", f->path, f->n_kv);
        return -1;
    }
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        gguf_str key;
        cur_what(c, "key %" PRIu64 " name", i);
        if (rd_str(c, &key) || dup_name(c, &key, &kv->key)) return -1;
        cur_what(c, "key %" PRIu64 " ('%s')", i,  SHOWN(kv->key));
        if (rd_u32(c, &kv->type)) return -1;
        if (!vtype_known(kv->type)) {
            set_err(err, err_len, "%s: key '%s': unknown value type %" PRIu32, f->path,  SHOWN(kv->key), kv->type);
            return -1;
        }
        if (rd_kv_value(c, kv)) return -1;
        int64_t dup = index_insert(&fp->kv_ix, f->kv, kv_name, i);
        if (dup >= 0) {
            set_err(err, err_len, "%s: key '%s': duplicate (keys %" PRId64 " and %" PRIu64 ")", f->path, 
                    SHOWN(kv->key), dup, i);
            return -1;
        }
        if (strcmp(kv->key, "general.alignment") == 0) {
            uint64_t a;
            if (kv->type == GGUF_VT_UINT32 || kv->type == GGUF_VT_UINT64 || kv->type == GGUF_VT_UINT16 ||
                kv->type == GGUF_VT_UINT8) a = kv->v.u64;
            else if (kv->type == GGUF_VT_INT32 || kv->type == GGUF_VT_INT64 || kv->type == GGUF_VT_INT16 ||
                     kv->type == GGUF_VT_INT8) a = kv->v.i64 < 0 ? 0 : (uint64_t)kv->v.i64;
            else {
                set_err(err, err_len, "%s: key 'general.alignment': not an integer (value type %" PRIu32 ")", f->path, kv->type);
                return -1;
            }
            if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 30)) {
                set_err(err, err_len, "%s: key 'general.alignment': %" PRIu64 " is not a power of two in 1..2^30", f->path, a);
                return -1;
            }
            f->alignment = a;
        }
    }

    /* tensor infos */
    f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof(*f->tensors));
    if (!f->tensors || index_init(&fp->tensor_ix, f->n_tensors)) {
        set_err(err, err_len, "%s: out of memory for %" PRIu64 " tensor infos", f->path, f->n_tensors);
        return -1;
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        gguf_str name;
        cur_what(c, "tensor info %" PRIu64 " name", i);
        if (rd_str(c, &name) || dup_name(c, &name, &t->name)) return -1;
        cur_what(c, "tensor info %" PRIu64 " ('%s')", i,  SHOWN(t->name));
        if (rd_u32(c, &t->n_dims)) return -1;
        if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
            set_err(err, err_len, "%s: tensor '%s': n_dims %" PRIu32 " out of range 1..%d", f->path, 
                    SHOWN(t->name), t->n_dims, GGUF_MAX_DIMS);
            return -1;
        }
        for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
        if (need(c, 8ull * t->n_dims + 4 + 8)) return -1;
        /* The product of the dims (zeros counted as 1, so an empty tensor is bounded too) must stay
         * below 2^61: then the byte size (at most 4 bytes per element) fits in 63 bits. */
        uint64_t nel = 1, bound = 1;
        int overflow = 0;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            rd_u64(c, &t->ne[d]);
            uint64_t m = t->ne[d] ? t->ne[d] : 1;
            if (!overflow && m > MAX_ELEMENTS / bound) overflow = 1;
            if (!overflow) {
                bound *= m;
                nel *= t->ne[d];
            }
        }
        if (overflow) {
            set_err(err, err_len, "%s: tensor '%s': element count overflows (ne {%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "})",
                    f->path, SHOWN(t->name), t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
            return -1;
        }
        t->n_elements = nel;
        rd_u32(c, &t->type);
        rd_u64(c, &t->offset);
        const type_info *ti = find_type(t->type);
        if (!ti) {
            set_err(err, err_len, "%s: tensor '%s': unknown type %" PRIu32, f->path,  SHOWN(t->name), t->type);
            return -1;
        }
        if (t->ne[0] % ti->block_size != 0) {
            set_err(err, err_len, "%s: tensor '%s': ne0 %" PRIu64 " is not a multiple of the %s block size %" PRIu64,
                    f->path,  SHOWN(t->name), t->ne[0], ti->name, ti->block_size);
            return -1;
        }
        /* nel <= 2^61 and block_bytes/block_size <= 4, so this cannot overflow */
        t->n_bytes = nel / ti->block_size * ti->block_bytes;
        int64_t dup = index_insert(&fp->tensor_ix, f->tensors, tensor_name, i);
        if (dup >= 0) {
            set_err(err, err_len, "%s: tensor '%s': duplicate name (tensor infos %" PRId64 " and %" PRIu64 ")", f->path,
                     SHOWN(t->name), dup, i);
            return -1;
        }
    }

    /* data section */
    uint64_t a = f->alignment;
    uint64_t pad = (a - c->pos % a) % a;
    f->data_offset = c->pos + pad;
    if (f->n_tensors > 0 && pad > f->size - c->pos) {
        set_err(err, err_len, "%s: truncated: data section starts at offset %" PRIu64 " (alignment %" PRIu64 "), file has %" PRIu64,
                f->path, f->data_offset, a, f->size);
        return -1;
    }
    if (f->data_offset > f->size) f->data_offset = f->size; /* no tensors: an empty data section */
    uint64_t data_size = f->size - f->data_offset;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (t->offset % a != 0) {
            set_err(err, err_len, "%s: tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                    f->path,  SHOWN(t->name), t->offset, a);
            return -1;
        }
        if (t->offset > data_size || t->n_bytes > data_size - t->offset) {
            if (t->offset > UINT64_MAX - f->data_offset - t->n_bytes) /* data_offset <= size, n_bytes < 2^63 */
                set_err(err, err_len, "%s: tensor '%s': offset %" PRIu64 " past end of file (%" PRIu64 " bytes)", f->path,
                         SHOWN(t->name), t->offset, f->size);
            else
                set_err(err, err_len, "%s: tensor '%s': data [%" PRIu64 ", %" PRIu64 ") past end of file (%" PRIu64 " bytes)",
                        f->path,  SHOWN(t->name), f->data_offset + t->offset,
                        f->data_offset + t->offset + t->n_bytes, f->size);
            return -1;
        }
        t->data = f->base + f->data_offset + t->offset;
    }
    return 0;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    gguf_file_priv *fp = (gguf_file_priv *)f;
    if (f->kv) {
        for (uint64_t i = 0; i < f->n_kv; i++) {
            free(f->kv[i].key);
            free(f->kv[i].arr_strs);
        }
    }
    if (f->tensors)
        for (uint64_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->kv);
    free(f->tensors);
    free(fp->kv_ix.slot);
    free(fp->tensor_ix.slot);
    if (f->base) {
        if (f->mapped) munmap((void *)f->base, (size_t)f->size);
        else free((void *)f->base);
    }
    free(f->path);
    free(fp);
}

int gguf_open(const char *path, gguf_file **out, char *err, size_t err_len) {
    int ret = -1;
    *out = NULL;
    gguf_file_priv *fp = calloc(1, sizeof(*fp));
    if (!fp || !(fp->pub.path = strdup(path))) {
        set_err(err, err_len, "%s: out of memory", path);
        goto cleanup;
    }
    gguf_file *f = &fp->pub;
    if (ends_with(path, ".zst")) {
        uint8_t *img = NULL;
        if (load_zst(path, &img, &f->size, err, err_len)) goto cleanup;
        f->base = img;
        f->mapped = 0;
    } else {
        if (map_file(path, &f->base, &f->size, err, err_len)) goto cleanup;
        f->mapped = 1;
    }
    if (parse(fp, err, err_len)) goto cleanup;
    *out = f;
    fp = NULL;
    ret = 0;
cleanup:
    if (fp) gguf_close(&fp->pub);
    return ret;
}

/* ======================================================================== */
/* lookups and typed getters                                                */
/* ======================================================================== */

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key) {
    const gguf_file_priv *fp = (const gguf_file_priv *)f;
    int64_t i = index_find(&fp->kv_ix, f->kv, kv_name, key);
    return i < 0 ? NULL : &f->kv[i];
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    const gguf_file_priv *fp = (const gguf_file_priv *)f;
    int64_t i = index_find(&fp->tensor_ix, f->tensors, tensor_name, name);
    return i < 0 ? NULL : &f->tensors[i];
}

static const char *vtype_name(uint32_t vt) {
    static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
                                        "str", "array", "u64", "i64", "f64"};
    return vt < sizeof(names) / sizeof(names[0]) ? names[vt] : "?";
}

static int vtype_is_uint(uint32_t vt) {
    return vt == GGUF_VT_UINT8 || vt == GGUF_VT_UINT16 || vt == GGUF_VT_UINT32 || vt == GGUF_VT_UINT64;
}
static int vtype_is_sint(uint32_t vt) {
    return vt == GGUF_VT_INT8 || vt == GGUF_VT_INT16 || vt == GGUF_VT_INT32 || vt == GGUF_VT_INT64;
}

static const gguf_kv *need_kv(const gguf_file *f, const char *key, char *err, size_t err_len) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) set_err(err, err_len, "%s: missing key '%s'", f->path, key);
    return kv;
}

int gguf_get_int(const gguf_file *f, const char *key, int64_t *out, char *err, size_t err_len) {
    const gguf_kv *kv = need_kv(f, key, err, err_len);
    if (!kv) return -1;
    if (vtype_is_sint(kv->type)) {
        *out = kv->v.i64;
        return 0;
    }
    if (vtype_is_uint(kv->type)) {
        if (kv->v.u64 > (uint64_t)INT64_MAX) {
            set_err(err, err_len, "%s: key '%s': %" PRIu64 " out of range", f->path, key, kv->v.u64);
            return -1;
        }
        *out = (int64_t)kv->v.u64;
        return 0;
    }
    set_err(err, err_len, "%s: key '%s': type %s, expected an integer", f->path, key, vtype_name(kv->type));
    return -1;
}

int gguf_get_float(const gguf_file *f, const char *key, double *out, char *err, size_t err_len) {
    const gguf_kv *kv = need_kv(f, key, err, err_len);
    if (!kv) return -1;
    if (kv->type == GGUF_VT_FLOAT32 || kv->type == GGUF_VT_FLOAT64) *out = kv->v.f64;
    else if (vtype_is_sint(kv->type)) *out = (double)kv->v.i64;
    else if (vtype_is_uint(kv->type)) *out = (double)kv->v.u64;
    else {
        set_err(err, err_len, "%s: key '%s': type %s, expected a number", f->path, key, vtype_name(kv->type));
        return -1;
    }
    return 0;
}

int gguf_get_str(const gguf_file *f, const char *key, char **out, char *err, size_t err_len) {
    const gguf_kv *kv = need_kv(f, key, err, err_len);
    if (!kv) return -1;
    if (kv->type != GGUF_VT_STRING) {
        set_err(err, err_len, "%s: key '%s': type %s, expected str", f->path, key, vtype_name(kv->type));
        return -1;
    }
    char *s = malloc(kv->v.str.len + 1);
    if (!s) {
        set_err(err, err_len, "%s: key '%s': out of memory", f->path, key);
        return -1;
    }
    memcpy(s, kv->v.str.ptr, kv->v.str.len);
    s[kv->v.str.len] = 0;
    *out = s;
    return 0;
}

int gguf_get_int_array(const gguf_file *f, const char *key, int64_t *out, size_t cap, size_t *n, char *err,
                       size_t err_len) {
    const gguf_kv *kv = need_kv(f, key, err, err_len);
    if (!kv) return -1;
    uint32_t et = kv->arr_type;
    if (kv->type != GGUF_VT_ARRAY || !(vtype_is_sint(et) || vtype_is_uint(et))) {
        set_err(err, err_len, "%s: key '%s': type %s%s%s, expected an integer array", f->path, key, vtype_name(kv->type),
                kv->type == GGUF_VT_ARRAY ? " of " : "", kv->type == GGUF_VT_ARRAY ? vtype_name(et) : "");
        return -1;
    }
    if (kv->arr_n > cap) {
        set_err(err, err_len, "%s: key '%s': %" PRIu64 " elements, at most %zu expected", f->path, key, kv->arr_n, cap);
        return -1;
    }
    const uint8_t *p = kv->arr; /* elements may be unaligned: memcpy each */
    uint64_t esz = vtype_size(et);
    for (uint64_t i = 0; i < kv->arr_n; i++, p += esz) {
        switch (et) {
        case GGUF_VT_UINT8: out[i] = p[0]; break;
        case GGUF_VT_INT8: out[i] = (int8_t)p[0]; break;
        case GGUF_VT_UINT16: { uint16_t v; memcpy(&v, p, 2); out[i] = v; break; }
        case GGUF_VT_INT16: { int16_t v; memcpy(&v, p, 2); out[i] = v; break; }
        case GGUF_VT_UINT32: { uint32_t v; memcpy(&v, p, 4); out[i] = v; break; }
        case GGUF_VT_INT32: { int32_t v; memcpy(&v, p, 4); out[i] = v; break; }
        case GGUF_VT_INT64: { int64_t v; memcpy(&v, p, 8); out[i] = v; break; }
        default: { /* UINT64 */
            uint64_t v;
            memcpy(&v, p, 8);
            if (v > (uint64_t)INT64_MAX) {
                set_err(err, err_len, "%s: key '%s': element %" PRIu64 " = %" PRIu64 " out of range", f->path, key, i, v);
                return -1;
            }
            out[i] = (int64_t)v;
        }
        }
    }
    *n = (size_t)kv->arr_n;
    return 0;
}

/* "{64, 384}" */
static void fmt_shape(char *buf, size_t len, uint32_t n_dims, const uint64_t *ne) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "{");
    for (uint32_t d = 0; d < n_dims && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%" PRIu64, d ? ", " : "", ne[d]);
    if (k < len) snprintf(buf + k, len - k, "}");
}

int gguf_expect_tensor(const gguf_file *f, const char *name, uint32_t allowed_types, uint32_t n_dims,
                       const uint64_t *ne, const gguf_tensor **out, char *err, size_t err_len) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (out) *out = NULL;
    if (!t) {
        set_err(err, err_len, "%s: missing tensor '%s'", f->path, name);
        return -1;
    }
    if (allowed_types && (t->type >= 32 || !(allowed_types & (1u << t->type)))) {
        char want[96];
        size_t k = 0;
        want[0] = 0;
        for (size_t i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++)
            if (type_table[i].type < 32 && (allowed_types & (1u << type_table[i].type)) && k < sizeof(want))
                k += (size_t)snprintf(want + k, sizeof(want) - k, "%s%s", k ? " or " : "", type_table[i].name);
        const char *tn = ggml_type_name(t->type);
        set_err(err, err_len, "%s: tensor '%s': type %s not allowed (want %s)", f->path, name, tn ? tn : "?", want);
        return -1;
    }
    int same = t->n_dims == n_dims;
    for (uint32_t d = 0; same && d < n_dims; d++) same = t->ne[d] == ne[d];
    if (!same) {
        char got[128], exp[128];
        fmt_shape(got, sizeof(got), t->n_dims, t->ne);
        fmt_shape(exp, sizeof(exp), n_dims > GGUF_MAX_DIMS ? GGUF_MAX_DIMS : n_dims, ne);
        set_err(err, err_len, "%s: tensor '%s': shape %s, expected %s", f->path, name, got, exp);
        return -1;
    }
    if (out) *out = t;
    return 0;
}

/* ======================================================================== */
/* writer                                                                   */
/* ======================================================================== */

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    uint64_t n_bytes, offset; /* offset relative to the data section */
} wtensor;

struct gguf_writer {
    char *path, *tmp_path;
    FILE *fp;
    uint8_t *kvbuf; /* serialised KVs */
    size_t kv_len, kv_cap;
    uint64_t n_kv;
    char **keys; /* (n_kv,) copies, for the duplicate check */
    wtensor *tensors;
    uint64_t n_tensors, cap_tensors;
    uint64_t alignment;
    int in_data;     /* begin_data() done */
    uint64_t cur;    /* tensor being written */
    uint64_t cur_written;
    uint64_t data_pos; /* bytes written into the data section */
    int failed;
    char err[512];
};

static int wfail(gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wfail(gguf_writer *w, const char *fmt, ...) {
    if (!w->failed) {
        int k = snprintf(w->err, sizeof(w->err), "%s: ", w->path);
        va_list ap;
        va_start(ap, fmt);
        if (k >= 0 && (size_t)k < sizeof(w->err)) vsnprintf(w->err + k, sizeof(w->err) - (size_t)k, fmt, ap);
        va_end(ap);
    }
    w->failed = 1;
    return -1;
}

const char *gguf_writer_error(const gguf_writer *w) { return w ? w->err : "no writer"; }

int gguf_writer_open(const char *path, gguf_writer **out, char *err, size_t err_len) {
    int ret = -1;
    *out = NULL;
    gguf_writer *w = calloc(1, sizeof(*w));
    if (!w || !(w->path = strdup(path)) || asprintf(&w->tmp_path, "%s.tmp", path) < 0) {
        if (w) w->tmp_path = NULL;
        set_err(err, err_len, "%s: out of memory", path);
        goto cleanup;
    }
    w->alignment = GGUF_DEFAULT_ALIGNMENT;
    w->fp = fopen(w->tmp_path, "wb");
    if (!w->fp) {
        set_err(err, err_len, "%s: cannot create: %s", w->tmp_path, strerror(errno));
        goto cleanup;
    }
    *out = w;
    w = NULL;
    ret = 0;
cleanup:
    if (w) {
        free(w->path);
        free(w->tmp_path);
        free(w);
    }
    return ret;
}

static int kv_put(gguf_writer *w, const void *p, size_t n) {
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 256;
        while (cap < w->kv_len + n) cap *= 2;
        uint8_t *nb = realloc(w->kvbuf, cap);
        if (!nb) return wfail(w, "out of memory buffering KVs");
        w->kvbuf = nb;
        w->kv_cap = cap;
    }
    memcpy(w->kvbuf + w->kv_len, p, n);
    w->kv_len += n;
    return 0;
}

static int kv_put_str(gguf_writer *w, const char *s) {
    uint64_t n = strlen(s);
    return kv_put(w, &n, 8) || kv_put(w, s, n);
}

static int kv_begin(gguf_writer *w, const char *key, uint32_t type) {
    if (w->failed) return -1;
    if (w->in_data) return wfail(w, "key '%s' added after begin_data", key);
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0) return wfail(w, "key '%s' added twice", key);
    char **nk = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof(*nk));
    if (!nk) return wfail(w, "out of memory adding key '%s'", key);
    w->keys = nk;
    if (!(w->keys[w->n_kv] = strdup(key))) return wfail(w, "out of memory adding key '%s'", key);
    w->n_kv++;
    return kv_put_str(w, key) || kv_put(w, &type, 4);
}

int gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v) {
    if (strcmp(key, "general.alignment") == 0) {
        if (v == 0 || (v & (v - 1)) != 0) return wfail(w, "key 'general.alignment': %" PRIu32 " is not a power of two", v);
        w->alignment = v;
    }
    return kv_begin(w, key, GGUF_VT_UINT32) || kv_put(w, &v, 4);
}
int gguf_writer_kv_i32(gguf_writer *w, const char *key, int32_t v) {
    return kv_begin(w, key, GGUF_VT_INT32) || kv_put(w, &v, 4);
}
int gguf_writer_kv_u64(gguf_writer *w, const char *key, uint64_t v) {
    return kv_begin(w, key, GGUF_VT_UINT64) || kv_put(w, &v, 8);
}
int gguf_writer_kv_f32(gguf_writer *w, const char *key, float v) {
    return kv_begin(w, key, GGUF_VT_FLOAT32) || kv_put(w, &v, 4);
}
int gguf_writer_kv_bool(gguf_writer *w, const char *key, int v) {
    uint8_t b = v != 0;
    return kv_begin(w, key, GGUF_VT_BOOL) || kv_put(w, &b, 1);
}
int gguf_writer_kv_str(gguf_writer *w, const char *key, const char *v) {
    return kv_begin(w, key, GGUF_VT_STRING) || kv_put_str(w, v);
}
int gguf_writer_kv_arr_i32(gguf_writer *w, const char *key, const int32_t *v, uint64_t n) {
    uint32_t et = GGUF_VT_INT32;
    if (kv_begin(w, key, GGUF_VT_ARRAY) || kv_put(w, &et, 4) || kv_put(w, &n, 8)) return -1;
    return n ? kv_put(w, v, n * 4) : 0;
}
int gguf_writer_kv_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n) {
    uint32_t et = GGUF_VT_STRING;
    if (kv_begin(w, key, GGUF_VT_ARRAY) || kv_put(w, &et, 4) || kv_put(w, &n, 8)) return -1;
    for (uint64_t i = 0; i < n; i++)
        if (kv_put_str(w, v[i])) return -1;
    return 0;
}

int gguf_writer_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const uint64_t *ne) {
    if (w->failed) return -1;
    if (w->in_data) return wfail(w, "tensor '%s' declared after begin_data", name);
    const type_info *ti = find_type(type);
    if (!ti) return wfail(w, "tensor '%s': unknown type %" PRIu32, name, type);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return wfail(w, "tensor '%s': n_dims %" PRIu32 " out of range 1..%d", name, n_dims, GGUF_MAX_DIMS);
    uint64_t nel = 1, bound = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t m = ne[d] ? ne[d] : 1;
        if (m > MAX_ELEMENTS / bound) return wfail(w, "tensor '%s': element count overflows", name);
        bound *= m;
        nel *= ne[d];
    }
    if (ne[0] % ti->block_size)
        return wfail(w, "tensor '%s': ne0 %" PRIu64 " is not a multiple of the %s block size %" PRIu64, name, ne[0],
                     ti->name, ti->block_size);
    for (uint64_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0) return wfail(w, "tensor '%s' declared twice", name);
    if (w->n_tensors == w->cap_tensors) {
        uint64_t cap = w->cap_tensors ? w->cap_tensors * 2 : 16;
        wtensor *nt = realloc(w->tensors, cap * sizeof(*nt));
        if (!nt) return wfail(w, "out of memory declaring tensor '%s'", name);
        w->tensors = nt;
        w->cap_tensors = cap;
    }
    wtensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof(*t));
    if (!(t->name = strdup(name))) return wfail(w, "out of memory declaring tensor '%s'", name);
    w->n_tensors++;
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = (uint32_t)d < n_dims ? ne[d] : 1;
    t->n_bytes = nel / ti->block_size * ti->block_bytes;
    return 0;
}

static int wput(gguf_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->fp) != n) return wfail(w, "write error: %s", strerror(errno));
    return 0;
}

static int wpad(gguf_writer *w, uint64_t pos) {
    static const uint8_t zeros[64];
    uint64_t pad = (w->alignment - pos % w->alignment) % w->alignment;
    while (pad) {
        size_t k = pad < sizeof(zeros) ? (size_t)pad : sizeof(zeros);
        if (wput(w, zeros, k)) return -1;
        pad -= k;
    }
    return 0;
}

/* After the current tensor is complete: pad and move on to the next non-empty one. */
static int advance(gguf_writer *w) {
    while (w->cur < w->n_tensors && w->cur_written == w->tensors[w->cur].n_bytes) {
        w->cur++;
        w->cur_written = 0;
        if (w->cur < w->n_tensors) {
            if (wpad(w, w->data_pos)) return -1;
            w->data_pos = w->tensors[w->cur].offset;
        }
    }
    return 0;
}

int gguf_writer_begin_data(gguf_writer *w) {
    if (w->failed) return -1;
    if (w->in_data) return wfail(w, "begin_data called twice");
    uint32_t version = 3;
    uint64_t pos = 0;
    if (wput(w, "GGUF", 4) || wput(w, &version, 4) || wput(w, &w->n_tensors, 8) || wput(w, &w->n_kv, 8) ||
        wput(w, w->kvbuf, w->kv_len))
        return -1;
    pos = 24 + w->kv_len;
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        wtensor *t = &w->tensors[i];
        t->offset = off;
        off += t->n_bytes;
        off += (w->alignment - off % w->alignment) % w->alignment;
        uint64_t nlen = strlen(t->name);
        if (wput(w, &nlen, 8) || wput(w, t->name, nlen) || wput(w, &t->n_dims, 4) ||
            wput(w, t->ne, 8ull * t->n_dims) || wput(w, &t->type, 4) || wput(w, &t->offset, 8))
            return -1;
        pos += 8 + nlen + 4 + 8ull * t->n_dims + 4 + 8;
    }
    if (wpad(w, pos)) return -1;
    w->in_data = 1;
    w->cur = 0;
    w->cur_written = 0;
    w->data_pos = 0;
    return advance(w);
}

int gguf_writer_write(gguf_writer *w, const void *data, uint64_t n) {
    if (w->failed) return -1;
    if (!w->in_data) return wfail(w, "tensor data written before begin_data");
    const uint8_t *p = data;
    while (n) {
        if (w->cur >= w->n_tensors) return wfail(w, "%" PRIu64 " bytes written past the last tensor", n);
        wtensor *t = &w->tensors[w->cur];
        uint64_t k = t->n_bytes - w->cur_written;
        if (k > n) k = n;
        if (wput(w, p, (size_t)k)) return -1;
        p += k;
        n -= k;
        w->cur_written += k;
        w->data_pos += k;
        if (advance(w)) return -1;
    }
    return 0;
}

static void writer_free(gguf_writer *w) {
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    for (uint64_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    free(w->kvbuf);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

int gguf_writer_finish(gguf_writer *w) {
    if (w->failed) return -1;
    if (!w->in_data && gguf_writer_begin_data(w)) return -1;
    if (w->cur < w->n_tensors)
        return wfail(w, "tensor '%s' got %" PRIu64 " of %" PRIu64 " bytes", w->tensors[w->cur].name, w->cur_written,
                     w->tensors[w->cur].n_bytes);
    if (fflush(w->fp) != 0) return wfail(w, "write error: %s", strerror(errno));
    if (fsync(fileno(w->fp)) != 0) return wfail(w, "fsync: %s", strerror(errno));
    int rc = fclose(w->fp);
    w->fp = NULL;
    if (rc != 0) return wfail(w, "close: %s", strerror(errno));
    if (rename(w->tmp_path, w->path) != 0) return wfail(w, "rename from %s: %s", w->tmp_path, strerror(errno));
    writer_free(w);
    return 0;
}

void gguf_writer_abort(gguf_writer *w) {
    if (!w) return;
    if (w->fp) fclose(w->fp);
    if (w->tmp_path) unlink(w->tmp_path);
    writer_free(w);
}
