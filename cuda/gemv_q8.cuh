/*
 * cuda/gemv_q8.cuh - q4_0 weights x 8-bit activations with integer dot products (issue 6,
 * engine option dot=q8). Included by kernels.cu only (needs warp_sum and kc_q8blk).
 *
 * Why (cuda/PERF-NOTES.md v2-v5): the f32-activation q4_0 GEMV spends ~3.6 issue slots per
 * 4-bit weight (nibble -> float, offset, FMA) and stalls at ~2 TB/s whatever the rows per warp
 * or the bytes in flight. Here the activation vector is quantised once per GEMV input to 8 bits
 * per block of 32 (quantize_q8, llama.cpp's q8_1 idea) and a weight block costs, per row:
 * 8 LOP3 (low / high nibbles in place), 8 dp4a, a shift and an add to merge the two integer sums,
 * and 4 float ops for the two scales: ~0.8 slots per weight.
 *
 * Weights are q4_0 in layout 0 (ggml order: 16 quant bytes per block in the data plane, the f16
 * scales in their own plane): lane l of a warp reads block b = l, l+32, ... of its rows, one
 * 16-byte load per block, 512 contiguous bytes per warp.
 *
 * Integer part, exact: c = s8 + sum_j lo_j q_j + (sum_j (hi_j << 4) q_{16+j}) >> 4
 *   = sum (nibble - 8) q   (s8 = -8 sum q; the high nibbles are used in place, as unsigned bytes
 *   times 16, so their sum is a multiple of 16 and the shift is exact).
 * Float part, in the CPU twin's order (ops.c matvec_q8, "lane-strided"): lane l accumulates
 * p += (dw_b * d_b) * (float)c_b over its blocks ascending, then warp_sum's butterfly.
 */
#ifndef KESTREL_CUDA_GEMV_Q8_CUH
#define KESTREL_CUDA_GEMV_Q8_CUH

