/*
 * cuda/kernels.cu - kernels and their launchers (see kernels.cuh for the
 * contract of each op and the name of its CPU twin).
 *
 * GEMV design, three paths (launch_gemv):
 * - q4_0 layout 1 (every real Qwen3.5 width): gemv_q4.cuh, a warp streams 1, 2 or 4 rows
 *   (kc_gemv_rpw) sharing each activation load, the next superblock prefetched in registers,
 *   grid capped at one resident wave with grid-stride rows (kc_mat.gemv = 0, the default);
 *   or 1, 2 rows with 3 superblocks in flight through cp.async (kc_mat.gemv = 1: measured
 *   slower, kept for A/B, cuda/PERF-NOTES.md v4);
 * - other types with rows < ROWBLOCK_MAX_ROWS (beta/alpha projections): one block per row;
 * - other types: one warp per row, 8 warps per block; each lane walks the row in 16-byte
 *   loads (q4_0 layout 0: one block of 32 weights per load; q8_0: two loads per block;
 *   f32: 4 floats; f16/bf16: 8 halves), two blocks per iteration into independent
 *   accumulators, then a butterfly shuffle reduction.
 * Each row's arithmetic depends only on its matrix (type, layout, rows class), never on the
 * launch it is part of, so fused (pair, SwiGLU) and separate launches are bit-identical.
 */
#include "kernels.cuh"

#include <string.h>
#include <cuda.h> /* CUtensorMap and its enums only: the encoder comes from the driver at run time */

static __thread int g_pdl; /* kc_set_pdl */
void kc_set_pdl(int on) { g_pdl = on; }
static __thread int g_carveout = -1; /* kc_set_carveout */
void kc_set_carveout(int pct) { g_carveout = pct; }
static __thread int g_q8t_half; /* kc_set_q8t_half */
void kc_set_q8t_half(int on) { g_q8t_half = on; }
static __thread int g_q8t_bch; /* kc_set_q8t_bch */
void kc_set_q8t_bch(int on) { g_q8t_bch = on; }

static __thread int *g_log, g_log_cap, *g_log_len, g_log_name; /* kc_set_launch_log */
void kc_set_launch_log(int *log, int cap, int *len)
{
    g_log = log;
    g_log_cap = cap;
    g_log_len = len;
}
void kc_set_launch_name(int name) { g_log_name = name; }

#ifdef KC_TRACE
int kc_trace_supported(void) { return 1; }
cudaError_t kc_set_trace(const kc_trace *tr) { return cudaMemcpyToSymbol(g_kc_trace, tr, sizeof *tr); }
#else
int kc_trace_supported(void) { return 0; }
cudaError_t kc_set_trace(const kc_trace *tr)
{
    (void)tr;
    return cudaErrorNotSupported;
}
#endif

/* Launch a kernel of the decode step (every one starts with kc_pdl_begin): with the PDL
 * attribute when kc_set_pdl(1); cluster > 1: in thread-block clusters of that many blocks. */
template <typename... P, typename... A>
static void kc_launch_cluster(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, int cluster, cudaStream_t st,
                              A... args)
{
    cudaLaunchAttribute at[3];
    unsigned na = 0;
    if (g_carveout >= 0) { /* one shared-memory/L1 split for every kernel of the step */
        at[na].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
        at[na++].val.sharedMemCarveout = (unsigned)g_carveout;
    }
    if (cluster < 0) { /* a grid whose blocks wait for each other (grid barriers): every block resident
                        * at once or no launch; not a PDL dependent, which may start while the previous
                        * kernel still holds SMs (ffn=fused deadlocked that way without the graph) */
        at[na].id = cudaLaunchAttributeCooperative;
        at[na++].val.cooperative = 1;
    } else if (g_pdl) {
        at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[na++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster > 1) { /* thread-block clusters of `cluster` consecutive blocks along x */
        at[na].id = cudaLaunchAttributeClusterDimension;
        at[na].val.clusterDim.x = (unsigned)cluster;
        at[na].val.clusterDim.y = 1;
        at[na++].val.clusterDim.z = 1;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = na;
    if (g_log) {
        if (*g_log_len < g_log_cap) g_log[*g_log_len] = g_log_name;
        ++*g_log_len;
    }
    (void)cudaLaunchKernelEx(&cfg, kernel, args...); /* the launcher returns cudaGetLastError() */
}

/* kc_launch_cluster without clusters: every step kernel but gdn_step */
template <typename... P, typename... A>
static void kc_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, A... args)
{
    kc_launch_cluster(kernel, grid, block, smem, 1, st, args...);
}

#define GGML_F32 0u
#define GGML_F16 1u
#define GGML_Q4_0 2u
#define GGML_Q8_0 8u
#define GGML_BF16 30u

#define ROWS_PER_BLOCK 8

/* ------------------------------------------------------------------ layout */

int kc_mat_supported(uint32_t type, int64_t cols)
{
    if (cols <= 0 || cols % 32 != 0) return 0;
    return type == GGML_F32 || type == GGML_F16 || type == GGML_BF16 || type == GGML_Q4_0 ||
           type == GGML_Q8_0;
}

uint64_t kc_mat_data_bytes(uint32_t type, int64_t rows, int64_t cols)
{
    const uint64_t n = (uint64_t)rows * (uint64_t)cols;
    switch (type) {
    case GGML_F32: return n * 4;
    case GGML_F16:
    case GGML_BF16: return n * 2;
    case GGML_Q8_0: return n;
    case GGML_Q4_0: return n / 2;
    default: return 0;
    }
}

uint64_t kc_mat_scale_bytes(uint32_t type, int64_t rows, int64_t cols)
{
    if (type == GGML_Q8_0 || type == GGML_Q4_0) return (uint64_t)rows * (uint64_t)(cols / 32) * 2;
    return 0;
}

int kc_mat_layout(uint32_t type, int64_t cols, int dot_q8) { return type == GGML_Q4_0 && cols % 1024 == 0 && !dot_q8; }

/* Repacking runs on the device (a 27B model has 25 G weights: too slow for one host thread).
 * One thread per ggml block: the scale, and for layout 0 the quant bytes. */
__global__ void repack_blocks_kernel(const uint8_t *__restrict__ src, uint8_t *__restrict__ q,
                                     __half *__restrict__ d, uint64_t nblk, int qb, int copy_quants, int nsb)
{
    const uint64_t b = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblk) return;
    const uint8_t *s = src + b * (2 + qb);
    uint64_t di = b;
    if (nsb) { /* layout 1: block sb*32 + 4k + g of a row goes to [row][sb][g][k] */
        const uint64_t rs = b / 32, rem = b % 32;
        di = (rs * 4 + rem % 4) * 8 + rem / 4;
    }
    d[di] = __ushort_as_half((unsigned short)(s[0] | (s[1] << 8)));
    if (copy_quants)
        for (int i = 0; i < qb; i++) q[b * qb + i] = s[2 + i];
}

/* layout 1: one thread per (row, superblock, lane) 16-byte chunk, gathered from 8 ggml blocks */
__global__ void repack_q4sb_kernel(const uint8_t *__restrict__ src, uint8_t *__restrict__ q, uint64_t nchunk,
                                   int nsb)
{
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nchunk) return;
    const int l = (int)(t % 32);
    const uint64_t rs = t / 32; /* row * nsb + superblock */
    const uint64_t r = rs / nsb, sb = rs % nsb;
    const uint64_t nb = (uint64_t)nsb * 32;
    uint8_t out[16];
    for (int k = 0; k < 8; k++) {
        const uint8_t *blk = src + (r * nb + sb * 32 + 4 * k + l / 8) * 18 + 2;
        const int p0 = 4 * (l % 8); /* first position of the 4 weights inside the block */
        for (int j = 0; j < 4; j++) {
            const int p = p0 + j, m = 4 * k + j;
            const uint8_t byte = blk[p & 15];
            const uint8_t nib = p < 16 ? (byte & 15) : (byte >> 4);
            if (m & 1) out[m >> 1] |= (uint8_t)(nib << 4);
            else out[m >> 1] = nib;
        }
    }
    uint4 v;
    memcpy(&v, out, 16);
    ((uint4 *)q)[t] = v;
}

cudaError_t kc_mat_repack_dev(uint32_t type, int64_t rows, int64_t cols, int layout, const void *src_dev,
                              void *data_out, void *scale_out, cudaStream_t st)
{
    const uint64_t nblk = (uint64_t)rows * (uint64_t)(cols / 32);
    const int qb = type == GGML_Q4_0 ? 16 : 32, sb = layout == 1;
    if (type != GGML_Q8_0 && type != GGML_Q4_0) return cudaErrorInvalidValue;
    if (sb && (type != GGML_Q4_0 || cols % 1024)) return cudaErrorInvalidValue;
    repack_blocks_kernel<<<(unsigned)((nblk + 255) / 256), 256, 0, st>>>(
        (const uint8_t *)src_dev, (uint8_t *)data_out, (__half *)scale_out, nblk, qb, !sb, sb ? (int)(cols / 1024) : 0);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || !sb) return e;
    const uint64_t nchunk = (uint64_t)rows * (uint64_t)(cols / 1024) * 32;
    repack_q4sb_kernel<<<(unsigned)((nchunk + 255) / 256), 256, 0, st>>>((const uint8_t *)src_dev,
                                                                          (uint8_t *)data_out, nchunk,
                                                                          (int)(cols / 1024));
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ GEMV */

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float bf16f(uint32_t bits16) { return __uint_as_float(bits16 << 16); }

/* sum over the 8 values packed in one 32-bit word pair of f16 */
__device__ __forceinline__ float dot8_f16(uint4 w, const float4 a, const float4 b)
{
    const __half2 *h = (const __half2 *)&w;
    float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
    float2 f2 = __half22float2(h[2]), f3 = __half22float2(h[3]);
    float s = f0.x * a.x;
    s += f0.y * a.y;
    s += f1.x * a.z;
    s += f1.y * a.w;
    s += f2.x * b.x;
    s += f2.y * b.y;
    s += f3.x * b.z;
    s += f3.y * b.w;
    return s;
}

__device__ __forceinline__ float dot8_bf16(uint4 w, const float4 a, const float4 b)
{
    float s = bf16f(w.x & 0xffffu) * a.x;
    s += bf16f(w.x >> 16) * a.y;
    s += bf16f(w.y & 0xffffu) * a.z;
    s += bf16f(w.y >> 16) * a.w;
    s += bf16f(w.z & 0xffffu) * b.x;
    s += bf16f(w.z >> 16) * b.y;
    s += bf16f(w.w & 0xffffu) * b.z;
    s += bf16f(w.w >> 16) * b.w;
    return s;
}

/* one q4_0 block: 16 bytes of quants q, 32 activations at x; returns sum (n-8)*x (unscaled) */
__device__ __forceinline__ float dot_q4_block(uint4 q, const float *__restrict__ x)
{
    const float4 *x4 = (const float4 *)x;
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
    float lo = 0.0f, hi = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float4 xl = __ldca(x4 + i);     /* x[4i .. 4i+3]: low nibbles of bytes 4i.. */
        const float4 xh = __ldca(x4 + 4 + i); /* x[16+4i ..]: high nibbles */
        const uint32_t b = w[i];
        lo += (float)((int)(b & 15u) - 8) * xl.x;
        lo += (float)((int)((b >> 8) & 15u) - 8) * xl.y;
        lo += (float)((int)((b >> 16) & 15u) - 8) * xl.z;
        lo += (float)((int)((b >> 24) & 15u) - 8) * xl.w;
        hi += (float)((int)((b >> 4) & 15u) - 8) * xh.x;
        hi += (float)((int)((b >> 12) & 15u) - 8) * xh.y;
        hi += (float)((int)((b >> 20) & 15u) - 8) * xh.z;
        hi += (float)((int)((b >> 28) & 15u) - 8) * xh.w;
    }
    return lo + hi;
}

__device__ __forceinline__ float dot_q8_half(uint4 q, const float *__restrict__ x)
{
    const float4 *x4 = (const float4 *)x;
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float4 xv = __ldca(x4 + i);
        const uint32_t b = w[i];
        s += (float)(int8_t)(b & 0xffu) * xv.x;
        s += (float)(int8_t)((b >> 8) & 0xffu) * xv.y;
        s += (float)(int8_t)((b >> 16) & 0xffu) * xv.z;
        s += (float)(int8_t)(b >> 24) * xv.w;
    }
    return s;
}

#define GGML_Q4_0_SB 1002u /* internal dispatch code: q4_0 in layout 1 */

/* dot(row r of W, x) for one warp; every lane returns the full sum */
template <uint32_t TYPE>
__device__ __forceinline__ float row_dot(const kc_mat W, int r, const float *__restrict__ x, int lane)
{
    const int cols = W.cols;
    float acc0 = 0.0f, acc1 = 0.0f;
    if (TYPE == GGML_Q4_0 || TYPE == GGML_Q8_0) {
        const int nb = cols / 32;
        const __half *d = W.d + (size_t)r * nb;
        const size_t qb = TYPE == GGML_Q4_0 ? 16 : 32;
        const uint8_t *qs = (const uint8_t *)W.data + (size_t)r * nb * qb;
        int b = lane;
        for (; b + 32 < nb; b += 64) { /* two blocks in flight per lane */
            const float d0 = __half2float(d[b]), d1 = __half2float(d[b + 32]);
            if (TYPE == GGML_Q4_0) {
                const uint4 q0 = __ldg((const uint4 *)(qs + (size_t)b * 16));
                const uint4 q1 = __ldg((const uint4 *)(qs + (size_t)(b + 32) * 16));
                acc0 += d0 * dot_q4_block(q0, x + (size_t)b * 32);
                acc1 += d1 * dot_q4_block(q1, x + (size_t)(b + 32) * 32);
            } else {
                const uint4 *p0 = (const uint4 *)(qs + (size_t)b * 32);
                const uint4 *p1 = (const uint4 *)(qs + (size_t)(b + 32) * 32);
                const uint4 q00 = __ldg(p0), q01 = __ldg(p0 + 1), q10 = __ldg(p1), q11 = __ldg(p1 + 1);
                acc0 += d0 * (dot_q8_half(q00, x + (size_t)b * 32) +
                              dot_q8_half(q01, x + (size_t)b * 32 + 16));
                acc1 += d1 * (dot_q8_half(q10, x + (size_t)(b + 32) * 32) +
                              dot_q8_half(q11, x + (size_t)(b + 32) * 32 + 16));
            }
        }
        if (b < nb) {
            const float d0 = __half2float(d[b]);
            if (TYPE == GGML_Q4_0) {
                acc0 += d0 * dot_q4_block(__ldg((const uint4 *)(qs + (size_t)b * 16)), x + (size_t)b * 32);
            } else {
                const uint4 *p0 = (const uint4 *)(qs + (size_t)b * 32);
                acc0 += d0 * (dot_q8_half(__ldg(p0), x + (size_t)b * 32) +
                              dot_q8_half(__ldg(p0 + 1), x + (size_t)b * 32 + 16));
            }
        }
    } else if (TYPE == GGML_F32) {
        const float4 *w4 = (const float4 *)((const float *)W.data + (size_t)r * cols);
        const float4 *x4 = (const float4 *)x;
        const int n4 = cols / 4;
        int c = lane;
        for (; c + 32 < n4; c += 64) {
            const float4 a = __ldg(w4 + c), b = __ldg(w4 + c + 32);
            const float4 xa = __ldca(x4 + c), xb = __ldca(x4 + c + 32);
            acc0 += a.x * xa.x; acc0 += a.y * xa.y; acc0 += a.z * xa.z; acc0 += a.w * xa.w;
            acc1 += b.x * xb.x; acc1 += b.y * xb.y; acc1 += b.z * xb.z; acc1 += b.w * xb.w;
        }
        if (c < n4) {
            const float4 a = __ldg(w4 + c), xa = __ldca(x4 + c);
            acc0 += a.x * xa.x; acc0 += a.y * xa.y; acc0 += a.z * xa.z; acc0 += a.w * xa.w;
        }
    } else { /* F16 / BF16: 8 weights per 16-byte load */
        const uint4 *w8 = (const uint4 *)((const uint16_t *)W.data + (size_t)r * cols);
        const float4 *x4 = (const float4 *)x;
        const int n8 = cols / 8;
        for (int c = lane; c < n8; c += 32) {
            const uint4 w = __ldg(w8 + c);
            const float4 xa = __ldca(x4 + 2 * c), xb = __ldca(x4 + 2 * c + 1);
            const float s = TYPE == GGML_F16 ? dot8_f16(w, xa, xb) : dot8_bf16(w, xa, xb);
            if ((c / 32) & 1) acc1 += s; else acc0 += s;
        }
    }
    return warp_sum(acc0 + acc1);
}

template <uint32_t TYPE>
__global__ void matvec_kernel(const kc_mat W, const float *__restrict__ x, float *__restrict__ y,
                              int accumulate)
{
    kc_pdl_begin();
    const int r = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= W.rows) return;
    const float s = row_dot<TYPE>(W, r, x, lane);
    if (lane == 0) y[r] = accumulate ? y[r] + s : s;
}

template <uint32_t TYPE>
__global__ void matvec2_kernel(const kc_mat W0, const kc_mat W1, const float *__restrict__ x,
                               float *__restrict__ y0, float *__restrict__ y1)
{
    kc_pdl_begin();
    int r = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r < W0.rows) {
        const float s = row_dot<TYPE>(W0, r, x, lane);
        if (lane == 0) y0[r] = s;
        return;
    }
    r -= W0.rows;
    if (r >= W1.rows) return;
    const float s = row_dot<TYPE>(W1, r, x, lane);
    if (lane == 0) y1[r] = s;
}

template <uint32_t TYPE>
__global__ void matvec_swiglu_kernel(const kc_mat G, const kc_mat U, const float *__restrict__ x,
                                     float *__restrict__ y)
{
    kc_pdl_begin();
    const int r = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= G.rows) return;
    const float g = row_dot<TYPE>(G, r, x, lane), u = row_dot<TYPE>(U, r, x, lane);
    if (lane == 0) y[r] = g / (1.0f + expf(-g)) * u;
}

#include "gemv_q4.cuh"

__device__ float block_sum(float v, float *sh);

/* Short matrices (rows < ROWBLOCK_MAX_ROWS, types other than q4_0 layout 1): one BLOCK per row,
 * its threads strided over 16-byte units of the row, then a fixed-tree block sum. The beta/alpha
 * projections (48 rows of 5120) ran as 12 blocks of warp-per-row GEMV at ~150 GB/s.
 * Unit u of a row: f32 columns 4u.., f16/bf16 8u.., q8_0 16u.. (half a block), q4_0 layout 0 32u.. */
#define ROWBLOCK_MAX_ROWS 1024
#define ROWBLOCK_THREADS 256

template <uint32_t TYPE>
__device__ __forceinline__ float unit_dot(const kc_mat &W, int r, int u, const float *__restrict__ x)
{
    const int cols = W.cols;
    if (TYPE == GGML_F32) {
        const float4 a = __ldg((const float4 *)((const float *)W.data + (size_t)r * cols) + u);
        const float4 xa = __ldca((const float4 *)x + u);
        float s = a.x * xa.x;
        s += a.y * xa.y;
        s += a.z * xa.z;
        s += a.w * xa.w;
        return s;
    } else if (TYPE == GGML_F16 || TYPE == GGML_BF16) {
        const uint4 w = __ldg((const uint4 *)((const uint16_t *)W.data + (size_t)r * cols) + u);
        const float4 xa = __ldca((const float4 *)x + 2 * u), xb = __ldca((const float4 *)x + 2 * u + 1);
        return TYPE == GGML_F16 ? dot8_f16(w, xa, xb) : dot8_bf16(w, xa, xb);
    } else if (TYPE == GGML_Q8_0) {
        const int nb = cols / 32;
        const uint4 q = __ldg((const uint4 *)((const int8_t *)W.data + (size_t)r * cols) + u);
        return __half2float(W.d[(size_t)r * nb + u / 2]) * dot_q8_half(q, x + (size_t)u * 16);
    } else { /* Q4_0, layout 0 */
        const int nb = cols / 32;
        const uint4 q = __ldg((const uint4 *)W.data + (size_t)r * nb + u);
        return __half2float(W.d[(size_t)r * nb + u]) * dot_q4_block(q, x + (size_t)u * 32);
    }
}

/* grid = W0.rows + W1.rows: block b < W0.rows takes row b of W0, the others rows of W1 */
template <uint32_t TYPE>
__global__ void __launch_bounds__(ROWBLOCK_THREADS) matvec_rowblock_kernel(const kc_mat W0, const kc_mat W1,
                                                                           const float *__restrict__ x, float *y0,
                                                                           float *y1, int accumulate)
{
    kc_pdl_begin();
    __shared__ float sh[32];
    const bool first = (int)blockIdx.x < W0.rows;
    const kc_mat W = first ? W0 : W1;
    const int r = first ? (int)blockIdx.x : (int)blockIdx.x - W0.rows;
    float *y = first ? y0 : y1;
    const int upr = TYPE == GGML_F32 ? 4 : TYPE == GGML_Q8_0 ? 16 : TYPE == GGML_Q4_0 ? 32 : 8;
    const int n = W.cols / upr;
    float acc0 = 0.0f, acc1 = 0.0f;
    int u = threadIdx.x;
    for (; u + ROWBLOCK_THREADS < n; u += 2 * ROWBLOCK_THREADS) { /* two units in flight */
        const float a = unit_dot<TYPE>(W, r, u, x), b = unit_dot<TYPE>(W, r, u + ROWBLOCK_THREADS, x);
        acc0 += a;
        acc1 += b;
    }
    if (u < n) acc0 += unit_dot<TYPE>(W, r, u, x);
    const float s = block_sum(acc0 + acc1, sh);
    if (threadIdx.x == 0) y[r] = accumulate ? y[r] + s : s;
}

#define DISPATCH_TYPE(type, KERNEL, grid, block, smem, st, ...)                                   \
    switch (type) {                                                                               \
    case GGML_F32: kc_launch(KERNEL<GGML_F32>, grid, block, smem, st, __VA_ARGS__); break;              \
    case GGML_F16: kc_launch(KERNEL<GGML_F16>, grid, block, smem, st, __VA_ARGS__); break;              \
    case GGML_BF16: kc_launch(KERNEL<GGML_BF16>, grid, block, smem, st, __VA_ARGS__); break;            \
    case GGML_Q8_0: kc_launch(KERNEL<GGML_Q8_0>, grid, block, smem, st, __VA_ARGS__); break;            \
    case GGML_Q4_0: kc_launch(KERNEL<GGML_Q4_0>, grid, block, smem, st, __VA_ARGS__); break;            \
    default: return cudaErrorInvalidValue;                                                        \
    }

static uint32_t disp_type(const kc_mat *W) { return W->type == GGML_Q4_0 && W->layout == 1 ? GGML_Q4_0_SB : W->type; }

int kc_gemv_rpw(const kc_mat *W)
{
    const int cap = W->gemv == 1 ? 2 : 4;
    if (W->rpw == 1 || W->rpw == 2 || W->rpw == 4) return W->rpw < cap ? W->rpw : cap;
    /* measured on the 27B shape (PERF-NOTES v2): 2 rows per warp 8.89 ms, 1: 9.06, 4: 9.96 (registers) */
    return W->rows >= 2048 ? 2 : 1;
}

/* Resident blocks of each register-prefetch q4_0 kernel on the whole device (SMs x blocks per SM):
 * the launch grids are capped there (one wave, rows walked with the grid's stride). Index:
 * matvec R = 1, 2, 4, then SwiGLU P = 1, 2. 0 = not known yet. Filled by kc_gemv_setup (the
 * engine calls it before any graph capture) or on first use. */
static int g_q4m_slots[5];

static cudaError_t q8x_setup(void);
static cudaError_t q8t_setup(void);

cudaError_t kc_gemv_setup(void)
{
    int dev = 0, sms = 0, nb[5] = {0, 0, 0, 0, 0};
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb[0], matvec_q4m_kernel<1>, 32 * Q4M_WARPS, 0);
    if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb[1], matvec_q4m_kernel<2>, 32 * Q4M_WARPS, 0);
    if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb[2], matvec_q4m_kernel<4>, 32 * Q4M_WARPS, 0);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb[3], matvec_swiglu_q4m_kernel<1>, 32 * Q4M_WARPS, 0);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb[4], matvec_swiglu_q4m_kernel<2>, 32 * Q4M_WARPS, 0);
    if (e != cudaSuccess) return e;
    for (int i = 0; i < 5; i++) g_q4m_slots[i] = sms * (nb[i] > 0 ? nb[i] : 1);
    e = q8x_setup();
    return e == cudaSuccess ? q8t_setup() : e;
}

/* grid for `blocks` blocks of q4m kernel `which`: at most one resident wave */
static int q4m_grid(int which, int blocks)
{
    if (!g_q4m_slots[which] && kc_gemv_setup() != cudaSuccess) return blocks;
    return blocks < g_q4m_slots[which] ? blocks : g_q4m_slots[which];
}

static int rowblock_path(const kc_mat *W) { return disp_type(W) != GGML_Q4_0_SB && W->rows < ROWBLOCK_MAX_ROWS; }

#define ROWBLOCK_TYPE(type, grid, st, ...)                                                        \
    switch (type) {                                                                               \
    case GGML_F32: kc_launch(matvec_rowblock_kernel<GGML_F32>, grid, ROWBLOCK_THREADS, 0, st, __VA_ARGS__); break;   \
    case GGML_F16: kc_launch(matvec_rowblock_kernel<GGML_F16>, grid, ROWBLOCK_THREADS, 0, st, __VA_ARGS__); break;   \
    case GGML_BF16: kc_launch(matvec_rowblock_kernel<GGML_BF16>, grid, ROWBLOCK_THREADS, 0, st, __VA_ARGS__); break; \
    case GGML_Q8_0: kc_launch(matvec_rowblock_kernel<GGML_Q8_0>, grid, ROWBLOCK_THREADS, 0, st, __VA_ARGS__); break; \
    case GGML_Q4_0: kc_launch(matvec_rowblock_kernel<GGML_Q4_0>, grid, ROWBLOCK_THREADS, 0, st, __VA_ARGS__); break; \
    default: return cudaErrorInvalidValue;                                                        \
    }

