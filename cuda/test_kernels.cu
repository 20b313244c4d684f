/*
 * cuda/test_kernels.cu - TAP tests of the CUDA engine on a GPU.
 *
 *  1. every kernel against its CPU twin (src/engine-cpu/ops.c) on random
 *     inputs drawn fresh each run (seed printed; KESTREL_TEST_SEED repeats
 *     one), outputs poisoned with NaN before each launch, with tolerances;
 *  2. bit-exact checks (count of unequal elements must be 0; this program is
 *     built from -fmad=false -DKESTREL_BITEXACT objects): register-resident vs
 *     generic delta on S and o over many steps; fused beta/alpha GEMV vs two
 *     launches; reset then replay; graph on vs off; the same weights at layer
 *     0 and the last GDN layer; device-resident vs host-driven stepping;
 *  3. the engine's error paths and resources: repeated open/close returns the
 *     device memory (cudaMemGetInfo), vram_limit makes open fail with a
 *     reported out-of-memory error, an unsupported shape is refused at open,
 *     profile=1 attributes time to kernel names.
 *
 * Usage: test_kernels FIXTURE_DIR. Without a visible GPU it prints a TAP skip.
 */
#include "model.cuh"
#include "kestrel/engine.h"

extern "C" {
#include "gguf.h"
#include "ops.h"
#include "quant.h"
}

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ TAP + helpers */

static int g_n, g_fail;
static const char *g_fix;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
    va_list ap;
    g_n++;
    if (!cond) g_fail = 1;
    printf("%sok %d - ", cond ? "" : "not ", g_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static uint64_t g_rng;
static uint32_t rnd_u32(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static float rnd(float lo, float hi) { return lo + (hi - lo) * (float)(rnd_u32() & 0xffffff) / 16777216.0f; }
static void fill(float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) x[i] = rnd(lo, hi);
}

/* device buffers: every helper aborts the test program on a CUDA failure (this is a test, not the library) */
#define T_CK(call)                                                                                \
    do {                                                                                          \
        cudaError_t te_ = (call);                                                                 \
        if (te_ != cudaSuccess) {                                                                 \
            printf("not ok %d - CUDA: %s (%s) at %s:%d\n", ++g_n, cudaGetErrorName(te_),           \
                   cudaGetErrorString(te_), __FILE__, __LINE__);                                  \
            printf("1..%d\n", g_n);                                                               \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

static void *dnew(size_t bytes)
{
    void *p = NULL;
    T_CK(cudaMalloc(&p, bytes ? bytes : 16));
    T_CK(cudaMemset(p, 0xff, bytes ? bytes : 16)); /* poison: NaN as f32 */
    return p;
}
static float *dup_f(const float *h, size_t n)
{
    float *d = (float *)dnew(n * 4);
    T_CK(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
    return d;
}
static void get_f(float *h, const float *d, size_t n)
{
    T_CK(cudaDeviceSynchronize());
    T_CK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
}
static void poison(void *d, size_t bytes) { T_CK(cudaMemset(d, 0xff, bytes)); }
static float *hnew(size_t n)
{
    float *p = (float *)malloc(n * sizeof(float));
    if (!p) {
        printf("Bail out! out of host memory\n");
        exit(1);
    }
    return p;
}

/* max|a - ref| / max|ref| (NaN anywhere -> inf) */
static double max_rel(const float *a, const float *ref, size_t n)
{
    double md = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(a[i] == a[i])) return INFINITY;
        const double d = fabs((double)a[i] - ref[i]);
        if (d > md) md = d;
        if (fabs(ref[i]) > mr) mr = fabs(ref[i]);
    }
    return mr > 0 ? md / mr : md;
}
static size_t n_unequal(const float *a, const float *b, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += memcmp(a + i, b + i, 4) != 0;
    return c;
}
static void check_rel(const char *what, const float *got, const float *ref, size_t n, double tol)
{
    const double r = max_rel(got, ref, n);
    ok(r <= tol, "%s vs CPU twin: max_rel %.3e <= %.0e (%zu elements)", what, r, tol, n);
}

/* ------------------------------------------------------------------ matrices */

/* a random rows x cols matrix of `type` in ggml layout (host) */
static void *make_ggml(uint32_t type, int rows, int cols)
{
    const size_t rb = ggml_row_bytes(type, (uint64_t)cols);
    uint8_t *w = (uint8_t *)malloc(rb * rows);
    float *row = hnew((size_t)cols);
    for (int r = 0; r < rows; r++) {
        fill(row, (size_t)cols, -1.0f, 1.0f);
        uint8_t *dst = w + rb * r;
        switch (type) {
        case GGML_TYPE_F32: memcpy(dst, row, rb); break;
        case GGML_TYPE_F16:
            for (int c = 0; c < cols; c++) ((uint16_t *)dst)[c] = f32_to_f16(row[c]);
            break;
        case GGML_TYPE_BF16:
            for (int c = 0; c < cols; c++) ((uint16_t *)dst)[c] = f32_to_bf16(row[c]);
            break;
        case GGML_TYPE_Q8_0: quantize_row_q8_0(row, (block_q8_0 *)dst, cols); break;
        default: quantize_row_q4_0(row, (block_q4_0 *)dst, cols); break;
        }
    }
    free(row);
    return w;
}

static void upload(kc_model *m, kc_mat *out, uint32_t type, int rows, int cols, const void *src)
{
    if (kc_upload_mat(m, out, type, rows, cols, src, "test")) {
        printf("Bail out! upload: %s\n", m->err);
        exit(1);
    }
}

static const uint32_t k_types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};

static void test_matvec(void)
{
    kc_model *m = (kc_model *)calloc(1, sizeof *m);
    const int shapes[][2] = {{333, 5120}, {77, 96}, {48, 5120}, {1030, 96}}; /* last: warp-per-row path */
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
        const uint32_t t = k_types[ti];
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int rows = shapes[si][0], cols = shapes[si][1];
            void *w = make_ggml(t, rows, cols), *w2 = make_ggml(t, rows, cols);
            float *x = hnew(cols), *ref = hnew(rows), *ref2 = hnew(rows), *got = hnew(rows), *got2 = hnew(rows);
            float *y0 = hnew(rows);
            kc_mat W, W2;
            fill(x, cols, -2.0f, 2.0f);
            fill(y0, rows, -1.0f, 1.0f);
            upload(m, &W, t, rows, cols, w);
            upload(m, &W2, t, rows, cols, w2);
            float *dx = dup_f(x, cols), *dy = (float *)dnew(rows * 4), *dy2 = (float *)dnew(rows * 4);
            matvec(NULL, ref, w, t, x, cols, rows);
            matvec(NULL, ref2, w2, t, x, cols, rows);
            const double tol = 2e-5;
            T_CK(kc_matvec(&W, dx, dy, 0, 0));
            get_f(got, dy, rows);
            char what[96];
            snprintf(what, sizeof what, "matvec %s %dx%d", ggml_type_name(t), rows, cols);
            check_rel(what, got, ref, rows, tol);
            /* accumulate: y0 + W x */
            T_CK(cudaMemcpy(dy, y0, rows * 4, cudaMemcpyHostToDevice));
            T_CK(kc_matvec(&W, dx, dy, 1, 0));
            get_f(got, dy, rows);
            for (int r = 0; r < rows; r++) ref[r] += y0[r];
            snprintf(what, sizeof what, "matvec_add %s %dx%d", ggml_type_name(t), rows, cols);
            check_rel(what, got, ref, rows, tol);
            if (si == 2) {
                /* fused pair (the beta/alpha projections) vs two launches: bit-exact */
                float *a1 = hnew(rows), *a2 = hnew(rows);
                poison(dy, rows * 4);
                poison(dy2, rows * 4);
                T_CK(kc_matvec(&W, dx, dy, 0, 0));
                T_CK(kc_matvec(&W2, dx, dy2, 0, 0));
                get_f(a1, dy, rows);
                get_f(a2, dy2, rows);
                poison(dy, rows * 4);
                poison(dy2, rows * 4);
                T_CK(kc_matvec2(&W, &W2, dx, dy, dy2, 0));
                get_f(got, dy, rows);
                get_f(got2, dy2, rows);
                ok(n_unequal(got, a1, rows) + n_unequal(got2, a2, rows) == 0,
                   "bitexact matvec2 %s (fused beta/alpha) vs two matvec launches: %zu/%d unequal",
                   ggml_type_name(t), n_unequal(got, a1, rows) + n_unequal(got2, a2, rows), 2 * rows);
                /* SwiGLU fused with gate/up vs CPU matvec x2 + swiglu */
                float *sref = hnew(rows);
                matvec(NULL, ref, w, t, x, cols, rows);
                swiglu(sref, ref, ref2, rows);
                poison(dy, rows * 4);
                T_CK(kc_matvec_swiglu(&W, &W2, dx, dy, 0));
                get_f(got, dy, rows);
                snprintf(what, sizeof what, "matvec_swiglu %s %dx%d", ggml_type_name(t), rows, cols);
                check_rel(what, got, sref, rows, tol);
                free(sref);
                free(a1);
                free(a2);
            }
            free(w);
            free(w2);
            free(x);
            free(ref);
            free(ref2);
            free(got);
            free(got2);
            free(y0);
            cudaFree(dx);
            cudaFree(dy);
            cudaFree(dy2);
        }
    }
    /* embedding rows decode like dequantize_row */
    for (size_t ti = 0; ti < 2 * sizeof k_types / sizeof k_types[0]; ti++) {
        const uint32_t t = k_types[ti % 5];
        const int rows = 50, cols = ti < 5 ? 192 : 2048; /* q4_0: layout 0, then layout 1 */
        void *w = make_ggml(t, rows, cols);
        kc_mat E;
        float *ref = hnew(cols), *got = hnew(cols);
        int32_t tok = 37, *dtok;
        upload(m, &E, t, rows, cols, w);
        T_CK(cudaMalloc(&dtok, 4));
        T_CK(cudaMemcpy(dtok, &tok, 4, cudaMemcpyHostToDevice));
        float *dy = (float *)dnew(cols * 4);
        T_CK(kc_embed(&E, dtok, dy, 0));
        get_f(got, dy, cols);
        dequantize_row(t, (const uint8_t *)w + ggml_row_bytes(t, cols) * tok, ref, cols);
        ok(n_unequal(got, ref, cols) == 0, "embed %s 50x%d row %d equals dequantize_row: %zu/%d unequal",
           ggml_type_name(t), cols, tok, n_unequal(got, ref, cols), cols);
        free(w);
        free(ref);
        free(got);
        cudaFree(dtok);
        cudaFree(dy);
    }
    kc_model_free(m);
}

/* ------------------------------------------------------------------ 8-bit activations (dot=q8) */

static_assert(sizeof(kc_q8blk) == sizeof(q8_block) && sizeof(kc_q8blk) == 48, "kc_q8blk and ops.h q8_block differ");

/* blocks that differ in any byte, except that two NaN scales count as equal (the device's
 * NaN is the canonical 0x7fffffff, the host's keeps the payload of the NaN it came from) */
/* device q8 blocks against device q8 blocks read back: any byte different */
static size_t n_unequal_dev_blocks(const kc_q8blk *a, const kc_q8blk *b, int nblk)
{
    size_t c = 0;
    for (int i = 0; i < nblk; i++) c += memcmp(&a[i], &b[i], sizeof(kc_q8blk)) != 0;
    return c;
}

static size_t n_unequal_blocks(const kc_q8blk *a, const q8_block *b, int nblk)
{
    size_t c = 0;
    for (int i = 0; i < nblk; i++) {
        const int nan_d = a[i].d != a[i].d && b[i].d != b[i].d;
        c += memcmp(a[i].q, b[i].q, 32) != 0 || a[i].s8 != b[i].s8 || a[i].pad[0] != b[i].pad[0] ||
             a[i].pad[1] != b[i].pad[1] || (!nan_d && memcmp(&a[i].d, &b[i].d, 4) != 0);
    }
    return c;
}

static kc_q8blk *get_q8(const kc_q8blk *d, int nblk)
{
    kc_q8blk *h = (kc_q8blk *)malloc((size_t)nblk * sizeof *h);
    T_CK(cudaDeviceSynchronize());
    T_CK(cudaMemcpy(h, d, (size_t)nblk * sizeof *h, cudaMemcpyDeviceToHost));
    return h;
}

/* the push-vs-pull tests' two copies of one attention launch's results: copy 0 the pull kernel's, copy 1 the push
 * kernel's, each with its own caches (the launch appends to them) */
typedef struct attn_pair {
    float *kc[2], *vc[2]; // (2, kvn) K and V caches
    float *y[2];          // (2, nout) outputs
    kc_q8blk *q[2];       // (2, nout / 32) quantised outputs
    size_t kvn;
    int nout;
} attn_pair;

static void attn_pair_new(attn_pair *p, const float *cache, size_t kvn, int nout)
{
    p->kvn = kvn;
    p->nout = nout;
    for (int j = 0; j < 2; j++) {
        p->kc[j] = dup_f(cache, kvn);
        p->vc[j] = dup_f(cache, kvn);
        p->y[j] = (float *)dnew((size_t)nout * 4);
        p->q[j] = (kc_q8blk *)dnew((size_t)nout / 32 * sizeof(kc_q8blk));
    }
}

/* copy j before a launch: the caches back to cache (kvn,), the outputs poisoned */
static void attn_pair_reset(attn_pair *p, int j, const float *cache)
{
    T_CK(cudaMemcpy(p->kc[j], cache, p->kvn * 4, cudaMemcpyHostToDevice));
    T_CK(cudaMemcpy(p->vc[j], cache, p->kvn * 4, cudaMemcpyHostToDevice));
    poison(p->y[j], (size_t)p->nout * 4);
    poison(p->q[j], (size_t)p->nout / 32 * sizeof(kc_q8blk));
}

/* the two copies against each other, bit for bit: out, its q8 blocks, both caches; a1, a2 host scratch of
 * max(nout, kvn) floats */
static size_t n_unequal_attn_pair(const attn_pair *p, float *a1, float *a2)
{
    size_t bad = 0;
    get_f(a1, p->y[0], p->nout); get_f(a2, p->y[1], p->nout); bad += n_unequal(a2, a1, (size_t)p->nout);
    kc_q8blk *g0 = get_q8(p->q[0], p->nout / 32), *g1 = get_q8(p->q[1], p->nout / 32);
    bad += n_unequal_dev_blocks(g1, g0, p->nout / 32);
    free(g0); free(g1);
    get_f(a1, p->kc[0], p->kvn); get_f(a2, p->kc[1], p->kvn); bad += n_unequal(a2, a1, p->kvn);
    get_f(a1, p->vc[0], p->kvn); get_f(a2, p->vc[1], p->kvn); bad += n_unequal(a2, a1, p->kvn);
    return bad;
}

static void attn_pair_free(attn_pair *p)
{
    for (int j = 0; j < 2; j++) {
        cudaFree(p->kc[j]); cudaFree(p->vc[j]); cudaFree(p->y[j]); cudaFree(p->q[j]);
    }
}

/* 1 when two device arrays of q8 blocks differ in any byte */
static int q8_differ(const kc_q8blk *da, const kc_q8blk *db, int nblk)
{
    kc_q8blk *a = get_q8(da, nblk), *b = get_q8(db, nblk);
    const int r = memcmp(a, b, (size_t)nblk * sizeof *a) != 0;
    free(a);
    free(b);
    return r;
}

