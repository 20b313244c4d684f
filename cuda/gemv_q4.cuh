/*
 * cuda/gemv_q4.cuh - the q4_0 layout-1 GEMV core (issue 6): several rows per warp.
 * Included by kernels.cu only (it needs warp_sum and the layout of kernels.cuh).
 *
 * Why (cuda/PERF-NOTES.md v2): with one row per warp every weight byte of HBM
 * costs 8 bytes of activation traffic through L1 (a float per 4-bit weight), and
 * the old nibble decode (shift + and/or + sub per weight, a shift + convert per
 * scale) kept the issue slots busy: the GEMVs ran at ~1.6 TB/s. Here a warp
 * streams NR rows (NR = 1, 2, 4 of one matrix, or gate+up pairs for SwiGLU) and
 * shares each activation float4 between them (L1 traffic / NR); a nibble becomes a
 * float with ONE logic op and ONE exact FMA (the low 16 bits of a word hold 4
 * nibbles at bits 0,4,8,12: (w & 0xF<<4j) | 0x4B000000 is the float
 * 2^23 + 16^j n, and fma(f, 16^-j, -(2^23 16^-j + 8)) = n - 8 exactly); the next
 * superblock's quants and scales are loaded before the current one is used.
 *
 * Per row the arithmetic is the old row_dot's, in the same order (k even into
 * acc0, k odd into acc1, superblocks ascending, then warp_sum(acc0 + acc1)), and
 * independent of NR: one row gives the same bits alone, in a pair, or fused with
 * another matrix.
 */
#ifndef KESTREL_CUDA_GEMV_Q4_CUH
#define KESTREL_CUDA_GEMV_Q4_CUH

#include <cuda_pipeline.h>

/* n - 8 of the nibble at bits 4j of the low 16 bits of b, exactly (j compile-time) */
template <int J>
__device__ __forceinline__ float q4n(uint32_t b)
{
    const float f = __uint_as_float((b & (15u << (4 * J))) | 0x4B000000u);
    if (J == 0) return f - 8388616.0f; /* 2^23 + 8 */
    const float inv = J == 1 ? 0.0625f : J == 2 ? 0.00390625f : 0.000244140625f;
    const float off = J == 1 ? 524296.0f : J == 2 ? 32776.0f : 2056.0f; /* 2^23/16^J + 8 */
    return __fmaf_rn(f, inv, -off);
}

/* NR row streams of one superblock: quants qa[i] (16 bytes of lane), scales da[i]
 * (the 8 half scales of the lane's column group), activations xv[8] (float4 of
 * columns s*1024 + k*128 + 4*lane). acc0/acc1 (NR,) as in the old row_dot. */
template <int NR>
__device__ __forceinline__ void q4sb_multi_accum(const uint4 (&qa)[NR], const uint4 (&da)[NR], const float4 (&xv)[8],
                                                 float (&acc0)[NR], float (&acc1)[NR])
{
#pragma unroll
    for (int i = 0; i < NR; i++) {
        const uint32_t w[4] = {qa[i].x, qa[i].y, qa[i].z, qa[i].w};
        const uint32_t dw[4] = {da[i].x, da[i].y, da[i].z, da[i].w};
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            const float2 dk = __half22float2(*(const __half2 *)&dw[kk]); /* scales of k = 2kk, 2kk+1 */
            const uint32_t lo = w[kk], hi = w[kk] >> 16;
            const float4 xa = xv[2 * kk], xb = xv[2 * kk + 1];
            float t = q4n<0>(lo) * xa.x;
            t += q4n<1>(lo) * xa.y;
            t += q4n<2>(lo) * xa.z;
            t += q4n<3>(lo) * xa.w;
            acc0[i] += dk.x * t;
            float u = q4n<0>(hi) * xb.x;
            u += q4n<1>(hi) * xb.y;
            u += q4n<2>(hi) * xb.z;
            u += q4n<3>(hi) * xb.w;
            acc1[i] += dk.y * u;
        }
    }
}