/* W0 (and W1 when W1 != NULL: same type, cols and layout) in one launch, by path */
static cudaError_t launch_gemv(const kc_mat *W0, const kc_mat *W1, const float *x, float *y0, float *y1,
                               int accumulate, cudaStream_t st)
{
    kc_mat none;
    memset(&none, 0, sizeof none);
    const kc_mat *B = W1 ? W1 : &none;
    const int rows = W0->rows + B->rows;
    if (disp_type(W0) == GGML_Q4_0_SB && W0->gemv == 1) {
        const int R = kc_gemv_rpw(W0);
        const int warps = (W0->rows + R - 1) / R + (B->rows + R - 1) / R;
        const int grid = (warps + Q4P_WARPS - 1) / Q4P_WARPS;
        if (R == 2) kc_launch(matvec_q4p_kernel<2>, grid, 32 * Q4P_WARPS, 0, st, *W0, *B, x, y0, y1, accumulate);
        else kc_launch(matvec_q4p_kernel<1>, grid, 32 * Q4P_WARPS, 0, st, *W0, *B, x, y0, y1, accumulate);
    } else if (disp_type(W0) == GGML_Q4_0_SB) {
        const int R = kc_gemv_rpw(W0);
        const int warps = (W0->rows + R - 1) / R + (B->rows + R - 1) / R;
        const int grid = q4m_grid(R == 4 ? 2 : R - 1, (warps + Q4M_WARPS - 1) / Q4M_WARPS);
        if (R == 4) kc_launch(matvec_q4m_kernel<4>, grid, 32 * Q4M_WARPS, 0, st, *W0, *B, x, y0, y1, accumulate);
        else if (R == 2) kc_launch(matvec_q4m_kernel<2>, grid, 32 * Q4M_WARPS, 0, st, *W0, *B, x, y0, y1, accumulate);
        else kc_launch(matvec_q4m_kernel<1>, grid, 32 * Q4M_WARPS, 0, st, *W0, *B, x, y0, y1, accumulate);
    } else if (rowblock_path(W0)) {
        ROWBLOCK_TYPE(W0->type, rows, st, *W0, *B, x, y0, y1, accumulate);
    } else if (!W1) {
        const int grid = (W0->rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
        DISPATCH_TYPE(W0->type, matvec_kernel, grid, 32 * ROWS_PER_BLOCK, 0, st, *W0, x, y0, accumulate);
    } else {
        if (accumulate) return cudaErrorInvalidValue;
        const int grid = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
        DISPATCH_TYPE(W0->type, matvec2_kernel, grid, 32 * ROWS_PER_BLOCK, 0, st, *W0, *W1, x, y0, y1);
    }
    return cudaGetLastError();
}

cudaError_t kc_matvec(const kc_mat *W, const float *x, float *y, int accumulate, cudaStream_t st)
{
    return launch_gemv(W, NULL, x, y, NULL, accumulate, st);
}

cudaError_t kc_matvec2(const kc_mat *W0, const kc_mat *W1, const float *x, float *y0, float *y1,
                       cudaStream_t st)
{
    if (W0->type != W1->type || W0->cols != W1->cols || W0->layout != W1->layout || W0->gemv != W1->gemv)
        return cudaErrorInvalidValue;
    if (disp_type(W0) != GGML_Q4_0_SB && rowblock_path(W0) != rowblock_path(W1)) {
        /* the two rows counts fall on different paths: two launches keep each matrix on its own */
        cudaError_t e = launch_gemv(W0, NULL, x, y0, NULL, 0, st);
        return e != cudaSuccess ? e : launch_gemv(W1, NULL, x, y1, NULL, 0, st);
    }
    return launch_gemv(W0, W1, x, y0, y1, 0, st);
}

cudaError_t kc_matvec_swiglu(const kc_mat *G, const kc_mat *U, const float *x, float *y, cudaStream_t st)
{
    if (G->type != U->type || G->cols != U->cols || G->rows != U->rows || G->layout != U->layout ||
        G->gemv != U->gemv)
        return cudaErrorInvalidValue;
    if (disp_type(G) == GGML_Q4_0_SB && G->gemv == 1) {
        kc_launch(matvec_swiglu_q4p_kernel, (G->rows + Q4P_WARPS - 1) / Q4P_WARPS, 32 * Q4P_WARPS, 0, st, *G, *U, x, y);
        return cudaGetLastError();
    }
    if (disp_type(G) == GGML_Q4_0_SB) {
        const int P = kc_gemv_rpw(G) >= 4 ? 2 : 1; /* 2P row streams per warp */
        const int grid = q4m_grid(2 + P, ((G->rows + P - 1) / P + Q4M_WARPS - 1) / Q4M_WARPS);
        if (P == 2) kc_launch(matvec_swiglu_q4m_kernel<2>, grid, 32 * Q4M_WARPS, 0, st, *G, *U, x, y);
        else kc_launch(matvec_swiglu_q4m_kernel<1>, grid, 32 * Q4M_WARPS, 0, st, *G, *U, x, y);
        return cudaGetLastError();
    }
    const int grid = (G->rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    DISPATCH_TYPE(disp_type(G), matvec_swiglu_kernel, grid, 32 * ROWS_PER_BLOCK, 0, st, *G, *U, x, y);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ GEMV, 8-bit activations */

#include "gemv_q8.cuh"
#include "gemv_q8t.cuh"

static __thread kc_pf g_pf_next; /* kc_set_prefetch_next: taken by the next q8 GEMV launch */

void kc_set_prefetch_next(const kc_pf *pf)
{
    if (pf) g_pf_next = *pf;
    else memset(&g_pf_next, 0, sizeof g_pf_next);
}

static kc_pf take_prefetch_next(void)
{
    const kc_pf pf = g_pf_next;
    memset(&g_pf_next, 0, sizeof g_pf_next);
    return pf;
}

/* append [p, p + n) rounded down to 16 bytes; the GEMV reads whole rows from the start */
static void pf_add(kc_pf *pf, const void *p, size_t n)
{
    n &= ~(size_t)15;
    if (n > 0xFFFFFFF0u) n = 0xFFFFFFF0u;
    if (!n || pf->nr >= KC_PF_RANGES) return;
    pf->p[pf->nr] = p;
    pf->n[pf->nr] = (uint32_t)n;
    pf->nr++;
}

void kc_prefetch_plan(kc_pf *pf, const kc_mat *const *W, int n, int paired, size_t bytes)
{
    memset(pf, 0, sizeof *pf);
    if (n < 1 || n > KC_PF_RANGES / 2 || (paired && n != 2)) return;
    for (int i = 0; i < n; i++)
        if (W[i]->type != GGML_Q4_0 || W[i]->layout != 0 || W[i]->cols % 32) return;
    if (paired) { /* row r of gate and up together: the same number of rows of each */
        const size_t row = (size_t)(W[0]->cols / 32) * 18 + (size_t)(W[1]->cols / 32) * 18;
        size_t rows = bytes / row;
        if (rows > (size_t)W[0]->rows) rows = (size_t)W[0]->rows;
        for (int i = 0; i < 2; i++) {
            const size_t nb = (size_t)W[i]->cols / 32;
            pf_add(pf, W[i]->data, rows * nb * 16);
            pf_add(pf, W[i]->d, rows * nb * 2);
        }
        return;
    }
    for (int i = 0; i < n && bytes; i++) { /* matrix after matrix */
        const size_t nb = (size_t)W[i]->cols / 32, row = nb * 18;
        size_t rows = bytes / row;
        if (rows > (size_t)W[i]->rows) rows = (size_t)W[i]->rows;
        pf_add(pf, W[i]->data, rows * nb * 16);
        pf_add(pf, W[i]->d, rows * nb * 2);
        bytes -= rows * row;
        if (rows < (size_t)W[i]->rows) break;
    }
}

cudaError_t kc_quantize_q8(const float *x, int n, kc_q8blk *xq, cudaStream_t st)
{
    if (n <= 0 || n % 32) return cudaErrorInvalidValue;
    const int nblk = n / 32;
    kc_launch(quantize_q8_kernel, (nblk + 7) / 8, 256, 0, st, x, xq, nblk);
    return cudaGetLastError();
}

/* Rows per warp and blocks per lane in flight of the q8 GEMV: W->rpw / W->unroll when set, else by
 * rows. Measured alone on the 27B shapes (cuda/bench_gemv, PERF-NOTES v6): R = U = 1 is best or
 * within noise for every matrix up to 17408 rows (the down projection: R=1 17.6 us, R=2 21.8,
 * R=4 22.8-43), R = U = 2 for the 248320-row lm_head (166 vs 182 us). */
static int q8_rpw(const kc_mat *W)
{
    if (W->rpw == 1 || W->rpw == 2 || W->rpw == 4) return W->rpw;
    return W->rows > 65536 ? 2 : 1;
}
static int q8_unroll(const kc_mat *W)
{
    if (W->unroll == 1 || W->unroll == 2 || W->unroll == 4) return W->unroll;
    return W->rows > 65536 ? 2 : 1;
}

#define Q8_DISPATCH_U(KERNEL, R, U, grid, st, ...) Q8_DISPATCH_US(KERNEL, R, U, grid, 0, st, __VA_ARGS__)
#define Q8_DISPATCH_US(KERNEL, R, U, grid, smem, st, ...)                                        \
    do {                                                                                          \
        if ((U) == 4) kc_launch(KERNEL<R, 4>, grid, 32 * Q8M_WARPS, smem, st, __VA_ARGS__);            \
        else if ((U) == 1) kc_launch(KERNEL<R, 1>, grid, 32 * Q8M_WARPS, smem, st, __VA_ARGS__);       \
        else kc_launch(KERNEL<R, 2>, grid, 32 * Q8M_WARPS, smem, st, __VA_ARGS__);                      \
    } while (0)
#define Q8_DISPATCH_NC(R, U, grid, st, ...)                                                       \
    do {                                                                                          \
        if ((U) == 4) kc_launch(matvec_q8_kernel<R, 4, XLOAD_NC>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); \
        else if ((U) == 1) kc_launch(matvec_q8_kernel<R, 1, XLOAD_NC>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); \
        else kc_launch(matvec_q8_kernel<R, 2, XLOAD_NC>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); \
    } while (0)

/* persistent grid of matvec_q8s_kernel<R, U> with smem bytes of x: its resident blocks on the
 * device, at most `groups` warps' worth */
template <int R, int U>
static int q8s_slots(size_t smem)
{
    int dev = 0, sms = 0, a = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, matvec_q8s_kernel<R, U>, 32 * Q8M_WARPS, smem) != cudaSuccess)
        return 0;
    return sms * (a > 0 ? a : 1);
}
static int q8s_grid(int R, int U, size_t smem, int groups)
{
    int slots;
    if (R == 4) slots = U == 4 ? q8s_slots<4, 4>(smem) : U == 1 ? q8s_slots<4, 1>(smem) : q8s_slots<4, 2>(smem);
    else if (R == 1) slots = U == 4 ? q8s_slots<1, 4>(smem) : U == 1 ? q8s_slots<1, 1>(smem) : q8s_slots<1, 2>(smem);
    else slots = U == 4 ? q8s_slots<2, 4>(smem) : U == 1 ? q8s_slots<2, 1>(smem) : q8s_slots<2, 2>(smem);
    const int need = (groups + Q8M_WARPS - 1) / Q8M_WARPS;
    return slots > 0 && slots < need ? slots : need;
}

/* x-stationary kernels: blocks per lane NBL = 1..Q8X_MAX_NBL (cols <= 1024 * NBL); their resident
 * blocks on the device (persistent grids), filled by kc_gemv_setup */
#define Q8X_MAX_NBL 6
static int g_q8x_slots[2][Q8X_MAX_NBL + 1];

template <int NBL>
static cudaError_t q8x_occupancy(int sms)
{
    int a = 0, b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, matvec_q8x_kernel<NBL>, 32 * Q8M_WARPS, 0);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, matvec_swiglu_q8x_kernel<NBL>, 32 * Q8M_WARPS, 0);
    g_q8x_slots[0][NBL] = sms * (a > 0 ? a : 1);
    g_q8x_slots[1][NBL] = sms * (b > 0 ? b : 1);
    return e;
}

static cudaError_t q8x_setup(void)
{
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = q8x_occupancy<1>(sms);
    if (e == cudaSuccess) e = q8x_occupancy<2>(sms);
    if (e == cudaSuccess) e = q8x_occupancy<3>(sms);
    if (e == cudaSuccess) e = q8x_occupancy<4>(sms);
    if (e == cudaSuccess) e = q8x_occupancy<5>(sms);
    if (e == cudaSuccess) e = q8x_occupancy<6>(sms);
    return e;
}

/* persistent grid of kernel `sw` (0 matvec, 1 swiglu) for `rows` warp steps */
static int q8x_grid(int sw, int nbl, int rows)
{
    if (!g_q8x_slots[sw][nbl] && q8x_setup() != cudaSuccess) g_q8x_slots[sw][nbl] = 132;
    const int need = (rows + Q8M_WARPS - 1) / Q8M_WARPS;
    return need < g_q8x_slots[sw][nbl] ? need : g_q8x_slots[sw][nbl];
}

#define Q8X_DISPATCH(KERNEL, nbl, grid, st, ...)                                                  \
    do {                                                                                          \
        switch (nbl) {                                                                            \
        case 1: kc_launch(KERNEL<1>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); break;            \
        case 2: kc_launch(KERNEL<2>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); break;            \
        case 3: kc_launch(KERNEL<3>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); break;            \
        case 4: kc_launch(KERNEL<4>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); break;            \
        case 5: kc_launch(KERNEL<5>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); break;            \
        default: kc_launch(KERNEL<6>, grid, 32 * Q8M_WARPS, 0, st, __VA_ARGS__); break;           \
        }                                                                                         \
    } while (0)

/* blocks per lane of the x-stationary kernel for this matrix, or 0 when it takes the streaming one.
 * Measured alone (bench_gemv, H200, PERF-NOTES v10): x-stationary gate/up 26.9 us vs 29.5 streaming,
 * qkv+z, wq, ssm_out within 1%, but the 248320-row lm_head 177 vs 164 (streaming R = U = 2): tall
 * matrices stream. */
static int q8x_nbl(const kc_mat *W)
{
    const int nbl = (W->cols / 32 + 31) / 32;
    return (W->q8kind == 0 || W->q8kind == 2) && nbl <= Q8X_MAX_NBL && W->rows <= 65536 ? nbl : 0;
}

/* ---- q8gemv=tma (gemv_q8t.cuh): the ring's shared memory per block and blocks per SM ---- */
static int g_q8t_kb = 100, g_q8t_per_sm = 2, g_q8t_sms, g_q8t_xs;
#define Q8T_WIDE_KB 200 /* the wide matrices' ring when kc_mat.q8t_wkb is 0 (v15: 160 = one stage, 8% slower) */

void kc_set_q8t(int smem_kb, int per_sm)
{
    g_q8t_kb = smem_kb > 0 ? smem_kb : 100;
    g_q8t_per_sm = per_sm > 0 ? per_sm : 2;
}

void kc_set_q8t_xs(int on) { g_q8t_xs = on; }


