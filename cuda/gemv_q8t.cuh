/*
 * cuda/gemv_q8t.cuh - the x-stationary q4_0 x q8 GEMVs with their weights streamed into shared
 * memory by the bulk-copy engine (TMA, sm_90), option q8gemv=tma (issue 6 v15). Included by
 * kernels.cu after gemv_q8.cuh (uses q8x_load_x, q8x_dot, q8_job).
 *
 * Why (cuda/PERF-NOTES.md v13 row 3, v15): the register x-stationary kernel takes a GEMV in ~2-3
 * dependent round trips per warp (one row of weights in registers at a time), so a 5120 x 6144
 * projection takes 8.5 us whether its weights come from HBM or from L2 — latency, not bandwidth.
 * Here each block owns a contiguous range of rows; one producer thread issues bulk copies of whole
 * stages (8 rows, or 8 gate + 8 up rows, quants and scales) into a ring of shared-memory stages, the
 * first ring-full BEFORE the PDL wait (weights never change during the run), so the block's weight
 * stream is in flight while the previous kernel finishes, and costs no registers. Eight consumer
 * warps wait on a stage's mbarrier, each takes one row (pair) of it from shared memory with the
 * x-stationary kernel's arithmetic in its order (q8x_dot: lane-strided blocks, warp_sum): the same
 * bits as matvec_q8x_kernel, hence as the CPU twin matvec_q8. Measured (v15): the 27B step `ab`
 * 0.9777 against the register kernels, mostly where the ring loads in a kernel boundary's shadow
 * (qkv+z after the norm); the SwiGLU also quantises its output, one launch less per layer.
 *
 * Needs nb = cols/32 a multiple of 8 (every stage's scale run is a multiple of 16 bytes) and the
 * planes 16-byte aligned; kc_matvec_q8 falls back to the register kernel otherwise.
 */
#ifndef KESTREL_CUDA_GEMV_Q8T_CUH
#define KESTREL_CUDA_GEMV_Q8T_CUH

#define Q8T_ROWS 8 /* rows (SwiGLU: row pairs) per stage: one per consumer warp (Q8M_WARPS) */
#define Q8T_THREADS (32 * (Q8M_WARPS + 1)) /* 8 consumer warps + 1 producer warp */
#define Q8T_BAR_BYTES 128 /* the ring's mbarriers (full[ns], empty[ns], ns <= 8), then the stages */
#define Q8T_MAX_STAGES 8

#ifdef KC_Q8T_DBG /* bench_gemv only: per-block timeline of the TMA kernels */
/* phases left out (timing only): 1 the producer's bulk copies (it arrives on the full barrier
 * instead), 2 the consumers' dots; matvec_q8t_kernel and matvec_swiglu_q8t_kernel */
/* The bench's switches live in the constant bank: as __device__ globals they were a global load on every
 * row's and stage's path (ncu, PERF-NOTES v26) that the library's kernels do not have. */
__constant__ int g_q8t_skip;
#define Q8T_SKIP(bit) (g_q8t_skip & (bit))
/* where the third mark is taken (bench_gemv --shape gdnwin, KC_GDNWIN_MARK): 0 matvec_q8t_kernel's first
 * stage landed, the delta rule's columns computed; k = 1..8 matvec_q8t_kernel's k-th stage done (its row
 * written by warp 0); 9 the delta rule's state stored (before its gated norm) */
__constant__ int g_q8t_dbg_mark;
typedef struct q8t_dbg_rec {
    unsigned long long t_entry, t_wait, t_first, t_end;
    const void *w;
    int sm, blk;
} q8t_dbg_rec;
__device__ q8t_dbg_rec *g_q8t_dbg;
__device__ unsigned int g_q8t_dbg_n, g_q8t_dbg_cap;
__device__ __forceinline__ unsigned long long q8t_now(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define Q8T_T(v) unsigned long long v = threadIdx.x == 0 ? q8t_now() : 0ull
#define Q8T_REC(w_, a, b, c) Q8T_REC_N(w_, a, b, c, Q8M_WARPS)
#define Q8T_REC_N(w_, a, b, c, nw)                                                                \
    do {                                                                                          \
        asm volatile("bar.sync 1, %0;" ::"r"(32 * (nw)));                                        \
        if (threadIdx.x == 0 && g_q8t_dbg) {                                                      \
            const unsigned i_ = atomicAdd(&g_q8t_dbg_n, 1u);                                      \
            if (i_ < g_q8t_dbg_cap) {                                                             \
                int sm_;                                                                          \
                asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_));                                  \
                q8t_dbg_rec r_ = {a, b, c, q8t_now(), w_, sm_, (int)blockIdx.x};                  \
                g_q8t_dbg[i_] = r_;                                                               \
            }                                                                                     \
        }                                                                                         \
    } while (0)
#else
#ifdef KC_Q8T_SKIPC /* timing-only libraries (results/perf-h200/dev-v24/2-build-bounds.sh): bench_gemv's phases left out of the step */
#define Q8T_SKIP(bit) ((KC_Q8T_SKIPC) & (bit))
#else
#define Q8T_SKIP(bit) 0
#endif
#define Q8T_T(v) const unsigned long long v = 0ull
#define Q8T_REC(w_, a, b, c) do { (void)(a); (void)(b); (void)(c); } while (0)
#define Q8T_REC_N(w_, a, b, c, nw) Q8T_REC(w_, a, b, c)
#endif

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* the producer's arrival, announcing `bytes` of bulk copies that will complete on this barrier */
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* until the barrier's phase with this parity has completed */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n\t.reg .pred done;\n"
                 "wait_again:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra wait_again;\n}" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* bytes (multiple of 16, both addresses 16-byte aligned) global -> shared, completing on bar */
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
#endif
}