/* The dot products of NR rows with x for one warp. qrow[i], drow[i]: the quant / scale
 * plane of row i at this lane (uint4 index row*nsb*32 + lane, row*nsb*4 + lane/8);
 * x4 = (const float4 *)x + lane. Returns the full sums in out[i] on every lane. */
template <int NR>
__device__ __forceinline__ void q4sb_rows(const uint4 *const (&qrow)[NR], const uint4 *const (&drow)[NR], int nsb,
                                          const float4 *__restrict__ x4, float (&out)[NR])
{
    float acc0[NR], acc1[NR];
    uint4 qa[NR], da[NR];
#pragma unroll
    for (int i = 0; i < NR; i++) {
        acc0[i] = 0.0f;
        acc1[i] = 0.0f;
        qa[i] = __ldg(qrow[i]);
        da[i] = __ldg(drow[i]);
    }
    for (int s = 0; s < nsb; s++) {
        uint4 qn[NR], dn[NR];
        const int sn = s + 1 < nsb ? s + 1 : s; /* next superblock (a harmless re-read at the end) */
#pragma unroll
        for (int i = 0; i < NR; i++) {
            qn[i] = __ldg(qrow[i] + (size_t)sn * 32);
            dn[i] = __ldg(drow[i] + (size_t)sn * 4);
        }
        float4 xv[8];
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] = __ldca(x4 + s * 256 + k * 32);
        q4sb_multi_accum<NR>(qa, da, xv, acc0, acc1);
#pragma unroll
        for (int i = 0; i < NR; i++) {
            qa[i] = qn[i];
            da[i] = dn[i];
        }
    }
#pragma unroll
    for (int i = 0; i < NR; i++) out[i] = warp_sum(acc0[i] + acc1[i]);
}

#define Q4M_WARPS 8 /* warps per block of the multi-row kernels */

/* y0 (W0.rows,) [+]= W0 . x and, when W1.rows > 0, y1 (W1.rows,) [+]= W1 . x in one launch:
 * row group g < ceil(W0.rows / R) is rows g*R.. of W0, the following groups rows of W1.
 * Rows past the end repeat the last row's loads (in bounds) and are not stored.
 * v5: the grid is at most one resident wave (kc_gemv_setup) and each warp walks the row groups
 * with the grid's stride, so every SM gets the same share of rows (a one-wave grid of 320 blocks
 * on 132 SMs x 3 slots left the SMs with 3 blocks 1.5x the work of those with 2). */
template <int R>
__global__ void __launch_bounds__(32 * Q4M_WARPS) matvec_q4m_kernel(const kc_mat W0, const kc_mat W1,
                                                                     const float *__restrict__ x, float *y0,
                                                                     float *y1, int accumulate)
{
    kc_pdl_begin();
    const int lane = threadIdx.x & 31;
    const int g0 = (W0.rows + R - 1) / R, ng = g0 + (W1.rows + R - 1) / R;
    for (int gg = blockIdx.x * Q4M_WARPS + (threadIdx.x >> 5); gg < ng; gg += gridDim.x * Q4M_WARPS) {
        const bool first = gg < g0;
        const int g = first ? gg : gg - g0;
        const int rows = first ? W0.rows : W1.rows, nsb = (first ? W0.cols : W1.cols) / 1024;
        const uint4 *qb = (const uint4 *)(first ? W0.data : W1.data);
        const uint4 *db = (const uint4 *)(first ? W0.d : W1.d);
        float *y = first ? y0 : y1;
        const int r0 = g * R;
        const uint4 *qrow[R], *drow[R];
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int r = r0 + i < rows ? r0 + i : rows - 1;
            qrow[i] = qb + (size_t)r * nsb * 32 + lane;
            drow[i] = db + (size_t)r * nsb * 4 + (lane >> 3);
        }
        float s[R];
        q4sb_rows<R>(qrow, drow, nsb, (const float4 *)x + lane, s);
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < R; i++)
                if (r0 + i < rows) y[r0 + i] = accumulate ? y[r0 + i] + s[i] : s[i];
        }
    }
}

/* y (G.rows,) = silu(G . x) * (U . x): row group g = gate and up rows g*P.. (2P streams),
 * groups walked with the grid's stride as above */
