/*
 * cuda/kernels.cuh - the CUDA kernels of libkestrel-cuda.so, one launcher per
 * op. Each op carries the name of its CPU twin in src/engine-cpu/ops.h
 * (rmsnorm, l2norm, gdn_beta_g, conv_step, delta_step, gated_rmsnorm,
 * rope_neox, attention, swiglu, matvec, ...), and cuda/test_kernels.cu
 * validates each launcher against that twin before anything is timed.
 *
 * Launchers enqueue on `st` and return the launch status
 * (cudaGetLastError()); they never synchronise, allocate or print.
 * Shapes: D model dim, V vocab, C conv_dim, K conv kernel, kh/vh key/value
 * heads of a GDN layer with kd/vd per head, nh/nkv attention heads, hd head_dim.
 * All activations are f32.
 *
 * Not here: weight loading (model.cu), the GGUF side (cuda_engine.cu).
 */
#ifndef KESTREL_CUDA_KERNELS_CUH
#define KESTREL_CUDA_KERNELS_CUH

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdint.h>

/* A weight matrix resident on the device, rows x cols (torch [out, in];
 * ggml ne = {cols, rows}). Layout by type (docs/cuda-engine.md):
 *   F32  : data = float[rows][cols]
 *   F16  : data = __half[rows][cols]
 *   BF16 : data = uint16_t (bf16 bits)[rows][cols]
 *   Q8_0 : data = int8_t[rows][cols/32][32] (quants only), d = __half[rows][cols/32]
 *   Q4_0, layout 0 (cols % 1024 != 0):
 *          data = uint8_t[rows][cols/32][16] (ggml nibble order: byte j = w[j] low, w[j+16] high),
 *          d = __half[rows][cols/32]
 *   Q4_0, layout 1 (cols % 1024 == 0, every real Qwen3.5 shape): "lane-interleaved superblocks"
 *          data = uint8_t[rows][cols/1024][32 lanes][16],
 *          d = __half[rows][cols/1024][4 groups g][8 k] (the scale of ggml block s*32 + 4k + g:
 *          lane l loads the 8 scales of its column groups, group g = l/8, as one 16 bytes);
 *          the 16 bytes of lane l in superblock s hold the 32 weights of columns
 *          s*1024 + k*128 + 4*l + j (k = 0..7, j = 0..3) as nibble m = 4*k + j
 *          (byte m/2, low nibble when m is even), stored as (nibble value) = q + 8.
 *          One 16-byte load per lane covers 32 weights, and the matching activations
 *          are read by the warp as 8 coalesced 512-byte float4 rows.
 * Quantised rows are split into a quant plane and a scale plane so that the
 * quants are aligned 16-byte loads. */
typedef struct kc_mat {
    uint32_t type; /* enum ggml_type */
    int32_t layout; /* 0, or 1 for the q4_0 superblock layout (kc_mat_layout) */
    int32_t rows, cols;
    void *data;
    __half *d; /* quantised types only */
    int32_t rpw; /* q4_0 layout 1: rows per warp of the GEMV (1, 2, 4); 0 = pick by rows (kc_gemv_rpw) */
    int32_t gemv; /* q4_0 layout 1 GEMV: 0 = register prefetch (default), 1 = quants streamed by cp.async (v4) */
    int32_t unroll; /* q4_0 x q8 GEMV: blocks per lane loaded before use (1, 2, 4); 0 = default */
    int32_t prefetch; /* q4_0 x q8 GEMV: L2-prefetch the first weights before kc_pdl_begin (option) */
    int32_t q8kind; /* q4_0 x q8 GEMV: 0 x-stationary where cols <= 6144, rows <= 65536 (default), 1 streaming (v6),
                     * 2 x-stationary with the weights bulk-copied into a shared-memory ring (gemv_q8t.cuh) */
    int32_t early; /* q4_0 x q8 x-stationary GEMV: first row's weights loaded before the PDL wait (option gemv_early) */
    int32_t q8t_kb, q8t_sm; /* q8kind 2: this matrix's ring KB and blocks per SM (0: kc_set_q8t's; q8t_sm < 0: a grid
                             * of -q8t_sm blocks, kc_q8t_out_grid) */
    int32_t q8t_wkb;        /* q8kind 2, cols > 6144: ring KB at one block per SM (0: 200, -1: the streaming kernel) */
    int32_t q8t_xs;         /* q8kind 2: 1 x in shared memory (0: kc_set_q8t_xs's) */
    int32_t q8t_wloop;      /* q8kind 2, cols > 6144: 1 the dot as a run-time loop (A/B, option q8t_wu=0); 0 unrolled
                             * for 12 or 17 blocks per lane (the 9B's and 27B's down projection); 2 those two
                             * widths by matvec_q8t_bc_kernel, x read once per 8 rows (option q8t_wu=2) */
    int32_t q8wide; /* q4_0 x q8 GEMV of the matrices that stream (q8kind 1 or not x-stationary): 0 the
                     * streaming kernel, 1 the same with x via the read-only path (A/B only: not PDL-safe),
                     * 2 persistent grid with x in shared memory (matvec_q8s_kernel), 3 the same with all of
                     * a row's loads in flight (matvec_q8xs_kernel; cols <= 17408) */
} kc_mat;

/* Rows per warp the q4_0 layout-1 GEMV uses for this matrix (W->rpw, or by its row count;
 * the cp.async kernel takes at most 2). */
