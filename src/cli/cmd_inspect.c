/*
 * cmd_inspect.c - `kestrel-eval inspect FILE [--kv-only] [--tensors-only]`:
 * print a GGUF file's header, its metadata (arrays abbreviated to their first
 * 8 elements and a count, long strings cut), a tensor table (name, type,
 * shape in ggml ne order, bytes, offset in the data section), a total line
 * with per-type byte counts, and for an oracle dump one line per prompt.
 *
 * The whole file (and, for an oracle dump, every tensor oracle_open checks)
 * is validated before anything is printed, so a bad file gives one error line
 * and exit 2, never a half-written table. Not here: tensor values (use
 * `kestrel-eval logits` or tools/kgguf.py).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"
#include "oracle.h"

#define INSPECT_ARRAY_SHOWN 8   /* array elements printed before "..." */
#define INSPECT_STRING_SHOWN 80 /* string bytes printed before "..." */

static const char *vtype_short(uint32_t vt) {
    static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
                                        "str", "array", "u64", "i64", "f64"};
    return vt < sizeof(names) / sizeof(names[0]) ? names[vt] : "?";
}

/* A string value, quoted, control bytes/quotes escaped, cut after INSPECT_STRING_SHOWN bytes. */
static void print_str(const char *p, uint64_t len) {
    putchar('"');
    uint64_t n = len < INSPECT_STRING_SHOWN ? len : INSPECT_STRING_SHOWN;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
    putchar('"');
    if (n < len) printf("... (%" PRIu64 " bytes)", len);
}

/* A key or tensor name padded to width; control bytes (legal in GGUF) escaped so each line stays one line. */
static void print_name(const char *s, int width) {
    int n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) n += printf("\\x%02x", c);
        else {
            putchar(c);
            n++;
        }
    }
    for (; n < width; n++) putchar(' ');
}

/* One fixed-size array element at p (possibly unaligned). */
static void print_elem(uint32_t vt, const uint8_t *p) {
    switch (vt) {
    case GGUF_VT_UINT8: printf("%u", p[0]); break;
    case GGUF_VT_INT8: printf("%d", (int8_t)p[0]); break;
    case GGUF_VT_BOOL: fputs(p[0] ? "true" : "false", stdout); break;
    case GGUF_VT_UINT16: { uint16_t v; memcpy(&v, p, 2); printf("%u", v); break; }
    case GGUF_VT_INT16: { int16_t v; memcpy(&v, p, 2); printf("%d", v); break; }
    case GGUF_VT_UINT32: { uint32_t v; memcpy(&v, p, 4); printf("%" PRIu32, v); break; }
    case GGUF_VT_INT32: { int32_t v; memcpy(&v, p, 4); printf("%" PRId32, v); break; }
    case GGUF_VT_FLOAT32: { float v; memcpy(&v, p, 4); printf("%.9g", (double)v); break; }
    case GGUF_VT_UINT64: { uint64_t v; memcpy(&v, p, 8); printf("%" PRIu64, v); break; }
    case GGUF_VT_INT64: { int64_t v; memcpy(&v, p, 8); printf("%" PRId64, v); break; }
    case GGUF_VT_FLOAT64: { double v; memcpy(&v, p, 8); printf("%.17g", v); break; }
    default: fputs("?", stdout);
    }
}

static void print_value(const gguf_kv *kv) {
    switch (kv->type) {
    case GGUF_VT_UINT8: case GGUF_VT_UINT16: case GGUF_VT_UINT32: case GGUF_VT_UINT64:
        printf("%" PRIu64, kv->v.u64);
        break;
    case GGUF_VT_INT8: case GGUF_VT_INT16: case GGUF_VT_INT32: case GGUF_VT_INT64:
        printf("%" PRId64, kv->v.i64);
        break;
    case GGUF_VT_FLOAT32: printf("%.9g", kv->v.f64); break;
    case GGUF_VT_FLOAT64: printf("%.17g", kv->v.f64); break;
    case GGUF_VT_BOOL: fputs(kv->v.b ? "true" : "false", stdout); break;
    case GGUF_VT_STRING: print_str(kv->v.str.ptr, kv->v.str.len); break;
    case GGUF_VT_ARRAY: {
        uint64_t shown = kv->arr_n < INSPECT_ARRAY_SHOWN ? kv->arr_n : INSPECT_ARRAY_SHOWN;
        if (kv->arr_type == GGUF_VT_ARRAY) { /* nested arrays: only their count */
            printf("[...]");
            break;
        }
        putchar('[');
        for (uint64_t i = 0; i < shown; i++) {
            if (i) fputs(", ", stdout);
            if (kv->arr_type == GGUF_VT_STRING) print_str(kv->arr_strs[i].ptr, kv->arr_strs[i].len);
            else {
                static const uint8_t width[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
                print_elem(kv->arr_type, (const uint8_t *)kv->arr + i * width[kv->arr_type]);
            }
        }
        if (shown < kv->arr_n) fputs(", ...", stdout);
        putchar(']');
        break;
    }
    default: fputs("?", stdout);
    }
}

static void print_kvs(const gguf_file *f) {
    int w = 0;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        int l = (int)strlen(f->kv[i].key);
        if (l > w) w = l;
    }
    printf("kv (%" PRIu64 "):\n", f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        char type[48];
        if (kv->type == GGUF_VT_ARRAY)
            snprintf(type, sizeof(type), "%s[%" PRIu64 "]", vtype_short(kv->arr_type), kv->arr_n);
        else
            snprintf(type, sizeof(type), "%s", vtype_short(kv->type));
        fputs("  ", stdout);
        print_name(kv->key, w);
        printf("  %-10s ", type);
        print_value(kv);
        putchar('\n');
    }
}