/* c + dot of 4 unsigned bytes of a with 4 signed bytes of b */
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c)
{
    int r;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

/* ---- quantize_q8 (twin: ops.c quantize_q8) ---- */
/* The warp's 32 lanes hold the 32 values of one block (lane = position); all 32 lanes call. */
__device__ __forceinline__ void q8_quantize_warp(float v, kc_q8blk *__restrict__ out)
{
    const int lane = threadIdx.x & 31;
    float amax = fabsf(v);
#pragma unroll
    for (int off = 16; off; off >>= 1) { /* NaN-sticky max, as the twin */
        const float o = __shfl_xor_sync(0xffffffffu, amax, off);
        amax = (o > amax || o != o) ? o : amax;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = amax > 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    float s = __fmul_rn(v, id);
    int q = 0;
    if (s == s) {
        s = fminf(fmaxf(s, -127.0f), 127.0f);
        q = __float2int_rn(s);
    }
    out->q[lane] = (int8_t)q;
    int sum = q;
#pragma unroll
    for (int off = 16; off; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) {
        out->d = d;
        out->s8 = -8 * sum;
        out->pad[0] = 0;
        out->pad[1] = 0;
    }
}

/* one warp per block of 32 values */
__global__ void quantize_q8_kernel(const float *__restrict__ x, kc_q8blk *__restrict__ out, int nblk)
{
    kc_pdl_begin();
    const int b = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (b >= nblk) return;
    q8_quantize_warp(__ldca(x + (size_t)b * 32 + (threadIdx.x & 31)), out + b); /* not __ldg: PDL */
}

/* One q4_0 block of one row against the matching activation block: the integer dot c. */
__device__ __forceinline__ int q4q8_block_dot(const uint4 w, const int4 xa, const int4 xb, int s8)
{
    int lo = s8, hi = 0;
    lo = __dp4a((int)(w.x & 0x0F0F0F0Fu), xa.x, lo);
    hi = dp4a_us(w.x & 0xF0F0F0F0u, xb.x, hi);
    lo = __dp4a((int)(w.y & 0x0F0F0F0Fu), xa.y, lo);
    hi = dp4a_us(w.y & 0xF0F0F0F0u, xb.y, hi);
    lo = __dp4a((int)(w.z & 0x0F0F0F0Fu), xa.z, lo);
    hi = dp4a_us(w.z & 0xF0F0F0F0u, xb.z, hi);
    lo = __dp4a((int)(w.w & 0x0F0F0F0Fu), xa.w, lo);
    hi = dp4a_us(w.w & 0xF0F0F0F0u, xb.w, hi);
    return lo + (hi >> 4);
}

/* How q4q8_rows reads x, a kc_q8blk (3 x int4) per block and row: */
#define XLOAD_CA 0  /* ld.global.ca: coherent (PDL-safe; see q8x_load_x) - the streaming default */
#define XLOAD_NC 1  /* ld.global.nc (__ldg): the read-only path, NOT PDL-safe - option q8wide=nc, A/B only */
#define XLOAD_SMEM 2 /* from shared memory (xq points there): matvec_q8s_kernel */
#define XLOAD_CG 3   /* ld.global.cg, L2 only: x written by the same grid (bench_gemv's persistent chain) */
template <int XM>
__device__ __forceinline__ int4 q8_xload(const int4 *p)
{
    if (XM == XLOAD_CA) return __ldca(p);
    if (XM == XLOAD_NC) return __ldg(p);
    if (XM == XLOAD_CG) return __ldcg(p);
    return *p;
}

/* The dot products of NR rows with xq for one warp: U blocks per lane loaded before any is used.
 * qrow[i]: the row's quant plane as uint4 (one per block), drow[i]: its scales; nb blocks.
 * Returns the full sums in out[i] on every lane. x read as XM says. */
template <int NR, int U, int XM = XLOAD_CA>
__device__ __forceinline__ void q4q8_rows(const uint4 *const (&qrow)[NR], const __half *const (&drow)[NR], int nb,
                                          const kc_q8blk *__restrict__ xq, float (&out)[NR])
{
    const int lane = threadIdx.x & 31;
    float acc[NR];
#pragma unroll
    for (int i = 0; i < NR; i++) acc[i] = 0.0f;
    for (int b0 = lane; b0 < nb; b0 += 32 * U) {
        uint4 w[U][NR];
        float dw[U][NR];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int b = b0 + 32 * u;
#pragma unroll
            for (int i = 0; i < NR; i++) {
                if (b < nb) {
                    w[u][i] = __ldg(qrow[i] + b);
                    dw[u][i] = __half2float(__ldg(drow[i] + b));
                } else {
                    w[u][i] = make_uint4(0, 0, 0, 0);
                    dw[u][i] = 0.0f;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int b = b0 + 32 * u;
            if (b < nb) {
                const int4 *xv = (const int4 *)(xq + b); /* the predecessor's output: not __ldg (PDL, see q8x_load_x) */
                const int4 xa = q8_xload<XM>(xv), xb = q8_xload<XM>(xv + 1), xe = q8_xload<XM>(xv + 2);
                const float xd = __int_as_float(xe.x);
#pragma unroll
                for (int i = 0; i < NR; i++) {
                    const int c = q4q8_block_dot(w[u][i], xa, xb, xe.y);
                    const float s = dw[u][i] * xd;
                    acc[i] = acc[i] + s * (float)c;
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < NR; i++) out[i] = warp_sum(acc[i]);
}

#define Q8M_WARPS 8 /* warps per block of the q4 x q8 kernels */
#define Q8_PREFETCH_BYTES 4096 /* per row: the quants L2-prefetched before kc_pdl_begin */

/* Before waiting on the previous kernel (PDL), ask L2 for the first Q8_PREFETCH_BYTES of each of the
 * warp's R rows and their first 512 bytes of scales: the weights do not depend on that kernel, so
 * HBM keeps streaming through its tail and the launch gap (cuda/PERF-NOTES.md v7). */
template <int R>
__device__ __forceinline__ void q4q8_prefetch(const uint4 *const (&qrow)[R], const __half *const (&drow)[R], int nb)
{
    const int lane = threadIdx.x & 31;
    const int qb = nb * 16 < Q8_PREFETCH_BYTES ? nb * 16 : Q8_PREFETCH_BYTES;
    const int sb = nb * 2 < 512 ? nb * 2 : 512;
#pragma unroll
    for (int i = 0; i < R; i++) {
        for (int c = lane * 128; c < qb; c += 32 * 128)
            asm volatile("prefetch.global.L2 [%0];" ::"l"((const char *)qrow[i] + c));
        for (int c = lane * 128; c < sb; c += 32 * 128)
            asm volatile("prefetch.global.L2 [%0];" ::"l"((const char *)drow[i] + c));
    }
}

/* The next GEMV's weights into L2 (kc_set_prefetch_next): the plan's ranges are cut into granules of
 * PF_GRANULE bytes, numbered range after range, and warp w of nw takes granules w, w + nw, ...
 * Lane 0 issues each as ONE bulk prefetch (cp.async.bulk.prefetch, sm_90: no registers, no
 * completion to wait for), so a 16 MB plan costs ~1000 instructions across the grid, where
 * per-line prefetch.global.L2 (v7) cost one per 128 bytes. */
#define PF_GRANULE 16384
__device__ __forceinline__ void pf_issue(const kc_pf &pf, int w, int nw)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if ((threadIdx.x & 31) || w < 0) return;
    unsigned g = (unsigned)w;
#pragma unroll
    for (int r = 0; r < KC_PF_RANGES; r++) { /* unrolled: constant indices keep pf out of local memory */
        if (r >= pf.nr) break;
        const unsigned n = pf.n[r], ng = (n + PF_GRANULE - 1) / PF_GRANULE;
        for (; g < ng; g += (unsigned)nw) {
            const unsigned off = g * PF_GRANULE, len = n - off < PF_GRANULE ? n - off : PF_GRANULE;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"((const char *)pf.p[r] + off), "r"(len)
                         : "memory");
        }
        g -= ng;
    }
#endif
}

/* Up to KC_Q8_MATS matrices of one width in one launch: row group gg in [gstart[i], gstart[i+1])
 * is rows (gg - gstart[i])*R.. of W[i]. */
typedef struct q8_job {
    kc_mat W[KC_Q8_MATS];
    float *y[KC_Q8_MATS];
    int gstart[KC_Q8_MATS + 1];
    int n, accumulate, prefetch;
    int early; /* x-stationary: the warp's first row of weights loaded before the PDL wait (kc_mat.early) */
    kc_pf pf; /* the next GEMV's weights (kc_set_prefetch_next) */
} q8_job;

/* which of the job's matrices row group gg falls in */
__device__ __forceinline__ int q8_job_mat(const q8_job &job, int gg)
{
    int mi = 0;
#pragma unroll
    for (int i = 1; i < KC_Q8_MATS; i++)
        if (i < job.n && gg >= job.gstart[i]) mi = i;
    return mi;
}

/* xs (nb, 3 int4) = xq (nb,) by the whole block with loads that bypass L1 (xq is a predecessor's
 * output, or this grid's, written before a grid barrier: see q8x_load_x), then a block barrier */
__device__ __forceinline__ void q8_copy_x_smem(const kc_q8blk *xq, int nb, int4 *xs)
{
    for (int i = threadIdx.x; i < nb * 3; i += blockDim.x) xs[i] = __ldcg((const int4 *)xq + i);
    __syncthreads();
}

/* y[i] (W[i].rows,) [+]= W[i] . x, x as xq (cols/32,) blocks. Rows past a matrix's end repeat its
 * last row's loads (in bounds) and are not stored. */
template <int R, int U, int XM = XLOAD_CA>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_q8_kernel(const q8_job job, const kc_q8blk *__restrict__ xq)
{
    const int lane = threadIdx.x & 31;
    const int gg = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5), nw = gridDim.x * Q8M_WARPS;
    if (job.pf.nr) /* numbered from the grid's end: the blocks scheduled last prefetch (every warp has
                    * its own index below nw, so no granule is issued twice) */
        pf_issue(job.pf, nw - 1 - gg, nw);
    if (gg >= job.gstart[job.n]) {
        kc_pdl_begin();
        return;
    }
    int mi = 0; /* q8_job_mat inlined by hand: the measured default down projection's PTX (v13) */
#pragma unroll
    for (int i = 1; i < KC_Q8_MATS; i++)
        if (i < job.n && gg >= job.gstart[i]) mi = i;
    const kc_mat &W = job.W[mi];
    const int rows = W.rows, nb = W.cols / 32;
    float *y = job.y[mi];
    const int r0 = (gg - job.gstart[mi]) * R;
    const uint4 *qrow[R];
    const __half *drow[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const int r = r0 + i < rows ? r0 + i : rows - 1;
        qrow[i] = (const uint4 *)W.data + (size_t)r * nb;
        drow[i] = W.d + (size_t)r * nb;
    }
    if (job.prefetch) q4q8_prefetch<R>(qrow, drow, nb);
    kc_pdl_begin();
    float s[R];
    q4q8_rows<R, U, XM>(qrow, drow, nb, xq, s);
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < R; i++)
            if (r0 + i < rows) y[r0 + i] = job.accumulate ? y[r0 + i] + s[i] : s[i];
    }
}

/* The streaming kernel's rows on a persistent grid with x in shared memory (option q8wide=smem):
 * each block copies the nb x blocks (nb * 48 bytes: 26 KB for the 17408-wide down projection) once,
 * after the PDL wait, with coherent loads, then its warps walk R-row groups with the grid's stride,
 * reading x from shared memory. Why: the streaming kernel re-reads x from L1 for every row (3
 * LDG.128 per block and row: 2.7x the weight bytes through L1), and the coherent loads it needs
 * under PDL (XLOAD_CA) looked slower than the read-only path (PERF-NOTES v12). Per row the same
 * arithmetic in the same order as q4q8_rows: bit-identical to matvec_q8_kernel. */
template <int R, int U>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_q8s_kernel(const q8_job job, const kc_q8blk *__restrict__ xq)
{
    extern __shared__ int4 xsm[]; /* (nb, 3): the kc_q8blk blocks of x */
    kc_pdl_begin();
    const int lane = threadIdx.x & 31, nb = job.W[0].cols / 32;
    const int total = job.gstart[job.n], stride = gridDim.x * Q8M_WARPS, w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5);
    q8_copy_x_smem(xq, nb, xsm);
    if (job.pf.nr && w0 >= total) pf_issue(job.pf, w0, stride);
    for (int gg = w0; gg < total; gg += stride) {
        if (job.pf.nr && gg + stride >= total) pf_issue(job.pf, w0, stride);
        const int mi = q8_job_mat(job, gg);
        const kc_mat &W = job.W[mi];
        const int rows = W.rows;
        const int r0 = (gg - job.gstart[mi]) * R;
        const uint4 *qrow[R];
        const __half *drow[R];
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int r = r0 + i < rows ? r0 + i : rows - 1;
            qrow[i] = (const uint4 *)W.data + (size_t)r * nb;
            drow[i] = W.d + (size_t)r * nb;
        }
        float s[R];
        q4q8_rows<R, U, XLOAD_SMEM>(qrow, drow, nb, (const kc_q8blk *)xsm, s);
        if (lane == 0) {
            float *y = job.y[mi];
#pragma unroll
            for (int i = 0; i < R; i++)
                if (r0 + i < rows) y[r0 + i] = job.accumulate ? y[r0 + i] + s[i] : s[i];
        }
    }
}

