/*
 * cuda/bench_gemv.cu - microbenchmark of the q4_0 GEMV kernels on the 27B shapes (issue 6).
 *
 * Why: a whole decode step mixes ~700 launches; choosing a GEMV variant needs each kernel alone,
 * on the real shapes, against the streaming-read ceiling of the same bytes. Built as ONE
 * translation unit with kernels.cu (it instantiates every template variant directly).
 *
 * Method (device README METHOD.md): weights are random bytes (the timing does not depend on the
 * values) in enough copies that the rotation does not fit in the 60 MB L2; each variant is warmed
 * up, then timed as NREP batches of NLAUNCH launches between two events; the median batch gives
 * us/launch, and GB/s counts the quant + scale bytes of the matrices once per launch.
 * Every q8 variant's output is compared bit for bit with the (R=1, U=1) variant: they share one
 * arithmetic order (gemv_q8.cuh), so any difference is a bug.
 *
 * Usage: bench_gemv [--shape NAME]  (prints one TSV line per shape x variant)
 */
#include "kernels.cu"

#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "bench_gemv: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

static int g_sms = 132; /* multiprocessors, read at start */

#define NLAUNCH 20
#define NREP 9

__global__ void fill_bytes_kernel(uint32_t *p, uint64_t n, uint32_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = h;
    }
}

__global__ void fill_scales_kernel(__half *d, uint64_t n, uint32_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2246822519u ^ seed;
        h ^= h >> 16;
        d[i] = __float2half(0.002f + 0.008f * (float)(h & 1023) / 1023.0f);
    }
}

typedef struct shape {
    const char *name;
    int rows0, rows1, cols; /* rows1: second matrix (0 = none); swiglu: gate and up, rows0 each */
    int swiglu, accumulate;
} shape;

/* 27B: qkv 10240 + z 6144 rows of 5120; gate/up 17408; down 5120 x 17408; ssm_out 5120 x 6144;
 * attention wq 12288 (q + gate), wk + wv 1024 each; lm_head 248320 */
static const shape SHAPES[] = {
    {"qkv+z", 10240, 6144, 5120, 0, 0},   {"gate/up", 17408, 0, 5120, 1, 0},
    {"down", 5120, 0, 17408, 0, 1},       {"ssm_out", 5120, 0, 6144, 0, 1},
    {"wq", 12288, 0, 5120, 0, 0},         {"lm_head", 248320, 0, 5120, 0, 0},
};

typedef struct mats {
    int ncopy;
    std::vector<kc_mat> a, b; /* per copy */
    uint64_t bytes;           /* quant + scale bytes of one launch */
} mats;

static int make_mats(const shape *s, mats *M, uint32_t seed)
{
    const int nm = s->swiglu ? 2 : s->rows1 ? 2 : 1;
    const int64_t r1 = s->swiglu ? s->rows0 : s->rows1;
    const uint64_t per = kc_mat_data_bytes(GGML_Q4_0, s->rows0, s->cols) + kc_mat_scale_bytes(GGML_Q4_0, s->rows0, s->cols) +
                         (nm == 2 ? kc_mat_data_bytes(GGML_Q4_0, r1, s->cols) + kc_mat_scale_bytes(GGML_Q4_0, r1, s->cols) : 0);
    M->bytes = per;
    M->ncopy = (int)std::max<uint64_t>(1, (240ull << 20) / per + 1);
    for (int c = 0; c < M->ncopy; c++) {
        for (int k = 0; k < nm; k++) {
            kc_mat w;
            memset(&w, 0, sizeof w);
            w.type = GGML_Q4_0;
            w.rows = k ? (int)r1 : s->rows0;
            w.cols = s->cols;
            const uint64_t db = kc_mat_data_bytes(GGML_Q4_0, w.rows, w.cols), sb = kc_mat_scale_bytes(GGML_Q4_0, w.rows, w.cols);
            CK(cudaMalloc(&w.data, db));
            CK(cudaMalloc((void **)&w.d, sb));
            fill_bytes_kernel<<<1024, 256>>>((uint32_t *)w.data, db / 4, seed + 17 * c + k);
            fill_scales_kernel<<<1024, 256>>>(w.d, sb / 2, seed + 31 * c + k);
            CK(cudaGetLastError());
            (k ? M->b : M->a).push_back(w);
        }
    }
    CK(cudaDeviceSynchronize());
    return 0;
}

