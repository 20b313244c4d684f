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
 * Usage: bench_gemv [--shape NAME]  (prints one TSV line per shape x variant; NAME ffn: the fused FFN only; l2: the L2-prefetch measurements;
 * gdnwin: the delta rule + out projection timeline; attn, attnkv, attntl: the attentions, the kv-head one's read pattern
 * and timeline). The TMA SwiGLU runs in the engine's default form (gate and up
 * rows in separate ring slots, option q8t_half=1 since PERF-NOTES v29); KC_Q8T_HALF=0 times the form before it.
 */
#define KC_Q8T_DBG 1 /* gemv_q8t.cuh: per-block timeline of the TMA kernels (bench only) */
#define KC_AG_DBG 1  /* kernels.cu: attention_gqa_kernel's phases skipped on request (bench only) */
#define KC_AKC_DBG 1 /* kernels.cu: per-block timeline of attention_kvc's launches (bench only, --shape attntl) */
#include "kernels.cu"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
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

/* w = a rows x cols q4_0 layout-0 matrix of random quants (seed sq) and scales (seed sd) on the device */
static int alloc_q4(kc_mat *w, int rows, int cols, uint32_t sq, uint32_t sd)
{
    memset(w, 0, sizeof *w);
    w->type = GGML_Q4_0;
    w->rows = rows;
    w->cols = cols;
    const uint64_t db = kc_mat_data_bytes(GGML_Q4_0, rows, cols), sb = kc_mat_scale_bytes(GGML_Q4_0, rows, cols);
    CK(cudaMalloc(&w->data, db));
    CK(cudaMalloc((void **)&w->d, sb));
    fill_bytes_kernel<<<1024, 256>>>((uint32_t *)w->data, db / 4, sq);
    fill_scales_kernel<<<1024, 256>>>(w->d, sb / 2, sd);
    CK(cudaGetLastError());
    return 0;
}

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
            if (alloc_q4(&w, k ? (int)r1 : s->rows0, s->cols, seed + 17 * c + k, seed + 31 * c + k)) return 1;
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
static int g_q8wide; /* kc_mat.q8wide of the q8 launches (3: matvec_q8xs_kernel) */

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
    a.q8wide = g_q8wide;
    a.early = g_q8wide == 3;
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

/* median us per call of run(c) (c counting up): `warm` calls, then NREP batches of NLAUNCH calls
 * between two events */
template <typename F>
static int time_batches(F run, int warm, cudaStream_t st, double *us)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < warm; i++) CK(run(i));
    std::vector<double> t;
    int c = 0;
    for (int r = 0; r < NREP; r++) {
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < NLAUNCH; i++, c++) CK(run(c));
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

static int time_variant(const shape *s, mats *M, launch_fn fn, int R, int U, const float *x, const kc_q8blk *xq,
                        float *y0, float *y1, cudaStream_t st, double *us)
{
    return time_batches([&](int c) { return fn(s, M, c % M->ncopy, R, U, x, xq, y0, y1, st); }, 3, st, us);
}

/* the q8 variant the globals select (R = U = 1), as `label`, with PDL off then on; then its output
 * (accumulate off) against ref, the R=1 U=1 result: a "# MISMATCH" line and a failure if it differs */
static int time_and_check(const shape *s, mats *M, const char *label, const float *x, const kc_q8blk *xq, float *y0,
                          float *y1, const float *ref, int rows_out, cudaStream_t st, int *fails)
{
    double us;
    for (int pdl = 0; pdl <= 1; pdl++) {
        kc_set_pdl(pdl);
        if (time_variant(s, M, launch_q8, 1, 1, x, xq, y0, y1, st, &us)) return 1;
        printf("%s\t%s_pdl%d\t1\t-\t%.2f\t%.0f\t%llu\n", s->name, label, pdl, us, M->bytes / us / 1e3,
               (unsigned long long)M->bytes);
    }
    kc_set_pdl(0);
    shape s0 = *s;
    s0.accumulate = 0;
    CK(launch_q8(&s0, M, 0, 1, 1, x, xq, y0, y1, st));
    CK(cudaStreamSynchronize(st));
    std::vector<float> a(rows_out), b(rows_out);
    CK(cudaMemcpy(a.data(), ref, rows_out * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), y0, s->rows0 * 4, cudaMemcpyDeviceToHost));
    if (s->rows1 && !s->swiglu) CK(cudaMemcpy(b.data() + s->rows0, y1, s->rows1 * 4, cudaMemcpyDeviceToHost));
    if (memcmp(a.data(), b.data(), rows_out * 4)) {
        printf("# MISMATCH %s %s vs R=1 U=1\n", s->name, label);
        (*fails)++;
    }
    return 0;
}

/* The 27B FFN's matrices, gate and up (F, D) and down (D, F) q4_0, in ncopy copies: enough that one
 * pass over the copies (240 MB, `bytes` per copy) leaves none of a launch's weights in L2 for the next;
 * quants and scales from seeds sq, sd (+ the copy and the matrix). */
typedef struct ffn_mats {
    int ncopy;
    std::vector<kc_mat> g, u, dn;
} ffn_mats;

static int ffn_mats_alloc(ffn_mats *M, int D, int F, uint64_t bytes, uint32_t sq, uint32_t sd)
{
    M->ncopy = (int)std::max<uint64_t>(2, (240ull << 20) / bytes + 1);
    M->g.resize(M->ncopy);
    M->u.resize(M->ncopy);
    M->dn.resize(M->ncopy);
    for (int c = 0; c < M->ncopy; c++) {
        kc_mat *ms[3] = {&M->g[c], &M->u[c], &M->dn[c]};
        for (int k = 0; k < 3; k++)
            if (alloc_q4(ms[k], k == 2 ? D : F, k == 2 ? F : D, sq + 13 * c + k, sd + 7 * c + k)) return 1;
    }
    return 0;
}

static void ffn_mats_free(ffn_mats *M)
{
    for (int c = 0; c < M->ncopy; c++) {
        cudaFree(M->g[c].data); cudaFree(M->g[c].d);
        cudaFree(M->u[c].data); cudaFree(M->u[c].d);
        cudaFree(M->dn[c].data); cudaFree(M->dn[c].d);
    }
}

/* The 27B FFN's two TMA GEMVs alone, back to back under PDL as in the step: the down projection (the
 * wide kernel, x in shared memory, one block per SM) at ring sizes 200 (the default: 2 stages of 8
 * rows) with its dot unrolled (q8t_dot_xs_u), as the run-time loop (q8t_wloop 1) and with x read once per 8
 * rows (q8t_wloop 2, matvec_q8t_bc_kernel; its stages whole, and as two column halves: q8t_bch), and 227 KB, and the SwiGLU (quantising its output, 2 blocks of 100 KB per SM), each with
 * phases left out (timing only, g_q8t_skip): 1 no bulk copies (the consumers' arithmetic alone), 2
 * no dots (the ring's streaming alone), 3 neither (the kernel's skeleton). Which of the two paces the
 * GEMV after its dependency wait (PERF-NOTES v18 row 2). */
static int bench_dtma(const float *x, kc_q8blk *xq, cudaStream_t st)
{
    const int D = 5120, F = 17408;
    const uint64_t bd = kc_mat_data_bytes(GGML_Q4_0, D, F) + kc_mat_scale_bytes(GGML_Q4_0, D, F);
    const uint64_t bg = 2 * (kc_mat_data_bytes(GGML_Q4_0, F, D) + kc_mat_scale_bytes(GGML_Q4_0, F, D));
    ffn_mats M;
    if (ffn_mats_alloc(&M, D, F, bd, 177u, 191u)) return 1;
    const int ncopy = M.ncopy;
    std::vector<kc_mat> &g = M.g, &u = M.u, &dn = M.dn;
    for (int c = 0; c < ncopy; c++) g[c].q8kind = u[c].q8kind = dn[c].q8kind = 2;
    float *ff, *y;
    kc_q8blk *ffq, *xq2;
    unsigned int *cnt;
    CK(cudaMalloc(&ff, F * 4));
    CK(cudaMalloc(&y, D * 4));
    CK(cudaMalloc(&ffq, F / 32 * sizeof(kc_q8blk)));
    CK(cudaMalloc(&xq2, F / 32 * sizeof(kc_q8blk)));
    CK(cudaMalloc(&cnt, F / 32 * sizeof(unsigned int)));
    CK(cudaMemset(cnt, 0, F / 32 * sizeof(unsigned int)));
    CK(kc_quantize_q8(x, D, xq, st));
    CK(kc_quantize_q8(x, F, xq2, st));
    CK(cudaMemset(y, 0, D * 4));
    CK(cudaDeviceSynchronize());
    /* ki 4: the x-broadcast form with its stages as two column halves (q8t_bch) */
    const int kbs[5] = {200, 200, 227, 200, 200}, loop[5] = {0, 1, 0, 2, 2}, bch[5] = {0, 0, 0, 0, 1};
    for (int sk = 0; sk < 4; sk++) {
        CK(cudaMemcpyToSymbol(g_q8t_skip, &sk, sizeof sk));
        for (int ki = 0; ki < 5; ki++) {
            double us;
            auto down = [&](int i) -> cudaError_t {
                kc_mat d = dn[i % ncopy];
                d.q8t_wkb = kbs[ki];
                d.q8t_wloop = loop[ki];
                const kc_mat *one[1] = {&d};
                float *Y[1] = {y};
                return kc_matvec_q8(one, Y, 1, xq2, 1, st);
            };
            kc_set_q8t_bch(bch[ki]);
            kc_set_pdl(1);
            if (time_batches(down, 3, st, &us)) return 1;
            kc_set_pdl(0);
            kc_set_q8t_bch(0);
            printf("dtma\tdown_tma%d%s%s_skip%d\t-\t-\t%.2f\t%.0f\t%llu\n", kbs[ki],
                   loop[ki] == 1 ? "_loop" : loop[ki] == 2 ? "_bc" : "", bch[ki] ? "_h" : "", sk, us,
                   bd / us / 1e3, (unsigned long long)bd);
        }
        double us;
        auto swiglu = [&](int i) -> cudaError_t {
            return kc_matvec_swiglu_q8(&g[i % ncopy], &u[i % ncopy], xq, ff, ffq, cnt, st);
        };
        kc_set_pdl(1);
        if (time_batches(swiglu, 3, st, &us)) return 1;
        kc_set_pdl(0);
        printf("dtma\tswiglu_tma_skip%d\t-\t-\t%.2f\t%.0f\t%llu\n", sk, us, bg / us / 1e3, (unsigned long long)bg);
    }
    const int zero = 0;
    CK(cudaMemcpyToSymbol(g_q8t_skip, &zero, sizeof zero));
    {
        double us;
        auto rd = [&](int i) -> cudaError_t {
            return kc_stream_read((const uint4 *)dn[i % ncopy].data, kc_mat_data_bytes(GGML_Q4_0, D, F) / 16,
                                  (uint32_t *)y, g_sms * 4, st);
        };
        if (time_batches(rd, 3, st, &us)) return 1;
        printf("dtma\tstream_read(down quants)\t-\t-\t%.2f\t%.0f\t%llu\n", us,
               kc_mat_data_bytes(GGML_Q4_0, D, F) / us / 1e3, (unsigned long long)kc_mat_data_bytes(GGML_Q4_0, D, F));
    }
    ffn_mats_free(&M);
    cudaFree(ff); cudaFree(y); cudaFree(ffq); cudaFree(xq2); cudaFree(cnt);
    fflush(stdout);
    return 0;
}