/* y (G.rows,) = silu(G . x) * (U . x): row group g = gate and up rows g*P.. (2P streams).
 * yq != NULL (G.rows % 32 == 0): y is also quantised (quantize_q8) for the down projection: each
 * block (8P rows, inside one group of 32) counts its rows into cnt[r/32] after a fence; the block
 * that completes a group quantises it and re-arms the counter (cnt (G.rows/32,) zero between calls).
 * Counting per warp instead cost +5.6 us per launch (27B: 17408 fences and atomics). */
template <int P, int U>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_swiglu_q8_kernel(const kc_mat G, const kc_mat Up,
                                                                           const kc_q8blk *__restrict__ xq,
                                                                           float *__restrict__ y,
                                                                           kc_q8blk *__restrict__ yq,
                                                                           unsigned int *__restrict__ cnt)
{
    const int lane = threadIdx.x & 31;
    const int nb = G.cols / 32, ng = (G.rows + P - 1) / P;
    const int g = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5);
    if (g >= ng) {
        kc_pdl_begin();
        return;
    }
    const int r0 = g * P;
    const uint4 *qrow[2 * P];
    const __half *drow[2 * P];
#pragma unroll
    for (int i = 0; i < P; i++) {
        const int r = r0 + i < G.rows ? r0 + i : G.rows - 1;
        qrow[i] = (const uint4 *)G.data + (size_t)r * nb;
        drow[i] = G.d + (size_t)r * nb;
        qrow[P + i] = (const uint4 *)Up.data + (size_t)r * nb;
        drow[P + i] = Up.d + (size_t)r * nb;
    }
    if (G.prefetch) q4q8_prefetch<2 * P>(qrow, drow, nb);
    kc_pdl_begin();
    float s[2 * P];
    q4q8_rows<2 * P, U>(qrow, drow, nb, xq, s);
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < P; i++)
            if (r0 + i < G.rows) y[r0 + i] = s[i] / (1.0f + expf(-s[i])) * s[P + i];
    }
    if (yq) { /* every block is full here: rows % 32 == 0 and 8P rows per block divide 32 */
        __shared__ int last;
        const int grp = r0 / 32;
        __syncthreads(); /* the block's rows are written */
        if (threadIdx.x == 0) {
            __threadfence(); /* ... and visible before the block is counted */
            last = atomicAdd(&cnt[grp], (unsigned)(Q8M_WARPS * P)) + Q8M_WARPS * P == 32;
        }
        __syncthreads();
        if (last && threadIdx.x < 32) {
            __threadfence();
            q8_quantize_warp(__ldcg(&y[grp * 32 + lane]), yq + grp);
            if (lane == 0) cnt[grp] = 0;
        }
    }
}