/* launch variant v on copy c; returns a launch status */
typedef cudaError_t (*launch_fn)(const shape *s, mats *M, int c, int R, int U, const float *x, const kc_q8blk *xq,
                                 float *y0, float *y1, cudaStream_t st);

static int g_prefetch; /* kc_mat.prefetch of the q8 launches */
static int g_q8kind = 1; /* kc_mat.q8kind: the R x U grid measures the streaming kernel */

static cudaError_t launch_q8(const shape *s, mats *M, int c, int R, int U, const float *x, const kc_q8blk *xq,
                             float *y0, float *y1, cudaStream_t st)
{
    (void)x;
    kc_mat a = M->a[c];
    a.rpw = R;
    a.unroll = U;
    a.layout = 0;
    a.prefetch = g_prefetch;
    a.q8kind = g_q8kind;
    if (s->swiglu) {
        kc_mat b = M->b[c];
        b.layout = 0;
        b.q8kind = g_q8kind;
        return kc_matvec_swiglu_q8(&a, &b, xq, y0, NULL, NULL, st);
    }
    const kc_mat *W[2] = {&a, M->b.empty() ? NULL : &M->b[c]};
    kc_mat b;
    if (!M->b.empty()) {
        b = M->b[c];
        b.layout = 0;
        b.q8kind = g_q8kind;
        W[1] = &b;
    }
    float *Y[2] = {y0, y1};
    return kc_matvec_q8(W, Y, M->b.empty() ? 1 : 2, xq, s->accumulate, st);
}

static cudaError_t launch_f32(const shape *s, mats *M, int c, int R, int U, const float *x, const kc_q8blk *xq,
                              float *y0, float *y1, cudaStream_t st)
{
    (void)U;
    (void)xq;
    kc_mat a = M->a[c];
    a.rpw = R;
    a.layout = 1;
    if (s->swiglu) {
        kc_mat b = M->b[c];
        b.rpw = R;
        b.layout = 1;
        return kc_matvec_swiglu(&a, &b, x, y0, st);
    }
    if (!M->b.empty()) {
        kc_mat b = M->b[c];
        b.rpw = R;
        b.layout = 1;
        return kc_matvec2(&a, &b, x, y0, y1, st);
    }
    return kc_matvec(&a, x, y0, s->accumulate, st);
}

static cudaError_t launch_read(const shape *s, mats *M, int c, int R, int U, const float *x, const kc_q8blk *xq,
                               float *y0, float *y1, cudaStream_t st)
{
    (void)s; (void)R; (void)U; (void)x; (void)xq; (void)y1;
    /* the quant plane of the first matrix only, at the probe's default grid: the access-pattern ceiling */
    return kc_stream_read((const uint4 *)M->a[c].data,
                          kc_mat_data_bytes(GGML_Q4_0, M->a[c].rows, M->a[c].cols) / 16, (uint32_t *)y0, g_sms * 4, st);
}