/* The ring: ns stages of `stage` bytes after the barriers. Thread 0 initialises; all threads sync. */
__device__ __forceinline__ void q8t_ring_init(unsigned char *smem, int ns, unsigned consumers = Q8M_WARPS)
{
    if (threadIdx.x == 0) {
        for (int i = 0; i < ns; i++) {
            mbar_init(smem_addr(smem + 8 * i), 1);                                /* full: the producer */
            mbar_init(smem_addr(smem + 8 * (Q8T_MAX_STAGES + i)), consumers);    /* empty: each consumer warp */
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
}

/* Rows [r0, r1) of the job's concatenated rows (r1 - r0 <= Q8T_ROWS) into one stage: row j of the
 * stage at quants + j*nb*16, its scales at quants + Q8T_ROWS*nb*16 + j*nb*2 (nb = cols/32). */
__device__ __forceinline__ void q8t_issue_rows(const q8_job &job, int nb, int r0, int r1, unsigned char *stage,
                                               uint32_t bar)
{
    mbar_expect_tx(bar, (uint32_t)(r1 - r0) * (uint32_t)nb * 18u);
#pragma unroll
    for (int i = 0; i < KC_Q8_MATS; i++) {
        if (i >= job.n) break;
        const int lo = r0 > job.gstart[i] ? r0 : job.gstart[i], hi = r1 < job.gstart[i + 1] ? r1 : job.gstart[i + 1];
        if (lo >= hi) continue;
        const size_t local = (size_t)(lo - job.gstart[i]);
        const int j = lo - r0, k = hi - lo;
        bulk_g2s(smem_addr(stage + (size_t)j * nb * 16), (const unsigned char *)job.W[i].data + local * nb * 16,
                 (uint32_t)k * nb * 16, bar);
        bulk_g2s(smem_addr(stage + (size_t)Q8T_ROWS * nb * 16 + (size_t)j * nb * 2), job.W[i].d + local * nb,
                 (uint32_t)k * nb * 2, bar);
    }
}

/* row j of a stage against the lane's x blocks: q8x_dot's arithmetic in its order (same bits), the
 * weights read from shared memory as they are used (no registers held for them).
 * FULL: nb == 32 * NBL, every lane has all NBL blocks, so no block is guarded. Why: each guard is a
 * branch region (BSSY/BSYNC) the compiler does not schedule across, so one block's four-deep dp4a
 * chains ran alone; ncu put the down projection's per-row code at 40 instructions per block, 5 of
 * them the guard, its warps mostly in fixed-latency and shared-memory waits (PERF-NOTES v22). Every
 * 27B and 9B matrix width is a multiple of 32 blocks. Same operations in the same order: same bits. */
template <int NBL, bool FULL = false>
__device__ __forceinline__ float q8t_dot(const unsigned char *stage, int nb, int j, const int4 (&xa)[NBL],
                                         const int4 (&xb)[NBL], const float (&xd)[NBL], const int (&xs)[NBL])
{
    const int lane = threadIdx.x & 31;
    const uint4 *q = (const uint4 *)(stage + (size_t)j * nb * 16);
    const __half *d = (const __half *)(stage + (size_t)Q8T_ROWS * nb * 16 + (size_t)j * nb * 2);
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < NBL; k++) {
        const int b = lane + 32 * k;
        if (FULL || b < nb) {
            const int c = q4q8_block_dot(q[b], xa[k], xb[k], xs[k]);
            const float sc = __half2float(d[b]) * xd[k];
            acc = acc + sc * (float)c;
        }
    }
    return warp_sum(acc);
}

/* the same with x from shared memory (xs (nb,) blocks): XS kernels, fewer registers; rps rows per
 * stage (the scales after rps rows of quants) */
__device__ __forceinline__ float q8t_dot_xs(const unsigned char *stage, int nb, int j, int nbl,
                                            const kc_q8blk *xs, int rps = Q8T_ROWS)
{
    const int lane = threadIdx.x & 31;
    const uint4 *q = (const uint4 *)(stage + (size_t)j * nb * 16);
    const __half *d = (const __half *)(stage + (size_t)rps * nb * 16 + (size_t)j * nb * 2);
    float acc = 0.0f;
    for (int k = 0; k < nbl; k++) {
        const int b = lane + 32 * k;
        if (b < nb) {
            const int4 *xv = (const int4 *)(xs + b);
            const int4 xa = xv[0], xb = xv[1], xe = xv[2];
            const int c = q4q8_block_dot(q[b], xa, xb, xe.y);
            const float sc = __half2float(d[b]) * __int_as_float(xe.x);
            acc = acc + sc * (float)c;
        }
    }
    return warp_sum(acc);
}

/* q8t_dot_xs for NBL blocks per lane known at compile time (the wide down projection: 12 on the 9B,
 * 17 on the 27B): the loads of a chunk of Q8T_XS_CHUNK blocks issued before any is used, the chunks
 * unrolled, so a warp keeps several shared-memory round trips in flight where the run-time loop waited
 * on each (one block per SM, 2 consumer warps per scheduler: bench_gemv --shape dtma put the down
 * projection's dots alone at 12.4 us of its 18.2, PERF-NOTES v18 row 2). Same operations in the same
 * order as q8t_dot_xs: the same bits. */
#define Q8T_XS_CHUNK 4
template <int NBL, bool FULL = false> /* FULL: nb == 32 * NBL, no block guarded (as q8t_dot) */
__device__ __forceinline__ float q8t_dot_xs_u(const unsigned char *stage, int nb, int j, const kc_q8blk *xs)
{
    const int lane = threadIdx.x & 31;
    const uint4 *q = (const uint4 *)(stage + (size_t)j * nb * 16);
    const __half *d = (const __half *)(stage + (size_t)Q8T_ROWS * nb * 16 + (size_t)j * nb * 2);
    float acc = 0.0f;
#pragma unroll
    for (int k0 = 0; k0 < NBL; k0 += Q8T_XS_CHUNK) {
        uint4 w[Q8T_XS_CHUNK];
        int4 xa[Q8T_XS_CHUNK], xb[Q8T_XS_CHUNK], xe[Q8T_XS_CHUNK];
        __half dh[Q8T_XS_CHUNK];
#pragma unroll
        for (int i = 0; i < Q8T_XS_CHUNK; i++) {
            const int b = lane + 32 * (k0 + i);
            if (k0 + i < NBL && (FULL || b < nb)) {
                const int4 *xv = (const int4 *)(xs + b);
                w[i] = q[b];
                dh[i] = d[b];
                xa[i] = xv[0];
                xb[i] = xv[1];
                xe[i] = xv[2];
            }
        }
#pragma unroll
        for (int i = 0; i < Q8T_XS_CHUNK; i++) {
            const int b = lane + 32 * (k0 + i);
            if (k0 + i < NBL && (FULL || b < nb)) {
                const int c = q4q8_block_dot(w[i], xa[i], xb[i], xe[i].y);
                const float sc = __half2float(dh[i]) * __int_as_float(xe[i].x);
                acc = acc + sc * (float)c;
            }
        }
    }
    return warp_sum(acc);
}

/* ---- rmsnorm8_q8's arithmetic, shared by that kernel and the norm folded into a GEMV's tail ----
 * Thread t of the norm owns x[8t .. 8t+8) as two float4 (a, b) and w likewise (wa, wb). */
__device__ __forceinline__ float rms8_sumsq(const float4 a, const float4 b)
{
    float ss = a.x * a.x;
    ss += a.y * a.y;
    ss += a.z * a.z;
    ss += a.w * a.w;
    ss += b.x * b.x;
    ss += b.y * b.y;
    ss += b.z * b.z;
    ss += b.w * b.w;
    return ss;
}
/* y[8t .. 8t+8) = x * inv * w, and quantize_q8 of the block of 32 held by threads 4j..4j+3 (a warp's
 * lanes 4j..4j+3: every lane of the warp must call it) into yq (n/32,); WY = 0: y not written */
template <int WY>
__device__ __forceinline__ void rms8_emit_t(const float4 a, const float4 b, const float4 wa, const float4 wb, float inv,
                                            int t, float *y, kc_q8blk *yq)
{
    const float v[8] = {a.x * inv * wa.x, a.y * inv * wa.y, a.z * inv * wa.z, a.w * inv * wa.w,
                        b.x * inv * wb.x, b.y * inv * wb.y, b.z * inv * wb.z, b.w * inv * wb.w};
    if (WY) {
        ((float4 *)y)[2 * t] = make_float4(v[0], v[1], v[2], v[3]);
        ((float4 *)y)[2 * t + 1] = make_float4(v[4], v[5], v[6], v[7]);
    }
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const float f = fabsf(v[k]);
        amax = (f > amax || f != f) ? f : amax;
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, amax, off);
        amax = (o > amax || o != o) ? o : amax;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = amax > 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    uint32_t packed[2] = {0, 0};
    int sum = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        float s = __fmul_rn(v[k], id);
        int q = 0;
        if (s == s) {
            s = fminf(fmaxf(s, -127.0f), 127.0f);
            q = __float2int_rn(s);
        }
        sum += q;
        packed[k / 4] |= (uint32_t)(q & 0xff) << (8 * (k % 4));
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    kc_q8blk *blk = yq + t / 4;
    *(uint2 *)(blk->q + 8 * (t % 4)) = make_uint2(packed[0], packed[1]);
    if (t % 4 == 0) {
        blk->d = d;
        blk->s8 = -8 * sum;
        blk->pad[0] = 0;
        blk->pad[1] = 0;
    }
}
__device__ __forceinline__ void rms8_emit(const float4 a, const float4 b, const float4 wa, const float4 wb, float inv,
                                          int t, float *y, kc_q8blk *yq)
{
    rms8_emit_t<1>(a, b, wa, wb, inv, t, y, yq);
}

/* inv = rsqrt(mean(x^2) + eps) over the n/8 virtual threads whose (a, b) = x[8t .. 8t+8) the 256
 * consumer threads hold, R rounds each (warp w plays the norm kernel's warps w, w+8, ...):
 * rmsnorm8_q8_kernel's two-level sums (warp_sum per virtual warp into red (n/256,) shared, then
 * warp_sum of red), so the same bits. Shared by the tail norm and the folded one. */