template <int NBL>
static cudaError_t q8t_setup_one(void)
{
    const int max = 227 * 1024;
    cudaError_t e = cudaFuncSetAttribute(matvec_q8t_kernel<NBL, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(matvec_q8t_kernel<NBL, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(matvec_swiglu_q8t_kernel<NBL>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(matvec_swiglu_q8t_kernel<NBL, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    return e;
}

/* matvec_q8t_bc_kernel<NBL, *>: whole stages and column halves (option q8t_bch) */
template <int NBL>
static cudaError_t q8t_setup_bc(void)
{
    const int max = 227 * 1024;
    cudaError_t e = cudaFuncSetAttribute(matvec_q8t_bc_kernel<NBL, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(matvec_q8t_bc_kernel<NBL, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    return e;
}

/* the wide kernel (route 3) unrolled for NBL blocks per lane (q8t_dot_xs_u): the 9B's and the 27B's
 * down projection; other widths take matvec_q8t_kernel<1, 1> (a run-time loop) */
static cudaError_t q8t_setup_wide(void)
{
    const int max = 227 * 1024;
    cudaError_t e = cudaFuncSetAttribute(matvec_q8t_kernel<12, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(matvec_q8t_kernel<17, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, max);
    if (e == cudaSuccess) e = q8t_setup_bc<12>();
    if (e == cudaSuccess) e = q8t_setup_bc<17>();
    return e;
}

/* W: the matrix (its width and q8t_wloop) */
#define Q8T_LAUNCH_WIDE(W, grid, smem, st, ...)                                                        \
    do {                                                                                               \
        const int nbl_ = ((W)->cols / 32 + 31) / 32;                                                  \
        if ((W)->q8t_wloop != 1 && nbl_ == 17)                                                             \
            kc_launch(matvec_q8t_kernel<17, 1>, grid, Q8T_THREADS, smem, st, __VA_ARGS__);            \
        else if ((W)->q8t_wloop != 1 && nbl_ == 12)                                                        \
            kc_launch(matvec_q8t_kernel<12, 1>, grid, Q8T_THREADS, smem, st, __VA_ARGS__);            \
        else                                                                                           \
            kc_launch(matvec_q8t_kernel<1, 1>, grid, Q8T_THREADS, smem, st, __VA_ARGS__);             \
    } while (0)

static cudaError_t q8t_setup(void)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&g_q8t_sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = q8t_setup_one<1>();
    if (e == cudaSuccess) e = q8t_setup_one<2>();
    if (e == cudaSuccess) e = q8t_setup_one<3>();
    if (e == cudaSuccess) e = q8t_setup_one<4>();
    if (e == cudaSuccess) e = q8t_setup_one<5>();
    if (e == cudaSuccess) e = q8t_setup_one<6>();
    if (e == cudaSuccess) e = q8t_setup_wide();
    return e;
}

/* The ring for `units` stages of stage_bytes over a grid: *grid blocks, *ns stages each, *smem bytes;
 * 0 when the TMA kernel cannot take it (then the register kernel does). */
static int q8t_aligned(const kc_mat *W)
{
    return (W->cols / 32) % 8 == 0 && ((uintptr_t)W->data % 16) == 0 && ((uintptr_t)W->d % 16) == 0;
}

static int q8t_plan_in(int units, size_t stage_bytes, int kb, int per_sm, size_t extra, int *grid, int *ns,
                       size_t *smem)
{
    if (!g_q8t_sms && q8t_setup() != cudaSuccess) return 0;
    int g = per_sm < 0 ? -per_sm : g_q8t_sms * per_sm; /* < 0: a grid of -per_sm blocks (kc_q8t_out_grid) */
    if (g > units) g = units;
    const int per = (units + g - 1) / g;
    const size_t budget = (size_t)kb * 1024, fixed = Q8T_BAR_BYTES + extra;
    int n = budget > fixed ? (int)((budget - fixed) / stage_bytes) : 0;
    if (n > Q8T_MAX_STAGES) n = Q8T_MAX_STAGES;
    if (n > per) n = per;
    if (n < 1 || kb > 227) return 0;
    *grid = g;
    *ns = n;
    *smem = fixed + (size_t)n * stage_bytes;
    return 1;
}

/* The out projections' grid for option q8t_ogrid=auto (0: keep the full grid of q8t_sm blocks per SM).
 * The kernel before an out projection is the delta rule (or the attention), whose 255-register blocks
 * (vh of them) leave room on their SMs for one ring block of 288 x 92 registers, not two: of the full
 * grid, `beside` blocks become resident only when the delta rule exits, and their weights stream after
 * it, at the launch's tail (ncu: 46% of the out projection's warp samples wait on a stage). With
 * `beside` fewer blocks every block fits while the delta rule runs and preloads its share — taken only
 * where no block then has a stage more than in the full grid (27B: 640 stages, 264 or 216 blocks, at
 * most 3 each: 216, `ab` 0.9923; the 9B's 512 stages would go from 2 to 3 per block at 232: slower,
 * PERF-NOTES v23). */
int kc_q8t_out_grid(const kc_mat *W, int beside)
{
    if (!g_q8t_sms && q8t_setup() != cudaSuccess) return 0;
    const int per_sm = W->q8t_sm > 0 ? W->q8t_sm : g_q8t_per_sm, full = g_q8t_sms * per_sm, g = full - beside;
    const int units = (W->rows + Q8T_ROWS - 1) / Q8T_ROWS;
    if (beside <= 0 || g < 1 || units <= full) return 0;
    return (units + g - 1) / g == (units + full - 1) / full ? g : 0;
}

static int q8t_plan(const kc_mat *W, int units, size_t stage_bytes, int *grid, int *ns, size_t *smem)
{
    return q8t_plan_in(units, stage_bytes, W->q8t_kb > 0 ? W->q8t_kb : g_q8t_kb, W->q8t_sm ? W->q8t_sm : g_q8t_per_sm,
                       0, grid, ns, smem);
}

/* matrices too wide for x in registers (cols > 6144: the down projection), rows <= 65536: x in shared
 * memory, one block per SM, a ring of W->q8t_wkb KB (0: Q8T_WIDE_KB, -1: they stream) */
static int q8t_wide_plan(const kc_mat *W, int rows, int *grid, int *ns, size_t *smem)
{
    const int nb = W->cols / 32, kb = W->q8t_wkb ? W->q8t_wkb : Q8T_WIDE_KB;
    return W->q8kind == 2 && kb > 0 && W->cols > 6144 && nb <= 1024 && rows <= 65536 && q8t_aligned(W) &&
           q8t_plan_in((rows + Q8T_ROWS - 1) / Q8T_ROWS, (size_t)Q8T_ROWS * nb * 18, kb, 1,
                       (size_t)nb * sizeof(kc_q8blk), grid, ns, smem);
}

/* option q8t_wu=2: the wide kernel's x-broadcast form (matvec_q8t_bc_kernel) for one matrix of 12 or 17
 * blocks per lane; its ring as q8t_wide_plan's, with padded slots (h, option q8t_bch: two column halves
 * per stage, up to Q8T_MAX_STAGES slots), padded x and the partials' area */
static int q8t_bc_plan(const kc_mat *W, int rows, int h, int *grid, int *ns, size_t *smem)
{
    const int nb = W->cols / 32, kb = W->q8t_wkb ? W->q8t_wkb : Q8T_WIDE_KB, units = (rows + Q8T_ROWS - 1) / Q8T_ROWS;
    if (W->q8t_wloop != 2 || W->q8kind != 2 || kb <= 0 || (nb != 32 * 12 && nb != 32 * 17) || rows > 65536 ||
        !q8t_aligned(W) || (!g_q8t_sms && q8t_setup() != cudaSuccess))
        return 0;
    const int g = g_q8t_sms < units ? g_q8t_sms : units, per = (units + g - 1) / g;
    const size_t extra = Q8BC_XBYTES(nb) + (size_t)per * Q8M_WARPS * 8 * sizeof(float);
    /* with halves a stage is two slots (q8t_plan_in caps them at a block's; 1 where 2 units <= SMs) */
    if (!q8t_plan_in(h ? 2 * units : units, q8bc_slot_bytes(nb / 32, h != 0), kb, 1, extra, grid, ns, smem)) return 0;
    *grid = g;
    return 1;
}

#define Q8BC_LAUNCH(NBL, h, grid, smem, st, ...)                                                        \
    do {                                                                                              \
        if (h) kc_launch(matvec_q8t_bc_kernel<NBL, 1>, grid, Q8T_THREADS, smem, st, __VA_ARGS__);     \
        else kc_launch(matvec_q8t_bc_kernel<NBL, 0>, grid, Q8T_THREADS, smem, st, __VA_ARGS__);       \
    } while (0)

int kc_q8_tma_bc_takes(const kc_mat *W, int h)
{
    int grid, ns;
    size_t smem;
    return q8t_bc_plan(W, W->rows, h, &grid, &ns, &smem) ? ns : 0;
}

int kc_q8_tma_swiglu_takes(const kc_mat *G, const kc_mat *U, int quantise)
{
    int grid, ns;
    size_t smem;
    return G->q8kind == 2 && q8x_nbl(G) && q8t_aligned(G) && q8t_aligned(U) && (!quantise || G->rows % 32 == 0) &&
           q8t_plan(G, (G->rows + Q8T_ROWS - 1) / Q8T_ROWS, (size_t)2 * Q8T_ROWS * (G->cols / 32) * 18, &grid, &ns, &smem);
}

#define Q8T_DISPATCH2(KERNEL, nbl, xs, grid, smem, st, ...)                                      \
    do {                                                                                          \
        switch (nbl) {                                                                            \
        case 1: kc_launch(KERNEL<1, xs>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;        \
        case 2: kc_launch(KERNEL<2, xs>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;        \
        case 3: kc_launch(KERNEL<3, xs>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;        \
        case 4: kc_launch(KERNEL<4, xs>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;        \
        case 5: kc_launch(KERNEL<5, xs>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;        \
        default: kc_launch(KERNEL<6, xs>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;       \
        }                                                                                         \
    } while (0)

int kc_q8_tma_takes(const kc_mat *W)
{
    int grid, ns;
    size_t smem;
    if (q8t_wide_plan(W, W->rows, &grid, &ns, &smem)) return 1;
    return W->q8kind == 2 && q8x_nbl(W) && q8t_aligned(W) &&
           q8t_plan(W, (W->rows + Q8T_ROWS - 1) / Q8T_ROWS, (size_t)Q8T_ROWS * (W->cols / 32) * 18, &grid, &ns, &smem);
}

#define Q8T_DISPATCH(KERNEL, nbl, grid, smem, st, ...)                                            \
    do {                                                                                          \
        switch (nbl) {                                                                            \
        case 1: kc_launch(KERNEL<1>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;            \
        case 2: kc_launch(KERNEL<2>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;            \
        case 3: kc_launch(KERNEL<3>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;            \
        case 4: kc_launch(KERNEL<4>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;            \
        case 5: kc_launch(KERNEL<5>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;            \
        default: kc_launch(KERNEL<6>, grid, Q8T_THREADS, smem, st, __VA_ARGS__); break;           \
        }                                                                                         \
    } while (0)

int kc_q8_stationary(const kc_mat *W) { return q8x_nbl(W) > 0; }

/* matvec_q8xs_kernel (q8wide=xs): the instantiated blocks per lane, the smallest that covers nb
 * blocks (extra ones predicated off), 0 when none does: cols <= 17408 (NBL 24 spilled) */
#define Q8XS_NBLS 3
static const int g_q8xs_nbl[Q8XS_NBLS] = {6, 12, 17};
static int q8xs_nbl(int nb)
{
    for (int i = 0; i < Q8XS_NBLS; i++)
        if (nb <= 32 * g_q8xs_nbl[i]) return g_q8xs_nbl[i];
    return 0;
}
#define Q8XS_DISPATCH(KERNEL, nbl, grid, smem, st, ...)                                            \
    do {                                                                                          \
        switch (nbl) {                                                                            \
        case 6: kc_launch(KERNEL<6>, grid, 32 * Q8M_WARPS, smem, st, __VA_ARGS__); break;         \
        case 12: kc_launch(KERNEL<12>, grid, 32 * Q8M_WARPS, smem, st, __VA_ARGS__); break;       \
        default: kc_launch(KERNEL<17>, grid, 32 * Q8M_WARPS, smem, st, __VA_ARGS__); break;       \
        }                                                                                         \
    } while (0)

/* blocks of `kernel` (256 threads, smem bytes) resident on the whole device, 0 on error */
template <typename K>
static int resident_blocks(K kernel, size_t smem)
{
    int dev = 0, sms = 0, a = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, kernel, 32 * Q8M_WARPS, smem) != cudaSuccess)
        return 0;
    return sms * a;
}

/* persistent grid of matvec_q8xs_kernel<nbl>: its resident blocks (queried once per NBL and x size:
 * the shared memory depends on cols), at most one per 8 rows */
static int q8xs_grid(int nbl, size_t smem, int rows)
{
    static int slots_of[3];
    static size_t smem_of[3];
    const int v = nbl == 6 ? 0 : nbl == 12 ? 1 : 2;
    if (!slots_of[v] || smem_of[v] != smem) {
        slots_of[v] = v == 0   ? resident_blocks(matvec_q8xs_kernel<6>, smem)
                      : v == 1 ? resident_blocks(matvec_q8xs_kernel<12>, smem)
                               : resident_blocks(matvec_q8xs_kernel<17>, smem);
        smem_of[v] = smem;
    }
    const int slots = slots_of[v];
    const int need = (rows + Q8M_WARPS - 1) / Q8M_WARPS;
    return slots > 0 && slots < need ? slots : need;
}

/* The q8gemv=tma launch kc_matvec_q8 makes for W[0..n) (`rows` rows in all): 1 the x-stationary TMA
 * kernel, 2 the same with x in shared memory (q8t_xs), 3 the wide one (cols > 6144: the down
 * projection), 0 none (the register or streaming kernels); grid, ns, smem its plan. */
static int q8t_route(const kc_mat *const *W, int n, int rows, int *grid, int *ns, size_t *smem)
{
    for (int i = 0; i < n; i++)
        if (!q8t_aligned(W[i])) return 0;
    if (!q8x_nbl(W[0])) return q8t_wide_plan(W[0], rows, grid, ns, smem) ? 3 : 0;
    if (W[0]->q8kind != 2 ||
        !q8t_plan(W[0], (rows + Q8T_ROWS - 1) / Q8T_ROWS, (size_t)Q8T_ROWS * (W[0]->cols / 32) * 18, grid, ns, smem))
        return 0;
    if (W[0]->q8t_xs == 1 || g_q8t_xs) {
        *smem += (size_t)(W[0]->cols / 32) * sizeof(kc_q8blk);
        return 2;
    }
    return 1;
}

cudaError_t kc_matvec_q8(const kc_mat *const *W, float *const *y, int n, const kc_q8blk *xq, int accumulate,
                         cudaStream_t st)
{
    if (n < 1 || n > KC_Q8_MATS) return cudaErrorInvalidValue;
    q8_job job;
    memset(&job, 0, sizeof job);
    const int R = q8_rpw(W[0]), U = q8_unroll(W[0]);
    for (int i = 0; i < n; i++) {
        if (W[i]->type != GGML_Q4_0 || W[i]->layout != 0 || W[i]->cols != W[0]->cols || W[i]->rows < 1)
            return cudaErrorInvalidValue;
        job.W[i] = *W[i];
        job.y[i] = y[i];
        job.gstart[i + 1] = job.gstart[i] + (W[i]->rows + R - 1) / R;
    }
    for (int i = n; i < KC_Q8_MATS; i++) job.gstart[i + 1] = job.gstart[n];
    job.n = n;
    job.accumulate = accumulate;
    job.prefetch = W[0]->prefetch;
    job.early = W[0]->early;
    job.pf = take_prefetch_next();
    const int nbl = q8x_nbl(W[0]);
    int rows = 0, tgrid, ns;
    size_t smem;
    for (int i = 0; i < n; i++) rows += W[i]->rows;
    const int route = q8t_route(W, n, rows, &tgrid, &ns, &smem);
    if (nbl || route) { /* one row per warp step: R = 1 row groups */
        for (int i = 0; i < n; i++) job.gstart[i + 1] = job.gstart[i] + W[i]->rows;
        for (int i = n; i < KC_Q8_MATS; i++) job.gstart[i + 1] = job.gstart[n];
    }
    if (route == 3 && n == 1 && q8t_bc_plan(W[0], rows, g_q8t_bch, &tgrid, &ns, &smem)) { /* q8t_wu=2: x read once per 8 rows */
        if (W[0]->cols == 32 * 32 * 17) Q8BC_LAUNCH(17, g_q8t_bch, tgrid, smem, st, job, xq, ns);
        else Q8BC_LAUNCH(12, g_q8t_bch, tgrid, smem, st, job, xq, ns);
        return cudaGetLastError();
    }
    if (route == 3) { /* the wide kernel: x in shared memory, weights by TMA */
        Q8T_LAUNCH_WIDE(W[0], tgrid, smem, st, job, xq, ns, kc_rmsq{}, kc_rmsq{}, (unsigned int *)NULL);
        return cudaGetLastError();
    }
    if (route) {
        if (route == 2)
            Q8T_DISPATCH2(matvec_q8t_kernel, nbl, 1, tgrid, smem, st, job, xq, ns, kc_rmsq{}, kc_rmsq{}, (unsigned int *)NULL);
        else
            Q8T_DISPATCH2(matvec_q8t_kernel, nbl, 0, tgrid, smem, st, job, xq, ns, kc_rmsq{}, kc_rmsq{}, (unsigned int *)NULL);
        return cudaGetLastError();
    }
    if (nbl) {
        Q8X_DISPATCH(matvec_q8x_kernel, nbl, q8x_grid(0, nbl, job.gstart[n]), st, job, xq);
        return cudaGetLastError();
    }
    const size_t xsmem = (size_t)(W[0]->cols / 32) * sizeof(kc_q8blk);
    const int xsnbl = q8xs_nbl(W[0]->cols / 32);
    if (W[0]->q8wide == 3 && xsnbl) { /* x in shared memory, all of a row's loads in flight */
        for (int i = 0; i < n; i++) job.gstart[i + 1] = job.gstart[i] + W[i]->rows;
        for (int i = n; i < KC_Q8_MATS; i++) job.gstart[i + 1] = job.gstart[n];
        Q8XS_DISPATCH(matvec_q8xs_kernel, xsnbl, q8xs_grid(xsnbl, xsmem, job.gstart[n]), xsmem, st, job, xq);
        return cudaGetLastError();
    }
    if (W[0]->q8wide == 2 && xsmem <= 48 * 1024) { /* persistent, x in shared memory */
        const int grid = q8s_grid(R, U, xsmem, job.gstart[n]);
        if (R == 4) Q8_DISPATCH_US(matvec_q8s_kernel, 4, U, grid, xsmem, st, job, xq);
        else if (R == 1) Q8_DISPATCH_US(matvec_q8s_kernel, 1, U, grid, xsmem, st, job, xq);
        else Q8_DISPATCH_US(matvec_q8s_kernel, 2, U, grid, xsmem, st, job, xq);
        return cudaGetLastError();
    }
    const int grid = (job.gstart[n] + Q8M_WARPS - 1) / Q8M_WARPS;
    if (W[0]->q8wide == 1) { /* x via the read-only path: A/B only */
        if (R == 4) Q8_DISPATCH_NC(4, U, grid, st, job, xq);
        else if (R == 1) Q8_DISPATCH_NC(1, U, grid, st, job, xq);
        else Q8_DISPATCH_NC(2, U, grid, st, job, xq);
        return cudaGetLastError();
    }
    if (R == 4) Q8_DISPATCH_U(matvec_q8_kernel, 4, U, grid, st, job, xq);
    else if (R == 1) Q8_DISPATCH_U(matvec_q8_kernel, 1, U, grid, st, job, xq);
    else Q8_DISPATCH_U(matvec_q8_kernel, 2, U, grid, st, job, xq);
    return cudaGetLastError();
}

/* the route kc_matvec_q8_tail takes: kc_matvec_q8's for W alone (q8t_route), 0 where the tail
 * cannot run */
static int tail_plan(const kc_mat *W, const kc_rmsq *t, int *grid, int *ns, size_t *smem)
{
    if (W->type != GGML_Q4_0 || W->layout != 0 || !t->x || !t->w || !t->xn || !t->xq || W->rows != t->n ||
        t->n % 256 || t->n > 8192 || ((uintptr_t)t->x | (uintptr_t)t->w | (uintptr_t)t->xn) % 16)
        return 0;
    const kc_mat *one[1] = {W};
    const int route = q8t_route(one, 1, W->rows, grid, ns, smem);
    /* the tail's scratch in the idle ring (and x's copy after it): 256 bytes, then the norm's weight */
    const size_t need = Q8T_BAR_BYTES + 256 + (size_t)t->n * sizeof(float);
    if (route && *smem < need) *smem = need;
    return route && *smem <= (size_t)227 * 1024 ? route : 0;
}

int kc_matvec_q8_tail_ok(const kc_mat *W, const kc_rmsq *tail)
{
    int grid, ns;
    size_t smem;
    return tail_plan(W, tail, &grid, &ns, &smem) != 0;
}

cudaError_t kc_matvec_q8_tail(const kc_mat *W, float *y, const kc_q8blk *xq, const kc_rmsq *tail, unsigned int *cnt,
                              cudaStream_t st)
{
    int grid, ns;
    size_t smem;
    const int route = tail_plan(W, tail, &grid, &ns, &smem);
    if (!route || tail->x != y || !cnt) return cudaErrorNotSupported;
    q8_job job;
    memset(&job, 0, sizeof job);
    job.W[0] = *W;
    job.y[0] = y;
    for (int i = 1; i <= KC_Q8_MATS; i++) job.gstart[i] = W->rows;
    job.n = 1;
    job.accumulate = 1;
    job.prefetch = W->prefetch;
    job.early = W->early;
    job.pf = take_prefetch_next();
    if (route == 3)
        Q8T_LAUNCH_WIDE(W, grid, smem, st, job, xq, ns, kc_rmsq{}, *tail, cnt);
    else if (route == 2)
        Q8T_DISPATCH2(matvec_q8t_kernel, q8x_nbl(W), 1, grid, smem, st, job, xq, ns, kc_rmsq{}, *tail, cnt);
    else
        Q8T_DISPATCH2(matvec_q8t_kernel, q8x_nbl(W), 0, grid, smem, st, job, xq, ns, kc_rmsq{}, *tail, cnt);
    return cudaGetLastError();
}

cudaError_t kc_matvec_swiglu_q8(const kc_mat *G, const kc_mat *U, const kc_q8blk *xq, float *y, kc_q8blk *yq,
                                unsigned int *cnt, cudaStream_t st)
{
    if (G->type != GGML_Q4_0 || U->type != GGML_Q4_0 || G->layout != 0 || U->layout != 0 || G->cols != U->cols ||
        G->rows != U->rows || (yq && (!cnt || G->rows % 32)))
        return cudaErrorInvalidValue;
    const int nbl = q8x_nbl(G);
    const kc_pf pf = take_prefetch_next(); /* the streaming SwiGLU below does not prefetch */
    int tgrid, ns;
    size_t smem;
    if (kc_q8_tma_swiglu_takes(G, U, yq != NULL) &&
        q8t_plan(G, (G->rows + Q8T_ROWS - 1) / Q8T_ROWS, (size_t)2 * Q8T_ROWS * (G->cols / 32) * 18, &tgrid, &ns, &smem)) {
        const int units = (G->rows + Q8T_ROWS - 1) / Q8T_ROWS, per = (units + tgrid - 1) / tgrid;
        if (yq) smem += (size_t)per * Q8T_ROWS * sizeof(float); /* the block's rows, for its own groups */
        if (g_q8t_half && 2 * ns <= Q8T_MAX_STAGES)
            Q8T_DISPATCH2(matvec_swiglu_q8t_kernel, nbl, 1, tgrid, smem, st, *G, *U, xq, y, yq, yq ? cnt : NULL, ns, kc_rmsq{});
        else
            Q8T_DISPATCH(matvec_swiglu_q8t_kernel, nbl, tgrid, smem, st, *G, *U, xq, y, yq, yq ? cnt : NULL, ns, kc_rmsq{});
        return cudaGetLastError();
    }
    if (nbl && !yq) {
        Q8X_DISPATCH(matvec_swiglu_q8x_kernel, nbl, q8x_grid(1, nbl, G->rows), st, *G, *U, xq, y, pf);
        return cudaGetLastError();
    }
    const int P = q8_rpw(G) >= 2 ? 2 : 1, UN = q8_unroll(G); /* 2P row streams per warp */
    const int grid = ((G->rows + P - 1) / P + Q8M_WARPS - 1) / Q8M_WARPS;
    if (P == 2) Q8_DISPATCH_U(matvec_swiglu_q8_kernel, 2, UN, grid, st, *G, *U, xq, y, yq, cnt);
    else Q8_DISPATCH_U(matvec_swiglu_q8_kernel, 1, UN, grid, st, *G, *U, xq, y, yq, cnt);
    return cudaGetLastError();
}

int kc_rms_fold_supported(const kc_mat *W, const kc_rmsq *nm)
{
    return nm->x && nm->w && W->q8kind == 2 && q8x_nbl(W) && q8t_aligned(W) && W->cols == nm->n &&
           nm->n % 256 == 0 && nm->n <= 256 * Q8M_WARPS * RMS8_FOLD_ROUNDS && ((uintptr_t)nm->x | (uintptr_t)nm->w) % 16 == 0;
}

/* the folded norm's shared memory after the ring: the q8 blocks of x and 32 floats for the sums */
static size_t rms_smem(const kc_rmsq *nm) { return (size_t)(nm->n / 32) * sizeof(kc_q8blk) + 128; }

/* the plans of the folded launches (0: not supported) */
static int rms_job_plan(const kc_mat *const *W, int n, const kc_rmsq *nm, int *grid, int *ns, size_t *smem)
{
    int rows = 0;
    if (n < 1 || n > KC_Q8_MATS) return 0;
    for (int i = 0; i < n; i++) {
        if (W[i]->type != GGML_Q4_0 || W[i]->layout != 0 || W[i]->cols != W[0]->cols || W[i]->rows < 1 ||
            !kc_rms_fold_supported(W[i], nm))
            return 0;
        rows += W[i]->rows;
    }
    return q8t_plan_in((rows + Q8T_ROWS - 1) / Q8T_ROWS, (size_t)Q8T_ROWS * (W[0]->cols / 32) * 18,
                       W[0]->q8t_kb > 0 ? W[0]->q8t_kb : g_q8t_kb, W[0]->q8t_sm > 0 ? W[0]->q8t_sm : g_q8t_per_sm,
                       rms_smem(nm), grid, ns, smem);
}

static int rms_swiglu_plan(const kc_mat *G, const kc_mat *U, const kc_rmsq *nm, int quantise, int *grid, int *ns,
                           size_t *smem)
{
    if (G->type != GGML_Q4_0 || U->type != GGML_Q4_0 || G->layout != 0 || U->layout != 0 || G->cols != U->cols ||
        G->rows != U->rows || (quantise && G->rows % 32) || !kc_rms_fold_supported(G, nm) || !q8t_aligned(U))
        return 0;
    const int units = (G->rows + Q8T_ROWS - 1) / Q8T_ROWS;
    if (!q8t_plan_in(units, (size_t)2 * Q8T_ROWS * (G->cols / 32) * 18, G->q8t_kb > 0 ? G->q8t_kb : g_q8t_kb,
                     G->q8t_sm > 0 ? G->q8t_sm : g_q8t_per_sm, rms_smem(nm), grid, ns, smem))
        return 0;
    if (quantise) *smem += (size_t)((units + *grid - 1) / *grid) * Q8T_ROWS * sizeof(float);
    return 1;
}

int kc_matvec_q8_rms_ok(const kc_mat *const *W, int n, const kc_rmsq *nm)
{
    int grid, ns;
    size_t smem;
    return rms_job_plan(W, n, nm, &grid, &ns, &smem);
}

int kc_matvec_swiglu_q8_rms_ok(const kc_mat *G, const kc_mat *U, const kc_rmsq *nm, int quantise)
{
    int grid, ns;
    size_t smem;
    return rms_swiglu_plan(G, U, nm, quantise, &grid, &ns, &smem);
}

cudaError_t kc_matvec_q8_rms(const kc_mat *const *W, float *const *y, int n, const kc_rmsq *nm, int accumulate,
                             cudaStream_t st)
{
    int grid, ns;
    size_t smem;
    if (!rms_job_plan(W, n, nm, &grid, &ns, &smem)) return cudaErrorNotSupported;
    q8_job job;
    memset(&job, 0, sizeof job);
    for (int i = 0; i < n; i++) {
        job.W[i] = *W[i];
        job.y[i] = y[i];
        job.gstart[i + 1] = job.gstart[i] + W[i]->rows;
    }
    for (int i = n; i < KC_Q8_MATS; i++) job.gstart[i + 1] = job.gstart[n];
    job.n = n;
    job.accumulate = accumulate;
    const int nbl = q8x_nbl(W[0]);
    if (W[0]->q8t_xs == 1 || g_q8t_xs)
        Q8T_DISPATCH2(matvec_q8t_kernel, nbl, 1, grid, smem, st, job, (const kc_q8blk *)NULL, ns, *nm, kc_rmsq{}, (unsigned int *)NULL);
    else
        Q8T_DISPATCH2(matvec_q8t_kernel, nbl, 0, grid, smem, st, job, (const kc_q8blk *)NULL, ns, *nm, kc_rmsq{}, (unsigned int *)NULL);
    return cudaGetLastError();
}

cudaError_t kc_matvec_swiglu_q8_rms(const kc_mat *G, const kc_mat *U, const kc_rmsq *nm, float *y, kc_q8blk *yq,
                                    unsigned int *cnt, cudaStream_t st)
{
    int grid, ns;
    size_t smem;
    if (yq && !cnt) return cudaErrorInvalidValue;
    if (!rms_swiglu_plan(G, U, nm, yq != NULL, &grid, &ns, &smem)) return cudaErrorNotSupported;
    if (g_q8t_half && 2 * ns <= Q8T_MAX_STAGES)
        Q8T_DISPATCH2(matvec_swiglu_q8t_kernel, q8x_nbl(G), 1, grid, smem, st, *G, *U, (const kc_q8blk *)NULL, y, yq,
                      yq ? cnt : NULL, ns, *nm);
    else
        Q8T_DISPATCH(matvec_swiglu_q8t_kernel, q8x_nbl(G), grid, smem, st, *G, *U, (const kc_q8blk *)NULL, y, yq,
                     yq ? cnt : NULL, ns, *nm);
    return cudaGetLastError();
}

/* ---- the fused FFN (ffn_q8_kernel): the (blocks per lane of x, of ff) pairs instantiated: the
 * 2B, 9B and 27B shapes (D, n_ff) = (2048, 6144), (4096, 12288), (5120, 17408) ---- */
static int ffn_variant(const kc_mat *G, const kc_mat *Dn)
{
    const int nbl1 = (G->cols / 32 + 31) / 32, nbl2 = (Dn->cols / 32 + 31) / 32;
    if (nbl1 == 2 && nbl2 == 6) return 0;
    if (nbl1 == 4 && nbl2 == 12) return 1;
    if (nbl1 == 5 && nbl2 == 17) return 2;
    return -1;
}

int kc_ffn_q8_supported(const kc_mat *G, const kc_mat *U, const kc_mat *Dn)
{
    return G->type == GGML_Q4_0 && U->type == GGML_Q4_0 && Dn->type == GGML_Q4_0 && !G->layout && !U->layout &&
           !Dn->layout && G->rows == U->rows && G->cols == U->cols && Dn->cols == G->rows && Dn->rows == G->cols &&
           G->rows % 32 == 0 && ffn_variant(G, Dn) >= 0;
}

static int g_ffn_slots[3]; /* resident blocks of each variant, 0 = not queried yet */

cudaError_t kc_ffn_q8(const kc_mat *G, const kc_mat *U, const kc_mat *Dn, const kc_q8blk *xq, float *ff,
                      kc_q8blk *ffq, float *y, unsigned int *bar, cudaStream_t st)
{
    if (!kc_ffn_q8_supported(G, U, Dn) || !bar) return cudaErrorInvalidValue;
    const int v = ffn_variant(G, Dn);
    const size_t smem = (size_t)(Dn->cols / 32) * sizeof(kc_q8blk);
    if (!g_ffn_slots[v]) /* once per variant (an occupancy query is no stream work: fine inside a capture) */
        g_ffn_slots[v] = v == 0   ? resident_blocks(ffn_q8_kernel<2, 6>, smem)
                         : v == 1 ? resident_blocks(ffn_q8_kernel<4, 12>, smem)
                                  : resident_blocks(ffn_q8_kernel<5, 17>, smem);
    if (g_ffn_slots[v] <= 0) return cudaErrorInvalidConfiguration; /* the grid barriers need every block resident */
    kc_ffn_job job;
    job.G = *G;
    job.Up = *U;
    job.Dn = *Dn;
    job.xq = xq;
    job.ff = ff;
    job.ffq = ffq;
    job.y = y;
    job.bar = bar;
    /* cooperative (cluster -1): the grid barriers need every block resident */
    if (v == 0) kc_launch_cluster(ffn_q8_kernel<2, 6>, g_ffn_slots[v], 32 * Q8M_WARPS, smem, -1, st, job);
    else if (v == 1) kc_launch_cluster(ffn_q8_kernel<4, 12>, g_ffn_slots[v], 32 * Q8M_WARPS, smem, -1, st, job);
    else kc_launch_cluster(ffn_q8_kernel<5, 17>, g_ffn_slots[v], 32 * Q8M_WARPS, smem, -1, st, job);
    return cudaGetLastError();
}

/* ---- the FFN through one ring (ffn_ring_kernel, option ffn=ring) ---- */
/* its plan for these matrices: down rows per stage, slot bytes, slots, shared memory; 0 when it
 * cannot take them (then the engine runs the two launches) */
static int ffr_plan(const kc_mat *G, const kc_mat *U, const kc_mat *Dn, int *dr, int *slot, int *ns, size_t *smem)
{
    if (G->type != GGML_Q4_0 || U->type != GGML_Q4_0 || Dn->type != GGML_Q4_0 || G->layout || U->layout || Dn->layout ||
        G->rows != U->rows || G->cols != U->cols || Dn->cols != G->rows || Dn->rows != G->cols || G->rows % 32 ||
        !q8x_nbl(G) || q8x_nbl(G) > 6 || !q8t_aligned(G) || !q8t_aligned(U) || !q8t_aligned(Dn) || Dn->cols / 32 > 1024)
        return 0;
    if (!g_q8t_sms && q8t_setup() != cudaSuccess) return 0;
    const int nb1 = G->cols / 32, nb2 = Dn->cols / 32;
    const size_t gu = (size_t)2 * Q8T_ROWS * nb1 * 18, row2 = (size_t)nb2 * 18;
    int r = Q8T_ROWS;
    while (r > 1 && r * row2 > gu) r /= 2;
    const size_t sl = gu > r * row2 ? gu : r * row2;
    const int units = (G->rows + Q8T_ROWS - 1) / Q8T_ROWS, per = (units + g_q8t_sms - 1) / g_q8t_sms;
    const size_t fixed = Q8T_BAR_BYTES + (size_t)nb2 * sizeof(kc_q8blk) + (size_t)per * Q8T_ROWS * sizeof(float);
    const size_t max = 227 * 1024;
    int n = max > fixed ? (int)((max - fixed) / sl) : 0;
    if (n > Q8T_MAX_STAGES) n = Q8T_MAX_STAGES;
    if (n < 2) return 0;
    *dr = r;
    *slot = (int)sl;
    *ns = n;
    *smem = fixed + (size_t)n * sl;
    return 1;
}

int kc_ffn_ring_supported(const kc_mat *G, const kc_mat *U, const kc_mat *Dn)
{
    int dr, slot, ns;
    size_t smem;
    return ffr_plan(G, U, Dn, &dr, &slot, &ns, &smem);
}

static int g_ffr_warps = 16; /* consumer warps of ffn_ring_kernel: kc_set_ffn_ring_warps */
void kc_set_ffn_ring_warps(int n) { g_ffr_warps = n == 8 ? 8 : 16; }

template <int NBL, int NCW>
static cudaError_t ffr_launch(const kc_ffr_job &job, size_t smem, cudaStream_t st)
{
    static int ready; /* once per instantiation: the shared memory attribute, and one block per SM fits */
    if (!ready) {
        cudaError_t e = cudaFuncSetAttribute(ffn_ring_kernel<NBL, NCW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             227 * 1024);
        int a = 0;
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, ffn_ring_kernel<NBL, NCW>, 32 * (NCW + 1), 227 * 1024);
        if (e != cudaSuccess) return e;
        if (a < 1) return cudaErrorInvalidConfiguration;
        ready = 1;
    }
    /* every block resident (the grid barrier): cooperative without PDL; with PDL see ffn_ring_kernel */
    kc_launch_cluster(ffn_ring_kernel<NBL, NCW>, g_q8t_sms, 32 * (NCW + 1), smem, g_pdl ? 1 : -1, st, job);
    return cudaGetLastError();
}

template <int NBL>
static cudaError_t ffr_launch(const kc_ffr_job &job, size_t smem, cudaStream_t st)
{
    return g_ffr_warps == 8 ? ffr_launch<NBL, 8>(job, smem, st) : ffr_launch<NBL, 16>(job, smem, st);
}

cudaError_t kc_ffn_ring(const kc_mat *G, const kc_mat *U, const kc_mat *Dn, const kc_q8blk *xq, float *ff,
                        kc_q8blk *ffq, unsigned int *cnt, unsigned int *bar, float *y, cudaStream_t st)
{
    kc_ffr_job job;
    size_t smem;
    if (!cnt || !bar || !ffr_plan(G, U, Dn, &job.dr, &job.slot, &job.ns, &smem)) return cudaErrorInvalidValue;
    job.G = *G;
    job.Up = *U;
    job.Dn = *Dn;
    job.xq = xq;
    job.ff = ff;
    job.ffq = ffq;
    job.cnt = cnt;
    job.bar = bar;
    job.y = y;
    switch (q8x_nbl(G)) {
    case 1: return ffr_launch<1>(job, smem, st);
    case 2: return ffr_launch<2>(job, smem, st);
    case 3: return ffr_launch<3>(job, smem, st);
    case 4: return ffr_launch<4>(job, smem, st);
    case 5: return ffr_launch<5>(job, smem, st);
    default: return ffr_launch<6>(job, smem, st);
    }
}

/* ------------------------------------------------------------------ embedding */

__global__ void embed_kernel(const kc_mat E, const int32_t *tok, float *__restrict__ y)
{
    kc_pdl_begin();
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= E.cols) return;
    int r = *tok;
    if (r < 0 || r >= E.rows) { y[c] = __int_as_float(0x7fc00000); return; } /* NaN marks a bad id */
    const size_t i = (size_t)r * E.cols + c;
    float v;
    switch (E.type) {
    case GGML_F32: v = ((const float *)E.data)[i]; break;
    case GGML_F16: v = __half2float(((const __half *)E.data)[i]); break;
    case GGML_BF16: v = bf16f(((const uint16_t *)E.data)[i]); break;
    case GGML_Q8_0: v = (float)((const int8_t *)E.data)[i] * __half2float(E.d[i / 32]); break;
    default: { /* Q4_0 */
        if (E.layout == 1) {
            const int rem = c % 1024, k = rem / 128, l = (rem % 128) / 4, m = 4 * k + (rem % 4);
            const uint8_t byte = ((const uint8_t *)E.data)[(((size_t)r * (E.cols / 1024) + c / 1024) * 32 + l) * 16 + m / 2];
            const int n = m & 1 ? (byte >> 4) : (byte & 15);
            const size_t bi = i / 32, rs = bi / 32, br = bi % 32; /* packed scales [row][sb][g][k] */
            v = (float)(n - 8) * __half2float(E.d[(rs * 4 + br % 4) * 8 + br / 4]);
            break;
        }
        const int j = c % 32;
        const uint8_t byte = ((const uint8_t *)E.data)[(i / 32) * 16 + (j & 15)];
        const int n = j < 16 ? (byte & 15) : (byte >> 4);
        v = (float)(n - 8) * __half2float(E.d[i / 32]);
    }
    }
    y[c] = v;
}

cudaError_t kc_embed(const kc_mat *E, const int32_t *tok, float *y, cudaStream_t st)
{
    kc_launch(embed_kernel, (E->cols + 255) / 256, 256, 0, st, *E, tok, y);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ norms */

/* block sum, deterministic (fixed tree); sh: 32 floats; all threads get the result */
__device__ float block_sum(float v, float *sh)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads(); /* sh may be in use by a previous call */
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    float t = lane < nw ? sh[lane] : 0.0f;
    t = warp_sum(t);
    return t;
}

/* yq != NULL (n % 32 == 0, blockDim % 32 == 0): y is also quantised (quantize_q8): the warp's 32
 * consecutive outputs of each pass of the second loop are one block */
__global__ void rmsnorm_kernel(const float *x, int xs, const float *__restrict__ w, float *y, int ys,
                               int n, float eps, kc_q8blk *yq)
{
    kc_pdl_begin();
    __shared__ float sh[32];
    const float *xr = x + (size_t)blockIdx.x * xs;
    float *yr = y + (size_t)blockIdx.x * ys;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    ss = block_sum(ss, sh);
    const float inv = rsqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = xr[i] * inv * w[i];
        yr[i] = v;
        if (yq) q8_quantize_warp(v, yq + (size_t)blockIdx.x * (n / 32) + i / 32);
    }
}

static int norm_threads(int n) { return n >= 1024 ? 1024 : ((n + 31) / 32) * 32; }

cudaError_t kc_rmsnorm(const float *x, int xs, const float *w, float *y, int ys, int rows, int n,
                       float eps, cudaStream_t st)
{
    kc_launch(rmsnorm_kernel, rows, norm_threads(n), 0, st, x, xs, w, y, ys, n, eps, (kc_q8blk *)NULL);
    return cudaGetLastError();
}

/* One row of n = 8 * blockDim.x values, 8 contiguous per thread (two float4): one pass, no loop;
 * four threads hold one q8 block, so the quantisation takes 2 shuffles per reduction instead of 5.
 * Why: the 1024-thread rmsnorm_q8 ran ~5 us for n = 5120 (5 passes of warp-wide reductions), twice
 * per layer. Its sum of squares is in another order than rmsnorm_kernel's (y within ~1e-7).
 * WY = 0 (rmsnorm8_q8_lean_kernel): y not written, the q8 blocks the same bits. */
template <int WY>
__device__ __forceinline__ void rmsnorm8_q8_body(const float *__restrict__ x, const float *__restrict__ w,
                                                 float *__restrict__ y, kc_q8blk *__restrict__ yq, int n, float eps,
                                                 int mine /* this thread's warp emits (the split form's share) */)
{
    __shared__ float sh[32];
    const int t = threadIdx.x;
    /* the norm's weights before the PDL wait: they never change during a run, so their round trip
     * overlaps the predecessor's tail (the x-stationary GEMVs' rule, docs/cuda-engine.md "PDL") */
    float4 wa = make_float4(0.0f, 0.0f, 0.0f, 0.0f), wb = wa;
    if (mine) {
        wa = __ldg((const float4 *)w + 2 * t);
        wb = __ldg((const float4 *)w + 2 * t + 1);
    }
    kc_pdl_begin();
    /* x is the previous kernel's output: ld.global.ca, not the read-only path (PDL; q8x_load_x) */
    const float4 a = __ldca((const float4 *)x + 2 * t), b = __ldca((const float4 *)x + 2 * t + 1);
    const float ss = block_sum(rms8_sumsq(a, b), sh);
    const float inv = rsqrtf(ss / (float)n + eps);
    if (mine) rms8_emit_t<WY>(a, b, wa, wb, inv, t, y, yq); /* whole warps: the q8 groups' shuffles stay inside */
}
__global__ void rmsnorm8_q8_kernel(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                   kc_q8blk *__restrict__ yq, int n, float eps)
{
    rmsnorm8_q8_body<1>(x, w, y, yq, n, eps, 1);
}
/* x (n,) -> yq (n/32,) only (option norm_lean: where no kernel reads the f32 output, its 4n bytes of stores are
 * left out of the norm's tail, which the next GEMV's PDL wait waits for) */
__global__ void rmsnorm8_q8_lean_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                        kc_q8blk *__restrict__ yq, int n, float eps)
{
    rmsnorm8_q8_body<0>(x, w, (float *)NULL, yq, n, eps, 1);
}

/* rmsnorm8_q8 over gridDim.x blocks (option norm_split): every block loads all of x and sums the n squares in the
 * one-block kernel's order (the same inv: the same bits), then only its share of the warps emits, so each block's
 * tail stores 1/gridDim.x of y and yq. Why: the next GEMV's PDL wait waits for the norm's stores; one SM drains all
 * 26 KB of them (n = 5120). WY = 0: y not written (norm_lean). */
template <int WY>
__global__ void rmsnorm8_q8_split_kernel(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                         kc_q8blk *__restrict__ yq, int n, float eps)
{
    const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5, b = blockIdx.x, nb = gridDim.x;
    rmsnorm8_q8_body<WY>(x, w, y, yq, n, eps, warp >= b * nw / nb && warp < (b + 1) * nw / nb);
}

static __thread int g_norm_split = 1; /* kc_set_norm_split */
void kc_set_norm_split(int blocks) { g_norm_split = blocks >= 1 && blocks <= 32 ? blocks : 1; }

int kc_rmsnorm_q8_lean_ok(int n, const float *x, const float *w)
{
    return n > 0 && n % 256 == 0 && n / 8 <= 1024 && ((uintptr_t)x | (uintptr_t)w) % 16 == 0;
}

cudaError_t kc_rmsnorm_q8(const float *x, const float *w, float *y, kc_q8blk *yq, int n, float eps, cudaStream_t st)
{
    if (n <= 0 || n % 32) return cudaErrorInvalidValue;
    const int split = g_norm_split <= n / 256 ? g_norm_split : n / 256; /* at most one block per warp */
    const int fast = kc_rmsnorm_q8_lean_ok(n, x, w) && (uintptr_t)y % 16 == 0; /* the one-pass kernels' shapes */
    if (!y && (!yq || !fast)) return cudaErrorInvalidValue; /* the lean form: those shapes only */
    if (fast && split > 1) {
        if (y) kc_launch(rmsnorm8_q8_split_kernel<1>, split, n / 8, 0, st, x, w, y, yq, n, eps);
        else kc_launch(rmsnorm8_q8_split_kernel<0>, split, n / 8, 0, st, x, w, y, yq, n, eps);
    } else if (fast) {
        if (y) kc_launch(rmsnorm8_q8_kernel, 1, n / 8, 0, st, x, w, y, yq, n, eps);
        else kc_launch(rmsnorm8_q8_lean_kernel, 1, n / 8, 0, st, x, w, yq, n, eps);
    } else {
        kc_launch(rmsnorm_kernel, 1, norm_threads(n), 0, st, x, n, w, y, n, n, eps, yq);
    }
    return cudaGetLastError();
}

__global__ void l2norm_kernel(const float *x, float *y, int d, float scale)
{
    kc_pdl_begin();
    __shared__ float sh[32];
    const float *xr = x + (size_t)blockIdx.x * d;
    float *yr = y + (size_t)blockIdx.x * d;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) ss += xr[i] * xr[i];
    ss = block_sum(ss, sh);
    const float inv = rsqrtf(ss + 1e-6f) * scale;
    for (int i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * inv;
}

cudaError_t kc_l2norm(const float *x, float *y, int nh, int d, float scale, cudaStream_t st)
{
    kc_launch(l2norm_kernel, nh, norm_threads(d), 0, st, x, y, d, scale);
    return cudaGetLastError();
}

/* yq != NULL (vd % 32 == 0): y also quantised, block (h*vd + i)/32 from the warp holding i..i+31 */
__global__ void gated_rmsnorm_kernel(const float *o, const float *z,
                                     const float *__restrict__ w, float *__restrict__ y, int vd, float eps,
                                     kc_q8blk *yq)
{
    kc_pdl_begin();
    __shared__ float sh[32];
    const size_t base = (size_t)blockIdx.x * vd;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < vd; i += blockDim.x) ss += o[base + i] * o[base + i];
    ss = block_sum(ss, sh);
    const float inv = rsqrtf(ss / (float)vd + eps);
    for (int i = threadIdx.x; i < vd; i += blockDim.x) {
        const float zz = z[base + i];
        const float v = w[i] * (o[base + i] * inv) * (zz / (1.0f + expf(-zz)));
        y[base + i] = v;
        if (yq) q8_quantize_warp(v, yq + (base + i) / 32);
    }
}

cudaError_t kc_gated_rmsnorm(const float *o, const float *z, const float *w, float *y, int vh, int vd,
                             float eps, cudaStream_t st)
{
    kc_launch(gated_rmsnorm_kernel, vh, norm_threads(vd), 0, st, o, z, w, y, vd, eps, (kc_q8blk *)NULL);
    return cudaGetLastError();
}

cudaError_t kc_gated_rmsnorm_q8(const float *o, const float *z, const float *w, float *y, kc_q8blk *yq, int vh,
                                int vd, float eps, cudaStream_t st)
{
    if (vd <= 0 || vd % 32) return cudaErrorInvalidValue;
    kc_launch(gated_rmsnorm_kernel, vh, norm_threads(vd), 0, st, o, z, w, y, vd, eps, yq);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ GDN */

/* element i of gdn_beta_g (shared by gdn_beta_g_kernel and gdn_prep_kernel) */
__device__ __forceinline__ void beta_g_one(const float *b, const float *a, const float *ssm_a, const float *dt_bias,
                                           float *beta, float *g, int i)
{
    const float xa = a[i] + dt_bias[i];
    const float sp = xa > 20.0f ? xa : log1pf(expf(xa)); /* torch softplus, threshold 20 */
    g[i] = ssm_a[i] * sp;
    beta[i] = 1.0f / (1.0f + expf(-b[i]));
}

__global__ void gdn_beta_g_kernel(const float *b, const float *a, const float *ssm_a,
                                  const float *dt_bias, float *beta, float *g, int vh)
{
    kc_pdl_begin();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= vh) return;
    beta_g_one(b, a, ssm_a, dt_bias, beta, g, i);
}

cudaError_t kc_gdn_beta_g(const float *b, const float *a, const float *ssm_a, const float *dt_bias,
                          float *beta, float *g, int vh, cudaStream_t st)
{
    kc_launch(gdn_beta_g_kernel, (vh + 127) / 128, 128, 0, st, b, a, ssm_a, dt_bias, beta, g, vh);
    return cudaGetLastError();
}

/* channel c of conv_step without touching the history: silu(conv) (gdn_step_kernel, which advances
 * the q/k history only after every block of a cluster has read it) - conv_channel's arithmetic */
__device__ __forceinline__ float conv_value(const float *x, const float *hist, const float *__restrict__ w, int C,
                                            int K, int c)
{
    const float *wc = w + (size_t)c * K;
    const float raw = x[c];
    float acc = 0.0f;
    for (int j = 0; j < K - 1; j++) acc += wc[j] * hist[(size_t)j * C + c];
    acc += wc[K - 1] * raw;
    return acc / (1.0f + expf(-acc));
}

/* channel c's history (K-1, C) advanced by one step, raw the newest input */
__device__ __forceinline__ void conv_advance(float *hist, int C, int K, int c, float raw)
{
    for (int j = 0; j + 1 < K - 1; j++) hist[(size_t)j * C + c] = hist[(size_t)(j + 1) * C + c];
    if (K > 1) hist[(size_t)(K - 2) * C + c] = raw;
}

/* channel c of conv_step: y[c] = silu(conv), history advanced; returns y[c]
 * (shared by conv_step_kernel and gdn_prep_kernel) */
__device__ __forceinline__ float conv_channel(const float *x, float *__restrict__ hist,
                                              const float *__restrict__ w, float *__restrict__ y, int C, int K, int c)
{
    const float *wc = w + (size_t)c * K;
    const float raw = x[c];
    float acc = 0.0f;
    for (int j = 0; j < K - 1; j++) acc += wc[j] * hist[(size_t)j * C + c];
    acc += wc[K - 1] * raw;
    for (int j = 0; j + 1 < K - 1; j++) hist[(size_t)j * C + c] = hist[(size_t)(j + 1) * C + c];
    if (K > 1) hist[(size_t)(K - 2) * C + c] = raw;
    const float v = acc / (1.0f + expf(-acc));
    y[c] = v;
    return v;
}

/* conv_channel with channel c's K weights already in wc (registers, loaded before the PDL wait: option prep_early);
 * the same operations in the same order: the same bits */
#define PREP_K_MAX 4
__device__ __forceinline__ float conv_channel_wr(const float *x, float *__restrict__ hist, const float (&wc)[PREP_K_MAX],
                                                 float *__restrict__ y, int C, int K, int c)
{
    const float raw = x[c];
    float acc = 0.0f;
    float wl = 0.0f; /* wc[K - 1], picked by constant indices: a run-time index would put wc on the stack */
#pragma unroll
    for (int j = 0; j < PREP_K_MAX; j++) {
        if (j < K - 1) acc += wc[j] * hist[(size_t)j * C + c];
        if (j == K - 1) wl = wc[j];
    }
    acc += wl * raw;
    for (int j = 0; j + 1 < K - 1; j++) hist[(size_t)j * C + c] = hist[(size_t)(j + 1) * C + c];
    if (K > 1) hist[(size_t)(K - 2) * C + c] = raw;
    const float v = acc / (1.0f + expf(-acc));
    y[c] = v;
    return v;
}

__global__ void conv_step_kernel(const float *x, float *__restrict__ hist,
                                 const float *__restrict__ w, float *__restrict__ y, int C, int K)
{
    kc_pdl_begin();
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    conv_channel(x, hist, w, y, C, K, c);
}

cudaError_t kc_conv_step(const float *x, float *hist, const float *w, float *y, int C, int K,
                         cudaStream_t st)
{
    kc_launch(conv_step_kernel, (C + 255) / 256, 256, 0, st, x, hist, w, y, C, K);
    return cudaGetLastError();
}

/* gdn_prep: gdn_beta_g + conv_step + the two l2norms of one GDN layer in ONE launch (v3,
 * cuda/PERF-NOTES.md). Every block has T = norm_threads(kd) threads (the l2norm kernel's
 * block), so each value is computed by the same code with the same reduction tree as the
 * separate kernels: bit-identical to them (test_kernels checks it).
 * Blocks [0, kh): q head h (channels h*kd..): conv, then l2norm * qscale into qn;
 *        [kh, 2kh): k head; then ceil(vh*vd / T) blocks of v channels (conv only);
 *        then ceil(vh / T) blocks of beta/g. */
#define PREP_W 10 /* float4 per thread of a beta/alpha row loaded before the wait: the whole 5120 row at 128 threads */
__global__ void gdn_prep_kernel(const float *x, float *__restrict__ hist, const float *__restrict__ w,
                                float *__restrict__ y, int C, int K, int kh, int kd, float qscale,
                                float *__restrict__ qn, float *__restrict__ kn, const float *b,
                                const float *a, const float *__restrict__ ssm_a,
                                const float *__restrict__ dt_bias, float *__restrict__ beta, float *__restrict__ g,
                                int vh, const float *xn, const float *__restrict__ Wb,
                                const float *__restrict__ Wa, int D, int early)
{
    __shared__ float sh[32];
    const int T = blockDim.x, blk = blockIdx.x;
    const int nqk = 2 * kh, nv = (C - nqk * kd + T - 1) / T;
    /* option prep_early (PERF-NOTES v27): the thread's first conv channel's K weights into registers before the
     * PDL wait (weights), and (early 1) its history's lines L2-prefetched with an evict_last hint (written a token
     * ago by this kernel; a prefetch reads nothing into the kernel), so the conv after the wait takes one L2 round
     * trip instead of an HBM one: during gdn_prep HBM is otherwise idle, so its after-wait path is the step's */
    const int tx = (int)threadIdx.x, cv = nqk * kd + (blk - nqk) * T + tx;
    const int c_pre = !early || K > PREP_K_MAX ? -1
                      : blk < nqk      ? (tx < kd ? blk * kd + tx : -1)
                      : blk < nqk + nv ? (cv < C ? cv : -1)
                                       : -1;
    float wcr[PREP_K_MAX];
    if (c_pre >= 0) {
#pragma unroll
        for (int j = 0; j < PREP_K_MAX; j++) wcr[j] = j < K ? __ldg(w + (size_t)c_pre * K + j) : 0.0f;
        if (early == 1 && (threadIdx.x & 31) == 0)
            for (int j = 0; j + 1 < K; j++)
                asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(hist + (size_t)j * C + c_pre));
    }
    /* a projection row block: the first PREP_W float4 per thread of its weight row before the PDL
     * wait (weights never change during a run: docs/cuda-engine.md "PDL"), so that HBM round trip
     * overlaps the qkv+z GEMV's tail */
    float4 wpre[PREP_W];
    const float4 *wr = NULL;
    if (Wb && blk >= nqk + nv) {
        const int r = blk - nqk - nv, h = r < vh ? r : r - vh;
        wr = (const float4 *)((r < vh ? Wb : Wa) + (size_t)h * D);
#pragma unroll
        for (int u = 0; u < PREP_W; u++) {
            const int i = threadIdx.x + T * u;
            wpre[u] = i < D / 4 ? __ldg(wr + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }
    kc_pdl_begin();
    if (blk < nqk) { /* one q or k head: conv of its kd channels, then its L2 norm */
        const int c0 = blk * kd;
        float ss = 0.0f;
        for (int i = threadIdx.x; i < kd; i += T) {
            const float v = c0 + i == c_pre ? conv_channel_wr(x, hist, wcr, y, C, K, c0 + i)
                                            : conv_channel(x, hist, w, y, C, K, c0 + i);
            ss += v * v;
        }
        ss = block_sum(ss, sh);
        const float inv = rsqrtf(ss + 1e-6f) * (blk < kh ? qscale : 1.0f);
        float *out = blk < kh ? qn + (size_t)blk * kd : kn + (size_t)(blk - kh) * kd;
        for (int i = threadIdx.x; i < kd; i += T) out[i] = y[c0 + i] * inv; /* own writes: no barrier needed */
    } else if (blk < nqk + nv) {
        const int c = nqk * kd + (blk - nqk) * T + threadIdx.x;
        if (c < C && c == c_pre) conv_channel_wr(x, hist, wcr, y, C, K, c);
        else if (c < C) conv_channel(x, hist, w, y, C, K, c);
    } else if (!Wb) {
        const int i = (blk - nqk - nv) * T + threadIdx.x;
        if (i < vh) beta_g_one(b, a, ssm_a, dt_bias, beta, g, i);
    } else { /* one projection row of xn (f32, D): r < vh beta row r -> b, beta; else alpha row -> a, g */
        const int r = blk - nqk - nv, h = r < vh ? r : r - vh;
        const float4 *x4 = (const float4 *)xn;
        float sd = 0.0f;
#pragma unroll
        for (int u = 0; u < PREP_W; u++) { /* the same order as the loop below would take them */
            const int i = threadIdx.x + T * u;
            if (i < D / 4) {
                const float4 wv = wpre[u], xv = x4[i];
                sd += wv.x * xv.x;
                sd += wv.y * xv.y;
                sd += wv.z * xv.z;
                sd += wv.w * xv.w;
            }
        }
        for (int i = threadIdx.x + T * PREP_W; i < D / 4; i += T) {
            const float4 wv = wr[i], xv = x4[i];
            sd += wv.x * xv.x;
            sd += wv.y * xv.y;
            sd += wv.z * xv.z;
            sd += wv.w * xv.w;
        }
        sd = block_sum(sd, sh);
        if (threadIdx.x == 0) {
            if (r < vh) { /* beta_g_one's formulas, one half each */
                ((float *)b)[h] = sd;
                beta[h] = 1.0f / (1.0f + expf(-sd));
            } else {
                ((float *)a)[h] = sd;
                const float xa = sd + dt_bias[h];
                const float sp = xa > 20.0f ? xa : log1pf(expf(xa));
                g[h] = ssm_a[h] * sp;
            }
        }
    }
}

cudaError_t kc_gdn_prep(const float *x, float *hist, const float *w, float *y, int C, int K, int kh, int kd,
                        float qscale, float *qn, float *kn, const float *b, const float *a, const float *ssm_a,
                        const float *dt_bias, float *beta, float *g, int vh, const float *xn, const float *Wb,
                        const float *Wa, int D, int early, cudaStream_t st)
{
    const int T = norm_threads(kd);
    if (early < 0 || early > 2) return cudaErrorInvalidValue;
    if (C < 2 * kh * kd || (Wb && (!Wa || !xn || D <= 0 || D % 4))) return cudaErrorInvalidValue;
    const int grid = 2 * kh + (C - 2 * kh * kd + T - 1) / T + (Wb ? 2 * vh : (vh + T - 1) / T);
    kc_launch(gdn_prep_kernel, grid, T, 0, st, x, hist, w, y, C, K, kh, kd, qscale, qn, kn, b, a, ssm_a, dt_bias, beta,
              g, vh, xn, Wb, Wa, D, early);
    return cudaGetLastError();
}

#include "gdn_delta.cuh" /* after block_sum and q8_quantize_warp: the fused epilogue uses them */

cudaError_t kc_delta_step(float *S, const float *q, const float *k, const float *v, const float *g,
                          const float *beta, float *o, int kh, int kd, int vh, int vd, int variant,
                          cudaStream_t st)
{
    const int reg_ok = kd == 128 && vd == 128;
    if (variant < 0) variant = reg_ok;
    if (variant == 1 && !reg_ok) return cudaErrorInvalidValue;
    const size_t smem = 2 * (size_t)kd * sizeof(float);
    if (variant == 1)
        kc_launch(delta_step_kernel<128>, vh, 128, smem, st, S, q, k, v, g, beta, o, kh, kd, vh, vd,
                  (const float *)NULL, (const float *)NULL, 0.0f, (float *)NULL, (kc_q8blk *)NULL);
    else
        kc_launch(delta_step_kernel<0>, vh, vd < 256 ? ((vd + 31) / 32) * 32 : 256, smem, st, S, q, k, v, g, beta,
                  o, kh, kd, vh, vd, (const float *)NULL, (const float *)NULL, 0.0f, (float *)NULL,
                  (kc_q8blk *)NULL);
    return cudaGetLastError();
}

int kc_gdn_step_supported(int kh, int kd, int vh, int vd, int D)
{
    return kd == 128 && vd == 128 && kh > 0 && vh % kh == 0 && vh / kh <= 8 && D <= 4 * 128 * GDN_DOT_U;
}

cudaError_t kc_gdn_step(const kc_gdn_step_args *a, cudaStream_t st)
{
    static int smem_ok; /* the 64 KB of S need the opt-in above 48 KB, once per process */
    const size_t smem = (size_t)128 * 128 * sizeof(float);
    if (!kc_gdn_step_supported(a->kh, a->kd, a->vh, a->vd, a->D) || a->C != 2 * a->kh * 128 + a->vh * 128 || a->K < 1 ||
        !a->z || !a->w || !a->y || !a->yq ||
        (a->Wb && (!a->Wa || !a->xn || a->D <= 0 || a->D % 4 || a->D > 4 * 128 * GDN_DOT_U)))
        return cudaErrorInvalidValue;
    if (!smem_ok) {
        const cudaError_t e = cudaFuncSetAttribute(gdn_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
        smem_ok = 1;
    }
    kc_launch_cluster(gdn_step_kernel, a->vh, 128, smem, a->vh / a->kh, st, *a);
    return cudaGetLastError();
}

cudaError_t kc_delta_step_norm_q8(float *S, const float *q, const float *k, const float *v, const float *g,
                                  const float *beta, float *o, const float *z, const float *w, float eps,
                                  float *y, kc_q8blk *yq, int kh, int kd, int vh, int vd, cudaStream_t st)
{
    if (kd != 128 || vd != 128) return cudaErrorInvalidValue;
    kc_launch(delta_step_kernel<128>, vh, 128, 2 * (size_t)kd * sizeof(float), st, S, q, k, v, g, beta, o, kh, kd,
              vh, vd, z, w, eps, y, yq);
    return cudaGetLastError();
}

cudaError_t kc_delta_step_norm_q8_trig(float *S, const float *q, const float *k, const float *v, const float *g,
                                       const float *beta, float *o, const float *z, const float *w, float eps,
                                       float *y, kc_q8blk *yq, int kh, int kd, int vh, int vd, int trig, int pf,
                                       cudaStream_t st)
{
    if (kd != 128 || vd != 128 || trig < 1 || trig > 3 || pf < 0 || pf > 1) return cudaErrorInvalidValue;
#define DELTA_TRIG_LAUNCH(T, P)                                                                                      \
    kc_launch(delta_step_trig_kernel<T, P>, vh, 128, 2 * (size_t)kd * sizeof(float), st, S, q, k, v, g, beta, o, kh, \
              kd, vh, vd, z, w, eps, y, yq)
    if (trig == 1 && pf) DELTA_TRIG_LAUNCH(1, 1);
    else if (trig == 1) DELTA_TRIG_LAUNCH(1, 0);
    else if (trig == 3 && pf) DELTA_TRIG_LAUNCH(3, 1);
    else if (trig == 3) DELTA_TRIG_LAUNCH(3, 0);
    else if (pf) DELTA_TRIG_LAUNCH(2, 1);
    else DELTA_TRIG_LAUNCH(2, 0);
#undef DELTA_TRIG_LAUNCH
    return cudaGetLastError();
}

cudaError_t kc_delta_step_norm_q8_pf(float *S, const float *q, const float *k, const float *v, const float *g,
                                     const float *beta, float *o, const float *z, const float *w, float eps,
                                     float *y, kc_q8blk *yq, int kh, int kd, int vh, int vd, cudaStream_t st)
{
    if (kd != 128 || vd != 128) return cudaErrorInvalidValue;
    kc_launch(delta_step_pf_kernel, vh, 128, 2 * (size_t)kd * sizeof(float), st, S, q, k, v, g, beta, o, kh, kd, vh,
              vd, z, w, eps, y, yq);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ attention */

__global__ void rope_neox_kernel(float *x, int hd, int rd, float base, const int32_t *pos)
{
    kc_pdl_begin();
    const int h = blockIdx.x, i = threadIdx.x, half = rd / 2;
    if (i >= half) return;
    /* inv_freq as HF (and the CPU twin) compute it: base^(-2i/rd) rounded once to f32 */
    const float inv_freq = (float)(1.0 / pow((double)base, (double)(2 * i) / (double)rd));
    const float ang = (float)(*pos) * inv_freq;
    float sn, cs;
    sincosf(ang, &sn, &cs);
    float *xh = x + (size_t)h * hd;
    const float a = xh[i], b = xh[i + half];
    xh[i] = a * cs - b * sn;
    xh[i + half] = b * cs + a * sn;
}

cudaError_t kc_rope_neox(float *x, int nh, int hd, int rd, float base, const int32_t *pos, cudaStream_t st)
{
    if (rd < 2) return cudaSuccess; /* no rotary channels */
    kc_launch(rope_neox_kernel, nh, ((rd / 2 + 31) / 32) * 32, 0, st, x, hd, rd, base, pos);
    return cudaGetLastError();
}

__global__ void kv_append_kernel(const float *k, const float *v, float *kc, float *vc, int n,
                                 const int32_t *pos)
{
    kc_pdl_begin();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const size_t off = (size_t)(*pos) * n + i;
    kc[off] = k[i];
    vc[off] = v[i];
}

cudaError_t kc_kv_append(const float *k, const float *v, float *kc, float *vc, int nkv, int hd,
                         const int32_t *pos, cudaStream_t st)
{
    const int n = nkv * hd;
    kc_launch(kv_append_kernel, (n + 255) / 256, 256, 0, st, k, v, kc, vc, n, pos);
    return cudaGetLastError();
}

/* attn_prep_kernel (after its helper rope_inv_freq, RoPE pair i's frequency as rope_neox_kernel computes it): q/k
 * RMS norms + RoPE + KV append in ONE launch, bit-identical to the five launches (rmsnorm x2, rope_neox x2, kv_append):
 * block b < nh is q head b, the others k head b - nh (which also appends its k and v row to the cache at *pos).
 * norm_threads(hd) threads, as rmsnorm_kernel (same block_sum order); the normed row waits in shared memory. */
__device__ __forceinline__ float rope_inv_freq(float base, int i, int rd)
{
    return (float)(1.0 / pow((double)base, (double)(2 * i) / (double)rd));
}

__global__ void attn_prep_kernel(const float *qg, float *__restrict__ ak, const float *av,
                                 const float *__restrict__ qnw, const float *__restrict__ knw, float *__restrict__ aq,
                                 float *__restrict__ kc, float *__restrict__ vc, int nh, int nkv, int hd, int rd,
                                 float base, float eps, const int32_t *pos, int early)
{
    __shared__ float sh[32];
    extern __shared__ float row[]; /* (hd,) */
    const int isq = blockIdx.x < nh, h = isq ? blockIdx.x : blockIdx.x - nh, T = blockDim.x;
    const int tx = (int)threadIdx.x, half = rd / 2;
    const float *w = isq ? qnw : knw;
    /* option attn_early (PERF-NOTES v28): the thread's first norm weight and RoPE frequency before the PDL wait
     * (a weight, and arithmetic on launch constants), so the after-wait path has no HBM round trip for w and no
     * double-precision pow; the same values feed the same operations: the same bits */
    float w_pre = 0.0f, f_pre = 0.0f;
    if (early) {
        if (tx < hd) w_pre = __ldg(w + tx);
        if (tx < half) f_pre = rope_inv_freq(base, tx, rd);
        /* keep f_pre's chain here: without a use before the wait the compiler may sink it to its use */
        asm volatile("" : "+f"(f_pre));
    }
    kc_pdl_begin();
    const float *xr = isq ? qg + (size_t)h * 2 * hd : ak + (size_t)h * hd;
    float ss = 0.0f;
    for (int i = tx; i < hd; i += T) ss += xr[i] * xr[i];
    ss = block_sum(ss, sh);
    const float inv = rsqrtf(ss / (float)hd + eps);
    for (int i = tx; i < hd; i += T) row[i] = xr[i] * inv * (early && i == tx ? w_pre : w[i]);
    __syncthreads();
    const int p = *pos;
    for (int i = tx; i < half; i += T) {
        const float inv_freq = early && i == tx ? f_pre : rope_inv_freq(base, i, rd);
        const float ang = (float)p * inv_freq;
        float sn, cs;
        sincosf(ang, &sn, &cs);
        const float a = row[i], b = row[i + half];
        row[i] = a * cs - b * sn;
        row[i + half] = b * cs + a * sn;
    }
    __syncthreads();
    float *out = isq ? aq + (size_t)h * hd : ak + (size_t)h * hd;
    const size_t c = (size_t)p * nkv * hd + (size_t)h * hd;
    for (int i = threadIdx.x; i < hd; i += T) {
        out[i] = row[i];
        if (!isq) {
            kc[c + i] = row[i];
            vc[c + i] = av[(size_t)h * hd + i];
        }
    }
}

cudaError_t kc_attn_prep(const float *qg, float *ak, const float *av, const float *qnw, const float *knw, float *aq,
                         float *kc, float *vc, int nh, int nkv, int hd, int rd, float base, float eps,
                         const int32_t *pos, int early, cudaStream_t st)
{
    if (rd < 0 || rd > hd || rd % 2 || hd > 1024 || early < 0 || early > 1) return cudaErrorInvalidValue;
    kc_launch(attn_prep_kernel, nh + nkv, norm_threads(hd), (size_t)hd * sizeof(float), st, qg, ak, av, qnw, knw, aq,
              kc, vc, nh, nkv, hd, rd, base, eps, pos, early);
    return cudaGetLastError();
}

#define ATTN_THREADS 256
#define ATTN_SMEM_MAX (200 * 1024)

/* grid = nh; dynamic smem: (ctx + hd) floats (scores, then q). */
__global__ void attention_kernel(const float *q, const float *kc,
                                 const float *vc, const float *gate, int gs,
                                 float *__restrict__ out, int nh, int nkv, int hd, float scale,
                                 const int32_t *pos)
{
    kc_pdl_begin();
    extern __shared__ float sm[];
    __shared__ float red[32];
    const int h = blockIdx.x, kvh = h / (nh / nkv);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int n = *pos + 1;
    float *sq = sm, *sc = sm + hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) sq[d] = q[(size_t)h * hd + d];
    __syncthreads();
    const size_t rs = (size_t)nkv * hd; /* cache row stride */
    for (int t = wid; t < n; t += nw) {
        const float *kt = kc + (size_t)t * rs + (size_t)kvh * hd;
        float s = 0.0f;
        for (int d = lane; d < hd; d += 32) s += sq[d] * kt[d];
        s = warp_sum(s);
        if (lane == 0) sc[t] = s * scale;
    }
    __syncthreads();
    float m = -INFINITY;
    for (int t = threadIdx.x; t < n; t += blockDim.x) m = fmaxf(m, sc[t]);
#pragma unroll
    for (int off = 16; off; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) red[wid] = m;
    __syncthreads();
    m = red[0];
    for (int i = 1; i < nw; i++) m = fmaxf(m, red[i]);
    __syncthreads();
    float sum = 0.0f;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const float p = expf(sc[t] - m);
        sc[t] = p;
        sum += p;
    }
    sum = block_sum(sum, red);
    __syncthreads();
    const float inv = 1.0f / sum;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        const float *vt = vc + (size_t)kvh * hd + d;
        float acc = 0.0f;
        for (int t = 0; t < n; t++) acc += sc[t] * vt[(size_t)t * rs];
        const float gv = gate[(size_t)h * gs + d];
        out[(size_t)h * hd + d] = acc * inv * (1.0f / (1.0f + expf(-gv)));
    }
}

int kc_attention_max_ctx(void) { return ATTN_SMEM_MAX / 4 - 1024; }

static cudaError_t attention_kvc_setup(void); /* attention_kvc's shared-memory limit and cluster size */
cudaError_t kc_attention_setup(int ctx, int hd)
{
    const size_t smem = (size_t)(ctx + hd) * sizeof(float);
    if (smem > ATTN_SMEM_MAX) return cudaErrorInvalidValue;
    const cudaError_t e = attention_kvc_setup();
    if (e != cudaSuccess || smem <= 48 * 1024) return e;
    return cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}

cudaError_t kc_attention(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                         float *out, int nh, int nkv, int hd, int ctx, float scale, const int32_t *pos,
                         cudaStream_t st)
{
    const size_t smem = (size_t)(ctx + hd) * sizeof(float);
    if (smem > ATTN_SMEM_MAX) return cudaErrorInvalidValue;
    kc_launch(attention_kernel, nh, ATTN_THREADS, smem, st, q, kc, vc, gate, gs, out, nh, nkv, hd, scale, pos);
    return cudaGetLastError();
}

/* Split attention (flash-decoding): grid (nh, ns), ns = kc_attention_splits(ctx) fixed at graph
 * capture; at run time the n = pos + 1 positions are cut into chunks of c = ceil(n / ns) and block
 * (h, s) takes [s*c, (s+1)*c) below n: its scores, their max m_s, l_s = sum exp(score - m_s) and
 * o_s = sum exp(score - m_s) v into part[h][s] = (m_s, l_s, o_s (hd)). The last block of head h to
 * finish (atomic ticket, re-armed) merges the used splits: out = sum_s e^(m_s-M) o_s / sum_s
 * e^(m_s-M) l_s times the sigmoid gate, and quantises it into oq when given (hd % 32 == 0).
 * Why: one block per head (attention_kernel) walks all n positions serially on 24 of 132 SMs (at
 * n = 4096 the 27B step spent 13 ms there); v10 used fixed 256-position chunks, so at n = 512 only
 * 2 blocks per head worked and each thread's V loop was 256 dependent steps (~70 us per layer).
 * Now every n up to ctx spreads over all ns blocks and the V loop keeps 8 loads in flight.
 * dynamic smem: (hd + ceil(ctx/ns) + ns) floats. */
#define ATTN_MAX_SPLITS 32
#define ATTN_MIN_CHUNK 16 /* positions per split at n = ctx, at least */
__global__ void attention_split_kernel(const float *q, const float *kc,
                                       const float *vc, const float *gate, int gs,
                                       float *__restrict__ out, kc_q8blk *__restrict__ oq, int nh, int nkv, int hd,
                                       float scale, const int32_t *pos, float *__restrict__ part,
                                       unsigned int *__restrict__ cnt, int cmax)
{
    kc_pdl_begin();
    extern __shared__ float sm[];
    __shared__ float red[32];
    __shared__ int last;
    const int h = blockIdx.x, sp = blockIdx.y, ns = gridDim.y, kvh = h / (nh / nkv);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int n = *pos + 1, c = (n + ns - 1) / ns; /* c <= cmax for n <= ctx */
    const int t0 = sp * c, t1 = n < t0 + c ? n : t0 + c;
    float *sq = sm, *sc = sm + hd, *ws = sm + hd + cmax;
    float *pp = part + ((size_t)h * ns + sp) * (hd + 2);
    const size_t rs = (size_t)nkv * hd; /* cache row stride */
    if (t0 < n) {
        for (int d = threadIdx.x; d < hd; d += blockDim.x) sq[d] = q[(size_t)h * hd + d];
        __syncthreads();
        for (int t = t0 + wid; t < t1; t += nw) {
            const float *kt = kc + (size_t)t * rs + (size_t)kvh * hd;
            float s = 0.0f;
            for (int d = lane; d < hd; d += 32) s += sq[d] * kt[d];
            s = warp_sum(s);
            if (lane == 0) sc[t - t0] = s * scale;
        }
        __syncthreads();
        float m = -INFINITY;
        for (int t = threadIdx.x; t < t1 - t0; t += blockDim.x) m = fmaxf(m, sc[t]);
#pragma unroll
        for (int off = 16; off; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        if (lane == 0) red[wid] = m;
        __syncthreads();
        m = red[0];
        for (int i = 1; i < nw; i++) m = fmaxf(m, red[i]);
        __syncthreads();
        float sum = 0.0f;
        for (int t = threadIdx.x; t < t1 - t0; t += blockDim.x) {
            const float p = expf(sc[t] - m);
            sc[t] = p;
            sum += p;
        }
        sum = block_sum(sum, red);
        __syncthreads();
        for (int d = threadIdx.x; d < hd; d += blockDim.x) {
            const float *vt = vc + (size_t)kvh * hd + d;
            float acc = 0.0f;
#pragma unroll 8
            for (int t = t0; t < t1; t++) acc += sc[t - t0] * vt[(size_t)t * rs];
            pp[2 + d] = acc;
        }
        if (threadIdx.x == 0) {
            pp[0] = m;
            pp[1] = sum;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(&cnt[h], 1u) == (unsigned)ns - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    /* The merge. Every partial is loaded before any is used (lane s of warp 0 holds split s's max
     * and sum; each thread all nsu values of its d): one L2 round trip each, where loops over the
     * splits waited on one load per iteration (v13: 11.5 us per layer at ctx 1 under profile=trace).
     * Same operations in the same order as those loops: M (exact max), L summed serially over s,
     * acc over s: the same bits. */
    __shared__ float lsum[ATTN_MAX_SPLITS], inv_sh;
    const int nsu = (n + c - 1) / c; /* splits that held positions, <= ns <= ATTN_MAX_SPLITS */
    const float *ph = part + (size_t)h * ns * (hd + 2);
    if (wid == 0) {
        const float ms = lane < nsu ? __ldcg(ph + (size_t)lane * (hd + 2)) : -INFINITY;
        const float ls = lane < nsu ? __ldcg(ph + (size_t)lane * (hd + 2) + 1) : 0.0f;
        float M = ms;
#pragma unroll
        for (int off = 16; off; off >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
        if (lane < nsu) {
            ws[lane] = expf(ms - M);
            lsum[lane] = ls;
        }
        __syncwarp();
        if (lane == 0) {
            float L = 0.0f;
            for (int s = 0; s < nsu; s++) L += ws[s] * lsum[s];
            inv_sh = 1.0f / L;
        }
    }
    __syncthreads();
    const float inv = inv_sh;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float pv[ATTN_MAX_SPLITS];
#pragma unroll
        for (int s = 0; s < ATTN_MAX_SPLITS; s++) pv[s] = s < nsu ? __ldcg(ph + (size_t)s * (hd + 2) + 2 + d) : 0.0f;
        float acc = 0.0f;
#pragma unroll
        for (int s = 0; s < ATTN_MAX_SPLITS; s++)
            if (s < nsu) acc += ws[s] * pv[s];
        const float gv = gate[(size_t)h * gs + d];
        const float o = acc * inv * (1.0f / (1.0f + expf(-gv)));
        out[(size_t)h * hd + d] = o;
        if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
    }
    if (threadIdx.x == 0) cnt[h] = 0;
}

/* Short-context attention (option attn=short): ONE block per q head does everything, no partials,
 * ticket or merge: warp w takes positions w, w+8, ..., lane l holds dims 4l + 128j (j < HD4) of q and
 * of its rows; each warp loads AS_ROWS rows of K and V at once (one round trip per 8 * AS_ROWS
 * positions), keeps an online softmax (max, sum, hd/32 accumulators per lane), and the 8 warps merge
 * in shared memory. Why: at ctx 1 the split kernel's chain (q, K, V, partials, fence, ticket,
 * partials again, gate: ~7 dependent round trips) cost 12.5 us per attention layer of the step for
 * a few positions (PERF-NOTES v17 knockouts); here q, gate, K and V are one round trip after pos.
 * Correct for any n, but 24 blocks stream n rows each: the engine takes it for the steps whose n is
 * at most attn_short (a graph per kind of step), the split kernel beyond (v20: with the split's
 * work inside this register-heavy kernel, one block per SM, n = 512 took 27 us instead of 14).
 * Not the same bits as the split kernel (other sums): within 1e-5 of the CPU twin (test_kernels).
 * grid nh; dynamic smem: 8 * hd floats. */
#define AS_WARPS (ATTN_THREADS / 32)
/* One warp's share of attention_short: positions g0, g0 + gs, ... below n of the kv head whose K and
 * V rows start at kb, vb (row stride rs); lane l holds dims 4l + 128j (j < HD4) of q (qv) and of the
 * rows, loads 16/HD4 rows of K and V at once (one round trip per gs * 16/HD4 positions) and keeps an
 * online softmax: the max score m, l = sum exp(score - m) and acc = sum exp(score - m) v (its dims). */
/* LAST (the attention_short*_prep kernels): the last position's K and V rows from kl, vl (this block's shared
 * memory: the rows it has just normed and rotated) instead of the cache */
template <int HD4, bool LAST = false>
__device__ __forceinline__ void attn_short_scan(const float4 (&qv)[HD4], const float *kb, const float *vb, size_t rs,
                                                int n, int g0, int gs, float scale, float &m, float &l,
                                                float4 (&acc)[HD4], const float *kl = nullptr,
                                                const float *vl = nullptr)
{
    constexpr int AS_ROWS = 16 / HD4; /* rows per warp per round trip: 2 * 16 float4 of K and V per lane */
    const int lane = threadIdx.x & 31;
    m = -INFINITY;
    l = 0.0f;
#pragma unroll
    for (int j = 0; j < HD4; j++) acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int t0 = g0; t0 < n; t0 += gs * AS_ROWS) {
        float4 kr[AS_ROWS][HD4], vr[AS_ROWS][HD4];
#pragma unroll
        for (int i = 0; i < AS_ROWS; i++) {
            const int t = t0 + gs * i;
            if (t < n) {
#pragma unroll
                for (int j = 0; j < HD4; j++) {
                    kr[i][j] = LAST && t == n - 1 ? ((const float4 *)kl)[lane + 32 * j]
                                                  : ((const float4 *)(kb + (size_t)t * rs))[lane + 32 * j];
                    vr[i][j] = LAST && t == n - 1 ? ((const float4 *)vl)[lane + 32 * j]
                                                  : ((const float4 *)(vb + (size_t)t * rs))[lane + 32 * j];
                }
            }
        }
        float s[AS_ROWS];
#pragma unroll
        for (int i = 0; i < AS_ROWS; i++) {
            s[i] = 0.0f;
            if (t0 + gs * i < n)
#pragma unroll
                for (int j = 0; j < HD4; j++)
                    s[i] += qv[j].x * kr[i][j].x + qv[j].y * kr[i][j].y + qv[j].z * kr[i][j].z + qv[j].w * kr[i][j].w;
        }
#pragma unroll
        for (int off = 16; off; off >>= 1)
#pragma unroll
            for (int i = 0; i < AS_ROWS; i++) s[i] += __shfl_xor_sync(0xffffffffu, s[i], off);
        float mc = m;
#pragma unroll
        for (int i = 0; i < AS_ROWS; i++)
            if (t0 + gs * i < n) {
                s[i] *= scale;
                mc = fmaxf(mc, s[i]);
            }
        const float corr = expf(m - mc); /* 0 on the first round (m = -inf, mc finite) */
        l *= corr;
#pragma unroll
        for (int j = 0; j < HD4; j++) {
            acc[j].x *= corr;
            acc[j].y *= corr;
            acc[j].z *= corr;
            acc[j].w *= corr;
        }
#pragma unroll
        for (int i = 0; i < AS_ROWS; i++)
            if (t0 + gs * i < n) {
                const float p = expf(s[i] - mc);
                l += p;
#pragma unroll
                for (int j = 0; j < HD4; j++) {
                    acc[j].x += p * vr[i][j].x;
                    acc[j].y += p * vr[i][j].y;
                    acc[j].z += p * vr[i][j].z;
                    acc[j].w += p * vr[i][j].w;
                }
            }
        m = mc;
    }
}

/* attention_short's prologue: lane l's dims 4l + 128j of head h's q (qv), and in the cluster's block 0
 * (rank: the block's rank in its cluster, 0 without one) the gate of this thread's output dims
 * d = threadIdx.x + 256 i (gv; 0 in other blocks or for d >= hd) */
template <int HD4>
__device__ __forceinline__ void attn_short_load_q_gate(const float *q, const float *gate, int gs, int h, int hd,
                                                       unsigned rank, float4 (&qv)[HD4],
                                                       float (&gv)[HD4 > 2 ? 2 : 1])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < HD4; j++) qv[j] = ((const float4 *)(q + (size_t)h * hd))[lane + 32 * j];
#pragma unroll
    for (int i = 0; i < (HD4 > 2 ? 2 : 1); i++) {
        const int d = threadIdx.x + ATTN_THREADS * i;
        gv[i] = rank == 0 && d < hd ? gate[(size_t)h * gs + d] : 0.0f;
    }
}

/* attention_short's merge of a block's warps: each warp's (m, l, acc) into shared memory (sm (AS_WARPS,
 * hd), wm and wl (AS_WARPS,)), a barrier, then every thread's copy of the block's max (returned), the
 * warps' weights ew = e^(m_w - max) (0 for a warp without positions: m = -inf) and L = sum ew l_w */
template <int HD4>
__device__ __forceinline__ float attn_short_merge_warps(float *sm, float *wm, float *wl, int hd, float m, float l,
                                                        const float4 (&acc)[HD4], float (&ew)[AS_WARPS], float &L)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
#pragma unroll
    for (int j = 0; j < HD4; j++) ((float4 *)(sm + (size_t)wid * hd))[lane + 32 * j] = acc[j];
    if (lane == 0) {
        wm[wid] = m;
        wl[wid] = l;
    }
    __syncthreads();
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < AS_WARPS; w++) M = fmaxf(M, wm[w]);
    L = 0.0f;
#pragma unroll
    for (int w = 0; w < AS_WARPS; w++) {
        ew[w] = wm[w] == -INFINITY ? 0.0f : expf(wm[w] - M);
        L += ew[w] * wl[w];
    }
    return M;
}

/* attention_short's end: the warps merged (attn_short_merge_warps), then this thread's output dims d =
 * threadIdx.x + 256 i of head h: normalised, gated by gv[i], written (and quantised into oq) */
template <int HD4>
__device__ __forceinline__ void attn_short_finish(float *sm, float *wm, float *wl, int hd, float m, float l,
                                                  const float4 (&acc)[HD4], const float (&gv)[HD4 > 2 ? 2 : 1], int h,
                                                  float *__restrict__ out, kc_q8blk *__restrict__ oq)
{
    float ew[AS_WARPS], L;
    attn_short_merge_warps<HD4>(sm, wm, wl, hd, m, l, acc, ew, L);
    const float inv = 1.0f / L;
#pragma unroll
    for (int i = 0; i < (HD4 > 2 ? 2 : 1); i++) {
        const int d = threadIdx.x + ATTN_THREADS * i;
        if (d < hd) { /* warp-uniform: hd % 32 == 0 */
            float a = 0.0f;
#pragma unroll
            for (int w = 0; w < AS_WARPS; w++) a += ew[w] * sm[(size_t)w * hd + d];
            const float o = a * inv * (1.0f / (1.0f + expf(-gv[i])));
            out[(size_t)h * hd + d] = o;
            if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
        }
    }
}

template <int HD4>
__global__ void __launch_bounds__(ATTN_THREADS) attention_short_kernel(const float *q, const float *kc,
                                                                       const float *vc, const float *gate, int gs,
                                                                       float *__restrict__ out,
                                                                       kc_q8blk *__restrict__ oq, int nh, int nkv,
                                                                       int hd, float scale, const int32_t *pos)
{
    kc_pdl_begin();
    const int n = *pos + 1;
    extern __shared__ float sm[]; /* (AS_WARPS, hd) the warps' accumulators */
    __shared__ float wm[AS_WARPS], wl[AS_WARPS];
    const int h = blockIdx.x, kvh = h / (nh / nkv), wid = threadIdx.x >> 5;
    const size_t rs = (size_t)nkv * hd; /* cache row stride */
    float4 qv[HD4];
    float gv[HD4 > 2 ? 2 : 1];
    attn_short_load_q_gate<HD4>(q, gate, gs, h, hd, 0u, qv, gv);
    float l, m;
    float4 acc[HD4];
    attn_short_scan<HD4>(qv, kc + (size_t)kvh * hd, vc + (size_t)kvh * hd, rs, n, wid, AS_WARPS, scale, m, l, acc);
    attn_short_finish<HD4>(sm, wm, wl, hd, m, l, acc, gv, h, out, oq);
}

/* attn_prep folded into the short attention (option attn_fuse, PERF-NOTES v32), after the PDL wait: q head h
 * and its kv head's k row normed (wq, wk: the thread's norm weights) and rotated (f_pre: the thread's RoPE
 * frequency) with attn_prep's arithmetic (the same element per thread and block_sum tree where hd <=
 * ATTN_THREADS, the same RoPE expressions) into rq, rk (hd,) and v into rv (hd,), all shared; with `append`
 * k and v also into the caches at *pos (once per kv head: no block reads that row from the cache this step).
 * gv[0]: the gate of output dim threadIdx.x (0 unless `gate`). Returns *pos. */
__device__ __forceinline__ int attn_prep_rows(const float *qg, const float *ak, const float *av, float wq, float wk,
                                              float f_pre, float *rq, float *rk, float *rv, float *sh, float *kc,
                                              float *vc, int h, int kvh, int nkv, int hd, int rd, float eps,
                                              const int32_t *pos, bool append, bool gate, float &gv)
{
    const int tx = (int)threadIdx.x, half = rd / 2;
    const float xq = tx < hd ? qg[(size_t)h * 2 * hd + tx] : 0.0f, xk = tx < hd ? ak[(size_t)kvh * hd + tx] : 0.0f;
    const float xv = tx < hd ? av[(size_t)kvh * hd + tx] : 0.0f;
    gv = gate && tx < hd ? qg[(size_t)h * 2 * hd + hd + tx] : 0.0f;
    const int p = *pos;
    float ss = 0.0f; /* attn_prep: one element per thread (hd <= ATTN_THREADS), then block_sum */
    if (tx < hd) ss += xq * xq;
    ss = block_sum(ss, sh);
    const float invq = rsqrtf(ss / (float)hd + eps);
    ss = 0.0f;
    if (tx < hd) ss += xk * xk;
    ss = block_sum(ss, sh);
    const float invk = rsqrtf(ss / (float)hd + eps);
    if (tx < hd) {
        rq[tx] = xq * invq * wq;
        rk[tx] = xk * invk * wk;
        rv[tx] = xv;
    }
    __syncthreads();
    if (tx < half) {
        const float ang = (float)p * f_pre;
        float sn, cs;
        sincosf(ang, &sn, &cs);
        float a = rq[tx], b = rq[tx + half];
        rq[tx] = a * cs - b * sn;
        rq[tx + half] = b * cs + a * sn;
        a = rk[tx];
        b = rk[tx + half];
        rk[tx] = a * cs - b * sn;
        rk[tx + half] = b * cs + a * sn;
    }
    __syncthreads();
    if (append && tx < hd) {
        const size_t c = (size_t)p * nkv * hd + (size_t)kvh * hd + tx;
        kc[c] = rk[tx];
        vc[c] = rv[tx];
    }
    return p;
}

/* the norm weights and the RoPE frequency of this thread, before the PDL wait (weights and launch constants) */
#define ATTN_PREP_EARLY()                                                                                  \
    const float wq = (int)threadIdx.x < hd ? __ldg(qnw + threadIdx.x) : 0.0f;                               \
    const float wk = (int)threadIdx.x < hd ? __ldg(knw + threadIdx.x) : 0.0f;                               \
    float f_pre = (int)threadIdx.x < rd / 2 ? rope_inv_freq(base, (int)threadIdx.x, rd) : 0.0f;            \
    asm volatile("" : "+f"(f_pre))

/* attn_prep + attention_short in ONE launch (option attn_fuse bit 1): block h (q head h) takes its q, k and
 * v rows from attn_prep_rows and the current position's K and V from them (attn_short_scan LAST), then
 * attends as attention_short. Why: attn_prep's launch is a dependency of its own between the q/k/v GEMV
 * and the attention (trace: ~5.4 us per attention layer, 0.086 ms per 27B token), during which the out
 * projection's 18 MB preload has little to overlap. Same bits as attn_prep + attention_short.
 * hd 128 or 256; dynamic smem: (AS_WARPS + 3) * hd floats. */
template <int HD4>
__global__ void __launch_bounds__(ATTN_THREADS) attention_short_prep_kernel(
    const float *qg, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *__restrict__ kc, float *__restrict__ vc, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nh,
    int nkv, int hd, int rd, float base, float eps, float scale, const int32_t *pos)
{
    extern __shared__ float sm[]; /* (AS_WARPS, hd) the warps' accumulators, then q, k and v rows (3, hd) */
    __shared__ float wm[AS_WARPS], wl[AS_WARPS], sh[32];
    const int h = blockIdx.x, grp = nh / nkv, kvh = h / grp, wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *rq = sm + (size_t)AS_WARPS * hd, *rk = rq + hd, *rv = rk + hd;
    ATTN_PREP_EARLY();
    kc_pdl_begin();
    float gv[HD4 > 2 ? 2 : 1];
    const int p = attn_prep_rows(qg, ak, av, wq, wk, f_pre, rq, rk, rv, sh, kc, vc, h, kvh, nkv, hd, rd, eps, pos,
                                 h % grp == 0, true, gv[0]);
    float4 qv[HD4];
#pragma unroll
    for (int j = 0; j < HD4; j++) qv[j] = ((const float4 *)rq)[lane + 32 * j];
    float l, m;
    float4 acc[HD4];
    attn_short_scan<HD4, true>(qv, kc + (size_t)kvh * hd, vc + (size_t)kvh * hd, (size_t)nkv * hd, p + 1, wid,
                               AS_WARPS, scale, m, l, acc, rk, rv);
    attn_short_finish<HD4>(sm, wm, wl, hd, m, l, acc, gv, h, out, oq);
}

/* attention_short over a thread-block cluster of C blocks per q head (option attn_cl, C =
 * attn_clsize, 2..8): block r of the head's cluster takes the positions of warps r*8 .. r*8+7 of a
 * C*8-warp scan (position t to warp t mod 8C), merges its 8 warps in shared memory as attention_short
 * does (max M_b, sum L_b, the unnormalised accumulator a_b (hd)), and after a cluster barrier block 0
 * reads every block's (M_b, L_b, a_b) through distributed shared memory, merges them, applies the gate
 * and writes (and quantises) the output; a second barrier keeps each block's shared memory alive until
 * block 0 has read it. Why: one block per head streams n rows of K and V per head (bench: 16.8 us at
 * n = 512, the split kernel 14.6); C blocks per head cut each block's rows by C with one barrier and C
 * shared-memory reads instead of the split kernel's partials, fence, ticket and merge (PERF-NOTES v20).
 * grid nh*C, cluster C; dynamic smem: 9 * hd floats. Within rounding of kc_attention. */
#define AS_CL_MAX 8
__device__ __forceinline__ float ld_dsmem_f32(const float *p, unsigned rank)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
__device__ __forceinline__ void cluster_sync_all(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
/* the halves of cluster_sync_all, for the push merges (attn_kvc_push, attn_cl_push). Phase 1: each block arrives
 * early and waits before its first store into another block's shared memory (the guide's rule: every block of
 * the cluster has started; attention_kvc: every block past what the stores overwrite). Phase 2: arrive with
 * release after the stores, the receivers wait with acquire. A block that exits counts as arrived. */
__device__ __forceinline__ void cluster_arrive_relaxed(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_arrive_release(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait_acquire(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
/* *p of block `rank` of the cluster <- v (p: this block's address of the same shared variable) */
__device__ __forceinline__ void st_dsmem_f32(float *p, unsigned rank, float v)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(ra), "f"(v) : "memory");
}
__device__ __forceinline__ void st_dsmem_f4(float *p, unsigned rank, float4 v)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(ra), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
}
/* attention_short_cl's end: the block's warps merged (max M_b, sum L_b, accumulator a_b in sm after the
 * warps'), a cluster barrier, block 0 (rank) merges the C blocks through distributed shared memory, gates by
 * gv and writes (and quantises) head h's output; a second barrier keeps every block's shared memory alive
 * until block 0 has read it. sm (AS_WARPS + 1, hd), wm, wl (AS_WARPS,), bml (2,): shared. PUSH (the _push kernels,
 * option attn_cl_push, PERF-NOTES v40): each block stores its (M_b, L_b, a_b) into block 0's recv (C, hd + 4) (the
 * dynamic shared memory after the kernel's own), one barrier, block 0 merges from its own shared memory and the
 * others exit: the same sums in the same order, the same bits. */
template <int HD4, bool PUSH = false>
__device__ __forceinline__ void attn_short_cl_finish(float *sm, float *wm, float *wl, float *bml, int hd, float m,
                                                     float l, const float4 (&acc)[HD4],
                                                     const float (&gv)[HD4 > 2 ? 2 : 1], unsigned rank, unsigned C,
                                                     int h, float *__restrict__ out, kc_q8blk *__restrict__ oq,
                                                     float *recv = NULL)
{
    float ew[AS_WARPS], Lb;
    const float Mb = attn_short_merge_warps<HD4>(sm, wm, wl, hd, m, l, acc, ew, Lb);
    if constexpr (PUSH) { /* the kernel arrived (relaxed) at phase 1 at its top */
        const int rw = hd + 4; /* a row of recv (C, hd + 4): M, L, 2 unused, a */
        cluster_wait_acquire(); /* phase 1: every block of the cluster has started */
        float *ent = recv + (size_t)rank * rw;
        for (int d = threadIdx.x; d < hd; d += ATTN_THREADS) {
            float a = 0.0f;
#pragma unroll
            for (int w = 0; w < AS_WARPS; w++) a += ew[w] * sm[(size_t)w * hd + d];
            st_dsmem_f32(ent + 4 + d, 0u, a);
        }
        if (threadIdx.x == 0) {
            st_dsmem_f32(ent, 0u, Mb);
            st_dsmem_f32(ent + 1, 0u, Lb);
        }
        cluster_arrive_release(); /* phase 2: this block's partial pushed */
        if (rank != 0) return;
        cluster_wait_acquire(); /* every block's partial in recv */
        float Mr[AS_CL_MAX], er[AS_CL_MAX], M = -INFINITY, L = 0.0f;
#pragma unroll
        for (int r = 0; r < AS_CL_MAX; r++)
            if (r < (int)C) {
                Mr[r] = recv[(size_t)r * rw];
                M = fmaxf(M, Mr[r]);
            }
#pragma unroll
        for (int r = 0; r < AS_CL_MAX; r++)
            if (r < (int)C) {
                er[r] = Mr[r] == -INFINITY ? 0.0f : expf(Mr[r] - M);
                L += er[r] * recv[(size_t)r * rw + 1];
            }
        const float inv = 1.0f / L;
#pragma unroll
        for (int i = 0; i < (HD4 > 2 ? 2 : 1); i++) {
            const int d = threadIdx.x + ATTN_THREADS * i;
            if (d < hd) { /* warp-uniform: hd % 32 == 0 */
                float a = 0.0f;
#pragma unroll
                for (int r = 0; r < AS_CL_MAX; r++)
                    if (r < (int)C) a += er[r] * recv[(size_t)r * rw + 4 + d];
                const float o = a * inv * (1.0f / (1.0f + expf(-gv[i])));
                out[(size_t)h * hd + d] = o;
                if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
            }
        }
    } else {
        float *ab = sm + (size_t)AS_WARPS * hd; /* (hd,) the block's accumulator */
        for (int d = threadIdx.x; d < hd; d += ATTN_THREADS) {
            float a = 0.0f;
#pragma unroll
            for (int w = 0; w < AS_WARPS; w++) a += ew[w] * sm[(size_t)w * hd + d];
            ab[d] = a;
        }
        if (threadIdx.x == 0) {
            bml[0] = Mb;
            bml[1] = Lb;
        }
        cluster_sync_all(); /* every block's (M_b, L_b, a_b) written and visible to the cluster */
        if (rank == 0) {
            float Mr[AS_CL_MAX], er[AS_CL_MAX], M = -INFINITY, L = 0.0f;
#pragma unroll
            for (int r = 0; r < AS_CL_MAX; r++)
                if (r < (int)C) {
                    Mr[r] = ld_dsmem_f32(&bml[0], (unsigned)r);
                    M = fmaxf(M, Mr[r]);
                }
#pragma unroll
            for (int r = 0; r < AS_CL_MAX; r++)
                if (r < (int)C) {
                    er[r] = Mr[r] == -INFINITY ? 0.0f : expf(Mr[r] - M);
                    L += er[r] * ld_dsmem_f32(&bml[1], (unsigned)r);
                }
            const float inv = 1.0f / L;
#pragma unroll
            for (int i = 0; i < (HD4 > 2 ? 2 : 1); i++) {
                const int d = threadIdx.x + ATTN_THREADS * i;
                if (d < hd) { /* warp-uniform: hd % 32 == 0 */
                    float a = 0.0f;
#pragma unroll
                    for (int r = 0; r < AS_CL_MAX; r++)
                        if (r < (int)C) a += er[r] * ld_dsmem_f32(ab + d, (unsigned)r);
                    const float o = a * inv * (1.0f / (1.0f + expf(-gv[i])));
                    out[(size_t)h * hd + d] = o;
                    if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
                }
            }
        }
        cluster_sync_all(); /* block 0 has read every block's shared memory */
    }
}

template <int HD4, bool PUSH>
__device__ __forceinline__ void attention_short_cl_run(const float *q, const float *kc, const float *vc,
                                                       const float *gate, int gs, float *__restrict__ out,
                                                       kc_q8blk *__restrict__ oq, int nh, int nkv, int hd, float scale,
                                                       const int32_t *pos)
{
    if constexpr (PUSH) cluster_arrive_relaxed(); /* phase 1 of the push merge: this block has started */
    kc_pdl_begin();
    const int n = *pos + 1;
    extern __shared__ float sm[]; /* (AS_WARPS + 1, hd): the warps' accumulators, then the block's */
    __shared__ float wm[AS_WARPS], wl[AS_WARPS], bml[2];
    unsigned rank = 0, C = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(C));
#endif
    const int h = blockIdx.x / (int)C, kvh = h / (nh / nkv), wid = threadIdx.x >> 5;
    const size_t rs = (size_t)nkv * hd; /* cache row stride */
    float4 qv[HD4];
    float gv[HD4 > 2 ? 2 : 1]; /* block 0 only applies the gate */
    attn_short_load_q_gate<HD4>(q, gate, gs, h, hd, rank, qv, gv);
    float l, m;
    float4 acc[HD4];
    attn_short_scan<HD4>(qv, kc + (size_t)kvh * hd, vc + (size_t)kvh * hd, rs, n, (int)rank * AS_WARPS + wid,
                         AS_WARPS * (int)C, scale, m, l, acc);
    attn_short_cl_finish<HD4, PUSH>(sm, wm, wl, bml, hd, m, l, acc, gv, rank, C, h, out, oq,
                                    sm + (size_t)(AS_WARPS + 1) * hd);
}

template <int HD4>
__global__ void __launch_bounds__(ATTN_THREADS) attention_short_cl_kernel(const float *q, const float *kc,
                                                                          const float *vc, const float *gate, int gs,
                                                                          float *__restrict__ out,
                                                                          kc_q8blk *__restrict__ oq, int nh, int nkv,
                                                                          int hd, float scale, const int32_t *pos)
{
    attention_short_cl_run<HD4, false>(q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale, pos);
}

/* with the push merge (option attn_cl_push): dynamic smem C * (hd + 4) floats more (recv) */
template <int HD4>
__global__ void __launch_bounds__(ATTN_THREADS) attention_short_cl_push_kernel(const float *q, const float *kc,
                                                                               const float *vc, const float *gate,
                                                                               int gs, float *__restrict__ out,
                                                                               kc_q8blk *__restrict__ oq, int nh,
                                                                               int nkv, int hd, float scale,
                                                                               const int32_t *pos)
{
    attention_short_cl_run<HD4, true>(q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale, pos);
}

/* attn_prep + attention_short_cl in ONE launch (option attn_fuse bit 2): every block of q head h's cluster
 * takes the rows from attn_prep_rows (block 0 of the first q head of each kv head appends them), the block
 * that scans the current position takes its K and V from them, then as attention_short_cl. Same bits as
 * attn_prep + attention_short_cl. hd 128 or 256; grid nh*C, cluster C; dynamic smem: (AS_WARPS + 4) * hd
 * floats. */
template <int HD4, bool PUSH>
__device__ __forceinline__ void attention_short_cl_prep_run(
    const float *qg, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *__restrict__ kc, float *__restrict__ vc, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nh,
    int nkv, int hd, int rd, float base, float eps, float scale, const int32_t *pos)
{
    if constexpr (PUSH) cluster_arrive_relaxed(); /* phase 1 of the push merge: this block has started */
    extern __shared__ float sm[]; /* (AS_WARPS + 1, hd) as attention_short_cl, then q, k and v rows (3, hd) */
    __shared__ float wm[AS_WARPS], wl[AS_WARPS], bml[2], sh[32];
    unsigned rank = 0, C = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(C));
#endif
    const int h = blockIdx.x / (int)C, grp = nh / nkv, kvh = h / grp, wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *rq = sm + (size_t)(AS_WARPS + 1) * hd, *rk = rq + hd, *rv = rk + hd;
    ATTN_PREP_EARLY();
    kc_pdl_begin();
    float gv[HD4 > 2 ? 2 : 1]; /* block 0 only applies the gate */
    const int p = attn_prep_rows(qg, ak, av, wq, wk, f_pre, rq, rk, rv, sh, kc, vc, h, kvh, nkv, hd, rd, eps, pos,
                                 h % grp == 0 && rank == 0, rank == 0, gv[0]);
    float4 qv[HD4];
#pragma unroll
    for (int j = 0; j < HD4; j++) qv[j] = ((const float4 *)rq)[lane + 32 * j];
    float l, m;
    float4 acc[HD4];
    attn_short_scan<HD4, true>(qv, kc + (size_t)kvh * hd, vc + (size_t)kvh * hd, (size_t)nkv * hd, p + 1,
                               (int)rank * AS_WARPS + wid, AS_WARPS * (int)C, scale, m, l, acc, rk, rv);
    attn_short_cl_finish<HD4, PUSH>(sm, wm, wl, bml, hd, m, l, acc, gv, rank, C, h, out, oq,
                                    sm + (size_t)(AS_WARPS + 4) * hd);
}

template <int HD4>
__global__ void __launch_bounds__(ATTN_THREADS) attention_short_cl_prep_kernel(
    const float *qg, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *__restrict__ kc, float *__restrict__ vc, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nh,
    int nkv, int hd, int rd, float base, float eps, float scale, const int32_t *pos)
{
    attention_short_cl_prep_run<HD4, false>(qg, ak, av, qnw, knw, kc, vc, out, oq, nh, nkv, hd, rd, base, eps, scale,
                                            pos);
}

/* with the push merge (option attn_cl_push): dynamic smem C * (hd + 4) floats more (recv) */
template <int HD4>
__global__ void __launch_bounds__(ATTN_THREADS) attention_short_cl_prep_push_kernel(
    const float *qg, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *__restrict__ kc, float *__restrict__ vc, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nh,
    int nkv, int hd, int rd, float base, float eps, float scale, const int32_t *pos)
{
    attention_short_cl_prep_run<HD4, true>(qg, ak, av, qnw, knw, kc, vc, out, oq, nh, nkv, hd, rd, base, eps, scale,
                                           pos);
}

/* The same split attention with one block per (kv head, split) for all G = nh/nkv q-heads that share
 * the kv head (option attn=gqa): each K and V row of the chunk is read ONCE and used by the G heads,
 * where attention_split_kernel's G blocks per kv head each read it (at n = 4096 the 27B's 16 layers
 * read 6 x 34 MB through L2 per layer: ~47 us per layer alone, PERF-NOTES v17). Grid (nkv, ns), ns =
 * kc_attention_splits(ctx), AG_THREADS threads: with 256 the block's dependent round trips and the
 * one merging block's arithmetic made it 2-5x slower than attention_split (v17 row 2b).
 * QK: LP = hd/64 lanes per position (each 16 float4 of the row, all loads in flight at once), 32/LP
 * positions per warp at a time, the G dots reduced over the LP lanes (one warp_sum per (position,
 * head) before: 7 us of shuffle chains at n = 16, v17 row 2c). Softmax: warp g
 * head g. V: lane-group of npg = AG_THREADS/(hd/4) lanes (npg | 32) per column float4: lane pg of the
 * group accumulates the G heads over positions pg, pg + npg, ..., AG_VU rows in flight, then the
 * group's sums by xor butterfly (no shared memory). Partials (m, l, o) per q head and split in part
 * (nh, ns, hd + 2) as attention_split_kernel; the last block of a kv head (ticket cnt[kvh]) merges
 * its G heads, each thread AG_SU splits of each of its outputs in flight. A split takes at least
 * AG_CMIN positions, so up to n = AG_CMIN one block per kv head computes the output itself (no
 * partials, ticket or merge; the merge's arithmetic with one split). Shapes: kc_attention_gqa_ok.
 * dynamic smem: (G*hd + G*cmax) floats. Out within rounding of the CPU twin (other sums). */
#define AG_THREADS 512
#define AG_MAXG 8 /* q heads per kv head */
#define AG_VU 8   /* V rows per lane in flight */
#define AG_SU 16  /* merge: splits per output in flight */
#define AG_CMIN 64 /* positions per split at least: n <= 64 takes one block per kv head and no merge */
#define AG_MAXP 4 /* merge: outputs per thread (G*hd <= AG_MAXP*AG_THREADS) */
#ifdef KC_AG_DBG /* bench_gemv only: skip phases of attention_gqa_kernel (1 QK, 2 V, 4 merge loads, 8 all work) */
__device__ int g_ag_dbg;
#define AG_SKIP(b) (g_ag_dbg & (b))
#else
#define AG_SKIP(b) 0
#endif
template <int NQ4>
__global__ void __launch_bounds__(AG_THREADS, 1) attention_gqa_kernel(const float *q, const float *kc, const float *vc,
                                                                      const float *gate, int gs,
                                                                      float *__restrict__ out,
                                                                      kc_q8blk *__restrict__ oq, int nh, int nkv,
                                                                      int hd, float scale, const int32_t *pos,
                                                                      float *__restrict__ part,
                                                                      unsigned int *__restrict__ cnt, int cmax)
{
    kc_pdl_begin();
    extern __shared__ __align__(16) float agsm[];
    __shared__ float invg[AG_MAXG], wsg[AG_MAXG][32];
    __shared__ int last;
    const int kvh = blockIdx.x, sp = blockIdx.y, ns = gridDim.y, G = nh / nkv;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int n = *pos + 1, cs = (n + ns - 1) / ns, c = cs > AG_CMIN ? cs : AG_CMIN; /* c <= cmax for n <= ctx */
    const int t0 = sp * c, t1 = n < t0 + c ? n : t0 + c;
    const int nsu = (n + c - 1) / c; /* splits that hold positions, <= ns <= ATTN_MAX_SPLITS */
    float *sq = agsm, *sc = agsm + G * hd; /* (G, hd), (G, cmax) */
    const size_t rs = (size_t)nkv * hd;   /* cache row stride */
    if (t0 < n && !AG_SKIP(8)) {
        const float4 *q4 = (const float4 *)(q + (size_t)kvh * G * hd);
        for (int i = threadIdx.x; i < G * hd / 4; i += blockDim.x) ((float4 *)sq)[i] = q4[i];
        __syncthreads();
        /* lane r of the LP lanes of position tb + j holds float4s r, r + LP, ... of its K row (16 each) */
        constexpr int LP = 2 * NQ4, PPW = 32 / LP, KF = 16;
        const int j = lane / LP, r = lane % LP;
        for (int tb = t0 + wid * PPW; tb < t1 && !AG_SKIP(1); tb += nw * PPW) {
            const int t = tb + j;
            float4 kr[KF];
            const float4 *krow = (const float4 *)(kc + (size_t)t * rs + (size_t)kvh * hd);
#pragma unroll
            for (int i = 0; i < KF; i++) kr[i] = t < t1 ? krow[r + LP * i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            float sg[AG_MAXG];
#pragma unroll
            for (int g = 0; g < AG_MAXG; g++) {
                sg[g] = 0.0f;
                if (g >= G) continue;
                const float4 *qg4 = (const float4 *)(sq + g * hd);
#pragma unroll
                for (int i = 0; i < KF; i++) {
                    const float4 a = qg4[r + LP * i];
                    sg[g] += a.x * kr[i].x + a.y * kr[i].y + a.z * kr[i].z + a.w * kr[i].w;
                }
            }
#pragma unroll
            for (int g = 0; g < AG_MAXG; g++) {
                if (g >= G) break;
#pragma unroll
                for (int off = 1; off < LP; off <<= 1) sg[g] += __shfl_xor_sync(0xffffffffu, sg[g], off);
                if (r == 0 && t < t1) sc[g * cmax + t - t0] = sg[g] * scale;
            }
        }
        __syncthreads();
        if (wid < G) { /* head wid's softmax over the chunk */
            const int g = wid;
            float m = -INFINITY;
            for (int t = lane; t < t1 - t0; t += 32) m = fmaxf(m, sc[g * cmax + t]);
#pragma unroll
            for (int off = 16; off; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
            float sum = 0.0f;
            for (int t = lane; t < t1 - t0; t += 32) {
                const float p = expf(sc[g * cmax + t] - m);
                sc[g * cmax + t] = p;
                sum += p;
            }
            sum = warp_sum(sum);
            if (lane == 0 && nsu > 1) {
                float *pp = part + ((size_t)(kvh * G + g) * ns + sp) * (hd + 2);
                pp[0] = m;
                pp[1] = sum;
            }
            if (lane == 0) invg[g] = 1.0f / sum; /* nsu == 1: the merge's 1/L (L = 1 * l) */
        }
        __syncthreads();
        {
            const int npg = blockDim.x / (hd / 4), pg = threadIdx.x % npg, col = threadIdx.x / npg;
            float4 acc[AG_MAXG];
#pragma unroll
            for (int g = 0; g < AG_MAXG; g++) acc[g] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            const float *vbase = vc + (size_t)kvh * hd + 4 * col;
            for (int tb = t0 + pg; tb < t1 && !AG_SKIP(2); tb += npg * AG_VU) {
                float4 v[AG_VU];
#pragma unroll
                for (int u = 0; u < AG_VU; u++)
                    if (tb + u * npg < t1) v[u] = *(const float4 *)(vbase + (size_t)(tb + u * npg) * rs);
#pragma unroll
                for (int u = 0; u < AG_VU; u++) {
                    const int t = tb + u * npg;
                    if (t >= t1) break;
#pragma unroll
                    for (int g = 0; g < AG_MAXG; g++) {
                        if (g >= G) break;
                        const float p = sc[g * cmax + t - t0];
                        acc[g].x += p * v[u].x;
                        acc[g].y += p * v[u].y;
                        acc[g].z += p * v[u].z;
                        acc[g].w += p * v[u].w;
                    }
                }
            }
            /* the lane group's sums (every lane of the warp takes part: npg | 32) */
#pragma unroll
            for (int g = 0; g < AG_MAXG; g++) {
                if (g >= G) break;
                for (int off = 1; off < npg; off <<= 1) {
                    acc[g].x += __shfl_xor_sync(0xffffffffu, acc[g].x, off);
                    acc[g].y += __shfl_xor_sync(0xffffffffu, acc[g].y, off);
                    acc[g].z += __shfl_xor_sync(0xffffffffu, acc[g].z, off);
                    acc[g].w += __shfl_xor_sync(0xffffffffu, acc[g].w, off);
                }
                if (pg == 0 && nsu > 1) {
                    float *po = part + ((size_t)(kvh * G + g) * ns + sp) * (hd + 2) + 2 + 4 * col;
                    po[0] = acc[g].x;
                    po[1] = acc[g].y;
                    po[2] = acc[g].z;
                    po[3] = acc[g].w;
                } else if (pg == 0) { /* the only split: the output itself, as the merge computes it
                                       * (weight 1, acc * (1/L) * sigmoid(gate)), staged in sq for oq */
                    const int h = kvh * G + g;
                    const float a[4] = {acc[g].x, acc[g].y, acc[g].z, acc[g].w};
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int d = 4 * col + e;
                        const float gv = gate[(size_t)h * gs + d];
                        const float o = a[e] * invg[g] * (1.0f / (1.0f + expf(-gv)));
                        out[(size_t)h * hd + d] = o;
                        sq[g * hd + d] = o;
                    }
                }
            }
        }
        if (nsu == 1) {
            if (oq) {
                __syncthreads();
                for (int i = threadIdx.x; i < G * hd; i += blockDim.x) /* warp-uniform: G*hd % 32 == 0 */
                    q8_quantize_warp(sq[i], oq + ((size_t)kvh * G * hd + i) / 32);
            }
            return;
        }
    }
    if (nsu == 1) return; /* an empty split of a one-split step: no partial, no ticket */
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(&cnt[kvh], 1u) == (unsigned)ns - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    /* the merge of the G heads: attention_split_kernel's per head (M exact, L summed over s in order,
     * each output's sum over s in order) */
    if (wid < G) {
        const int g = wid;
        const float *ph = part + (size_t)(kvh * G + g) * ns * (hd + 2);
        const float ms = lane < nsu ? __ldcg(ph + (size_t)lane * (hd + 2)) : -INFINITY;
        const float ls = lane < nsu ? __ldcg(ph + (size_t)lane * (hd + 2) + 1) : 0.0f;
        float M = ms;
#pragma unroll
        for (int off = 16; off; off >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
        const float w = lane < nsu ? expf(ms - M) : 0.0f;
        wsg[g][lane] = w;
        float L = 0.0f;
        for (int s = 0; s < nsu; s++) L += __shfl_sync(0xffffffffu, w, s) * __shfl_sync(0xffffffffu, ls, s);
        if (lane == 0) invg[g] = 1.0f / L;
    }
    __syncthreads();
    const int nout = G * hd;
    int og[AG_MAXP];
    const float *opp[AG_MAXP];
    float acc[AG_MAXP];
#pragma unroll
    for (int k = 0; k < AG_MAXP; k++) { /* output i = threadIdx.x + k*blockDim.x: head og[k], its split-0 value */
        const int i = threadIdx.x + k * blockDim.x, g = i < nout ? i / hd : 0;
        og[k] = g;
        opp[k] = part + (size_t)(kvh * G + g) * ns * (hd + 2) + 2 + (i - g * hd);
        acc[k] = 0.0f;
    }
    for (int s0 = 0; s0 < nsu; s0 += AG_SU) {
        float pv[AG_MAXP][AG_SU];
#pragma unroll
        for (int k = 0; k < AG_MAXP; k++)
#pragma unroll
            for (int u = 0; u < AG_SU; u++)
                pv[k][u] = threadIdx.x + k * blockDim.x < nout && s0 + u < nsu && !AG_SKIP(4)
                               ? __ldcg(opp[k] + (size_t)(s0 + u) * (hd + 2))
                               : 0.0f;
#pragma unroll
        for (int k = 0; k < AG_MAXP; k++)
#pragma unroll
            for (int u = 0; u < AG_SU; u++)
                if (threadIdx.x + k * blockDim.x < nout && s0 + u < nsu) acc[k] += wsg[og[k]][s0 + u] * pv[k][u];
    }
#pragma unroll
    for (int k = 0; k < AG_MAXP; k++) {
        const int i = threadIdx.x + k * blockDim.x; /* warp-uniform bound: G*hd % 32 == 0 */
        if (i >= nout) break;
        const int h = kvh * G + og[k], d = i - og[k] * hd;
        const float gv = gate[(size_t)h * gs + d];
        const float o = acc[k] * invg[og[k]] * (1.0f / (1.0f + expf(-gv)));
        out[(size_t)h * hd + d] = o;
        if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
    }
    if (threadIdx.x == 0) cnt[kvh] = 0;
}

/* positions per split at most (n = ctx) */
static int attention_gqa_cmax(int ctx)
{
    const int ns = kc_attention_splits(ctx), c = (ctx + ns - 1) / ns;
    return c > AG_CMIN ? c : AG_CMIN;
}

static size_t attention_gqa_smem(int nh, int nkv, int hd, int ctx)
{
    const int cmax = attention_gqa_cmax(ctx), G = nh / nkv;
    return ((size_t)G * hd + (size_t)G * cmax) * sizeof(float);
}

int kc_attention_gqa_ok(int nh, int nkv, int hd, int ctx)
{
    if (ctx < 1 || nkv < 1 || nh % nkv || (hd != 128 && hd != 256 && hd != 512)) return 0;
    const int G = nh / nkv;
    return G <= AG_MAXG && G * hd <= AG_MAXP * AG_THREADS && attention_gqa_smem(nh, nkv, hd, ctx) <= 48 * 1024;
}

cudaError_t kc_attention_gqa(const float *q, const float *kc, const float *vc, const float *gate, int gs, float *out,
                             kc_q8blk *oq, int nh, int nkv, int hd, int ctx, float scale, const int32_t *pos,
                             float *part, unsigned int *cnt, cudaStream_t st)
{
    if (!kc_attention_gqa_ok(nh, nkv, hd, ctx)) return cudaErrorInvalidValue;
    const int ns = kc_attention_splits(ctx), cmax = attention_gqa_cmax(ctx);
    const dim3 grid(nkv, ns);
    const size_t smem = attention_gqa_smem(nh, nkv, hd, ctx);
    if (hd == 128)
        kc_launch(attention_gqa_kernel<1>, grid, AG_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale,
                  pos, part, cnt, cmax);
    else if (hd == 256)
        kc_launch(attention_gqa_kernel<2>, grid, AG_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale,
                  pos, part, cnt, cmax);
    else
        kc_launch(attention_gqa_kernel<4>, grid, AG_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale,
                  pos, part, cnt, cmax);
    return cudaGetLastError();
}

int kc_attention_splits(int ctx)
{
    const int ns = (ctx + ATTN_MIN_CHUNK - 1) / ATTN_MIN_CHUNK;
    return ns < 1 ? 1 : ns > ATTN_MAX_SPLITS ? ATTN_MAX_SPLITS : ns;
}

cudaError_t kc_attention_split(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                               float *out, kc_q8blk *oq, int nh, int nkv, int hd, int ctx, float scale,
                               const int32_t *pos, float *part, unsigned int *cnt, cudaStream_t st)
{
    if (ctx < 1) return cudaErrorInvalidValue;
    const int ns = kc_attention_splits(ctx), cmax = (ctx + ns - 1) / ns;
    const size_t smem = (size_t)(hd + cmax + ns) * sizeof(float);
    if (smem > 48 * 1024 || (oq && hd % 32) || nh % nkv) return cudaErrorInvalidValue;
    kc_launch(attention_split_kernel, dim3(nh, ns), ATTN_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd,
              scale, pos, part, cnt, cmax);
    return cudaGetLastError();
}

int kc_attention_short_ok(int nh, int nkv, int hd)
{
    return nkv >= 1 && nh % nkv == 0 && (hd == 128 || hd == 256 || hd == 512);
}

cudaError_t kc_attention_short(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                               float *out, kc_q8blk *oq, int nh, int nkv, int hd, float scale, const int32_t *pos,
                               cudaStream_t st)
{
    if (!kc_attention_short_ok(nh, nkv, hd)) return cudaErrorInvalidValue;
    const size_t smem = (size_t)AS_WARPS * hd * sizeof(float);
    if (hd == 128)
        kc_launch(attention_short_kernel<1>, nh, ATTN_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd,
                  scale, pos);
    else if (hd == 256)
        kc_launch(attention_short_kernel<2>, nh, ATTN_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd,
                  scale, pos);
    else
        kc_launch(attention_short_kernel<4>, nh, ATTN_THREADS, smem, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd,
                  scale, pos);
    return cudaGetLastError();
}

int kc_attention_short_prep_ok(int nh, int nkv, int hd, int rd)
{
    return kc_attention_short_ok(nh, nkv, hd) && hd <= ATTN_THREADS && rd >= 0 && rd <= hd && rd % 2 == 0;
}

cudaError_t kc_attention_short_prep(const float *qg, const float *ak, const float *av, const float *qnw,
                                    const float *knw, float *kc, float *vc, float *out, kc_q8blk *oq, int nh, int nkv,
                                    int hd, int rd, float base, float eps, float scale, const int32_t *pos,
                                    cudaStream_t st)
{
    if (!kc_attention_short_prep_ok(nh, nkv, hd, rd)) return cudaErrorInvalidValue;
    const size_t smem = (size_t)(AS_WARPS + 3) * hd * sizeof(float);
    if (hd == 128)
        kc_launch(attention_short_prep_kernel<1>, nh, ATTN_THREADS, smem, st, qg, ak, av, qnw, knw, kc, vc, out, oq, nh,
                  nkv, hd, rd, base, eps, scale, pos);
    else
        kc_launch(attention_short_prep_kernel<2>, nh, ATTN_THREADS, smem, st, qg, ak, av, qnw, knw, kc, vc, out, oq, nh,
                  nkv, hd, rd, base, eps, scale, pos);
    return cudaGetLastError();
}

cudaError_t kc_attention_short_cl_prep(const float *qg, const float *ak, const float *av, const float *qnw,
                                       const float *knw, float *kc, float *vc, float *out, kc_q8blk *oq, int nh,
                                       int nkv, int hd, int csize, int rd, float base, float eps, float scale,
                                       const int32_t *pos, int push, cudaStream_t st)
{
    if (!kc_attention_short_prep_ok(nh, nkv, hd, rd) || csize < 2 || csize > AS_CL_MAX) return cudaErrorInvalidValue;
    const size_t smem = ((size_t)(AS_WARPS + 4) * hd + (push ? (size_t)csize * (hd + 4) : 0)) * sizeof(float);
    const dim3 grid((unsigned)(nh * csize));
#define ASCP_LAUNCH(K_)                                                                                            \
    if (hd == 128)                                                                                                 \
        kc_launch_cluster(K_<1>, grid, ATTN_THREADS, smem, csize, st, qg, ak, av, qnw, knw, kc, vc, out, oq, nh, nkv,   \
                          hd, rd, base, eps, scale, pos);                                                          \
    else                                                                                                           \
        kc_launch_cluster(K_<2>, grid, ATTN_THREADS, smem, csize, st, qg, ak, av, qnw, knw, kc, vc, out, oq, nh, nkv,   \
                          hd, rd, base, eps, scale, pos);
    if (push)
        ASCP_LAUNCH(attention_short_cl_prep_push_kernel)
    else
        ASCP_LAUNCH(attention_short_cl_prep_kernel)
#undef ASCP_LAUNCH
    return cudaGetLastError();
}

cudaError_t kc_attention_short_cl(const float *q, const float *kc, const float *vc, const float *gate, int gs,
                                  float *out, kc_q8blk *oq, int nh, int nkv, int hd, int csize, float scale,
                                  const int32_t *pos, int push, cudaStream_t st)
{
    if (!kc_attention_short_ok(nh, nkv, hd) || csize < 2 || csize > AS_CL_MAX) return cudaErrorInvalidValue;
    const size_t smem = ((size_t)(AS_WARPS + 1) * hd + (push ? (size_t)csize * (hd + 4) : 0)) * sizeof(float);
    const dim3 grid((unsigned)(nh * csize));
#define ASC_LAUNCH(K_)                                                                                             \
    if (hd == 128)                                                                                                 \
        kc_launch_cluster(K_<1>, grid, ATTN_THREADS, smem, csize, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale,  \
                          pos);                                                                                    \
    else if (hd == 256)                                                                                            \
        kc_launch_cluster(K_<2>, grid, ATTN_THREADS, smem, csize, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale,  \
                          pos);                                                                                    \
    else                                                                                                           \
        kc_launch_cluster(K_<4>, grid, ATTN_THREADS, smem, csize, st, q, kc, vc, gate, gs, out, oq, nh, nkv, hd, scale,  \
                          pos);
    if (push)
        ASC_LAUNCH(attention_short_cl_push_kernel)
    else
        ASC_LAUNCH(attention_short_cl_kernel)
#undef ASC_LAUNCH
    return cudaGetLastError();
}


/* Attention by kv head over a thread-block cluster (option attn_kvc=C, PERF-NOTES v35): cluster kvh of C
 * blocks serves the G = nh / nkv q heads sharing kv head kvh; block r of it takes positions [r c, (r + 1) c)
 * below n (c = ceil(n / C) <= AKC_CMAX), so each K and V row is read ONCE per step, where the clustered
 * short attention reads it once per q head (6 x 34 MB through L2 per 27B layer at n = 4096: bench 37.5 us,
 * L2-bound). A producer warp streams the block's K rows, then its V rows, by bulk copies (a lane per 1 KB
 * row) into a ring of AKC_NS slots of AKC_P rows. Pass 1 (K): consumer warp w takes rows w and w + 16 of
 * each slot with the G q heads in registers (lane l: dims 4l + 128j, as attn_short_scan), and the 2 x G
 * partial dots are reduced across the warp together (one reduce-scatter of 16 sums, 16 shuffles, where one
 * sum at a time takes 5 each); the scores go to shared memory. Then the block's max per head, p = e^(s - M)
 * in place, L = sum p (fixed order). Pass 2 (V): each warp accumulates p x V for its rows and all G heads;
 * the 16 warps' accumulators are summed in order. The cluster's C partials (M_b, L_b, a_b) are merged
 * through distributed shared memory, head g by block g % C, gated, written and quantised.
 * PREP: attn_prep inside (the q heads and the current k row normed and rotated by a warp each, the last
 * block appending k and v; its current row taken from shared memory, never from the cache). q is then qg
 * (nh, 2 hd); else the prepared q (nh, hd) and the cache holds position n - 1.
 * hd 256, G 2..8 even; grid nkv * C, cluster C; dynamic smem AKC_SMEM (kc_attention_setup raises the limit).
 * Within rounding of kc_attention (other sums). */
#define AKC_WARPS 16 /* consumer warps; one producer warp after them */
#define AKC_THREADS (32 * (AKC_WARPS + 1))
#define AKC_P 32     /* rows per ring slot: 2 per consumer warp */
#define AKC_NS 4     /* ring slots */
#define AKC_ROW 1024 /* a K or V row's bytes (hd 256) */
#define AKC_CMAX 1024 /* positions per block at most */
#define AKC_RING (AKC_NS * AKC_P * AKC_ROW)
#define AKC_RECV_ROW 260 /* a pushed partial: M, L, 2 unused, a (256): a 16-byte aligned */
#define AKC_RECV 16       /* pushed partials a block receives at most: ceil(G / C) * C for G <= 8, C <= 16 */
/* barriers, ring (reused for the warps' accumulators: AKC_WARPS x 8 x 256 floats), scores (AKC_CMAX, 8),
 * q heads (8, 256), k and v rows (2, 256), the block's accumulators (8, 256), M_b and L_b (2, 8). The push
 * merge's receive rows (AKC_RECV, AKC_RECV_ROW) overlay q, k, v and the accumulators: a larger footprint cost
 * the step ~1.6% at prompt 4096 (v40 call 2: the out projection's blocks no longer fit beside this kernel's
 * under PDL) */
#define AKC_SMEM (Q8T_BAR_BYTES + AKC_RING + (AKC_CMAX * 8 + 8 * 256 + 2 * 256 + 8 * 256 + 16) * 4)
static_assert(AKC_RECV * AKC_RECV_ROW <= 8 * 256 + 2 * 256 + 8 * 256, "the receive rows fit q, k, v and sab");
static_assert(AKC_RING >= AKC_WARPS * 8 * 256 * 4, "the warps' accumulators fit the ring");
static_assert(AKC_SMEM <= 227 * 1024, "attention_kvc's shared memory fits an SM");
#ifdef KC_AKC_DBG /* bench_gemv only (--shape attntl): per-block timeline of attention_kvc's launches; the library
                   * never defines it, so its kernels are unchanged */
/* %globaltimer of consumer thread 0 at: 0 entry, 1 PDL wait passed, 2 q in shared memory, 3 first K slot landed,
 * 4 scores done (pass 1), 5 p x V done (pass 2), 6 the cluster's partials visible (first cluster barrier), 7 end */
typedef struct akc_dbg_rec {
    unsigned long long t[8];
    int sm, blk;
} akc_dbg_rec;
__device__ akc_dbg_rec *g_akc_dbg;
__device__ unsigned int g_akc_dbg_n, g_akc_dbg_cap;
#define AKC_T(i)                                                                                  \
    do {                                                                                          \
        if (threadIdx.x == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(akc_t[i]));        \
    } while (0)
#else
#define AKC_T(i) do { } while (0)
#endif

/* the 16 sums of v over the warp's 32 lanes, one per lane pair: lanes 2i and 2i + 1 get sum i */
__device__ __forceinline__ float warp_sum16_scatter(const float (&v)[16])
{
    const int lane = threadIdx.x & 31;
    float a8[8], a4[4], a2[2];
    bool hi = lane & 16;
#pragma unroll
    for (int u = 0; u < 8; u++) a8[u] = (hi ? v[u + 8] : v[u]) + __shfl_xor_sync(0xffffffffu, hi ? v[u] : v[u + 8], 16);
    hi = lane & 8;
#pragma unroll
    for (int u = 0; u < 4; u++) a4[u] = (hi ? a8[u + 4] : a8[u]) + __shfl_xor_sync(0xffffffffu, hi ? a8[u] : a8[u + 4], 8);
    hi = lane & 4;
#pragma unroll
    for (int u = 0; u < 2; u++) a2[u] = (hi ? a4[u + 2] : a4[u]) + __shfl_xor_sync(0xffffffffu, hi ? a4[u] : a4[u + 2], 4);
    hi = lane & 2;
    const float a1 = (hi ? a2[1] : a2[0]) + __shfl_xor_sync(0xffffffffu, hi ? a2[0] : a2[1], 2);
    return a1 + __shfl_xor_sync(0xffffffffu, a1, 1);
}

/* one 256-float row normed (RMS, weight w: the lane's dims 4l + 128j) and its first rd dims rotated (NeoX
 * pairs i, i + rd/2 at position p) by one warp, from x into y (shared) */
__device__ __forceinline__ void akc_prep_row(const float *x, const float4 (&w)[2], float *y, int rd, float base,
                                             float eps, int p)
{
    const int lane = threadIdx.x & 31, half = rd / 2;
    float4 v[2];
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < 2; j++) {
        v[j] = ((const float4 *)x)[lane + 32 * j];
        ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
    }
    const float inv = rsqrtf(warp_sum(ss) / 256.0f + eps);
#pragma unroll
    for (int j = 0; j < 2; j++)
        ((float4 *)y)[lane + 32 * j] = make_float4(v[j].x * inv * w[j].x, v[j].y * inv * w[j].y, v[j].z * inv * w[j].z,
                                                   v[j].w * inv * w[j].w);
    __syncwarp();
    for (int i = lane; i < half; i += 32) {
        float sn, cs;
        sincosf((float)p * rope_inv_freq(base, i, rd), &sn, &cs);
        const float a = y[i], b = y[i + half];
        y[i] = a * cs - b * sn;
        y[i + half] = b * cs + a * sn;
    }
    __syncwarp();
}

/* a consumer warp's two rows of ring slot s (lap `lap`): rows ta + wid and ta + wid + 16, this lane's dims 4l + 128j,
 * zero past t1; position n - 1 from `cur` (the current k or v row in shared memory, PREP); then the slot released */
template <bool PREP>
__device__ __forceinline__ void akc_take_rows(unsigned char *akcsm, const unsigned char *ring, const float *cur, int s,
                                              int lap, int ta, int n, int t1, float4 (&r)[2][2])
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    mbar_wait(smem_addr(akcsm + 8 * s), lap & 1);
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int t = ta + wid + AKC_WARPS * i;
        const float *src = PREP && t == n - 1 ? cur
                                              : (const float *)(ring + (size_t)s * AKC_P * AKC_ROW +
                                                                (size_t)(wid + AKC_WARPS * i) * AKC_ROW);
#pragma unroll
        for (int j = 0; j < 2; j++) r[i][j] = t < t1 ? ((const float4 *)src)[lane + 32 * j] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_addr(akcsm + 8 * (Q8T_MAX_STAGES + s)));
}

/* the ring's slot s <- rows [ta, ta + AKC_P) of kv head kvh from a cache's tensor map (kc_kv_tmap): one bulk
 * tensor copy of a (AKC_P, 256) box, completing AKC_P * AKC_ROW bytes on bar (rows past the cache's end zero) */
__device__ __forceinline__ void akc_tensor_rows(uint32_t dst, const kc_tmap *map, int kvh, int ta, uint32_t bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];" ::"r"(dst),
                 "l"((uint64_t)map), "r"(kvh * 256), "r"(ta), "r"(bar)
                 : "memory");
#endif
}

/* the push merge's last step for head h, thread d (dim d), from the cluster's merged (M, L, a): XS, the cluster's
 * partial to part (nh, S, hd + 2) and the split that takes the last ticket of cnt[h] merges all S in split order
 * (the same bits whichever split), the others return; then the output gated by gv, written and quantised. The
 * pull merge writes the same steps out in attention_kvc_body, as v35-v39 did, so that its kernels keep their PTX
 * (tools/ptx_diff.sh: inlined from here they did not, v40) */
template <bool XS>
__device__ __forceinline__ void akc_head_out(float M, float L, float a, float gv, int h, int d, int S,
                                             int sj, float *part, unsigned int *cnt, unsigned char *ring,
                                             float *__restrict__ out, kc_q8blk *__restrict__ oq)
{
    constexpr int hd = 256;
    if (XS) { /* the cluster's partial of head h; the split that takes the last ticket merges all S */
        float *pp = part + ((size_t)h * S + sj) * (hd + 2); /* part (nh, S, hd + 2): M, L, a */
        pp[2 + d] = a;
        if (d == 0) {
            pp[0] = M;
            pp[1] = L;
        }
        __threadfence();
        asm volatile("bar.sync 2, %0;" ::"r"(hd) : "memory");
        volatile int *last = (volatile int *)ring; /* the ring is free: every slot consumed */
        if (d == 0) *last = atomicAdd(&cnt[h], 1u) == (unsigned)S - 1;
        asm volatile("bar.sync 2, %0;" ::"r"(hd) : "memory");
        if (!*last) return;
        __threadfence();
        const float *ph = part + (size_t)h * S * (hd + 2);
        float Mx = -INFINITY, Lx = 0.0f, ax = 0.0f;
        for (int j = 0; j < S; j++) Mx = fmaxf(Mx, __ldcg(ph + (size_t)j * (hd + 2)));
        for (int j = 0; j < S; j++) { /* in split order: the same bits whichever split merges */
            const float Mj = __ldcg(ph + (size_t)j * (hd + 2));
            const float e = Mj == -INFINITY ? 0.0f : expf(Mj - Mx);
            Lx += e * __ldcg(ph + (size_t)j * (hd + 2) + 1);
            ax += e * __ldcg(ph + (size_t)j * (hd + 2) + 2 + d);
        }
        M = Mx;
        L = Lx;
        a = ax;
        if (d == 0) cnt[h] = 0; /* re-armed for the next launch */
    }
    const float o = a / L * (1.0f / (1.0f + expf(-gv)));
    out[(size_t)h * hd + d] = o;
    if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
}

/* attention_kvc's body; TM (attention_kvct_kernel, option attn_kvc_tm=1, PERF-NOTES v36): the producer fills
 * each slot by ONE tensor copy of the slot's 32 rows (tmk, tmv: the layer's K and V cache maps) where TM = 0
 * issues 32 bulk copies of a row each (v35-v36 bench: ~36 ns per copied row per block, whatever the block
 * computes: the copies' issue, not the bytes, bounded the block) */
template <int G, bool PREP, bool TM, bool XS = false, bool PUSH = false>
__device__ __forceinline__ void attention_kvc_body(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos, const kc_tmap *tmk, const kc_tmap *tmv,
    int S = 1, float *part = NULL, unsigned int *cnt = NULL)
{
    constexpr int hd = 256;
    extern __shared__ __align__(128) unsigned char akcsm[];
    unsigned char *ring = akcsm + Q8T_BAR_BYTES;
    float *sp = (float *)(ring + AKC_RING); /* (AKC_CMAX, 8) scores, then p */
    float *sq = sp + AKC_CMAX * 8;          /* (8, 256) the q heads */
    float *sk = sq + 8 * 256, *sv = sk + 256; /* (256,) each: the current k and v rows (PREP) */
    float *sab = sv + 256;                   /* (8, 256) the block's accumulators */
    float *sM = sab + 8 * 256, *sL = sM + 8; /* (8,) each */
    /* push: (AKC_RECV, AKC_RECV_ROW) the partials of the heads this block merges, over sq .. sab: free once this
     * block's pass 2 is done, when it arrives at phase 1 of the cluster barrier (release); every block waits on
     * phase 1 (acquire) before its first store into another's */
    float *recv = sq;
    unsigned rank = 0, C = 1;
#ifdef KC_AKC_DBG
    unsigned long long akc_t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#endif
    AKC_T(0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(C));
#endif
    /* XS: cluster blockIdx.x / C is split sj of kv head kvh, its blocks the slices sj C + rank of S C */
    const int kvh = XS ? (int)(blockIdx.x / C) / S : blockIdx.x / (int)C, lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int sj = XS ? (int)(blockIdx.x / C) % S : 0;
    const size_t rs = (size_t)nkv * hd;
    q8t_ring_init(akcsm, AKC_NS, AKC_WARPS);
    float4 wn[2]; /* PREP: this lane's norm weights (q heads' warps: q_norm; warp G: k_norm), before the wait */
    if (PREP && wid <= G) {
        const float *w = wid < G ? qnw : knw;
#pragma unroll
        for (int j = 0; j < 2; j++) wn[j] = __ldg((const float4 *)w + lane + 32 * j);
    }
    kc_pdl_begin();
    AKC_T(1);
    const int n = *pos + 1, c = XS ? (n + S * (int)C - 1) / (S * (int)C) : (n + (int)C - 1) / (int)C,
              t0 = XS ? (sj * (int)C + (int)rank) * c : (int)rank * c, t1 = n < t0 + c ? n : t0 + c;
    const int rows = t1 > t0 ? t1 - t0 : 0, nsl = (rows + AKC_P - 1) / AKC_P;
    const bool cur = t0 < n && n <= t1; /* this block holds position n - 1 */
    if (wid == AKC_WARPS) { /* the producer: K slots, then V slots; lane i the slot's row i */
        for (int k = 0; k < 2 * nsl; k++) {
            const int s = k % AKC_NS, lap = k / AKC_NS, kk = k < nsl ? k : k - nsl, ta = t0 + kk * AKC_P;
            int ncp = t1 - ta < AKC_P ? t1 - ta : AKC_P; /* rows copied: the current one comes from sk/sv (PREP) */
            if (PREP && cur && ta + ncp == n) ncp--;
            if (lap) mbar_wait(smem_addr(akcsm + 8 * (Q8T_MAX_STAGES + s)), (lap - 1) & 1);
            const uint32_t bar = smem_addr(akcsm + 8 * s);
            if (TM) { /* the whole box: rows past t1 (and the current one, PREP) land too, never read */
                if (lane == 0) {
                    mbar_expect_tx(bar, (uint32_t)AKC_P * AKC_ROW);
                    akc_tensor_rows(smem_addr(ring + (size_t)s * AKC_P * AKC_ROW), k < nsl ? tmk : tmv, kvh, ta, bar);
                }
                continue;
            }
            if (lane == 0) mbar_expect_tx(bar, (uint32_t)ncp * AKC_ROW);
            __syncwarp();
            if (lane < ncp)
                bulk_g2s(smem_addr(ring + (size_t)s * AKC_P * AKC_ROW + (size_t)lane * AKC_ROW),
                         (k < nsl ? kc : vc) + (size_t)(ta + lane) * rs + (size_t)kvh * hd, AKC_ROW, bar);
        }
        if constexpr (PUSH) { /* phase 1: the producer never touches sq .. sab */
            __syncwarp();
            cluster_arrive_release();
        }
    } else {
        const int ct = threadIdx.x; /* consumer thread 0..511 */
        if (PREP) { /* warp g < G: q head g; warp G: the k row (the block holding n - 1 only) */
            if (wid < G) akc_prep_row(q + (size_t)(kvh * G + wid) * 2 * hd, wn, sq + wid * 256, rd, base, eps, n - 1);
            else if (wid == G && cur) {
                akc_prep_row(ak + (size_t)kvh * hd, wn, sk, rd, base, eps, n - 1);
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const float4 kv4 = ((const float4 *)sk)[lane + 32 * j], vv4 = ((const float4 *)(av + (size_t)kvh * hd))[lane + 32 * j];
                    ((float4 *)sv)[lane + 32 * j] = vv4;
                    ((float4 *)(kc + (size_t)(n - 1) * rs + (size_t)kvh * hd))[lane + 32 * j] = kv4;
                    ((float4 *)(vc + (size_t)(n - 1) * rs + (size_t)kvh * hd))[lane + 32 * j] = vv4;
                }
            }
        } else
            for (int e = ct; e < G * hd; e += 32 * AKC_WARPS) sq[e] = q[(size_t)(kvh * G) * hd + e];
        asm volatile("bar.sync 1, %0;" ::"r"(32 * AKC_WARPS) : "memory");
        AKC_T(2);
        /* pass 1: scores */
        {
            float4 qv[G][2];
#pragma unroll
            for (int g = 0; g < G; g++)
#pragma unroll
                for (int j = 0; j < 2; j++) qv[g][j] = ((const float4 *)(sq + g * 256))[lane + 32 * j];
            for (int k = 0; k < nsl; k++) {
                const int s = k % AKC_NS, lap = k / AKC_NS, ta = t0 + k * AKC_P;
                float4 kr[2][2];
                akc_take_rows<PREP>(akcsm, ring, sk, s, lap, ta, n, t1, kr);
#ifdef KC_AKC_DBG
                if (k == 0) AKC_T(3);
#endif
                float v[16];
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int g = 0; g < 8; g++) {
                        float a = 0.0f;
                        if (g < G)
#pragma unroll
                            for (int j = 0; j < 2; j++)
                                a += qv[g][j].x * kr[i][j].x + qv[g][j].y * kr[i][j].y + qv[g][j].z * kr[i][j].z +
                                     qv[g][j].w * kr[i][j].w;
                        v[8 * i + g] = a;
                    }
                const float sc = warp_sum16_scatter(v);
                const int idx = lane >> 1, i = idx >> 3, g = idx & 7, t = ta + wid + AKC_WARPS * i;
                if (!(lane & 1) && g < G && t < t1) sp[(t - t0) * 8 + g] = sc * scale;
            }
        }
        asm volatile("bar.sync 1, %0;" ::"r"(32 * AKC_WARPS) : "memory");
        AKC_T(4);
        if (wid < G) { /* the block's max per head */
            float mx = -INFINITY;
            for (int t = lane; t < rows; t += 32) mx = fmaxf(mx, sp[t * 8 + wid]);
#pragma unroll
            for (int off = 16; off; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            if (lane == 0) sM[wid] = mx;
        }
        asm volatile("bar.sync 1, %0;" ::"r"(32 * AKC_WARPS) : "memory");
        for (int e = ct; e < rows * 8; e += 32 * AKC_WARPS)
            if ((e & 7) < G) sp[e] = expf(sp[e] - sM[e & 7]);
        asm volatile("bar.sync 1, %0;" ::"r"(32 * AKC_WARPS) : "memory");
        if (wid < G) {
            float ls = 0.0f;
            for (int t = lane; t < rows; t += 32) ls += sp[t * 8 + wid];
            ls = warp_sum(ls);
            if (lane == 0) sL[wid] = ls;
        }
        /* pass 2: p x V */
        float4 acc[G][2];
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int j = 0; j < 2; j++) acc[g][j] = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int k = nsl; k < 2 * nsl; k++) {
            const int s = k % AKC_NS, lap = k / AKC_NS, ta = t0 + (k - nsl) * AKC_P;
            float4 vr[2][2];
            akc_take_rows<PREP>(akcsm, ring, sv, s, lap, ta, n, t1, vr);
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const int t = ta + wid + AKC_WARPS * i;
                if (t < t1) {
                    const float4 p0 = ((const float4 *)(sp + (t - t0) * 8))[0], p1 = ((const float4 *)(sp + (t - t0) * 8))[1];
                    const float pp[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
#pragma unroll
                    for (int g = 0; g < G; g++)
#pragma unroll
                        for (int j = 0; j < 2; j++) {
                            acc[g][j].x += pp[g] * vr[i][j].x;
                            acc[g][j].y += pp[g] * vr[i][j].y;
                            acc[g][j].z += pp[g] * vr[i][j].z;
                            acc[g][j].w += pp[g] * vr[i][j].w;
                        }
                }
            }
        }
        /* the warps' accumulators in order (the ring is free: every slot consumed) */
        asm volatile("bar.sync 1, %0;" ::"r"(32 * AKC_WARPS) : "memory");
        if constexpr (PUSH) cluster_arrive_release(); /* phase 1: sq .. sab free here (q, k, v read by the passes) */
        AKC_T(5);
        float *red = (float *)ring; /* (AKC_WARPS, G, 256) */
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int j = 0; j < 2; j++) ((float4 *)(red + (size_t)(wid * G + g) * 256))[lane + 32 * j] = acc[g][j];
        asm volatile("bar.sync 1, %0;" ::"r"(32 * AKC_WARPS) : "memory");
        if constexpr (!PUSH)
            for (int e = ct; e < G * 256; e += 32 * AKC_WARPS) {
                float a = 0.0f;
#pragma unroll
                for (int w = 0; w < AKC_WARPS; w++) a += red[(size_t)w * G * 256 + e];
                sab[e] = a;
            }
        if (rows == 0 && ct < G) {
            sM[ct] = -INFINITY;
            sL[ct] = 0.0f;
        }
    }
    /* the merge of head g by block g % C. Pull (PUSH false, v35-v39): every block's (M_b, L_b, a_b) in its own
     * shared memory, a cluster barrier, the merging blocks read them by DSMEM, a second barrier keeps them alive.
     * Push (the attention_kvc*_push kernels, option attn_kvc_push, PERF-NOTES v40): each block sums its warps'
     * accumulators straight into the merging block's recv (entry (g / C) C + rank) once every block is past its
     * pass 2 (phase 1: recv overlays what the passes read), one barrier more, the merging blocks read locally,
     * the others exit; the merging blocks' gates loaded before it. Same sums in the same order: the same bits. */
    if constexpr (PUSH) {
        /* the gate of this block's first head (its only one where C >= G, as for the presets), loaded before the
         * waits; further heads' gates in the loop */
        const float gv0 = (int)rank < G && threadIdx.x < hd ? gate[(size_t)(kvh * G + (int)rank) * gs + threadIdx.x] : 0.0f;
        cluster_wait_acquire(); /* phase 1: every block of the cluster past its pass 2 (its sq .. sab free) */
        if (threadIdx.x < 32 * AKC_WARPS) {
            const float4 *red4 = (const float4 *)ring; /* (AKC_WARPS, G, 64) */
            for (int e = threadIdx.x; e < G * 64; e += 32 * AKC_WARPS) {
                float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
                for (int w = 0; w < AKC_WARPS; w++) {
                    const float4 r = red4[(size_t)w * G * 64 + e];
                    a.x += r.x;
                    a.y += r.y;
                    a.z += r.z;
                    a.w += r.w;
                }
                const int g = e / 64;
                st_dsmem_f4(recv + (size_t)((g / (int)C) * (int)C + (int)rank) * AKC_RECV_ROW + 4 + 4 * (e % 64),
                            (unsigned)(g % (int)C), a);
            }
            if (threadIdx.x < G) {
                const int g = threadIdx.x;
                float *ent = recv + (size_t)((g / (int)C) * (int)C + (int)rank) * AKC_RECV_ROW;
                st_dsmem_f32(ent, (unsigned)(g % (int)C), sM[g]);
                st_dsmem_f32(ent + 1, (unsigned)(g % (int)C), sL[g]);
            }
        }
        cluster_arrive_release(); /* phase 2: this block's partials pushed */
        const bool merges = (int)rank < G;
        if (merges) cluster_wait_acquire(); /* every block's partials of this block's heads in recv */
        AKC_T(6);
        /* a loop, not unrolled: unrolled over 4 heads the push kernels' PTX was twice the pull kernels' (v40) */
        for (int g = (int)rank; merges && g < G; g += (int)C) {
            if (threadIdx.x >= hd) break;
            const int d = threadIdx.x, h = kvh * G + g;
            const float *ent = recv + (size_t)(g / (int)C) * (int)C * AKC_RECV_ROW; /* (C, AKC_RECV_ROW) */
            float Mr[16], M = -INFINITY, L = 0.0f, a = 0.0f;
#pragma unroll
            for (int r = 0; r < 16; r++)
                if (r < (int)C) {
                    Mr[r] = ent[r * AKC_RECV_ROW];
                    M = fmaxf(M, Mr[r]);
                }
#pragma unroll
            for (int r = 0; r < 16; r++)
                if (r < (int)C) {
                    const float e = Mr[r] == -INFINITY ? 0.0f : expf(Mr[r] - M);
                    L += e * ent[r * AKC_RECV_ROW + 1];
                    a += e * ent[r * AKC_RECV_ROW + 4 + d];
                }
            akc_head_out<XS>(M, L, a, g == (int)rank ? gv0 : gate[(size_t)h * gs + d], h, d, S, sj, part, cnt, ring, out,
                             oq);
        }
    } else {
        cluster_sync_all(); /* every block's (M_b, L_b, a_b) written and visible to the cluster */
        AKC_T(6);
        for (int g = (int)rank; g < G; g += (int)C) {
            if (threadIdx.x >= hd) break;
            const int d = threadIdx.x, h = kvh * G + g;
            float Mr[16], M = -INFINITY, L = 0.0f, a = 0.0f;
#pragma unroll
            for (int r = 0; r < 16; r++)
                if (r < (int)C) {
                    Mr[r] = ld_dsmem_f32(sM + g, (unsigned)r);
                    M = fmaxf(M, Mr[r]);
                }
#pragma unroll
            for (int r = 0; r < 16; r++)
                if (r < (int)C) {
                    const float e = Mr[r] == -INFINITY ? 0.0f : expf(Mr[r] - M);
                    L += e * ld_dsmem_f32(sL + g, (unsigned)r);
                    a += e * ld_dsmem_f32(sab + g * 256 + d, (unsigned)r);
                }
            if (XS) { /* the cluster's partial of head h; the split that takes the last ticket merges all S */
                float *pp = part + ((size_t)h * S + sj) * (hd + 2); /* part (nh, S, hd + 2): M, L, a */
                pp[2 + d] = a;
                if (d == 0) {
                    pp[0] = M;
                    pp[1] = L;
                }
                __threadfence();
                asm volatile("bar.sync 2, %0;" ::"r"(hd) : "memory");
                volatile int *last = (volatile int *)ring; /* the ring is free: every slot consumed */
                if (d == 0) *last = atomicAdd(&cnt[h], 1u) == (unsigned)S - 1;
                asm volatile("bar.sync 2, %0;" ::"r"(hd) : "memory");
                if (!*last) continue;
                __threadfence();
                const float *ph = part + (size_t)h * S * (hd + 2);
                float Mx = -INFINITY, Lx = 0.0f, ax = 0.0f;
                for (int j = 0; j < S; j++) Mx = fmaxf(Mx, __ldcg(ph + (size_t)j * (hd + 2)));
                for (int j = 0; j < S; j++) { /* in split order: the same bits whichever split merges */
                    const float Mj = __ldcg(ph + (size_t)j * (hd + 2));
                    const float e = Mj == -INFINITY ? 0.0f : expf(Mj - Mx);
                    Lx += e * __ldcg(ph + (size_t)j * (hd + 2) + 1);
                    ax += e * __ldcg(ph + (size_t)j * (hd + 2) + 2 + d);
                }
                M = Mx;
                L = Lx;
                a = ax;
                if (d == 0) cnt[h] = 0; /* re-armed for the next launch */
            }
            const float o = a / L * (1.0f / (1.0f + expf(-gate[(size_t)h * gs + d])));
            out[(size_t)h * hd + d] = o;
            if (oq) q8_quantize_warp(o, oq + ((size_t)h * hd + d) / 32);
        }
        cluster_sync_all(); /* every block's shared memory read */
    }
    AKC_T(7);
#ifdef KC_AKC_DBG
    if (threadIdx.x == 0 && g_akc_dbg) {
        const unsigned i = atomicAdd(&g_akc_dbg_n, 1u);
        if (i < g_akc_dbg_cap) {
            akc_dbg_rec *r = g_akc_dbg + i;
            for (int j = 0; j < 8; j++) r->t[j] = akc_t[j];
            asm volatile("mov.u32 %0, %%smid;" : "=r"(r->sm));
            r->blk = (int)blockIdx.x;
        }
    }
#endif
}