/* The TMA kernels' per-block records (KC_Q8T_DBG) of what run() launches on st, into rec: the device
 * buffer drec (cap,) armed, run, synchronised, read back (at most cap records), disarmed */
template <typename F>
static int q8t_dbg_capture(q8t_dbg_rec *drec, unsigned cap, F run, cudaStream_t st, std::vector<q8t_dbg_rec> &rec)
{
    const unsigned zero = 0;
    q8t_dbg_rec *null = NULL;
    CK(cudaMemcpyToSymbol(g_q8t_dbg, &drec, sizeof drec));
    CK(cudaMemcpyToSymbol(g_q8t_dbg_cap, &cap, sizeof cap));
    CK(cudaMemcpyToSymbol(g_q8t_dbg_n, &zero, sizeof zero));
    CK(run());
    CK(cudaStreamSynchronize(st));
    unsigned n = 0;
    CK(cudaMemcpyFromSymbol(&n, g_q8t_dbg_n, sizeof n));
    rec.resize(n < cap ? n : cap);
    CK(cudaMemcpy(rec.data(), drec, rec.size() * sizeof *drec, cudaMemcpyDeviceToHost));
    CK(cudaMemcpyToSymbol(g_q8t_dbg, &null, sizeof null));
    return 0;
}

/* the four marks' [min median max] over the records in f (sorted here), on the current line */
static void print_spread(std::vector<double> (&f)[4])
{
    for (int j = 0; j < 4; j++) {
        std::sort(f[j].begin(), f[j].end());
        printf(" [%.2f %.2f %.2f]", f[j].front(), f[j][f[j].size() / 2], f[j].back());
    }
    printf("\n");
}

/* One FFN (copy 0) right after another (copy 1) under PDL, with the TMA kernels' per-block timeline
 * (KC_Q8T_DBG): for the gate/up records (the SwiGLU kernel, or the ring FFN's first phase) and the
 * down records (the down kernel, or the ring's second phase), each field's [min, median, max] over
 * the blocks in us from copy 0's first block entry. Ring: gate/up = (entry, dependency wait passed,
 * gate/up stages done, grid barrier passed); down = (quantisation done, -, -, end). Split: gate/up =
 * (entry, wait, wait, end after the quantisation); down = (entry, wait, first stage landed, end). */
template <typename F>
static int ffn_timeline(const char *name, F run, const void *gw, const void *dw, cudaStream_t st)
{
    q8t_dbg_rec *drec;
    const unsigned dcap = 4096;
    CK(cudaMalloc(&drec, dcap * sizeof *drec));
    std::vector<q8t_dbg_rec> rec;
    auto both = [&]() -> cudaError_t {
        kc_set_pdl(1);
        cudaError_t e = run(1);
        if (e == cudaSuccess) e = run(0);
        kc_set_pdl(0);
        return e;
    };
    int rc = q8t_dbg_capture(drec, dcap, both, st, rec);
    /* KC_Q8T_DUMP=FILE: every block's record of KC_Q8T_DUMP_REPS (default 20) more captures appended
     * to FILE as TSV (variant, rep, phase, block, SM, entry, wait, first, end in us from the rep's first
     * gate/up entry), to tell a per-SM pattern of the blocks' ends from noise */
    const char *dump = getenv("KC_Q8T_DUMP");
    if (!rc && dump) {
        FILE *fp = fopen(dump, "a");
        const char *rs = getenv("KC_Q8T_DUMP_REPS");
        const int reps = rs ? atoi(rs) : 20;
        if (!fp || reps < 1) {
            fprintf(stderr, "bench_gemv: KC_Q8T_DUMP=%s: %s\n", dump,
                    !fp ? strerror(errno) : "KC_Q8T_DUMP_REPS must be a positive count");
            if (fp) fclose(fp);
            cudaFree(drec);
            return 1;
        }
        std::vector<q8t_dbg_rec> rr;
        for (int rep = 0; rep < reps && !rc; rep++) {
            rc = q8t_dbg_capture(drec, dcap, both, st, rr);
            unsigned long long t0 = ~0ull;
            for (auto &r : rr)
                if (r.w == gw) t0 = std::min(t0, r.t_entry);
            for (auto &r : rr) {
                if (r.w != gw && r.w != dw) continue;
                fprintf(fp, "%s\t%d\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n", name, rep, r.w == gw ? "gu" : "down", r.blk,
                        r.sm, ((double)r.t_entry - (double)t0) / 1e3, ((double)r.t_wait - (double)t0) / 1e3,
                        ((double)r.t_first - (double)t0) / 1e3, ((double)r.t_end - (double)t0) / 1e3);
            }
        }
        if (fclose(fp) != 0 && !rc) {
            fprintf(stderr, "bench_gemv: KC_Q8T_DUMP=%s: %s\n", dump, strerror(errno));
            rc = 1;
        }
    }
    cudaFree(drec);
    if (rc) return 1;
    unsigned long long T0 = ~0ull;
    for (auto &r : rec)
        if (r.w == gw) T0 = std::min(T0, r.t_entry);
    const char *what[2] = {"gate/up", "down"};
    const void *ws[2] = {gw, dw};
    for (int k = 0; k < 2; k++) {
        std::vector<double> f[4];
        for (auto &r : rec) {
            if (r.w != ws[k]) continue;
            const unsigned long long t[4] = {r.t_entry, r.t_wait, r.t_first, r.t_end};
            for (int j = 0; j < 4; j++) f[j].push_back(((double)t[j] - (double)T0) / 1e3);
        }
        if (f[0].empty()) continue;
        printf("# timeline %s %s (%zu blocks, us: min/median/max):", name, what[k], f[0].size());
        print_spread(f);
    }
    return 0;
}

/* the attention benches' device buffers: q (H, hd), qg (H, 2 hd), the K and V caches (kvn,) each, y (H, hd), part
 * (H, nparts, hd + 2), oq (H hd / 32,) q8 blocks, cnt (H,) tickets, pos (1,); q, qg, the caches and cnt zeroed
 * (the timings do not depend on the values) */
typedef struct attn_bufs {
    float *q, *qg, *kc, *vc, *y, *part;
    kc_q8blk *oq;
    unsigned int *cnt;
    int32_t *pos;
} attn_bufs;

static int attn_bufs_alloc(attn_bufs *b, int H, int hd, size_t kvn, int nparts)
{
    memset(b, 0, sizeof *b);
    CK(cudaMalloc(&b->q, (size_t)H * hd * 4));
    CK(cudaMalloc(&b->qg, (size_t)H * 2 * hd * 4));
    CK(cudaMalloc(&b->kc, kvn * 4));
    CK(cudaMalloc(&b->vc, kvn * 4));
    CK(cudaMalloc(&b->y, (size_t)H * hd * 4));
    CK(cudaMalloc(&b->part, (size_t)H * nparts * (hd + 2) * 4));
    CK(cudaMalloc(&b->oq, (size_t)H * hd / 32 * sizeof(kc_q8blk)));
    CK(cudaMalloc(&b->cnt, (size_t)H * 4));
    CK(cudaMalloc(&b->pos, 4));
    CK(cudaMemset(b->q, 0, (size_t)H * hd * 4));
    CK(cudaMemset(b->qg, 0, (size_t)H * 2 * hd * 4));
    CK(cudaMemset(b->kc, 0, kvn * 4));
    CK(cudaMemset(b->vc, 0, kvn * 4));
    CK(cudaMemset(b->cnt, 0, (size_t)H * 4));
    return 0;
}

static void attn_bufs_free(attn_bufs *b)
{
    cudaFree(b->q); cudaFree(b->qg); cudaFree(b->kc); cudaFree(b->vc); cudaFree(b->y); cudaFree(b->part);
    cudaFree(b->oq); cudaFree(b->cnt); cudaFree(b->pos);
}

/* --shape attnkv: does the kv-head attention's read pattern bound it (PERF-NOTES v38 row 2)? The same bytes (K and V
 * rows of n x 4 positions x 1 KB) and blocks, through caches of 4, 2 and 1 kv heads: nkv = 4 is the engine's (27B:
 * 24/4 heads, each kv head's rows 4 KB apart), nkv = 1 (6/1 heads, 4n positions) reads every slot's 32 rows as one
 * contiguous 32 KB. attention_kvcx over clusters of 8, 64 and 96 blocks in all (S = 64 / 8 / nkv, 96 / 8 / nkv);
 * n = 4096 and 16384 positions per kv head of the 27B shape. Bytes column: K and V bytes read. */
static int bench_attn_layout(cudaStream_t st)
{
    const int hd = 256, G = 6, nlist[2] = {4096, 16384}, nkvs[3] = {4, 2, 1};
    const size_t kvmax = (size_t)16384 * 4 * hd; /* floats per cache at the largest case */
    attn_bufs b;
    if (attn_bufs_alloc(&b, 24, hd, kvmax, 32)) return 1;
    float *q = b.q, *qg = b.qg, *kc = b.kc, *vc = b.vc, *y = b.y, *part = b.part;
    kc_q8blk *oq = b.oq;
    unsigned int *cnt = b.cnt;
    int32_t *pos = b.pos;
    CK(kc_attention_setup(4096, hd));
    for (int ni = 0; ni < 2; ni++)
        for (int ki = 0; ki < 3; ki++)
            for (int nb = 64; nb <= 96; nb += 32) {
                const int nkv = nkvs[ki], H = G * nkv, npos = nlist[ni] * 4 / nkv, sp = nb / 8 / nkv;
                if (!kc_attention_kvcx_ok(H, nkv, hd, 8, sp, npos)) continue;
                kc_tmap tm[2];
                CK(kc_kv_tmap(&tm[0], kc, npos, nkv, hd));
                CK(kc_kv_tmap(&tm[1], vc, npos, nkv, hd));
                const int p = npos - 1;
                CK(cudaMemcpy(pos, &p, 4, cudaMemcpyHostToDevice));
                double us;
                auto run = [&](int) {
                    return kc_attention_kvcx(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, nkv, hd, 8, sp,
                                             npos, 0, 0.0f, 0.0f, 0.0625f, pos, tm, part, cnt, 0, st);
                };
                if (time_batches(run, 3, st, &us)) return 1;
                const size_t bytes = (size_t)npos * nkv * hd * 8;
                printf("attnkv\tattention_kvcx(8x%d) nkv=%d n=%d blocks=%d\t-\t-\t%.2f\t%.0f\t%zu\n", sp, nkv, npos, nb,
                       us, bytes / us * 1e-3, bytes);
            }
    attn_bufs_free(&b);
    fflush(stdout);
    return 0;
}

/* --shape attntl: where the kv-head attention's time goes (PERF-NOTES v38: ~10 us per launch at any n, ~3.4 TB/s
 * past it). attention_kvct over 16 blocks per kv head and attention_kvcx over 3 clusters of 8, 27B heads (24/4 x
 * 256), each with its merge by pull and by push (attn_kvc_push, v40), n = 256 and 4096, AKC_TL_LAUNCHES launches
 * back to back after 3 of warm-up, every block's marks (consumer thread 0's %globaltimer, kernels.cu KC_AKC_DBG):
 * entry, PDL wait passed, q in shared memory, first K slot landed, scores done, p x V done, cluster partials
 * visible (push: a merging block's partials received; the others' arrival), end. A launch's blocks are the grid-size records with
 * the earliest entries in turn (each launch's blocks all enter before the next launch's: one block per SM, and the
 * next launch's blocks become resident only as these leave). One line per kernel and n: per mark, the median over
 * the middle launches of [the median block, the last block] in us from the launch's first entry, and the launch
 * period (first entry to the next launch's first entry). */