/* ---- x-stationary variant (v10): each lane keeps its activation blocks in registers ----
 * Lane l of every warp only ever needs the x blocks b = l, l+32, ..., l+32(NBL-1) (the lane-strided
 * order), whatever the row. So a persistent grid of warps loads its x blocks ONCE (after the PDL
 * wait) and then walks rows with the grid's stride, each row costing only its weight loads: all
 * NBL 16-byte loads of a row are issued before the first is used. Why: the v6 kernel reloads x (3
 * LDG.128 per block per row: 3x the weight bytes through L1) and keeps one block per lane in flight;
 * bench_gemv showed 5120-column matrices at 2.2-3.4 TB/s. Per row the arithmetic and its order are
 * q4q8_rows' (bit-identical), so the CPU twin matvec_q8 still matches bit for bit. cols <= 1024*NBL. */
template <int NBL>
__device__ __forceinline__ void q8x_load_w(const uint4 *__restrict__ q, const __half *__restrict__ d, int nb,
                                           uint4 (&w)[NBL], float (&dw)[NBL])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 0; k < NBL; k++) {
        const int b = lane + 32 * k;
        if (b < nb) {
            w[k] = __ldg(q + b);
            dw[k] = __half2float(__ldg(d + b));
        } else {
            w[k] = make_uint4(0, 0, 0, 0);
            dw[k] = 0.0f;
        }
    }
}