template <int G, bool PREP>
__global__ void __launch_bounds__(AKC_THREADS, 1) attention_kvc_kernel(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos)
{
    attention_kvc_body<G, PREP, false>(q, ak, av, qnw, knw, kc, vc, gate, gs, out, oq, nkv, rd, base, eps, scale, pos,
                                       NULL, NULL);
}

template <int G, bool PREP>
__global__ void __launch_bounds__(AKC_THREADS, 1) attention_kvct_kernel(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos, const __grid_constant__ kc_tmap tmk,
    const __grid_constant__ kc_tmap tmv)
{
    attention_kvc_body<G, PREP, true>(q, ak, av, qnw, knw, kc, vc, gate, gs, out, oq, nkv, rd, base, eps, scale, pos,
                                      &tmk, &tmv);
}

/* attention_kvct over S clusters per kv head (option attn_kvc_sp, PERF-NOTES v38): grid nkv * S * C, cluster C;
 * each cluster's merged partial (M, L, a) per head to part (nh, S, hd + 2), merged by the last split (ticket
 * cnt[h], re-armed) */
template <int G, bool PREP>
__global__ void __launch_bounds__(AKC_THREADS, 1) attention_kvcx_kernel(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos, const __grid_constant__ kc_tmap tmk,
    const __grid_constant__ kc_tmap tmv, int S, float *part, unsigned int *cnt)
{
    attention_kvc_body<G, PREP, true, true>(q, ak, av, qnw, knw, kc, vc, gate, gs, out, oq, nkv, rd, base, eps, scale,
                                            pos, &tmk, &tmv, S, part, cnt);
}