#define AKC_TL_LAUNCHES 24
static int bench_attn_timeline(cudaStream_t st)
{
    const int H = 24, Hkv = 4, hd = 256, ctx = 4096, nlist[2] = {256, 4096};
    const size_t kvn = (size_t)ctx * Hkv * hd;
    const char *mark[8] = {"entry", "wait", "q", "first", "scores", "pv", "merge", "end"};
    akc_dbg_rec *rec;
    const unsigned cap = AKC_TL_LAUNCHES * 96;
    attn_bufs b;
    if (attn_bufs_alloc(&b, H, hd, kvn, 3)) return 1;
    float *q = b.q, *qg = b.qg, *kc = b.kc, *vc = b.vc, *y = b.y, *part = b.part;
    kc_q8blk *oq = b.oq;
    unsigned int *cnt = b.cnt;
    int32_t *pos = b.pos;
    CK(cudaMalloc(&rec, cap * sizeof *rec));
    CK(kc_attention_setup(ctx, hd));
    kc_tmap tm[2];
    CK(kc_kv_tmap(&tm[0], kc, ctx, Hkv, hd));
    CK(kc_kv_tmap(&tm[1], vc, ctx, Hkv, hd));
    std::vector<akc_dbg_rec> h(cap);
    for (int ni = 0; ni < 2; ni++)
        for (int ki = 0; ki < 4; ki++) { /* bit 0: kvcx(8x3), else kvct(16); bit 1: the push merge (attn_kvc_push) */
            const int xs = ki & 1, push = ki >> 1, p = nlist[ni] - 1, nb = xs ? 96 : 64;
            CK(cudaMemcpy(pos, &p, 4, cudaMemcpyHostToDevice));
            auto launch = [&]() {
                return xs ? kc_attention_kvcx(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, 8, 3,
                                              ctx, 0, 0.0f, 0.0f, 0.0625f, pos, tm, part, cnt, push, st)
                          : kc_attention_kvc(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, 16,
                                             ctx, 0, 0.0f, 0.0f, 0.0625f, pos, tm, push, st);
            };
            akc_dbg_rec *none = NULL;
            const unsigned zero = 0;
            CK(cudaMemcpyToSymbol(g_akc_dbg, &none, sizeof none));
            for (int i = 0; i < 3; i++) CK(launch());
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpyToSymbol(g_akc_dbg_n, &zero, sizeof zero));
            CK(cudaMemcpyToSymbol(g_akc_dbg_cap, &cap, sizeof cap));
            CK(cudaMemcpyToSymbol(g_akc_dbg, &rec, sizeof rec));
            for (int i = 0; i < AKC_TL_LAUNCHES; i++) CK(launch());
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpyToSymbol(g_akc_dbg, &none, sizeof none));
            unsigned got = 0;
            CK(cudaMemcpyFromSymbol(&got, g_akc_dbg_n, sizeof got));
            if (got != (unsigned)(AKC_TL_LAUNCHES * nb)) {
                fprintf(stderr, "bench_gemv attntl: %u block records, expected %d\n", got, AKC_TL_LAUNCHES * nb);
                return 1;
            }
            CK(cudaMemcpy(h.data(), rec, got * sizeof *rec, cudaMemcpyDeviceToHost));
            std::sort(h.begin(), h.begin() + got, [](const akc_dbg_rec &a, const akc_dbg_rec &b) { return a.t[0] < b.t[0]; });
            /* per mark: over launches 4 .. L-4, [median block, last block] us from the launch's first entry */
            std::vector<double> med[8], last[8], period;
            for (int l = 4; l < AKC_TL_LAUNCHES - 4; l++) {
                const akc_dbg_rec *r = h.data() + (size_t)l * nb;
                const double t0 = (double)r[0].t[0];
                period.push_back(((double)r[nb].t[0] - t0) * 1e-3);
                for (int m = 0; m < 8; m++) {
                    std::vector<double> v;
                    for (int b = 0; b < nb; b++)
                        if (r[b].t[m]) v.push_back(((double)r[b].t[m] - t0) * 1e-3);
                    if (v.empty()) continue;
                    std::sort(v.begin(), v.end());
                    med[m].push_back(v[v.size() / 2]);
                    last[m].push_back(v.back());
                }
            }
            auto median = [](std::vector<double> &v) {
                std::sort(v.begin(), v.end());
                return v.empty() ? 0.0 : v[v.size() / 2];
            };
            printf("# attntl %s%s n=%d: period %.2f us;", xs ? "attention_kvcx(8x3)" : "attention_kvct(16)",
                   push ? " push" : "", nlist[ni], median(period));
            for (int m = 0; m < 8; m++) printf(" %s %.2f [%.2f]", mark[m], median(med[m]), median(last[m]));
            printf("\n");
        }
    attn_bufs_free(&b);
    cudaFree(rec);
    fflush(stdout);
    return 0;
}

/* --shape gdnwin: the window of a 27B GDN layer between gdn_prep and the norm — the delta rule with its
 * gated norm (kc_delta_step_norm_q8: 48 heads, 3 MB of state) and the out projection after it (5120 x
 * 6144 q4_0 with the residual, the engine's grid of 216 blocks: q8t_ogrid=auto) — NP pairs back to back
 * under PDL, the state and the weights rotated over copies so that both come from HBM as in the step.
 * Per-block timeline (KC_Q8T_DBG): the delta rule's (entry, wait passed, column computed, end), the out
 * projection's (entry, wait passed, first stage landed, end), in us from the pair's first delta block
 * passing its wait; [min median max] over the blocks of the middle pairs; then the same with the out
 * projection's bulk copies left out (timing only: no preload beside the delta rule). Why: v25 found the window's
 * time conserved between the two kernels (cuda/PERF-NOTES.md v25 row 5); this says what each phase takes.
 * KC_GDNWIN_MARK=k moves the third mark (g_q8t_dbg_mark): 1..8 the out projection's k-th stage done, 9 the
 * delta rule's state stored (cuda/PERF-NOTES.md v26). */
static int bench_gdnwin(cudaStream_t st)
{
    const int kh = 16, vh = 48, kd = 128, D = 5120, V = vh * kd, NS = 8, NP = 8;
    const size_t nS = (size_t)vh * kd * kd;
    /* refused before anything is allocated */
    const char *mark_env = getenv("KC_GDNWIN_MARK");
    char *mark_end = NULL;
    const long mark_l = mark_env ? strtol(mark_env, &mark_end, 10) : 0;
    if (mark_env && (mark_end == mark_env || *mark_end || mark_l < 0 || mark_l > 9)) {
        fprintf(stderr, "bench_gemv: KC_GDNWIN_MARK=%s: 0..9 expected\n", mark_env);
        return 1;
    }
    const int mark = (int)mark_l;
    std::vector<kc_mat> W(NS);
    std::vector<float *> S(NS);
    for (int c = 0; c < NS; c++) {
        if (alloc_q4(&W[c], D, V, 4100u + 7 * c, 4200u + 11 * c)) return 1;
        W[c].q8kind = 2;
        W[c].q8t_sm = -216;
        CK(cudaMalloc(&S[c], nS * 4));
        CK(cudaMemset(S[c], 0, nS * 4));
    }
    float *q, *k, *v, *g, *beta, *o, *z, *w, *y, *x;
    kc_q8blk *yq;
    CK(cudaMalloc(&q, kh * kd * 4));
    CK(cudaMalloc(&k, kh * kd * 4));
    CK(cudaMalloc(&v, V * 4));
    CK(cudaMalloc(&g, vh * 4));
    CK(cudaMalloc(&beta, vh * 4));
    CK(cudaMalloc(&o, V * 4));
    CK(cudaMalloc(&z, V * 4));
    CK(cudaMalloc(&w, kd * 4));
    CK(cudaMalloc(&y, V * 4));
    CK(cudaMalloc(&x, D * 4));
    CK(cudaMalloc(&yq, V / 32 * sizeof(kc_q8blk)));
    CK(cudaMemset(q, 0, kh * kd * 4)); /* zeros: timing only */
    CK(cudaMemset(k, 0, kh * kd * 4));
    CK(cudaMemset(v, 0, V * 4));
    CK(cudaMemset(g, 0, vh * 4));
    CK(cudaMemset(beta, 0, vh * 4));
    CK(cudaMemset(z, 0, V * 4));
    CK(cudaMemset(w, 0, kd * 4));
    CK(cudaMemset(x, 0, D * 4));
    CK(cudaDeviceSynchronize());
    q8t_dbg_rec *drec;
    const unsigned dcap = 8192;
    CK(cudaMalloc(&drec, dcap * sizeof *drec));
    std::vector<q8t_dbg_rec> rec;
    CK(cudaMemcpyToSymbol(g_q8t_dbg_mark, &mark, sizeof mark));
    auto run = [&]() -> cudaError_t {
        kc_set_pdl(1);
        cudaError_t e = cudaSuccess;
        for (int i = 0; i < NP && e == cudaSuccess; i++) {
            e = kc_delta_step_norm_q8(S[i % NS], q, k, v, g, beta, o, z, w, 1e-6f, y, yq, kh, kd, vh, kd, st);
            const kc_mat *one[1] = {&W[i % NS]};
            float *Y[1] = {x};
            if (e == cudaSuccess) e = kc_matvec_q8(one, Y, 1, yq, 1, st);
        }
        kc_set_pdl(0);
        return e;
    };
    for (int sk = 0; sk <= 1; sk++) { /* 1: the out projection without its bulk copies (no preload) */
        CK(cudaMemcpyToSymbol(g_q8t_skip, &sk, sizeof sk));
        if (q8t_dbg_capture(drec, dcap, run, st, rec)) return 1; /* warm-up: graphs, caches of the code */
        if (q8t_dbg_capture(drec, dcap, run, st, rec)) return 1;
        /* pair i: its delta records have w == S[i % NS] and come before the out projection's with w ==
         * W[i % NS].data; with NP == NS each pointer names one pair */
        std::vector<double> f[2][4];
        for (int i = 2; i < NP - 1; i++) { /* the middle pairs: a predecessor and a successor each */
            unsigned long long t0 = ~0ull;
            for (auto &r : rec)
                if (r.w == S[i]) t0 = std::min(t0, r.t_wait);
            for (auto &r : rec) {
                const int kind = r.w == S[i] ? 0 : r.w == W[i].data ? 1 : -1;
                if (kind < 0) continue;
                const unsigned long long t[4] = {r.t_entry, r.t_wait, r.t_first, r.t_end};
                for (int j = 0; j < 4; j++) f[kind][j].push_back(((double)t[j] - (double)t0) / 1e3);
            }
        }
        char what[2][64];
        snprintf(what[0], sizeof what[0], "delta rule (entry, wait, %s, end)",
                 mark == 9 ? "state stored" : "column computed");
        if (mark >= 1 && mark <= 8) snprintf(what[1], sizeof what[1], "out projection (entry, wait, stage %d done, end)", mark);
        else snprintf(what[1], sizeof what[1], "out projection (entry, wait, first stage, end)");
        for (int kind = 0; kind < 2; kind++) {
            if (f[kind][0].empty()) continue;
            printf("# gdnwin%s %s, %zu records, us from the delta rule's first wait passed [min median max]:",
                   sk ? " (out projection without weight copies)" : "", what[kind], f[kind][0].size());
            print_spread(f[kind]);
        }
    }
    const int zero = 0;
    CK(cudaMemcpyToSymbol(g_q8t_skip, &zero, sizeof zero));
    CK(cudaMemcpyToSymbol(g_q8t_dbg_mark, &zero, sizeof zero));
    fflush(stdout);
    cudaFree(drec);
    for (int c = 0; c < NS; c++) {
        cudaFree(W[c].data);
        cudaFree(W[c].d);
        cudaFree(S[c]);
    }
    cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(g); cudaFree(beta); cudaFree(o); cudaFree(z); cudaFree(w);
    cudaFree(y); cudaFree(x); cudaFree(yq);
    return 0;
}