/* "{64, 384}": ggml ne order. buf: (len,) */
static void fmt_shape(const gguf_tensor *t, char *buf, size_t len) {
    size_t k = (size_t)snprintf(buf, len, "{");
    for (uint32_t d = 0; d < t->n_dims && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
    if (k < len) snprintf(buf + k, len - k, "}");
}

static void print_tensors(const gguf_file *f) {
    int w = 4, sw = 5;
    char shape[128];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        int l = (int)strlen(f->tensors[i].name);
        if (l > w) w = l;
        fmt_shape(&f->tensors[i], shape, sizeof(shape));
        l = (int)strlen(shape);
        if (l > sw) sw = l;
    }
    printf("tensors (%" PRIu64 "):\n", f->n_tensors);
    printf("  %-*s  %-5s  %-*s  %12s  %12s\n", w, "name", "type", sw, "shape", "bytes", "offset");
    uint64_t total = 0, per_type[32] = {0};
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        fmt_shape(t, shape, sizeof(shape));
        fputs("  ", stdout);
        print_name(t->name, w);
        printf("  %-5s  %-*s  %12" PRIu64 "  %12" PRIu64 "\n", ggml_type_name(t->type), sw, shape, t->n_bytes, t->offset);
        total += t->n_bytes;
        per_type[t->type % 32] += t->n_bytes; /* every type the reader accepts is < 32 */
    }
    printf("total: %" PRIu64 " tensors, %" PRIu64 " bytes", f->n_tensors, total);
    const char *sep = " (";
    static const uint32_t order[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0,
                                     GGML_TYPE_I32};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        int present = 0;
        for (uint64_t j = 0; j < f->n_tensors && !present; j++) present = f->tensors[j].type == order[i];
        if (!present) continue;
        printf("%s%s %" PRIu64, sep, ggml_type_name(order[i]), per_type[order[i]]);
        sep = ", ";
    }
    if (f->n_tensors) putchar(')');
    putchar('\n');
}

static void print_oracle(const oracle *o) {
    printf("oracle: %" PRId32 " prompts, %" PRId32 " layers, n_embd %" PRId32 ", n_vocab %" PRId32 "\n", o->n_prompts,
           o->n_layers, o->n_embd, o->n_vocab);
    for (int32_t i = 0; i < o->n_prompts; i++)
        printf("  prompt %" PRId32 ": T=%" PRId32 ", greedy N=%" PRId32 "\n", i, o->prompts[i].n_tokens,
               o->prompts[i].n_greedy);
}

int cmd_inspect(int argc, char **argv) {
    int ret = EXIT_USAGE;
    const char *path = NULL;
    int kv_only = 0, tensors_only = 0;
    gguf_file *f = NULL;
    oracle *o = NULL;
    char err[1024];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kv-only") == 0) kv_only = 1;
        else if (strcmp(argv[i], "--tensors-only") == 0) tensors_only = 1;
        else if (argv[i][0] == '-' && argv[i][1] != 0) {
            cli_error("inspect: unknown option '%s'", argv[i]);
            return cli_usage("inspect");
        } else if (path) {
            cli_error("inspect: one FILE expected, got '%s' and '%s'", path, argv[i]);
            return cli_usage("inspect");
        } else path = argv[i];
    }
    if (!path) {
        cli_error("inspect: FILE missing");
        return cli_usage("inspect");
    }
    if (kv_only && tensors_only) {
        cli_error("inspect: --kv-only and --tensors-only exclude each other");
        return cli_usage("inspect");
    }

    if (gguf_open(path, &f, err, sizeof(err))) {
        cli_error("%s", err);
        goto cleanup;
    }
    const gguf_kv *arch = gguf_find_kv(f, "general.architecture");
    if (arch && arch->type == GGUF_VT_STRING && arch->v.str.len == 14 && memcmp(arch->v.str.ptr, "kestrel-oracle", 14) == 0) {
        /* validate the whole dump before printing; print from its own (identical) file */
        gguf_close(f);
        f = NULL;
        if (oracle_open(path, &o, err, sizeof(err))) {
            cli_error("%s", err);
            goto cleanup;
        }
    }
    const gguf_file *g = o ? o->file : f;

    printf("file: %s\n", path);
    printf("GGUF v%" PRIu32 ", alignment %" PRIu64 ", data offset %" PRIu64 ", %" PRIu64 " bytes%s\n", g->version,
           g->alignment, g->data_offset, g->size, g->mapped ? "" : " (decompressed)");
    if (!tensors_only) print_kvs(g);
    if (!kv_only) print_tensors(g);
    if (o) print_oracle(o);
    ret = EXIT_OK;
cleanup:
    oracle_close(o);
    gguf_close(f);
    return ret;
}