template <int R>
__device__ __forceinline__ float rms8_inv(const float4 (&a)[R], const float4 (&b)[R], int n, float eps, float *red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nvw = n / 256;
#pragma unroll
    for (int r = 0; r < R; r++)
        if (warp + Q8M_WARPS * r < nvw) {
            const float ss = warp_sum(rms8_sumsq(a[r], b[r]));
            if (lane == 0) red[warp + Q8M_WARPS * r] = ss;
        }
    asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
    float tot = lane < nvw ? red[lane] : 0.0f; /* block_sum's second level */
    tot = warp_sum(tot);
    return rsqrtf(tot / (float)n + eps);
}

/* ---- the NEXT RMS norm computed in a residual GEMV's tail (option norm_tail) ----
 * After its rows are written, every block counts itself into *cnt (a fence first: its rows visible
 * before the count); the block that counts last computes kc_rmsnorm_q8(nm.x, nm.w) -> nm.xn, nm.xq
 * with rmsnorm8_q8_kernel's arithmetic: its 8 consumer warps play that kernel's n/256 warps (warp w:
 * w, w+8, ...; the sums of squares in the same order, the same two-level warp_sum), every load of x
 * (through L2: other blocks wrote it) and of w issued before the first is used; then re-arms *cnt.
 * The norm kernel's launch and its kernel boundary go (PERF-NOTES v16). n % 256 == 0, n <= 8192;
 * scratch: 256 + 4n bytes of shared memory no longer in use (the ring, all of its stages consumed).
 * Only the 256 consumer threads call it. */
#define RMS8_TAIL_ROUNDS 4 /* n/256 virtual warps over 8 warps: n <= 8192 */
__device__ __forceinline__ void q8t_tail_norm(const kc_rmsq &nm, unsigned int *cnt, unsigned char *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nvw = nm.n / 256;
    float *red = (float *)scratch;
    volatile int *last = (volatile int *)(scratch + 128);
    float *wsm = (float *)(scratch + 256); /* (n,) the norm's weight: each thread copies the part it uses */
    asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory"); /* the block's rows written, its ring idle */
    if (threadIdx.x == 0) {
        __threadfence();
        *last = atomicAdd(cnt, 1u) == gridDim.x - 1;
    }
    asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
    if (!*last) return;
    __threadfence(); /* every other block's rows, counted before ours, are visible */
    /* x (through L2: other blocks wrote it) into registers, w into shared memory by cp.async (no
     * registers: the down projection's kernel runs at 72), all in flight at once */
    float4 a[RMS8_TAIL_ROUNDS], b[RMS8_TAIL_ROUNDS];
#pragma unroll
    for (int r = 0; r < RMS8_TAIL_ROUNDS; r++) {
        const int t = (warp + Q8M_WARPS * r) * 32 + lane;
        if (warp + Q8M_WARPS * r < nvw) {
            asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(smem_addr(wsm + 8 * t)), "l"(nm.w + 8 * t)
                         : "memory");
            asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(smem_addr(wsm + 8 * t + 4)),
                         "l"(nm.w + 8 * t + 4)
                         : "memory");
            a[r] = __ldcg((const float4 *)nm.x + 2 * t);
            b[r] = __ldcg((const float4 *)nm.x + 2 * t + 1);
        }
    }
    const float inv = rms8_inv<RMS8_TAIL_ROUNDS>(a, b, nm.n, nm.eps, red);
    asm volatile("cp.async.wait_all;" ::: "memory"); /* this thread's copies: the only ones it reads */
#pragma unroll
    for (int r = 0; r < RMS8_TAIL_ROUNDS; r++)
        if (warp + Q8M_WARPS * r < nvw) {
            const int t = (warp + Q8M_WARPS * r) * 32 + lane;
            rms8_emit(a[r], b[r], *(const float4 *)(wsm + 8 * t), *(const float4 *)(wsm + 8 * t + 4), inv, t, nm.xn,
                      nm.xq);
        }
    if (threadIdx.x == 0) *cnt = 0;
}

/* ---- the layer's RMS norm folded into the GEMV that consumes it (option rms_fold) ----
 * kc_rmsnorm_q8 (rmsnorm8_q8_kernel: one block of n/8 threads, thread t owning x[8t..8t+8)) computes
 * the sum of squares per thread in a fixed order, sums each warp by warp_sum and the warps' sums by
 * block_sum's second warp_sum, then v = x * inv * w and quantize_q8 per block of 32 (rms8_emit). Here
 * the 256 consumer threads of every block redo it for the whole vector: warp w plays that kernel's
 * warps w, w+8, w+16 (same per-thread order, same butterflies, the same rms8_emit), so inv, v and the
 * q8 blocks are the same bits; the q8 blocks go to shared memory, the GEMV's x. Block 0 also writes xn
 * and xq, as the norm kernel did, for any later reader. The weight w is loaded before the PDL wait
 * (q8t_rms_load_w: it never changes), x after it with every load in flight, so the fold costs one L2
 * round trip — the one the GEMV's own x load took — plus its arithmetic and two barriers. Why: the
 * norm kernel costs ~1.1 us of the step per norm (v17 knockouts, 128 per 27B token); the first form
 * of this fold (v15) loaded w and x block by block, 20 dependent round trips per warp, and made the
 * step 20% slower (PERF-NOTES v22). */
#define RMS8_FOLD_ROUNDS 3 /* n/256 virtual warps over 8 warps: n <= 6144, the x-stationary widths */
typedef struct q8t_rms_w {
    float4 a[RMS8_FOLD_ROUNDS], b[RMS8_FOLD_ROUNDS]; /* w[8t .. 8t+8) of the thread's virtual threads t */
} q8t_rms_w;

__device__ __forceinline__ void q8t_rms_load_w(const kc_rmsq &nm, q8t_rms_w &w)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nvw = nm.n / 256;
#pragma unroll
    for (int r = 0; r < RMS8_FOLD_ROUNDS; r++)
        if (warp + Q8M_WARPS * r < nvw) {
            const int t = (warp + Q8M_WARPS * r) * 32 + lane;
            w.a[r] = __ldg((const float4 *)nm.w + 2 * t);
            w.b[r] = __ldg((const float4 *)nm.w + 2 * t + 1);
        }
}

__device__ __forceinline__ void q8t_rms_prologue(const kc_rmsq &nm, const q8t_rms_w &w,
                                                 kc_q8blk *xs /* (n/32,) shared */, float *red /* (32,) shared */)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n = nm.n, nvw = n / 256;
    float4 a[RMS8_FOLD_ROUNDS], b[RMS8_FOLD_ROUNDS];
#pragma unroll
    for (int r = 0; r < RMS8_FOLD_ROUNDS; r++)
        if (warp + Q8M_WARPS * r < nvw) {
            const int t = (warp + Q8M_WARPS * r) * 32 + lane; /* the norm kernel's thread */
            a[r] = __ldca((const float4 *)nm.x + 2 * t);
            b[r] = __ldca((const float4 *)nm.x + 2 * t + 1);
        }
    const float inv = rms8_inv<RMS8_FOLD_ROUNDS>(a, b, n, nm.eps, red);
    const int wy = blockIdx.x == 0 && nm.xn;
#pragma unroll
    for (int r = 0; r < RMS8_FOLD_ROUNDS; r++)
        if (warp + Q8M_WARPS * r < nvw) {
            const int t = (warp + Q8M_WARPS * r) * 32 + lane;
            if (wy) rms8_emit_t<1>(a[r], b[r], w.a[r], w.b[r], inv, t, nm.xn, xs);
            else rms8_emit_t<0>(a[r], b[r], w.a[r], w.b[r], inv, t, nm.xn, xs);
        }
    asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
    if (blockIdx.x == 0 && nm.xq)
        for (int i = threadIdx.x; i < n / 32 * 3; i += 32 * Q8M_WARPS) ((int4 *)nm.xq)[i] = ((const int4 *)xs)[i];
}