/* the three with the push merge (option attn_kvc_push, PERF-NOTES v40): kernels of their own, so that the pull
 * kernels above keep v39's code (v40: a runtime switch inside one kernel was slower in the step in both merges) */
template <int G, bool PREP>
__global__ void __launch_bounds__(AKC_THREADS, 1) attention_kvc_push_kernel(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos)
{
    attention_kvc_body<G, PREP, false, false, true>(q, ak, av, qnw, knw, kc, vc, gate, gs, out, oq, nkv, rd, base,
                                                    eps, scale, pos, NULL, NULL);
}

template <int G, bool PREP>
__global__ void __launch_bounds__(AKC_THREADS, 1) attention_kvct_push_kernel(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos, const __grid_constant__ kc_tmap tmk,
    const __grid_constant__ kc_tmap tmv)
{
    attention_kvc_body<G, PREP, true, false, true>(q, ak, av, qnw, knw, kc, vc, gate, gs, out, oq, nkv, rd, base, eps,
                                                   scale, pos, &tmk, &tmv);
}

template <int G, bool PREP>
__global__ void __launch_bounds__(AKC_THREADS, 1) attention_kvcx_push_kernel(
    const float *q, const float *ak, const float *av, const float *__restrict__ qnw, const float *__restrict__ knw,
    float *kc, float *vc, const float *gate, int gs, float *__restrict__ out, kc_q8blk *__restrict__ oq, int nkv,
    int rd, float base, float eps, float scale, const int32_t *pos, const __grid_constant__ kc_tmap tmk,
    const __grid_constant__ kc_tmap tmv, int S, float *part, unsigned int *cnt)
{
    attention_kvc_body<G, PREP, true, true, true>(q, ak, av, qnw, knw, kc, vc, gate, gs, out, oq, nkv, rd, base, eps,
                                                  scale, pos, &tmk, &tmv, S, part, cnt);
}