template <int NBL>
__device__ __forceinline__ float q8x_dot(const uint4 (&w)[NBL], const float (&dw)[NBL], int nb, const int4 (&xa)[NBL],
                                         const int4 (&xb)[NBL], const float (&xd)[NBL], const int (&xs)[NBL])
{
    const int lane = threadIdx.x & 31;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < NBL; k++) {
        if (lane + 32 * k < nb) {
            const int c = q4q8_block_dot(w[k], xa[k], xb[k], xs[k]);
            const float sc = dw[k] * xd[k];
            acc = acc + sc * (float)c;
        }
    }
    return warp_sum(acc);
}

/* xq is written by the previous kernel, which under PDL may still run while this one is resident:
 * it is read with ld.global.ca (__ldca), never through the read-only path (__ldg / ld.global.nc
 * assert the data do not change during the kernel and may be scheduled above the PDL wait;
 * docs/cuda-engine.md "PDL", cuda/PERF-NOTES.md v11). XM: another source (XLOAD_SMEM: xq in shared
 * memory; XLOAD_CG: through L2 only). */
template <int NBL, int XM = XLOAD_CA>
__device__ __forceinline__ void q8x_load_x(const kc_q8blk *__restrict__ xq, int nb, int4 (&xa)[NBL], int4 (&xb)[NBL],
                                           float (&xd)[NBL], int (&xs)[NBL])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 0; k < NBL; k++) {
        const int b = lane + 32 * k;
        if (b < nb) {
            const int4 *xv = (const int4 *)(xq + b);
            xa[k] = q8_xload<XM>(xv);
            xb[k] = q8_xload<XM>(xv + 1);
            const int4 xe = q8_xload<XM>(xv + 2);
            xd[k] = __int_as_float(xe.x);
            xs[k] = xe.y;
        } else {
            xa[k] = xb[k] = make_int4(0, 0, 0, 0);
            xd[k] = 0.0f;
            xs[k] = 0;
        }
    }
}


/* the weights of the job's row gg (one row per warp step) into w, dw (q8x_load_w) */
template <int NBL>
__device__ __forceinline__ void q8_job_load_row(const q8_job &job, int gg, int nb, uint4 (&w)[NBL], float (&dw)[NBL])
{
    const int mi = q8_job_mat(job, gg), r = gg - job.gstart[mi];
    q8x_load_w<NBL>((const uint4 *)job.W[mi].data + (size_t)r * nb, job.W[mi].d + (size_t)r * nb, nb, w, dw);
}

/* the q8_job matrices (rows concatenated, one row per warp step, R = 1), x stationary.
 * job.early (option gemv_early): the warp's first row of weights is loaded BEFORE kc_pdl_begin —
 * weights never change during the run, so this is the one thing a kernel may read while its
 * predecessor still runs (x, the predecessor's output, only after the wait and never through the
 * read-only path: docs/cuda-engine.md "PDL"); the first HBM round trip then overlaps the
 * predecessor's tail. Same arithmetic, same bits. */