int kc_gemv_rpw(const kc_mat *W);
/* Occupancy of the q4_0 GEMV kernels on the current device, for their one-wave grids. Call
 * before capturing a graph (the launchers otherwise query it on first use). */
cudaError_t kc_gemv_setup(void);

/* Programmatic dependent launch (PDL, sm_90): when on, the step's kernels are launched with
 * cudaLaunchAttributeProgrammaticStreamSerialization, so kernel N+1 becomes resident while N
 * finishes; each such kernel starts with kc_pdl_begin() (GEMVs after prefetching their own
 * weights into L2, which do not depend on N). Thread-local: the engine sets it before each step. */
void kc_set_pdl(int on);
/* The shared-memory carveout (percent of the SM's unified L1/shared storage) every step kernel is
 * launched with (cudaLaunchAttributePreferredSharedMemoryCarveout); -1: the driver's choice per kernel.
 * Why: an SM runs blocks of kernels with different splits only after it drains, so a small kernel
 * after the TMA GEMVs (which take ~200 KB of shared memory per SM) cannot become resident early
 * under PDL (PERF-NOTES v15). Thread-local, as kc_set_pdl. */
void kc_set_carveout(int pct);
/* Option q8t_half: the TMA SwiGLU's gate and up rows in separate ring slots (matvec_swiglu_q8t_kernel
 * HALF), where 2 ns <= Q8T_MAX_STAGES. Thread-local, as kc_set_pdl. */
void kc_set_q8t_half(int on);
/* Option q8t_bch: the x-broadcast down projection (matvec_q8t_bc_kernel) with each stage's columns as two
 * ring slots, released one after the other. Same bits. Thread-local, as kc_set_pdl. */
void kc_set_q8t_bch(int on);
/* the ring slots matvec_q8t_bc_kernel takes W with (one matrix, q8t_wloop 2; h: column halves), 0 when it
 * does not take W */
int kc_q8_tma_bc_takes(const kc_mat *W, int h);

/* Step trace (engine option profile=trace, the library built with -DKC_TRACE:
 * libkestrel-cuda-trace.so): every step kernel, as it passes its dependency wait (kc_pdl_begin),
 * has thread 0 of block 0 append the device's global nanosecond timer to t (cap entries; *n counts
 * the marks, beyond cap too). Kernels follow one another, so mark i is when kernel i could start its
 * work, and mark i+1 - mark i is kernel i's time on the step's critical path — inside the CUDA
 * graph, with PDL, as the step really runs (model.cu trace_collect). A separate build because even
 * an untaken check per kernel cost the default step 1.8% (PERF-NOTES v13): the default library's
 * kernels carry no trace code at all. */
typedef struct kc_trace {
    unsigned long long *t; /* (cap,) device */
    unsigned int *n;       /* (1,) device */
    unsigned int cap;
} kc_trace;
/* 1 when this library was built with the trace marks (-DKC_TRACE) */
int kc_trace_supported(void);
/* Sets the trace buffers of the kernels (cudaMemcpyToSymbol; not during a capture); t NULL: off.
 * cudaErrorNotSupported without -DKC_TRACE. */
cudaError_t kc_set_trace(const kc_trace *tr);
/* Host side of the trace: while log != NULL, every kernel launch appends `name` (the caller's
 * index for the op being launched, kc_set_launch_name) to log (cap entries, *len counts, beyond cap
 * too), so that mark i can be named. Thread-local, as kc_set_pdl. */
void kc_set_launch_log(int *log, int cap, int *len);
void kc_set_launch_name(int name);

#ifdef __CUDACC__
#ifdef KC_TRACE
static __device__ kc_trace g_kc_trace;

__device__ __forceinline__ void kc_trace_mark(void)
{
    if ((blockIdx.x | blockIdx.y | blockIdx.z | threadIdx.x | threadIdx.y | threadIdx.z) == 0) {
        const kc_trace tr = g_kc_trace;
        if (tr.t) {
            unsigned long long now;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            const unsigned int i = atomicAdd(tr.n, 1u);
            if (i < tr.cap) tr.t[i] = now;
        }
    }
}
#else
__device__ __forceinline__ void kc_trace_mark(void) {}
#endif

/* Let the next kernel launch, then wait until the previous kernel has completed and its writes
 * are visible (no-op for a kernel launched without the PDL attribute); then the trace mark. */
__device__ __forceinline__ void kc_pdl_begin(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    kc_trace_mark();
}
#endif

/* 1 when the GEMV kernels support this matrix (type known, cols % 32 == 0). */
int kc_mat_supported(uint32_t type, int64_t cols);
/* Device bytes of the data plane and of the scale plane of a rows x cols matrix. */
uint64_t kc_mat_data_bytes(uint32_t type, int64_t rows, int64_t cols);
uint64_t kc_mat_scale_bytes(uint32_t type, int64_t rows, int64_t cols);
/* The device layout of this type and width: 1 for q4_0 with cols % 1024 == 0 unless dot_q8
 * (the integer-dot GEMV reads q4_0 in layout 0), else 0. */
int kc_mat_layout(uint32_t type, int64_t cols, int dot_q8);
/* Repack `rows` quantised ggml rows (src_dev: the raw GGUF bytes, on the device) into the
 * data and scale planes above (device) of the given layout, on stream st. */
cudaError_t kc_mat_repack_dev(uint32_t type, int64_t rows, int64_t cols, int layout, const void *src_dev,
                              void *data_out, void *scale_out, cudaStream_t st);