/* The FFN of a 27B layer (gate/up 17408 x 5120, down 5120 x 17408: 150 MB) eight ways, each with
 * PDL (as in the engine's graph) and without: x-stationary SwiGLU, quantize_q8, streaming down with
 * the residual add; the same with the down projection on matvec_q8xs_kernel; the fused persistent
 * kernel (kc_ffn_q8); the engine's default launches (q8gemv=tma: the TMA SwiGLU quantising its
 * output, the TMA down projection); the FFN through one ring (kc_ffn_ring, ffn=ring) with 16 and
 * with 8 consumer warps; the engine's default launches with the x-broadcast down projection (q8t_wu=2) with
 * whole stages and with column halves (q8t_bch). The eight results are compared bit for bit. In the
 * timeline records the x-broadcast kernel's third mark is its first stage released, the other TMA
 * kernels' their first stage's wait passed. */
static int bench_ffn(const float *x, kc_q8blk *xq, cudaStream_t st, int *fails)
{
    const int D = 5120, F = 17408;
    const uint64_t bytes = 2 * (kc_mat_data_bytes(GGML_Q4_0, F, D) + kc_mat_scale_bytes(GGML_Q4_0, F, D)) +
                           kc_mat_data_bytes(GGML_Q4_0, D, F) + kc_mat_scale_bytes(GGML_Q4_0, D, F);
    ffn_mats M;
    if (ffn_mats_alloc(&M, D, F, bytes, 77u, 91u)) return 1;
    const int ncopy = M.ncopy;
    std::vector<kc_mat> &g = M.g, &u = M.u, &dn = M.dn;
    for (int c = 0; c < ncopy; c++) g[c].early = u[c].early = dn[c].early = 1;
    float *ff, *y;
    kc_q8blk *ffq;
    unsigned int *bar, *cnt;
    CK(cudaMalloc(&ff, F * 4));
    CK(cudaMalloc(&y, D * 4));
    CK(cudaMalloc(&ffq, F / 32 * sizeof(kc_q8blk)));
    CK(cudaMalloc(&bar, 8));
    CK(cudaMemset(bar, 0, 8));
    CK(cudaMalloc(&cnt, F / 32 * sizeof(unsigned int)));
    CK(cudaMemset(cnt, 0, F / 32 * sizeof(unsigned int)));
    CK(kc_quantize_q8(x, D, xq, st));
    CK(cudaDeviceSynchronize());
    const char *names[8] = {"ffn_split(swiglu_xs+quantize+down_stream)", "ffn_split(swiglu_xs+quantize+down_xs)",
                            "ffn_fused", "ffn_split(swiglu_tma_quantising+down_tma)", "ffn_ring16", "ffn_ring8",
                            "ffn_split(swiglu_tma_quantising+down_bc)", "ffn_split(swiglu_tma_quantising+down_bc_h)"};
    std::vector<float> out[8];
    for (int v = 0; v < 8; v++) {
        kc_set_ffn_ring_warps(v == 5 ? 8 : 16);
        kc_set_q8t_bch(v == 7); /* the engine's down projection (q8t_wu=2): whole stages, column halves */
        auto run = [&](int c) -> cudaError_t {
            if (v == 2) return kc_ffn_q8(&g[c], &u[c], &dn[c], xq, ff, ffq, y, bar, st);
            if (v >= 3) {
                kc_mat gt = g[c], ut = u[c], dt = dn[c];
                gt.q8kind = ut.q8kind = dt.q8kind = 2;
                if (v >= 6) dt.q8t_wloop = 2;
                if (v == 4 || v == 5) return kc_ffn_ring(&gt, &ut, &dt, xq, ff, ffq, cnt, bar, y, st);
                const kc_mat *one[1] = {&dt};
                float *Y[1] = {y};
                cudaError_t e = kc_matvec_swiglu_q8(&gt, &ut, xq, ff, ffq, cnt, st);
                if (e == cudaSuccess) e = kc_matvec_q8(one, Y, 1, ffq, 1, st);
                return e;
            }
            cudaError_t e = kc_matvec_swiglu_q8(&g[c], &u[c], xq, ff, NULL, NULL, st);
            if (e == cudaSuccess) e = kc_quantize_q8(ff, F, ffq, st);
            kc_mat d = dn[c];
            d.q8wide = v == 1 ? 3 : 0;
            const kc_mat *one[1] = {&d};
            float *Y[1] = {y};
            if (e == cudaSuccess) e = kc_matvec_q8(one, Y, 1, ffq, 1, st);
            return e;
        };
        for (int pdl = 0; pdl <= 1; pdl++) {
            kc_set_pdl(pdl);
            double us;
            if (time_batches([&](int c) { return run(c % ncopy); }, 3, st, &us)) return 1;
            printf("ffn\t%s_pdl%d\t-\t-\t%.2f\t%.0f\t%llu\n", names[v], pdl, us, bytes / us / 1e3, (unsigned long long)bytes);
        }
        kc_set_pdl(0);
        CK(cudaMemset(y, 0, D * 4));
        CK(run(0));
        CK(cudaStreamSynchronize(st));
        out[v].resize(D);
        CK(cudaMemcpy(out[v].data(), y, D * 4, cudaMemcpyDeviceToHost));
        if (v && memcmp(out[v].data(), out[0].data(), D * 4)) {
            printf("# MISMATCH ffn %s vs %s\n", names[v], names[0]);
            (*fails)++;
        }
        if (v >= 3 && ffn_timeline(names[v], run, g[0].data, dn[0].data, st)) return 1;
    }
    kc_set_q8t_bch(0);
    /* the streaming read of the same bytes' worth (the quants of the three matrices, copy by copy) */
    {
        double us;
        const uint64_t qb = 2 * kc_mat_data_bytes(GGML_Q4_0, F, D) + kc_mat_data_bytes(GGML_Q4_0, D, F);
        auto read3 = [&](int i) -> cudaError_t {
            const int c = i % ncopy;
            cudaError_t e = kc_stream_read((const uint4 *)g[c].data, kc_mat_data_bytes(GGML_Q4_0, F, D) / 16, (uint32_t *)y, g_sms * 4, st);
            if (e == cudaSuccess)
                e = kc_stream_read((const uint4 *)u[c].data, kc_mat_data_bytes(GGML_Q4_0, F, D) / 16, (uint32_t *)y, g_sms * 4, st);
            if (e == cudaSuccess)
                e = kc_stream_read((const uint4 *)dn[c].data, kc_mat_data_bytes(GGML_Q4_0, D, F) / 16, (uint32_t *)y, g_sms * 4, st);
            return e;
        };
        if (time_batches(read3, 0, st, &us)) return 1;
        printf("ffn\tstream_read(quants, 3 launches)\t-\t-\t%.2f\t%.0f\t%llu\n", us, qb / us / 1e3, (unsigned long long)qb);
    }
    ffn_mats_free(&M);
    cudaFree(ff); cudaFree(y); cudaFree(ffq); cudaFree(bar); cudaFree(cnt);
    fflush(stdout);
    return 0;
}

/* ---- Does a weight prefetched into L2 make the GEMV that reads it faster? (PERF-NOTES v13) ----
 * v12's pf_next (the current GEMV's tail warps prefetch the next GEMV's first MB into L2) lost in
 * proportion to the bytes, and why was not known. Two measurements:
 * (1) one GEMV after an L2 flush (a 512 MB streaming read): cold; after its weights (all, or the
 *     first 8 MB) were bulk-prefetched into L2 and given 100 us to land; after a first demand read.
 * (2) a chain of 16 dependent x-stationary GEMVs (5120 x 5120, distinct weights, each followed by
 *     quantize_q8 of its output and a 1-thread progress mark; PDL) with and without a concurrent
 *     run-ahead prefetcher on a second stream: one warp that, while GEMV i - 1 runs (progress mark),
 *     bulk-prefetches GEMV i's weights (all, or the first 8 MB) into L2. */
__global__ void pf_bulk_kernel(const char *p, uint64_t n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uint64_t w = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) >> 5, nw = (gridDim.x * (uint64_t)blockDim.x) >> 5;
    if (threadIdx.x & 31) return;
    for (uint64_t off = w * 16384; off < n; off += nw * 16384) {
        const uint64_t len = n - off < 16384 ? n - off : 16384;
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + off), "r"((unsigned)len) : "memory");
    }
#endif
}
__global__ void spin_kernel(long long cycles)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
__global__ void mark_kernel(unsigned int *prog, unsigned int v)
{
    kc_pdl_begin();
    if (threadIdx.x == 0) atomicExch(prog, v);
}
/* the run-ahead prefetcher: op i's first want[i] bytes (quants, then scales) once progress >= i */
#define PF_CHAIN 16
typedef struct pf_plan {
    const char *q[PF_CHAIN], *d[PF_CHAIN];
    uint64_t nq[PF_CHAIN], nd[PF_CHAIN];
} pf_plan;
__global__ void runahead_kernel(const pf_plan plan, const unsigned int *prog, int n, uint64_t limit)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const int lane = threadIdx.x & 31;
    for (int i = 1; i < n; i++) {
        unsigned int now;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(prog) : "memory");
        } while (now + 1 < (unsigned)i); /* GEMV i - 1 has started (mark i - 1 written after GEMV i - 2) */
        const uint64_t nq = plan.nq[i] < limit ? plan.nq[i] : limit, nd = plan.nd[i];
        for (uint64_t off = (uint64_t)lane * 16384; off < nq; off += 32 * 16384) {
            const uint64_t len = nq - off < 16384 ? nq - off : 16384;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(plan.q[i] + off), "r"((unsigned)len) : "memory");
        }
        for (uint64_t off = (uint64_t)lane * 16384; off < nd; off += 32 * 16384) {
            const uint64_t len = nd - off < 16384 ? nd - off : 16384;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(plan.d[i] + off), "r"((unsigned)len) : "memory");
        }
    }
#endif
}

/* ---- the first measurement of the plan after v15 (PERF-NOTES "After v15"): the same chain of 16
 * dependent 5120 x 5120 GEMVs (+ quantize_q8 of each output) as ONE persistent kernel, one block per
 * SM, whose producer warp streams the block's rows of EVERY GEMV through one TMA ring in chain order,
 * running ahead of the dependencies by the ring's size; the consumers of GEMV g wait on a counter of
 * the blocks that finished GEMV g - 1 (its rows and their q8 groups: each block quantises the groups
 * inside its rows, a group shared with a neighbour by a ticket, as matvec_swiglu_q8t_kernel). Same
 * per-row arithmetic (q8t_dot) and quantisation (q8_quantize_warp) as the kernels: the final output
 * must equal the kernel chain's bit for bit. Written in session 7, measured in session 8 (PERF-NOTES
 * v16 rows 1-1d): chain_persistent_kernel below, with its variants as template flags. ---- */
#define PCH_N 16
#define PCH_TS 20
typedef struct pch_plan {
    kc_mat W[PCH_N];     /* (D, D) q4_0 layout 0 */
    float *y;            /* (PCH_N, D): GEMV g's output */
    kc_q8blk *xq;        /* (PCH_N + 1, D/32): xq[0] the input, xq[g + 1] = quantize_q8(y[g]) */
    unsigned int *done;  /* (PCH_N,) blocks past GEMV g; zero before the launch */
    unsigned int *cnt;   /* (PCH_N, D/32) tickets of the groups two blocks share; zero before */
    unsigned long long *ts; /* (PCH_N, grid, PCH_TS) thread 0's %globaltimer: waited, rows done, groups done, published, x loaded, stage u ready [5+u], computed [10+u], issued by the producer [15+u]; or NULL */
} pch_plan;
__device__ __forceinline__ unsigned long long pch_now(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void pch_wait_count(const unsigned int *p, unsigned int target)
{
    unsigned int v;
    do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    } while (v < target);
}