/* The block's share of `units` stages: [u0, u1), contiguous, balanced over the grid. To the stage,
 * not to the row: a row-granular share gave every block a partial last stage and so the maximum
 * stage count, and was slower (PERF-NOTES v15 row 7: these kernels are bound by their blocks'
 * stage round trips, not by their bytes). */
__device__ __forceinline__ void q8t_share(int units, int &u0, int &u1)
{
    u0 = (int)((long long)blockIdx.x * units / gridDim.x);
    u1 = (int)((long long)(blockIdx.x + 1) * units / gridDim.x);
}

/* y[i] (W[i].rows,) [+]= W[i] . x for the job's matrices; dynamic shared memory Q8T_BAR_BYTES +
 * ns * Q8T_ROWS * nb * 18 bytes, then (XS or nm.x) x as nb q8 blocks, then (nm.x) 32 floats. XS: x
 * read from shared memory (any width: the down projection); nm.x: the RMS norm folded (rms_fold);
 * tail.x: the next RMS norm of y[0] computed by the grid's last block (norm_tail; tcnt zero between
 * launches). */
template <int NBL, int XS>
__global__ void __launch_bounds__(Q8T_THREADS, XS ? (NBL >= 8 ? 1 : 3) : 2) matvec_q8t_kernel(const q8_job job,
                                                                              const kc_q8blk *__restrict__ xq, int ns,
                                                                              const kc_rmsq nm, const kc_rmsq tail,
                                                                              unsigned int *tcnt)
{
    extern __shared__ __align__(128) unsigned char q8t_smem[];
    Q8T_T(t_entry);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nb = job.W[0].cols / 32;
    const int total = job.gstart[job.n];
    const size_t stage_bytes = (size_t)Q8T_ROWS * nb * 18;
    int u0, u1;
    q8t_share((total + Q8T_ROWS - 1) / Q8T_ROWS, u0, u1);
    unsigned char *ring = q8t_smem + Q8T_BAR_BYTES;
    q8t_ring_init(q8t_smem, ns);
    if (warp == Q8M_WARPS) { /* the producer: weights only, so it never waits on the previous kernel */
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        if (lane == 0)
            for (int u = u0; u < u1; u++) {
                const int s = (u - u0) % ns, lap = (u - u0) / ns;
                if (lap) mbar_wait(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)), (lap - 1) & 1);
                const int r0 = u * Q8T_ROWS, r1 = r0 + Q8T_ROWS < total ? r0 + Q8T_ROWS : total;
                if (Q8T_SKIP(1)) mbar_arrive(smem_addr(q8t_smem + 8 * s));
                else q8t_issue_rows(job, nb, r0, r1, ring + s * stage_bytes, smem_addr(q8t_smem + 8 * s));
            }
        return;
    }
    q8t_rms_w rw;
    if (nm.x) q8t_rms_load_w(nm, rw); /* a weight: before the wait */
    kc_pdl_begin();
    Q8T_T(t_wait);
    unsigned long long t_first = 0;
    constexpr int XN = XS ? 1 : NBL; /* x blocks per lane held in registers */
    int4 xa[XN], xb[XN];
    float xd[XN];
    int xs[XN];
    kc_q8blk *xsm = (kc_q8blk *)(ring + ns * stage_bytes); /* XS or nm: x after the ring */
    if (nm.x) {
        q8t_rms_prologue(nm, rw, xsm, (float *)(xsm + nb));
        if (!XS) q8x_load_x<XN, XLOAD_SMEM>(xsm, nb, xa, xb, xd, xs); /* the folded norm's blocks */
    } else if (XS && NBL >= 8) {
        /* x (nb q8 blocks, 3 int4 each) into shared memory with every load in flight before the first
         * store: one L2 round trip, where the run-time loop took two or three, each queued behind the
         * ring's bulk copies (ncu: a fifth of the down projection's warp samples in this prologue,
         * PERF-NOTES v22) */
        constexpr int XV = (NBL * 32 * 3 + 32 * Q8M_WARPS - 1) / (32 * Q8M_WARPS);
        int4 v[XV];
#pragma unroll
        for (int k = 0; k < XV; k++) {
            const int i = threadIdx.x + 32 * Q8M_WARPS * k;
            if (i < nb * 3) v[k] = __ldcg((const int4 *)xq + i);
        }
#pragma unroll
        for (int k = 0; k < XV; k++) {
            const int i = threadIdx.x + 32 * Q8M_WARPS * k;
            if (i < nb * 3) ((int4 *)xsm)[i] = v[k];
        }
        asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory"); /* the consumers only */
    } else if (XS) {
        for (int i = threadIdx.x; i < nb * 3; i += 32 * Q8M_WARPS) ((int4 *)xsm)[i] = __ldcg((const int4 *)xq + i);
        asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory"); /* the consumers only */
    } else {
        q8x_load_x<XN>(xq, nb, xa, xb, xd, xs);
    }
    /* Per row: the residual's old value (accumulate) is loaded BEFORE the stage's wait, so its round
     * trip overlaps the wait and the dot, and the stage is released before y is written: ncu put
     * the down projection's warps 3.4 of 10.6 cycles per instruction in long-scoreboard stalls,
     * lane 0 waiting on y[r] between the dot and the release (PERF-NOTES v18 row 5). Same bits; the
     * 27B step `ab` 0.9844 (v19 row 1). */
    for (int u = u0; u < u1; u++) {
        const int s = (u - u0) % ns, lap = (u - u0) / ns;
        const int row = u * Q8T_ROWS + warp;
        float *yr = NULL, yold = 0.0f;
        if (row < total) {
            const int mi = q8_job_mat(job, row);
            yr = job.y[mi] + (row - job.gstart[mi]);
            if (job.accumulate && lane == 0) yold = *yr;
        }
        mbar_wait(smem_addr(q8t_smem + 8 * s), lap & 1);
#ifdef KC_Q8T_DBG
        if (u == u0 && threadIdx.x == 0 && !g_q8t_dbg_mark) t_first = q8t_now();
#endif
        float sum = 0.0f;
        const unsigned char *st = ring + s * stage_bytes;
        if (row < total && !Q8T_SKIP(2))
            sum = XS ? (NBL >= 8 ? (nb == 32 * NBL ? q8t_dot_xs_u<NBL, true>(st, nb, warp, xsm)
                                                   : q8t_dot_xs_u<NBL>(st, nb, warp, xsm))
                                 : q8t_dot_xs(st, nb, warp, (nb + 31) / 32, xsm))
                     : (nb == 32 * XN ? q8t_dot<XN, true>(st, nb, warp, xa, xb, xd, xs)
                                      : q8t_dot<XN>(st, nb, warp, xa, xb, xd, xs));
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)));
        if (row < total && !Q8T_SKIP(2) && lane == 0) *yr = job.accumulate ? yold + sum : sum;
#ifdef KC_Q8T_DBG
        if (u - u0 + 1 == g_q8t_dbg_mark && threadIdx.x == 0) t_first = q8t_now();
#endif
    }
    Q8T_REC(job.W[0].data, t_entry, t_wait, t_first);
    if (tail.x) q8t_tail_norm(tail, tcnt, ring);
}