/* ---- GEMV (twin: matvec) ---- */
/* y (rows,) = W (rows, cols) . x (cols,); accumulate != 0: y += W . x (fused residual add). */
cudaError_t kc_matvec(const kc_mat *W, const float *x, float *y, int accumulate, cudaStream_t st);
/* Two matrices with the same cols and type in ONE launch (the beta/alpha projections):
 * y0 (W0.rows,) = W0 . x, y1 (W1.rows,) = W1 . x. Each row is the same code as kc_matvec,
 * so results are bit-identical to two kc_matvec launches. */
cudaError_t kc_matvec2(const kc_mat *W0, const kc_mat *W1, const float *x, float *y0, float *y1,
                       cudaStream_t st);
/* SwiGLU fused with its gate/up GEMV (twin: swiglu after two matvecs):
 * y (rows,) = silu(G . x) * (U . x), G, U (rows, cols). */
cudaError_t kc_matvec_swiglu(const kc_mat *G, const kc_mat *U, const float *x, float *y,
                             cudaStream_t st);
/* ---- 8-bit activations, integer dots (engine option dot=q8; twins quantize_q8 / matvec_q8 in ops.c) ----
 * x is quantised per block of 32: q = round(x * 127 / amax), d = amax / 127, s8 = -8 * sum(q)
 * (ops.h q8_block, the same 48 bytes). Weights: q4_0 in layout 0. */
typedef struct kc_q8blk {
    int8_t q[32];
    float d;
    int32_t s8;
    int32_t pad[2];
} kc_q8blk;
/* xq (n/32,) = quantize_q8(x (n,)), n % 32 == 0 */
cudaError_t kc_quantize_q8(const float *x, int n, kc_q8blk *xq, cudaStream_t st);
/* Up to KC_Q8_MATS q4_0 layout-0 matrices with the same cols against one quantised x in ONE launch:
 * y[i] (W[i].rows,) = W[i] . x, or += when accumulate. Rows per warp: W[0].rpw (1, 2, 4; 0 = 2). */
#define KC_Q8_MATS 4
cudaError_t kc_matvec_q8(const kc_mat *const *W, float *const *y, int n, const kc_q8blk *xq, int accumulate,
                         cudaStream_t st);
/* Weights of the step's NEXT GEMV, prefetched into L2 by the warps of the q8 GEMV launched after
 * kc_set_prefetch_next(pf), as each starts its last row (cuda/PERF-NOTES.md v12): while this GEMV
 * drains and the small kernels between the two run, HBM keeps streaming what the next one reads
 * first. Up to KC_PF_RANGES byte ranges (start 16-byte aligned, length a multiple of 16). Only a
 * hint: results never change. */
#define KC_PF_RANGES 8
typedef struct kc_pf {
    const void *p[KC_PF_RANGES]; /* range starts */
    uint32_t n[KC_PF_RANGES];    /* range lengths in bytes */
    int nr;                      /* ranges used */
} kc_pf;
/* The plan the next kc_matvec_q8 / kc_matvec_swiglu_q8 launch carries out (copied, then cleared);
 * NULL clears it. Thread-local, as kc_set_pdl. */
void kc_set_prefetch_next(const kc_pf *pf);
/* Plan for the first `bytes` (rounded down to whole rows) a q4_0 layout-0 q8 GEMV over W[0..n)
 * reads: its rows go matrix after matrix (kc_matvec_q8), or, paired != 0 (n == 2, the SwiGLU's gate
 * and up), row r of both together; each row's quants and scales. n <= KC_PF_RANGES / 2. */
void kc_prefetch_plan(kc_pf *pf, const kc_mat *const *W, int n, int paired, size_t bytes);
/* 1 when kc_matvec_q8 / kc_matvec_swiglu_q8 (without yq) take the x-stationary kernel for W (q8kind 0,
 * cols <= 6144, rows <= 65536: each lane keeps its activation blocks in registers; persistent grid) */
int kc_q8_stationary(const kc_mat *W);
/* q8gemv=tma (kc_mat.q8kind 2, gemv_q8t.cuh): shared memory of each block's weight ring in KB
 * (<= 227; stages of 8 rows) and blocks per SM of its grid. Process-wide; defaults (and 0) 100, 2. */
void kc_set_q8t(int smem_kb, int per_sm);
/* option q8t_ogrid=auto: the out projection W's grid (blocks) so that all of them are resident beside
 * the `beside` blocks of the kernel before it, where that adds no stage per block; 0: the full grid.
 * kc_mat.q8t_sm = -grid asks the TMA plan for that grid. */
int kc_q8t_out_grid(const kc_mat *W, int beside);
/* q8gemv=tma: x in shared memory instead of registers (fewer registers per thread; A/B) */
void kc_set_q8t_xs(int on);
/* The input of an RMS norm folded into the q8gemv=tma GEMV that consumes it (option rms_fold):
 * the GEMV computes kc_rmsnorm_q8(x, w, xn, xq, n, eps) itself, bit for bit, and uses it as its x;
 * xn, xq (may be NULL) are still written, for later readers. x == NULL: no norm. */
