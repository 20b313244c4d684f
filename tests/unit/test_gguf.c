/*
 * test_gguf.c - TAP tests of the GGUF reader and writer (src/lib/gguf.c).
 *
 * 1. writer -> reader round trip: every writer KV kind, every tensor type,
 *    general.alignment 64, data written in uneven chunks;
 * 2. a hand-built image holding every KV value type (nested string arrays
 *    too) read back value by value, and the typed getters' errors;
 * 3. gguf_expect_tensor's three error kinds;
 * 4. every class of bad input as its own test, with the exact error line:
 *    a small valid image is built byte by byte (field offsets recorded) and
 *    then cut or patched;
 * 5. .zst round trip (frame with and without a content size) and a corrupt .zst;
 * 6. writer failure paths (missing bytes, abort removes the .tmp file);
 * 7. oracle_open on a valid dump (also .zst) and on one dump per defect.
 *
 * `test_gguf --write-fixtures DIR` only writes DIR/model.gguf and
 * DIR/oracle.gguf (test_gguf_fixtures.h) for tests/gguf-inspect.sh.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "gguf.h"
#include "oracle.h"
#include "test_gguf_fixtures.h"
#include "tap.h"

/* ---- TAP ---- */


/* ---- scratch files ---- */
static char tmpdir[256];

static char *tpath(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp || (n && fwrite(p, 1, n, fp) != n) || fclose(fp) != 0) {
        printf("Bail out! cannot write %s\n", path);
        exit(1);
    }
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- byte builder ---- */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(buf *b, uint16_t v) { put(b, &v, 2); }
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void pad_to(buf *b, size_t a) {
    while (b->n % a) put_u8(b, 0);
}
static void set_u32(buf *b, size_t off, uint32_t v) { memcpy(b->p + off, &v, 4); }
static void set_u64(buf *b, size_t off, uint64_t v) { memcpy(b->p + off, &v, 8); }