template <int P>
__global__ void __launch_bounds__(32 * Q4M_WARPS) matvec_swiglu_q4m_kernel(const kc_mat G, const kc_mat U,
                                                                            const float *__restrict__ x,
                                                                            float *__restrict__ y)
{
    kc_pdl_begin();
    const int lane = threadIdx.x & 31;
    const int nsb = G.cols / 1024, ng = (G.rows + P - 1) / P;
    for (int g = blockIdx.x * Q4M_WARPS + (threadIdx.x >> 5); g < ng; g += gridDim.x * Q4M_WARPS) {
        const int r0 = g * P;
        const uint4 *qrow[2 * P], *drow[2 * P];
#pragma unroll
        for (int i = 0; i < P; i++) {
            const int r = r0 + i < G.rows ? r0 + i : G.rows - 1;
            qrow[i] = (const uint4 *)G.data + (size_t)r * nsb * 32 + lane;
            drow[i] = (const uint4 *)G.d + (size_t)r * nsb * 4 + (lane >> 3);
            qrow[P + i] = (const uint4 *)U.data + (size_t)r * nsb * 32 + lane;
            drow[P + i] = (const uint4 *)U.d + (size_t)r * nsb * 4 + (lane >> 3);
        }
        float s[2 * P];
        q4sb_rows<2 * P>(qrow, drow, nsb, (const float4 *)x + lane, s);
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < P; i++)
                if (r0 + i < G.rows) y[r0 + i] = s[i] / (1.0f + expf(-s[i])) * s[P + i];
        }
    }
}

/* ---- v4: the same arithmetic with the quants and scales streamed by cp.async ----
 * Why: v2 measured the GEMVs latency-bound (rows per warp 1, 2, 4 all ~9 ms/token; the
 * tall-skinny out projections at ~1.3 TB/s): register prefetch keeps only ~1-2 KB per warp in
 * flight. Here each lane copies its own 16-byte chunks of the next Q4P_STAGES-1 superblocks
 * (quants and scales of NR rows) into the warp's shared-memory ring with cp.async, which
 * holds no registers, so ~6 KB per warp (NR = 2) stay in flight at any occupancy. A lane only
 * reads back the chunks it copied itself, so cp.async.wait_group is the only synchronisation.
 * Per row the arithmetic and its order are q4sb_rows' (bit-identical results). */
#define Q4P_STAGES 4
#define Q4P_WARPS 4 /* warps per block: NR <= 2 needs 4 * NR KB of shared memory per warp */

template <int NR>
__device__ __forceinline__ void q4sb_rows_pipe(const uint4 *const (&qrow)[NR], const uint4 *const (&drow)[NR],
                                               int nsb, const float4 *__restrict__ x4, float (&out)[NR],
                                               uint4 *ring /* (Q4P_STAGES, NR, 2, 32) of this warp */)
{
    const int lane = threadIdx.x & 31;
    float acc0[NR], acc1[NR];
#pragma unroll
    for (int i = 0; i < NR; i++) {
        acc0[i] = 0.0f;
        acc1[i] = 0.0f;
    }
#pragma unroll
    for (int st = 0; st < Q4P_STAGES; st++) {
        if (st < nsb) {
#pragma unroll
            for (int i = 0; i < NR; i++) {
                __pipeline_memcpy_async(ring + ((st * NR + i) * 2) * 32 + lane, qrow[i] + (size_t)st * 32, 16);
                __pipeline_memcpy_async(ring + ((st * NR + i) * 2 + 1) * 32 + lane, drow[i] + (size_t)st * 4, 16);
            }
        }
        __pipeline_commit(); /* one group per stage, empty or not: the wait count stays uniform */
    }
    for (int s = 0; s < nsb; s++) {
        const int st = s % Q4P_STAGES;
        __pipeline_wait_prior(Q4P_STAGES - 1); /* the group of superblock s has landed */
        uint4 qa[NR], da[NR];
#pragma unroll
        for (int i = 0; i < NR; i++) {
            qa[i] = ring[((st * NR + i) * 2) * 32 + lane];
            da[i] = ring[((st * NR + i) * 2 + 1) * 32 + lane];
        }
        float4 xv[8];
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] = __ldca(x4 + s * 256 + k * 32);
        q4sb_multi_accum<NR>(qa, da, xv, acc0, acc1);
        /* refill this slot (its values were consumed above) with superblock s + STAGES */
        const int sn = s + Q4P_STAGES;
        if (sn < nsb) {
#pragma unroll
            for (int i = 0; i < NR; i++) {
                __pipeline_memcpy_async(ring + ((st * NR + i) * 2) * 32 + lane, qrow[i] + (size_t)sn * 32, 16);
                __pipeline_memcpy_async(ring + ((st * NR + i) * 2 + 1) * 32 + lane, drow[i] + (size_t)sn * 4, 16);
            }
        }
        __pipeline_commit();
    }