template <int NBL>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_q8x_kernel(const q8_job job, const kc_q8blk *__restrict__ xq)
{
    const int lane = threadIdx.x & 31, nb = job.W[0].cols / 32;
    const int total = job.gstart[job.n], stride = gridDim.x * Q8M_WARPS, w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5);
    const bool early = job.early && w0 < total;
    uint4 w[NBL];
    float dw[NBL];
    if (early) q8_job_load_row<NBL>(job, w0, nb, w, dw);
    kc_pdl_begin();
    int4 xa[NBL], xb[NBL];
    float xd[NBL];
    int xs[NBL];
    q8x_load_x<NBL>(xq, nb, xa, xb, xd, xs);
    if (job.pf.nr && w0 >= total) pf_issue(job.pf, w0, stride); /* no row: at once */
    for (int gg = w0; gg < total; gg += stride) {
        if (job.pf.nr && gg + stride >= total) pf_issue(job.pf, w0, stride); /* its last row */
        const int mi = q8_job_mat(job, gg);
        const kc_mat &W = job.W[mi];
        const int r = gg - job.gstart[mi];
        if (!early || gg != w0)
            q8x_load_w<NBL>((const uint4 *)W.data + (size_t)r * nb, W.d + (size_t)r * nb, nb, w, dw);
        const float s = q8x_dot<NBL>(w, dw, nb, xa, xb, xd, xs);
        if (lane == 0) {
            float *y = job.y[mi];
            y[r] = job.accumulate ? y[r] + s : s;
        }
    }
}

/* y (G.rows,) = silu(G . x) * (U . x), x stationary, one gate/up row pair per warp step; G.early:
 * the first pair's weights before the PDL wait (as matvec_q8x_kernel) */
template <int NBL>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_swiglu_q8x_kernel(const kc_mat G, const kc_mat Up,
                                                                            const kc_q8blk *__restrict__ xq,
                                                                            float *__restrict__ y, const kc_pf pf)
{
    const int lane = threadIdx.x & 31, nb = G.cols / 32;
    const int w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5), stride = gridDim.x * Q8M_WARPS;
    const bool early = G.early && w0 < G.rows;
    uint4 wg[NBL], wu[NBL];
    float dg[NBL], du[NBL];
    if (early) {
        q8x_load_w<NBL>((const uint4 *)G.data + (size_t)w0 * nb, G.d + (size_t)w0 * nb, nb, wg, dg);
        q8x_load_w<NBL>((const uint4 *)Up.data + (size_t)w0 * nb, Up.d + (size_t)w0 * nb, nb, wu, du);
    }
    kc_pdl_begin();
    int4 xa[NBL], xb[NBL];
    float xd[NBL];
    int xs[NBL];
    q8x_load_x<NBL>(xq, nb, xa, xb, xd, xs);
    if (pf.nr && w0 >= G.rows) pf_issue(pf, w0, stride);
    for (int r = w0; r < G.rows; r += stride) {
        if (pf.nr && r + stride >= G.rows) pf_issue(pf, w0, stride);
        if (!early || r != w0) {
            q8x_load_w<NBL>((const uint4 *)G.data + (size_t)r * nb, G.d + (size_t)r * nb, nb, wg, dg);
            q8x_load_w<NBL>((const uint4 *)Up.data + (size_t)r * nb, Up.d + (size_t)r * nb, nb, wu, du);
        }
        const float g = q8x_dot<NBL>(wg, dg, nb, xa, xb, xd, xs);
        const float u = q8x_dot<NBL>(wu, du, nb, xa, xb, xd, xs);
        if (lane == 0) y[r] = g / (1.0f + expf(-g)) * u;
    }
}

/* ---- x in shared memory, all of a row's loads in flight (q8wide=xs; the fused FFN's down phase) ----
 * For matrices too wide for x in registers (the 17408-wide down projection: 17 blocks per lane would
 * take 170 registers of x): each block copies x once into shared memory, and each warp issues ALL
 * NBL 16-byte loads of a row before the first is used, as the x-stationary kernel does. Why: the
 * streaming kernel (U = 1) keeps one block per lane in flight — 512 bytes per warp, ~2 MB on the
 * whole device, below the ~7 MB that 4.4 TB/s x ~1.5 us of loaded latency needs (bench_gemv: the
 * down projection at 2.85 TB/s where the x-stationary gate/up reach 3.7); v12's q8wide=smem copied
 * x to shared memory but kept the streaming loop, and lost. Per row the arithmetic and its order
 * are q4q8_rows' (lane-strided blocks, then warp_sum): bit-identical to the other q8 kernels. */