static cudaError_t attention_kvc_setup(void)
{
    cudaError_t e = cudaSuccess;
#define AKC_SET(K_, G_, P_)                                                                                      \
    if (e == cudaSuccess)                                                                                        \
        e = cudaFuncSetAttribute(K_<G_, P_>, cudaFuncAttributeMaxDynamicSharedMemorySize, AKC_SMEM);              \
    if (e == cudaSuccess)                                                                                        \
        e = cudaFuncSetAttribute(K_<G_, P_>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
#define AKC_SET_ALL(K_)                                                                                          \
    AKC_SET(K_, 2, false) AKC_SET(K_, 4, false) AKC_SET(K_, 6, false) AKC_SET(K_, 8, false)                      \
    AKC_SET(K_, 2, true) AKC_SET(K_, 4, true) AKC_SET(K_, 6, true) AKC_SET(K_, 8, true)
    AKC_SET_ALL(attention_kvc_kernel) /* a bulk copy per row */
    AKC_SET_ALL(attention_kvct_kernel) /* a tensor copy per slot (attn_kvc_tm) */
    AKC_SET_ALL(attention_kvcx_kernel) /* over S clusters per kv head (attn_kvc_sp) */
    AKC_SET_ALL(attention_kvc_push_kernel) /* the same three with the push merge (attn_kvc_push) */
    AKC_SET_ALL(attention_kvct_push_kernel)
    AKC_SET_ALL(attention_kvcx_push_kernel)
#undef AKC_SET_ALL
#undef AKC_SET
    return e;
}

int kc_attention_kvc_max(int csize) { return csize >= 2 && csize <= 16 ? csize * AKC_CMAX : 0; }

int kc_attention_kvc_ok(int nh, int nkv, int hd, int csize, int nmax)
{
    if (nkv < 1 || nh % nkv || hd != 256 || csize < 2 || csize > 16 || nmax < 1) return 0;
    const int G = nh / nkv;
    return G % 2 == 0 && G <= 8 && (nmax + csize - 1) / csize <= AKC_CMAX;
}

cudaError_t kc_attention_kvc(const float *qg, const float *ak, const float *av, const float *qnw, const float *knw,
                             float *kc, float *vc, const float *gate, int gs, float *out, kc_q8blk *oq, int nh,
                             int nkv, int hd, int csize, int nmax, int rd, float base, float eps, float scale,
                             const int32_t *pos, const kc_tmap *tm, int push, cudaStream_t st)
{
    if (!kc_attention_kvc_ok(nh, nkv, hd, csize, nmax) || (ak && (rd < 0 || rd > hd || rd % 2))) return cudaErrorInvalidValue;
    const dim3 grid((unsigned)(nkv * csize));
#define AKC_LAUNCH(KT_, KB_, G_)                                                                                   \
    if (tm && ak)                                                                                                  \
        kc_launch_cluster(KT_<G_, true>, grid, AKC_THREADS, AKC_SMEM, csize, st, qg, ak, av, qnw, knw, kc, vc, gate, gs, \
                          out, oq, nkv, rd, base, eps, scale, pos, tm[0], tm[1]);                                  \
    else if (tm)                                                                                                   \
        kc_launch_cluster(KT_<G_, false>, grid, AKC_THREADS, AKC_SMEM, csize, st, qg, ak, av, qnw, knw, kc, vc, gate,   \
                          gs, out, oq, nkv, rd, base, eps, scale, pos, tm[0], tm[1]);                              \
    else if (ak)                                                                                                   \
        kc_launch_cluster(KB_<G_, true>, grid, AKC_THREADS, AKC_SMEM, csize, st, qg, ak, av, qnw, knw, kc, vc, gate, gs, \
                          out, oq, nkv, rd, base, eps, scale, pos);                                                \
    else                                                                                                           \
        kc_launch_cluster(KB_<G_, false>, grid, AKC_THREADS, AKC_SMEM, csize, st, qg, ak, av, qnw, knw, kc, vc, gate,   \
                          gs, out, oq, nkv, rd, base, eps, scale, pos);
#define AKC_LAUNCH_G(KT_, KB_)                                                                                     \
    switch (nh / nkv) {                                                                                            \
    case 2: AKC_LAUNCH(KT_, KB_, 2) break;                                                                         \
    case 4: AKC_LAUNCH(KT_, KB_, 4) break;                                                                         \
    case 6: AKC_LAUNCH(KT_, KB_, 6) break;                                                                         \
    default: AKC_LAUNCH(KT_, KB_, 8) break;                                                                        \
    }
    if (push)
        AKC_LAUNCH_G(attention_kvct_push_kernel, attention_kvc_push_kernel)
    else
        AKC_LAUNCH_G(attention_kvct_kernel, attention_kvc_kernel)
#undef AKC_LAUNCH_G
#undef AKC_LAUNCH
    return cudaGetLastError();
}

int kc_attention_kvcx_ok(int nh, int nkv, int hd, int csize, int nsplit, int nmax)
{
    return nsplit >= 2 && nsplit <= 32 && kc_attention_kvc_ok(nh, nkv, hd, csize, 1) &&
           (nmax + csize * nsplit - 1) / (csize * nsplit) <= AKC_CMAX;
}

cudaError_t kc_attention_kvcx(const float *qg, const float *ak, const float *av, const float *qnw, const float *knw,
                              float *kc, float *vc, const float *gate, int gs, float *out, kc_q8blk *oq, int nh,
                              int nkv, int hd, int csize, int nsplit, int nmax, int rd, float base, float eps,
                              float scale, const int32_t *pos, const kc_tmap *tm, float *part, unsigned int *cnt,
                              int push, cudaStream_t st)
{
    if (!kc_attention_kvcx_ok(nh, nkv, hd, csize, nsplit, nmax) || !tm || !part || !cnt ||
        (ak && (rd < 0 || rd > hd || rd % 2)))
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)(nkv * nsplit * csize));
#define AKX_LAUNCH(K_, G_)                                                                                         \
    if (ak)                                                                                                        \
        kc_launch_cluster(K_<G_, true>, grid, AKC_THREADS, AKC_SMEM, csize, st, qg, ak, av, qnw, knw, kc, vc, gate, gs,  \
                          out, oq, nkv, rd, base, eps, scale, pos, tm[0], tm[1], nsplit, part, cnt);               \
    else                                                                                                           \
        kc_launch_cluster(K_<G_, false>, grid, AKC_THREADS, AKC_SMEM, csize, st, qg, ak, av, qnw, knw, kc, vc, gate, gs, \
                          out, oq, nkv, rd, base, eps, scale, pos, tm[0], tm[1], nsplit, part, cnt);