typedef struct kc_rmsq {
    const float *x;  /* (n,) the residual stream */
    const float *w;  /* (n,) the norm's weight */
    float *xn;       /* (n,) the normalised x, or NULL */
    kc_q8blk *xq;    /* (n/32,) its q8 blocks, or NULL */
    float eps;
    int n;
} kc_rmsq;
/* 1 when kc_matvec_q8_rms / kc_matvec_swiglu_q8_rms take W (or G, U) with the norm folded: the TMA
 * kernel at an x-stationary width, cols == n, n % 256 == 0, n <= 8192, x and w 16-byte aligned */
int kc_rms_fold_supported(const kc_mat *W, const kc_rmsq *nm);
/* 1 when kc_matvec_q8_rms (W[0..n)) / kc_matvec_swiglu_q8_rms (quantise: with yq) launch */
int kc_matvec_q8_rms_ok(const kc_mat *const *W, int n, const kc_rmsq *nm);
int kc_matvec_swiglu_q8_rms_ok(const kc_mat *G, const kc_mat *U, const kc_rmsq *nm, int quantise);
/* kc_rmsnorm_q8 then kc_matvec_q8 (or kc_matvec_swiglu_q8) as one launch, same bits;
 * cudaErrorNotSupported where the _ok functions say no (nothing launched). */
cudaError_t kc_matvec_q8_rms(const kc_mat *const *W, float *const *y, int n, const kc_rmsq *nm, int accumulate,
                             cudaStream_t st);
cudaError_t kc_matvec_swiglu_q8_rms(const kc_mat *G, const kc_mat *U, const kc_rmsq *nm, float *y, kc_q8blk *yq,
                                    unsigned int *cnt, cudaStream_t st);
/* The NEXT norm folded into a residual GEMV's tail (option norm_tail): y += W . x (q8, as
 * kc_matvec_q8 with accumulate), then the grid's last block computes kc_rmsnorm_q8(y, tail->w,
 * tail->xn, tail->xq, n, eps) bit for bit (tail->x == y, n == W->rows; xq may be the GEMV's own x:
 * every block has read it before the last one counts). cnt: one counter, zero before the launch and
 * after it. kc_matvec_q8_tail_ok: 1 when it launches (a q8gemv=tma route for W, n % 256 == 0,
 * n <= 8192, x, w, xn 16-byte aligned); otherwise cudaErrorNotSupported, nothing launched. */
int kc_matvec_q8_tail_ok(const kc_mat *W, const kc_rmsq *tail);
cudaError_t kc_matvec_q8_tail(const kc_mat *W, float *y, const kc_q8blk *xq, const kc_rmsq *tail, unsigned int *cnt,
                              cudaStream_t st);
/* 1 when kc_matvec_q8 takes the TMA kernel for W alone (q8kind 2, x-stationary width, cols % 256 == 0,
 * planes 16-byte aligned, a stage of 8 rows fits the ring) */
int kc_q8_tma_takes(const kc_mat *W);
/* 1 when kc_matvec_swiglu_q8 takes the TMA kernel for G, U (quantise: with yq, then it also
 * quantises y itself, G->rows % 32 == 0) */
int kc_q8_tma_swiglu_takes(const kc_mat *G, const kc_mat *U, int quantise);
/* y (G.rows,) = silu(G . x) * (U . x) with x quantised, G, U q4_0 layout 0 (rows, cols). yq != NULL:
 * y is also quantised into yq (rows/32,) (= kc_quantize_q8(y)); needs rows % 32 == 0 and cnt: device
 * counters (rows/32,), zero before the first call (every call leaves them zero). */
cudaError_t kc_matvec_swiglu_q8(const kc_mat *G, const kc_mat *U, const kc_q8blk *xq, float *y, kc_q8blk *yq,
                                unsigned int *cnt, cudaStream_t st);
/* The FFN of a layer in one launch (engine option ffn=fused; cuda/gemv_q8.cuh ffn_q8_kernel):
 * ff (F,) = silu(G . x) * (U . x), ffq (F/32,) = quantize_q8(ff), y (D,) += Dn . ffq, x as xq (D/32,);
 * G, U q4_0 layout 0 (F, D), Dn (D, F); bit-identical to kc_matvec_swiglu_q8, kc_quantize_q8 and
 * kc_matvec_q8 (accumulate). A persistent grid with grid barriers: bar (2,) device counters, zero
 * before the first call (every call leaves bar[0] zero). Only the (D, F) widths of
 * kc_ffn_q8_supported (the 2B, 9B and 27B shapes). */
int kc_ffn_q8_supported(const kc_mat *G, const kc_mat *U, const kc_mat *Dn);
cudaError_t kc_ffn_q8(const kc_mat *G, const kc_mat *U, const kc_mat *Dn, const kc_q8blk *xq, float *ff,
                      kc_q8blk *ffq, float *y, unsigned int *bar, cudaStream_t st);
/* The FFN (normed xq -> SwiGLU -> quantise -> down + residual into y) as ONE launch whose producer
 * warps stream the gate/up and then the down weights through one shared-memory ring per SM, with a
 * grid barrier between the phases (option ffn=ring, cuda/gemv_q8t.cuh ffn_ring_kernel): the same bits
 * as kc_matvec_swiglu_q8 (quantising, tickets cnt (F/32,)) + kc_matvec_q8 accumulate. bar (2,) zeroed
 * once. q4_0 layout 0, gate/up width <= 6144 (x in registers), widths multiples of 256. */