template <int NBL>
__device__ __forceinline__ float q8xs_dot(const uint4 (&w)[NBL], const float (&dw)[NBL], int nb,
                                          const kc_q8blk *xs /* (nb,) in shared memory */)
{
    const int lane = threadIdx.x & 31;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < NBL; k++) {
        const int b = lane + 32 * k;
        if (b < nb) {
            const int4 *xv = (const int4 *)(xs + b);
            const int4 xa = xv[0], xb = xv[1], xe = xv[2];
            const int c = q4q8_block_dot(w[k], xa, xb, xe.y);
            const float sc = dw[k] * __int_as_float(xe.x);
            acc = acc + sc * (float)c;
        }
    }
    return warp_sum(acc);
}


/* the q8_job matrices, one row per warp step on a persistent grid (2 blocks per SM: <= 128
 * registers), x in dynamic shared memory ((cols/32) * 48 bytes); job.early as matvec_q8x_kernel.
 * job.pf is not carried out (an option measured slower, v12). */
template <int NBL>
__global__ void __launch_bounds__(32 * Q8M_WARPS, 2) matvec_q8xs_kernel(const q8_job job, const kc_q8blk *__restrict__ xq)
{
    extern __shared__ int4 xsm[]; /* (nb, 3): the kc_q8blk blocks of x */
    const int lane = threadIdx.x & 31, nb = job.W[0].cols / 32;
    const int total = job.gstart[job.n], stride = gridDim.x * Q8M_WARPS, w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5);
    const bool early = job.early && w0 < total;
    uint4 w[NBL];
    float dw[NBL];
    if (early) q8_job_load_row<NBL>(job, w0, nb, w, dw);
    kc_pdl_begin();
    q8_copy_x_smem(xq, nb, xsm);
    for (int gg = w0; gg < total; gg += stride) {
        const int mi = q8_job_mat(job, gg);
        const kc_mat &W = job.W[mi];
        const int r = gg - job.gstart[mi];
        if (!early || gg != w0)
            q8x_load_w<NBL>((const uint4 *)W.data + (size_t)r * nb, W.d + (size_t)r * nb, nb, w, dw);
        const float s = q8xs_dot<NBL>(w, dw, nb, (const kc_q8blk *)xsm);
        if (lane == 0) {
            float *y = job.y[mi];
            y[r] = job.accumulate ? y[r] + s : s;
        }
    }
}

/* ---- the fused FFN (option ffn=fused): normed x -> SwiGLU -> quantise -> down + residual, ONE launch ----
 * Why (cuda/PERF-NOTES.md v13): the FFN is 150 of the 27B's ~217 MB per GDN layer, and as three
 * launches (SwiGLU, quantize_q8, down) it pays two dependent kernel boundaries and the down
 * projection's ramp (~50 us where its bytes need 34). Here a persistent grid (every block resident:
 * the grid is the occupancy, and the next kernel may launch only after the last grid barrier) runs
 * the phases with grid barriers between them, and each warp loads its first row of the down
 * projection BEFORE the first barrier: weights never change, so HBM keeps streaming through the
 * barriers and the quantisation.
 * Phases: (1) ff = silu(G.x) * (U.x), matvec_swiglu_q8x_kernel's per-row arithmetic; barrier;
 * (2) ffq = quantize_q8(ff), one warp per block of 32 (q8_quantize_warp, as quantize_q8_kernel);
 * barrier; (3) y += Dn . ffq with ffq in shared memory, as matvec_q8xs_kernel. So the result is
 * bit-identical to the three launches. */
typedef struct kc_ffn_job {
    kc_mat G, Up, Dn;   /* gate, up (F, D); down (D, F) */
    const kc_q8blk *xq; /* (D/32,) the normed input, quantised (rmsnorm_q8) */
    float *ff;          /* (F,) SwiGLU output */
    kc_q8blk *ffq;      /* (F/32,) ff quantised */
    float *y;           /* (D,) residual stream: y += Dn . ffq */
    unsigned int *bar;  /* (2,) grid barrier: arrivals, generation (zero before the first use) */
} kc_ffn_job;

/* All blocks of the grid (all resident) meet here; writes before it are visible after it to loads
 * that bypass L1 (__ldcg). bar[0] counts arrivals; the last block re-arms it, then bumps the
 * generation bar[1] that the others wait on: no reset between launches or grid sizes. */