#define AKX_LAUNCH_G(K_)                                                                                           \
    switch (nh / nkv) {                                                                                            \
    case 2: AKX_LAUNCH(K_, 2) break;                                                                               \
    case 4: AKX_LAUNCH(K_, 4) break;                                                                               \
    case 6: AKX_LAUNCH(K_, 6) break;                                                                               \
    default: AKX_LAUNCH(K_, 8) break;                                                                              \
    }
    if (push)
        AKX_LAUNCH_G(attention_kvcx_push_kernel)
    else
        AKX_LAUNCH_G(attention_kvcx_kernel)
#undef AKX_LAUNCH_G
#undef AKX_LAUNCH
    return cudaGetLastError();
}

typedef CUresult (*kc_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

cudaError_t kc_kv_tmap(kc_tmap *map, const float *cache, int ctx, int nkv, int hd)
{
    static_assert(sizeof(kc_tmap) == sizeof(CUtensorMap) && alignof(kc_tmap) == alignof(CUtensorMap),
                  "kc_tmap holds a CUtensorMap");
    if (!map || !cache || ctx < 1 || nkv < 1 || hd != 256 || (uintptr_t)cache % 16) return cudaErrorInvalidValue;
    void *fn = NULL;
    cudaDriverEntryPointQueryResult qr;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &qr);
    if (e != cudaSuccess) return e;
    if (qr != cudaDriverEntryPointSuccess || !fn) return cudaErrorNotSupported;
    /* the cache (ctx, nkv * hd) as a 2D tensor of f32, the inner dimension first; a box is one kv head's
     * slice of AKC_P consecutive rows */
    const cuuint64_t dim[2] = {(cuuint64_t)nkv * hd, (cuuint64_t)ctx}, stride[1] = {(cuuint64_t)nkv * hd * 4};
    const cuuint32_t box[2] = {(cuuint32_t)hd, AKC_P}, estride[2] = {1, 1};
    const CUresult r = ((kc_encode_tiled_fn)fn)((CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)cache, dim,
                                                stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}


/* ------------------------------------------------------------------ misc */

/* (value, index) -> one 64-bit key whose unsigned order is "larger value, then lower index";
 * NaN maps below every number (never wins), as the single-block scan treats it */
__device__ __forceinline__ unsigned long long argmax_key(float v, int i)
{
    uint32_t b = v == 0.0f ? 0u : __float_as_uint(v); /* -0 ties with +0, as v > best does */
    b = v != v ? 0u : (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((unsigned long long)b << 32) | (uint32_t)(0x7fffffff - i);
}

/* Block-local best of x over this block's grid-strided elements as a key (every thread gets it) */
__device__ __forceinline__ unsigned long long argmax_block(const float *x, int n, unsigned long long *sh)
{
    unsigned long long best = 0; /* below every real key: n == 0 -> index 0x7fffffff */
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const unsigned long long k = argmax_key(x[i], i);
        best = k > best ? k : best;
    }
#pragma unroll
    for (int off = 16; off; off >>= 1) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, best, off);
        best = o > best ? o : best;
    }
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) sh[wid] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) best = sh[w] > best ? sh[w] : best;
        sh[0] = best;
    }
    __syncthreads();
    return sh[0];
}