static void test_q8(void)
{
    kc_model *m = (kc_model *)calloc(1, sizeof *m);
    m->dot_q8 = 1; /* q4_0 uploads in layout 0, what the integer-dot GEMV reads */
    {
        /* quantize_q8: random blocks plus a zero block, a NaN, exact ties and an outlier */
        const int n = 5120, nb = n / 32;
        float *x = hnew(n);
        fill(x, n, -3.0f, 3.0f);
        for (int i = 0; i < 32; i++) x[32 + i] = 0.0f;
        x[64 + 5] = NAN;
        for (int i = 0; i < 32; i++) x[96 + i] = (float)(i - 16) * 0.5f; /* amax 8: q = 127 x / 8, .5 ties */
        x[128] = 1e30f;
        q8_block *ref = (q8_block *)malloc(nb * sizeof *ref);
        quantize_q8(ref, x, n);
        float *dx = dup_f(x, n);
        kc_q8blk *dq = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk));
        T_CK(kc_quantize_q8(dx, n, dq, 0));
        kc_q8blk *got = get_q8(dq, nb);
        ok(n_unequal_blocks(got, ref, nb) == 0, "bitexact quantize_q8 of %d values (zeros, NaN, ties, 1e30) vs CPU twin: "
           "%zu/%d blocks unequal", n, n_unequal_blocks(got, ref, nb), nb);
        free(got);
        /* rmsnorm fused with the quantisation: y as kc_rmsnorm, yq as quantize_q8(y) */
        float *w = hnew(n), *y1 = hnew(n), *y2 = hnew(n);
        fill(x, n, -2.0f, 2.0f);
        fill(w, n, 0.5f, 1.5f);
        T_CK(cudaMemcpy(dx, x, n * 4, cudaMemcpyHostToDevice));
        float *dw = dup_f(w, n), *dy = (float *)dnew(n * 4);
        T_CK(kc_rmsnorm(dx, n, dw, dy, n, 1, n, 1e-6f, 0));
        get_f(y1, dy, n);
        poison(dy, n * 4);
        poison(dq, nb * sizeof(kc_q8blk));
        T_CK(kc_rmsnorm_q8(dx, dw, dy, dq, n, 1e-6f, 0));
        get_f(y2, dy, n);
        got = get_q8(dq, nb);
        quantize_q8(ref, y2, n);
        {
            float *yr = hnew(n);
            rmsnorm(yr, x, w, n, 1e-6f);
            const double r = max_rel(y2, yr, n);
            /* 4e-6: the 5120 squares are summed in another order than the twin's; the sum's rounding
             * grows like sqrt(n) eps (random seeds measured up to 1.13e-6 against a 1e-6 gate) */
            ok(r <= 4e-6 && n_unequal_blocks(got, ref, nb) == 0,
               "rmsnorm_q8 (one pass, 8 per thread): y vs CPU twin max_rel %.3e <= 4e-06, yq vs quantize_q8(y) "
               "bitexact: %zu/%d blocks unequal", r, n_unequal_blocks(got, ref, nb), nb);
            free(yr);
        }
        /* the lean form (option norm_lean: y = NULL, rmsnorm8_q8_lean_kernel): the same q8 blocks, y untouched; a
         * width the lean kernel does not take is refused, not run by another kernel */
        {
            kc_q8blk *dq2 = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk));
            poison(dq2, nb * sizeof(kc_q8blk));
            T_CK(cudaMemset(dy, 0x5a, n * 4));
            T_CK(kc_rmsnorm_q8(dx, dw, NULL, dq2, n, 1e-6f, 0));
            kc_q8blk *lean = get_q8(dq2, nb), *full = get_q8(dq, nb);
            float *y5 = hnew(n);
            get_f(y5, dy, n);
            size_t touched = 0;
            for (int i = 0; i < n; i++) {
                uint32_t u;
                memcpy(&u, y5 + i, 4);
                touched += u != 0x5a5a5a5au;
            }
            const int refused = kc_rmsnorm_q8(dx, dw, NULL, dq2, n - 224, 1e-6f, 0) == cudaErrorInvalidValue &&
                                !kc_rmsnorm_q8_lean_ok(n - 224, dx, dw) && kc_rmsnorm_q8_lean_ok(n, dx, dw);
            ok(memcmp(lean, full, nb * sizeof(kc_q8blk)) == 0 && touched == 0 && refused,
               "bitexact rmsnorm_q8 lean (y NULL, option norm_lean) vs rmsnorm_q8: yq %s, y buffer %zu values written, "
               "n=%d refused: %s", memcmp(lean, full, nb * sizeof(kc_q8blk)) ? "differs" : "equal", touched, n - 224,
               refused ? "yes" : "no");
            /* option norm_split: over 2, 3, 5, 8, 20 blocks (32: clamped to the row's 20 warps; 64: out of range, one
             * block), with y and without: y and yq bit for bit the one-block kernel's */
            size_t split_bad = 0;
            const int splits[7] = {2, 3, 5, 8, 20, 32, 64};
            for (int si = 0; si < 7; si++) {
                kc_set_norm_split(splits[si]);
                poison(dq2, nb * sizeof(kc_q8blk));
                poison(dy, n * 4);
                T_CK(kc_rmsnorm_q8(dx, dw, dy, dq2, n, 1e-6f, 0));
                get_f(y5, dy, n);
                kc_q8blk *sq = get_q8(dq2, nb);
                split_bad += n_unequal(y5, y2, n) + (memcmp(sq, full, nb * sizeof(kc_q8blk)) != 0);
                free(sq);
                poison(dq2, nb * sizeof(kc_q8blk));
                T_CK(kc_rmsnorm_q8(dx, dw, NULL, dq2, n, 1e-6f, 0));
                sq = get_q8(dq2, nb);
                split_bad += memcmp(sq, full, nb * sizeof(kc_q8blk)) != 0;
                free(sq);
            }
            kc_set_norm_split(1);
            ok(split_bad == 0, "bitexact rmsnorm_q8 over 2, 3, 5, 8, 20, 32 (clamped to 20) and 64 (refused: 1) blocks (option norm_split), y and lean, vs "
               "one block: %zu unequal", split_bad);
            free(lean);
            free(full);
            free(y5);
            cudaFree(dq2);
        }
        free(got);
        /* the general kernel (n = 5120 + 32: not a multiple of 256) quantises bit-identically too */
        {
            const int n2 = n - 224, nb2 = n2 / 32; /* 4896 = 153 blocks */
            float *y3 = hnew(n2);
            poison(dq, nb * sizeof(kc_q8blk));
            T_CK(kc_rmsnorm_q8(dx, dw, dy, dq, n2, 1e-6f, 0));
            get_f(y3, dy, n2);
            got = get_q8(dq, nb2);
            float *y4 = hnew(n2);
            T_CK(kc_rmsnorm(dx, n2, dw, dy, n2, 1, n2, 1e-6f, 0));
            get_f(y4, dy, n2);
            quantize_q8(ref, y3, n2);
            ok(n_unequal(y3, y4, n2) == 0 && n_unequal_blocks(got, ref, nb2) == 0,
               "bitexact rmsnorm_q8 n=%d (general kernel): y vs kc_rmsnorm %zu unequal, yq %zu/%d blocks unequal", n2,
               n_unequal(y3, y4, n2), n_unequal_blocks(got, ref, nb2), nb2);
            free(got);
            free(y3);
            free(y4);
        }
        /* gated_rmsnorm fused the same way (48 heads of 128: the 27B ssm_out input) */
        const int vh = 48, vd = 128, nv = vh * vd, nbv = nv / 32;
        float *o = hnew(nv), *z = hnew(nv), *g1 = hnew(nv), *g2 = hnew(nv);
        q8_block *refv = (q8_block *)malloc(nbv * sizeof *refv);
        fill(o, nv, -1.0f, 1.0f);
        fill(z, nv, -3.0f, 3.0f);
        float *dO = dup_f(o, nv), *dz = dup_f(z, nv), *dgw = dup_f(w, vd), *dg = (float *)dnew(nv * 4);
        kc_q8blk *dqv = (kc_q8blk *)dnew(nbv * sizeof(kc_q8blk));
        T_CK(kc_gated_rmsnorm(dO, dz, dgw, dg, vh, vd, 1e-6f, 0));
        get_f(g1, dg, nv);
        poison(dg, nv * 4);
        T_CK(kc_gated_rmsnorm_q8(dO, dz, dgw, dg, dqv, vh, vd, 1e-6f, 0));
        get_f(g2, dg, nv);
        got = get_q8(dqv, nbv);
        quantize_q8(refv, g2, nv);
        ok(n_unequal(g1, g2, nv) == 0 && n_unequal_blocks(got, refv, nbv) == 0,
           "bitexact gated_rmsnorm_q8: y vs kc_gated_rmsnorm %zu/%d unequal, yq %zu/%d blocks unequal",
           n_unequal(g1, g2, nv), nv, n_unequal_blocks(got, refv, nbv), nbv);
        free(got);
        free(o); free(z); free(g1); free(g2); free(refv);
        cudaFree(dO); cudaFree(dz); cudaFree(dgw); cudaFree(dg); cudaFree(dqv);
        free(x); free(ref); free(w); free(y1); free(y2);
        cudaFree(dx); cudaFree(dq); cudaFree(dw); cudaFree(dy);
    }
    /* matvec_q8 vs the CPU twin: every rows-per-warp x unroll variant, tails (96 and 2080 columns:
     * fewer blocks than lanes, a partial last pass), accumulate, three matrices in one launch */
    const int shapes[][2] = {{333, 5120}, {77, 96}, {130, 2080}, {5, 17408}, {20000, 96}, /* 20000: several trips per warp */
                             {2000, 256}, {600, 6144}, /* q8gemv=tma: 1 and 6 blocks per lane, many stages per block */
                             {136, 12288}, /* q8gemv=tma wide: x in shared memory */
                             {2640, 17408}, /* the same, 2-3 stages per block through a 2-stage ring (a wrap) */
                             {136, 16640}}; /* wide, 17 blocks per lane with the last ones guarded (nb 520 < 544:
                                             * the unrolled dot's FULL form is only for nb == 32 x 17) */
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int rows = shapes[si][0], cols = shapes[si][1], nb = cols / 32;
        void *w[3] = {make_ggml(GGML_TYPE_Q4_0, rows, cols), make_ggml(GGML_TYPE_Q4_0, rows + 3, cols),
                      make_ggml(GGML_TYPE_Q4_0, 7, cols)};
        const int wr[3] = {rows, rows + 3, 7};
        kc_mat W[3];
        float *x = hnew(cols), *y0 = hnew(rows), *ref[3], *got = hnew(rows + 3);
        q8_block *xq = (q8_block *)malloc(nb * sizeof *xq);
        fill(x, cols, -2.0f, 2.0f);
        fill(y0, rows, -1.0f, 1.0f);
        quantize_q8(xq, x, cols);
        kc_q8blk *dxq = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk));
        T_CK(cudaMemcpy(dxq, xq, nb * sizeof(kc_q8blk), cudaMemcpyHostToDevice));
        float *dy[3];
        for (int i = 0; i < 3; i++) {
            upload(m, &W[i], GGML_TYPE_Q4_0, wr[i], cols, w[i]);
            ref[i] = hnew(wr[i]);
            matvec_q8(NULL, ref[i], w[i], GGML_TYPE_Q4_0, xq, cols, wr[i]);
            dy[i] = (float *)dnew(wr[i] * 4);
        }
        size_t worst = 0;
        kc_pf pf; /* every other variant also prefetches "the next GEMV" (W[1], W[2]): results unchanged */
        const kc_mat *next2[2] = {&W[1], &W[2]};
        kc_prefetch_plan(&pf, next2, 2, 0, (size_t)64 << 20);
        for (int kind = 0; kind < 5; kind++) /* x-stationary (where cols <= 6144), streaming with x
                                                * coherent / read-only / in shared memory, and x in shared
                                                * memory with a row's loads in flight (q8wide 0, 1, 2, 3) */
            for (int R = 1; R <= 4; R *= 2)
                for (int U = 1; U <= 4; U *= 2) {
                    W[0].q8kind = kind > 0;
                    W[0].q8wide = kind > 0 ? kind - 1 : 0;
                    W[0].early = U == 1; /* x-stationary: first row before the PDL wait, or not */
                    W[0].rpw = R;
                    W[0].unroll = U;
                    W[0].prefetch = (R + U) & 1;
                    const kc_mat *one[1] = {&W[0]};
                    poison(dy[0], rows * 4);
                    kc_set_prefetch_next(U != 2 ? &pf : NULL);
                    T_CK(kc_matvec_q8(one, dy, 1, dxq, 0, 0));
                    get_f(got, dy[0], rows);
                    const size_t u = n_unequal(got, ref[0], rows);
                    if (u > worst) worst = u;
                }
        W[0].q8kind = 0;
        W[0].q8wide = 0;
        W[0].early = 0;
        ok(worst == 0, "bitexact matvec_q8 %dx%d, x-stationary%s (first row early and not), streaming (x coherent, read-only, in shared memory) and xs "
           "R = 1, 2, 4 x U = 1, 2, 4 (U != 2 with "
           "a %d-range next-GEMV prefetch) vs CPU twin: worst %zu/%d unequal", rows, cols, kc_q8_stationary(&W[0]) ? "" : " (n/a: too wide)", pf.nr, worst,
           rows);
        /* accumulate: y0 + W x, one f32 add per row */
        W[0].rpw = 0;
        W[0].unroll = 0;
        {
            const kc_mat *one[1] = {&W[0]};
            T_CK(cudaMemcpy(dy[0], y0, rows * 4, cudaMemcpyHostToDevice));
            T_CK(kc_matvec_q8(one, dy, 1, dxq, 1, 0));
            get_f(got, dy[0], rows);
            float *acc = hnew(rows);
            for (int r = 0; r < rows; r++) acc[r] = y0[r] + ref[0][r];
            ok(n_unequal(got, acc, rows) == 0, "bitexact matvec_q8 accumulate %dx%d: %zu/%d unequal", rows, cols,
               n_unequal(got, acc, rows), rows);
            free(acc);
        }
        /* three matrices of different heights in one launch, both kernels */
        {
            const kc_mat *three[3] = {&W[0], &W[1], &W[2]};
            size_t u = 0;
            for (int kind = 0; kind < 5; kind++) {
                W[0].q8kind = kind > 0;
                W[0].q8wide = kind > 0 ? kind - 1 : 0;
                W[0].early = 1;
                for (int i = 0; i < 3; i++) poison(dy[i], wr[i] * 4);
                T_CK(kc_matvec_q8(three, dy, 3, dxq, 0, 0));
                for (int i = 0; i < 3; i++) {
                    get_f(got, dy[i], wr[i]);
                    u += n_unequal(got, ref[i], wr[i]);
                }
            }
            W[0].q8kind = 0;
            W[0].q8wide = 0;
            W[0].early = 0;
            ok(u == 0, "bitexact matvec_q8 of 3 matrices (%d, %d, 7 rows) x %d in one launch, x-stationary (early) and the 4 "
               "wide kinds, vs CPU twin: %zu unequal",
               rows, rows + 3, cols, u);
        }
        /* q8gemv=tma: the weights bulk-copied into a shared-memory ring; ring sizes from one stage
         * (every stage reuses the slot: the empty/full phases) to the whole share, 1 to 3 blocks per SM;
         * one matrix, accumulate, three matrices whose boundaries fall inside stages, the SwiGLU pair.
         * Bit for bit against the CPU twin (and the SwiGLU against the x-stationary kernel). */
        kc_mat probe = W[0];
        probe.q8kind = 2;
        if (kc_q8_tma_takes(&probe)) {
            const int cfg[][3] = {{100, 1, 0}, {24, 1, 0}, {48, 2, 0}, {227, 1, 0}, {40, 3, 0}, {64, 3, 1}, {24, 1, 1}};
            kc_mat Up = W[1];
            Up.rows = rows;
            float *sx = hnew(rows), *acc = hnew(rows);
            for (int r = 0; r < rows; r++) acc[r] = y0[r] + ref[0][r];
            W[0].q8kind = 0;
            W[0].early = 1;
            T_CK(kc_matvec_swiglu_q8(&W[0], &Up, dxq, dy[0], NULL, NULL, 0));
            get_f(sx, dy[0], rows);
            kc_mat Gt = W[0];
            Gt.q8kind = 2;
            const int sw = kc_q8_tma_swiglu_takes(&Gt, &Up, 0); /* x-stationary widths only */
            size_t u1 = 0, ua = 0, u3 = 0, us = 0, uq = 0, bc_slots = 0, bc_missed = 0;
            const int r32 = rows / 32 * 32 > 0 ? rows / 32 * 32 : 32; /* the quantising SwiGLU: rows % 32 == 0 */
            kc_mat G32 = W[0], U32 = Up;
            G32.rows = U32.rows = r32;
            G32.q8kind = 2;
            q8_block *sq = (q8_block *)malloc((r32 / 32) * sizeof *sq);
            if (rows >= 32) quantize_q8(sq, sx, r32);
            kc_q8blk *dsq = (kc_q8blk *)dnew((r32 / 32) * sizeof(kc_q8blk));
            unsigned int *dcnt = (unsigned int *)dnew((r32 / 32) * sizeof(unsigned int));
            T_CK(cudaMemset(dcnt, 0, (r32 / 32) * sizeof(unsigned int)));
            for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
                kc_set_q8t(cfg[c][0], cfg[c][1]);
                kc_set_q8t_xs(cfg[c][2]);
                W[0].q8kind = 2;
                for (int i = 0; i < 3; i++) W[i].q8t_wloop = (int)(c % 3); /* wide: unrolled, run-time loop, x broadcast */
                const kc_mat *one[1] = {&W[0]}, *three[3] = {&W[0], &W[1], &W[2]};
                /* x broadcast (c % 3 == 2, its widths): whole stages and column halves (option q8t_bch), each
                 * with the 200 KB ring and with 112 KB (the 27B: one stage, or two half-stage slots) */
                const int nbc = c % 3 == 2 && (cols == 32 * 32 * 12 || cols == 32 * 32 * 17) ? 4 : 1;
                for (int bc = 0; bc < nbc; bc++) {
                    kc_set_q8t_bch(bc & 1);
                    W[0].q8t_wkb = bc >= 2 ? 112 : 0;
                    if (nbc > 1) { /* the form must take the matrix (the wide kernel would give the same bits) */
                        kc_mat Wb = W[0];
                        Wb.q8kind = 2;
                        const int slots = kc_q8_tma_bc_takes(&Wb, bc & 1);
                        bc_slots += (size_t)slots;
                        bc_missed += slots == 0;
                    }
                    poison(dy[0], rows * 4);
                    T_CK(kc_matvec_q8(one, dy, 1, dxq, 0, 0));
                    get_f(got, dy[0], rows);
                    u1 += n_unequal(got, ref[0], rows);
                    T_CK(cudaMemcpy(dy[0], y0, rows * 4, cudaMemcpyHostToDevice));
                    T_CK(kc_matvec_q8(one, dy, 1, dxq, 1, 0));
                    get_f(got, dy[0], rows);
                    ua += n_unequal(got, acc, rows);
                }
                kc_set_q8t_bch(0);
                W[0].q8t_wkb = 0;
                for (int i = 0; i < 3; i++) poison(dy[i], wr[i] * 4);
                T_CK(kc_matvec_q8(three, dy, 3, dxq, 0, 0));
                for (int i = 0; i < 3; i++) {
                    get_f(got, dy[i], wr[i]);
                    u3 += n_unequal(got, ref[i], wr[i]);
                }
                for (int half = 0; sw && half <= 1; half++) { /* option q8t_half: gate and up in one slot or two */
                    kc_set_q8t_half(half);
                    poison(dy[0], rows * 4);
                    T_CK(kc_matvec_swiglu_q8(&W[0], &Up, dxq, dy[0], NULL, NULL, 0));
                    get_f(got, dy[0], rows);
                    us += n_unequal(got, sx, rows);
                    if (r32 < 32) continue;
                    /* the SwiGLU that quantises its output itself (the first rows/32*32 rows): y and yq */
                    poison(dy[0], rows * 4);
                    poison(dsq, (r32 / 32) * sizeof(kc_q8blk));
                    T_CK(kc_matvec_swiglu_q8(&G32, &U32, dxq, dy[0], dsq, dcnt, 0));
                    get_f(got, dy[0], r32);
                    kc_q8blk *gq = get_q8(dsq, r32 / 32);
                    uq += n_unequal(got, sx, r32) + n_unequal_blocks(gq, sq, r32 / 32);
                    free(gq);
                }
                kc_set_q8t_half(0);
            }
            kc_set_q8t(0, 0);
            kc_set_q8t_xs(0);
            W[0].q8kind = 0;
            for (int i = 0; i < 3; i++) W[i].q8t_wloop = 0;
            W[0].early = 0;
            unsigned int *hcnt = (unsigned int *)malloc((r32 / 32) * sizeof(unsigned int));
            T_CK(cudaMemcpy(hcnt, dcnt, (r32 / 32) * sizeof(unsigned int), cudaMemcpyDeviceToHost));
            size_t armed = 0; /* every counter re-armed to zero */
            for (int i = 0; i < r32 / 32; i++) armed += hcnt[i] != 0;
            if (sw && rows >= 32)
            ok(uq + armed == 0 && kc_q8_tma_swiglu_takes(&G32, &U32, 1),
               "bitexact matvec_swiglu_q8 %dx%d q8gemv=tma quantising its output (groups of 32 inside a block and "
               "shared with a neighbour; q8t_half 0 and 1): y and yq vs the x-stationary kernel + CPU quantize_q8: %zu unequal, %zu "
               "counters left non-zero",
               r32, cols, uq, armed);
            free(hcnt);
            free(sq);
            cudaFree(dsq);
            cudaFree(dcnt);
            ok(u1 + ua + u3 + us + bc_missed == 0,
               "bitexact matvec_q8 %dx%d q8gemv=tma%s vs CPU twin: "
               "one matrix %zu, accumulate %zu, 3 matrices %zu unequal; SwiGLU vs the x-stationary kernel %zu unequal%s; "
               "x-broadcast forms not taken %zu (ring slots over its runs %zu)",
               rows, cols,
               kc_q8_stationary(&probe) ? " (rings of 100, 24, 48, 227, 40 KB, 1-3 blocks per SM, x in registers; 64 KB x 3, 24 KB x 1, x in shared memory)"
                                        : " wide (x in shared memory, a 200 KB ring, one block per SM; the dot unrolled "
                                          "for 12 or 17 blocks per lane, as the run-time loop, and one matrix with x "
                                          "read once per 8 rows (q8t_wu=2) where 12 or 17 blocks per lane fill the row, its stages whole "
                                          "and as two column halves (q8t_bch), rings of 200 and 112 KB)",
               u1, ua, u3, us, sw ? "" : " (n/a)", bc_missed, bc_slots);
            free(sx);
            free(acc);
        }
        /* rms_fold: kc_rmsnorm_q8 inside the TMA GEMV (kc_matvec_q8_rms, kc_matvec_swiglu_q8_rms) against
         * the two launches, bit for bit: y, xn, xq (and the SwiGLU's yq) */
        {
            kc_mat Wt[3] = {W[0], W[1], W[2]};
            for (int i = 0; i < 3; i++) Wt[i].q8kind = 2;
            float *hx = hnew(cols), *hw = hnew(cols);
            fill(hx, cols, -3.0f, 3.0f);
            fill(hw, cols, 0.5f, 1.5f);
            float *dx = (float *)dnew(cols * 4), *dw = (float *)dnew(cols * 4), *dxn = (float *)dnew(cols * 4),
                  *dxn2 = (float *)dnew(cols * 4);
            kc_q8blk *dq1 = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk)), *dq2 = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk));
            T_CK(cudaMemcpy(dx, hx, cols * 4, cudaMemcpyHostToDevice));
            T_CK(cudaMemcpy(dw, hw, cols * 4, cudaMemcpyHostToDevice));
            const kc_rmsq nm = {dx, dw, dxn2, dq2, 1e-6f, cols};
            const kc_mat *three[3] = {&Wt[0], &Wt[1], &Wt[2]};
            if (kc_matvec_q8_rms_ok(three, 3, &nm)) {
                size_t u = 0;
                float *a = hnew(rows + 3), *b = hnew(rows + 3), *xa = hnew(cols), *xb = hnew(cols);
                for (int xsm = 0; xsm <= 1; xsm++) {
                    kc_set_q8t_xs(xsm);
                    T_CK(kc_rmsnorm_q8(dx, dw, dxn, dq1, cols, 1e-6f, 0));
                    T_CK(kc_matvec_q8(three, dy, 3, dq1, 0, 0));
                    float *dz[3];
                    for (int i = 0; i < 3; i++) dz[i] = (float *)dnew(wr[i] * 4);
                    poison(dxn2, cols * 4);
                    poison(dq2, nb * sizeof(kc_q8blk));
                    T_CK(kc_matvec_q8_rms(three, dz, 3, &nm, 0, 0));
                    for (int i = 0; i < 3; i++) {
                        get_f(a, dy[i], wr[i]);
                        get_f(b, dz[i], wr[i]);
                        u += n_unequal(a, b, wr[i]);
                        cudaFree(dz[i]);
                    }
                    get_f(xa, dxn, cols);
                    get_f(xb, dxn2, cols);
                    u += n_unequal(xa, xb, cols);
                    u += q8_differ(dq1, dq2, nb);
                }
                kc_set_q8t_xs(0);
                /* the SwiGLU with its output quantised, gate W[0], up W[1] (first rows/32*32 rows) */
                size_t us = 0;
                kc_mat G = Wt[0], Up = Wt[1];
                G.rows = Up.rows = rows / 32 * 32;
                if (G.rows >= 32 && kc_matvec_swiglu_q8_rms_ok(&G, &Up, &nm, 1)) {
                    const int gq = G.rows / 32;
                    kc_q8blk *yq1 = (kc_q8blk *)dnew(gq * sizeof(kc_q8blk)), *yq2 = (kc_q8blk *)dnew(gq * sizeof(kc_q8blk));
                    unsigned int *cnt = (unsigned int *)dnew(gq * 4);
                    T_CK(cudaMemset(cnt, 0, gq * 4));
                    float *dz = (float *)dnew(G.rows * 4);
                    T_CK(kc_rmsnorm_q8(dx, dw, dxn, dq1, cols, 1e-6f, 0));
                    T_CK(kc_matvec_swiglu_q8(&G, &Up, dq1, dy[0], yq1, cnt, 0));
                    for (int half = 0; half <= 1; half++) { /* option q8t_half */
                        kc_set_q8t_half(half);
                        poison(dz, G.rows * 4);
                        T_CK(kc_matvec_swiglu_q8_rms(&G, &Up, &nm, dz, yq2, cnt, 0));
                        get_f(a, dy[0], G.rows);
                        get_f(b, dz, G.rows);
                        us += n_unequal(a, b, G.rows);
                        us += q8_differ(yq1, yq2, gq);
                    }
                    kc_set_q8t_half(0);
                    cudaFree(yq1);
                    cudaFree(yq2);
                    cudaFree(cnt);
                    cudaFree(dz);
                }
                ok(u + us == 0,
                   "bitexact rms_fold %dx%d: kc_matvec_q8_rms (3 matrices; x in registers and in shared memory) and "
                   "kc_matvec_swiglu_q8_rms (yq; q8t_half 0 and 1) vs kc_rmsnorm_q8 + the GEMV: %zu + %zu unequal (y, xn, xq, yq)",
                   rows, cols, u, us);
                free(a); free(b); free(xa); free(xb);
            }
            free(hx); free(hw);
            cudaFree(dx); cudaFree(dw); cudaFree(dxn); cudaFree(dxn2); cudaFree(dq1); cudaFree(dq2);
        }
        /* SwiGLU: gate W[0], up = first rows of W[1] (same height) */
        {
            kc_mat Up = W[1];
            Up.rows = rows;
            float *sref = hnew(rows);
            for (int r = 0; r < rows; r++) {
                const float g = ref[0][r], u = ref[1][r];
                sref[r] = g / (1.0f + expf(-g)) * u;
            }
            double worst_r = 0;
            for (int P = 1; P <= 2; P++)
                for (int U = 1; U <= 4; U *= 2) {
                    W[0].q8kind = U == 4; /* x-stationary for U = 1, 2 (where the width allows), streaming for 4 */
                    W[0].early = P == 2; /* x-stationary: the first row pair before the PDL wait */
                    W[0].rpw = P;
                    W[0].unroll = U;
                    poison(dy[0], rows * 4);
                    kc_set_prefetch_next(U == 1 ? &pf : NULL);
                    T_CK(kc_matvec_swiglu_q8(&W[0], &Up, dxq, dy[0], NULL, NULL, 0));
                    get_f(got, dy[0], rows);
                    const double r = max_rel(got, sref, rows);
                    if (r > worst_r) worst_r = r;
                }
            ok(worst_r <= 1e-6, "matvec_swiglu_q8 %dx%d, x-stationary (P = 2: first row pair early) and streaming P = 1, 2 "
               "x U = 1, 2, 4 vs CPU twin dots + silu: worst max_rel %.3e <= 1e-06", rows, cols, worst_r);
            W[0].q8kind = 0;
            W[0].early = 0;
            W[0].rpw = 0;
            W[0].unroll = 0;
            free(sref);
        }
        for (int i = 0; i < 3; i++) {
            free(w[i]);
            free(ref[i]);
            cudaFree(dy[i]);
        }
        free(x); free(y0); free(got); free(xq);
        cudaFree(dxq);
    }
    /* SwiGLU that also quantises its output (the engine's ff -> down): yq == quantize_q8(y) bit for bit,
     * twice in a row (the row-group counters re-arm), for P = 1, 2 */
    {
        const int rows = 320, cols = 2080, nb = cols / 32;
        void *wg = make_ggml(GGML_TYPE_Q4_0, rows, cols), *wu = make_ggml(GGML_TYPE_Q4_0, rows, cols);
        kc_mat G, Up;
        upload(m, &G, GGML_TYPE_Q4_0, rows, cols, wg);
        upload(m, &Up, GGML_TYPE_Q4_0, rows, cols, wu);
        float *x = hnew(cols), *y = hnew(rows), *y0 = hnew(rows);
        q8_block *xq = (q8_block *)malloc(nb * sizeof *xq), *ref = (q8_block *)malloc(rows / 32 * sizeof *ref);
        fill(x, cols, -2.0f, 2.0f);
        quantize_q8(xq, x, cols);
        kc_q8blk *dxq = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk)), *dyq = (kc_q8blk *)dnew(rows / 32 * sizeof(kc_q8blk));
        unsigned int *dcnt;
        T_CK(cudaMalloc(&dcnt, rows / 32 * sizeof *dcnt));
        T_CK(cudaMemset(dcnt, 0, rows / 32 * sizeof *dcnt));
        T_CK(cudaMemcpy(dxq, xq, nb * sizeof(kc_q8blk), cudaMemcpyHostToDevice));
        float *dy = (float *)dnew(rows * 4);
        size_t bad = 0, bady = 0;
        T_CK(kc_matvec_swiglu_q8(&G, &Up, dxq, dy, NULL, NULL, 0));
        get_f(y0, dy, rows);
        for (int P = 1; P <= 2; P++)
            for (int rep = 0; rep < 2; rep++) {
                G.rpw = P;
                poison(dy, rows * 4);
                poison(dyq, rows / 32 * sizeof(kc_q8blk));
                T_CK(kc_matvec_swiglu_q8(&G, &Up, dxq, dy, dyq, dcnt, 0));
                get_f(y, dy, rows);
                kc_q8blk *got = get_q8(dyq, rows / 32);
                quantize_q8(ref, y, rows);
                bad += n_unequal_blocks(got, ref, rows / 32);
                bady += n_unequal(y, y0, rows);
                free(got);
            }
        unsigned int hc[10];
        T_CK(cudaMemcpy(hc, dcnt, sizeof hc, cudaMemcpyDeviceToHost));
        unsigned int csum = 0;
        for (int i = 0; i < 10; i++) csum += hc[i];
        ok(bad == 0 && bady == 0 && csum == 0,
           "bitexact swiglu_q8 with quantised output, P = 1, 2, twice each: y vs without %zu unequal, yq vs "
           "quantize_q8(y) %zu blocks unequal, counters left %u", bady, bad, csum);
        const cudaError_t e = kc_matvec_swiglu_q8(&G, &Up, dxq, dy, dyq, NULL, 0);
        ok(e == cudaErrorInvalidValue, "swiglu_q8 with yq but no counters is refused (%s)", cudaGetErrorName(e));
        free(wg); free(wu); free(x); free(y); free(y0); free(xq); free(ref);
        cudaFree(dxq); cudaFree(dyq); cudaFree(dcnt); cudaFree(dy);
    }
    /* a bad call is refused, not launched: an f32 matrix, mismatched widths */
    {
        void *wf = make_ggml(GGML_TYPE_F32, 40, 64), *wq = make_ggml(GGML_TYPE_Q4_0, 40, 96);
        kc_mat F, Q;
        upload(m, &F, GGML_TYPE_F32, 40, 64, wf);
        upload(m, &Q, GGML_TYPE_Q4_0, 40, 96, wq);
        float *dy = (float *)dnew(40 * 4);
        kc_q8blk *dxq = (kc_q8blk *)dnew(3 * sizeof(kc_q8blk));
        const kc_mat *f1[1] = {&F}, *mix[2] = {&Q, &Q};
        float *ys[2] = {dy, dy};
        Q.cols = 96;
        const cudaError_t e1 = kc_matvec_q8(f1, ys, 1, dxq, 0, 0);
        kc_mat Q2 = Q;
        Q2.cols = 64;
        mix[1] = &Q2;
        const cudaError_t e2 = kc_matvec_q8(mix, ys, 2, dxq, 0, 0), e3 = kc_quantize_q8(dy, 33, dxq, 0);
        ok(e1 == cudaErrorInvalidValue && e2 == cudaErrorInvalidValue && e3 == cudaErrorInvalidValue,
           "matvec_q8 refuses an f32 matrix (%s) and mixed widths (%s); quantize_q8 refuses n %% 32 != 0 (%s)",
           cudaGetErrorName(e1), cudaGetErrorName(e2), cudaGetErrorName(e3));
        (void)cudaGetLastError();
        free(wf); free(wq);
        cudaFree(dy); cudaFree(dxq);
    }
    kc_model_free(m);
}