/* one thread's arrival and wait (the block's other threads wait at a block barrier around it);
 * SLEEP: back off 32 ns between polls */
template <bool SLEEP>
__device__ __forceinline__ void kc_grid_arrive_wait(unsigned int *bar)
{
    unsigned int gen, now;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(gen) : "l"(bar + 1) : "memory");
    __threadfence(); /* the block's writes before its arrival */
    if (atomicAdd(bar, 1u) == gridDim.x - 1) {
        atomicExch(bar, 0u);
        __threadfence();
        atomicAdd(bar + 1, 1u);
    } else {
        do {
            if (SLEEP) __nanosleep(32);
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(bar + 1) : "memory");
        } while (now == gen);
    }
    __threadfence();
}

__device__ __forceinline__ void kc_grid_barrier(unsigned int *bar)
{
    __syncthreads();
    if (threadIdx.x == 0) kc_grid_arrive_wait<true>(bar);
    __syncthreads();
}

/* The two halves of kc_pdl_begin. A grid with barriers lets the next kernel launch only after its
 * last barrier: that kernel's blocks, resident and waiting, could take the slots that blocks of
 * this grid still need to reach a barrier. */
__device__ __forceinline__ void kc_pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void kc_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <int NBL1, int NBL2>
__global__ void __launch_bounds__(32 * Q8M_WARPS, 2) ffn_q8_kernel(const kc_ffn_job job)
{
    extern __shared__ int4 xsm[]; /* (F/32, 3): ffq */
    const int lane = threadIdx.x & 31;
    const int w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5), stride = gridDim.x * Q8M_WARPS;
    const kc_mat &G = job.G, &Up = job.Up, &Dn = job.Dn;
    const int nb1 = G.cols / 32, F = G.rows, nb2 = Dn.cols / 32, D = Dn.rows;
    { /* (1) SwiGLU, x stationary */
        const bool early = G.early && w0 < F;
        uint4 wg[NBL1], wu[NBL1];
        float dg[NBL1], du[NBL1];
        if (early) {
            q8x_load_w<NBL1>((const uint4 *)G.data + (size_t)w0 * nb1, G.d + (size_t)w0 * nb1, nb1, wg, dg);
            q8x_load_w<NBL1>((const uint4 *)Up.data + (size_t)w0 * nb1, Up.d + (size_t)w0 * nb1, nb1, wu, du);
        }
        kc_pdl_wait();
        kc_trace_mark();
        int4 xa[NBL1], xb[NBL1];
        float xd[NBL1];
        int xs[NBL1];
        q8x_load_x<NBL1>(job.xq, nb1, xa, xb, xd, xs);
        for (int r = w0; r < F; r += stride) {
            if (!early || r != w0) {
                q8x_load_w<NBL1>((const uint4 *)G.data + (size_t)r * nb1, G.d + (size_t)r * nb1, nb1, wg, dg);
                q8x_load_w<NBL1>((const uint4 *)Up.data + (size_t)r * nb1, Up.d + (size_t)r * nb1, nb1, wu, du);
            }
            const float g = q8x_dot<NBL1>(wg, dg, nb1, xa, xb, xd, xs);
            const float u = q8x_dot<NBL1>(wu, du, nb1, xa, xb, xd, xs);
            if (lane == 0) job.ff[r] = g / (1.0f + expf(-g)) * u;
        }
    }
    /* the warp's first down row: in flight through both barriers and the quantisation */
    uint4 w[NBL2];
    float dw[NBL2];
    if (w0 < D) q8x_load_w<NBL2>((const uint4 *)Dn.data + (size_t)w0 * nb2, Dn.d + (size_t)w0 * nb2, nb2, w, dw);
    kc_grid_barrier(job.bar);
    for (int b = w0; b < nb2; b += stride) /* (2) one warp per block of 32 */
        q8_quantize_warp(__ldcg(job.ff + (size_t)b * 32 + lane), job.ffq + b);
    kc_grid_barrier(job.bar);
    kc_pdl_trigger();
    q8_copy_x_smem(job.ffq, nb2, xsm);
    for (int r = w0; r < D; r += stride) { /* (3) down + residual */
        if (r != w0) q8x_load_w<NBL2>((const uint4 *)Dn.data + (size_t)r * nb2, Dn.d + (size_t)r * nb2, nb2, w, dw);
        const float s = q8xs_dot<NBL2>(w, dw, nb2, (const kc_q8blk *)xsm);
        if (lane == 0) job.y[r] = job.y[r] + s;
    }
}

#endif