int kc_ffn_ring_supported(const kc_mat *G, const kc_mat *U, const kc_mat *Dn);
/* consumer warps per block of the ring FFN: 8 or 16 (default 16); bench_gemv measures both */
void kc_set_ffn_ring_warps(int n);
cudaError_t kc_ffn_ring(const kc_mat *G, const kc_mat *U, const kc_mat *Dn, const kc_q8blk *xq, float *ff,
                        kc_q8blk *ffq, unsigned int *cnt, unsigned int *bar, float *y, cudaStream_t st);

/* y (cols,) = row `*tok` of E (rows, cols) decoded to f32 (token embedding). tok: device (1,). */
cudaError_t kc_embed(const kc_mat *E, const int32_t *tok, float *y, cudaStream_t st);

/* ---- norms ---- */
/* twin rmsnorm, per row r < rows: y[r*ys + i] = x[r*xs + i] * rsqrt(mean(x_r^2) + eps) * w[i].
 * x (rows, xs) with n <= xs used, w (n,), y (rows, ys). In place allowed when xs == ys. */
cudaError_t kc_rmsnorm(const float *x, int xs, const float *w, float *y, int ys, int rows, int n,
                       float eps, cudaStream_t st);
/* rmsnorm of one row x (n,) -> y (n,), fused with quantize_q8 of y into yq (n/32,); n % 32 == 0.
 * yq is bit-identical to kc_quantize_q8(y); y equals kc_rmsnorm's within rounding (for n % 256 == 0,
 * n <= 8192 a one-pass kernel sums the squares in another order), twin rmsnorm. y NULL (option norm_lean,
 * only where kc_rmsnorm_q8_lean_ok): yq alone, the same bits (rmsnorm8_q8_lean_kernel). */
cudaError_t kc_rmsnorm_q8(const float *x, const float *w, float *y, kc_q8blk *yq, int n, float eps, cudaStream_t st);
/* kc_rmsnorm_q8's one-pass kernel over this many blocks (1..32, at most one per warp of the row; option norm_split):
 * each block sums all of x's squares in the one-block order and emits its share: the same bits. Thread-local, as
 * kc_set_pdl. */
void kc_set_norm_split(int blocks);
/* 1 when kc_rmsnorm_q8 takes y = NULL for this width and these pointers (n % 256 == 0, n <= 8192, 16-byte aligned) */
int kc_rmsnorm_q8_lean_ok(int n, const float *x, const float *w);
/* twin l2norm: per head y = x * rsqrt(sum(x^2) + 1e-6) * scale. x, y (nh, d); in place allowed. */
cudaError_t kc_l2norm(const float *x, float *y, int nh, int d, float scale, cudaStream_t st);
/* twin gated_rmsnorm: y[h] = w * (o[h] * rsqrt(mean(o[h]^2) + eps)) * silu(z[h]).
 * o, z, y (vh, vd), w (vd,). */
cudaError_t kc_gated_rmsnorm(const float *o, const float *z, const float *w, float *y, int vh, int vd,
                             float eps, cudaStream_t st);

/* kc_gated_rmsnorm fused with quantize_q8 of y into yq (vh*vd/32,); vd % 32 == 0 */
cudaError_t kc_gated_rmsnorm_q8(const float *o, const float *z, const float *w, float *y, kc_q8blk *yq, int vh,
                                int vd, float eps, cudaStream_t st);

/* ---- GDN ---- */
/* twin gdn_beta_g: beta = sigmoid(b); g = ssm_a * softplus(a + dt_bias) (ssm_a = -exp(A_log)).
 * b, a, ssm_a, dt_bias, beta, g: (vh,). */
cudaError_t kc_gdn_beta_g(const float *b, const float *a, const float *ssm_a, const float *dt_bias,
                          float *beta, float *g, int vh, cudaStream_t st);
/* twin conv_step: depthwise causal conv over [hist..., x] + SiLU, then the history advances.
 * x (C,) raw projection, hist (K-1, C) oldest first, w (C, K) (tap K-1 multiplies x), y (C,). */
cudaError_t kc_conv_step(const float *x, float *hist, const float *w, float *y, int C, int K,
                         cudaStream_t st);
/* gdn_beta_g + conv_step + l2norm(q, scale qscale) + l2norm(k) in ONE launch, bit-identical to
 * the four launches: x (C,) raw projection, hist (K-1, C), w (C, K), y (C,) after conv + SiLU
 * (q | k | v), qn, kn (kh, kd) normed (from y's first 2*kh*kd channels); b, a, ssm_a, dt_bias,
 * beta, g (vh,). Wb != NULL: the beta/alpha projections are computed here too, b = Wb . xn and
 * a = Wa . xn (Wb, Wa f32 (vh, D), xn (D,), D % 4 == 0; one block per projection row, twin matvec
 * within tolerance), and b, a are outputs; else b, a are inputs. early (option prep_early): 1 each conv
 * channel's weights loaded and its history L2-prefetched (evict_last) before the PDL wait, 2 the weights only,
 * 0 neither; the same bits. */
cudaError_t kc_gdn_prep(const float *x, float *hist, const float *w, float *y, int C, int K, int kh, int kd,
                        float qscale, float *qn, float *kn, const float *b, const float *a, const float *ssm_a,
                        const float *dt_bias, float *beta, float *g, int vh, const float *xn, const float *Wb,
                        const float *Wa, int D, int early, cudaStream_t st);