#pragma unroll
    for (int i = 0; i < NR; i++) out[i] = warp_sum(acc0[i] + acc1[i]);
}

/* as matvec_q4m_kernel (W0, then W1 rows), R <= 2 rows per warp, Q4P_WARPS warps per block */
template <int R>
__global__ void __launch_bounds__(32 * Q4P_WARPS) matvec_q4p_kernel(const kc_mat W0, const kc_mat W1,
                                                                     const float *__restrict__ x, float *y0,
                                                                     float *y1, int accumulate)
{
    kc_pdl_begin();
    __shared__ uint4 ring[Q4P_WARPS][Q4P_STAGES * R * 2 * 32];
    const int lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
    int g = blockIdx.x * Q4P_WARPS + wi;
    const int g0 = (W0.rows + R - 1) / R;
    const bool first = g < g0;
    if (!first) g -= g0;
    const int rows = first ? W0.rows : W1.rows, nsb = (first ? W0.cols : W1.cols) / 1024;
    const uint4 *qb = (const uint4 *)(first ? W0.data : W1.data);
    const uint4 *db = (const uint4 *)(first ? W0.d : W1.d);
    float *y = first ? y0 : y1;
    const int r0 = g * R;
    if (r0 >= rows) return;
    const uint4 *qrow[R], *drow[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const int r = r0 + i < rows ? r0 + i : rows - 1;
        qrow[i] = qb + (size_t)r * nsb * 32 + lane;
        drow[i] = db + (size_t)r * nsb * 4 + (lane >> 3);
    }
    float s[R];
    q4sb_rows_pipe<R>(qrow, drow, nsb, (const float4 *)x + lane, s, ring[wi]);
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < R; i++)
            if (r0 + i < rows) y[r0 + i] = accumulate ? y[r0 + i] + s[i] : s[i];
    }
}

/* y (G.rows,) = silu(G . x) * (U . x): one gate/up row pair per warp, streamed by cp.async */
__global__ void __launch_bounds__(32 * Q4P_WARPS) matvec_swiglu_q4p_kernel(const kc_mat G, const kc_mat U,
                                                                            const float *__restrict__ x,
                                                                            float *__restrict__ y)
{
    kc_pdl_begin();
    __shared__ uint4 ring[Q4P_WARPS][Q4P_STAGES * 2 * 2 * 32];
    const int lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
    const int r = blockIdx.x * Q4P_WARPS + wi;
    if (r >= G.rows) return;
    const int nsb = G.cols / 1024;
    const uint4 *qrow[2] = {(const uint4 *)G.data + (size_t)r * nsb * 32 + lane,
                            (const uint4 *)U.data + (size_t)r * nsb * 32 + lane};
    const uint4 *drow[2] = {(const uint4 *)G.d + (size_t)r * nsb * 4 + (lane >> 3),
                            (const uint4 *)U.d + (size_t)r * nsb * 4 + (lane >> 3)};
    float s[2];
    q4sb_rows_pipe<2>(qrow, drow, nsb, (const float4 *)x + lane, s, ring[wi]);
    if (lane == 0) y[r] = s[0] / (1.0f + expf(-s[0])) * s[1];
}

#endif