/* norm_tail: kc_matvec_q8_tail (y += W . x, then the grid's last block computes the next RMS norm of y)
 * against kc_matvec_q8 (accumulate) + kc_rmsnorm_q8, bit for bit: y, xn, xq; the norm's xq written
 * over the GEMV's own input (as the engine does); the ticket re-armed (two launches in a row). Routes:
 * the x-stationary TMA kernel, the same with x in shared memory (q8t_xs), the wide one (down). */
static void test_norm_tail(void)
{
    kc_model *m = (kc_model *)calloc(1, sizeof *m);
    m->dot_q8 = 1;
    const int shapes[][2] = {{5120, 6144}, {5120, 17408}, {2048, 2048}, {256, 512}, {8192, 1024}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int n = shapes[si][0], cols = shapes[si][1], nb = cols / 32, nbo = n / 32;
        void *w = make_ggml(GGML_TYPE_Q4_0, n, cols);
        kc_mat W;
        upload(m, &W, GGML_TYPE_Q4_0, n, cols, w);
        W.q8kind = 2;
        float *hx = hnew(cols), *hy0 = hnew(n), *hw = hnew(n), *a = hnew(n), *b = hnew(n);
        fill(hx, cols, -2.0f, 2.0f);
        fill(hy0, n, -3.0f, 3.0f);
        fill(hw, n, 0.5f, 1.5f);
        float *dx = dup_f(hx, cols), *dw = dup_f(hw, n), *dy1 = dup_f(hy0, n), *dy2 = dup_f(hy0, n);
        float *dxn1 = (float *)dnew(n * 4), *dxn2 = (float *)dnew(n * 4);
        const int nq = nb > nbo ? nb : nbo;
        kc_q8blk *dq = (kc_q8blk *)dnew(nb * sizeof(kc_q8blk)), *dq1 = (kc_q8blk *)dnew(nbo * sizeof(kc_q8blk)),
                 *dq2 = (kc_q8blk *)dnew(nq * sizeof(kc_q8blk));
        unsigned int *cnt = (unsigned int *)dnew(4);
        T_CK(cudaMemset(cnt, 0, 4));
        T_CK(kc_quantize_q8(dx, cols, dq, 0));
        size_t u = 0;
        int routes = 0, launched = 0;
        for (int xsm = 0; xsm <= 1; xsm++) {
            kc_set_q8t_xs(xsm);
            const kc_rmsq tail = {dy2, dw, dxn2, dq2, 1e-6f, n};
            if (!kc_matvec_q8_tail_ok(&W, &tail)) continue;
            routes++;
            T_CK(cudaMemcpy(dy1, hy0, n * 4, cudaMemcpyHostToDevice));
            T_CK(cudaMemcpy(dy2, hy0, n * 4, cudaMemcpyHostToDevice));
            const kc_mat *one[1] = {&W};
            float *Y1[1] = {dy1};
            for (int rep = 0; rep < 2; rep++) { /* y accumulates twice; the second launch needs the re-armed ticket */
                T_CK(kc_matvec_q8(one, Y1, 1, dq, 1, 0));
                T_CK(kc_rmsnorm_q8(dy1, dw, dxn1, dq1, n, 1e-6f, 0));
                /* the tail's input: x's q8 blocks in the buffer its norm then overwrites */
                T_CK(cudaMemcpy(dq2, dq, nb * sizeof(kc_q8blk), cudaMemcpyDeviceToDevice));
                poison(dxn2, n * 4);
                T_CK(kc_matvec_q8_tail(&W, dy2, dq2, &tail, cnt, 0));
                launched++;
                T_CK(cudaDeviceSynchronize());
                get_f(a, dy1, n);
                get_f(b, dy2, n);
                u += n_unequal(a, b, n);
                get_f(a, dxn1, n);
                get_f(b, dxn2, n);
                u += n_unequal(a, b, n);
                u += q8_differ(dq1, dq2, nbo);
                unsigned int c = 1;
                T_CK(cudaMemcpy(&c, cnt, 4, cudaMemcpyDeviceToHost));
                u += c != 0;
            }
        }
        kc_set_q8t_xs(0);
        const int wide = !kc_q8_stationary(&W);
        ok(routes >= 1 && u == 0,
           "bitexact norm_tail %dx%d: kc_matvec_q8_tail (%s; %d launches) vs kc_matvec_q8 + kc_rmsnorm_q8: %zu unequal "
           "(y, xn, xq, the ticket back at 0)",
           n, cols, wide ? "the wide TMA kernel" : "x in registers and in shared memory", launched, u);
        free(w); free(hx); free(hy0); free(hw); free(a); free(b);
        cudaFree(dx); cudaFree(dw); cudaFree(dy1); cudaFree(dy2); cudaFree(dxn1); cudaFree(dxn2);
        cudaFree(dq); cudaFree(dq1); cudaFree(dq2); cudaFree(cnt);
    }
    {   /* refusals, nothing launched: n not a multiple of 256, rows != n, tail->x not y */
        void *w = make_ggml(GGML_TYPE_Q4_0, 320, 512);
        kc_mat W;
        upload(m, &W, GGML_TYPE_Q4_0, 320, 512, w);
        W.q8kind = 2;
        float *dy = (float *)dnew(512 * 4), *dw = (float *)dnew(512 * 4), *dxn = (float *)dnew(512 * 4);
        kc_q8blk *dq = (kc_q8blk *)dnew(16 * sizeof(kc_q8blk));
        unsigned int *cnt = (unsigned int *)dnew(4);
        const kc_rmsq t320 = {dy, dw, dxn, dq, 1e-6f, 320}, t256 = {dy, dw, dxn, dq, 1e-6f, 256};
        const int ok1 = kc_matvec_q8_tail_ok(&W, &t320), ok2 = kc_matvec_q8_tail_ok(&W, &t256);
        const cudaError_t e1 = kc_matvec_q8_tail(&W, dy, dq, &t320, cnt, 0), e2 = kc_matvec_q8_tail(&W, dxn, dq, &t256, cnt, 0);
        ok(!ok1 && !ok2 && e1 == cudaErrorNotSupported && e2 == cudaErrorNotSupported,
           "norm_tail refuses n = 320 (not a multiple of 256), rows != n, and y other than the norm's x (%s, %s)",
           cudaGetErrorName(e1), cudaGetErrorName(e2));
        (void)cudaGetLastError();
        free(w);
        cudaFree(dy); cudaFree(dw); cudaFree(dxn); cudaFree(dq); cudaFree(cnt);
    }
    kc_model_free(m);
}

/* kc_prefetch_plan: the ranges are the first whole rows the GEMV reads, quants and scales, in its
 * row order (host only: the matrices need no device memory) */
static void test_prefetch_plan(void)
{
    kc_mat A, B, C, F;
    memset(&A, 0, sizeof A);
    A.type = GGML_TYPE_Q4_0;
    A.rows = 333;
    A.cols = 5120; /* 160 blocks: 2880 bytes per row */
    A.data = (void *)(uintptr_t)0x100000;
    A.d = (__half *)(uintptr_t)0x900000;
    B = A;
    B.rows = 10;
    B.data = (void *)(uintptr_t)0x200000;
    B.d = (__half *)(uintptr_t)0xa00000;
    C = B;
    C.data = (void *)(uintptr_t)0x300000;
    C.d = (__half *)(uintptr_t)0xb00000;
    F = A;
    F.type = GGML_TYPE_F32;
    kc_pf pf;
    const kc_mat *one[1] = {&A}, *abc[3] = {&A, &B, &C}, *ab[2] = {&A, &B}, *fa[1] = {&F};
    kc_prefetch_plan(&pf, one, 1, 0, 100 * 2880 + 50); /* 100 whole rows */
    ok(pf.nr == 2 && pf.p[0] == A.data && pf.n[0] == 100 * 160 * 16 && pf.p[1] == (void *)A.d &&
           pf.n[1] == 100 * 160 * 2,
       "prefetch plan, one matrix, 100.02 rows of bytes: quants %u (256000), scales %u (32000), %d ranges",
       pf.n[0], pf.nr > 1 ? pf.n[1] : 0, pf.nr);
    kc_prefetch_plan(&pf, abc, 3, 0, (333 + 10 + 4) * 2880); /* all of A and B, 4 rows of C */
    ok(pf.nr == 6 && pf.n[0] == 333 * 2560 && pf.n[1] == (333 * 320 & ~15u) && pf.p[2] == B.data &&
           pf.n[2] == 10 * 2560 && pf.p[4] == C.data && pf.n[4] == 4 * 2560 && pf.n[5] == 4 * 320,
       "prefetch plan across 3 matrices: A whole (scales rounded down to 16 bytes: %u), B whole, 4 rows of C (%u)",
       pf.n[1], pf.nr > 4 ? pf.n[4] : 0);
    B.rows = 333;
    kc_prefetch_plan(&pf, ab, 2, 1, 20 * 2 * 2880); /* SwiGLU pair: 20 rows of each */
    ok(pf.nr == 4 && pf.p[0] == A.data && pf.n[0] == 20 * 2560 && pf.p[2] == B.data && pf.n[2] == 20 * 2560 &&
           pf.n[3] == 20 * 320,
       "prefetch plan, gate/up pair: 20 rows of each (%u, %u bytes of quants)", pf.n[0], pf.nr > 2 ? pf.n[2] : 0);
    kc_prefetch_plan(&pf, fa, 1, 0, 1 << 20);
    const int nr_f32 = pf.nr;
    kc_prefetch_plan(&pf, one, 1, 0, 100);
    ok(nr_f32 == 0 && pf.nr == 0, "prefetch plan: none for an f32 matrix (%d ranges) or under one row (%d)", nr_f32,
       pf.nr);
}

/* ------------------------------------------------------------------ small ops */

static void test_norms(void)
{
    /* rmsnorm on one row of 5120 and per head on a strided (24, 2*256) buffer */
    {
        const int n = 5120;
        float *x = hnew(n), *w = hnew(n), *ref = hnew(n), *got = hnew(n);
        fill(x, n, -3, 3);
        fill(w, n, 0.5f, 1.5f);
        float *dx = dup_f(x, n), *dw = dup_f(w, n), *dy = (float *)dnew(n * 4);
        T_CK(kc_rmsnorm(dx, n, dw, dy, n, 1, n, 1e-6f, 0));
        get_f(got, dy, n);
        rmsnorm(ref, x, w, n, 1e-6f);
        check_rel("rmsnorm 1x5120", got, ref, n, 4e-6); /* summation order: see rmsnorm_q8 above */
        free(x); free(w); free(ref); free(got);
        cudaFree(dx); cudaFree(dw); cudaFree(dy);
    }
    {
        const int nh = 24, hd = 256;
        float *x = hnew(nh * 2 * hd), *w = hnew(hd), *ref = hnew(nh * hd), *got = hnew(nh * hd);
        fill(x, nh * 2 * hd, -3, 3);
        fill(w, hd, 0.5f, 1.5f);
        float *dx = dup_f(x, nh * 2 * hd), *dw = dup_f(w, hd), *dy = (float *)dnew(nh * hd * 4);
        T_CK(kc_rmsnorm(dx, 2 * hd, dw, dy, hd, nh, hd, 1e-6f, 0));
        get_f(got, dy, nh * hd);
        for (int h = 0; h < nh; h++) rmsnorm(ref + h * hd, x + h * 2 * hd, w, hd, 1e-6f);
        check_rel("rmsnorm per head 24x256 (q of [q|gate])", got, ref, nh * hd, 1e-6);
        free(x); free(w); free(ref); free(got);
        cudaFree(dx); cudaFree(dw); cudaFree(dy);
    }
    {
        const int nh = 16, d = 128;
        float *x = hnew(nh * d), *ref = hnew(nh * d), *got = hnew(nh * d);
        fill(x, nh * d, -3, 3);
        float *dx = dup_f(x, nh * d), *dy = (float *)dnew(nh * d * 4);
        T_CK(kc_l2norm(dx, dy, nh, d, 1.0f, 0));
        get_f(got, dy, nh * d);
        for (int h = 0; h < nh; h++) l2norm(ref + h * d, x + h * d, d);
        check_rel("l2norm 16x128", got, ref, nh * d, 1e-6);
        free(x); free(ref); free(got);
        cudaFree(dx); cudaFree(dy);
    }
    {
        const int vh = 48, vd = 128, n = vh * vd;
        float *o = hnew(n), *z = hnew(n), *w = hnew(vd), *ref = hnew(n), *got = hnew(n);
        fill(o, n, -2, 2);
        fill(z, n, -4, 4);
        fill(w, vd, 0.5f, 1.5f);
        float *dO = dup_f(o, n), *dz = dup_f(z, n), *dw = dup_f(w, vd), *dy = (float *)dnew(n * 4);
        T_CK(kc_gated_rmsnorm(dO, dz, dw, dy, vh, vd, 1e-6f, 0));
        get_f(got, dy, n);
        for (int h = 0; h < vh; h++) gated_rmsnorm(ref + h * vd, o + h * vd, z + h * vd, w, vd, 1e-6f);
        check_rel("gated_rmsnorm 48x128", got, ref, n, 1e-6);
        free(o); free(z); free(w); free(ref); free(got);
        cudaFree(dO); cudaFree(dz); cudaFree(dw); cudaFree(dy);
    }
}

/* q4_0 layout 1 with 1, 2 and 4 rows per warp (issue 6 GEMV): against the CPU twin, and bit-exact
 * across rows-per-warp, the fused pair and SwiGLU with 1 or 2 gate/up pairs per warp (a row's
 * arithmetic must not depend on the launch). rows not a multiple of 4: the tail rows. */
static void test_gemv_q4_rpw(void)
{
    kc_model *m = (kc_model *)calloc(1, sizeof *m);
    const int rows = 8195, cols = 2048, rows2 = 4099;
    void *w = make_ggml(GGML_TYPE_Q4_0, rows, cols), *w2 = make_ggml(GGML_TYPE_Q4_0, rows, cols);
    float *x = hnew(cols), *ref = hnew(rows), *ref2 = hnew(rows), *got = hnew(rows), *base = hnew(rows);
    float *got2 = hnew(rows), *sref = hnew(rows), *sbase = hnew(rows);
    kc_mat W, W2, V;
    fill(x, cols, -2.0f, 2.0f);
    upload(m, &W, GGML_TYPE_Q4_0, rows, cols, w);
    upload(m, &W2, GGML_TYPE_Q4_0, rows, cols, w2);
    V = W2;
    V.rows = rows2; /* the first rows2 rows of w2: a 2-rows-per-warp matrix */
    float *dx = dup_f(x, cols), *dy = (float *)dnew(rows * 4), *dy2 = (float *)dnew(rows * 4);
    matvec(NULL, ref, w, GGML_TYPE_Q4_0, x, cols, rows);
    matvec(NULL, ref2, w2, GGML_TYPE_Q4_0, x, cols, rows);
    {
        const int reg_w = kc_gemv_rpw(&W), reg_v = kc_gemv_rpw(&V);
        kc_mat S = W;
        S.rows = 1000;
        const int reg_s = kc_gemv_rpw(&S);
        W.rpw = 4;
        const int reg_f = kc_gemv_rpw(&W);
        W.gemv = 1;
        const int pipe_f = kc_gemv_rpw(&W);
        W.gemv = 0;
        W.rpw = 0;
        ok(reg_w == 2 && reg_v == 2 && reg_s == 1 && reg_f == 4 && pipe_f == 2,
           "q4_0 rows per warp: %d rows -> %d, %d -> %d, 1000 -> %d; forced 4 -> %d (register) / %d (cp.async)", rows,
           reg_w, rows2, reg_v, reg_s, reg_f, pipe_f);
    }
    /* (kernel, rows per warp): gemv 0 = register prefetch (1, 2, 4 rows), 1 = cp.async (1, 2) */
    const int kinds[][2] = {{0, 1}, {0, 2}, {0, 4}, {1, 1}, {1, 2}};
    for (int i = 0; i < 5; i++) {
        W.gemv = kinds[i][0];
        W.rpw = kinds[i][1];
        poison(dy, rows * 4);
        T_CK(kc_matvec(&W, dx, dy, 0, 0));
        get_f(got, dy, rows);
        char what[112];
        snprintf(what, sizeof what, "matvec q4_0 %dx%d, %s, %d rows per warp", rows, cols,
                 kinds[i][0] ? "cp.async" : "register prefetch", kinds[i][1]);
        check_rel(what, got, ref, rows, 2e-5);
        if (i == 0) memcpy(base, got, rows * 4);
        else
            ok(n_unequal(got, base, rows) == 0, "bitexact q4_0 GEMV %s %d rows per warp vs register 1: %zu/%d unequal",
               kinds[i][0] ? "cp.async" : "register", kinds[i][1], n_unequal(got, base, rows), rows);
    }
    W.gemv = 0;
    W.rpw = 0;
    /* the fused pair (qkv + z) on the default kernel vs separate launches */
    W.rpw = 0;
    poison(dy, rows * 4);
    poison(dy2, rows * 4);
    T_CK(kc_matvec2(&W, &V, dx, dy, dy2, 0));
    get_f(got, dy, rows);
    get_f(got2, dy2, rows2);
    W2.rpw = 1;
    W2.gemv = 1; /* the cp.async kernel, 1 row per warp: same bits */
    float *dy3 = (float *)dnew(rows * 4);
    T_CK(kc_matvec(&W2, dx, dy3, 0, 0));
    float *sep2 = hnew(rows);
    get_f(sep2, dy3, rows);
    W2.gemv = 0;
    ok(n_unequal(got, base, rows) + n_unequal(got2, sep2, rows2) == 0,
       "bitexact q4_0 matvec2 (%d + %d rows) vs separate launches: %zu/%d unequal", rows, rows2,
       n_unequal(got, base, rows) + n_unequal(got2, sep2, rows2), rows + rows2);
    /* SwiGLU: 1 pair per warp (rpw 1, 2) and 2 pairs (rpw 4) */
    swiglu(sref, ref, ref2, rows);
    const int skinds[][2] = {{0, 1}, {0, 4}, {1, 0}}; /* register 1 pair, register 2 pairs, cp.async */
    for (int i = 0; i < 3; i++) {
        W.gemv = W2.gemv = skinds[i][0];
        W.rpw = W2.rpw = skinds[i][1];
        poison(dy, rows * 4);
        T_CK(kc_matvec_swiglu(&W, &W2, dx, dy, 0));
        get_f(got, dy, rows);
        char what[112];
        snprintf(what, sizeof what, "matvec_swiglu q4_0 %dx%d, %s, %d gate/up pairs per warp", rows, cols,
                 skinds[i][0] ? "cp.async" : "register prefetch", skinds[i][1] == 4 ? 2 : 1);
        check_rel(what, got, sref, rows, 2e-5);
        if (i == 0) memcpy(sbase, got, rows * 4);
        else
            ok(n_unequal(got, sbase, rows) == 0, "bitexact SwiGLU q4_0 %s vs register 1 pair per warp: %zu/%d unequal",
               skinds[i][0] ? "cp.async" : "register 2 pairs", n_unequal(got, sbase, rows), rows);
    }
    free(w); free(w2); free(x); free(ref); free(ref2); free(got); free(base); free(got2); free(sref);
    free(sbase); free(sep2);
    cudaFree(dx); cudaFree(dy); cudaFree(dy2); cudaFree(dy3);
    kc_model_free(m);
}

/* gdn_step (option gdn=fused: one launch, the v-heads of a k-head as a cluster) vs gdn_prep +
 * delta_step_norm_q8: every output bit-identical over several steps — S, the conv history, conv,
 * qn, kn, beta, g, b, a, o, y, yq — with b, a given (wb 0) or projected from xn in the kernel (wb 1) */