/* twin delta_step, one token of the gated delta rule for all v-heads:
 * S (vh, kd, vd) updated in place; q, k (kh, kd) normed; v (vh, vd); g, beta (vh,); o (vh, vd).
 * v-head h reads k-head h % kh (GGUF tiled order).
 * variant: 0 = generic (S read/written in global memory inside the loops),
 *          1 = register-resident (kd == vd == 128 only), -1 = pick (1 when the shape allows). */
cudaError_t kc_delta_step(float *S, const float *q, const float *k, const float *v, const float *g,
                          const float *beta, float *o, int kh, int kd, int vh, int vd, int variant,
                          cudaStream_t st);

/* kc_delta_step (register-resident variant: kd == vd == 128) fused with kc_gated_rmsnorm_q8 of its
 * output: o (vh, vd) as kc_delta_step, y (vh, vd) and yq (vh*vd/32,) as kc_gated_rmsnorm_q8(o, z, w),
 * bit-identical to the two launches. */
cudaError_t kc_delta_step_norm_q8(float *S, const float *q, const float *k, const float *v, const float *g,
                                  const float *beta, float *o, const float *z, const float *w, float eps,
                                  float *y, kc_q8blk *yq, int kh, int kd, int vh, int vd, cudaStream_t st);
/* the same letting the next kernel launch only once the step's loads are issued (trig 1), have returned
 * (trig 3) or the head's columns are computed (trig 2), not at the start (option delta_trig); pf 1: each
 * head's S prefetched into L2 before the PDL wait first (delta_pf=1 with it): same bits */
cudaError_t kc_delta_step_norm_q8_trig(float *S, const float *q, const float *k, const float *v, const float *g,
                                       const float *beta, float *o, const float *z, const float *w, float eps,
                                       float *y, kc_q8blk *yq, int kh, int kd, int vh, int vd, int trig, int pf,
                                       cudaStream_t st);
/* the same with each head's S prefetched into L2 before the PDL wait (option delta_pf): same bits */
cudaError_t kc_delta_step_norm_q8_pf(float *S, const float *q, const float *k, const float *v, const float *g,
                                     const float *beta, float *o, const float *z, const float *w, float eps,
                                     float *y, kc_q8blk *yq, int kh, int kd, int vh, int vd, cudaStream_t st);

/* One GDN layer's gdn_prep + kc_delta_step_norm_q8 in ONE launch (gdn_step_kernel), bit-identical
 * to the two: the same pointers and shapes as those two calls (v = conv + 2*kh*kd, qn/kn/conv/hist
 * as kc_gdn_prep writes them; Wb NULL: b, a are inputs). kd == vd == 128, vh % kh == 0,
 * vh / kh <= 8, D <= 5120 (kc_gdn_step_supported): the v-heads of one k-head run as one thread-block
 * cluster. */
typedef struct kc_gdn_step_args {
    const float *x;      /* (C,) the raw qkv projection */
    float *hist;         /* (K-1, C) conv history, advanced */
    const float *conv_w; /* (C, K) */
    float *conv;         /* (C,) after conv + SiLU (q | k | v) */
    float *qn, *kn;      /* (kh, kd) normed q (times qscale), k */
    float *b, *a;        /* (vh,) beta/alpha projections: outputs when Wb, else inputs */
    const float *ssm_a, *dt_bias; /* (vh,) */
    float *beta, *g;     /* (vh,) */
    const float *xn;     /* (D,) normed layer input, when Wb */
    const float *Wb, *Wa; /* (vh, D) f32 projections, or NULL */
    float *S;            /* (vh, kd, vd) state, updated */
    float *o;            /* (vh, vd) delta-rule output */
    const float *z;      /* (vh, vd) gate */
    const float *w;      /* (vd,) ssm_norm weight */
    float *y;            /* (vh, vd) gated norm output */
    kc_q8blk *yq;        /* (vh*vd/32,) y quantised */
    float qscale, eps;
    int C, K, kh, kd, vh, vd, D;
} kc_gdn_step_args;
int kc_gdn_step_supported(int kh, int kd, int vh, int vd, int D); /* D: the width of the projections' xn */
cudaError_t kc_gdn_step(const kc_gdn_step_args *a, cudaStream_t st);

/* ---- attention ---- */
/* twin rope_neox: rotate_half RoPE on the first rd channels of each head.
 * x (nh, hd) in place; pos: device (1,). */
cudaError_t kc_rope_neox(float *x, int nh, int hd, int rd, float base, const int32_t *pos,
                         cudaStream_t st);
/* KV cache append at position *pos: kc, vc (ctx, nkv, hd) <- k, v (nkv, hd). */
cudaError_t kc_kv_append(const float *k, const float *v, float *kc, float *vc, int nkv, int hd,
                         const int32_t *pos, cudaStream_t st);
/* The attention prep in ONE launch, bit-identical to rmsnorm(qg heads -> aq, q_norm qnw),
 * rmsnorm(ak in place, knw), rope_neox(aq), rope_neox(ak), kv_append(ak, av -> kc, vc at *pos):
 * qg (nh, 2*hd) [q | gate] per head, ak (nkv, hd) in/out, av (nkv, hd), aq (nh, hd) out,
 * kc, vc (ctx, nkv, hd). rd <= hd even, hd <= 1024. early (option attn_early): 1 each thread's first norm
 * weight and RoPE frequency before the PDL wait, 0 after it; the same bits. */
cudaError_t kc_attn_prep(const float *qg, float *ak, const float *av, const float *qnw, const float *knw, float *aq,
                         float *kc, float *vc, int nh, int nkv, int hd, int rd, float base, float eps,
                         const int32_t *pos, int early, cudaStream_t st);