static void header(buf *b, uint64_t n_tensors, uint64_t n_kv) {
    put(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}

/* gguf_get_int / gguf_get_float of key, expected against actual */
static void check_int(const gguf_file *f, const char *key, int64_t want) {
    char err[512] = "";
    int64_t got = 0;
    int rc = gguf_get_int(f, key, &got, err, sizeof(err));
    if (!ok(rc == 0 && got == want, "gguf_get_int %s = %" PRId64, key, want))
        printf("#   got: %" PRId64 " %s\n", got, rc ? err : "");
}

static void check_float(const gguf_file *f, const char *key, double want) {
    char err[512] = "";
    double got = 0;
    int rc = gguf_get_float(f, key, &got, err, sizeof(err));
    if (!ok(rc == 0 && got == want, "gguf_get_float %s = %.17g", key, want)) printf("#   got: %.17g %s\n", got, rc ? err : "");
}

/* ======================================================================== */
/* 1. writer round trip                                                     */
/* ======================================================================== */

static void test_writer_roundtrip(void) {
    char err[512] = "";
    const char *path = tpath("rt.gguf");
    gguf_writer *w = NULL;
    int rc = gguf_writer_open(path, &w, err, sizeof(err));
    ok(rc == 0, "writer: open%s%s", rc ? ": " : "", err);
    if (rc) return;

    const char *strs[] = {"alpha", "", "gamma delta"};
    const int32_t ints[] = {-7, 0, 2147483647, 11};
    rc = 0;
    rc |= gguf_writer_kv_u32(w, "general.alignment", 64);
    rc |= gguf_writer_kv_str(w, "general.architecture", "qwen35");
    rc |= gguf_writer_kv_u32(w, "t.u32", 4000000000u);
    rc |= gguf_writer_kv_i32(w, "t.i32", -123456);
    rc |= gguf_writer_kv_u64(w, "t.u64", 1ull << 40);
    rc |= gguf_writer_kv_f32(w, "t.f32", 1e-6f);
    rc |= gguf_writer_kv_bool(w, "t.bool", 1);
    rc |= gguf_writer_kv_arr_i32(w, "t.arr_i32", ints, 4);
    rc |= gguf_writer_kv_arr_str(w, "t.arr_str", strs, 3);
    rc |= gguf_writer_kv_arr_i32(w, "t.arr_empty", NULL, 0);

    /* one tensor of every type; payload byte i of tensor k is (k*31 + i*7) & 0xff */
    static const struct { const char *name; uint32_t type, n_dims; uint64_t ne[4]; uint64_t bytes; } T[] = {
        {"w.f32", GGML_TYPE_F32, 2, {3, 2, 1, 1}, 24},
        {"w.f16", GGML_TYPE_F16, 1, {5, 1, 1, 1}, 10},
        {"w.bf16", GGML_TYPE_BF16, 3, {2, 2, 2, 1}, 16},
        {"w.q4_0", GGML_TYPE_Q4_0, 2, {64, 2, 1, 1}, 4 * 18},
        {"w.q8_0", GGML_TYPE_Q8_0, 4, {32, 1, 1, 2}, 2 * 34},
        {"w.i32", GGML_TYPE_I32, 1, {3, 1, 1, 1}, 12},
    };
    const int NT = (int)(sizeof(T) / sizeof(T[0]));
    for (int k = 0; k < NT; k++) rc |= gguf_writer_tensor(w, T[k].name, T[k].type, T[k].n_dims, T[k].ne);
    rc |= gguf_writer_begin_data(w);
    for (int k = 0; k < NT; k++) {
        uint8_t data[128];
        for (uint64_t i = 0; i < T[k].bytes; i++) data[i] = (uint8_t)(k * 31 + i * 7);
        /* stream in chunks of 1, 2, then the rest */
        uint64_t a = T[k].bytes > 3 ? 1 : 0, b = T[k].bytes > 3 ? 2 : 0;
        rc |= gguf_writer_write(w, data, a);
        rc |= gguf_writer_write(w, data + a, b);
        rc |= gguf_writer_write(w, data + a + b, T[k].bytes - a - b);
    }
    ok(rc == 0, "writer: KVs, tensors and data accepted (%s)", gguf_writer_error(w));
    rc = gguf_writer_finish(w);
    ok(rc == 0, "writer: finish (%s)", rc ? gguf_writer_error(w) : "");
    if (rc) {
        gguf_writer_abort(w);
        return;
    }
    ok(!file_exists(tpath("rt.gguf.tmp")) && file_exists(path), "writer: .tmp renamed into place");

    gguf_file *f = NULL;
    rc = gguf_open(path, &f, err, sizeof(err));
    ok(rc == 0, "reader: opens the writer's file (%s)", rc ? err : "");
    if (rc) return;
    ok(f->version == 3 && f->alignment == 64 && f->data_offset % 64 == 0 && f->mapped == 1,
       "reader: version 3, alignment 64, data offset %" PRIu64 " aligned, mmap'd", f->data_offset);
    ok(f->n_kv == 10 && f->n_tensors == (uint64_t)NT, "reader: 10 KVs, %d tensors (got %" PRIu64 ", %" PRIu64 ")", NT,
       f->n_kv, f->n_tensors);

    char *sv = NULL;
    check_int(f, "t.u32", 4000000000LL);
    check_int(f, "t.i32", -123456);
    check_int(f, "t.u64", 1LL << 40);
    check_float(f, "t.f32", (double)1e-6f);
    const gguf_kv *kv = gguf_find_kv(f, "t.bool");
    ok(kv && kv->type == GGUF_VT_BOOL && kv->v.b == 1, "kv bool = true");
    rc = gguf_get_str(f, "general.architecture", &sv, err, sizeof(err));
    ok(rc == 0 && strcmp(sv, "qwen35") == 0, "kv str = 'qwen35' (got '%s')", rc ? err : sv);
    if (!rc) free(sv);
    int64_t arr[8];
    size_t n = 0;
    rc = gguf_get_int_array(f, "t.arr_i32", arr, 8, &n, err, sizeof(err));
    ok(rc == 0 && n == 4 && arr[0] == -7 && arr[1] == 0 && arr[2] == 2147483647 && arr[3] == 11,
       "kv arr i32 = [-7, 0, 2147483647, 11]");
    kv = gguf_find_kv(f, "t.arr_str");
    ok(kv && kv->type == GGUF_VT_ARRAY && kv->arr_type == GGUF_VT_STRING && kv->arr_n == 3 && kv->arr_strs &&
           kv->arr_strs[0].len == 5 && memcmp(kv->arr_strs[0].ptr, "alpha", 5) == 0 && kv->arr_strs[1].len == 0 &&
           kv->arr_strs[2].len == 11 && memcmp(kv->arr_strs[2].ptr, "gamma delta", 11) == 0,
       "kv arr str = ['alpha', '', 'gamma delta']");
    n = 99;
    ok(gguf_get_int_array(f, "t.arr_empty", arr, 8, &n, err, sizeof(err)) == 0 && n == 0, "kv empty arr i32");

    for (int k = 0; k < NT; k++) {
        const gguf_tensor *t = gguf_find_tensor(f, T[k].name);
        int good = t && t->type == T[k].type && t->n_dims == T[k].n_dims && t->n_bytes == T[k].bytes &&
                   t->offset % 64 == 0;
        for (int d = 0; good && d < 4; d++) good = t->ne[d] == T[k].ne[d];
        for (uint64_t i = 0; good && i < T[k].bytes; i++) good = ((const uint8_t *)t->data)[i] == (uint8_t)(k * 31 + i * 7);
        ok(good, "tensor %s: type %s, shape, %" PRIu64 " bytes, aligned offset, data intact", T[k].name,
           ggml_type_name(T[k].type), T[k].bytes);
    }
    ok(gguf_find_tensor(f, "nope") == NULL && gguf_find_kv(f, "nope") == NULL, "lookup of absent names gives NULL");
    gguf_close(f);
}

/* ======================================================================== */
/* 2. every KV value type, getters                                          */
/* ======================================================================== */

static void test_all_kv_types(void) {
    buf b = {0};
    header(&b, 0, 16);
    put_str(&b, "v.u8"); put_u32(&b, GGUF_VT_UINT8); put_u8(&b, 200);
    put_str(&b, "v.i8"); put_u32(&b, GGUF_VT_INT8); put_u8(&b, 0x80);
    put_str(&b, "v.u16"); put_u32(&b, GGUF_VT_UINT16); put_u16(&b, 65535);
    put_str(&b, "v.i16"); put_u32(&b, GGUF_VT_INT16); put_u16(&b, 0x8000);
    put_str(&b, "v.u32"); put_u32(&b, GGUF_VT_UINT32); put_u32(&b, 0xffffffffu);
    put_str(&b, "v.i32"); put_u32(&b, GGUF_VT_INT32); put_u32(&b, 0x80000000u);
    float f32 = -2.5f;
    put_str(&b, "v.f32"); put_u32(&b, GGUF_VT_FLOAT32); put(&b, &f32, 4);
    put_str(&b, "v.bool"); put_u32(&b, GGUF_VT_BOOL); put_u8(&b, 0);
    put_str(&b, "v.str"); put_u32(&b, GGUF_VT_STRING); put_str(&b, "text");
    put_str(&b, "v.u64"); put_u32(&b, GGUF_VT_UINT64); put_u64(&b, UINT64_MAX);
    put_str(&b, "v.i64"); put_u32(&b, GGUF_VT_INT64); put_u64(&b, (uint64_t)INT64_MIN);
    double f64 = 1.0 / 3.0;
    put_str(&b, "v.f64"); put_u32(&b, GGUF_VT_FLOAT64); put(&b, &f64, 8);
    /* array of i16 at an odd offset, to exercise unaligned element reads */
    put_str(&b, "v.arr_i16"); put_u32(&b, GGUF_VT_ARRAY); put_u32(&b, GGUF_VT_INT16); put_u64(&b, 3);
    put_u16(&b, 1); put_u16(&b, 0xffff); put_u16(&b, 300);
    /* array of arrays of strings: [["a", "bc"], ["d"]] */
    put_str(&b, "v.nested"); put_u32(&b, GGUF_VT_ARRAY); put_u32(&b, GGUF_VT_ARRAY); put_u64(&b, 2);
    put_u32(&b, GGUF_VT_STRING); put_u64(&b, 2); put_str(&b, "a"); put_str(&b, "bc");
    put_u32(&b, GGUF_VT_STRING); put_u64(&b, 1); put_str(&b, "d");
    put_str(&b, "v.arr_f64"); put_u32(&b, GGUF_VT_ARRAY); put_u32(&b, GGUF_VT_FLOAT64); put_u64(&b, 2);
    put(&b, &f64, 8); put(&b, &f64, 8);
    put_str(&b, "v.arr_u64"); put_u32(&b, GGUF_VT_ARRAY); put_u32(&b, GGUF_VT_UINT64); put_u64(&b, 1);
    put_u64(&b, UINT64_MAX);
    const char *path = tpath("kv.gguf");
    write_bytes(path, b.p, b.n);
    free(b.p);

    char err[512] = "";
    gguf_file *f = NULL;
    int rc = gguf_open(path, &f, err, sizeof(err));
    ok(rc == 0, "all KV types: opens (%s)", rc ? err : "");
    if (rc) return;
    int64_t iv = 0;
    double dv = 0;
    char *sv = NULL;
    check_int(f, "v.u8", 200);
    check_int(f, "v.i8", -128);
    check_int(f, "v.u16", 65535);
    check_int(f, "v.i16", -32768);
    check_int(f, "v.u32", 4294967295LL);
    check_int(f, "v.i32", INT32_MIN);
    check_float(f, "v.f32", -2.5);
    const gguf_kv *kv = gguf_find_kv(f, "v.bool");
    ok(kv && kv->type == GGUF_VT_BOOL && kv->v.b == 0, "bool false");
    ok(gguf_get_str(f, "v.str", &sv, err, sizeof(err)) == 0 && strcmp(sv, "text") == 0, "str 'text'");
    free(sv);
    kv = gguf_find_kv(f, "v.u64");
    ok(kv && kv->type == GGUF_VT_UINT64 && kv->v.u64 == UINT64_MAX, "u64 UINT64_MAX");
    check_int(f, "v.i64", INT64_MIN);
    check_float(f, "v.f64", 1.0 / 3.0);
    check_float(f, "v.i16", -32768.0); /* get_float converts an integer */
    int64_t arr[4];
    size_t n = 0;
    ok(gguf_get_int_array(f, "v.arr_i16", arr, 4, &n, err, sizeof(err)) == 0 && n == 3 && arr[0] == 1 && arr[1] == -1 &&
           arr[2] == 300,
       "array of i16 [1, -1, 300] (unaligned)");
    kv = gguf_find_kv(f, "v.nested");
    ok(kv && kv->type == GGUF_VT_ARRAY && kv->arr_type == GGUF_VT_ARRAY && kv->arr_n == 2 && kv->arr_strs == NULL,
       "array of arrays of strings: 2 elements");
    kv = gguf_find_kv(f, "v.arr_f64");
    double d2[2] = {0, 0};
    if (kv && kv->arr) memcpy(d2, kv->arr, 16);
    ok(kv && kv->arr_type == GGUF_VT_FLOAT64 && kv->arr_n == 2 && d2[0] == 1.0 / 3.0 && d2[1] == 1.0 / 3.0,
       "array of f64 read through kv->arr");

    /* getter errors name the file and key */
    char want[600];
    rc = gguf_get_int(f, "v.missing", &iv, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: missing key 'v.missing'", path);
    ok(rc != 0, "get_int: missing key fails");
    is_str(want, err, "get_int: missing key message");
    rc = gguf_get_int(f, "v.u64", &iv, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.u64': 18446744073709551615 out of range", path);
    is_str(want, rc ? err : "(no error)", "get_int: u64 beyond int64 is an error");
    rc = gguf_get_int(f, "v.str", &iv, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.str': type str, expected an integer", path);
    is_str(want, rc ? err : "(no error)", "get_int: string key is an error");
    rc = gguf_get_str(f, "v.u8", &sv, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.u8': type u8, expected str", path);
    is_str(want, rc ? err : "(no error)", "get_str: integer key is an error");
    rc = gguf_get_float(f, "v.nested", &dv, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.nested': type array, expected a number", path);
    is_str(want, rc ? err : "(no error)", "get_float: array key is an error");
    rc = gguf_get_int_array(f, "v.arr_i16", arr, 2, &n, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.arr_i16': 3 elements, at most 2 expected", path);
    is_str(want, rc ? err : "(no error)", "get_int_array: too many elements for cap");
    rc = gguf_get_int_array(f, "v.arr_f64", arr, 4, &n, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.arr_f64': type array of f64, expected an integer array", path);
    is_str(want, rc ? err : "(no error)", "get_int_array: f64 array is an error");
    rc = gguf_get_int_array(f, "v.arr_u64", arr, 4, &n, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'v.arr_u64': element 0 = 18446744073709551615 out of range", path);
    is_str(want, rc ? err : "(no error)", "get_int_array: u64 element beyond int64");
    gguf_close(f);
}

/* ======================================================================== */
/* 3. gguf_expect_tensor                                                    */
/* ======================================================================== */

static void test_expect_tensor(void) {
    char err[512] = "", want[600];
    const char *path = tpath("exp.gguf");
    gguf_writer *w = NULL;
    if (gguf_writer_open(path, &w, err, sizeof(err))) {
        ok(0, "expect_tensor: writer open (%s)", err);
        return;
    }
    const uint64_t ne[2] = {64, 384};
    gguf_writer_tensor(w, "blk.3.attn_qkv.weight", GGML_TYPE_Q4_0, 2, ne);
    gguf_writer_begin_data(w);
    static uint8_t zeros[2 * 384 * 18];
    gguf_writer_write(w, zeros, sizeof(zeros));
    if (gguf_writer_finish(w)) {
        ok(0, "expect_tensor: writer (%s)", gguf_writer_error(w));
        gguf_writer_abort(w);
        return;
    }
    gguf_file *f = NULL;
    if (gguf_open(path, &f, err, sizeof(err))) {
        ok(0, "expect_tensor: open (%s)", err);
        return;
    }
    const gguf_tensor *t = NULL;
    const uint64_t good[2] = {64, 384}, bad[2] = {64, 512};
    int rc = gguf_expect_tensor(f, "blk.3.attn_qkv.weight", (1u << GGML_TYPE_Q4_0) | (1u << GGML_TYPE_F32), 2, good, &t,
                                err, sizeof(err));
    ok(rc == 0 && t && t->n_bytes == sizeof(zeros), "expect_tensor: matching type and shape");
    rc = gguf_expect_tensor(f, "blk.3.attn_qkv.weight", 0, 2, bad, &t, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: tensor 'blk.3.attn_qkv.weight': shape {64, 384}, expected {64, 512}", path);
    is_str(want, rc ? err : "(no error)", "expect_tensor: shape mismatch message");
    rc = gguf_expect_tensor(f, "blk.3.attn_qkv.weight", 0, 3, (const uint64_t[]){64, 384, 1}, &t, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: tensor 'blk.3.attn_qkv.weight': shape {64, 384}, expected {64, 384, 1}", path);
    is_str(want, rc ? err : "(no error)", "expect_tensor: n_dims mismatch message");
    rc = gguf_expect_tensor(f, "output_norm.weight", 0, 1, good, &t, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: missing tensor 'output_norm.weight'", path);
    is_str(want, rc ? err : "(no error)", "expect_tensor: missing tensor message");
    rc = gguf_expect_tensor(f, "blk.3.attn_qkv.weight", 1u << GGML_TYPE_F32, 2, good, &t, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: tensor 'blk.3.attn_qkv.weight': type q4_0 not allowed (want f32)", path);
    is_str(want, rc ? err : "(no error)", "expect_tensor: type not allowed message");
    gguf_close(f);
}

/* ======================================================================== */
/* 4. bad inputs                                                            */
/* ======================================================================== */

/* A small valid image: 3 KVs, 2 tensors, with the offset of every field we patch. */
typedef struct layout {
    size_t kv0_val;             /* general.alignment value (u32) */
    size_t kv1_type, kv1_len;   /* string KV: type field, length field */
    size_t kv2_count;           /* array KV: count field */
    size_t t0_start, t0_ndims, t0_ne, t0_type;
    size_t t1_start, t1_name, t1_ne, t1_type, t1_offset;
    size_t data_offset;
} layout;

#define KEY1 "kestrel.test.string_value_key"
#define KEY2 "kestrel.test.arr"
#define VAL1 "hello, gguf world; hello, gguf world!!!!" /* 40 bytes: long enough to cut inside it */

static buf make_image(layout *L) {
    buf b = {0};
    header(&b, 2, 3);
    put_str(&b, "general.alignment"); put_u32(&b, GGUF_VT_UINT32);
    L->kv0_val = b.n; put_u32(&b, 32);
    put_str(&b, KEY1);
    L->kv1_type = b.n; put_u32(&b, GGUF_VT_STRING);
    L->kv1_len = b.n; put_str(&b, VAL1);
    put_str(&b, KEY2); put_u32(&b, GGUF_VT_ARRAY); put_u32(&b, GGUF_VT_INT32);
    L->kv2_count = b.n; put_u64(&b, 3); put_u32(&b, 1); put_u32(&b, 2); put_u32(&b, 3);
    L->t0_start = b.n; put_str(&b, "t0");
    L->t0_ndims = b.n; put_u32(&b, 2);
    L->t0_ne = b.n; put_u64(&b, 4); put_u64(&b, 2);
    L->t0_type = b.n; put_u32(&b, GGML_TYPE_F32);
    put_u64(&b, 0);
    L->t1_start = b.n; L->t1_name = b.n + 8; put_str(&b, "t1");
    put_u32(&b, 1);
    L->t1_ne = b.n; put_u64(&b, 32);
    L->t1_type = b.n; put_u32(&b, GGML_TYPE_Q8_0);
    L->t1_offset = b.n; put_u64(&b, 32);
    pad_to(&b, 32);
    L->data_offset = b.n;
    for (int i = 0; i < 32; i++) put_u8(&b, (uint8_t)i); /* t0: 8 f32 */
    for (int i = 0; i < 34; i++) put_u8(&b, (uint8_t)i); /* t1: one q8_0 block */
    return b;
}

/* Open image (first n bytes) from a file; expect failure with exactly `want` (a format with %s = path). */
static void expect_bad(const uint8_t *p, size_t n, const char *desc, const char *want_fmt, ...) {
    const char *path = tpath("bad.gguf");
    write_bytes(path, p, n);
    char want[1024], fmt2[1024], err[1024] = "";
    snprintf(fmt2, sizeof(fmt2), "%s: %s", path, want_fmt);
    va_list ap;
    va_start(ap, want_fmt);
    vsnprintf(want, sizeof(want), fmt2, ap);
    va_end(ap);
    gguf_file *f = NULL;
    int rc = gguf_open(path, &f, err, sizeof(err));
    if (rc == 0) {
        gguf_close(f);
        ok(0, "%s: rejected", desc);
        printf("#   expected: %s\n#        got: (opened fine)\n", want);
        return;
    }
    is_str(want, err, desc);
}

static void test_bad_inputs(void) {
    layout L;
    buf b = make_image(&L);
    const size_t N = b.n;
    uint8_t *p = malloc(N);

    /* the unpatched image is valid */
    {
        const char *path = tpath("good.gguf");
        write_bytes(path, b.p, N);
        char err[512] = "";
        gguf_file *f = NULL;
        int rc = gguf_open(path, &f, err, sizeof(err));
        ok(rc == 0 && f->n_tensors == 2 && f->data_offset == L.data_offset &&
               ((const uint8_t *)f->tensors[1].data)[33] == 33,
           "bad-input base image is valid (%s)", rc ? err : "");
        if (!rc) gguf_close(f);
    }

#define RESET() memcpy(p, b.p, N)
    /* truncations at several cut points */
    expect_bad(b.p, 0, "truncated: empty file", "not a GGUF file (0 bytes, too short for the magic)");
    expect_bad(b.p, 3, "truncated: inside the magic", "not a GGUF file (3 bytes, too short for the magic)");
    expect_bad(b.p, 10, "truncated: inside the tensor count", "truncated: header needs 8 bytes at offset 8, file has 10");
    expect_bad(b.p, 60, "truncated: KV and tensor counts exceed the file",
               "truncated: header declares 3 KVs and 2 tensors, needing at least 103 bytes at offset 24, file has 60");
    expect_bad(b.p, L.kv1_len + 8 + 30, "truncated: inside a KV string value",
               "truncated: key 1 ('" KEY1 "') needs 40 bytes at offset %zu, file has %zu", L.kv1_len + 8, L.kv1_len + 38);
    expect_bad(b.p, L.kv2_count + 8 + 6, "truncated: inside a KV array",
               "truncated: key 2 ('" KEY2 "') needs 12 bytes at offset %zu, file has %zu", L.kv2_count + 8,
               L.kv2_count + 14);
    expect_bad(b.p, L.t0_ne + 9, "truncated: inside a tensor info's dims",
               "truncated: tensor info 0 ('t0') needs 28 bytes at offset %zu, file has %zu", L.t0_ne, L.t0_ne + 9);
    expect_bad(b.p, L.t1_name + 1, "truncated: inside a tensor name",
               "truncated: tensor info 1 name needs 2 bytes at offset %zu, file has %zu", L.t1_name, L.t1_name + 1);
    expect_bad(b.p, L.t1_offset + 8, "truncated: in the padding before the data section",
               "truncated: data section starts at offset %zu (alignment 32), file has %zu", L.data_offset, L.t1_offset + 8);
    expect_bad(b.p, L.data_offset, "truncated: at the start of the data section",
               "tensor 't0': data [%zu, %zu) past end of file (%zu bytes)", L.data_offset, L.data_offset + 32,
               L.data_offset);
    expect_bad(b.p, N - 1, "truncated: last tensor's data one byte short",
               "tensor 't1': data [%zu, %zu) past end of file (%zu bytes)", L.data_offset + 32, L.data_offset + 66, N - 1);

    RESET(); memcpy(p, "GGUX", 4);
    expect_bad(p, N, "wrong magic", "not a GGUF file (magic 'GGUX')");
    RESET(); memcpy(p, "\x7f" "ELF", 4);
    expect_bad(p, N, "wrong magic, unprintable byte", "not a GGUF file (magic '\\x7fELF')");
    RESET(); set_u32(&(buf){p, N, N}, 4, 2);
    expect_bad(p, N, "version 2", "GGUF version 2 not supported (need 3)");
    RESET(); set_u32(&(buf){p, N, N}, 4, 4);
    expect_bad(p, N, "version 4", "GGUF version 4 not supported (need 3)");

    buf pb = {p, N, N};
    RESET(); set_u64(&pb, L.t1_offset, 4096);
    expect_bad(p, N, "tensor offset past the end", "tensor 't1': data [%zu, %zu) past end of file (%zu bytes)",
               L.data_offset + 4096, L.data_offset + 4096 + 34, N);
    RESET(); set_u64(&pb, L.t1_offset, UINT64_MAX - 31);
    expect_bad(p, N, "tensor offset near 2^64", "tensor 't1': offset %" PRIu64 " past end of file (%zu bytes)",
               UINT64_MAX - 31, N);
    RESET(); set_u64(&pb, L.t1_ne, 64);
    expect_bad(p, N, "tensor size past the end", "tensor 't1': data [%zu, %zu) past end of file (%zu bytes)",
               L.data_offset + 32, L.data_offset + 32 + 68, N);
    RESET(); set_u32(&pb, L.t0_type, 99);
    expect_bad(p, N, "unknown tensor type", "tensor 't0': unknown type 99");
    RESET(); set_u32(&pb, L.t0_type, 3); /* q4_1: a ggml type we do not read */
    expect_bad(p, N, "unsupported ggml tensor type", "tensor 't0': unknown type 3");
    RESET(); set_u32(&pb, L.t0_ndims, 5);
    expect_bad(p, N, "n_dims > 4", "tensor 't0': n_dims 5 out of range 1..4");
    RESET(); set_u32(&pb, L.t0_ndims, 0);
    expect_bad(p, N, "n_dims 0", "tensor 't0': n_dims 0 out of range 1..4");
    RESET(); set_u64(&pb, L.t1_offset, 33);
    expect_bad(p, N, "misaligned tensor offset", "tensor 't1': offset 33 is not a multiple of the alignment 32");
    RESET(); set_u64(&pb, L.t1_ne, 33);
    expect_bad(p, N, "ne0 not a multiple of the block size", "tensor 't1': ne0 33 is not a multiple of the q8_0 block size 32");
    RESET(); set_u64(&pb, L.t0_ne, 1ull << 32); set_u64(&pb, L.t0_ne + 8, 1ull << 32);
    expect_bad(p, N, "element count overflow",
               "tensor 't0': element count overflows (ne {4294967296, 4294967296, 1, 1})");
    RESET(); set_u64(&pb, L.t0_ne, 1ull << 59); set_u64(&pb, L.t0_ne + 8, 8);
    expect_bad(p, N, "byte size overflow (2^62 f32 elements)",
               "tensor 't0': element count overflows (ne {576460752303423488, 8, 1, 1})");
    RESET(); set_u64(&pb, L.t0_ne, 1ull << 62); set_u64(&pb, L.t0_ne + 8, 0);
    expect_bad(p, N, "empty tensor with a huge dimension", "tensor 't0': element count overflows (ne {4611686018427387904, 0, 1, 1})");
    RESET(); p[L.t1_name + 1] = '\n'; set_u32(&pb, L.t1_type, 99);
    expect_bad(p, N, "control byte in a name is escaped", "tensor 't\\x0a': unknown type 99");
    RESET(); set_u64(&pb, L.t0_ne, UINT64_MAX);
    expect_bad(p, N, "negative (as int64) dimension", "tensor 't0': element count overflows (ne {%" PRIu64 ", 2, 1, 1})",
               UINT64_MAX);
    RESET(); set_u64(&pb, L.kv1_len, 1ull << 40);
    expect_bad(p, N, "string length past the end", "truncated: key 1 ('" KEY1 "') needs 1099511627776 bytes at offset %zu, file has %zu",
               L.kv1_len + 8, N);
    RESET(); set_u64(&pb, L.t0_start, UINT64_MAX);
    expect_bad(p, N, "tensor name length 2^64-1", "truncated: tensor info 0 name needs %" PRIu64 " bytes at offset %zu, file has %zu",
               UINT64_MAX, L.t0_start + 8, N);
    RESET(); set_u64(&pb, 8, 1ull << 62);
    expect_bad(p, N, "huge tensor count",
               "truncated: header declares 3 KVs and 4611686018427387904 tensors, far more than a %zu-byte file can hold", N);
    RESET(); set_u64(&pb, 16, 1000);
    expect_bad(p, N, "KV count too large for the file",
               "truncated: header declares 1000 KVs and 2 tensors, needing at least 13064 bytes at offset 24, file has %zu", N);
    RESET(); set_u64(&pb, L.kv2_count, 1ull << 62);
    expect_bad(p, N, "huge array count", "truncated: key 2 ('" KEY2 "') needs more than 2^64 bytes at offset %zu, file has %zu",
               L.kv2_count + 8, N);
    RESET(); set_u64(&pb, L.kv2_count, 1000);
    expect_bad(p, N, "array count past the end", "truncated: key 2 ('" KEY2 "') needs 4000 bytes at offset %zu, file has %zu",
               L.kv2_count + 8, N);
    RESET(); set_u32(&pb, L.kv2_count - 4, 13);
    expect_bad(p, N, "unknown array element type", "key 2 ('" KEY2 "'): unknown array element type 13");
    RESET(); set_u32(&pb, L.kv1_type, 13);
    expect_bad(p, N, "unknown KV value type", "key '" KEY1 "': unknown value type 13");
    RESET(); set_u32(&pb, L.kv0_val, 48);
    expect_bad(p, N, "alignment not a power of two", "key 'general.alignment': 48 is not a power of two in 1..2^30");
    RESET(); set_u32(&pb, L.kv0_val, 0);
    expect_bad(p, N, "alignment 0", "key 'general.alignment': 0 is not a power of two in 1..2^30");
    RESET(); p[L.t1_name + 1] = '0'; /* t1 -> t0 */
    expect_bad(p, N, "duplicate tensor name", "tensor 't0': duplicate name (tensor infos 0 and 1)");
    RESET(); p[L.t1_name + 1] = 0;
    expect_bad(p, N, "NUL byte in a tensor name", "tensor info 1 name contains a NUL byte");
    free(p);
    free(b.p);

    /* duplicate key: two KVs named "a" */
    buf d = {0};
    header(&d, 0, 2);
    put_str(&d, "a"); put_u32(&d, GGUF_VT_UINT8); put_u8(&d, 1);
    put_str(&d, "a"); put_u32(&d, GGUF_VT_UINT8); put_u8(&d, 2);
    expect_bad(d.p, d.n, "duplicate key", "key 'a': duplicate (keys 0 and 1)");
    free(d.p);

    /* arrays nested too deep */
    buf e = {0};
    header(&e, 0, 1);
    put_str(&e, "deep"); put_u32(&e, GGUF_VT_ARRAY);
    for (int i = 0; i < 9; i++) { put_u32(&e, GGUF_VT_ARRAY); put_u64(&e, 1); }
    put_u32(&e, GGUF_VT_UINT8); put_u64(&e, 0);
    expect_bad(e.p, e.n, "arrays nested deeper than 8", "key 0 ('deep'): arrays nested deeper than 8 at offset %zu",
               (size_t)(24 + 8 + 4 + 4 + 8 * 12));
    free(e.p);

    /* a file with no tensors and no padding after the KVs is fine */
    buf z = {0};
    header(&z, 0, 1);
    put_str(&z, "k"); put_u32(&z, GGUF_VT_UINT8); put_u8(&z, 7);
    const char *path = tpath("notensors.gguf");
    write_bytes(path, z.p, z.n);
    free(z.p);
    char err[512] = "";
    gguf_file *f = NULL;
    int rc = gguf_open(path, &f, err, sizeof(err));
    ok(rc == 0 && f->n_tensors == 0 && f->n_kv == 1, "no tensors, unpadded: opens (%s)", rc ? err : "");
    if (!rc) gguf_close(f);

    rc = gguf_open(tpath("does-not-exist.gguf"), &f, err, sizeof(err));
    char want[600];
    snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", tpath("does-not-exist.gguf"));
    is_str(want, rc ? err : "(no error)", "missing file message");
    rc = gguf_open(tmpdir, &f, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: not a regular file", tmpdir);
    is_str(want, rc ? err : "(no error)", "directory message");
#undef RESET
}

/* ======================================================================== */
/* 5. .zst                                                                  */
/* ======================================================================== */

static void test_zst(void) {
    size_t n = 0;
    uint8_t *img = fixture_read_file(tpath("rt.gguf"), &n);
    if (!ok(img != NULL, "zst: read the round-trip file")) return;
    for (int with_size = 1; with_size >= 0; with_size--) {
        size_t cap = ZSTD_compressBound(n);
        uint8_t *z = malloc(cap);
        ZSTD_CCtx *cc = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, with_size);
        size_t zn;
        if (with_size) {
            zn = ZSTD_compress2(cc, z, cap, img, n);
        } else {
            /* streaming without a pledged size: the frame header carries no content size */
            ZSTD_outBuffer ob = {z, cap, 0};
            ZSTD_inBuffer ib = {img, n, 0};
            size_t r;
            do r = ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end);
            while (r != 0 && !ZSTD_isError(r));
            zn = ZSTD_isError(r) ? r : ob.pos;
        }
        ZSTD_freeCCtx(cc);
        const char *zpath = tpath(with_size ? "rt-sized.gguf.zst" : "rt-stream.gguf.zst");
        ok(!ZSTD_isError(zn) && (ZSTD_getFrameContentSize(z, zn) == ZSTD_CONTENTSIZE_UNKNOWN) == !with_size,
           "zst: compressed %s content size", with_size ? "with" : "without");
        write_bytes(zpath, z, zn);
        char err[512] = "";
        gguf_file *f = NULL;
        int rc = gguf_open(zpath, &f, err, sizeof(err));
        ok(rc == 0 && f->mapped == 0 && f->size == n && memcmp(f->base, img, n) == 0 && f->n_tensors == 6 &&
               ((uintptr_t)f->tensors[0].data % 64) == 0,
           "zst: %s frame opens, image identical, data aligned (%s)", with_size ? "sized" : "streamed", rc ? err : "");
        if (!rc) gguf_close(f);
        if (with_size) {
            /* corrupt the frame: cut it short */
            const char *cpath = tpath("cut.gguf.zst");
            write_bytes(cpath, z, zn / 2);
            rc = gguf_open(cpath, &f, err, sizeof(err));
            char want[600];
            snprintf(want, sizeof(want), "%s: zstd: ", cpath);
            ok(rc != 0 && strncmp(err, want, strlen(want)) == 0 && !strchr(err, '\n'),
               "zst: truncated frame is one error line ('%s')", err);
            write_bytes(cpath, "GGUF....", 8);
            rc = gguf_open(cpath, &f, err, sizeof(err));
            snprintf(want, sizeof(want), "%s: not a zstd frame", cpath);
            is_str(want, rc ? err : "(no error)", "zst: plain bytes named .zst");
        }
        free(z);
    }
    free(img);
}

/* ======================================================================== */
/* 6. writer failures                                                       */
/* ======================================================================== */

static void test_writer_errors(void) {
    char err[512] = "", want[600];
    const char *path = tpath("short.gguf");
    gguf_writer *w = NULL;
    gguf_writer_open(path, &w, err, sizeof(err));
    if (!ok(w != NULL, "writer errors: open (%s)", err)) return;
    const uint64_t ne[1] = {8};
    gguf_writer_tensor(w, "a", GGML_TYPE_F32, 1, ne);
    gguf_writer_tensor(w, "b", GGML_TYPE_F32, 1, ne);
    gguf_writer_begin_data(w);
    float x[8] = {0};
    gguf_writer_write(w, x, sizeof(x));
    gguf_writer_write(w, x, 8);
    int rc = gguf_writer_finish(w);
    snprintf(want, sizeof(want), "%s: tensor 'b' got 8 of 32 bytes", path);
    is_str(want, rc ? gguf_writer_error(w) : "(no error)", "writer: finish with missing bytes fails");
    ok(file_exists(tpath("short.gguf.tmp")) && !file_exists(path), "writer: failed finish leaves only the .tmp");
    gguf_writer_abort(w);
    ok(!file_exists(tpath("short.gguf.tmp")) && !file_exists(path), "writer: abort removes the .tmp");

    gguf_writer_open(path, &w, err, sizeof(err));
    gguf_writer_tensor(w, "a", GGML_TYPE_F32, 1, ne);
    gguf_writer_begin_data(w);
    rc = gguf_writer_write(w, x, sizeof(x) + 4);
    snprintf(want, sizeof(want), "%s: 4 bytes written past the last tensor", path);
    is_str(want, rc ? gguf_writer_error(w) : "(no error)", "writer: too many bytes");
    gguf_writer_abort(w);

    gguf_writer_open(path, &w, err, sizeof(err));
    const uint64_t ne33[1] = {33};
    rc = gguf_writer_tensor(w, "q", GGML_TYPE_Q4_0, 1, ne33);
    snprintf(want, sizeof(want), "%s: tensor 'q': ne0 33 is not a multiple of the q4_0 block size 32", path);
    is_str(want, rc ? gguf_writer_error(w) : "(no error)", "writer: bad block multiple");
    gguf_writer_abort(w);

    gguf_writer_open(path, &w, err, sizeof(err));
    gguf_writer_tensor(w, "a", GGML_TYPE_F32, 1, ne);
    rc = gguf_writer_tensor(w, "a", GGML_TYPE_F32, 1, ne);
    snprintf(want, sizeof(want), "%s: tensor 'a' declared twice", path);
    is_str(want, rc ? gguf_writer_error(w) : "(no error)", "writer: duplicate tensor");
    gguf_writer_abort(w);
    gguf_writer_abort(NULL);

    gguf_writer_open(path, &w, err, sizeof(err));
    gguf_writer_kv_u32(w, "k", 1);
    rc = gguf_writer_kv_str(w, "k", "again");
    int rc2 = gguf_writer_kv_u32(w, "other", 2); /* the first error sticks */
    snprintf(want, sizeof(want), "%s: key 'k' added twice", path);
    is_str(want, rc && rc2 ? gguf_writer_error(w) : "(no error)", "writer: duplicate key, and the first error sticks");
    gguf_writer_abort(w);

    gguf_writer_open(path, &w, err, sizeof(err));
    rc = gguf_writer_kv_u32(w, "general.alignment", 48);
    snprintf(want, sizeof(want), "%s: key 'general.alignment': 48 is not a power of two", path);
    is_str(want, rc ? gguf_writer_error(w) : "(no error)", "writer: alignment not a power of two");
    gguf_writer_abort(w);

    rc = gguf_writer_open(tpath("no-such-dir/x.gguf"), &w, err, sizeof(err));
    snprintf(want, sizeof(want), "%s.tmp: cannot create: No such file or directory", tpath("no-such-dir/x.gguf"));
    is_str(want, rc ? err : "(no error)", "writer: open in a missing directory");
}

static void test_type_facts(void) {
    ok(ggml_row_bytes(GGML_TYPE_Q4_0, 64) == 36 && ggml_row_bytes(GGML_TYPE_Q8_0, 64) == 68 &&
           ggml_row_bytes(GGML_TYPE_F16, 3) == 6 && ggml_row_bytes(GGML_TYPE_BF16, 3) == 6 &&
           ggml_row_bytes(GGML_TYPE_F32, 3) == 12 && ggml_row_bytes(GGML_TYPE_I32, 2) == 8,
       "ggml_row_bytes of every type");
    ok(ggml_row_bytes(GGML_TYPE_Q4_0, 33) == 0 && ggml_row_bytes(99, 32) == 0, "ggml_row_bytes: bad n or type gives 0");
    ok(ggml_type_from_name("q4_0") == GGML_TYPE_Q4_0 && ggml_type_from_name("BF16") == GGML_TYPE_BF16 &&
           ggml_type_from_name("q4_1") == -1 && ggml_type_name(GGML_TYPE_Q8_0) && strcmp(ggml_type_name(GGML_TYPE_Q8_0), "q8_0") == 0 &&
           ggml_type_name(7) == NULL,
       "ggml type names both ways");
    ok(ggml_type_block_size(GGML_TYPE_Q8_0) == 32 && ggml_type_block_bytes(GGML_TYPE_Q8_0) == 34 &&
           ggml_type_block_size(GGML_TYPE_F32) == 1 && ggml_type_block_bytes(99) == 0,
       "ggml block sizes");
}

/* ======================================================================== */
/* 7. oracle                                                                */
/* ======================================================================== */

static int compress_file(const char *src, const char *dst) {
    size_t n = 0;
    uint8_t *img = fixture_read_file(src, &n);
    if (!img) return -1;
    size_t cap = ZSTD_compressBound(n);
    uint8_t *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, img, n, 3);
    int rc = ZSTD_isError(zn) ? -1 : 0;
    if (!rc) write_bytes(dst, z, zn);
    free(z);
    free(img);
    return rc;
}

static void test_oracle(void) {
    char err[512] = "", want[700];
    const char *path = tpath("oracle.gguf");
    int rc = fixture_oracle(path, ORACLE_OK, err, sizeof(err));
    if (!ok(rc == 0, "oracle: fixture written (%s)", err)) return;
    for (int zst = 0; zst < 2; zst++) {
        const char *p = path;
        if (zst) {
            p = tpath("oracle.gguf.zst");
            if (!ok(compress_file(path, p) == 0, "oracle: compressed")) return;
        }
        oracle *o = NULL;
        rc = oracle_open(p, &o, err, sizeof(err));
        if (!ok(rc == 0, "oracle%s: valid dump opens (%s)", zst ? " .zst" : "", rc ? err : "")) continue;
        const oracle_prompt *p0 = &o->prompts[0], *p1 = &o->prompts[1];
        ok(o->n_prompts == 2 && o->n_layers == 2 && o->n_embd == 4 && o->n_vocab == 8, "oracle%s: header counts 2/2/4/8",
           zst ? " .zst" : "");
        /* tensor k of the fixture holds sin(k + 0.37 i): p0.logits is tensor 1, p0.h.1 tensor 3, p1.hfinal tensor 11 */
        ok(p0->n_tokens == 3 && p0->tokens[0] == 1 && p0->tokens[2] == 7 && p0->logits[0] == sinf(1.0f) &&
               p0->logits[23] == sinf(1.0f + 0.37f * 23) && p0->hidden[1][0] == sinf(3.0f) && p0->hfinal != NULL,
           "oracle%s: prompt 0 tokens, logits, hidden pointers", zst ? " .zst" : "");
        ok(p0->n_greedy == 2 && p0->greedy_tokens[0] == 7 && p0->greedy_tokens[1] == 2 && p0->greedy_logits != NULL &&
               p1->n_tokens == 1 && p1->tokens[0] == 3 && p1->n_greedy == 0 && p1->greedy_tokens == NULL &&
               p1->greedy_logits == NULL && p1->hfinal[0] == sinf(11.0f),
           "oracle%s: greedy continuation present for prompt 0, absent for prompt 1", zst ? " .zst" : "");
        oracle_close(o);
    }
    static const struct { int defect; const char *desc, *msg; } bad[] = {
        {ORACLE_BAD_ARCH, "not an oracle", "key 'general.architecture': 'qwen35', expected 'kestrel-oracle' (not an oracle dump)"},
        {ORACLE_BAD_VERSION, "version 2", "key 'kestrel.oracle.version': 2 not supported (need 1)"},
        {ORACLE_NO_HFINAL, "missing tensor", "missing tensor 'p1.hfinal'"},
        {ORACLE_BAD_SHAPE, "wrong shape", "tensor 'p0.h.1': shape {4, 4}, expected {4, 3}"},
        {ORACLE_BAD_TOKEN, "token id out of range", "tensor 'p0.tokens': element 1 = 8 is not a token id in [0, 8)"},
        {ORACLE_BAD_TYPE, "wrong type", "tensor 'p0.greedy.logits': type f16 not allowed (want f32)"},
        {ORACLE_ORPHAN_LOGITS, "greedy logits without tokens", "tensor 'p0.greedy.logits' present without 'p0.greedy.tokens'"},
        {ORACLE_MANY_PROMPTS, "more prompts than tensors", "3 prompts x 2 layers need at least 15 tensors, file has 12"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *bp = tpath("oracle-bad.gguf");
        if (fixture_oracle(bp, bad[i].defect, err, sizeof(err))) {
            ok(0, "oracle: %s: fixture written (%s)", bad[i].desc, err);
            continue;
        }
        oracle *o = NULL;
        rc = oracle_open(bp, &o, err, sizeof(err));
        snprintf(want, sizeof(want), "%s: %s", bp, bad[i].msg);
        char desc[128];
        snprintf(desc, sizeof(desc), "oracle: %s", bad[i].desc);
        is_str(want, rc ? err : "(no error)", desc);
        if (!rc) oracle_close(o);
    }
    oracle *o = NULL;
    rc = oracle_open(tpath("rt.gguf"), &o, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: key 'general.architecture': 'qwen35', expected 'kestrel-oracle' (not an oracle dump)", tpath("rt.gguf"));
    is_str(want, rc ? err : "(no error)", "oracle: a model file is not an oracle");
    rc = oracle_open(tpath("kv.gguf"), &o, err, sizeof(err));
    snprintf(want, sizeof(want), "%s: missing key 'general.architecture'", tpath("kv.gguf"));
    is_str(want, rc ? err : "(no error)", "oracle: no architecture key");
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-fixtures") == 0) {
        char err[512], p1[4096], p2[4096];
        snprintf(p1, sizeof(p1), "%s/model.gguf", argv[2]);
        snprintf(p2, sizeof(p2), "%s/oracle.gguf", argv[2]);
        if (fixture_model(p1, err, sizeof(err)) || fixture_oracle(p2, ORACLE_OK, err, sizeof(err))) {
            fprintf(stderr, "test_gguf: %s\n", err);
            return 2;
        }
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: test_gguf [--write-fixtures DIR]\n");
        return 2;
    }
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof(tmpdir), "%s/kestrel-test-gguf.XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        printf("Bail out! mkdtemp %s\n", tmpdir);
        return 1;
    }
    test_type_facts();
    test_writer_roundtrip();
    test_all_kv_types();
    test_expect_tensor();
    test_bad_inputs();
    test_zst();
    test_writer_errors();
    test_oracle();
    printf("1..%d\n", n_test);
    if (n_fail == 0) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
    } else {
        printf("# %d of %d failed; files kept in %s\n", n_fail, n_test, tmpdir);
    }
    return n_fail ? 1 : 0;
}