__device__ __forceinline__ int32_t argmax_index(unsigned long long key)
{
    const uint32_t lo = (uint32_t)key;
    return (key >> 32) == 0 && lo == 0 ? 0 : 0x7fffffff - (int32_t)lo; /* all NaN (or n == 0): id 0 */
}

/* ARGMAX_BLOCKS blocks each reduce a strided share into part[blockIdx]; the last block to finish
 * (atomic ticket) reduces the partials, writes the id and re-arms the ticket for the next call. */
#define ARGMAX_BLOCKS 64
__global__ void argmax_kernel(const float *x, int n, int32_t *out, const int32_t *idx,
                              kc_argmax_scratch *scr)
{
    kc_pdl_begin();
    __shared__ unsigned long long sh[32];
    __shared__ int last;
    const unsigned long long best = argmax_block(x, n, sh);
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) out[idx ? *idx : 0] = argmax_index(best);
        return;
    }
    if (threadIdx.x == 0) {
        scr->part[blockIdx.x] = best;
        __threadfence();
        last = atomicAdd(&scr->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || threadIdx.x >= 32) return;
    __threadfence();
    unsigned long long b = 0; /* warp 0 reduces the partials */
    for (int i = threadIdx.x; i < (int)gridDim.x; i += 32) {
        const unsigned long long k = __ldcg(&scr->part[i]);
        b = k > b ? k : b;
    }
#pragma unroll
    for (int off = 16; off; off >>= 1) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, b, off);
        b = o > b ? o : b;
    }
    if (threadIdx.x == 0) {
        out[idx ? *idx : 0] = argmax_index(b);
        scr->ticket = 0;
    }
}

cudaError_t kc_argmax(const float *x, int n, int32_t *out, const int32_t *idx, kc_argmax_scratch *scr,
                      cudaStream_t st)
{
    const int blocks = scr ? (n + 4095) / 4096 : 1;
    const int grid = blocks < 1 ? 1 : blocks > ARGMAX_BLOCKS ? ARGMAX_BLOCKS : blocks;
    kc_launch(argmax_kernel, grid, grid == 1 ? 1024 : 256, 0, st, x, n, out, idx, scr);
    return cudaGetLastError();
}

__global__ void ctl_begin_kernel(kc_ctl *ctl, const int32_t *tokens) { kc_pdl_begin(); ctl->tok = tokens[ctl->idx]; }
__global__ void ctl_end_kernel(kc_ctl *ctl)
{
    kc_pdl_begin();
    ctl->pos++;
    ctl->idx++;
}

cudaError_t kc_ctl_begin(kc_ctl *ctl, const int32_t *tokens, cudaStream_t st)
{
    kc_launch(ctl_begin_kernel, 1, 1, 0, st, ctl, tokens);
    return cudaGetLastError();
}

cudaError_t kc_ctl_end(kc_ctl *ctl, cudaStream_t st)
{
    kc_launch(ctl_end_kernel, 1, 1, 0, st, ctl);
    return cudaGetLastError();
}

__global__ void stream_read_kernel(const uint4 *__restrict__ buf, uint64_t n, uint32_t *sink)
{
    uint32_t acc = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) { /* four 16-byte loads in flight */
        const uint4 a = __ldcs(buf + i), b = __ldcs(buf + i + stride);
        const uint4 c = __ldcs(buf + i + 2 * stride), d = __ldcs(buf + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = __ldcs(buf + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc; /* keeps the loads alive */
}

cudaError_t kc_stream_read(const uint4 *buf, uint64_t n16, uint32_t *sink, int blocks, cudaStream_t st)
{
    stream_read_kernel<<<blocks, 512, 0, st>>>(buf, n16, sink);
    return cudaGetLastError();
}