/* twin attention: GQA decode attention over positions 0..*pos with the sigmoid output gate.
 * q (nh, hd) normed+roped; kc, vc (ctx, nkv, hd); gate (nh, gs) with the gate of head h at
 * gate[h*gs .. h*gs+hd); out (nh, hd) = softmax(q.k^T * scale) . v * sigmoid(gate).
 * q-head h reads kv-head h / (nh/nkv). ctx bounds the shared-memory score buffer. */
cudaError_t kc_attention(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                         float *out, int nh, int nkv, int hd, int ctx, float scale,
                         const int32_t *pos, cudaStream_t st);
/* kc_attention split over positions (flash-decoding: kc_attention_splits(ctx) = min(32,
 * ceil(ctx/16)) blocks per head, each taking ceil(n/splits) of the n = pos + 1 positions, merged by
 * the last block of each head), out within rounding of kc_attention; oq != NULL: out also quantised
 * (quantize_q8) into oq (nh*hd/32,), hd % 32 == 0. Scratch: part (nh, kc_attention_splits(ctx),
 * hd + 2) floats, cnt (nh,) zero before the first call (left zero). Any ctx whose chunk
 * ceil(ctx/32) fits in shared memory beside q (~370 k positions at hd 256). */
int kc_attention_splits(int ctx);
cudaError_t kc_attention_split(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                               float *out, kc_q8blk *oq, int nh, int nkv, int hd, int ctx, float scale,
                               const int32_t *pos, float *part, unsigned int *cnt, cudaStream_t st);
/* kc_attention with ONE block per q head and no shared-memory score buffer (option attn=short): every
 * position's K and V rows read by the head's block, an online softmax per warp, the warps merged in
 * shared memory; oq as kc_attention_split. Any n, but meant for short contexts (the engine takes it
 * up to attn_short positions, the split kernel beyond). Within rounding of kc_attention.
 * kc_attention_short_ok: hd 128, 256 or 512, nkv | nh. */
int kc_attention_short_ok(int nh, int nkv, int hd);
cudaError_t kc_attention_short(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                               float *out, kc_q8blk *oq, int nh, int nkv, int hd, float scale, const int32_t *pos,
                               cudaStream_t st);
/* kc_attn_prep and kc_attention_short in ONE launch (option attn_fuse): qg (nh, 2, hd) the raw q heads
 * and their gates, ak, av (nkv, hd) the raw k and v rows; q and k normed (qnw, knw (hd,)) and rotated
 * (rope_dim rd, base) in each q head's block, k and v appended to the caches at *pos, then the attention
 * over positions 0..*pos as kc_attention_short (scale), out (nh, hd) and oq as there. ak is not written
 * (kc_attn_prep norms it in place). Same bits as kc_attn_prep + kc_attention_short.
 * kc_attention_short_prep_ok: as kc_attention_short_ok, hd <= 256, rd even and <= hd. */
int kc_attention_short_prep_ok(int nh, int nkv, int hd, int rd);
cudaError_t kc_attention_short_prep(const float *qg, const float *ak, const float *av, const float *qnw,
                                    const float *knw, float *kc, float *vc, float *out, kc_q8blk *oq, int nh, int nkv,
                                    int hd, int rd, float base, float eps, float scale, const int32_t *pos,
                                    cudaStream_t st);
/* kc_attention_short_prep over a cluster of csize (2..8) blocks per q head (option attn_fuse bit 2): the
 * same as kc_attn_prep + kc_attention_short_cl, bit for bit (push as there). */
cudaError_t kc_attention_short_cl_prep(const float *qg, const float *ak, const float *av, const float *qnw,
                                       const float *knw, float *kc, float *vc, float *out, kc_q8blk *oq, int nh,
                                       int nkv, int hd, int csize, int rd, float base, float eps, float scale,
                                       const int32_t *pos, int push, cudaStream_t st);
/* kc_attention_short over a thread-block cluster of csize (2..8) blocks per q head (option attn_cl):
 * each block scans every csize-th group of 8 positions, block 0 merges the blocks through distributed
 * shared memory. Same arguments; within rounding of kc_attention. push: each block stores its partial into
 * block 0's shared memory, one cluster barrier (option attn_cl_push, PERF-NOTES v40), instead of block 0
 * reading them between two; the same bits. */
cudaError_t kc_attention_short_cl(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                                  float *out, kc_q8blk *oq, int nh, int nkv, int hd, int csize, float scale,
                                  const int32_t *pos, int push, cudaStream_t st);
/* kc_attention_split with one block per (kv head, split) for the nh/nkv q-heads sharing it (each K and
 * V row read once, option attn=gqa): same arguments, partials and tickets (cnt (nkv,) used), out
 * within rounding of kc_attention. kc_attention_gqa_ok: the shapes it takes (hd 128, 256 or 512,
 * nh/nkv <= 8 with nh/nkv*hd <= 2048, its shared memory <= 48 KB at this ctx). */
int kc_attention_gqa_ok(int nh, int nkv, int hd, int ctx);
cudaError_t kc_attention_gqa(const float *q, const float *kc, const float *vc, const float *gate, int gs, float *out,
                             kc_q8blk *oq, int nh, int nkv, int hd, int ctx, float scale, const int32_t *pos,
                             float *part, unsigned int *cnt, cudaStream_t st);