static void test_gdn_step(int kh, int vh, int wb, int steps)
{
    const int kd = 128, vd = 128, K = 4, D = 1024, C = 2 * kh * kd + vh * vd;
    const size_t nh = (size_t)(K - 1) * C, nS = (size_t)vh * kd * vd, nv = (size_t)vh * vd, nq = (size_t)kh * kd;
    float *w = hnew((size_t)C * K), *hist = hnew(nh), *x = hnew(C), *p = hnew(2 * vh), *S = hnew(nS);
    float *Wab = hnew((size_t)2 * vh * D), *xn = hnew(D), *z = hnew(nv), *nw = hnew(vd), *ab = hnew(2 * vh);
    fill(w, (size_t)C * K, -1, 1);
    fill(hist, nh, -1, 1);
    fill(p, vh, -8, -0.01f);
    fill(p + vh, vh, -2, 2);
    fill(S, nS, -0.5f, 0.5f);
    fill(Wab, (size_t)2 * vh * D, -0.05f, 0.05f);
    fill(nw, vd, 0.5f, 1.5f);
    float *dw = dup_f(w, (size_t)C * K), *dp = dup_f(p, 2 * vh), *dWab = dup_f(Wab, (size_t)2 * vh * D);
    float *dnw = dup_f(nw, vd), *dx = (float *)dnew(C * 4), *dxn = (float *)dnew(D * 4), *dz = (float *)dnew(nv * 4);
    /* per side: hist, S, then the outputs conv | qn | kn | beta | g | b | a | o | y, then yq */
    float *dh[2], *dS[2], *dout[2];
    kc_q8blk *dyq[2];
    const size_t outn = (size_t)C + 2 * nq + 4 * vh + 2 * nv;
    for (int i = 0; i < 2; i++) {
        dh[i] = dup_f(hist, nh);
        dS[i] = dup_f(S, nS);
        dout[i] = (float *)dnew(outn * 4);
        dyq[i] = (kc_q8blk *)dnew(nv / 32 * sizeof(kc_q8blk));
    }
    float *h0 = hnew(outn), *h1 = hnew(outn);
    kc_q8blk *q0 = (kc_q8blk *)malloc(nv / 32 * sizeof(kc_q8blk)), *q1 = (kc_q8blk *)malloc(nv / 32 * sizeof(kc_q8blk));
    size_t bad = 0, badq = 0;
    for (int s = 0; s < steps; s++) {
        fill(x, C, -2, 2);
        fill(xn, D, -2, 2);
        fill(z, nv, -3, 3);
        fill(ab, 2 * vh, -30, 30);
        T_CK(cudaMemcpy(dx, x, C * 4, cudaMemcpyHostToDevice));
        T_CK(cudaMemcpy(dxn, xn, D * 4, cudaMemcpyHostToDevice));
        T_CK(cudaMemcpy(dz, z, nv * 4, cudaMemcpyHostToDevice));
        for (int i = 0; i < 2; i++) {
            poison(dout[i], outn * 4);
            poison(dyq[i], nv / 32 * sizeof(kc_q8blk));
            float *o = dout[i];
            kc_gdn_step_args a;
            memset(&a, 0, sizeof a);
            a.x = dx;
            a.hist = dh[i];
            a.conv_w = dw;
            a.conv = o;
            a.qn = o + C;
            a.kn = a.qn + nq;
            a.beta = a.kn + nq;
            a.g = a.beta + vh;
            a.b = a.g + vh;
            a.a = a.b + vh;
            a.o = a.a + vh;
            a.y = a.o + nv;
            a.ssm_a = dp;
            a.dt_bias = dp + vh;
            a.xn = wb ? dxn : NULL;
            a.Wb = wb ? dWab : NULL;
            a.Wa = wb ? dWab + (size_t)vh * D : NULL;
            a.S = dS[i];
            a.z = dz;
            a.w = dnw;
            a.yq = dyq[i];
            a.qscale = 1.0f / sqrtf((float)kd);
            a.eps = 1e-6f;
            a.C = C;
            a.K = K;
            a.kh = kh;
            a.kd = kd;
            a.vh = vh;
            a.vd = vd;
            a.D = D;
            if (!wb) { /* b, a are inputs */
                T_CK(cudaMemcpy(a.b, ab, vh * 4, cudaMemcpyHostToDevice));
                T_CK(cudaMemcpy(a.a, ab + vh, vh * 4, cudaMemcpyHostToDevice));
            }
            if (i == 0) {
                T_CK(kc_gdn_prep(a.x, a.hist, a.conv_w, a.conv, C, K, kh, kd, a.qscale, a.qn, a.kn, a.b, a.a, a.ssm_a,
                                 a.dt_bias, a.beta, a.g, vh, a.xn, a.Wb, a.Wa, D, 2 - wb, 0));
                T_CK(kc_delta_step_norm_q8(a.S, a.qn, a.kn, a.conv + 2 * nq, a.g, a.beta, a.o, a.z, a.w, a.eps, a.y,
                                           a.yq, kh, kd, vh, vd, 0));
            } else {
                T_CK(kc_gdn_step(&a, 0));
            }
        }
        get_f(h0, dout[0], outn);
        get_f(h1, dout[1], outn);
        bad += n_unequal(h0, h1, outn);
        T_CK(cudaMemcpy(q0, dyq[0], nv / 32 * sizeof(kc_q8blk), cudaMemcpyDeviceToHost));
        T_CK(cudaMemcpy(q1, dyq[1], nv / 32 * sizeof(kc_q8blk), cudaMemcpyDeviceToHost));
        badq += memcmp(q0, q1, nv / 32 * sizeof(kc_q8blk)) != 0;
    }
    float *g0 = hnew(nS), *g1 = hnew(nS);
    get_f(g0, dS[0], nS);
    get_f(g1, dS[1], nS);
    const size_t badS = n_unequal(g0, g1, nS);
    get_f(g0, dh[0], nh);
    get_f(g1, dh[1], nh);
    const size_t badh = n_unequal(g0, g1, nh);
    ok(bad == 0 && badq == 0 && badS == 0 && badh == 0,
       "bitexact gdn_step (kh %d, vh %d: clusters of %d; beta/alpha %s) vs gdn_prep + delta_step_norm_q8 over %d "
       "steps: %zu/%zu outputs, %zu yq, %zu/%zu S, %zu/%zu history unequal",
       kh, vh, vh / kh, wb ? "projected in the kernel" : "given", steps, bad, outn * steps, badq, badS, nS, badh, nh);
    free(w); free(hist); free(x); free(p); free(S); free(Wab); free(xn); free(z); free(nw); free(ab);
    free(h0); free(h1); free(q0); free(q1); free(g0); free(g1);
    cudaFree(dw); cudaFree(dp); cudaFree(dWab); cudaFree(dnw); cudaFree(dx); cudaFree(dxn); cudaFree(dz);
    for (int i = 0; i < 2; i++) {
        cudaFree(dh[i]); cudaFree(dS[i]); cudaFree(dout[i]); cudaFree(dyq[i]);
    }
}

/* gdn_prep (one launch) vs gdn_beta_g + conv_step + l2norm x2: bit-identical outputs and history */
static void test_gdn_prep(int kh, int kd, int vh, int vd)
{
    const int C = 2 * kh * kd + vh * vd, K = 4, steps = 3;
    const size_t nh = (size_t)(K - 1) * C;
    const float qs = 1.0f / sqrtf((float)kd);
    float *w = hnew((size_t)C * K), *hist = hnew(nh), *x = hnew(C), *ab = hnew(2 * vh), *p = hnew(2 * vh);
    fill(w, (size_t)C * K, -1, 1);
    fill(hist, nh, -1, 1);
    fill(ab, 2 * vh, -30, 30);
    fill(p, vh, -8, -0.01f);
    fill(p + vh, vh, -2, 2);
    float *dw = dup_f(w, (size_t)C * K), *dh1 = dup_f(hist, nh), *dh2 = dup_f(hist, nh), *dab = dup_f(ab, 2 * vh);
    float *dp = dup_f(p, 2 * vh), *dx = (float *)dnew(C * 4);
    const size_t outn = (size_t)C + 2 * kh * kd + 2 * vh; /* y | qn | kn | beta | g */
    float *o1 = (float *)dnew(outn * 4), *o2 = (float *)dnew(outn * 4);
    float *h1 = hnew(outn), *h2 = hnew(outn), *g1 = hnew(nh), *g2 = hnew(nh);
    size_t bad = 0, badh = 0;
    for (int s = 0; s < steps; s++) {
        fill(x, C, -2, 2);
        T_CK(cudaMemcpy(dx, x, C * 4, cudaMemcpyHostToDevice));
        poison(o1, outn * 4);
        poison(o2, outn * 4);
        float *y1 = o1, *q1 = o1 + C, *k1 = q1 + kh * kd, *b1 = k1 + kh * kd, *gg1 = b1 + vh;
        float *y2 = o2, *q2 = o2 + C, *k2 = q2 + kh * kd, *b2 = k2 + kh * kd, *gg2 = b2 + vh;
        T_CK(kc_gdn_beta_g(dab, dab + vh, dp, dp + vh, b1, gg1, vh, 0));
        T_CK(kc_conv_step(dx, dh1, dw, y1, C, K, 0));
        T_CK(kc_l2norm(y1, q1, kh, kd, qs, 0));
        T_CK(kc_l2norm(y1 + kh * kd, k1, kh, kd, 1.0f, 0));
        T_CK(kc_gdn_prep(dx, dh2, dw, y2, C, K, kh, kd, qs, q2, k2, dab, dab + vh, dp, dp + vh, b2, gg2, vh, NULL,
                         NULL, NULL, 0, s % 3, 0));
        get_f(h1, o1, outn);
        get_f(h2, o2, outn);
        bad += n_unequal(h1, h2, outn);
    }
    {
        /* the variant that also computes the beta/alpha projections of xn (the dot=q8 engine's):
         * b, a vs the CPU matvec; conv/q/k bit-identical to the plain launch; beta/g bit-identical to
         * kc_gdn_beta_g on the b, a it produced */
        const int D = 5120;
        float *Wab = hnew((size_t)2 * vh * D), *xn = hnew(D), *rab = hnew(2 * vh), *gab = hnew(2 * vh);
        fill(Wab, (size_t)2 * vh * D, -0.05f, 0.05f);
        fill(xn, D, -2, 2);
        matvec(NULL, rab, Wab, GGML_TYPE_F32, xn, D, vh);
        matvec(NULL, rab + vh, Wab + (size_t)vh * D, GGML_TYPE_F32, xn, D, vh);
        float *dWab = dup_f(Wab, (size_t)2 * vh * D), *dxn = dup_f(xn, D), *dgab = (float *)dnew(2 * vh * 4);
        float *dh3 = dup_f(hist, nh), *dh4 = dup_f(hist, nh);
        fill(x, C, -2, 2);
        T_CK(cudaMemcpy(dx, x, C * 4, cudaMemcpyHostToDevice));
        float *y1 = o1, *q1 = o1 + C, *k1 = q1 + kh * kd, *b1 = k1 + kh * kd, *gg1 = b1 + vh;
        float *y2 = o2, *q2 = o2 + C, *k2 = q2 + kh * kd, *b2 = k2 + kh * kd, *gg2 = b2 + vh;
        poison(o1, outn * 4);
        poison(o2, outn * 4);
        T_CK(kc_gdn_prep(dx, dh3, dw, y2, C, K, kh, kd, qs, q2, k2, dgab, dgab + vh, dp, dp + vh, b2, gg2, vh, dxn,
                         dWab, dWab + (size_t)vh * D, D, 1, 0));
        get_f(gab, dgab, 2 * vh);
        T_CK(kc_gdn_prep(dx, dh4, dw, y1, C, K, kh, kd, qs, q1, k1, dgab, dgab + vh, dp, dp + vh, b1, gg1, vh, NULL,
                         NULL, NULL, 0, 0, 0));
        get_f(h1, o1, outn);
        get_f(h2, o2, outn);
        check_rel("gdn_prep beta/alpha projections (f32 48x5120 x2)", gab, rab, 2 * vh, 1e-5);
        ok(n_unequal(h1, h2, outn) == 0, "bitexact gdn_prep with in-kernel beta/alpha vs given b, a: %zu/%zu unequal",
           n_unequal(h1, h2, outn), outn);
        free(Wab); free(xn); free(rab); free(gab);
        cudaFree(dWab); cudaFree(dxn); cudaFree(dgab); cudaFree(dh3); cudaFree(dh4);
    }
    get_f(g1, dh1, nh);
    get_f(g2, dh2, nh);
    badh = n_unequal(g1, g2, nh);
    ok(bad == 0 && badh == 0,
       "bitexact gdn_prep (kh %d, kd %d, vh %d, vd %d; prep_early 0, 1, 2 in turn) vs beta_g + conv_step + 2 l2norm over %d steps: "
       "%zu/%zu outputs, %zu/%zu history unequal", kh, kd, vh, vd, steps, bad, outn * steps, badh, nh);
    free(w); free(hist); free(x); free(ab); free(p); free(h1); free(h2); free(g1); free(g2);
    cudaFree(dw); cudaFree(dh1); cudaFree(dh2); cudaFree(dab); cudaFree(dp); cudaFree(dx); cudaFree(o1);
    cudaFree(o2);
}

/* random attention inputs: q (H, hd) normed-scale, qg (H, 2*hd) [q | gate] with gate (H, hd) its gate
 * halves, kc, vc (kvn,) caches */
/* tm (2,) <- the tensor maps of a K and a V cache (ctx, Hkv, hd) (kc_kv_tmap) */
static void kv_tmap_pair(kc_tmap *tm, const float *kcache, const float *vcache, int ctx, int Hkv, int hd)
{
    T_CK(kc_kv_tmap(&tm[0], kcache, ctx, Hkv, hd));
    T_CK(kc_kv_tmap(&tm[1], vcache, ctx, Hkv, hd));
}

/* the attention-prep tests' inputs, in this order: qg (H, 2 hd) and the new k, v rows (Hkv, hd) in [-2, 2], the
 * q/k norm weights (hd,) in [0.5, 1.5], a cache (kvn,) in [-1, 1] */
static void kvc_fill(float *qg, float *k, float *v, float *qw, float *kw, float *cache, int H, int Hkv, int hd, size_t kvn)
{
    fill(qg, (size_t)H * 2 * hd, -2, 2);
    fill(k, (size_t)Hkv * hd, -2, 2);
    fill(v, (size_t)Hkv * hd, -2, 2);
    fill(qw, hd, 0.5f, 1.5f);
    fill(kw, hd, 0.5f, 1.5f);
    fill(cache, kvn, -1, 1);
}

static void attn_fill(float *q, float *qg, float *gate, float *kc, float *vc, int H, int hd, size_t kvn)
{
    fill(q, (size_t)H * hd, -0.3f, 0.3f);
    fill(qg, (size_t)H * 2 * hd, -3, 3);
    fill(kc, kvn, -1, 1);
    fill(vc, kvn, -1, 1);
    for (int h = 0; h < H; h++) memcpy(gate + (size_t)h * hd, qg + (size_t)h * 2 * hd + hd, hd * 4);
}