static int time_variant(const shape *s, mats *M, launch_fn fn, int R, int U, const float *x, const kc_q8blk *xq,
                        float *y0, float *y1, cudaStream_t st, double *us)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) CK(fn(s, M, i % M->ncopy, R, U, x, xq, y0, y1, st));
    std::vector<double> t;
    int c = 0;
    for (int r = 0; r < NREP; r++) {
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < NLAUNCH; i++, c++) CK(fn(s, M, c % M->ncopy, R, U, x, xq, y0, y1, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(1e3 * ms / NLAUNCH);
    }
    std::sort(t.begin(), t.end());
    *us = t[NREP / 2];
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = argc > 2 && !strcmp(argv[1], "--shape") ? argv[2] : NULL;
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    const int maxc = 248320;
    float *x, *y0, *y1, *ref;
    kc_q8blk *xq;
    CK(cudaMalloc(&x, maxc * 4));
    CK(cudaMalloc(&y0, maxc * 4));
    CK(cudaMalloc(&y1, maxc * 4));
    CK(cudaMalloc(&ref, 2 * maxc * 4));
    CK(cudaMalloc(&xq, (maxc / 32) * sizeof(kc_q8blk)));
    {
        std::vector<float> hx(maxc);
        for (int i = 0; i < maxc; i++) hx[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
        CK(cudaMemcpy(x, hx.data(), maxc * 4, cudaMemcpyHostToDevice));
    }
    CK(kc_gemv_setup());
    CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
    int fails = 0;
    printf("shape\tvariant\tR\tU\tus\tGBps\tbytes\n");
    for (size_t si = 0; si < sizeof SHAPES / sizeof SHAPES[0]; si++) {
        const shape *s = &SHAPES[si];
        if (only && strcmp(only, s->name)) continue;
        mats M;
        if (make_mats(s, &M, 1234u + (uint32_t)si)) return 1;
        double us;
        /* quantize_q8 of the input vector */
        {
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            CK(kc_quantize_q8(x, s->cols, xq, st));
            CK(cudaEventRecord(e0, st));
            for (int i = 0; i < 100; i++) CK(kc_quantize_q8(x, s->cols, xq, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            printf("%s\tquantize_q8\t-\t-\t%.2f\t-\t%d\n", s->name, 1e3 * ms / 100, s->cols * 4);
        }
        if (time_variant(s, &M, launch_read, 0, 0, x, xq, y0, y1, st, &us)) return 1;
        const uint64_t qb = kc_mat_data_bytes(GGML_Q4_0, M.a[0].rows, M.a[0].cols);
        printf("%s\tstream_read(quants of W0)\t-\t-\t%.2f\t%.0f\t%llu\n", s->name, us, qb / us / 1e3, (unsigned long long)qb);
        const int Rs[3] = {1, 2, 4};
        for (int ri = 0; ri < 3; ri++) {
            if (time_variant(s, &M, launch_f32, Rs[ri], 0, x, xq, y0, y1, st, &us)) return 1;
            printf("%s\tf32_layout1\t%d\t-\t%.2f\t%.0f\t%llu\n", s->name, Rs[ri], us, M.bytes / us / 1e3,
                   (unsigned long long)M.bytes);
        }
        CK(kc_quantize_q8(x, s->cols, xq, st));
        const int rows_out = s->rows0 + (s->swiglu ? 0 : s->rows1);
        int have_ref = 0;
        for (int ri = 0; ri < 3; ri++) {
            for (int u = 1; u <= 4; u *= 2) {
                if (s->swiglu && Rs[ri] == 4) continue;
                if (time_variant(s, &M, launch_q8, Rs[ri], u, x, xq, y0, y1, st, &us)) return 1;
                printf("%s\tq8_dp4a\t%d\t%d\t%.2f\t%.0f\t%llu\n", s->name, Rs[ri], u, us, M.bytes / us / 1e3,
                       (unsigned long long)M.bytes);
                /* bit-exact agreement between variants on copy 0 (accumulate off for the check) */
                shape s0 = *s;
                s0.accumulate = 0;
                CK(launch_q8(&s0, &M, 0, Rs[ri], u, x, xq, y0, y1, st));
                CK(cudaStreamSynchronize(st));
                if (!have_ref) {
                    CK(cudaMemcpy(ref, y0, s->rows0 * 4, cudaMemcpyDeviceToDevice));
                    if (s->rows1 && !s->swiglu) CK(cudaMemcpy(ref + s->rows0, y1, s->rows1 * 4, cudaMemcpyDeviceToDevice));
                    have_ref = 1;
                } else {
                    std::vector<float> a(rows_out), b(rows_out);
                    CK(cudaMemcpy(a.data(), ref, rows_out * 4, cudaMemcpyDeviceToHost));
                    CK(cudaMemcpy(b.data(), y0, s->rows0 * 4, cudaMemcpyDeviceToHost));
                    if (s->rows1 && !s->swiglu) CK(cudaMemcpy(b.data() + s->rows0, y1, s->rows1 * 4, cudaMemcpyDeviceToHost));
                    if (memcmp(a.data(), b.data(), rows_out * 4)) {
                        printf("# MISMATCH %s R=%d U=%d vs R=1 U=1\n", s->name, Rs[ri], u);
                        fails++;
                    }
                }
            }
        }
        /* the engine's default (R, U) for this shape with programmatic dependent launch (back-to-back
         * launches overlap: the next one's blocks are resident before this one ends) and/or the L2
         * prefetch of the first weights before the dependency wait */
        {
            const int R = M.a[0].rows > 65536 ? 2 : 1, U = R;
            for (int pdl = 0; pdl <= 1; pdl++)
                for (int pf = 0; pf <= 1; pf++) {
                    kc_set_pdl(pdl);
                    g_prefetch = pf;
                    if (time_variant(s, &M, launch_q8, R, U, x, xq, y0, y1, st, &us)) return 1;
                    printf("%s\tq8_dp4a_pdl%d_prefetch%d\t%d\t%d\t%.2f\t%.0f\t%llu\n", s->name, pdl, pf, R, U, us,
                           M.bytes / us / 1e3, (unsigned long long)M.bytes);
                }
            kc_set_pdl(0);
            g_prefetch = 0;
        }
        /* the x-stationary kernel (v10; the engine's default up to 6144 columns), bit-identical to R=1 U=1 */
        {
            kc_mat probe = M.a[0];
            probe.q8kind = 0;
            if (kc_q8_stationary(&probe)) {
                g_q8kind = 0;
                for (int pdl = 0; pdl <= 1; pdl++) {
                    kc_set_pdl(pdl);
                    if (time_variant(s, &M, launch_q8, 1, 1, x, xq, y0, y1, st, &us)) return 1;
                    printf("%s\tq8_xstationary_pdl%d\t1\t-\t%.2f\t%.0f\t%llu\n", s->name, pdl, us, M.bytes / us / 1e3,
                           (unsigned long long)M.bytes);
                }
                kc_set_pdl(0);
                shape s0 = *s;
                s0.accumulate = 0;
                CK(launch_q8(&s0, &M, 0, 1, 1, x, xq, y0, y1, st));
                CK(cudaStreamSynchronize(st));
                std::vector<float> a(rows_out), b(rows_out);
                CK(cudaMemcpy(a.data(), ref, rows_out * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(b.data(), y0, s->rows0 * 4, cudaMemcpyDeviceToHost));
                if (s->rows1 && !s->swiglu) CK(cudaMemcpy(b.data() + s->rows0, y1, s->rows1 * 4, cudaMemcpyDeviceToHost));
                if (memcmp(a.data(), b.data(), rows_out * 4)) {
                    printf("# MISMATCH %s x-stationary vs R=1 U=1\n", s->name);
                    fails++;
                }
                g_q8kind = 1;
            }
        }
        for (int c = 0; c < M.ncopy; c++) {
            cudaFree(M.a[c].data);
            cudaFree(M.a[c].d);
            if (!M.b.empty()) {
                cudaFree(M.b[c].data);
                cudaFree(M.b[c].d);
            }
        }
        fflush(stdout);
    }
    printf("# %s\n", fails ? "FAIL: q8 variants disagree" : "q8 variants bit-identical");
    return fails ? 1 : 0;
}