/* ---- the wide down projection with x read once per 8 rows (option q8t_wu=2, PERF-NOTES v24) ----
 * Why: with x in shared memory, the per-row dot (q8t_dot_xs_u) reads 48 bytes of x and 18 of weights per
 * lane and block: 17 shared-memory wavefronts per warp-step, of which x takes 12; the 27B down projection
 * moves ~1.5 MB of shared memory per SM per launch, and its dots alone (no weight traffic) take 0.63 ms
 * per token (v24 bounds) — shared-memory bandwidth, not issue, bounds them (v19 rows 4-5).
 * Here the 8 warps split every stage by the dot's lane classes instead of by rows: lane l of the row dot
 * (blocks l, l + 32, ..., summed in that order) is played by warp l % 8, lane (l / 8) * 8 + r for row r of
 * the stage, so one warp-step reads 4 x blocks, each broadcast to 8 lanes (3 wavefronts instead of 12).
 * The warp_sum tree is kept: its steps xor 16 and xor 8 are this warp's shuffles over lane bits 4 and 3;
 * xor 4, 2, 1 run over the 8 warps' partials in shared memory at the end, in the same order. Same
 * operations in the same order as q8t_dot_xs_u: the same bits (test_kernels). The stage's rows and
 * scale rows are padded by 16 bytes so that the 8 rows of a warp-step fall on different banks, and x's
 * blocks by 16 bytes after every 8 (Q8BC_XOFF) so that the 4 blocks of a step do.
 * H (option q8t_bch, PERF-NOTES v31): a stage's columns are two ring slots, k in [0, NBL/2) and
 * [NBL/2, NBL) (blocks [0, 32 KH) and [32 KH, nb) of its 8 rows), each released after its part of the
 * dot, so the producer refills half a stage while the other half's dots run (the SwiGLU's q8t_half, v29,
 * for this kernel; the 27B's ring: 2 slots of 78 KB -> 4 of 42 KB). The same operations in the same order.
 * job.y[0] (rows,) [+]= W (rows, 32 nb) . x, xq (nb,) the q8 blocks of x; nb == 32 * NBL, one matrix
 * (job.n == 1), no tail or folded norm. Dynamic shared memory: Q8T_BAR_BYTES + ns * q8bc_slot_bytes +
 * Q8BC_XBYTES(nb) + per * 256 (per: the most stages a block has). */
#define Q8BC_QS(nb) ((size_t)(nb) * 16 + 16) /* a slot's quant row stride (nb: the slot's blocks per row) */
#define Q8BC_DS(nb) ((size_t)(nb) * 2 + 16)  /* its scale row stride */
#define Q8BC_STAGE(nb) (Q8T_ROWS * (Q8BC_QS(nb) + Q8BC_DS(nb)))
#define Q8BC_XOFF(b) ((size_t)(b) * 48 + (size_t)((b) >> 3) * 16) /* x block b in shared memory */
#define Q8BC_XBYTES(nb) Q8BC_XOFF(nb)
/* a ring slot's bytes: the whole stage, or (H) the larger of its two column halves */
__host__ __device__ constexpr size_t q8bc_slot_bytes(int nbl, int h)
{
    return !h ? Q8BC_STAGE(32 * nbl)
              : (Q8BC_STAGE(32 * (nbl / 2)) > Q8BC_STAGE(32 * (nbl - nbl / 2)) ? Q8BC_STAGE(32 * (nbl / 2))
                                                                              : Q8BC_STAGE(32 * (nbl - nbl / 2)));
}

/* acc after k in [KB, KE) of the dot for this thread (row r of the slot st, dot lane l): q8t_dot_xs_u's
 * chunks of Q8T_XS_CHUNK from KB, loads then dots; the slot holds blocks [32 KB, 32 KE) of its 8 rows. */
template <int KB, int KE>
__device__ __forceinline__ float q8bc_range(float acc, const unsigned char *st, int r, int l, const unsigned char *xsm)
{
    constexpr int nbs = 32 * (KE - KB);
    const uint4 *q = (const uint4 *)(st + r * Q8BC_QS(nbs)) - 32 * KB;
    const __half *d = (const __half *)(st + Q8T_ROWS * Q8BC_QS(nbs) + r * Q8BC_DS(nbs)) - 32 * KB;
#pragma unroll
    for (int k0 = KB; k0 < KE; k0 += Q8T_XS_CHUNK) {
        uint4 w[Q8T_XS_CHUNK];
        int4 xa[Q8T_XS_CHUNK], xb[Q8T_XS_CHUNK], xe[Q8T_XS_CHUNK];
        __half dh[Q8T_XS_CHUNK];
#pragma unroll
        for (int i = 0; i < Q8T_XS_CHUNK; i++)
            if (k0 + i < KE) {
                const int b = l + 32 * (k0 + i);
                const int4 *xv = (const int4 *)(xsm + Q8BC_XOFF(b));
                w[i] = q[b];
                dh[i] = d[b];
                xa[i] = xv[0];
                xb[i] = xv[1];
                xe[i] = xv[2];
            }
#pragma unroll
        for (int i = 0; i < Q8T_XS_CHUNK; i++)
            if (k0 + i < KE) {
                const int c = q4q8_block_dot(w[i], xa[i], xb[i], xe[i].y);
                const float sc = __half2float(dh[i]) * __int_as_float(xe[i].x);
                acc = acc + sc * (float)c;
            }
    }
    return acc;
}

/* one stage's dot for this thread: its slot (or H its two slots, numbered i and i + 1 from the block's
 * first), each waited for, dotted and released */
template <int NBL, int H>
__device__ __forceinline__ float q8bc_stage(const unsigned char *bars, const unsigned char *ring, size_t slot_bytes,
                                            int ns, int i, int r, int l, const unsigned char *xsm)
{
    constexpr int KH = H ? NBL / 2 : NBL;
    const int lane = threadIdx.x & 31;
    float acc = 0.0f;
    int s = i % ns;
    mbar_wait(smem_addr(bars + 8 * s), (i / ns) & 1);
    if (!Q8T_SKIP(2)) acc = q8bc_range<0, KH>(acc, ring + s * slot_bytes, r, l, xsm);
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_addr(bars + 8 * (Q8T_MAX_STAGES + s)));
    if constexpr (H != 0) {
        s = (i + 1) % ns;
        mbar_wait(smem_addr(bars + 8 * s), ((i + 1) / ns) & 1);
        if (!Q8T_SKIP(2)) acc = q8bc_range<KH, NBL>(acc, ring + s * slot_bytes, r, l, xsm);
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_addr(bars + 8 * (Q8T_MAX_STAGES + s)));
    }
    return acc;
}