static void test_gdn_small(void)
{
    {
        const int vh = 48;
        float *b = hnew(vh), *a = hnew(vh), *sa = hnew(vh), *dt = hnew(vh);
        float *rb = hnew(vh), *rg = hnew(vh), *gb = hnew(vh), *gg = hnew(vh);
        fill(b, vh, -6, 6);
        fill(a, vh, -30, 30); /* crosses the softplus threshold both ways */
        fill(sa, vh, -8, -0.01f);
        fill(dt, vh, -2, 2);
        float *db = dup_f(b, vh), *da = dup_f(a, vh), *dsa = dup_f(sa, vh), *ddt = dup_f(dt, vh);
        float *dbeta = (float *)dnew(vh * 4), *dg = (float *)dnew(vh * 4);
        T_CK(kc_gdn_beta_g(db, da, dsa, ddt, dbeta, dg, vh, 0));
        get_f(gb, dbeta, vh);
        get_f(gg, dg, vh);
        gdn_beta_g(rb, rg, b, a, sa, dt, vh);
        check_rel("gdn_beta_g beta", gb, rb, vh, 1e-6);
        check_rel("gdn_beta_g g", gg, rg, vh, 1e-6);
        free(b); free(a); free(sa); free(dt); free(rb); free(rg); free(gb); free(gg);
        cudaFree(db); cudaFree(da); cudaFree(dsa); cudaFree(ddt); cudaFree(dbeta); cudaFree(dg);
    }
    {
        const int C = 10240, K = 4, steps = 5;
        const size_t nh = (size_t)(K - 1) * C;
        float *x = hnew(C), *w = hnew((size_t)C * K), *hist = hnew(nh), *ref = hnew(C), *got = hnew(C);
        float *ghist = hnew(nh);
        fill(w, (size_t)C * K, -1, 1);
        fill(hist, nh, -1, 1);
        float *dw = dup_f(w, (size_t)C * K), *dh = dup_f(hist, nh), *dx = (float *)dnew(C * 4),
              *dy = (float *)dnew(C * 4);
        double worst = 0;
        for (int s = 0; s < steps; s++) {
            fill(x, C, -2, 2);
            T_CK(cudaMemcpy(dx, x, C * 4, cudaMemcpyHostToDevice));
            poison(dy, C * 4);
            T_CK(kc_conv_step(dx, dh, dw, dy, C, K, 0));
            get_f(got, dy, C);
            conv_step(ref, hist, x, w, C, K);
            const double r = max_rel(got, ref, C);
            if (r > worst) worst = r;
        }
        get_f(ghist, dh, nh);
        ok(worst <= 1e-6, "conv_step 10240x4 vs CPU twin over %d steps: worst max_rel %.3e <= 1e-06", steps, worst);
        ok(n_unequal(ghist, hist, nh) == 0, "conv_step history advances like the CPU twin: %zu/%zu unequal",
           n_unequal(ghist, hist, nh), nh);
        free(x); free(w); free(hist); free(ref); free(got); free(ghist);
        cudaFree(dw); cudaFree(dh); cudaFree(dx); cudaFree(dy);
    }
    {
        const int nh = 24, hd = 256, rd = 64, pos = 1234;
        float *x = hnew(nh * hd), *got = hnew(nh * hd);
        int32_t *dpos;
        fill(x, nh * hd, -2, 2);
        float *dx = dup_f(x, nh * hd);
        T_CK(cudaMalloc(&dpos, 4));
        T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
        T_CK(kc_rope_neox(dx, nh, hd, rd, 1e7f, dpos, 0));
        get_f(got, dx, nh * hd);
        rope_neox(x, nh, hd, rd, pos, 1e7f);
        check_rel("rope_neox 24x256 rot 64 pos 1234", got, x, nh * hd, 2e-5);
        free(x); free(got);
        cudaFree(dx); cudaFree(dpos);
    }
    {
        const int H = 24, Hkv = 4, hd = 256, ctx = 64, npos = 37;
        const size_t kvn = (size_t)ctx * Hkv * hd;
        float *q = hnew(H * hd), *qg = hnew(H * 2 * hd), *gate = hnew(H * hd), *kc = hnew(kvn), *vc = hnew(kvn);
        float *ref = hnew(H * hd), *got = hnew(H * hd), *att = hnew(npos);
        int32_t pos = npos - 1, *dpos;
        attn_fill(q, qg, gate, kc, vc, H, hd, kvn);
        float *dq = dup_f(q, H * hd), *dqg = dup_f(qg, H * 2 * hd), *dk = dup_f(kc, kvn), *dv = dup_f(vc, kvn);
        float *dy = (float *)dnew(H * hd * 4);
        T_CK(cudaMalloc(&dpos, 4));
        T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
        T_CK(kc_attention_setup(ctx, hd));
        T_CK(kc_attention(dq, dk, dv, dqg + hd, 2 * hd, dy, H, Hkv, hd, ctx, 1.0f / 16.0f, dpos, 0));
        get_f(got, dy, H * hd);
        attention(ref, q, gate, kc, vc, H, Hkv, hd, npos, att);
        check_rel("attention GQA 24/4 heads x256 over 37 positions, gated", got, ref, H * hd, 1e-5);
        free(q); free(qg); free(gate); free(kc); free(vc); free(ref); free(got); free(att);
        cudaFree(dq); cudaFree(dqg); cudaFree(dk); cudaFree(dv); cudaFree(dy); cudaFree(dpos);
    }
    {
        /* attn_prep (one launch) vs rmsnorm x2 + rope x2 + kv_append: bit for bit */
        const int H = 24, Hkv = 4, hd = 256, rd = 64, ctx = 64;
        const size_t kvn = (size_t)ctx * Hkv * hd;
        const int32_t pos = 37;
        float *qg = hnew(H * 2 * hd), *k = hnew(Hkv * hd), *v = hnew(Hkv * hd), *qw = hnew(hd), *kw = hnew(hd);
        fill(qg, H * 2 * hd, -2, 2);
        fill(k, Hkv * hd, -2, 2);
        fill(v, Hkv * hd, -2, 2);
        fill(qw, hd, 0.5f, 1.5f);
        fill(kw, hd, 0.5f, 1.5f);
        float *dqg = dup_f(qg, H * 2 * hd), *dk1 = dup_f(k, Hkv * hd), *dk2 = dup_f(k, Hkv * hd), *dv = dup_f(v, Hkv * hd);
        float *dqw = dup_f(qw, hd), *dkw = dup_f(kw, hd), *daq1 = (float *)dnew(H * hd * 4), *daq2 = (float *)dnew(H * hd * 4);
        float *dkc1 = (float *)dnew(kvn * 4), *dvc1 = (float *)dnew(kvn * 4), *dkc2 = (float *)dnew(kvn * 4),
              *dvc2 = (float *)dnew(kvn * 4);
        int32_t *dpos;
        T_CK(cudaMalloc(&dpos, 4));
        T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
        T_CK(kc_rmsnorm(dqg, 2 * hd, dqw, daq1, hd, H, hd, 1e-6f, 0));
        T_CK(kc_rmsnorm(dk1, hd, dkw, dk1, hd, Hkv, hd, 1e-6f, 0));
        T_CK(kc_rope_neox(daq1, H, hd, rd, 1e7f, dpos, 0));
        T_CK(kc_rope_neox(dk1, Hkv, hd, rd, 1e7f, dpos, 0));
        T_CK(kc_kv_append(dk1, dv, dkc1, dvc1, Hkv, hd, dpos, 0));
        float *a1 = hnew(kvn), *a2 = hnew(kvn);
        size_t bad = 0;
        for (int early = 0; early <= 1; early++) { /* option attn_early: both forms against the five launches */
            T_CK(cudaMemcpy(dk2, k, (size_t)Hkv * hd * 4, cudaMemcpyHostToDevice)); /* ak is normed in place */
            poison(daq2, (size_t)H * hd * 4);
            poison(dkc2, kvn * 4);
            poison(dvc2, kvn * 4);
            T_CK(kc_attn_prep(dqg, dk2, dv, dqw, dkw, daq2, dkc2, dvc2, H, Hkv, hd, rd, 1e7f, 1e-6f, dpos, early, 0));
            get_f(a1, daq1, H * hd); get_f(a2, daq2, H * hd); bad += n_unequal(a1, a2, H * hd);
            get_f(a1, dk1, Hkv * hd); get_f(a2, dk2, Hkv * hd); bad += n_unequal(a1, a2, Hkv * hd);
            get_f(a1, dkc1 + (size_t)pos * Hkv * hd, Hkv * hd); get_f(a2, dkc2 + (size_t)pos * Hkv * hd, Hkv * hd);
            bad += n_unequal(a1, a2, Hkv * hd);
            get_f(a1, dvc1 + (size_t)pos * Hkv * hd, Hkv * hd); get_f(a2, dvc2 + (size_t)pos * Hkv * hd, Hkv * hd);
            bad += n_unequal(a1, a2, Hkv * hd);
        }
        ok(bad == 0, "bitexact attn_prep (24 q + 4 k heads x256, rope 64, pos 37; attn_early 0 and 1) vs 5 launches: "
           "%zu unequal", bad);
        free(qg); free(k); free(v); free(qw); free(kw); free(a1); free(a2);
        cudaFree(dqg); cudaFree(dk1); cudaFree(dk2); cudaFree(dv); cudaFree(dqw); cudaFree(dkw); cudaFree(daq1);
        cudaFree(daq2); cudaFree(dkc1); cudaFree(dvc1); cudaFree(dkc2); cudaFree(dvc2); cudaFree(dpos);
    }
    /* attention_short_prep and attention_short_cl_prep (option attn_fuse) vs attn_prep + attention_short(_cl):
     * out, its q8 blocks and both caches bit for bit; the one-block form at the first position, inside a warp
     * round and at the last short position, the clustered one (4 and 3 blocks per head) at 36, 200 and 700;
     * 27B/9B heads (24/4 x256, rope 64) and a 128-wide shape (16/2, full rope) */
    {
        const int shp[2][4] = {{24, 4, 256, 64}, {16, 2, 128, 128}}, posl[3][3] = {{0, 36, 127}, {36, 200, 700}, {36, 200, 700}};
        const int ctx = 768;
        size_t bad = 0, runs = 0;
        for (int si = 0; si < 2; si++) {
            const int H = shp[si][0], Hkv = shp[si][1], hd = shp[si][2], rd = shp[si][3];
            const size_t kvn = (size_t)ctx * Hkv * hd;
            float *qg = hnew(H * 2 * hd), *k = hnew(Hkv * hd), *v = hnew(Hkv * hd), *qw = hnew(hd), *kw = hnew(hd);
            float *cache = hnew(kvn);
            kvc_fill(qg, k, v, qw, kw, cache, H, Hkv, hd, kvn);
            float *dqg = dup_f(qg, H * 2 * hd), *dk = dup_f(k, Hkv * hd), *dk0 = dup_f(k, Hkv * hd), *dv = dup_f(v, Hkv * hd);
            float *dqw = dup_f(qw, hd), *dkw = dup_f(kw, hd), *daq = (float *)dnew(H * hd * 4);
            float *dkc1 = dup_f(cache, kvn), *dvc1 = dup_f(cache, kvn), *dkc2 = dup_f(cache, kvn), *dvc2 = dup_f(cache, kvn);
            float *dy1 = (float *)dnew(H * hd * 4), *dy2 = (float *)dnew(H * hd * 4);
            kc_q8blk *dq1 = (kc_q8blk *)dnew(H * hd / 32 * sizeof(kc_q8blk)), *dq2 = (kc_q8blk *)dnew(H * hd / 32 * sizeof(kc_q8blk));
            float *a1 = hnew(kvn), *a2 = hnew(kvn);
            int32_t *dpos;
            T_CK(cudaMalloc(&dpos, 4));
            const float scale = 1.0f / sqrtf((float)hd);
            for (int pk = 0; pk < 9; pk++) {
                const int kind = pk / 3, csize = kind == 1 ? 4 : 3; /* 0 one block, 1-2 clusters */
                const int32_t pos = posl[kind][pk % 3];
                T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
                T_CK(cudaMemcpy(dk, k, (size_t)Hkv * hd * 4, cudaMemcpyHostToDevice)); /* attn_prep norms ak in place */
                T_CK(kc_attn_prep(dqg, dk, dv, dqw, dkw, daq, dkc1, dvc1, H, Hkv, hd, rd, 1e7f, 1e-6f, dpos, 1, 0));
                if (kind)
                    T_CK(kc_attention_short_cl(daq, dkc1, dvc1, dqg + hd, 2 * hd, dy1, dq1, H, Hkv, hd, csize, scale, dpos, 0, 0));
                else
                    T_CK(kc_attention_short(daq, dkc1, dvc1, dqg + hd, 2 * hd, dy1, dq1, H, Hkv, hd, scale, dpos, 0));
                poison(dy2, H * hd * 4);
                poison(dq2, H * hd / 32 * sizeof(kc_q8blk));
                if (kind)
                    T_CK(kc_attention_short_cl_prep(dqg, dk0, dv, dqw, dkw, dkc2, dvc2, dy2, dq2, H, Hkv, hd, csize, rd,
                                                    1e7f, 1e-6f, scale, dpos, 0, 0));
                else
                    T_CK(kc_attention_short_prep(dqg, dk0, dv, dqw, dkw, dkc2, dvc2, dy2, dq2, H, Hkv, hd, rd, 1e7f,
                                                 1e-6f, scale, dpos, 0));
                get_f(a1, dy1, H * hd); get_f(a2, dy2, H * hd); bad += n_unequal(a1, a2, H * hd);
                bad += q8_differ(dq1, dq2, H * hd / 32);
                get_f(a1, dkc1, kvn); get_f(a2, dkc2, kvn); bad += n_unequal(a1, a2, kvn);
                get_f(a1, dvc1, kvn); get_f(a2, dvc2, kvn); bad += n_unequal(a1, a2, kvn);
                get_f(a1, dk0, Hkv * hd); bad += n_unequal(a1, k, Hkv * hd); /* its k input left as it was */
                runs++;
            }
            free(qg); free(k); free(v); free(qw); free(kw); free(cache); free(a1); free(a2);
            cudaFree(dqg); cudaFree(dk); cudaFree(dk0); cudaFree(dv); cudaFree(dqw); cudaFree(dkw); cudaFree(daq);
            cudaFree(dkc1); cudaFree(dvc1); cudaFree(dkc2); cudaFree(dvc2); cudaFree(dy1); cudaFree(dy2);
            cudaFree(dq1); cudaFree(dq2); cudaFree(dpos);
        }
        ok(bad == 0 && runs == 18,
           "bitexact attention_short_prep and attention_short_cl_prep (attn_fuse; 24/4 x256 rope 64 and 16/2 x128 rope "
           "128; one block at positions 0, 36, 127, clusters of 4 and 3 at 36, 200, 700) vs attn_prep + "
           "attention_short(_cl): %zu unequal (out, q8 out, k and v caches, k input untouched) over %zu runs",
           bad, runs);
        const int r512 = kc_attention_short_prep_ok(8, 2, 512, 64), rodd = kc_attention_short_prep_ok(8, 2, 256, 63),
                  rbig = kc_attention_short_prep_ok(8, 2, 128, 256);
        const cudaError_t c9 = kc_attention_short_cl_prep(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 8, 2, 256,
                                                          9, 64, 1e7f, 1e-6f, 1.0f, NULL, 0, 0);
        ok(!r512 && !rodd && !rbig && kc_attention_short_prep_ok(24, 4, 256, 64) &&
               kc_attention_short_prep(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 8, 2, 512, 64, 1e7f, 1e-6f,
                                       1.0f, NULL, 0) == cudaErrorInvalidValue &&
               c9 == cudaErrorInvalidValue,
           "attention_short_prep refuses hd 512 (%d), an odd rope width (%d), rope wider than the head (%d); takes 24/4 "
           "x256 rope 64; refuses by cudaErrorInvalidValue (and the clustered form a cluster of 9: %d)", r512, rodd,
           rbig, (int)c9);
    }
    /* attention_kvc with attn_prep inside (attn_kvc with attn_fuse bit 2) vs attn_prep + attention_kvc: out
     * within 1e-5 (its q/k norms sum in another order than attn_prep's block_sum), the appended k and v rows
     * within 1e-5, every other cache row untouched, its q8 output equal to quantize_q8 of its out; 27B and 9B
     * heads (24/4 and 16/4 x256, rope 64), clusters of 16, 8 and 3 at positions 0, 36, 200 and 700 (the cluster's
     * later blocks empty at 0 and 36); attention_kvct (attn_kvc_tm: the ring filled by tensor copies) bit for bit
     * against attention_kvc in both forms, its caches too; then the shapes and sizes it refuses */
    {
        const int shp[2][2] = {{24, 4}, {16, 4}}, csz[3] = {16, 8, 3}, posl[4] = {0, 36, 200, 700};
        const int ctx = 768, hd = 256, rd = 64;
        size_t bad = 0, runs = 0, badtm = 0;
        double worst = 0;
        for (int si = 0; si < 2; si++) {
            const int H = shp[si][0], Hkv = shp[si][1];
            const size_t kvn = (size_t)ctx * Hkv * hd;
            float *qg = hnew(H * 2 * hd), *k = hnew(Hkv * hd), *v = hnew(Hkv * hd), *qw = hnew(hd), *kw = hnew(hd);
            float *cache = hnew(kvn), *a1 = hnew(kvn), *a2 = hnew(kvn);
            q8_block *rq = (q8_block *)malloc(H * hd / 32 * sizeof *rq);
            kvc_fill(qg, k, v, qw, kw, cache, H, Hkv, hd, kvn);
            float *dqg = dup_f(qg, H * 2 * hd), *dk = dup_f(k, Hkv * hd), *dk0 = dup_f(k, Hkv * hd), *dv = dup_f(v, Hkv * hd);
            float *dqw = dup_f(qw, hd), *dkw = dup_f(kw, hd), *daq = (float *)dnew(H * hd * 4);
            float *dkc1 = dup_f(cache, kvn), *dvc1 = dup_f(cache, kvn), *dkc2 = dup_f(cache, kvn), *dvc2 = dup_f(cache, kvn);
            float *dy1 = (float *)dnew(H * hd * 4), *dy2 = (float *)dnew(H * hd * 4), *dy3 = (float *)dnew(H * hd * 4);
            float *dkc3 = dup_f(cache, kvn), *dvc3 = dup_f(cache, kvn), *a3 = hnew(kvn);
            kc_q8blk *dq2 = (kc_q8blk *)dnew(H * hd / 32 * sizeof(kc_q8blk));
            kc_tmap tm1[2], tm3[2]; /* the tensor maps of caches 1 (after attn_prep) and 3 (attention_kvct appends) */
            kv_tmap_pair(tm1, dkc1, dvc1, ctx, Hkv, hd);
            kv_tmap_pair(tm3, dkc3, dvc3, ctx, Hkv, hd);
            int32_t *dpos;
            T_CK(cudaMalloc(&dpos, 4));
            T_CK(kc_attention_setup(ctx, hd));
            const float scale = 1.0f / sqrtf((float)hd);
            for (int ci = 0; ci < 3; ci++)
                for (int pi = 0; pi < 4; pi++) {
                    const int32_t pos = posl[pi];
                    T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
                    T_CK(cudaMemcpy(dk, k, (size_t)Hkv * hd * 4, cudaMemcpyHostToDevice)); /* attn_prep norms ak in place */
                    T_CK(cudaMemcpy(dkc1, cache, kvn * 4, cudaMemcpyHostToDevice)); /* both caches as given: no row */
                    T_CK(cudaMemcpy(dvc1, cache, kvn * 4, cudaMemcpyHostToDevice)); /* of an earlier run in either */
                    T_CK(kc_attn_prep(dqg, dk, dv, dqw, dkw, daq, dkc1, dvc1, H, Hkv, hd, rd, 1e7f, 1e-6f, dpos, 1, 0));
                    T_CK(kc_attention_kvc(daq, NULL, NULL, NULL, NULL, dkc1, dvc1, dqg + hd, 2 * hd, dy1, NULL, H, Hkv, hd,
                                          csz[ci], ctx, rd, 1e7f, 1e-6f, scale, dpos, NULL, 0, 0));
                    poison(dy3, H * hd * 4);
                    T_CK(kc_attention_kvc(daq, NULL, NULL, NULL, NULL, dkc1, dvc1, dqg + hd, 2 * hd, dy3, NULL, H, Hkv, hd,
                                          csz[ci], ctx, rd, 1e7f, 1e-6f, scale, dpos, tm1, 0, 0));
                    get_f(a1, dy1, H * hd); get_f(a2, dy3, H * hd);
                    badtm += n_unequal(a2, a1, (size_t)H * hd);
                    poison(dy2, H * hd * 4);
                    poison(dq2, H * hd / 32 * sizeof(kc_q8blk));
                    T_CK(kc_attention_kvc(dqg, dk0, dv, dqw, dkw, dkc2, dvc2, dqg + hd, 2 * hd, dy2, dq2, H, Hkv, hd,
                                          csz[ci], ctx, rd, 1e7f, 1e-6f, scale, dpos, NULL, 0, 0));
                    poison(dy3, H * hd * 4);
                    T_CK(kc_attention_kvc(dqg, dk0, dv, dqw, dkw, dkc3, dvc3, dqg + hd, 2 * hd, dy3, NULL, H, Hkv, hd,
                                          csz[ci], ctx, rd, 1e7f, 1e-6f, scale, dpos, tm3, 0, 0));
                    get_f(a1, dy2, H * hd); get_f(a2, dy3, H * hd);
                    badtm += n_unequal(a2, a1, (size_t)H * hd);
                    get_f(a1, dkc2, kvn); get_f(a3, dkc3, kvn); badtm += n_unequal(a3, a1, kvn);
                    get_f(a1, dvc2, kvn); get_f(a3, dvc3, kvn); badtm += n_unequal(a3, a1, kvn);
                    T_CK(cudaMemcpy(dkc3, cache, kvn * 4, cudaMemcpyHostToDevice));
                    T_CK(cudaMemcpy(dvc3, cache, kvn * 4, cudaMemcpyHostToDevice));
                    get_f(a1, dy1, H * hd); get_f(a2, dy2, H * hd);
                    double r = max_rel(a2, a1, H * hd);
                    worst = r > worst ? r : worst;
                    kc_q8blk *gq = get_q8(dq2, H * hd / 32);
                    quantize_q8(rq, a2, H * hd);
                    bad += n_unequal_blocks(gq, rq, H * hd / 32);
                    free(gq);
                    const size_t row = (size_t)pos * Hkv * hd;
                    get_f(a1, dkc1, kvn); get_f(a2, dkc2, kvn);
                    r = max_rel(a2 + row, a1 + row, (size_t)Hkv * hd);
                    worst = r > worst ? r : worst;
                    bad += n_unequal(a2, cache, row) + n_unequal(a2 + row + Hkv * hd, cache + row + Hkv * hd, kvn - row - Hkv * hd);
                    get_f(a2, dvc2, kvn);
                    bad += n_unequal(a2, cache, row) + n_unequal(a2 + row, v, (size_t)Hkv * hd) +
                           n_unequal(a2 + row + Hkv * hd, cache + row + Hkv * hd, kvn - row - Hkv * hd);
                    T_CK(cudaMemcpy(dkc2, cache, kvn * 4, cudaMemcpyHostToDevice)); /* the next run's untouched rows */
                    T_CK(cudaMemcpy(dvc2, cache, kvn * 4, cudaMemcpyHostToDevice));
                    get_f(a1, dk0, Hkv * hd); bad += n_unequal(a1, k, Hkv * hd); /* its k input left as it was */
                    runs++;
                }
            free(qg); free(k); free(v); free(qw); free(kw); free(cache); free(a1); free(a2); free(a3); free(rq);
            cudaFree(dqg); cudaFree(dk); cudaFree(dk0); cudaFree(dv); cudaFree(dqw); cudaFree(dkw); cudaFree(daq);
            cudaFree(dkc1); cudaFree(dvc1); cudaFree(dkc2); cudaFree(dvc2); cudaFree(dy1); cudaFree(dy2);
            cudaFree(dy3); cudaFree(dkc3); cudaFree(dvc3); cudaFree(dq2); cudaFree(dpos);
        }
        ok(badtm == 0 && runs == 24,
           "attention_kvct (attn_kvc_tm: each ring slot one tensor copy) vs attention_kvc, with attn_prep inside and "
           "without (24/4 and 16/4 x256; clusters of 16, 8, 3 at positions 0, 36, 200, 700): %zu values unequal "
           "(out, both caches) over %zu runs", badtm, runs);
        {
            kc_tmap tm;
            float *dc = (float *)dnew(768 * 4 * 256 * 4);
            const cudaError_t t128 = kc_kv_tmap(&tm, dc, 768, 4, 128), t0 = kc_kv_tmap(&tm, dc, 0, 4, 256),
                              tn = kc_kv_tmap(&tm, NULL, 768, 4, 256), tmis = kc_kv_tmap(&tm, dc + 1, 768, 4, 256);
            ok(t128 == cudaErrorInvalidValue && t0 == cudaErrorInvalidValue && tn == cudaErrorInvalidValue &&
                   tmis == cudaErrorInvalidValue && kc_kv_tmap(&tm, dc, 768, 4, 256) == cudaSuccess,
               "kc_kv_tmap refuses hd 128, ctx 0, no cache and a misaligned one by cudaErrorInvalidValue; takes "
               "768 x 4 x 256");
            cudaFree(dc);
        }
        ok(bad == 0 && runs == 24 && worst <= 1e-5,
           "attention_kvc with attn_prep inside vs attn_prep + attention_kvc (24/4 and 16/4 x256 rope 64; clusters of "
           "16, 8, 3 at positions 0, 36, 200, 700): out and the appended k row max_rel %.3e <= 1e-05; %zu unequal (q8 "
           "out vs quantize_q8, v row, untouched cache rows, k input) over %zu runs", worst, bad, runs);
        const int k_hd128 = kc_attention_kvc_ok(16, 2, 128, 8, 512), k_g3 = kc_attention_kvc_ok(12, 4, 256, 8, 512),
                  k_g16 = kc_attention_kvc_ok(32, 2, 256, 8, 512), k_c17 = kc_attention_kvc_ok(24, 4, 256, 17, 512),
                  k_c1 = kc_attention_kvc_ok(24, 4, 256, 1, 512), k_long = kc_attention_kvc_ok(24, 4, 256, 8, 8193),
                  k_nkv = kc_attention_kvc_ok(8, 0, 256, 8, 512);
        ok(!k_hd128 && !k_g3 && !k_g16 && !k_c17 && !k_c1 && !k_long && !k_nkv &&
               kc_attention_kvc_ok(24, 4, 256, 8, 8192) && kc_attention_kvc_ok(16, 8, 256, 16, 16384) &&
               kc_attention_kvc(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, 12, 4, 256, 8, 512, 64,
                                1e7f, 1e-6f, 1.0f, NULL, NULL, 0, 0) == cudaErrorInvalidValue &&
               kc_attention_kvc(NULL, (const float *)8, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, 24, 4, 256, 8,
                                512, 63, 1e7f, 1e-6f, 1.0f, NULL, NULL, 0, 0) == cudaErrorInvalidValue,
           "attention_kvc refuses hd 128 (%d), 3 (%d) and 16 (%d) q heads per kv head, clusters of 17 (%d) and 1 (%d), "
           "more than 1024 positions per block (%d), nkv 0 (%d); takes 24/4 x256 to 8192 by 8 and 16/8 to 16384 by 16; "
           "refuses by cudaErrorInvalidValue (a shape; an odd rope width with attn_prep inside)",
           k_hd128, k_g3, k_g16, k_c17, k_c1, k_long, k_nkv);
        const int mx[5] = {kc_attention_kvc_max(16), kc_attention_kvc_max(3), kc_attention_kvc_max(2),
                           kc_attention_kvc_max(1), kc_attention_kvc_max(17)};
        ok(mx[0] == 16384 && mx[1] == 3072 && mx[2] == 2048 && mx[3] == 0 && mx[4] == 0 &&
               kc_attention_kvc_ok(24, 4, 256, 3, mx[1]) && !kc_attention_kvc_ok(24, 4, 256, 3, mx[1] + 1),
           "kc_attention_kvc_max: clusters of 16, 3, 2 hold %d, %d, %d positions (16384, 3072, 2048: kc_attention_kvc_ok "
           "takes 3072 by 3, not 3073), 1 and 17 blocks %d, %d (0: refused)", mx[0], mx[1], mx[2], mx[3], mx[4]);
    }
    {
        const int n = 248320;
        float *x = hnew(n);
        int32_t got = -1, *dout;
        fill(x, n, -5, 5);
        x[1000] = 9.0f;
        x[200000] = 9.0f; /* tie: the lowest id wins */
        float *dx = dup_f(x, n);
        T_CK(cudaMalloc(&dout, 4));
        T_CK(kc_argmax(dx, n, dout, NULL, NULL, 0));
        T_CK(cudaDeviceSynchronize());
        T_CK(cudaMemcpy(&got, dout, 4, cudaMemcpyDeviceToHost));
        ok(got == 1000, "argmax over 248320 with a tie: expected 1000, got %d", got);
        /* the multi-block reduction (the engine's): same answers, twice in a row (the ticket re-arms),
         * NaNs never win, -0 ties +0, all-NaN gives 0, a short vector takes one block */
        kc_argmax_scratch *scr;
        T_CK(cudaMalloc(&scr, sizeof *scr));
        T_CK(cudaMemset(scr, 0, sizeof *scr));
        int32_t g2[6];
        T_CK(kc_argmax(dx, n, dout, NULL, scr, 0));
        T_CK(cudaMemcpy(&g2[0], dout, 4, cudaMemcpyDeviceToHost));
        x[7] = NAN;
        x[250] = INFINITY;
        x[240000] = INFINITY;
        T_CK(cudaMemcpy(dx, x, (size_t)n * 4, cudaMemcpyHostToDevice));
        T_CK(kc_argmax(dx, n, dout, NULL, scr, 0));
        T_CK(cudaMemcpy(&g2[1], dout, 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) x[i] = i % 2 ? -1.0f : -2.0f;
        x[3] = -0.0f; /* the maximum 0 at 3 (-0), 5 (-0) and 9 (+0): the lowest id */
        x[5] = -0.0f;
        x[9] = 0.0f;
        T_CK(cudaMemcpy(dx, x, (size_t)n * 4, cudaMemcpyHostToDevice));
        T_CK(kc_argmax(dx, n, dout, NULL, scr, 0));
        T_CK(cudaMemcpy(&g2[2], dout, 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) x[i] = NAN;
        T_CK(cudaMemcpy(dx, x, (size_t)n * 4, cudaMemcpyHostToDevice));
        T_CK(kc_argmax(dx, n, dout, NULL, scr, 0));
        T_CK(cudaMemcpy(&g2[3], dout, 4, cudaMemcpyDeviceToHost));
        T_CK(kc_argmax(dx, n, dout, NULL, NULL, 0));
        T_CK(cudaMemcpy(&g2[4], dout, 4, cudaMemcpyDeviceToHost));
        x[100] = 1.0f;
        T_CK(cudaMemcpy(dx, x, (size_t)n * 4, cudaMemcpyHostToDevice));
        T_CK(kc_argmax(dx, 300, dout, NULL, scr, 0));
        T_CK(cudaMemcpy(&g2[5], dout, 4, cudaMemcpyDeviceToHost));
        ok(g2[0] == 1000 && g2[1] == 250 && g2[2] == 3 && g2[3] == 0 && g2[4] == 0 && g2[5] == 100,
           "multi-block argmax: tie %d (1000), NaN+inf tie %d (250), -0 vs +0 %d (3), all NaN %d and one block %d "
           "(0), n=300 %d (100)", g2[0], g2[1], g2[2], g2[3], g2[4], g2[5]);
        cudaFree(scr);
        free(x);
        cudaFree(dx); cudaFree(dout);
    }
}

/* delta_step: both variants vs the CPU twin, and register-resident vs generic bit-exact */
static void test_delta(int kh, int vh, int kd, int vd, int steps)
{
    const size_t nS = (size_t)vh * kd * vd, nq = (size_t)kh * kd, nv = (size_t)vh * vd;
    const int reg = kd == 128 && vd == 128;
    float *S = hnew(nS), *q = hnew(nq), *k = hnew(nq), *v = hnew(nv), *g = hnew(vh), *beta = hnew(vh);
    float *o = hnew(nv), *go = hnew(nv), *gS = hnew(nS), *ro = hnew(nv), *rS = hnew(nS);
    fill(S, nS, -0.5f, 0.5f);
    float *dS0 = dup_f(S, nS), *dS1 = dup_f(S, nS);
    float *dq = (float *)dnew(nq * 4), *dk = (float *)dnew(nq * 4), *dv = (float *)dnew(nv * 4);
    float *dg = (float *)dnew(vh * 4), *db = (float *)dnew(vh * 4);
    float *do0 = (float *)dnew(nv * 4), *do1 = (float *)dnew(nv * 4);
    double worst_o = 0;
    size_t uneq_o = 0, uneq_f = 0;
    /* the fused delta + gated norm + quantisation runs on a third copy of S beside the reg variant +
     * kc_gated_rmsnorm_q8, bit for bit */
    float *dS2 = dup_f(S, nS), *do2 = (float *)dnew(nv * 4), *dz = (float *)dnew(nv * 4), *dw = (float *)dnew(vd * 4);
    /* and the same with S prefetched into L2 before the PDL wait (delta_pf) on a fourth copy */
    float *dS3 = dup_f(S, nS), *do3 = (float *)dnew(nv * 4), *dy3 = (float *)dnew(nv * 4);
    kc_q8blk *dq3 = (kc_q8blk *)dnew(nv / 32 * sizeof(kc_q8blk));
    size_t uneq_p = 0, uneq_t = 0;
    float *dS4 = dup_f(S, nS), *do4 = (float *)dnew(nv * 4), *dy4 = (float *)dnew(nv * 4);
    kc_q8blk *dq4 = (kc_q8blk *)dnew(nv / 32 * sizeof(kc_q8blk));
    float *dy1 = (float *)dnew(nv * 4), *dy2 = (float *)dnew(nv * 4), *hz = hnew(nv), *hw = hnew(vd);
    kc_q8blk *dq1 = (kc_q8blk *)dnew(nv / 32 * sizeof(kc_q8blk)), *dq2 = (kc_q8blk *)dnew(nv / 32 * sizeof(kc_q8blk));
    float *fo = hnew(nv), *y1 = hnew(nv), *y2 = hnew(nv);
    kc_q8blk *q1 = (kc_q8blk *)malloc(nv / 32 * sizeof(kc_q8blk)), *q2 = (kc_q8blk *)malloc(nv / 32 * sizeof(kc_q8blk));
    fill(hw, vd, 0.5f, 1.5f);
    T_CK(cudaMemcpy(dw, hw, vd * 4, cudaMemcpyHostToDevice));
    for (int s = 0; s < steps; s++) {
        fill(q, nq, -1, 1);
        fill(k, nq, -1, 1);
        for (int h = 0; h < kh; h++) { /* normed like the engine feeds it */
            l2norm(q + h * kd, q + h * kd, kd);
            l2norm(k + h * kd, k + h * kd, kd);
        }
        fill(v, nv, -2, 2);
        fill(g, vh, -2, -0.01f);
        fill(beta, vh, 0.05f, 0.95f);
        T_CK(cudaMemcpy(dq, q, nq * 4, cudaMemcpyHostToDevice));
        T_CK(cudaMemcpy(dk, k, nq * 4, cudaMemcpyHostToDevice));
        T_CK(cudaMemcpy(dv, v, nv * 4, cudaMemcpyHostToDevice));
        T_CK(cudaMemcpy(dg, g, vh * 4, cudaMemcpyHostToDevice));
        T_CK(cudaMemcpy(db, beta, vh * 4, cudaMemcpyHostToDevice));
        poison(do0, nv * 4);
        poison(do1, nv * 4);
        T_CK(kc_delta_step(dS0, dq, dk, dv, dg, db, do0, kh, kd, vh, vd, 0, 0));
        if (reg) T_CK(kc_delta_step(dS1, dq, dk, dv, dg, db, do1, kh, kd, vh, vd, 1, 0));
        get_f(go, do0, nv);
        delta_step(S, o, q, k, v, g, beta, kh, vh, kd, vd);
        const double r = max_rel(go, o, nv);
        if (r > worst_o) worst_o = r;
        if (reg) {
            get_f(ro, do1, nv);
            uneq_o += n_unequal(ro, go, nv);
            fill(hz, nv, -3, 3);
            T_CK(cudaMemcpy(dz, hz, nv * 4, cudaMemcpyHostToDevice));
            T_CK(kc_gated_rmsnorm_q8(do1, dz, dw, dy1, dq1, vh, vd, 1e-6f, 0));
            T_CK(kc_delta_step_norm_q8(dS2, dq, dk, dv, dg, db, do2, dz, dw, 1e-6f, dy2, dq2, kh, kd, vh, vd, 0));
            get_f(fo, do2, nv);
            get_f(y1, dy1, nv);
            get_f(y2, dy2, nv);
            T_CK(cudaMemcpy(q1, dq1, nv / 32 * sizeof(kc_q8blk), cudaMemcpyDeviceToHost));
            T_CK(cudaMemcpy(q2, dq2, nv / 32 * sizeof(kc_q8blk), cudaMemcpyDeviceToHost));
            uneq_f += n_unequal(fo, ro, nv) + n_unequal(y1, y2, nv) + (memcmp(q1, q2, nv / 32 * sizeof(kc_q8blk)) != 0);
            T_CK(kc_delta_step_norm_q8_pf(dS3, dq, dk, dv, dg, db, do3, dz, dw, 1e-6f, dy3, dq3, kh, kd, vh, vd, 0));
            get_f(y1, do3, nv); /* y1, q1 reused: already compared */
            uneq_p += n_unequal(y1, fo, nv);
            get_f(y1, dy3, nv);
            uneq_p += n_unequal(y1, y2, nv);
            T_CK(cudaMemcpy(q1, dq3, nv / 32 * sizeof(kc_q8blk), cudaMemcpyDeviceToHost));
            uneq_p += memcmp(q1, q2, nv / 32 * sizeof(kc_q8blk)) != 0;
            /* delta_trig 1, 2 and 3 in turn, on a fifth copy of S */
            poison(dy4, nv * 4);
            T_CK(kc_delta_step_norm_q8_trig(dS4, dq, dk, dv, dg, db, do4, dz, dw, 1e-6f, dy4, dq4, kh, kd, vh, vd,
                                            1 + s % 3, s / 3 % 2, 0));
            get_f(y1, do4, nv);
            uneq_t += n_unequal(y1, fo, nv);
            get_f(y1, dy4, nv);
            uneq_t += n_unequal(y1, y2, nv);
            T_CK(cudaMemcpy(q1, dq4, nv / 32 * sizeof(kc_q8blk), cudaMemcpyDeviceToHost));
            uneq_t += memcmp(q1, q2, nv / 32 * sizeof(kc_q8blk)) != 0;
        }
    }
    get_f(gS, dS0, nS);
    ok(worst_o <= 1e-5, "delta_step generic kh=%d vh=%d kd=%d vd=%d vs CPU twin, %d steps: worst o max_rel %.3e <= 1e-05",
       kh, vh, kd, vd, steps, worst_o);
    const double rs = max_rel(gS, S, nS);
    ok(rs <= 1e-5, "delta_step generic final S vs CPU twin: max_rel %.3e <= 1e-05", rs);
    if (reg) {
        get_f(rS, dS1, nS);
        ok(uneq_o == 0 && n_unequal(rS, gS, nS) == 0,
           "bitexact delta_step register-resident vs generic over %d steps: o %zu/%zu, S %zu/%zu unequal", steps,
           uneq_o, nv * steps, n_unequal(rS, gS, nS), nS);
        float *fS = hnew(nS);
        get_f(fS, dS2, nS);
        ok(uneq_f == 0 && n_unequal(fS, rS, nS) == 0,
           "bitexact delta_step_norm_q8 (one launch) vs delta_step_reg + gated_rmsnorm_q8 over %d steps: o/y/yq %zu, "
           "S %zu/%zu unequal", steps, uneq_f, n_unequal(fS, rS, nS), nS);
        float *pS = hnew(nS);
        get_f(pS, dS3, nS);
        ok(uneq_p == 0 && n_unequal(pS, fS, nS) == 0,
           "bitexact delta_step_norm_q8_pf (S prefetched before the wait) vs delta_step_norm_q8 over %d steps: o/y/yq "
           "%zu, S %zu/%zu unequal", steps, uneq_p, n_unequal(pS, fS, nS), nS);
        get_f(pS, dS4, nS);
        ok(uneq_t == 0 && n_unequal(pS, fS, nS) == 0,
           "bitexact delta_step_norm_q8_trig (the next launch after the loads are issued, after the columns, after the loads returned; with and without the state's L2 prefetch) vs delta_step_norm_q8 "
           "over %d steps: o/y/yq %zu, S %zu/%zu unequal", steps, uneq_t, n_unequal(pS, fS, nS), nS);
        free(pS);
        free(fS);
    }
    free(fo); free(y1); free(y2); free(q1); free(q2); free(hz); free(hw);
    cudaFree(dS2); cudaFree(do2); cudaFree(dz); cudaFree(dw); cudaFree(dy1); cudaFree(dy2); cudaFree(dq1); cudaFree(dq2);
    cudaFree(dS3); cudaFree(do3); cudaFree(dy3); cudaFree(dq3);
    cudaFree(dS4); cudaFree(do4); cudaFree(dy4); cudaFree(dq4);
    free(S); free(q); free(k); free(v); free(g); free(beta); free(o); free(go); free(gS); free(ro); free(rS);
    cudaFree(dS0); cudaFree(dS1); cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dg); cudaFree(db);
    cudaFree(do0); cudaFree(do1);
}

/* ------------------------------------------------------------------ engine level */

static const kestrel_engine_api *api(void) { return kestrel_engine_entry(KESTREL_ENGINE_ABI_VERSION); }

static kestrel_engine *eopen(const char *file, const char *opts)
{
    char path[1024], err[1024];
    kestrel_engine *e = NULL;
    snprintf(path, sizeof path, "%s/%s", g_fix, file);
    if (api()->open(path, opts, &e, err, sizeof err)) {
        ok(0, "open %s (%s): %s", file, opts, err);
        return NULL;
    }
    return e;
}

static const int32_t k_toks[] = {11, 7, 200, 3, 42, 99, 5, 128, 17, 64, 1, 250};
#define NTOK ((int)(sizeof k_toks / sizeof k_toks[0]))

/* logits (NTOK, V) of a fresh sequence */
static int run_logits(kestrel_engine *e, float *out)
{
    if (api()->reset(e)) return -1;
    return api()->forward(e, k_toks, NTOK, KESTREL_FWD_ALL_LOGITS, out, NULL);
}

/* Host-driven stepping: the same kernels, but the host launches every layer and the
 * residual stream makes a device -> host -> device round trip between layers. */
static int host_driven_logits(kestrel_engine *e, float *out)
{
    kc_model *m = kc_engine_model(e);
    const kc_dims *d = &m->dm;
    float *hx = hnew(d->n_embd);
    int rc = -1;
    if (api()->reset(e) || kc_model_reserve_tokens(m, NTOK)) goto cleanup;
    KC_CK(m, cudaMemcpy(m->tokens, k_toks, sizeof k_toks, cudaMemcpyHostToDevice));
    for (int t = 0; t < NTOK; t++) {
        KC_CK(m, kc_ctl_begin(m->ctl, m->tokens, m->st));
        KC_CK(m, kc_embed(&m->tok_embd, &m->ctl->tok, m->x, m->st));
        for (int l = 0; l < d->n_layers; l++) {
            KC_CK(m, cudaStreamSynchronize(m->st));
            KC_CK(m, cudaMemcpy(hx, m->x, d->n_embd * 4, cudaMemcpyDeviceToHost));
            KC_CK(m, cudaMemcpy(m->x, hx, d->n_embd * 4, cudaMemcpyHostToDevice));
            if (kc_layer_step(m, l)) goto cleanup;
        }
        if (kc_model_head(m, 1)) goto cleanup;
        KC_CK(m, kc_ctl_end(m->ctl, m->st));
        KC_CK(m, cudaStreamSynchronize(m->st));
        KC_CK(m, cudaMemcpy(out + (size_t)t * d->n_vocab, m->logits, d->n_vocab * 4, cudaMemcpyDeviceToHost));
    }
    rc = 0;
cleanup:
    if (rc) printf("# host-driven: %s\n", m->err);
    free(hx);
    return rc;
}

/* one GDN layer alone on a sequence of random residual inputs xs (T, D) -> outs (T, D) */
static int gdn_layer_alone(kc_model *m, int l, const float *xs, float *outs, int T)
{
    const int D = m->dm.n_embd;
    int rc = -1;
    if (kc_model_reset(m)) goto cleanup;
    for (int t = 0; t < T; t++) {
        KC_CK(m, cudaMemcpy(m->x, xs + (size_t)t * D, D * 4, cudaMemcpyHostToDevice));
        if (kc_layer_step(m, l)) goto cleanup;
        KC_CK(m, cudaStreamSynchronize(m->st));
        KC_CK(m, cudaMemcpy(outs + (size_t)t * D, m->x, D * 4, cudaMemcpyDeviceToHost));
    }
    rc = 0;
cleanup:
    return rc;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* profile=trace (each kernel's time on the critical path, from device timestamps at its dependency
 * wait) books the same kernels, with the same launch counts, as profile=1 (events around each
 * launch), with graph on and off; the times add up to no more than the wall time of the
 * synchronised steps, and to a plausible share of it. One traced engine at a time (the marks go
 * to the process's one set of buffers). */
static void test_trace(const char *file)
{
    kestrel_prof_entry p1[64], pt[64];
    int32_t n1 = 0, nt = 0;
    kestrel_info info;
    kestrel_engine *e = eopen(file, "graph=0,profile=1");
    if (!e) return;
    api()->info(e, &info);
    float *buf = hnew((size_t)NTOK * info.n_vocab);
    const int r1 = run_logits(e, buf);
    api()->profile(e, p1, 64, &n1);
    api()->close(e);
    for (int g = 1; g >= 0; g--) {
        char opts[64];
        snprintf(opts, sizeof opts, "graph=%d,profile=trace", g);
        e = eopen(file, opts);
        if (!e) break;
        const double t0 = wall_ms();
        const int rt = run_logits(e, buf);
        const double wall = wall_ms() - t0;
        api()->profile(e, pt, 64, &nt);
        double sum = 0, gemv = 0;
        int mism = 0;
        for (int i = 0; i < nt; i++) {
            sum += pt[i].total_ms;
            if (strstr(pt[i].name, "matvec") && pt[i].total_ms > gemv) gemv = pt[i].total_ms;
        }
        for (int i = 0; i < n1; i++) {
            int j = 0;
            while (j < nt && strcmp(pt[j].name, p1[i].name)) j++;
            mism += j == nt || pt[j].calls != p1[i].calls;
        }
        ok(!r1 && !rt && nt == n1 && mism == 0 && gemv > 0 && sum <= wall && sum >= 0.05 * wall,
           "%s %s: %d kernel names (profile=1: %d), %d differ in name or launch count; traced %.3f ms of %.3f ms "
           "wall (12 synchronised steps), the largest GEMV %.3f ms (%s)", file, opts, nt, n1, mism, sum, wall, gemv,
           rt ? api()->last_error(e) : "ran");
        api()->close(e);
    }
    free(buf);
}

/* the two split attentions (one block per q head and split; one per kv head and split, attn=gqa) and
 * the short-context one (attn=short: one block per q head, 8 warps of 16/(hd/128) rows per round, so
 * 1 and 37 positions take one round, 65 two or more) and its clustered form (4 and 3 blocks per head,
 * merged through distributed shared memory; at 1 position all but one block empty) vs the CPU twin at H/Hkv heads of hd over 1,
 * 37, 65, 700 and npmax positions of a ctx cache (gqa: one split without a merge up to 64, then 2
 * splits, the second with one position), twice each (the tickets re-arm), the q8 output
 * bit-identical to quantize_q8 of the f32 output */
static void test_attention_gqa(int H, int Hkv, int hd, int ctx, int npmax)
{
    const int ns = kc_attention_splits(ctx);
    const size_t kvn = (size_t)ctx * Hkv * hd;
    float *q = hnew(H * hd), *qg = hnew(H * 2 * hd), *gate = hnew(H * hd), *kc = hnew(kvn), *vc = hnew(kvn);
    float *ref = hnew(H * hd), *got = hnew(H * hd), *att = hnew(ctx);
    q8_block *rq = (q8_block *)malloc(H * hd / 32 * sizeof *rq);
    attn_fill(q, qg, gate, kc, vc, H, hd, kvn);
    float *dq = dup_f(q, H * hd), *dqg = dup_f(qg, H * 2 * hd), *dk = dup_f(kc, kvn), *dv = dup_f(vc, kvn);
    float *dy = (float *)dnew(H * hd * 4), *dpart = (float *)dnew((size_t)H * ns * (hd + 2) * 4);
    kc_q8blk *doq = (kc_q8blk *)dnew(H * hd / 32 * sizeof(kc_q8blk));
    unsigned int *dcnt;
    int32_t *dpos;
    T_CK(cudaMalloc(&dcnt, H * sizeof *dcnt));
    T_CK(cudaMemset(dcnt, 0, H * sizeof *dcnt));
    T_CK(cudaMalloc(&dpos, 4));
    ok(kc_attention_gqa_ok(H, Hkv, hd, ctx), "attention_gqa takes %d/%d heads x%d at ctx %d", H, Hkv, hd, ctx);
    const int npos_list[5] = {1, 37, 65, 700, npmax};
    ok(kc_attention_short_ok(H, Hkv, hd), "attention_short takes %d/%d heads x%d", H, Hkv, hd);
    T_CK(kc_attention_setup(ctx, hd));
    kc_tmap tmkv[2]; /* kinds 7, 8: the caches' tensor maps (attention_kvct) */
    const int tm_ok = hd == 256 && kc_kv_tmap(&tmkv[0], dk, ctx, Hkv, hd) == cudaSuccess &&
                      kc_kv_tmap(&tmkv[1], dv, ctx, Hkv, hd) == cudaSuccess;
    float *got0 = hnew(H * hd);
    size_t xs_uneq = 0;
    for (int kind = 0; kind < 11; kind++)
        for (int pi = 0; pi < 5; pi++) {
            /* kinds 5, 6: attention_kvc over clusters of 16 and 3 blocks per kv head, where it takes the shape;
             * 7, 8: the same filled by tensor copies (attention_kvct); 9, 10: attention_kvcx, 3 clusters of 8 and
             * 7 of 4 per kv head (at 1 and 37 positions whole clusters empty) */
            const int kvc_cs = kind == 5 || kind == 7 ? 16 : kind == 9 ? 8 : kind == 10 ? 4 : 3, kvc_sp = kind == 9 ? 3 : 7;
            if (kind >= 5 && kind <= 8 && !kc_attention_kvc_ok(H, Hkv, hd, kvc_cs, npmax)) continue;
            if (kind >= 9 && (!kc_attention_kvcx_ok(H, Hkv, hd, kvc_cs, kvc_sp, npmax) || kvc_sp > ns)) continue;
            if (kind >= 7 && !tm_ok) continue;
            const int npos = npos_list[pi], pos = npos - 1;
            T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
            attention(ref, q, gate, kc, vc, H, Hkv, hd, npos, att);
            double worst = 0;
            size_t badq = 0;
            cudaError_t e = cudaSuccess;
            for (int rep = 0; rep < 2; rep++) {
                poison(dy, H * hd * 4);
                e = kind >= 9 ? kc_attention_kvcx(dq, NULL, NULL, NULL, NULL, dk, dv, dqg + hd, 2 * hd, dy, rep ? doq : NULL,
                                                  H, Hkv, hd, kvc_cs, kvc_sp, npmax, 0, 0.0f, 0.0f, 1.0f / sqrtf((float)hd),
                                                  dpos, tmkv, dpart, dcnt, 0, 0)
                    : kind >= 5 ? kc_attention_kvc(dq, NULL, NULL, NULL, NULL, dk, dv, dqg + hd, 2 * hd, dy,
                                                 rep ? doq : NULL, H, Hkv, hd, kvc_cs, npmax, 0, 0.0f, 0.0f,
                                                 1.0f / sqrtf((float)hd), dpos, kind >= 7 ? tmkv : NULL, 0, 0)
                    : kind >= 3 ? kc_attention_short_cl(dq, dk, dv, dqg + hd, 2 * hd, dy, rep ? doq : NULL, H, Hkv, hd,
                                                      kind == 3 ? 4 : 3, 1.0f / sqrtf((float)hd), dpos, 0, 0)
                    : kind == 2 ? kc_attention_short(dq, dk, dv, dqg + hd, 2 * hd, dy, rep ? doq : NULL, H, Hkv, hd,
                                                   1.0f / sqrtf((float)hd), dpos, 0)
                    : kind ? kc_attention_gqa(dq, dk, dv, dqg + hd, 2 * hd, dy, rep ? doq : NULL, H, Hkv, hd, ctx,
                                              1.0f / sqrtf((float)hd), dpos, dpart, dcnt, 0)
                           : kc_attention_split(dq, dk, dv, dqg + hd, 2 * hd, dy, rep ? doq : NULL, H, Hkv, hd, ctx,
                                                1.0f / sqrtf((float)hd), dpos, dpart, dcnt, 0);
                if (e != cudaSuccess) break;
                get_f(got, dy, H * hd);
                const double r = max_rel(got, ref, H * hd);
                if (r > worst) worst = r;
                if (kind >= 9 && !rep) memcpy(got0, got, (size_t)H * hd * sizeof *got);
                if (kind >= 9 && rep) xs_uneq += n_unequal(got, got0, (size_t)H * hd);
                if (rep) {
                    kc_q8blk *gq = get_q8(doq, H * hd / 32);
                    quantize_q8(rq, got, H * hd);
                    badq += n_unequal_blocks(gq, rq, H * hd / 32);
                    free(gq);
                }
            }
            ok(e == cudaSuccess && worst <= 1e-5 && badq == 0,
               "attention_%s GQA %d/%d x%d over %d of %d positions (%d splits) vs CPU twin: max_rel %.3e <= 1e-05; "
               "q8 output %zu blocks unequal (%s)", kind == 10 ? "kvcx(4x7)" : kind == 9 ? "kvcx(8x3)" : kind == 8 ? "kvct(3)" : kind == 7 ? "kvct(16)" : kind == 6 ? "kvc(3)" : kind == 5 ? "kvc(16)" : kind == 4 ? "short_cl(3)" : kind == 3 ? "short_cl(4)" : kind == 2 ? "short" : kind ? "gqa" : "split", H, Hkv, hd, npos, ctx, ns, worst, badq,
               cudaGetErrorString(e));
        }
    unsigned int hc[64], csum = 0;
    T_CK(cudaMemcpy(hc, dcnt, H * sizeof *hc, cudaMemcpyDeviceToHost));
    for (int i = 0; i < H; i++) csum += hc[i];
    ok(csum == 0, "attention_split, attention_gqa, attention_short and attention_kvcx leave their tickets re-armed "
       "(sum %u)", csum);
    ok(xs_uneq == 0, "attention_kvcx %d/%d x%d: its second launch gives the first's bits (%zu values unequal; the "
       "splits merged in their order whichever takes the last ticket)", H, Hkv, hd, xs_uneq);
    free(got0);
    free(q); free(qg); free(gate); free(kc); free(vc); free(ref); free(got); free(att); free(rq);
    cudaFree(dq); cudaFree(dqg); cudaFree(dk); cudaFree(dv); cudaFree(dy); cudaFree(dpart); cudaFree(doq);
    cudaFree(dcnt); cudaFree(dpos);
}

/* attention_kvcx (option attn_kvc_sp: S clusters of C blocks per kv head, a ticket merge) vs attention_kvct with
 * attn_prep inside and without: out within 1e-5 (the merge in two levels), the appended k and v rows and every other
 * cache row bit for bit, its q8 output equal to quantize_q8 of its out; 27B and 9B heads (24/4 and 16/4 x256, rope
 * 64), 3 clusters of 8, 7 of 4 and 2 of 2 at positions 0, 36, 200 and 700 (whole clusters empty at 0 and 36); the
 * tickets re-armed; then the sizes it refuses */
static void test_attention_kvcx(void)
{
    const int shp[2][2] = {{24, 4}, {16, 4}}, cfg[3][2] = {{8, 3}, {4, 7}, {2, 2}}, posl[4] = {0, 36, 200, 700};
    const int ctx = 768, hd = 256, rd = 64;
    size_t bad = 0, runs = 0;
    double worst = 0;
    unsigned int csum = 0;
    for (int si = 0; si < 2; si++) {
        const int H = shp[si][0], Hkv = shp[si][1];
        const size_t kvn = (size_t)ctx * Hkv * hd;
        float *qg = hnew(H * 2 * hd), *k = hnew(Hkv * hd), *v = hnew(Hkv * hd), *qw = hnew(hd), *kw = hnew(hd);
        float *cache = hnew(kvn), *a1 = hnew(kvn), *a2 = hnew(kvn);
        q8_block *rq = (q8_block *)malloc(H * hd / 32 * sizeof *rq);
        kvc_fill(qg, k, v, qw, kw, cache, H, Hkv, hd, kvn);
        float *dqg = dup_f(qg, H * 2 * hd), *dk0 = dup_f(k, Hkv * hd), *dv = dup_f(v, Hkv * hd);
        float *dqw = dup_f(qw, hd), *dkw = dup_f(kw, hd);
        float *dkc1 = dup_f(cache, kvn), *dvc1 = dup_f(cache, kvn), *dkc2 = dup_f(cache, kvn), *dvc2 = dup_f(cache, kvn);
        float *dy1 = (float *)dnew(H * hd * 4), *dy2 = (float *)dnew(H * hd * 4);
        float *dpart = (float *)dnew((size_t)H * 7 * (hd + 2) * 4);
        kc_q8blk *dq2 = (kc_q8blk *)dnew(H * hd / 32 * sizeof(kc_q8blk));
        unsigned int *dcnt = (unsigned int *)dnew(H * sizeof *dcnt), hc[64];
        T_CK(cudaMemset(dcnt, 0, H * sizeof *dcnt));
        kc_tmap tm1[2], tm2[2];
        kv_tmap_pair(tm1, dkc1, dvc1, ctx, Hkv, hd);
        kv_tmap_pair(tm2, dkc2, dvc2, ctx, Hkv, hd);
        int32_t *dpos;
        T_CK(cudaMalloc(&dpos, 4));
        T_CK(kc_attention_setup(ctx, hd));
        const float scale = 1.0f / sqrtf((float)hd);
        for (int ci = 0; ci < 3; ci++)
            for (int pi = 0; pi < 4; pi++)
                for (int prep = 0; prep < 2; prep++) {
                    const int32_t pos = posl[pi];
                    T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
                    for (int j = 0; j < 2; j++) { /* both caches as given (without prep: the row at pos is in them) */
                        T_CK(cudaMemcpy(j ? dkc2 : dkc1, cache, kvn * 4, cudaMemcpyHostToDevice));
                        T_CK(cudaMemcpy(j ? dvc2 : dvc1, cache, kvn * 4, cudaMemcpyHostToDevice));
                    }
                    /* with prep q is qg (nh, 2 hd); without, its first nh x hd values stand for the prepared q */
                    const float *q = dqg, *ak = prep ? dk0 : NULL, *av = prep ? dv : NULL;
                    const int gsz = 2 * hd;
                    poison(dy1, H * hd * 4);
                    T_CK(kc_attention_kvc(q, ak, av, dqw, dkw, dkc1, dvc1, dqg + hd, gsz, dy1, NULL, H, Hkv, hd, 16,
                                          ctx, rd, 1e7f, 1e-6f, scale, dpos, tm1, 0, 0));
                    for (int rep = 0; rep < 2; rep++) {
                        if (rep) { /* a second launch: its tickets re-armed, the same bits */
                            T_CK(cudaMemcpy(dkc2, cache, kvn * 4, cudaMemcpyHostToDevice));
                            T_CK(cudaMemcpy(dvc2, cache, kvn * 4, cudaMemcpyHostToDevice));
                            get_f(a2, dy2, H * hd);
                        }
                        poison(dy2, H * hd * 4);
                        poison(dq2, H * hd / 32 * sizeof(kc_q8blk));
                        T_CK(kc_attention_kvcx(q, ak, av, dqw, dkw, dkc2, dvc2, dqg + hd, gsz, dy2, dq2, H, Hkv, hd,
                                               cfg[ci][0], cfg[ci][1], ctx, rd, 1e7f, 1e-6f, scale, dpos, tm2, dpart,
                                               dcnt, 0, 0));
                        if (rep) {
                            get_f(a1, dy2, H * hd);
                            bad += n_unequal(a1, a2, (size_t)H * hd);
                        }
                    }
                    get_f(a1, dy1, H * hd);
                    get_f(a2, dy2, H * hd);
                    const double r = max_rel(a2, a1, H * hd);
                    worst = r > worst ? r : worst;
                    kc_q8blk *gq = get_q8(dq2, H * hd / 32);
                    quantize_q8(rq, a2, H * hd);
                    bad += n_unequal_blocks(gq, rq, H * hd / 32);
                    free(gq);
                    get_f(a1, dkc1, kvn); get_f(a2, dkc2, kvn); bad += n_unequal(a2, a1, kvn);
                    get_f(a1, dvc1, kvn); get_f(a2, dvc2, kvn); bad += n_unequal(a2, a1, kvn);
                    runs++;
                }
        T_CK(cudaMemcpy(hc, dcnt, H * sizeof *hc, cudaMemcpyDeviceToHost));
        for (int i = 0; i < H; i++) csum += hc[i];
        free(qg); free(k); free(v); free(qw); free(kw); free(cache); free(a1); free(a2); free(rq);
        cudaFree(dqg); cudaFree(dk0); cudaFree(dv); cudaFree(dqw); cudaFree(dkw); cudaFree(dkc1); cudaFree(dvc1);
        cudaFree(dkc2); cudaFree(dvc2); cudaFree(dy1); cudaFree(dy2); cudaFree(dpart); cudaFree(dq2); cudaFree(dcnt);
        cudaFree(dpos);
    }
    ok(bad == 0 && runs == 48 && worst <= 1e-5 && csum == 0,
       "attention_kvcx vs attention_kvct(16), with attn_prep inside and without (24/4 and 16/4 x256 rope 64; 3 clusters "
       "of 8, 7 of 4, 2 of 2 at positions 0, 36, 200, 700): out max_rel %.3e <= 1e-05; %zu unequal (both caches, q8 out "
       "vs quantize_q8, a second launch's out) over %zu runs; tickets left %u", worst, bad, runs, csum);
    const int x1 = kc_attention_kvcx_ok(24, 4, 256, 8, 1, 512), x33 = kc_attention_kvcx_ok(24, 4, 256, 8, 33, 512),
              xbig = kc_attention_kvcx_ok(24, 4, 256, 8, 3, 3 * 8 * 1024 + 1), xc17 = kc_attention_kvcx_ok(24, 4, 256, 17, 2, 512),
              xhd = kc_attention_kvcx_ok(16, 2, 128, 8, 3, 512);
    const cudaError_t xnt = kc_attention_kvcx(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, 24, 4, 256, 8,
                                              3, 512, 0, 0.0f, 0.0f, 1.0f, NULL, NULL, NULL, NULL, 0, 0);
    ok(!x1 && !x33 && !xbig && !xc17 && !xhd && xnt == cudaErrorInvalidValue &&
           kc_attention_kvcx_ok(24, 4, 256, 8, 3, 3 * 8 * 1024) && kc_attention_kvcx_ok(16, 4, 256, 4, 32, 512),
       "attention_kvcx refuses 1 (%d) and 33 (%d) splits, more than 1024 positions per block (%d), clusters of 17 "
       "(%d), hd 128 (%d), no tensor maps (%d); takes 3 x 8 x 1024 positions and 32 splits of 4", x1, x33, xbig, xc17,
       xhd, (int)xnt);
}

/* the push merge (option attn_kvc_push) vs the pull merge of attention_kvc, attention_kvct and attention_kvcx: out,
 * q8 out and both caches bit for bit (the same sums in the same order); 2, 4, 6 and 8 q heads per kv head (8/4,
 * 16/4, 24/4, 16/2 x256, rope 64), clusters of 16, 8, 3 and 2 (up to 4 heads merged per block), 3 x 8 and 7 x 4
 * split, positions 0, 36 and 700 (later blocks, and whole clusters, empty at 0 and 36), attn_prep inside and not;
 * a second push launch the same bits */
static void test_attention_kvc_push(void)
{
    const int shp[4][2] = {{8, 4}, {16, 4}, {24, 4}, {16, 2}}, cfg[6][2] = {{16, 1}, {8, 1}, {3, 1}, {2, 1}, {8, 3}, {4, 7}};
    const int posl[3] = {0, 36, 700}, ctx = 768, hd = 256, rd = 64;
    size_t bad = 0, runs = 0;
    for (int si = 0; si < 4; si++) {
        const int H = shp[si][0], Hkv = shp[si][1];
        const size_t kvn = (size_t)ctx * Hkv * hd;
        float *qg = hnew(H * 2 * hd), *k = hnew(Hkv * hd), *v = hnew(Hkv * hd), *qw = hnew(hd), *kw = hnew(hd);
        float *cache = hnew(kvn), *a1 = hnew(kvn), *a2 = hnew(kvn);
        kvc_fill(qg, k, v, qw, kw, cache, H, Hkv, hd, kvn);
        float *dqg = dup_f(qg, H * 2 * hd), *dk0 = dup_f(k, Hkv * hd), *dv = dup_f(v, Hkv * hd);
        float *dqw = dup_f(qw, hd), *dkw = dup_f(kw, hd);
        attn_pair P;
        attn_pair_new(&P, cache, kvn, H * hd);
        kc_tmap tm[2][2];
        for (int j = 0; j < 2; j++) kv_tmap_pair(tm[j], P.kc[j], P.vc[j], ctx, Hkv, hd);
        float *dpart = (float *)dnew((size_t)H * 7 * (hd + 2) * 4);
        unsigned int *dcnt = (unsigned int *)dnew(H * sizeof *dcnt);
        T_CK(cudaMemset(dcnt, 0, H * sizeof *dcnt));
        int32_t *dpos;
        T_CK(cudaMalloc(&dpos, 4));
        T_CK(kc_attention_setup(ctx, hd));
        const float scale = 1.0f / sqrtf((float)hd);
        for (int ci = 0; ci < 6; ci++)
            for (int pi = 0; pi < 3; pi++)
                for (int form = 0; form < 6; form++) { /* bit 0: attn_prep inside; form / 2: kvc, kvct, kvcx */
                    const int prep = form & 1, kind = form / 2, C = cfg[ci][0], S = cfg[ci][1];
                    if ((kind == 2) != (S > 1)) continue;
                    const int32_t pos = posl[pi];
                    T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
                    for (int rep = 0; rep < 3; rep++) { /* pull, push, push again */
                        const int j = rep ? 1 : 0;
                        attn_pair_reset(&P, j, cache);
                        const float *ak = prep ? dk0 : NULL, *av = prep ? dv : NULL;
                        if (kind == 2)
                            T_CK(kc_attention_kvcx(dqg, ak, av, dqw, dkw, P.kc[j], P.vc[j], dqg + hd, 2 * hd, P.y[j],
                                                   P.q[j], H, Hkv, hd, C, S, ctx, rd, 1e7f, 1e-6f, scale, dpos, tm[j],
                                                   dpart, dcnt, rep > 0, 0));
                        else
                            T_CK(kc_attention_kvc(dqg, ak, av, dqw, dkw, P.kc[j], P.vc[j], dqg + hd, 2 * hd, P.y[j],
                                                  P.q[j], H, Hkv, hd, C, ctx, rd, 1e7f, 1e-6f, scale, dpos,
                                                  kind ? tm[j] : NULL, rep > 0, 0));
                        if (!rep) continue;
                        bad += n_unequal_attn_pair(&P, a1, a2);
                    }
                    runs++;
                }
        free(qg); free(k); free(v); free(qw); free(kw); free(cache); free(a1); free(a2);
        cudaFree(dqg); cudaFree(dk0); cudaFree(dv); cudaFree(dqw); cudaFree(dkw); cudaFree(dpart); cudaFree(dcnt);
        cudaFree(dpos);
        attn_pair_free(&P);
    }
    ok(bad == 0 && runs == 4 * 3 * (4 * 4 + 2 * 2),
       "attention_kvc, attention_kvct and attention_kvcx: the push merge (attn_kvc_push) vs the pull merge bit for bit "
       "(out, q8 out, both caches; 8/4, 16/4, 24/4, 16/2 x256; clusters of 16, 8, 3, 2 and 3 x 8, 7 x 4 at positions "
       "0, 36, 700; attn_prep inside and not; a second push launch): %zu values unequal over %zu runs", bad, runs);
}

/* the push merge (option attn_cl_push) vs the pull merge of attention_short_cl and attention_short_cl_prep: out,
 * q8 out and both caches bit for bit; 24/4 x256 rope 64, 16/2 x128 rope 128 and (short_cl only) 8/2 x512; clusters
 * of 2, 3, 4 and 8 at positions 36, 200 and 700 (later blocks without positions at 36); a second push launch */
static void test_attention_cl_push(void)
{
    const int shp[3][4] = {{24, 4, 256, 64}, {16, 2, 128, 128}, {8, 2, 512, 0}}, csz[4] = {2, 3, 4, 8};
    const int posl[3] = {36, 200, 700}, ctx = 768;
    size_t bad = 0, runs = 0;
    for (int si = 0; si < 3; si++) {
        const int H = shp[si][0], Hkv = shp[si][1], hd = shp[si][2], rd = shp[si][3];
        const size_t kvn = (size_t)ctx * Hkv * hd;
        float *qg = hnew(H * 2 * hd), *k = hnew(Hkv * hd), *v = hnew(Hkv * hd), *qw = hnew(hd), *kw = hnew(hd);
        float *cache = hnew(kvn), *a1 = hnew(kvn), *a2 = hnew(kvn);
        kvc_fill(qg, k, v, qw, kw, cache, H, Hkv, hd, kvn);
        float *dqg = dup_f(qg, H * 2 * hd), *dk0 = dup_f(k, Hkv * hd), *dv = dup_f(v, Hkv * hd);
        float *dqw = dup_f(qw, hd), *dkw = dup_f(kw, hd);
        attn_pair P;
        attn_pair_new(&P, cache, kvn, H * hd);
        int32_t *dpos;
        T_CK(cudaMalloc(&dpos, 4));
        const float scale = 1.0f / sqrtf((float)hd);
        for (int ci = 0; ci < 4; ci++)
            for (int pi = 0; pi < 3; pi++)
                for (int prep = 0; prep < (rd ? 2 : 1); prep++) {
                    const int32_t pos = posl[pi];
                    T_CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
                    for (int rep = 0; rep < 3; rep++) { /* pull, push, push again */
                        const int j = rep ? 1 : 0;
                        attn_pair_reset(&P, j, cache);
                        if (prep)
                            T_CK(kc_attention_short_cl_prep(dqg, dk0, dv, dqw, dkw, P.kc[j], P.vc[j], P.y[j], P.q[j],
                                                            H, Hkv, hd, csz[ci], rd, 1e7f, 1e-6f, scale, dpos, rep > 0,
                                                            0));
                        else /* the first H x hd values of qg stand for the prepared q */
                            T_CK(kc_attention_short_cl(dqg, P.kc[j], P.vc[j], dqg + hd, 2 * hd, P.y[j], P.q[j], H, Hkv,
                                                       hd, csz[ci], scale, dpos, rep > 0, 0));
                        if (!rep) continue;
                        bad += n_unequal_attn_pair(&P, a1, a2);
                    }
                    runs++;
                }
        free(qg); free(k); free(v); free(qw); free(kw); free(cache); free(a1); free(a2);
        cudaFree(dqg); cudaFree(dk0); cudaFree(dv); cudaFree(dqw); cudaFree(dkw); cudaFree(dpos);
        attn_pair_free(&P);
    }
    ok(bad == 0 && runs == 4 * 3 * (2 + 2 + 1),
       "attention_short_cl and attention_short_cl_prep: the push merge (attn_cl_push) vs the pull merge bit for bit "
       "(out, q8 out, both caches; 24/4 x256, 16/2 x128, 8/2 x512 (short_cl only); clusters of 2, 3, 4, 8 at positions "
       "36, 200, 700; a second push launch): %zu values unequal over %zu runs", bad, runs);
}

/* the shapes attention_gqa refuses (the engine then takes attention_split) */
static void test_attention_gqa_refuses(void)
{
    const int r_hd64 = kc_attention_gqa_ok(4, 1, 64, 512), r_g16 = kc_attention_gqa_ok(32, 2, 256, 512),
              r_hd384 = kc_attention_gqa_ok(8, 2, 384, 512), r_smem = kc_attention_gqa_ok(24, 4, 256, 65536),
              r_nh = kc_attention_gqa_ok(10, 4, 256, 512), r_wide = kc_attention_gqa_ok(40, 5, 512, 512);
    ok(!r_hd64 && !r_g16 && !r_hd384 && !r_smem && !r_nh && !r_wide,
       "attention_gqa refuses hd 64 (%d), 16 q heads per kv head (%d), hd 384 (%d), a chunk over 48 KB of shared "
       "memory (%d), nh %% nkv != 0 (%d), 8 heads of 512 per kv head (%d)", r_hd64, r_g16, r_hd384, r_smem, r_nh,
       r_wide);
    ok(kc_attention_gqa(NULL, NULL, NULL, NULL, 0, NULL, NULL, 4, 1, 64, 512, 1.0f, NULL, NULL, NULL, 0) ==
           cudaErrorInvalidValue,
       "kc_attention_gqa returns cudaErrorInvalidValue for a shape it refuses");
    const int s_hd64 = kc_attention_short_ok(4, 1, 64), s_hd384 = kc_attention_short_ok(8, 2, 384),
              s_nh = kc_attention_short_ok(10, 4, 256), s_nkv = kc_attention_short_ok(8, 0, 256);
    ok(!s_hd64 && !s_hd384 && !s_nh && !s_nkv && kc_attention_short_ok(40, 5, 512),
       "attention_short refuses hd 64 (%d), hd 384 (%d), nh %% nkv != 0 (%d), nkv 0 (%d); takes 40/5 x512", s_hd64,
       s_hd384, s_nh, s_nkv);
    ok(kc_attention_short(NULL, NULL, NULL, NULL, 0, NULL, NULL, 4, 1, 64, 1.0f, NULL, 0) == cudaErrorInvalidValue,
       "kc_attention_short returns cudaErrorInvalidValue for a shape it refuses");
    const cudaError_t c1 = kc_attention_short_cl(NULL, NULL, NULL, NULL, 0, NULL, NULL, 8, 2, 256, 1, 1.0f, NULL, 0, 0),
                      c9 = kc_attention_short_cl(NULL, NULL, NULL, NULL, 0, NULL, NULL, 8, 2, 256, 9, 1.0f, NULL, 0, 0),
                      c64 = kc_attention_short_cl(NULL, NULL, NULL, NULL, 0, NULL, NULL, 4, 1, 64, 4, 1.0f, NULL, 0, 0);
    ok(c1 == cudaErrorInvalidValue && c9 == cudaErrorInvalidValue && c64 == cudaErrorInvalidValue,
       "kc_attention_short_cl refuses clusters of 1 (%d) and 9 (%d) blocks and hd 64 (%d)", (int)c1, (int)c9, (int)c64);
}

static void test_engine(const char *file, const char *extra /* more options, "" or ",k=v" */)
{
    char og[128], on[128], op[128];
    snprintf(og, sizeof og, "graph=1%s", extra);
    snprintf(on, sizeof on, "graph=0%s", extra);
    snprintf(op, sizeof op, "graph=1,pdl=0%s", extra);
    kestrel_engine *eg = eopen(file, og), *en = eopen(file, on), *ep = eopen(file, op);
    kestrel_info info;
    if (!eg || !en || !ep) goto cleanup;
    api()->info(eg, &info);
    {
        const size_t n = (size_t)NTOK * info.n_vocab;
        float *a = hnew(n), *b = hnew(n), *c = hnew(n), *h = hnew(n);
        int ra = run_logits(eg, a), rb = run_logits(eg, b), rc = run_logits(en, c), rh = host_driven_logits(en, h);
        ok(!ra && !rb && !rc && !rh, "%s: forward graph=1 twice, graph=0, host-driven all ran (%s)", file,
           ra || rb ? api()->last_error(eg) : api()->last_error(en));
        ok(!ra && !rb && n_unequal(a, b, n) == 0, "%s: bitexact reset then replay (graph=1): %zu/%zu unequal", file,
           n_unequal(a, b, n), n);
        ok(!ra && !rc && n_unequal(a, c, n) == 0, "%s: bitexact graph=1 vs graph=0: %zu/%zu unequal", file,
           n_unequal(a, c, n), n);
        ok(!rc && !rh && n_unequal(c, h, n) == 0,
           "%s: bitexact device-resident vs host-driven stepping: %zu/%zu unequal", file, n_unequal(c, h, n), n);
        {
            float *p = hnew(n);
            const int rp = run_logits(ep, p);
            ok(!ra && !rp && n_unequal(a, p, n) == 0, "%s%s: bitexact pdl=1 vs pdl=0 (graph=1): %zu/%zu unequal", file,
               extra, n_unequal(a, p, n), n);
            free(p);
        }
        /* token by token == all at once */
        float *t1 = hnew(info.n_vocab);
        size_t une = 0;
        api()->reset(en);
        for (int i = 0; i < NTOK; i++) {
            if (api()->forward(en, k_toks + i, 1, 0, t1, NULL)) { une = n; break; }
            une += n_unequal(t1, c + (size_t)i * info.n_vocab, info.n_vocab);
        }
        ok(une == 0, "%s: bitexact one forward per token vs one forward of %d: %zu/%zu unequal", file, NTOK, une, n);
        free(t1);
        free(a); free(b); free(c); free(h);
    }
    {
        /* the same weights at layer 0 and at the last GDN layer give the same outputs */
        kc_model *m = kc_engine_model(en);
        int last = -1;
        for (int l = 0; l < m->dm.n_layers; l++)
            if (m->layers[l].type == KESTREL_LAYER_GDN) last = l;
        const int T = 6, D = m->dm.n_embd;
        float *xs = hnew((size_t)T * D), *o0 = hnew((size_t)T * D), *o1 = hnew((size_t)T * D);
        fill(xs, (size_t)T * D, -1, 1);
        kc_layer saved = m->layers[last];
        const int slot = saved.gdn_index;
        m->layers[last] = m->layers[0];
        m->layers[last].gdn_index = slot; /* weights of layer 0, state of the last GDN layer */
        int r0 = gdn_layer_alone(m, 0, xs, o0, T), r1 = gdn_layer_alone(m, last, xs, o1, T);
        m->layers[last] = saved;
        ok(!r0 && !r1 && n_unequal(o0, o1, (size_t)T * D) == 0,
           "%s: bitexact layer-0 weights at layer 0 vs at GDN layer %d (state slot %d): %zu/%d unequal", file, last,
           slot, n_unequal(o0, o1, (size_t)T * D), T * D);
        free(xs); free(o0); free(o1);
        api()->reset(en);
    }
cleanup:
    api()->close(eg);
    api()->close(en);
    api()->close(ep);
}

static void test_engine_resources(void)
{
    size_t free0, free1, tot;
    char path[1024], err[1024];
    kestrel_engine *e = NULL;
    float *lg = NULL;
    /* warm-up: module loading and first-launch allocations happen once per process */
    e = eopen("mini27-q4_0.gguf", "");
    if (!e) return;
    {
        kestrel_info info;
        api()->info(e, &info);
        lg = hnew(info.n_vocab);
        api()->forward(e, k_toks, NTOK, 0, lg, NULL);
    }
    api()->close(e);
    T_CK(cudaDeviceSynchronize());
    T_CK(cudaMemGetInfo(&free0, &tot));
    for (int i = 0; i < 3; i++) {
        e = eopen(i == 1 ? "mini27-f32.gguf" : "mini27-q4_0.gguf", i == 2 ? "graph=0" : "");
        if (e) api()->forward(e, k_toks, NTOK, 0, lg, NULL);
        api()->close(e);
    }
    T_CK(cudaDeviceSynchronize());
    T_CK(cudaMemGetInfo(&free1, &tot));
    ok(free1 == free0, "3 x open/forward/close returns all device memory: free before %zu, after %zu (diff %lld)",
       free0, free1, (long long)free0 - (long long)free1);

    snprintf(path, sizeof path, "%s/mini27-f32.gguf", g_fix);
    e = NULL;
    int rc = api()->open(path, "vram_limit=100000", &e, err, sizeof err);
    ok(rc != 0 && e == NULL && strstr(err, "out of device memory") && strstr(err, "mini27-f32.gguf"),
       "open with vram_limit=100000 fails with a reported out-of-memory error: rc=%d: %s", rc, err);
    T_CK(cudaMemGetInfo(&free1, &tot));
    ok(free1 == free0, "failed open frees what it allocated: free before %zu, after %zu", free0, free1);

    snprintf(path, sizeof path, "%s/minivk-f32.gguf", g_fix);
    rc = api()->open(path, "delta=reg", &e, err, sizeof err);
    ok(rc != 0 && strstr(err, "delta=reg"), "delta=reg on a kd=32 vd=48 model is refused at open: %s", err);
    rc = api()->open(path, "graph=2", &e, err, sizeof err);
    ok(rc != 0 && strstr(err, "graph"), "bad option value graph=2 is refused: %s", err);
    {   /* the q8gemv=tma options: each out-of-range value refused by name, each valid one accepted */
        const char *bad[] = {"q8gemv=fast", "q8t_kb=15", "q8t_kb=228", "q8t_sm=0", "q8t_sm=5", "q8t_wkb=8",
                             "q8t_xs=2", "q8t_skip=16", "q8t_osm=5", "q8t_ogrid=1025", "q8t_ogrid=full", "rms_fold=2",
                             "norm_tail=2", "carveout=102", "q8t_wu=3"};
        const char *good = "q8gemv=tma,q8t_kb=64,q8t_sm=3,q8t_wkb=0,q8t_xs=1,q8t_wu=2,q8t_skip=5,q8t_okb=120,q8t_osm=1,"
                           "q8t_ogrid=216,q8t_ogrid=auto,rms_fold=1,norm_tail=1,carveout=101";
        int refused = 0;
        char first_err[1200] = "";
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char key[32];
            snprintf(key, sizeof key, "%.*s", (int)strcspn(bad[i], "="), bad[i]);
            e = NULL;
            rc = api()->open(path, bad[i], &e, err, sizeof err);
            if (rc != 0 && e == NULL && strstr(err, key)) refused++;
            else if (!first_err[0]) snprintf(first_err, sizeof first_err, "%s: rc %d: %s", bad[i], rc, err);
            if (e) api()->close(e);
        }
        snprintf(path, sizeof path, "%s/mini27-q4_0.gguf", g_fix);
        e = NULL;
        rc = api()->open(path, good, &e, err, sizeof err);
        ok(refused == (int)(sizeof bad / sizeof bad[0]) && rc == 0,
           "q8gemv=tma options: %d/%d bad values refused naming the key%s%s; the valid set opens (%s)", refused,
           (int)(sizeof bad / sizeof bad[0]), first_err[0] ? ", first not: " : "", first_err, rc ? err : "ok");
        if (e) api()->close(e);
    }

    {   /* q8t_ogrid=auto (kc_q8t_out_grid): the full grid less the blocks beside, only where no block gets a
         * stage more; the 27B's out projection (640 stages) and the 9B's (512) against the delta rule's 48
         * and 32 blocks, and nothing beside */
        int sms = 0;
        T_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        kc_set_q8t(0, 0);
        kc_mat o27, o9;
        memset(&o27, 0, sizeof o27);
        o27.type = GGML_TYPE_Q4_0;
        o27.q8kind = 2;
        o27.rows = 5120;
        o27.cols = 6144;
        o9 = o27;
        o9.rows = o9.cols = 4096;
        const int full = 2 * sms, u27 = 640, u9 = 512;
        const int want27 = (u27 + full - 49) / (full - 48) == (u27 + full - 1) / full && u27 > full ? full - 48 : 0;
        const int want9 = (u9 + full - 33) / (full - 32) == (u9 + full - 1) / full && u9 > full ? full - 32 : 0;
        const int g27 = kc_q8t_out_grid(&o27, 48), g9 = kc_q8t_out_grid(&o9, 32), g0 = kc_q8t_out_grid(&o27, 0);
        ok(g27 == want27 && g9 == want9 && g0 == 0 && (sms != 132 || (g27 == 216 && g9 == 0)),
           "q8t_ogrid=auto on %d SMs: 27B out projection beside 48 blocks %d (want %d), 9B beside 32 %d (want %d), "
           "beside none %d",
           sms, g27, want27, g9, want9, g0);
    }

    /* a model shape the kernels do not serve: n_embd = 40 */
    {
        char bad[512];
        gguf_writer *w = NULL;
        snprintf(bad, sizeof bad, "%s/kestrel-cuda-badshape-%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (int)getpid());
        int wr = gguf_writer_open(bad, &w, err, sizeof err);
        if (!wr) {
            wr |= gguf_writer_kv_str(w, "general.architecture", "qwen35");
            const char *keys[] = {"block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                                  "attention.head_count_kv", "attention.key_length", "rope.dimension_count",
                                  "ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
                                  "ssm.inner_size"};
            const uint32_t vals[] = {4, 40, 64, 2, 1, 32, 8, 4, 32, 2, 4, 128};
            for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
                char k[128];
                snprintf(k, sizeof k, "qwen35.%s", keys[i]);
                wr |= gguf_writer_kv_u32(w, k, vals[i]);
            }
            wr |= gguf_writer_kv_f32(w, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f);
            wr |= gguf_writer_begin_data(w);
            wr |= gguf_writer_finish(w);
        }
        rc = wr ? 0 : api()->open(bad, "", &e, err, sizeof err);
        ok(!wr && rc != 0 && strstr(err, "unsupported shape") && strstr(err, "badshape"),
           "a model with n_embd = 40 is refused at open with a clear error: %s", wr ? "could not write it" : err);
        unlink(bad);
    }
    /* profile=1: per-kernel totals */
    e = eopen("mini27-q4_0.gguf", "profile=1");
    if (e) {
        kestrel_prof_entry pe[64];
        int32_t n = 0;
        double total = 0;
        int found_delta = 0, found_gemv = 0;
        api()->forward(e, k_toks, NTOK, 0, lg, NULL);
        api()->profile(e, pe, 64, &n);
        for (int i = 0; i < n && i < 64; i++) {
            total += pe[i].total_ms;
            found_delta |= (!strcmp(pe[i].name, "delta_step_reg") || !strcmp(pe[i].name, "delta_step_norm_q8")) &&
                           pe[i].calls == (uint64_t)NTOK * 6; /* dot=q8 (default) fuses the gated norm */
            found_gemv |= strstr(pe[i].name, "_q4_0xq8") && pe[i].calls > 0; /* dot=q8 (default) */
            printf("#   profile %-24s %6llu calls %9.4f ms\n", pe[i].name, (unsigned long long)pe[i].calls,
                   pe[i].total_ms);
        }
        ok(n > 5 && found_delta && found_gemv && total > 0,
           "profile=1 attributes time per kernel name (%d names, %.3f ms, delta_step_reg x %d)", n, total, NTOK * 6);
        api()->close(e);
    }
    free(lg);
}

/* An FFN launch's outputs against the CPU twins, each phase from that phase's device input: ff
 * (F,) vs matvec_q8 x2 + silu within 1e-6, ffq (F/32,) vs quantize_q8(ff) and y (D,) vs y0 +
 * matvec_q8(ffq) bit for bit; wg, wu (F, D), wd (D, F) the ggml weights, xq (D/32,) the input. */
static void ffn_vs_twins(const char *name, int D, int F, const void *wg, const void *wu, const void *wd,
                         const q8_block *xq, const float *y0, const float *ff, const kc_q8blk *ffq, const float *y)
{
    const int nbf = F / 32;
    float *g = hnew(F), *u = hnew(F), *cs = hnew(D);
    q8_block *ffq_cpu = (q8_block *)malloc(nbf * sizeof *ffq_cpu);
    matvec_q8(NULL, g, wg, GGML_TYPE_Q4_0, xq, D, F);
    matvec_q8(NULL, u, wu, GGML_TYPE_Q4_0, xq, D, F);
    for (int r = 0; r < F; r++) g[r] = g[r] / (1.0f + expf(-g[r])) * u[r];
    quantize_q8(ffq_cpu, ff, F);
    matvec_q8(NULL, cs, wd, GGML_TYPE_Q4_0, (const q8_block *)ffq, F, D);
    for (int r = 0; r < D; r++) cs[r] = y0[r] + cs[r];
    const double rel = max_rel(ff, g, F);
    ok(rel <= 1e-6 && n_unequal_blocks(ffq, ffq_cpu, nbf) == 0 && n_unequal(y, cs, D) == 0,
       "%s %dx%d vs CPU twins: ff vs matvec_q8 x2 + silu max_rel %.3e <= 1e-06, ffq vs quantize_q8(ff) %zu "
       "blocks, y vs y0 + matvec_q8(ffq) %zu unequal", name, D, F, rel, n_unequal_blocks(ffq, ffq_cpu, nbf),
       n_unequal(y, cs, D));
    free(g); free(u); free(cs); free(ffq_cpu);
}

/* The fused FFN (kc_ffn_q8, a persistent grid with grid barriers) against the three launches it
 * replaces (x-stationary SwiGLU, quantize_q8, down accumulate), bit for bit, and each phase against
 * its CPU twin given that phase's input; then twice back to back under PDL on a stream (the grid
 * barrier re-arms itself; a second launch must not start its SwiGLU before the first's down is
 * done), and a width pair it was not instantiated for is refused. */
static void test_ffn(int D, int F)
{
    kc_model *m = (kc_model *)calloc(1, sizeof *m);
    m->dot_q8 = 1;
    m->gemv_early = 1;
    const int nbx = D / 32, nbf = F / 32;
    void *wg = make_ggml(GGML_TYPE_Q4_0, F, D), *wu = make_ggml(GGML_TYPE_Q4_0, F, D), *wd = make_ggml(GGML_TYPE_Q4_0, D, F);
    kc_mat G, Up, Dn;
    upload(m, &G, GGML_TYPE_Q4_0, F, D, wg);
    upload(m, &Up, GGML_TYPE_Q4_0, F, D, wu);
    upload(m, &Dn, GGML_TYPE_Q4_0, D, F, wd);
    float *x = hnew(D), *y0 = hnew(D), *ff = hnew(F), *ffr = hnew(F), *s = hnew(D), *yr = hnew(D), *y = hnew(D);
    q8_block *xq = (q8_block *)malloc(nbx * sizeof *xq);
    fill(x, D, -2.0f, 2.0f);
    fill(y0, D, -1.0f, 1.0f);
    quantize_q8(xq, x, D);
    kc_q8blk *dxq = (kc_q8blk *)dnew(nbx * sizeof(kc_q8blk)), *dffq = (kc_q8blk *)dnew(nbf * sizeof(kc_q8blk));
    T_CK(cudaMemcpy(dxq, xq, nbx * sizeof(kc_q8blk), cudaMemcpyHostToDevice));
    float *dff = (float *)dnew(F * 4), *dy = (float *)dnew(D * 4), *ds = (float *)dnew(D * 4);
    unsigned int *dbar = (unsigned int *)dnew(2 * sizeof(unsigned int)), hbar[2];
    T_CK(cudaMemset(dbar, 0, 2 * sizeof(unsigned int)));
    cudaStream_t st;
    T_CK(cudaStreamCreate(&st));
    /* the three launches: ff, ffq, s = Dn . ffq */
    const kc_mat *one[1] = {&Dn};
    float *Y[1] = {ds};
    T_CK(kc_matvec_swiglu_q8(&G, &Up, dxq, dff, NULL, NULL, 0));
    T_CK(kc_quantize_q8(dff, F, dffq, 0));
    T_CK(kc_matvec_q8(one, Y, 1, dffq, 0, 0));
    get_f(ffr, dff, F);
    kc_q8blk *ffq_ref = get_q8(dffq, nbf);
    get_f(s, ds, D);
    for (int r = 0; r < D; r++) yr[r] = y0[r] + s[r];
    /* fused, once without PDL */
    T_CK(cudaMemcpy(dy, y0, D * 4, cudaMemcpyHostToDevice));
    poison(dff, F * 4);
    poison(dffq, nbf * sizeof(kc_q8blk));
    const cudaError_t e1 = kc_ffn_q8(&G, &Up, &Dn, dxq, dff, dffq, dy, dbar, 0);
    ok(e1 == cudaSuccess, "ffn_q8 %dx%d launches (%s)", D, F, cudaGetErrorName(e1));
    get_f(ff, dff, F);
    get_f(y, dy, D);
    kc_q8blk *ffq = get_q8(dffq, nbf);
    const size_t bq = n_unequal_dev_blocks(ffq, ffq_ref, nbf);
    ok(n_unequal(ff, ffr, F) == 0 && bq == 0 && n_unequal(y, yr, D) == 0,
       "bitexact ffn_q8 %dx%d vs swiglu_q8 + quantize_q8 + matvec_q8 accumulate: ff %zu/%d, ffq %zu/%d blocks, "
       "y %zu/%d unequal", D, F, n_unequal(ff, ffr, F), F, bq, nbf, n_unequal(y, yr, D), D);
    ffn_vs_twins("ffn_q8", D, F, wg, wu, wd, xq, y0, ff, ffq, y);
    free(ffq);
    /* twice back to back under PDL: y0 + s + s */
    kc_set_pdl(1);
    T_CK(cudaMemcpy(dy, y0, D * 4, cudaMemcpyHostToDevice));
    T_CK(kc_ffn_q8(&G, &Up, &Dn, dxq, dff, dffq, dy, dbar, st));
    T_CK(kc_ffn_q8(&G, &Up, &Dn, dxq, dff, dffq, dy, dbar, st));
    kc_set_pdl(0);
    T_CK(cudaStreamSynchronize(st));
    get_f(y, dy, D);
    for (int r = 0; r < D; r++) yr[r] = yr[r] + s[r];
    T_CK(cudaMemcpy(hbar, dbar, sizeof hbar, cudaMemcpyDeviceToHost));
    ok(n_unequal(y, yr, D) == 0 && hbar[0] == 0 && hbar[1] == 6,
       "ffn_q8 %dx%d twice back to back under PDL: y0 + s + s %zu/%d unequal; barrier arrivals left %u, "
       "generation %u (6: two barriers x 3 launches)", D, F, n_unequal(y, yr, D), D, hbar[0], hbar[1]);
    /* a width pair without an instantiation is refused, not launched */
    {
        kc_mat g2 = G, d2 = Dn;
        g2.cols = d2.rows = 1024;
        const cudaError_t e = kc_ffn_q8(&g2, &g2, &d2, dxq, dff, dffq, dy, dbar, 0);
        ok(e == cudaErrorInvalidValue && !kc_ffn_q8_supported(&g2, &g2, &d2),
           "ffn_q8 with 1024 x %d (not instantiated) is refused (%s)", F, cudaGetErrorName(e));
    }
    T_CK(cudaStreamDestroy(st));
    free(wg); free(wu); free(wd); free(x); free(y0); free(ff); free(ffr); free(s); free(yr); free(y);
    free(xq); free(ffq_ref);
    cudaFree(dxq); cudaFree(dffq); cudaFree(dff); cudaFree(dy); cudaFree(ds); cudaFree(dbar);
    kc_model_free(m);
}

/* The FFN through one ring (kc_ffn_ring, option ffn=ring) against the engine's default two launches
 * (the TMA SwiGLU quantising its output with tickets, the down projection accumulating), bit for bit,
 * and against the CPU twins; then twice back to back under PDL on a stream (the grid barrier and the
 * group tickets re-arm themselves; a second launch must not read ffq before the first's down is done);
 * and the shapes it refuses. D, F multiples of 256; D <= 6144. */
static void test_ffn_ring(int D, int F, int warps)
{
    kc_set_ffn_ring_warps(warps);
    kc_model *m = (kc_model *)calloc(1, sizeof *m);
    m->dot_q8 = 1;
    m->gemv_early = 1;
    const int nbx = D / 32, nbf = F / 32;
    void *wg = make_ggml(GGML_TYPE_Q4_0, F, D), *wu = make_ggml(GGML_TYPE_Q4_0, F, D), *wd = make_ggml(GGML_TYPE_Q4_0, D, F);
    kc_mat G, Up, Dn;
    upload(m, &G, GGML_TYPE_Q4_0, F, D, wg);
    upload(m, &Up, GGML_TYPE_Q4_0, F, D, wu);
    upload(m, &Dn, GGML_TYPE_Q4_0, D, F, wd);
    G.q8kind = Up.q8kind = Dn.q8kind = 2; /* the default q8gemv=tma routes for the reference */
    float *x = hnew(D), *y0 = hnew(D), *ff = hnew(F), *ffr = hnew(F), *yr = hnew(D), *y = hnew(D), *s = hnew(D);
    q8_block *xq = (q8_block *)malloc(nbx * sizeof *xq);
    fill(x, D, -2.0f, 2.0f);
    fill(y0, D, -1.0f, 1.0f);
    quantize_q8(xq, x, D);
    kc_q8blk *dxq = (kc_q8blk *)dnew(nbx * sizeof(kc_q8blk)), *dffq = (kc_q8blk *)dnew(nbf * sizeof(kc_q8blk));
    T_CK(cudaMemcpy(dxq, xq, nbx * sizeof(kc_q8blk), cudaMemcpyHostToDevice));
    float *dff = (float *)dnew(F * 4), *dy = (float *)dnew(D * 4);
    unsigned int *dbar = (unsigned int *)dnew(2 * sizeof(unsigned int)), hbar[2];
    unsigned int *dcnt = (unsigned int *)dnew(nbf * sizeof(unsigned int)), *hcnt = (unsigned int *)malloc(nbf * 4);
    T_CK(cudaMemset(dbar, 0, 2 * sizeof(unsigned int)));
    T_CK(cudaMemset(dcnt, 0, nbf * sizeof(unsigned int)));
    cudaStream_t st;
    T_CK(cudaStreamCreate(&st));
    /* the two launches: ff and ffq, then y0 + Dn . ffq */
    const kc_mat *one[1] = {&Dn};
    float *Y[1] = {dy}, *ds = (float *)dnew(D * 4), *S[1] = {ds};
    T_CK(cudaMemcpy(dy, y0, D * 4, cudaMemcpyHostToDevice));
    T_CK(kc_matvec_swiglu_q8(&G, &Up, dxq, dff, dffq, dcnt, 0));
    T_CK(kc_matvec_q8(one, Y, 1, dffq, 1, 0));
    T_CK(kc_matvec_q8(one, S, 1, dffq, 0, 0)); /* s = Dn . ffq alone, for the repeated launches */
    get_f(ffr, dff, F);
    kc_q8blk *ffq_ref = get_q8(dffq, nbf);
    get_f(yr, dy, D);
    get_f(s, ds, D);
    /* the ring, once without PDL (a cooperative launch) */
    T_CK(cudaMemcpy(dy, y0, D * 4, cudaMemcpyHostToDevice));
    poison(dff, F * 4);
    poison(dffq, nbf * sizeof(kc_q8blk));
    const cudaError_t e1 = kc_ffn_ring(&G, &Up, &Dn, dxq, dff, dffq, dcnt, dbar, dy, 0);
    const cudaError_t e1s = cudaDeviceSynchronize();
    ok(e1 == cudaSuccess && e1s == cudaSuccess && kc_ffn_ring_supported(&G, &Up, &Dn), "ffn_ring %dx%d (%d consumer warps) launches (%s, %s)",
       D, F, warps, cudaGetErrorName(e1), cudaGetErrorName(e1s));
    get_f(ff, dff, F);
    get_f(y, dy, D);
    kc_q8blk *ffq = get_q8(dffq, nbf);
    const size_t bq = n_unequal_dev_blocks(ffq, ffq_ref, nbf);
    ok(n_unequal(ff, ffr, F) == 0 && bq == 0 && n_unequal(y, yr, D) == 0,
       "bitexact ffn_ring %dx%d vs swiglu_q8 (tma, quantising) + matvec_q8 (tma) accumulate: ff %zu/%d, ffq %zu/%d "
       "blocks, y %zu/%d unequal", D, F, n_unequal(ff, ffr, F), F, bq, nbf, n_unequal(y, yr, D), D);
    ffn_vs_twins("ffn_ring", D, F, wg, wu, wd, xq, y0, ff, ffq, y);
    free(ffq);
    /* twice back to back under PDL: y0 + s + s, tickets and barrier re-armed */
    kc_set_pdl(1);
    T_CK(cudaMemcpy(dy, y0, D * 4, cudaMemcpyHostToDevice));
    T_CK(kc_ffn_ring(&G, &Up, &Dn, dxq, dff, dffq, dcnt, dbar, dy, st));
    T_CK(kc_ffn_ring(&G, &Up, &Dn, dxq, dff, dffq, dcnt, dbar, dy, st));
    kc_set_pdl(0);
    T_CK(cudaStreamSynchronize(st));
    get_f(y, dy, D);
    for (int r = 0; r < D; r++) yr[r] = yr[r] + s[r];
    T_CK(cudaMemcpy(hbar, dbar, sizeof hbar, cudaMemcpyDeviceToHost));
    T_CK(cudaMemcpy(hcnt, dcnt, nbf * 4, cudaMemcpyDeviceToHost));
    unsigned csum = 0;
    for (int i = 0; i < nbf; i++) csum += hcnt[i];
    ok(n_unequal(y, yr, D) == 0 && hbar[0] == 0 && hbar[1] == 3 && csum == 0,
       "ffn_ring %dx%d twice back to back under PDL: y0 + s + s %zu/%d unequal; barrier arrivals left %u, generation %u "
       "(3 launches), tickets left %u", D, F, n_unequal(y, yr, D), D, hbar[0], hbar[1], csum);
    /* refused, not launched: a gate/up width past the registers' x (> 6144), a width not a multiple of 256 */
    {
        kc_mat g2 = G, u2 = Up, d2 = Dn;
        g2.cols = u2.cols = d2.rows = 8192;
        const cudaError_t ea = kc_ffn_ring(&g2, &u2, &d2, dxq, dff, dffq, dcnt, dbar, dy, 0);
        kc_mat g3 = G, u3 = Up, d3 = Dn;
        g3.cols = u3.cols = d3.rows = D - 32;
        const cudaError_t eb = kc_ffn_ring(&g3, &u3, &d3, dxq, dff, dffq, dcnt, dbar, dy, 0);
        ok(ea == cudaErrorInvalidValue && eb == cudaErrorInvalidValue && !kc_ffn_ring_supported(&g2, &u2, &d2) &&
               !kc_ffn_ring_supported(&g3, &u3, &d3),
           "ffn_ring refuses gate/up width 8192 (%s) and %d (%s)", cudaGetErrorName(ea), D - 32, cudaGetErrorName(eb));
    }
    T_CK(cudaStreamDestroy(st));
    free(wg); free(wu); free(wd); free(x); free(y0); free(ff); free(ffr); free(yr); free(y); free(s);
    free(xq); free(ffq_ref); free(hcnt);
    cudaFree(dxq); cudaFree(dffq); cudaFree(dff); cudaFree(dy); cudaFree(ds); cudaFree(dbar); cudaFree(dcnt);
    kc_model_free(m);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    const char *seed_env = getenv("KESTREL_TEST_SEED");
    if (argc < 2) {
        fprintf(stderr, "usage: test_kernels FIXTURE_DIR\n");
        return 2;
    }
    g_fix = argv[1];
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("1..0 # SKIP no CUDA device visible\n");
        return 0;
    }
    g_rng = seed_env ? strtoull(seed_env, NULL, 10) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)getpid();
    if (!g_rng) g_rng = 1;
    printf("# seed %llu (KESTREL_TEST_SEED repeats it)\n", (unsigned long long)g_rng);
#ifdef KESTREL_BITEXACT
    printf("# built with -fmad=false -DKESTREL_BITEXACT\n");
#endif
    test_matvec();
    test_norms();
    test_gdn_small();
    test_gemv_q4_rpw();
    test_q8();
    test_norm_tail();
    test_prefetch_plan();
    test_ffn(2048, 6144);  /* 2B shape */
    test_ffn(5120, 17408); /* 27B shape */
    test_ffn_ring(2048, 6144, 16);  /* 2B shape */
    test_ffn_ring(4096, 12288, 16); /* 9B shape */
    test_ffn_ring(5120, 17408, 16); /* 27B shape */
    test_ffn_ring(5120, 17408, 8);  /* the same with 8 consumer warps */
    test_ffn_ring(2304, 4352, 16);  /* odd units: partial last stages and shares */
    test_ffn_ring(2304, 4352, 8);
    kc_set_ffn_ring_warps(16);
    test_gdn_prep(16, 128, 48, 128); /* 27B shape */
    test_gdn_prep(4, 32, 4, 48);     /* minivk shape */
    test_gdn_step(16, 48, 1, 4); /* 27B shape (clusters of 3), beta/alpha projected in the kernel */
    test_gdn_step(16, 48, 0, 3); /* the same, b and a given */
    test_gdn_step(16, 32, 1, 3); /* 9B shape: clusters of 2 */
    test_gdn_step(4, 4, 0, 3);   /* vh == kh: no cluster */
    test_delta(16, 48, 128, 128, 64); /* 27B shape: both variants */
    test_delta(4, 4, 32, 48, 16);     /* minivk shape: generic only */
    test_delta(2, 6, 128, 128, 16);   /* mini27 shape */
    test_attention_gqa(24, 4, 256, 4608, 4096); /* 27B shape, the perf suite's cache */
    test_attention_gqa(16, 4, 256, 1024, 1024); /* 9B */
    test_attention_gqa(8, 2, 256, 1024, 1024);  /* 2B */
    test_attention_gqa(16, 2, 128, 1024, 1000); /* 8 q heads per kv head, hd 128 */
    test_attention_gqa(8, 2, 512, 1024, 1024);  /* hd 512 */
    test_attention_gqa_refuses();
    test_attention_kvcx();
    test_attention_kvc_push();
    test_attention_cl_push();
    test_engine("mini27-f32.gguf", "");
    test_engine("mini27-q4_0.gguf", "");           /* dot=q8: the integer-dot GEMVs */
    test_engine("mini27-q4_0.gguf", ",dot=f32");   /* the exact-activation q4_0 GEMVs */
    test_engine("mini27-q4_0.gguf", ",gdn=fused"); /* gdn_prep + delta rule as one clustered launch */
    test_engine("mini27-q4_0.gguf", ",q8gemv=stream,q8wide=smem,pf_next=1"); /* x in shared memory, prefetch */
    test_engine("mini27-q4_0.gguf", ",q8gemv=xs"); /* the register x-stationary kernels (the default is tma; 64
                                                    * wide: every tma GEMV falls back to them, cols % 256) */
    test_engine("minivk-q8_0.gguf", "");
    test_trace("mini27-q4_0.gguf");
    test_engine("minitied-f32.gguf", "");
    test_engine_resources();
    printf("1..%d\n", g_n);
    return g_fail;
}
