/*
 * kestrel/engine.h - the engine ABI shared by kestrel-eval and every engine
 * library (libkestrel-cpu.so, libkestrel-cuda.so, test engines).
 *
 * An engine library exports exactly one symbol, kestrel_engine_entry(), that
 * returns a table of functions. Everything else in the library is static.
 * The table is versioned: a caller passes the ABI version it was built
 * against and the library returns NULL when it cannot serve that version.
 *
 * Rules every engine follows:
 *  - never exit(), abort() or print; errors come back as a nonzero status and
 *    a message from last_error() (or, for open, through the err buffer);
 *  - no global mutable state: two handles in one process are independent;
 *    one handle is used by one thread at a time (thread-compatible);
 *  - deterministic: the same calls on the same handle give bit-identical
 *    outputs, and reset() followed by a replay reproduces them exactly.
 *
 * Shapes use: T tokens in one forward call, V vocab, D model dim (n_embd),
 * L layers. See docs/engine-abi.md for the full contract.
 */
#ifndef KESTREL_ENGINE_H
#define KESTREL_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KESTREL_ENGINE_ABI_VERSION 1u
#define KESTREL_ENGINE_ENTRY "kestrel_engine_entry"

typedef struct kestrel_engine kestrel_engine; /* opaque, one per open model */

enum kestrel_layer_type {
    KESTREL_LAYER_GDN = 0,  /* Gated DeltaNet (linear attention) */
    KESTREL_LAYER_ATTN = 1, /* gated full attention */
};

/* forward() flags */
enum {
    KESTREL_FWD_ALL_LOGITS = 1u << 0, /* logits/argmax for every position, else only the last */
    KESTREL_FWD_CAPTURE = 1u << 1,    /* keep per-position intermediates for readback() */
};

typedef struct kestrel_info {
    const char *engine_name;    /* "kestrel-cpu", "kestrel-cuda", ... */
    const char *engine_version; /* engine's own version string */
    const char *build_flags;    /* compiler + flags the library was built with */
    const char *device;         /* "cpu (N threads)" or the GPU name */
    int32_t n_vocab;
    int32_t n_layers;
    int32_t n_embd;
    int32_t max_context;        /* positions the KV cache holds */
    const uint8_t *layer_types; /* (n_layers,) enum kestrel_layer_type; owned by the engine */
    uint64_t weight_bytes_per_token; /* bytes of weights one decode step reads (no embedding table) */
    uint64_t state_bytes_per_token;  /* recurrent state bytes read + written per decode step */
} kestrel_info;

/* One row of a per-kernel (per-op) time breakdown of decode steps. */
typedef struct kestrel_prof_entry {
    char name[64];    /* kernel or op name, as in the source */
    uint64_t calls;   /* launches since profiling was enabled */
    double total_ms;  /* summed device (or CPU) time */
} kestrel_prof_entry;

typedef struct kestrel_engine_api {
    uint32_t abi_version; /* == KESTREL_ENGINE_ABI_VERSION */
    uint32_t struct_size; /* sizeof(kestrel_engine_api) of the library; fields only ever appended */

    /* Open a GGUF model. options: comma-separated key=value ("threads=4",
     * "graph=0", "profile=1"); unknown keys are an error. On failure returns
     * nonzero, *out is NULL and err holds a message naming the file and the
     * tensor/key at fault. */
    int (*open)(const char *model_path, const char *options, kestrel_engine **out,
                char *err, size_t err_len);

    /* Fill *out; pointers inside stay valid until close(). */
    int (*info)(kestrel_engine *e, kestrel_info *out);

    /* Start a new sequence: position 0, recurrent state, conv history and KV cache cleared. */
    int (*reset)(kestrel_engine *e);

    /* Feed n tokens (teacher-forced) at the current position and advance it by n.
     * tokens: (n,). logits: (n, V) with KESTREL_FWD_ALL_LOGITS else (V,), may be NULL.
     * argmax: (n,) or (1,) likewise, may be NULL (ties go to the lowest id). */
    int (*forward)(kestrel_engine *e, const int32_t *tokens, int32_t n, uint32_t flags,
                   float *logits, int32_t *argmax);

    /* Copy a named intermediate of the last forward() call into out (cap floats).
     * Per-position names (need KESTREL_FWD_CAPTURE): "h" (residual stream after
     * layer `layer`, (D,)), "hfinal" (final-normed, (D,), layer ignored).
     * State names (the state after the last token, pos must be -1 or n-1):
     * "S" ((vh, kd, vd) of GDN layer `layer`), "conv" ((K-1, conv_dim)), and
     * engine-specific step intermediates documented in docs/engine-abi.md.
     * *n_out receives the element count; with out == NULL only *n_out is set.
     * An unknown name, a layer of the wrong type, or cap too small is an error. */
    int (*readback)(kestrel_engine *e, const char *name, int32_t layer, int32_t pos,
                    float *out, size_t cap, size_t *n_out);

    /* Per-op time breakdown since open (needs option profile=1; otherwise *n = 0).
     * Writes at most cap entries, *n receives the number available. */
    int (*profile)(kestrel_engine *e, kestrel_prof_entry *out, int32_t cap, int32_t *n);

    /* Streaming-read bandwidth of the engine's device, measured now (the floor every
     * decode-bench is compared with). No model needed: options as for open().
     * Reads `bytes` per pass, `iterations` timed passes after one warm-up;
     * *gbps receives the median GB/s (1e9 bytes/s). */
    int (*bandwidth_probe)(const char *options, uint64_t bytes, int32_t iterations, double *gbps,
                           char *err, size_t err_len);

    /* Message of the last failed call on this handle ("" if none). */
    const char *(*last_error)(kestrel_engine *e);

    /* Free everything the handle owns (device memory too). NULL is fine. */
    void (*close)(kestrel_engine *e);
} kestrel_engine_api;

/* The one exported symbol. Returns NULL when the library cannot serve abi_version. */
typedef const kestrel_engine_api *(*kestrel_engine_entry_fn)(uint32_t abi_version);

#if defined(__GNUC__)
#define KESTREL_EXPORT __attribute__((visibility("default")))
#else
#define KESTREL_EXPORT
#endif

KESTREL_EXPORT const kestrel_engine_api *kestrel_engine_entry(uint32_t abi_version);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_ENGINE_H */