/* The attention by kv head over a cluster of csize (2..16) blocks (option attn_kvc, PERF-NOTES v35): each
 * K and V row read once per step for the nh/nkv q heads sharing it, the blocks' partials merged through
 * distributed shared memory. With ak (PREP): attn_prep inside, qg (nh, 2 hd) the q/gate rows, ak/av (nkv,
 * hd) the new k and v rows (appended at *pos), qnw/knw the q/k norm weights; without (ak NULL): qg the
 * prepared q (nh, hd) and the cache already holding *pos. Out within rounding of kc_attention.
 * kc_attention_kvc_ok: hd 256, nh/nkv 2, 4, 6 or 8, ceil(nmax / csize) <= 1024 (nmax: the most positions
 * a step will hold). kc_attention_setup first. */
int kc_attention_kvc_ok(int nh, int nkv, int hd, int csize, int nmax);
/* the most positions kc_attention_kvc serves with clusters of csize blocks (csize x 1024; 0 for a csize it refuses) */
int kc_attention_kvc_max(int csize);
/* A driver tensor map (CUtensorMap, 128 bytes) kept opaque here, so that this header needs no cuda.h */
typedef struct kc_tmap {
    alignas(128) unsigned char b[128];
} kc_tmap;
/* tm (2,): NULL, or the K and V caches' tensor maps (kc_kv_tmap): each ring slot is then filled by one tensor
 * copy of its 32 rows instead of a bulk copy per row (option attn_kvc_tm, PERF-NOTES v36); the same bits.
 * push: the blocks' partials pushed into the merging blocks' shared memory, one cluster barrier (option
 * attn_kvc_push, PERF-NOTES v40) instead of read by them between two; the same bits. */
cudaError_t kc_attention_kvc(const float *qg, const float *ak, const float *av, const float *qnw, const float *knw,
                             float *kc, float *vc, const float *gate, int gs, float *out, kc_q8blk *oq, int nh,
                             int nkv, int hd, int csize, int nmax, int rd, float base, float eps, float scale,
                             const int32_t *pos, const kc_tmap *tm, int push, cudaStream_t st);
/* kc_attention_kvc with tm over nsplit (2..32) clusters of csize blocks per kv head (option attn_kvc_sp, PERF-NOTES
 * v38): cluster j of kv head kvh takes positions [j csize c, (j + 1) csize c), c = ceil(n / (nsplit csize)) <=
 * 1024 per block; each cluster's merged partial per q head goes to part (nh, nsplit, hd + 2), and the cluster that
 * takes the last ticket of cnt (nh,) (zero at first use; left re-armed) merges them in split order, gates,
 * writes and quantises. Within rounding of kc_attention_kvc (the merge in two levels); tm required; push as there. */
int kc_attention_kvcx_ok(int nh, int nkv, int hd, int csize, int nsplit, int nmax);
cudaError_t kc_attention_kvcx(const float *qg, const float *ak, const float *av, const float *qnw, const float *knw,
                              float *kc, float *vc, const float *gate, int gs, float *out, kc_q8blk *oq, int nh,
                              int nkv, int hd, int csize, int nsplit, int nmax, int rd, float base, float eps,
                              float scale, const int32_t *pos, const kc_tmap *tm, float *part, unsigned int *cnt,
                              int push, cudaStream_t st);
/* map <- the tensor map kc_attention_kvc's tm reads one cache (ctx, nkv, hd) by (hd 256 only; the driver's
 * cuTensorMapEncodeTiled, found at run time: cudaErrorNotSupported where the driver lacks it) */
cudaError_t kc_kv_tmap(kc_tmap *map, const float *cache, int ctx, int nkv, int hd);
/* Largest ctx kc_attention serves (shared-memory bound), and the one-time setup
 * (raises its and kc_attention_kvc's dynamic shared-memory limits; call before graph capture). */
int kc_attention_max_ctx(void);
cudaError_t kc_attention_setup(int ctx, int hd);

/* ---- misc ---- */
/* Device argmax (ties to the lowest id): out[*idx] = argmax(x (n,)); idx: device (1,) or NULL (= 0). */
/* scr: device scratch for the multi-block reduction (zeroed once at allocation; every call leaves
 * it re-armed), or NULL for one block. Result identical either way. */
typedef struct kc_argmax_scratch {
    unsigned long long part[64];
    unsigned int ticket;
    unsigned int pad[3];
} kc_argmax_scratch;
cudaError_t kc_argmax(const float *x, int n, int32_t *out, const int32_t *idx, kc_argmax_scratch *scr,
                      cudaStream_t st);
/* Decode-step control block on the device: the graph-captured step reads it. */
typedef struct kc_ctl {
    int32_t pos; /* position of the token being decoded */
    int32_t idx; /* index of that token in the current forward() batch */
    int32_t tok; /* token id (set by kc_ctl_begin) */
    int32_t pad;
} kc_ctl;
/* ctl->tok = tokens[ctl->idx]. tokens: device (n,) */
cudaError_t kc_ctl_begin(kc_ctl *ctl, const int32_t *tokens, cudaStream_t st);
/* ctl->pos++, ctl->idx++ */
cudaError_t kc_ctl_end(kc_ctl *ctl, cudaStream_t st);
/* Streaming read of buf (n16 16-byte words); sink (1,) receives a value that depends on all of it. */
cudaError_t kc_stream_read(const uint4 *buf, uint64_t n16, uint32_t *sink, int blocks, cudaStream_t st);

#endif