template <int NBL, int H>
__global__ void __launch_bounds__(Q8T_THREADS, 1) matvec_q8t_bc_kernel(const q8_job job, const kc_q8blk *__restrict__ xq,
                                                                      int ns)
{
    extern __shared__ __align__(128) unsigned char q8t_smem[];
    Q8T_T(t_entry);
    constexpr int nb = 32 * NBL, KH = H ? NBL / 2 : NBL;
    constexpr size_t slot_bytes = q8bc_slot_bytes(NBL, H);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int total = job.gstart[1];
    int u0, u1;
    q8t_share((total + Q8T_ROWS - 1) / Q8T_ROWS, u0, u1);
    unsigned char *ring = q8t_smem + Q8T_BAR_BYTES;
    unsigned char *xsm = ring + ns * slot_bytes;
    float *red = (float *)(xsm + Q8BC_XBYTES(nb)); /* (u1 - u0, 8 warps, 8 rows) */
    q8t_ring_init(q8t_smem, ns);
    if (warp == Q8M_WARPS) { /* the producer: each row (H: each half row) and its scales on their own (padded) */
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        if (lane == 0)
            for (int u = u0; u < u1; u++) {
                const int r0 = u * Q8T_ROWS, r1 = r0 + Q8T_ROWS < total ? r0 + Q8T_ROWS : total;
                for (int h = 0; h <= H; h++) {
                    const int i = (H + 1) * (u - u0) + h, s = i % ns, lap = i / ns;
                    if (lap) mbar_wait(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)), (lap - 1) & 1);
                    const uint32_t bar = smem_addr(q8t_smem + 8 * s);
                    unsigned char *st = ring + s * slot_bytes;
                    if (Q8T_SKIP(1)) {
                        mbar_arrive(bar);
                        continue;
                    }
                    const int kb = h ? KH : 0, ke = h || !H ? NBL : KH, nbs = 32 * (ke - kb);
                    const size_t QS = Q8BC_QS(nbs), DS = Q8BC_DS(nbs);
                    mbar_expect_tx(bar, (uint32_t)(r1 - r0) * (uint32_t)nbs * 18u);
                    for (int r = r0; r < r1; r++) {
                        bulk_g2s(smem_addr(st + (r - r0) * QS),
                                 (const unsigned char *)job.W[0].data + ((size_t)r * nb + 32 * kb) * 16,
                                 (uint32_t)nbs * 16, bar);
                        bulk_g2s(smem_addr(st + Q8T_ROWS * QS + (r - r0) * DS), job.W[0].d + (size_t)r * nb + 32 * kb,
                                 (uint32_t)nbs * 2, bar);
                    }
                }
            }
        return;
    }
    kc_pdl_begin();
    Q8T_T(t_wait);
    /* the residual's old values of the block's rows (y: the predecessors' output, so after the wait),
     * one per thread, in flight during x's load and the first stage */
    const int nrows = (u1 - u0) * Q8T_ROWS;
    const int myrow = u0 * Q8T_ROWS + threadIdx.x;
    float yold = 0.0f;
    if (threadIdx.x < nrows && myrow < total && job.accumulate) yold = job.y[0][myrow];
    { /* x into the padded layout, every load in flight before the first store (one L2 round trip) */
        constexpr int XV = (nb * 3 + 32 * Q8M_WARPS - 1) / (32 * Q8M_WARPS);
        int4 v[XV];
#pragma unroll
        for (int k = 0; k < XV; k++) {
            const int i = threadIdx.x + 32 * Q8M_WARPS * k;
            if (i < nb * 3) v[k] = __ldcg((const int4 *)xq + i);
        }
#pragma unroll
        for (int k = 0; k < XV; k++) {
            const int i = threadIdx.x + 32 * Q8M_WARPS * k;
            if (i < nb * 3) *(int4 *)(xsm + Q8BC_XOFF(i / 3) + (i % 3) * 16) = v[k];
        }
        asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
    }
    const int r = lane & 7, l = warp + 8 * (lane >> 3); /* this thread: row r of each stage, dot lane l */
    unsigned long long t_first = 0;
    for (int u = u0; u < u1; u++) {
        const int i = (H + 1) * (u - u0);
        float acc = q8bc_stage<NBL, H>(q8t_smem, ring, slot_bytes, ns, i, r, l, xsm);
#ifdef KC_Q8T_DBG
        if (u == u0 && threadIdx.x == 0) t_first = q8t_now(); /* the first stage's slots released */
#endif
        acc += __shfl_xor_sync(0xffffffffu, acc, 16); /* warp_sum's first two steps: lane bits 4, 3 = l's */
        acc += __shfl_xor_sync(0xffffffffu, acc, 8);
        if (lane < 8) red[((u - u0) * Q8M_WARPS + warp) * 8 + r] = acc;
    }
    asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory");
    if (threadIdx.x < nrows && myrow < total && !Q8T_SKIP(2)) { /* warp_sum's steps xor 4, 2, 1 over the warps */
        const float *p = red + (threadIdx.x / 8) * Q8M_WARPS * 8 + threadIdx.x % 8;
        const float a0 = p[0] + p[32], a1 = p[8] + p[40], a2 = p[16] + p[48], a3 = p[24] + p[56];
        const float sum = (a0 + a2) + (a1 + a3);
        job.y[0][myrow] = job.accumulate ? yold + sum : sum;
    }
    (void)t_first;
    Q8T_REC(job.W[0].data, t_entry, t_wait, t_first);
}

/* The SwiGLU output's q8 groups of a block's stages [u0, u1) (rows u0*Q8T_ROWS .. of `rows`), once every
 * row of the block is written (y global, ys (the block's rows) shared): a group inside the block from
 * ys; a group shared with a neighbour block counted into cnt[group] after a fence, and quantised from
 * global memory by the block that completes it, which re-arms the counter. Consumer warps only. */
__device__ __forceinline__ void swiglu_q8t_quantise(const float *y, kc_q8blk *yq, unsigned int *cnt, const float *ys,
                                                    int u0, int u1, int rows)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rlo = u0 * Q8T_ROWS, rhi = u1 * Q8T_ROWS < rows ? u1 * Q8T_ROWS : rows;
    for (int grp = rlo / 32 + warp; grp <= (rhi - 1) / 32; grp += Q8M_WARPS) {
        const int lo = grp * 32 > rlo ? grp * 32 : rlo, hi = grp * 32 + 32 < rhi ? grp * 32 + 32 : rhi;
        if (hi - lo == 32) { /* the block's own group */
            q8_quantize_warp(ys[grp * 32 + lane - rlo], yq + grp);
            continue;
        }
        int last = 0;
        if (lane == 0) {
            __threadfence(); /* the block's rows of the group (the barrier before) visible before it counts */
            last = atomicAdd(&cnt[grp], (unsigned)(hi - lo)) + (unsigned)(hi - lo) == 32u;
        }
        if (__shfl_sync(0xffffffffu, last, 0)) {
            __threadfence();
            q8_quantize_warp(__ldcg(&y[grp * 32 + lane]), yq + grp);
            if (lane == 0) cnt[grp] = 0;
        }
    }
}

/* y (G.rows,) = silu(G . x) * (U . x): a stage holds Q8T_ROWS gate rows then the same up rows
 * (quants of both, then scales of both); warp j takes pair j. Same bits as matvec_swiglu_q8x_kernel.
 * yq != NULL (G.rows % 32 == 0): y also quantised into yq (G.rows/32,) for the down projection, by
 * the block itself: its rows are contiguous, so every group of 32 inside them is quantised from the
 * block's own results in shared memory once its rows are done (no fence, no atomic); a group shared
 * with a neighbour block (at most the first and the last) is counted into cnt[group] after a fence,
 * and the block that completes it quantises it from global memory and re-arms the counter (cnt
 * (G.rows/32,) zero between calls), as matvec_swiglu_q8_kernel. Same bits as quantize_q8 of y.
 * Dynamic shared memory: Q8T_BAR_BYTES + ns stages + (yq: the block's rows as floats). */
/* HALF (option q8t_half): the gate rows and the up rows of a stage are two ring slots with their own
 * full and empty barriers (2 ns of each, 2 ns <= Q8T_MAX_STAGES), so a warp releases the gate half as
 * soon as its gate dot is done and the producer refills it while the up dots run. Why: a consumer
 * holds a whole stage (both halves) through both dots, so while the dots run only the other slot is in
 * flight; with half slots three of four can be. Same dots on the same bytes: the same bits. */
