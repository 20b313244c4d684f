/*
 * gguf.h - GGUF v3 reader (mmap, every offset validated) and streaming writer.
 *
 * Shared by kestrel-eval, the engines and the tests. Oracle dumps are GGUF
 * files too (docs/formats.md); a path ending in ".zst" is decompressed into
 * memory instead of mapped.
 *
 * Errors: every function that can fail returns 0 on success, nonzero on
 * failure, and writes one line into err (err_len bytes) of the form
 *   "<file>: <what is wrong> (<tensor 'name' | key 'name' | offset N>)".
 */
#ifndef KESTREL_GGUF_H
#define KESTREL_GGUF_H

#include <stddef.h>
#include <stdint.h>

/* ggml tensor types we read and write (values are ggml's) */
enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_I32 = 26, /* oracle dumps: token ids */
    GGML_TYPE_BF16 = 30,
};

/* GGUF metadata value types */
enum gguf_vtype {
    GGUF_VT_UINT8 = 0, GGUF_VT_INT8 = 1, GGUF_VT_UINT16 = 2, GGUF_VT_INT16 = 3,
    GGUF_VT_UINT32 = 4, GGUF_VT_INT32 = 5, GGUF_VT_FLOAT32 = 6, GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8, GGUF_VT_ARRAY = 9, GGUF_VT_UINT64 = 10, GGUF_VT_INT64 = 11,
    GGUF_VT_FLOAT64 = 12,
};

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct gguf_str {
    uint64_t len;
    const char *ptr; /* NOT NUL-terminated when it points into the file; use gguf_str_eq / %.*s */
} gguf_str;

typedef struct gguf_kv {
    char *key;          /* NUL-terminated copy */
    uint32_t type;      /* enum gguf_vtype */
    uint32_t arr_type;  /* element type when type == ARRAY */
    uint64_t arr_n;     /* element count when type == ARRAY */
    const void *arr;    /* elements (inside the file image) when ARRAY of a fixed-size type */
    gguf_str *arr_strs; /* (arr_n,) when ARRAY of STRING */
    union {
        uint64_t u64; int64_t i64; double f64; int b;
        gguf_str str;
    } v;                /* scalar value, widened (u8..u64 -> u64, i8..i64 -> i64, f32/f64 -> f64) */
} gguf_kv;

typedef struct gguf_tensor {
    char *name;                /* NUL-terminated copy */
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] contiguous; unused dims are 1 */
    uint32_t type;             /* enum ggml_type */
    uint64_t offset;           /* relative to the data section */
    uint64_t n_elements;
    uint64_t n_bytes;
    const void *data;          /* points into the mapped image, validated in bounds */
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    const uint8_t *base; /* whole file image */
    uint64_t size;
    int mapped;          /* 1: mmap'd, 0: malloc'd (decompressed .zst) */
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    gguf_kv *kv;         /* (n_kv,) */
    uint64_t n_tensors;
    gguf_tensor *tensors; /* (n_tensors,) */
} gguf_file;

/* ---- reading ---- */
int gguf_open(const char *path, gguf_file **out, char *err, size_t err_len);
void gguf_close(gguf_file *f);

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters: missing key or a type that does not convert is an error naming the key.
 * gguf_get_int accepts any integer type (range-checked into int64). gguf_get_float accepts
 * f32/f64/ints. gguf_get_str returns a malloc'd NUL-terminated copy. */
int gguf_get_int(const gguf_file *f, const char *key, int64_t *out, char *err, size_t err_len);
int gguf_get_float(const gguf_file *f, const char *key, double *out, char *err, size_t err_len);
int gguf_get_str(const gguf_file *f, const char *key, char **out, char *err, size_t err_len);
/* Integer array into out (cap elements); *n receives the count. */
int gguf_get_int_array(const gguf_file *f, const char *key, int64_t *out, size_t cap, size_t *n,
                       char *err, size_t err_len);

/* Look up a tensor and check its type is in allowed (bitmask of 1u << ggml_type, 0 = any)
 * and its shape is exactly (n_dims, ne...). Error e.g.
 *   "m.gguf: tensor 'blk.3.attn_qkv.weight': shape {64, 384}, expected {64, 512}". */
int gguf_expect_tensor(const gguf_file *f, const char *name, uint32_t allowed_types, uint32_t n_dims,
                       const uint64_t *ne, const gguf_tensor **out, char *err, size_t err_len);

/* ---- type facts ---- */
const char *ggml_type_name(uint32_t type);        /* "f32", "q4_0", ...; NULL if unknown */
int ggml_type_from_name(const char *name);        /* -1 if unknown */
uint64_t ggml_type_block_size(uint32_t type);     /* elements per block (32 for q4_0/q8_0, 1 else); 0 unknown */
uint64_t ggml_type_block_bytes(uint32_t type);    /* bytes per block; 0 unknown */
/* bytes of a row of n elements; 0 if n is not a multiple of the block size */
uint64_t ggml_row_bytes(uint32_t type, uint64_t n);

/* ---- writing (streaming: header first, then tensor data in declaration order) ---- */
typedef struct gguf_writer gguf_writer;

/* Writes to path + ".tmp" and renames on gguf_writer_finish, so a failed write leaves nothing. */
int gguf_writer_open(const char *path, gguf_writer **out, char *err, size_t err_len);
int gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_kv_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_writer_kv_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_kv_f32(gguf_writer *w, const char *key, float v);
int gguf_writer_kv_bool(gguf_writer *w, const char *key, int v);
int gguf_writer_kv_str(gguf_writer *w, const char *key, const char *v);
int gguf_writer_kv_arr_i32(gguf_writer *w, const char *key, const int32_t *v, uint64_t n);
int gguf_writer_kv_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n);
/* Declare a tensor (all declarations before gguf_writer_begin_data). */
int gguf_writer_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const uint64_t *ne);
/* Write the header; after this, append each tensor's bytes in declaration order. */
int gguf_writer_begin_data(gguf_writer *w);
/* Append bytes of the current tensor; may be called several times per tensor (streaming).
 * Alignment padding between tensors is inserted automatically. */
int gguf_writer_write(gguf_writer *w, const void *data, uint64_t n);
/* Check every declared tensor got exactly its bytes, flush, fsync, rename.
 * On success the writer is freed; on failure it is still the caller's: read
 * gguf_writer_error(w), then gguf_writer_abort(w). A failed call of any
 * writer function makes every later one fail with the first error. */
int gguf_writer_finish(gguf_writer *w);
/* Abandon: close and remove the temporary file. NULL is fine. */
void gguf_writer_abort(gguf_writer *w);
const char *gguf_writer_error(const gguf_writer *w);

#endif