/* The chain as one persistent kernel; all flags false is the plan as written (session 7). Variants
 * (session 8, after its timeline showed ~14 us per GEMV of which the fetches were not the cause): ILP: a warp waits for all the block's stages of a GEMV, then
 * computes its rows of all of them interleaved (independent accumulators, each row's order as
 * q8t_dot: the same bits); XLOCAL: no tickets and no published q8 groups: every block quantises the
 * whole of y[g - 1] (D floats from L2) into shared memory itself, so a GEMV's only cross-block edge is
 * one counter; NODATA: the consumers skip the ring after its first fill (wrong outputs, timing only:
 * the chain's sync + compute critical path without any weight traffic); XSHARE: x copied once per
 * block into shared memory (not loaded by each warp: PERF-NOTES v16 row 1b); NOQUANT: no q8 groups
 * published (timing only: what the quantisation and its tickets cost); BPS: blocks per SM (the grid is
 * BPS x SMs). Needs per <= PCH_PMAX, and ILP per <= ns. p.ts: thread 0's timeline (not with ILP). */
#define PCH_PMAX 5
template <int NBL, bool ILP, bool XLOCAL, bool NODATA, bool XSHARE = false, bool NOQUANT = false, int BPS = 1>
__global__ void __launch_bounds__(Q8T_THREADS, BPS) chain_persistent_kernel(const pch_plan p, int D, int ns)
{
    extern __shared__ __align__(128) unsigned char q8t_smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nb = D / 32;
    const size_t stage_bytes = (size_t)Q8T_ROWS * nb * 18;
    int u0, u1;
    q8t_share(D / Q8T_ROWS, u0, u1);
    const int per = u1 - u0;
    unsigned char *ring = q8t_smem + Q8T_BAR_BYTES;
    float *ys = (float *)(ring + ns * stage_bytes);                              /* (per * 8,) */
    kc_q8blk *xsm = (kc_q8blk *)(ring + ns * stage_bytes + PCH_PMAX * Q8T_ROWS * 4); /* (nb,) XLOCAL */
    q8t_ring_init(q8t_smem, ns);
    if (warp == Q8M_WARPS) {
        if (lane == 0)
            for (int t = 0; t < (NODATA ? (ns < per ? ns : per) : PCH_N * per); t++) {
                const int g = t / per, u = u0 + t % per, s = t % ns, lap = t / ns;
                if (lap) mbar_wait(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)), (lap - 1) & 1);
                const uint32_t bar = smem_addr(q8t_smem + 8 * s);
                unsigned char *st = ring + s * stage_bytes;
                mbar_expect_tx(bar, (uint32_t)Q8T_ROWS * nb * 18u);
                bulk_g2s(smem_addr(st), (const unsigned char *)p.W[g].data + (size_t)u * Q8T_ROWS * nb * 16,
                         (uint32_t)Q8T_ROWS * nb * 16, bar);
                bulk_g2s(smem_addr(st + (size_t)Q8T_ROWS * nb * 16), p.W[g].d + (size_t)u * Q8T_ROWS * nb,
                         (uint32_t)Q8T_ROWS * nb * 2, bar);
                if (p.ts && t % per < 5) p.ts[((size_t)g * gridDim.x + blockIdx.x) * PCH_TS + 15 + t % per] = pch_now();
            }
        return;
    }
    const int rlo = u0 * Q8T_ROWS, rhi = u1 * Q8T_ROWS;
    if (NODATA) /* the first fill only, then every GEMV reads it */
        for (int u = 0; u < (ns < per ? ns : per); u++) mbar_wait(smem_addr(q8t_smem + 8 * u), 0);
    for (int g = 0; g < PCH_N; g++) {
        if (g) { /* one spinner per block (every thread polling one word was no faster) */
            if (threadIdx.x == 0) {
                pch_wait_count(&p.done[g - 1], gridDim.x);
                __threadfence();
            }
            asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
        }
        unsigned long long *ts = p.ts && !ILP ? p.ts + ((size_t)g * gridDim.x + blockIdx.x) * PCH_TS : NULL;
        if (ts && threadIdx.x == 0) ts[0] = pch_now();
        int4 xa[NBL], xb[NBL];
        float xd[NBL];
        int xs[NBL];
        const kc_q8blk *xq = p.xq + (size_t)g * nb;
        if (XLOCAL && g) {
            const float *yp = p.y + (size_t)(g - 1) * D;
            for (int grp = warp; grp < nb; grp += Q8M_WARPS) q8_quantize_warp(__ldcg(yp + grp * 32 + lane), xsm + grp);
            asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
            xq = xsm;
        }
        if (XSHARE) { /* the block's one copy of x: 1/8 of the L2 reads of per-warp loads */
            for (int i = threadIdx.x; i < nb * 3; i += 32 * Q8M_WARPS) ((int4 *)xsm)[i] = __ldcg((const int4 *)xq + i);
            asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
            xq = xsm;
        }
        if ((XLOCAL && g) || XSHARE) q8x_load_x<NBL, XLOAD_SMEM>(xq, nb, xa, xb, xd, xs);
        else q8x_load_x<NBL, XLOAD_CG>(xq, nb, xa, xb, xd, xs); /* through L2: this grid wrote it */
        if (ts && threadIdx.x == 0) {
            asm volatile("" ::"f"(xd[0]), "f"(xd[NBL - 1]));
            ts[4] = pch_now();
        }
        float *y = p.y + (size_t)g * D;
        if (ILP) {
            const unsigned char *sp[PCH_PMAX];
#pragma unroll
            for (int u = 0; u < PCH_PMAX; u++) {
                const int t = NODATA ? u : g * per + u, s = t % ns, lap = t / ns;
                sp[u] = ring + s * stage_bytes;
                if (u < per && !NODATA) mbar_wait(smem_addr(q8t_smem + 8 * s), lap & 1);
            }
            float acc[PCH_PMAX];
#pragma unroll
            for (int u = 0; u < PCH_PMAX; u++) acc[u] = 0.0f;
#pragma unroll
            for (int k = 0; k < NBL; k++) {
                const int b = lane + 32 * k;
                if (b < nb) {
#pragma unroll
                    for (int u = 0; u < PCH_PMAX; u++)
                        if (u < per) {
                            const uint4 *q = (const uint4 *)(sp[u] + (size_t)warp * nb * 16);
                            const __half *d = (const __half *)(sp[u] + (size_t)Q8T_ROWS * nb * 16 + (size_t)warp * nb * 2);
                            const int c = q4q8_block_dot(q[b], xa[k], xb[k], xs[k]);
                            const float sc = __half2float(d[b]) * xd[k];
                            acc[u] = acc[u] + sc * (float)c;
                        }
                }
            }
#pragma unroll
            for (int u = 0; u < PCH_PMAX; u++)
                if (u < per) {
                    const float sum = warp_sum(acc[u]);
                    if (lane == 0) {
                        y[rlo + u * Q8T_ROWS + warp] = sum;
                        ys[u * Q8T_ROWS + warp] = sum;
                    }
                }
            __syncwarp();
            if (lane == 0 && !NODATA)
                for (int u = 0; u < per; u++) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + (g * per + u) % ns)));
        } else {
            for (int u = 0; u < per; u++) {
                const int t = NODATA ? u % ns : g * per + u, s = t % ns, lap = t / ns;
                if (!NODATA) mbar_wait(smem_addr(q8t_smem + 8 * s), lap & 1);
                if (ts && threadIdx.x == 0 && u < 5) ts[5 + u] = pch_now();
                const int row = rlo + u * Q8T_ROWS + warp;
                const float sum = q8t_dot<NBL>(ring + s * stage_bytes, nb, warp, xa, xb, xd, xs);
                if (lane == 0) {
                    y[row] = sum;
                    ys[row - rlo] = sum;
                }
                if (ts && threadIdx.x == 0 && u < 5) {
                    asm volatile("" ::"f"(sum));
                    ts[10 + u] = pch_now();
                }
                __syncwarp();
                if (lane == 0 && !NODATA) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)));
            }
        }
        asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory"); /* the block's rows written */
        if (ts && threadIdx.x == 0) ts[1] = pch_now();
        if (!XLOCAL && !NOQUANT) {
            kc_q8blk *yq = p.xq + (size_t)(g + 1) * nb;
            unsigned int *cnt = p.cnt + (size_t)g * nb;
            for (int grp = rlo / 32 + warp; grp <= (rhi - 1) / 32; grp += Q8M_WARPS) {
                const int lo = grp * 32 > rlo ? grp * 32 : rlo, hi = grp * 32 + 32 < rhi ? grp * 32 + 32 : rhi;
                if (hi - lo == 32) {
                    q8_quantize_warp(ys[grp * 32 + lane - rlo], yq + grp);
                    continue;
                }
                int last = 0;
                if (lane == 0) {
                    __threadfence();
                    last = atomicAdd(&cnt[grp], (unsigned)(hi - lo)) + (unsigned)(hi - lo) == 32u;
                }
                if (__shfl_sync(0xffffffffu, last, 0)) {
                    __threadfence();
                    q8_quantize_warp(__ldcg(&y[grp * 32 + lane]), yq + grp);
                }
            }
            asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory"); /* its groups written */
        }
        if (ts && threadIdx.x == 0) ts[2] = pch_now();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(&p.done[g], 1u);
            if (ts) ts[3] = pch_now();
        }
    }
}


/* The grid-wide counter step alone (session 8: the NODATA chain still took ~14 us per GEMV): n rounds
 * of [wait for done[g - 1] == grid (thread 0), bar.sync, load x (nbx q8 blocks of round g, replica
 * blockIdx % R), bar.sync, thread 0: fence, atomicAdd(done[g])]. mode 0: no x; 1: each warp loads
 * its lanes' 16-byte words of the 5 blocks (nbx 160) by ld.cg; 33: each warp loads all 48 bytes of
 * its lanes' blocks by ld.cg (what the GEMVs' warps read); 65: the same by ld.ca (the engine's
 * kernels, through L1); 17: the block's one copy into shared memory by ld.cg. x (n, R, nbx) blocks. */
__global__ void __launch_bounds__(Q8T_THREADS, 1) sync_probe_kernel(unsigned int *done, const kc_q8blk *xq, float *out,
                                                                   int n, int mode, int nbx, int R)
{
    extern __shared__ int4 xsh[]; /* (nbx * 3,) mode 17 */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == Q8M_WARPS) return;
    float acc = 0.0f;
    for (int g = 0; g < n; g++) {
        if (g) {
            if (threadIdx.x == 0) {
                unsigned int v;
                do {
                    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(done + (g - 1) * 32) : "memory");
                } while (v < gridDim.x);
                __threadfence();
            }
            asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
        }
        const int4 *x = (const int4 *)(xq + ((size_t)g * R + blockIdx.x % R) * nbx);
        int c = 0;
        if (mode == 17) {
            for (int i = threadIdx.x; i < nbx * 3; i += 32 * Q8M_WARPS) xsh[i] = __ldcg(x + i);
            asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
            for (int b = lane; b < nbx; b += 32) c = __dp4a(xsh[3 * b].x, xsh[3 * b + 2].y, c);
        } else if (mode == 1) {
#pragma unroll
            for (int k = 0; k < 5; k++) {
                const int4 v = __ldcg(x + 3 * (lane + 32 * k));
                c = __dp4a(v.x, v.y, c);
            }
        } else if (mode == 33 || mode == 65) {
#pragma unroll
            for (int k = 0; k < 5; k++) {
                const int4 *v = x + 3 * (lane + 32 * k);
                const int4 a = mode == 33 ? __ldcg(v) : __ldca(v), b = mode == 33 ? __ldcg(v + 1) : __ldca(v + 1),
                           e = mode == 33 ? __ldcg(v + 2) : __ldca(v + 2);
                c = __dp4a(a.x ^ b.y, e.x, c);
            }
        }
        acc += warp_sum((float)c);
        asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(done + g * 32, 1u);
        }
    }
    if (lane == 0) out[blockIdx.x * Q8M_WARPS + warp] = acc;
}