template <int NBL, int HALF = 0>
__global__ void __launch_bounds__(Q8T_THREADS, 2) matvec_swiglu_q8t_kernel(const kc_mat G, const kc_mat Up,
                                                                            const kc_q8blk *__restrict__ xq,
                                                                            float *__restrict__ y, kc_q8blk *yq,
                                                                            unsigned int *cnt, int ns, const kc_rmsq nm)
{
    extern __shared__ __align__(128) unsigned char q8t_smem[];
    Q8T_T(t_entry);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nb = G.cols / 32;
    const size_t half_bytes = (size_t)Q8T_ROWS * nb * 18, stage_bytes = 2 * half_bytes;
    int u0, u1;
    q8t_share((G.rows + Q8T_ROWS - 1) / Q8T_ROWS, u0, u1);
    unsigned char *ring = q8t_smem + Q8T_BAR_BYTES;
    kc_q8blk *xsm = (kc_q8blk *)(ring + ns * stage_bytes); /* nm: the folded norm's x, (nb,) */
    float *ys = (float *)(ring + ns * stage_bytes + (nm.x ? (size_t)nb * sizeof(kc_q8blk) + 128 : 0)); /* yq: row
                                                                      * r0 + i of the block at ys[i] */
    q8t_ring_init(q8t_smem, HALF ? 2 * ns : ns);
    if (warp == Q8M_WARPS) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        if (HALF && lane == 0)
            for (int u = u0; u < u1; u++) {
                const int s = (u - u0) % ns, lap = (u - u0) / ns;
                const int r0 = u * Q8T_ROWS, k = r0 + Q8T_ROWS < G.rows ? Q8T_ROWS : G.rows - r0;
                for (int h = 0; h < 2; h++) { /* slot 2s: the gate rows, 2s + 1: the up rows */
                    const int j = 2 * s + h;
                    if (lap) mbar_wait(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + j)), (lap - 1) & 1);
                    const uint32_t bar = smem_addr(q8t_smem + 8 * j);
                    if (Q8T_SKIP(1)) {
                        mbar_arrive(bar);
                        continue;
                    }
                    const kc_mat &M = h ? Up : G;
                    unsigned char *st = ring + s * stage_bytes + h * half_bytes;
                    mbar_expect_tx(bar, (uint32_t)k * (uint32_t)nb * 18u);
                    bulk_g2s(smem_addr(st), (const unsigned char *)M.data + (size_t)r0 * nb * 16, (uint32_t)k * nb * 16, bar);
                    bulk_g2s(smem_addr(st + (size_t)Q8T_ROWS * nb * 16), M.d + (size_t)r0 * nb, (uint32_t)k * nb * 2, bar);
                }
            }
        if (!HALF && lane == 0)
            for (int u = u0; u < u1; u++) {
                const int s = (u - u0) % ns, lap = (u - u0) / ns;
                if (lap) mbar_wait(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)), (lap - 1) & 1);
                const int r0 = u * Q8T_ROWS, k = r0 + Q8T_ROWS < G.rows ? Q8T_ROWS : G.rows - r0;
                const uint32_t bar = smem_addr(q8t_smem + 8 * s);
                unsigned char *st = ring + s * stage_bytes;
                if (Q8T_SKIP(1)) {
                    mbar_arrive(bar);
                    continue;
                }
                mbar_expect_tx(bar, 2u * (uint32_t)k * (uint32_t)nb * 18u);
                bulk_g2s(smem_addr(st), (const unsigned char *)G.data + (size_t)r0 * nb * 16, (uint32_t)k * nb * 16, bar);
                bulk_g2s(smem_addr(st + (size_t)Q8T_ROWS * nb * 16), G.d + (size_t)r0 * nb, (uint32_t)k * nb * 2, bar);
                bulk_g2s(smem_addr(st + half_bytes), (const unsigned char *)Up.data + (size_t)r0 * nb * 16,
                         (uint32_t)k * nb * 16, bar);
                bulk_g2s(smem_addr(st + half_bytes + (size_t)Q8T_ROWS * nb * 16), Up.d + (size_t)r0 * nb,
                         (uint32_t)k * nb * 2, bar);
            }
        return;
    }
    q8t_rms_w rw;
    if (nm.x) q8t_rms_load_w(nm, rw); /* a weight: before the wait */
    kc_pdl_begin();
    Q8T_T(t_wait);
    int4 xa[NBL], xb[NBL];
    float xd[NBL];
    int xs[NBL];
    if (nm.x) {
        q8t_rms_prologue(nm, rw, xsm, (float *)(xsm + nb));
        q8x_load_x<NBL, XLOAD_SMEM>(xsm, nb, xa, xb, xd, xs); /* the folded norm's blocks */
    } else {
        q8x_load_x<NBL>(xq, nb, xa, xb, xd, xs);
    }
    for (int u = u0; HALF && u < u1; u++) {
        const int s = (u - u0) % ns, lap = (u - u0) / ns;
        const int r = u * Q8T_ROWS + warp;
        const bool on = r < G.rows && !Q8T_SKIP(2);
        const unsigned char *st = ring + s * stage_bytes;
        float g = 0.0f, up = 0.0f;
        mbar_wait(smem_addr(q8t_smem + 8 * (2 * s)), lap & 1);
        if (on)
            g = nb == 32 * NBL ? q8t_dot<NBL, true>(st, nb, warp, xa, xb, xd, xs) : q8t_dot<NBL>(st, nb, warp, xa, xb, xd, xs);
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + 2 * s)));
        mbar_wait(smem_addr(q8t_smem + 8 * (2 * s + 1)), lap & 1);
        if (on)
            up = nb == 32 * NBL ? q8t_dot<NBL, true>(st + half_bytes, nb, warp, xa, xb, xd, xs)
                                : q8t_dot<NBL>(st + half_bytes, nb, warp, xa, xb, xd, xs);
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + 2 * s + 1)));
        if (on && lane == 0) {
            const float v = g / (1.0f + expf(-g)) * up;
            y[r] = v;
            if (yq) ys[r - u0 * Q8T_ROWS] = v;
        }
    }
    for (int u = u0; !HALF && u < u1; u++) {
        const int s = (u - u0) % ns, lap = (u - u0) / ns;
        mbar_wait(smem_addr(q8t_smem + 8 * s), lap & 1);
        const int r = u * Q8T_ROWS + warp;
        if (r < G.rows && !Q8T_SKIP(2)) {
            const unsigned char *st = ring + s * stage_bytes;
            float g, up;
            if (nb == 32 * NBL) {
                g = q8t_dot<NBL, true>(st, nb, warp, xa, xb, xd, xs);
                up = q8t_dot<NBL, true>(st + half_bytes, nb, warp, xa, xb, xd, xs);
            } else {
                g = q8t_dot<NBL>(st, nb, warp, xa, xb, xd, xs);
                up = q8t_dot<NBL>(st + half_bytes, nb, warp, xa, xb, xd, xs);
            }
            if (lane == 0) {
                const float v = g / (1.0f + expf(-g)) * up;
                y[r] = v;
                if (yq) ys[r - u0 * Q8T_ROWS] = v;
            }
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)));
    }
    if (!yq || u0 >= u1) return;
    asm volatile("bar.sync 1, %0;" ::"r"(32 * Q8M_WARPS) : "memory"); /* every row of the block written */
    swiglu_q8t_quantise(y, yq, cnt, ys, u0, u1, G.rows);
    Q8T_REC(G.data, t_entry, t_wait, t_wait);
}

/* ---- the FFN through ONE ring (option ffn=ring, PERF-NOTES v18) ----
 * normed x -> SwiGLU (quantised by the blocks, as matvec_swiglu_q8t_kernel) -> grid barrier -> down +
 * residual (as matvec_q8t_kernel<., 1>), one launch. Why: the two launches pay a dependent kernel
 * boundary, and the down projection's weights start to stream only when its blocks become resident,
 * i.e. as the SwiGLU's blocks exit (v15 row 1b); the knockouts (v17) put the SwiGLU 0.31 ms and the
 * down projection 0.29 ms above their bytes' floor. Here each block (one per SM) has one producer
 * warp that walks its gate/up stages and then its down stages through one ring of `ns` slots, bounded
 * only by the slots: the down projection's first slots fill while the SwiGLU's last stages, the
 * quantisation and the grid barrier run. Unlike ffn=fused (v13: each warp's first down row in
 * registers, one in flight), the ring keeps ns x slot bytes per SM in flight through the barrier.
 * NCW consumer warps (8 or 16: kc_set_ffn_ring_warps). Stages: gate/up 8 row pairs
 * (matvec_swiglu_q8t_kernel's layout), warp w takes pair w % 8 of every (NCW/8)-th stage; down `dr`
 * rows (quants then scales, dr in 8/4/2/1, dr * its row bytes <= a gate/up stage), warp w takes row
 * w % dr of every (NCW/dr)-th stage; so the warps work on several stages at once (the two-launch
 * path has 2 blocks of 8 consumer warps per SM for the SwiGLU). Every consumer warp waits for and
 * releases every stage. Same arithmetic as the two launches and quantize_q8: the same
 * bits. The grid barrier needs every block resident: the grid is one block per SM (the slots take
 * the SM's shared memory); with pdl=0 it is launched cooperatively; with PDL the dependents launch
 * only once every block of this grid has started (griddepcontrol.launch_dependents in each), so no
 * later kernel can hold an SM this grid still needs. Measured slower than the two launches (PERF-NOTES
 * v18): an option. */