/* median us of run() over NREP repetitions, each after prep() (not timed) and followed by after() */
template <typename P, typename F, typename A>
static int time_reps(P prep, F run, A after, cudaStream_t st, double *us)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int r = 0; r < NREP; r++) {
        CK(prep());
        CK(cudaEventRecord(e0, st));
        CK(run());
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(1e3 * ms);
        CK(after());
    }
    std::sort(t.begin(), t.end());
    *us = t[NREP / 2];
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return 0;
}

static int bench_l2(const float *x, kc_q8blk *xq, cudaStream_t st)
{
    /* (1) one GEMV: cold, prefetched, demand-warm */
    const uint64_t flush_n = 512ull << 20;
    uint4 *flush;
    uint32_t *sink;
    CK(cudaMalloc(&flush, flush_n));
    CK(cudaMalloc(&sink, 1 << 20));
    CK(cudaMemset(flush, 1, flush_n));
    const int shp[3][2] = {{5120, 6144}, {5120, 17408}, {17408, 5120}}; /* ssm_out, down, gate-sized */
    for (int si = 0; si < 3; si++) {
        kc_mat w;
        if (alloc_q4(&w, shp[si][0], shp[si][1], 5u + si, 9u + si)) return 1;
        w.early = 1;
        const uint64_t db = kc_mat_data_bytes(GGML_Q4_0, w.rows, w.cols), sb = kc_mat_scale_bytes(GGML_Q4_0, w.rows, w.cols);
        float *y;
        CK(cudaMalloc(&y, w.rows * 4));
        CK(kc_quantize_q8(x, w.cols, xq, st));
        CK(cudaDeviceSynchronize());
        const kc_mat *one[1] = {&w};
        float *Y[1] = {y};
        const char *mode[4] = {"cold", "l2_prefetch_all", "l2_prefetch_first8MB", "demand_warm"};
        for (int md = 0; md < 4; md++) {
            double us;
            auto prep = [&]() -> cudaError_t {
                cudaError_t e = kc_stream_read(flush, flush_n / 16, sink, g_sms * 4, st);
                if (e == cudaSuccess && (md == 1 || md == 2)) {
                    pf_bulk_kernel<<<g_sms, 256, 0, st>>>((const char *)w.data, md == 1 ? db : std::min<uint64_t>(db, 8ull << 20));
                    if (md == 1) pf_bulk_kernel<<<g_sms, 256, 0, st>>>((const char *)w.d, sb);
                    spin_kernel<<<1, 32, 0, st>>>(200000); /* ~100 us: the prefetches land */
                    e = cudaGetLastError();
                }
                if (e == cudaSuccess && md == 3) e = kc_matvec_q8(one, Y, 1, xq, 0, st);
                return e;
            };
            if (time_reps(prep, [&]() { return kc_matvec_q8(one, Y, 1, xq, 0, st); }, []() { return cudaSuccess; }, st, &us))
                return 1;
            printf("l2\t%dx%d_%s\t-\t-\t%.2f\t%.0f\t%llu\n", w.rows, w.cols, mode[md], us, (db + sb) / us / 1e3,
                   (unsigned long long)(db + sb));
        }
        cudaFree(w.data);
        cudaFree(w.d);
        cudaFree(y);
    }
    /* (2) the chain, with and without the run-ahead prefetcher */
    {
        const int D = 5120, N = PF_CHAIN;
        std::vector<kc_mat> ws(N);
        pf_plan plan;
        memset(&plan, 0, sizeof plan);
        uint64_t total = 0;
        for (int i = 0; i < N; i++) {
            kc_mat &w = ws[i];
            if (alloc_q4(&w, D, D, 300u + i, 400u + i)) return 1;
            w.early = 1;
            const uint64_t db = kc_mat_data_bytes(GGML_Q4_0, D, D), sb = kc_mat_scale_bytes(GGML_Q4_0, D, D);
            plan.q[i] = (const char *)w.data;
            plan.d[i] = (const char *)w.d;
            plan.nq[i] = db;
            plan.nd[i] = sb;
            total += db + sb;
        }
        float *y;
        unsigned int *prog;
        CK(cudaMalloc(&y, D * 4));
        CK(cudaMalloc(&prog, 4));
        cudaStream_t st2;
        CK(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking));
        cudaEvent_t go;
        CK(cudaEventCreateWithFlags(&go, cudaEventDisableTiming));
        CK(kc_quantize_q8(x, D, xq, st));
        CK(cudaDeviceSynchronize());
        const int saved = g_q8x_slots[0][5];
        /* modes 4..: the TMA-ring kernel (q8gemv=tma) at (ring KB, blocks per SM) */
        const char *mode[11] = {"none", "runahead_all", "runahead_first8MB", "none_grid-1",
                                "tma100x1", "tma64x2", "tma100x1xs", "tma72x2xs", "tma64x3xs", "tma48x3xs", "tma120x1xs"};
        const int tkb[11] = {0, 0, 0, 0, 100, 64, 100, 72, 64, 48, 120}, tsm[11] = {0, 0, 0, 0, 1, 2, 1, 2, 3, 3, 1};
        const int txs[11] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
        q8t_dbg_rec *drec;
        const unsigned dcap = 16 * 1024;
        CK(cudaMalloc(&drec, dcap * sizeof *drec));
        for (int md = 0; md < 11; md++) {
            double us;
            /* the prefetcher's warp takes registers on one SM: the persistent grids leave it a block */
            g_q8x_slots[0][5] = md == 0 || md >= 4 ? saved : saved - 1;
            for (int i = 0; i < N; i++) ws[i].q8kind = md >= 4 ? 2 : 0;
            if (md >= 4) kc_set_q8t(tkb[md], tsm[md]);
            kc_set_q8t_xs(md >= 4 ? txs[md] : 0);
            auto prep = [&]() -> cudaError_t {
                cudaError_t e = kc_stream_read(flush, flush_n / 16, sink, g_sms * 4, st);
                if (e == cudaSuccess) e = cudaMemsetAsync(prog, 0, 4, st);
                if (e == cudaSuccess) e = cudaEventRecord(go, st);
                if (e == cudaSuccess && (md == 1 || md == 2)) {
                    e = cudaStreamWaitEvent(st2, go, 0);
                    runahead_kernel<<<1, 32, 0, st2>>>(plan, prog, N, md == 1 ? ~0ull : 8ull << 20);
                    if (e == cudaSuccess) e = cudaGetLastError();
                }
                return e;
            };
            auto chain = [&]() -> cudaError_t {
                cudaError_t e = cudaSuccess;
                kc_set_pdl(1);
                for (int i = 0; i < N && e == cudaSuccess; i++) {
                    const kc_mat *one[1] = {&ws[i]};
                    float *Y[1] = {y};
                    e = kc_matvec_q8(one, Y, 1, xq, 0, st);
                    if (e == cudaSuccess) e = kc_quantize_q8(y, D, xq, st);
                    if (e == cudaSuccess) {
                        kc_launch(mark_kernel, 1, 32, 0, st, prog, (unsigned)(i + 1));
                        e = cudaGetLastError();
                    }
                }
                kc_set_pdl(0);
                return e;
            };
            auto after = [&]() -> cudaError_t { /* the prefetcher done; the same input every repetition */
                const cudaError_t e = cudaStreamSynchronize(st2);
                return e == cudaSuccess ? kc_quantize_q8(x, D, xq, st) : e;
            };
            if (time_reps(prep, chain, after, st, &us)) return 1;
            printf("l2\tchain16x%dx%d_%s\t-\t-\t%.2f\t%.0f\t%llu\n", D, D, mode[md], us, total / us / 1e3,
                   (unsigned long long)total);
            if (md >= 4) { /* one more chain with the per-block timeline recorded */
                std::vector<q8t_dbg_rec> rec;
                auto prep_chain = [&]() -> cudaError_t {
                    const cudaError_t e = prep();
                    return e == cudaSuccess ? chain() : e;
                };
                if (q8t_dbg_capture(drec, dcap, prep_chain, st, rec)) return 1;
                CK(after());
                unsigned long long T0 = ~0ull;
                for (auto &r : rec) T0 = std::min(T0, r.t_entry);
                printf("# timeline %s (us from the first block's entry): gemv entry[min,max] wait[min,max] first_stage[max] end[min,max] blocks maxPerSM SMs\n", mode[md]);
                for (int i = 0; i < N; i++) {
                    unsigned long long a0 = ~0ull, a1 = 0, b0 = ~0ull, b1 = 0, c1 = 0, d0 = ~0ull, d1 = 0;
                    int nblk = 0, per[256] = {0};
                    for (auto &r : rec) {
                        if (r.w != ws[i].data) continue;
                        nblk++;
                        a0 = std::min(a0, r.t_entry); a1 = std::max(a1, r.t_entry);
                        b0 = std::min(b0, r.t_wait); b1 = std::max(b1, r.t_wait);
                        c1 = std::max(c1, r.t_first);
                        d0 = std::min(d0, r.t_end); d1 = std::max(d1, r.t_end);
                        if (r.sm >= 0 && r.sm < 256) per[r.sm]++;
                    }
                    int mx = 0, used = 0;
                    for (int k = 0; k < 256; k++) { mx = std::max(mx, per[k]); used += per[k] > 0; }
                    if (!nblk) continue;
                    printf("#  %2d  %7.2f %7.2f  %7.2f %7.2f  %7.2f  %7.2f %7.2f  %d %d %d\n", i, (a0 - T0) / 1e3, (a1 - T0) / 1e3,
                           (b0 - T0) / 1e3, (b1 - T0) / 1e3, (c1 - T0) / 1e3, (d0 - T0) / 1e3, (d1 - T0) / 1e3, nblk, mx, used);
                }
            }
        }
        /* the chain as one persistent kernel (chain_persistent_kernel): the kernel chain's final
         * output as the reference, then the persistent one timed and compared */
        {
            for (int i = 0; i < N; i++) ws[i].q8kind = 0;
            CK(kc_quantize_q8(x, D, xq, st));
            kc_set_pdl(1);
            for (int i = 0; i < N; i++) {
                const kc_mat *one[1] = {&ws[i]};
                float *Y[1] = {y};
                CK(kc_matvec_q8(one, Y, 1, xq, 0, st));
                CK(kc_quantize_q8(y, D, xq, st));
            }
            kc_set_pdl(0);
            std::vector<float> ref(D), got(D);
            CK(cudaMemcpy(ref.data(), y, D * 4, cudaMemcpyDeviceToHost));
            pch_plan pp;
            memset(&pp, 0, sizeof pp);
            for (int i = 0; i < N; i++) pp.W[i] = ws[i];
            CK(cudaMalloc(&pp.y, (size_t)N * D * 4));
            CK(cudaMalloc(&pp.xq, (size_t)(N + 1) * (D / 32) * sizeof(kc_q8blk)));
            CK(cudaMalloc(&pp.done, N * 4));
            CK(cudaMalloc(&pp.cnt, (size_t)N * (D / 32) * 4));
            const size_t stage = (size_t)Q8T_ROWS * (D / 32) * 18;
            const int nsc[2] = {8, 4}; /* ring stages: 8 x 23 KB = 184 KB (1.6 GEMVs of look-ahead), 4 */
            for (int c = 0; c < 2; c++) {
                const int ns = nsc[c], units = D / Q8T_ROWS, per = (units + g_sms - 1) / g_sms;
                if (per > PCH_PMAX) continue;
                const size_t smem = Q8T_BAR_BYTES + ns * stage + (size_t)PCH_PMAX * Q8T_ROWS * 4 + (size_t)(D / 32) * sizeof(kc_q8blk);
                CK(cudaFuncSetAttribute(chain_persistent_kernel<5, false, false, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
                auto prep = [&]() -> cudaError_t {
                    cudaError_t e = kc_stream_read(flush, flush_n / 16, sink, g_sms * 4, st);
                    if (e == cudaSuccess) e = cudaMemsetAsync(pp.done, 0, N * 4, st);
                    if (e == cudaSuccess) e = cudaMemsetAsync(pp.cnt, 0, (size_t)N * (D / 32) * 4, st);
                    if (e == cudaSuccess) e = kc_quantize_q8(x, D, pp.xq, st);
                    return e;
                };
                auto run = [&]() -> cudaError_t {
                    int d = D, n = ns;
                    void *args[3] = {(void *)&pp, (void *)&d, (void *)&n};
                    return cudaLaunchCooperativeKernel((const void *)chain_persistent_kernel<5, false, false, false>, dim3(g_sms),
                                                       dim3(Q8T_THREADS), args, smem, st);
                };
                double us;
                if (time_reps(prep, run, []() { return cudaSuccess; }, st, &us)) return 1;
                CK(cudaStreamSynchronize(st));
                CK(cudaMemcpy(got.data(), pp.y + (size_t)(N - 1) * D, D * 4, cudaMemcpyDeviceToHost));
                const int same = !memcmp(got.data(), ref.data(), D * 4);
                printf("l2\tchain16x%dx%d_persistent_ring%d\t-\t-\t%.2f\t%.0f\t%llu\n", D, D, ns, us, total / us / 1e3,
                       (unsigned long long)total);
                printf("# persistent chain (ring of %d stages) vs the kernel chain: final output %s\n", ns,
                       same ? "bit-identical" : "MISMATCH");
                if (!same) return 1;
                /* one more run with thread 0's timeline: per GEMV, min/max over blocks (us from the
                 * earliest 'waited' of GEMV 0) */
                CK(cudaMalloc(&pp.ts, (size_t)N * g_sms * PCH_TS * 8));
                CK(cudaMemset(pp.ts, 0, (size_t)N * g_sms * PCH_TS * 8));
                CK(prep());
                CK(run());
                CK(cudaStreamSynchronize(st));
                std::vector<unsigned long long> tv((size_t)N * g_sms * PCH_TS);
                CK(cudaMemcpy(tv.data(), pp.ts, tv.size() * 8, cudaMemcpyDeviceToHost));
                cudaFree(pp.ts);
                pp.ts = NULL;
                unsigned long long T0 = ~0ull;
                for (int b = 0; b < g_sms; b++) T0 = std::min(T0, tv[(size_t)b * PCH_TS]);
                printf("# timeline persistent ring%d: gemv waited[min,max] rows[min,max] groups[min,max] published[min,max] (us)\n", ns);
                static const char *tsn[PCH_TS] = {"waited", "rows", "groups", "published", "x_loaded", "ready0", "ready1", "ready2", "ready3", "ready4",
                                                  "done0", "done1", "done2", "done3", "done4", "issued0", "issued1", "issued2", "issued3", "issued4"};
                for (int i = 0; i < N; i++) {
                    double mn[PCH_TS], mx[PCH_TS];
                    for (int k = 0; k < PCH_TS; k++) {
                        mn[k] = 1e30;
                        mx[k] = -1e30;
                        for (int b = 0; b < g_sms; b++) {
                            const unsigned long long r = tv[((size_t)i * g_sms + b) * PCH_TS + k];
                            if (!r) continue;
                            const double v = (double)(long long)(r - T0) / 1e3;
                            mn[k] = std::min(mn[k], v);
                            mx[k] = std::max(mx[k], v);
                        }
                    }
                    printf("#  %2d  %7.2f %7.2f  %7.2f %7.2f  %7.2f %7.2f  %7.2f %7.2f\n", i, mn[0], mx[0], mn[1], mx[1], mn[2], mx[2], mn[3], mx[3]);
                    if (i == 2 || i == 9) { /* the detail of two GEMVs, block 0 and the field */
                        for (int k = 4; k < PCH_TS; k++) {
                            const unsigned long long r0 = tv[((size_t)i * g_sms + 0) * PCH_TS + k];
                            printf("#      %-9s min %7.2f max %7.2f block0 %7.2f\n", tsn[k], mn[k], mx[k], r0 ? (double)(long long)(r0 - T0) / 1e3 : -1.0);
                        }
                    }
                }
            }
            { /* the variants: ring stages ns, blocks per SM bps (per <= 5 on 132 SMs) */
                typedef void (*pk_t)(const pch_plan, int, int);
                const struct { const char *name; pk_t k; int check, ns, bps; } var[] = {
                    {"p2_ilp", chain_persistent_kernel<5, true, false, false>, 1, 8, 1},
                    {"p2_xlocal", chain_persistent_kernel<5, false, true, false>, 1, 8, 1},
                    {"p2_ilp_xlocal", chain_persistent_kernel<5, true, true, false>, 1, 8, 1},
                    {"p2_ilp_xlocal_nodata", chain_persistent_kernel<5, true, true, true>, 0, 8, 1},
                    {"p2_base_nodata", chain_persistent_kernel<5, false, false, true>, 0, 8, 1},
                    {"p2_xshare", chain_persistent_kernel<5, false, false, false, true>, 1, 8, 1},
                    {"p2_ilp_xshare", chain_persistent_kernel<5, true, false, false, true>, 1, 8, 1},
                    {"p2_ilp_xshare_nodata", chain_persistent_kernel<5, true, false, true, true>, 0, 8, 1},
                    {"p2_xshare_nodata", chain_persistent_kernel<5, false, false, true, true>, 0, 8, 1},
                    {"p2_xshare_nodata_noquant", chain_persistent_kernel<5, false, false, true, true, true>, 0, 8, 1},
                    {"p2_xshare_noquant", chain_persistent_kernel<5, false, false, false, true, true>, 0, 8, 1},
                    {"p2_xshare_2psm_ring4", chain_persistent_kernel<5, false, false, false, true, false, 2>, 1, 4, 2},
                    {"p2_ilp_xshare_2psm_ring4", chain_persistent_kernel<5, true, false, false, true, false, 2>, 1, 4, 2},
                    {"p2_xshare_nodata_2psm_ring4", chain_persistent_kernel<5, false, false, true, true, false, 2>, 0, 4, 2},
                };
                for (size_t vi = 0; vi < sizeof var / sizeof var[0]; vi++) {
                    const int ns = var[vi].ns, grid = g_sms * var[vi].bps, units = D / Q8T_ROWS, per = (units + grid - 1) / grid;
                    if (per > PCH_PMAX) continue;
                    const size_t smem = Q8T_BAR_BYTES + ns * stage + (size_t)PCH_PMAX * Q8T_ROWS * 4 + (size_t)(D / 32) * sizeof(kc_q8blk);
                    CK(cudaFuncSetAttribute((const void *)var[vi].k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                    auto prep = [&]() -> cudaError_t {
                        cudaError_t e = kc_stream_read(flush, flush_n / 16, sink, g_sms * 4, st);
                        if (e == cudaSuccess) e = cudaMemsetAsync(pp.done, 0, N * 4, st);
                        if (e == cudaSuccess) e = cudaMemsetAsync(pp.cnt, 0, (size_t)N * (D / 32) * 4, st);
                        if (e == cudaSuccess) e = cudaMemsetAsync(pp.y, 0, (size_t)N * D * 4, st);
                        if (e == cudaSuccess) e = kc_quantize_q8(x, D, pp.xq, st);
                        return e;
                    };
                    auto run = [&]() -> cudaError_t {
                        int d = D, n = ns;
                        void *args[3] = {(void *)&pp, (void *)&d, (void *)&n};
                        return cudaLaunchCooperativeKernel((const void *)var[vi].k, dim3(grid), dim3(Q8T_THREADS), args, smem, st);
                    };
                    double us;
                    if (time_reps(prep, run, []() { return cudaSuccess; }, st, &us)) return 1;
                    CK(cudaStreamSynchronize(st));
                    CK(cudaMemcpy(got.data(), pp.y + (size_t)(N - 1) * D, D * 4, cudaMemcpyDeviceToHost));
                    const int same = !memcmp(got.data(), ref.data(), D * 4);
                    printf("l2\tchain16x%dx%d_%s\t-\t-\t%.2f\t%.0f\t%llu\n", D, D, var[vi].name, us, total / us / 1e3,
                           (unsigned long long)total);
                    printf("# %s vs the kernel chain: final output %s\n", var[vi].name,
                           !var[vi].check ? "not compared (timing only)" : same ? "bit-identical" : "MISMATCH");
                    if (var[vi].check && !same) return 1;
                }
            }
            { /* the counter step alone, and the x broadcast's cost */
                unsigned int *dn;
                float *o;
                kc_q8blk *xb;
                CK(cudaMalloc(&dn, 16 * 32 * 4));
                CK(cudaMalloc(&o, (size_t)g_sms * Q8M_WARPS * 4));
                CK(cudaMalloc(&xb, (size_t)16 * 8 * 544 * sizeof(kc_q8blk)));
                CK(cudaMemset(xb, 1, (size_t)16 * 8 * 544 * sizeof(kc_q8blk)));
                CK(cudaFuncSetAttribute(sync_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 544 * 48));
                const int cfg[][3] = {{0, 160, 1},  {1, 160, 1},  {33, 160, 1}, {33, 160, 4}, {65, 160, 1}, {65, 160, 4},
                                      {17, 160, 1}, {17, 160, 2}, {17, 160, 4}, {17, 160, 8}, {17, 544, 1}, {17, 544, 4}, {17, 544, 8}};
                for (int ci = 0; ci < (int)(sizeof cfg / sizeof cfg[0]); ci++) {
                    double t1 = 0, t16 = 0;
                    for (int n = 1; n <= 16; n += 15) {
                        int md = cfg[ci][0], nn = n, nbx = cfg[ci][1], R = cfg[ci][2];
                        auto prep = [&]() -> cudaError_t { return cudaMemsetAsync(dn, 0, 16 * 32 * 4, st); };
                        auto run = [&]() -> cudaError_t {
                            void *args[7] = {(void *)&dn, (void *)&xb, (void *)&o, (void *)&nn, (void *)&md, (void *)&nbx, (void *)&R};
                            return cudaLaunchCooperativeKernel((const void *)sync_probe_kernel, dim3(g_sms), dim3(Q8T_THREADS), args,
                                                               (size_t)nbx * 48, st);
                        };
                        double us;
                        if (time_reps(prep, run, []() { return cudaSuccess; }, st, &us)) return 1;
                        (n == 1 ? t1 : t16) = us;
                    }
                    printf("l2\tsync_probe_mode%d_nbx%d_R%d\t-\t-\t%.2f\t-\t-\t# per round %.2f us\n", cfg[ci][0], cfg[ci][1], cfg[ci][2],
                           t16, (t16 - t1) / 15);
                }
                cudaFree(dn);
                cudaFree(o);
                cudaFree(xb);
            }
            cudaFree(pp.y);
            cudaFree(pp.xq);
            cudaFree(pp.done);
            cudaFree(pp.cnt);
        }
        g_q8x_slots[0][5] = saved;
        kc_set_q8t_xs(0);
        cudaFree(drec);
        for (int i = 0; i < N; i++) {
            cudaFree(ws[i].data);
            cudaFree(ws[i].d);
        }
        cudaFree(y);
        cudaFree(prog);
        cudaStreamDestroy(st2);
        cudaEventDestroy(go);
    }
    cudaFree(flush);
    cudaFree(sink);
    fflush(stdout);
    return 0;
}

/* --shape attn: the two split attentions, attention_short and its clustered form (2, 4, 8 blocks per
 * head), attention_kvc (clusters of 8 and 16 per kv head, where they take n; kvct: by tensor copies), attention_kvcx
 * (S clusters of C per kv head: 8x2, 8x3, 4x6, 4x7, 2x14, 2x16) alone on the 27B shape
 * (24/4 heads x 256, ctx 32768) at n = 16, 64, 100, 128, 192, 256, 512, 612, 1024, 4096, 8192, 16384, 32768
 * positions, back-to-back launches; attention_gqa also with phases skipped (timing
 * only: 1 QK, 2 V, 4 the merge's loads, 8 all work before the ticket) to see where its time goes */
static int bench_attn(cudaStream_t st)
{
    const int H = 24, Hkv = 4, hd = 256, ctx = 32768, ns = kc_attention_splits(ctx);
    const size_t kvn = (size_t)ctx * Hkv * hd;
    attn_bufs b;
    if (attn_bufs_alloc(&b, H, hd, kvn, ns)) return 1;
    float *q = b.q, *qg = b.qg, *kc = b.kc, *vc = b.vc, *y = b.y, *part = b.part;
    kc_q8blk *oq = b.oq;
    unsigned int *cnt = b.cnt;
    int32_t *pos = b.pos;
    CK(kc_attention_setup(ctx, hd));
    kc_tmap tmkv[2]; /* the caches' tensor maps (attention_kvct) */
    CK(kc_kv_tmap(&tmkv[0], kc, ctx, Hkv, hd));
    CK(kc_kv_tmap(&tmkv[1], vc, ctx, Hkv, hd));
    const int ns_list[13] = {16, 64, 100, 128, 192, 256, 512, 612, 1024, 4096, 8192, 16384, 32768};
    for (int ni = 0; ni < 13; ni++) {
        const int p = ns_list[ni] - 1;
        CK(cudaMemcpy(pos, &p, 4, cudaMemcpyHostToDevice));
        double us;
        auto split = [&](int) {
            return kc_attention_split(q, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, ctx, 0.0625f, pos, part, cnt, st);
        };
        if (time_batches(split, 3, st, &us)) return 1;
        printf("attn\tattention_split n=%d\t-\t-\t%.2f\t-\t%zu\n", ns_list[ni], us, (size_t)ns_list[ni] * Hkv * hd * 8);
        auto shrt = [&](int) {
            return kc_attention_short(q, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, 0.0625f, pos, st);
        };
        if (time_batches(shrt, 3, st, &us)) return 1;
        printf("attn\tattention_short n=%d\t-\t-\t%.2f\t-\t%zu\n", ns_list[ni], us, (size_t)ns_list[ni] * Hkv * hd * 8);
        for (int cs = 2; cs <= 8; cs *= 2) {
            auto shcl = [&](int) {
                return kc_attention_short_cl(q, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, cs, 0.0625f, pos, 0, st);
            };
            if (time_batches(shcl, 3, st, &us)) return 1;
            printf("attn\tattention_short_cl(%d) n=%d\t-\t-\t%.2f\t-\t%zu\n", cs, ns_list[ni], us,
                   (size_t)ns_list[ni] * Hkv * hd * 8);
        }
        { /* the push merge (attn_cl_push, v40) of the default cluster of 4 */
            auto shcp = [&](int) {
                return kc_attention_short_cl(q, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, 4, 0.0625f, pos, 1, st);
            };
            if (time_batches(shcp, 3, st, &us)) return 1;
            printf("attn\tattention_short_cl(4) push n=%d\t-\t-\t%.2f\t-\t%zu\n", ns_list[ni], us,
                   (size_t)ns_list[ni] * Hkv * hd * 8);
        }
        for (int tmi = 0; tmi < 2; tmi++) /* the attention by kv head over a cluster (attn_kvc; attn_kvc_tm: kvct) */
            for (int cs = 8; cs <= 16; cs *= 2) {
                if (!kc_attention_kvc_ok(H, Hkv, hd, cs, ns_list[ni])) continue;
                auto kvc = [&](int) {
                    return kc_attention_kvc(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, cs,
                                            ns_list[ni], 0, 0.0f, 0.0f, 0.0625f, pos, tmi ? tmkv : NULL, 0, st);
                };
                if (time_batches(kvc, 3, st, &us)) return 1;
                printf("attn\tattention_kvc%s(%d) n=%d\t-\t-\t%.2f\t-\t%zu\n", tmi ? "t" : "", cs, ns_list[ni],
                       us, (size_t)ns_list[ni] * Hkv * hd * 8);
            }
        /* the attention by kv head over S clusters of C blocks per kv head (attn_kvc_sp; H200: at most 15 clusters of
         * 8, 30 of 4, 66 of 2 such blocks resident, PERF-NOTES v37) */
        const int xcfg[6][2] = {{8, 2}, {8, 3}, {4, 6}, {4, 7}, {2, 14}, {2, 16}};
        for (int xi = 0; xi < 6; xi++) {
            const int cs = xcfg[xi][0], sp = xcfg[xi][1];
            if (!kc_attention_kvcx_ok(H, Hkv, hd, cs, sp, ns_list[ni])) continue;
            auto kvcx = [&](int) {
                return kc_attention_kvcx(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, cs, sp,
                                         ns_list[ni], 0, 0.0f, 0.0f, 0.0625f, pos, tmkv, part, cnt, 0, st);
            };
            if (time_batches(kvcx, 3, st, &us)) return 1;
            printf("attn\tattention_kvcx(%dx%d) n=%d\t-\t-\t%.2f\t-\t%zu\n", cs, sp, ns_list[ni], us,
                   (size_t)ns_list[ni] * Hkv * hd * 8);
        }
        /* the push merge (attn_kvc_push, v40) of the one cluster of 16 and of 3 clusters of 8 */
        for (int xi = 0; xi < 2; xi++) {
            if (xi ? !kc_attention_kvcx_ok(H, Hkv, hd, 8, 3, ns_list[ni]) : !kc_attention_kvc_ok(H, Hkv, hd, 16, ns_list[ni]))
                continue;
            auto push = [&](int) {
                return xi ? kc_attention_kvcx(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, 8, 3,
                                              ns_list[ni], 0, 0.0f, 0.0f, 0.0625f, pos, tmkv, part, cnt, 1, st)
                          : kc_attention_kvc(q, NULL, NULL, NULL, NULL, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, 16,
                                             ns_list[ni], 0, 0.0f, 0.0f, 0.0625f, pos, tmkv, 1, st);
            };
            if (time_batches(push, 3, st, &us)) return 1;
            printf("attn\tattention_%s push n=%d\t-\t-\t%.2f\t-\t%zu\n", xi ? "kvcx(8x3)" : "kvct(16)", ns_list[ni], us,
                   (size_t)ns_list[ni] * Hkv * hd * 8);
        }
        const int dbg[6] = {0, 1, 2, 4, 8, 7};
        for (int di = 0; di < 6; di++) {
            CK(cudaMemcpyToSymbol(g_ag_dbg, &dbg[di], sizeof(int)));
            auto gqa = [&](int) {
                return kc_attention_gqa(q, kc, vc, qg + hd, 2 * hd, y, oq, H, Hkv, hd, ctx, 0.0625f, pos, part, cnt, st);
            };
            if (time_batches(gqa, 3, st, &us)) return 1;
            printf("attn\tattention_gqa n=%d skip=%d\t-\t-\t%.2f\t-\t%zu\n", ns_list[ni], dbg[di], us,
                   (size_t)ns_list[ni] * Hkv * hd * 8);
        }
        const int zero = 0;
        CK(cudaMemcpyToSymbol(g_ag_dbg, &zero, sizeof(int)));
    }
    fflush(stdout);
    attn_bufs_free(&b);
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
    const char *half = getenv("KC_Q8T_HALF"); /* the SwiGLU's ring: the engine's default form unless told */
    if (half && strcmp(half, "0") && strcmp(half, "1")) {
        fprintf(stderr, "bench_gemv: KC_Q8T_HALF=%s: 0 or 1\n", half);
        return 2;
    }
    kc_set_q8t_half(half ? half[0] == '1' : 1);
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
                if (time_and_check(s, &M, "q8_xstationary", x, xq, y0, y1, ref, rows_out, st, &fails)) return 1;
                g_q8kind = 1;
            }
        }
        /* the TMA-ring kernel (q8gemv=tma) at (ring KB, blocks per SM), bit-identical to R=1 U=1 */
        {
            kc_mat probe = M.a[0];
            probe.q8kind = 2;
            if (kc_q8_stationary(&probe)) {
                const int tkb[4] = {100, 200, 100, 64}, tsm[4] = {1, 1, 2, 2};
                g_q8kind = 2;
                for (int t = 0; t < 4; t++) {
                    char label[64];
                    snprintf(label, sizeof label, "q8_tma%dx%d", tkb[t], tsm[t]);
                    kc_set_q8t(tkb[t], tsm[t]);
                    if (time_and_check(s, &M, label, x, xq, y0, y1, ref, rows_out, st, &fails)) return 1;
                }
                g_q8kind = 1;
                kc_set_q8t(0, 0); /* the library's defaults again */
            }
        }
        /* x in shared memory, all of a row's loads in flight (q8wide=xs, first row before the PDL
         * wait), for the shapes too wide for x in registers; bit-identical to R=1 U=1 */
        if (!s->swiglu && !s->rows1 && s->cols / 32 <= 32 * 17 && (s->cols > 6144 || s->rows0 > 65536)) {
            g_q8wide = 3;
            if (time_and_check(s, &M, "q8_xs", x, xq, y0, y1, ref, rows_out, st, &fails)) return 1;
            g_q8wide = 0;
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
    if ((!only || !strcmp(only, "ffn")) && bench_ffn(x, xq, st, &fails)) return 1;
    if (only && !strcmp(only, "l2") && bench_l2(x, xq, st)) return 1; /* on request only: ~40 s */
    if (only && !strcmp(only, "attn") && bench_attn(st)) return 1;    /* on request only */
    if (only && !strcmp(only, "attnkv") && bench_attn_layout(st)) return 1; /* on request only */
    if (only && !strcmp(only, "attntl") && bench_attn_timeline(st)) return 1; /* on request only */
    if (only && !strcmp(only, "dtma") && bench_dtma(x, xq, st)) return 1;    /* on request only */
    if (only && !strcmp(only, "gdnwin") && bench_gdnwin(st)) return 1; /* on request only */
    printf("# %s\n", fails ? "FAIL: q8 variants disagree" : "q8 variants bit-identical");
    return fails ? 1 : 0;
}