typedef struct kc_ffr_job {
    kc_mat G, Up, Dn;   /* gate, up (F, D); down (D, F) */
    const kc_q8blk *xq; /* (D/32,) the normed input, quantised (rmsnorm_q8) */
    float *ff;          /* (F,) SwiGLU output */
    kc_q8blk *ffq;      /* (F/32,) ff quantised */
    unsigned int *cnt;  /* (F/32,) tickets of the q8 groups two blocks share (zero between launches) */
    unsigned int *bar;  /* (2,) grid barrier: arrivals, generation */
    float *y;           /* (D,) residual stream: y += Dn . ffq */
    int ns, dr;         /* ring slots; down rows per stage */
    int slot;           /* bytes per slot */
} kc_ffr_job;

/* kc_grid_barrier for the consumer warps only (the producer warp may still be issuing copies):
 * named barrier 1 of 32 * NCW threads around thread 0's generation wait */
template <int NCW>
__device__ __forceinline__ void ffr_grid_barrier(unsigned int *bar)
{
    asm volatile("bar.sync 1, %0;" ::"r"(32 * NCW) : "memory");
    if (threadIdx.x == 0) kc_grid_arrive_wait<false>(bar);
    asm volatile("bar.sync 1, %0;" ::"r"(32 * NCW) : "memory");
}

/* dynamic shared memory: Q8T_BAR_BYTES + ns * slot, then ffq (F/32 blocks), then the block's SwiGLU
 * rows (units per block * Q8T_ROWS floats) */
#ifdef KC_Q8T_DBG /* bench_gemv: the ring FFN's timeline, two records per block (Q8T_REC with NCW warps) */
#define FFR_REC(w_, a, b, c) Q8T_REC_N(w_, a, b, c, NCW)
#else
#define FFR_REC(w_, a, b, c) Q8T_REC(w_, a, b, c)
#endif
template <int NBL, int NCW>
__global__ void __launch_bounds__(32 * (NCW + 1), 1) ffn_ring_kernel(const kc_ffr_job job)
{
    extern __shared__ __align__(128) unsigned char q8t_smem[];
    Q8T_T(t_entry);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const kc_mat &G = job.G, &Up = job.Up, &Dn = job.Dn;
    const int nb1 = G.cols / 32, nb2 = Dn.cols / 32, F = G.rows, D = Dn.rows, ns = job.ns, dr = job.dr;
    const size_t half_bytes = (size_t)Q8T_ROWS * nb1 * 18;
    int u0, u1, v0, v1;
    q8t_share((F + Q8T_ROWS - 1) / Q8T_ROWS, u0, u1);
    q8t_share((D + dr - 1) / dr, v0, v1);
    unsigned char *ring = q8t_smem + Q8T_BAR_BYTES;
    kc_q8blk *xsm = (kc_q8blk *)(ring + (size_t)ns * job.slot); /* ffq, (nb2,) */
    float *ys = (float *)(xsm + nb2);                           /* row u0*Q8T_ROWS + i at ys[i] */
    q8t_ring_init(q8t_smem, ns, NCW);
    if (warp == NCW) { /* the producer: gate/up stages, then down stages, as slots free */
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        if (lane == 0) {
            const int n1 = u1 - u0, n = n1 + (v1 - v0);
            for (int q = 0; q < n; q++) {
                const int s = q % ns, lap = q / ns;
                if (lap) mbar_wait(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)), (lap - 1) & 1);
                const uint32_t bar = smem_addr(q8t_smem + 8 * s);
                unsigned char *st = ring + (size_t)s * job.slot;
                if (q < n1) {
                    const int r0 = (u0 + q) * Q8T_ROWS, k = r0 + Q8T_ROWS < F ? Q8T_ROWS : F - r0;
                    mbar_expect_tx(bar, 2u * (uint32_t)k * (uint32_t)nb1 * 18u);
                    bulk_g2s(smem_addr(st), (const unsigned char *)G.data + (size_t)r0 * nb1 * 16, (uint32_t)k * nb1 * 16,
                             bar);
                    bulk_g2s(smem_addr(st + (size_t)Q8T_ROWS * nb1 * 16), G.d + (size_t)r0 * nb1, (uint32_t)k * nb1 * 2, bar);
                    bulk_g2s(smem_addr(st + half_bytes), (const unsigned char *)Up.data + (size_t)r0 * nb1 * 16,
                             (uint32_t)k * nb1 * 16, bar);
                    bulk_g2s(smem_addr(st + half_bytes + (size_t)Q8T_ROWS * nb1 * 16), Up.d + (size_t)r0 * nb1,
                             (uint32_t)k * nb1 * 2, bar);
                } else {
                    const int r0 = (v0 + q - n1) * dr, k = r0 + dr < D ? dr : D - r0;
                    mbar_expect_tx(bar, (uint32_t)k * (uint32_t)nb2 * 18u);
                    bulk_g2s(smem_addr(st), (const unsigned char *)Dn.data + (size_t)r0 * nb2 * 16, (uint32_t)k * nb2 * 16,
                             bar);
                    bulk_g2s(smem_addr(st + (size_t)dr * nb2 * 16), Dn.d + (size_t)r0 * nb2, (uint32_t)k * nb2 * 2, bar);
                }
            }
        }
        return;
    }
    kc_pdl_begin();
    Q8T_T(t_wait);
    { /* (1) ff = silu(G.x) * (U.x), matvec_swiglu_q8t_kernel's loop */
        int4 xa[NBL], xb[NBL];
        float xd[NBL];
        int xs[NBL];
        q8x_load_x<NBL>(job.xq, nb1, xa, xb, xd, xs);
        const int j = warp % Q8T_ROWS;
        for (int u = u0; u < u1; u++) {
            const int q = u - u0, s = q % ns;
            mbar_wait(smem_addr(q8t_smem + 8 * s), (q / ns) & 1);
            const int r = u * Q8T_ROWS + j;
            if (q % (NCW / Q8T_ROWS) == warp / Q8T_ROWS && r < F) {
                const unsigned char *st = ring + (size_t)s * job.slot;
                const float g = q8t_dot<NBL>(st, nb1, j, xa, xb, xd, xs);
                const float up = q8t_dot<NBL>(st + half_bytes, nb1, j, xa, xb, xd, xs);
                if (lane == 0) {
                    const float v = g / (1.0f + expf(-g)) * up;
                    job.ff[r] = v;
                    ys[r - u0 * Q8T_ROWS] = v;
                }
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)));
        }
    }
    Q8T_T(t_gu);
    if (u0 < u1) { /* (2) the block's q8 groups, by its first 8 warps */
        asm volatile("bar.sync 1, %0;" ::"r"(32 * NCW) : "memory");
        if (warp < Q8M_WARPS) swiglu_q8t_quantise(job.ff, job.ffq, job.cnt, ys, u0, u1, F);
    }
    Q8T_T(t_q);
    ffr_grid_barrier<NCW>(job.bar); /* every group of ffq written */
    FFR_REC(G.data, t_entry, t_wait, t_gu); /* its end: the barrier passed */
    for (int i = threadIdx.x; i < nb2 * 3; i += 32 * NCW) ((int4 *)xsm)[i] = __ldcg((const int4 *)job.ffq + i);
    asm volatile("bar.sync 1, %0;" ::"r"(32 * NCW) : "memory");
    /* (3) y += Dn . ffq: warp w takes row w % dr of the stages v with (v - v0) % (NCW/dr) == w / dr */
    const int per = NCW / dr, n1 = u1 - u0;
    for (int v = v0; v < v1; v++) {
        const int q = n1 + v - v0, s = q % ns;
        mbar_wait(smem_addr(q8t_smem + 8 * s), (q / ns) & 1);
        const int r = v * dr + warp % dr;
        if ((v - v0) % per == warp / dr && r < D) {
            const float sum = q8t_dot_xs(ring + (size_t)s * job.slot, nb2, warp % dr, (nb2 + 31) / 32, xsm, dr);
            if (lane == 0) job.y[r] = job.y[r] + sum;
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_addr(q8t_smem + 8 * (Q8T_MAX_STAGES + s)));
    }
    FFR_REC(Dn.data, t_q, t_q, t_q); /* the quantisation done, then the down phase's end */
}

#endif
