/*
 * cuda/gdn_delta.cuh - the gated delta rule for one token, ONE source for both
 * kernel variants (included by kernels.cu only).
 *
 * One block per v-head, one thread per column dv of S: the dk sums are serial
 * inside a thread (no cross-thread reduction), in the order of the CPU twin
 * delta_step:  S *= exp(g);  kv = S^T k;  delta = (v - kv) * beta;
 *              S += k (x) delta;  o = S^T q  (with the updated S).
 *
 * delta_column<KDT> is that arithmetic on one column `s` with stride `st`:
 *   KDT == 0   : the generic variant; s points into global memory, kd at run time;
 *   KDT == 128 : the register-resident variant; s is a local array Sr[128]
 *                indexed by unrolled compile-time constants, so it lives in
 *                registers: one read and one write of S per step.
 * Both variants execute the same operations in the same order, so with
 * -fmad=false (KESTREL_BITEXACT builds) they are bit-identical; test_kernels
 * checks that on S and o over many steps.
 */
#ifndef KESTREL_CUDA_GDN_DELTA_CUH
#define KESTREL_CUDA_GDN_DELTA_CUH

/* one float4 of shared memory by ONE ld.shared.v4 that NVVM cannot split: delta_column's reads of sk and sq. Why an
 * asm: as plain float4 reads NVVM's vectorizer still rewrote some of them (a v4 load whose other half came from a
 * second v2 load of the same bytes) differently from one build to the next: delta_step_trig_kernel<2, 0> came out
 * of two builds of one commit in two forms (v42), so the library's SHA-256 again did not name its source (v30).
 * volatile: kept after the barrier that publishes sk and sq. */
__device__ __forceinline__ float4 lds_f4(unsigned a) /* a: a shared-memory address (16-byte aligned) */
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a));
    return v;
}

/* s: column of S, element dk at s[dk * st]; sk, sq (kd,) in shared memory. Returns o[dv].
 * Every product and sum is an explicit round-to-nearest intrinsic, so no build may contract a pair
 * into an FMA: the -fmad=true library and the -fmad=false test build (checked against the CPU twin)
 * give the same bits whatever NVVM schedules around it (PERF-NOTES v14 row 3: reordering the
 * kernel's loads had changed which products the library folded). */
template <int KDT, bool MID = false> /* MID: let the next kernel launch between the two loops (delta_trig=3) */
__device__ __forceinline__ float delta_column(float *s, int st, int kd, const float *sk,
                                              const float *sq, float alpha, float bt, float vv)
{
    const int n = KDT ? KDT : kd;
    const int stride = KDT ? 1 : st;
    float kv = 0.0f;
    if (KDT) {
        /* The unrolled variant reads sk and sq as float4 (16-byte aligned: the kernels' dynamic shared
         * memory, kd % 4 == 0), the same values in the same order. Why not element by element: NVVM's
         * load vectorizer then merged the unrolled loads into vector loads differently from one
         * compilation of the same source to the next (two builds of one commit, two libraries; found
         * comparing PTX, PERF-NOTES v30), so a library's SHA-256 did not name its source. */
        const unsigned sk4 = (unsigned)__cvta_generic_to_shared(sk);
#pragma unroll
        for (int d4 = 0; d4 < n / 4; d4++) {
            const float4 k4 = lds_f4(sk4 + 16 * d4);
            const float kk[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int dk = 4 * d4 + j;
                const float t = __fmul_rn(s[dk * stride], alpha);
                s[dk * stride] = t;
                kv = __fadd_rn(kv, __fmul_rn(t, kk[j]));
            }
        }
    } else {
#pragma unroll
        for (int dk = 0; dk < n; dk++) { /* decay, then S^T k */
            const float t = __fmul_rn(s[dk * stride], alpha);
            s[dk * stride] = t;
            kv = __fadd_rn(kv, __fmul_rn(t, sk[dk]));
        }
    }
    const float delta = __fmul_rn(__fsub_rn(vv, kv), bt);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (MID) /* every loaded value of s is in delta: the state's loads have returned (the operand orders it) */
        asm volatile("griddepcontrol.launch_dependents;" ::"f"(delta) : "memory");
#endif
    float oa = 0.0f;
    if (KDT) { /* as above: sk and sq as float4 */
        const unsigned sk4 = (unsigned)__cvta_generic_to_shared(sk), sq4 = (unsigned)__cvta_generic_to_shared(sq);
#pragma unroll
        for (int d4 = 0; d4 < n / 4; d4++) {
            const float4 k4 = lds_f4(sk4 + 16 * d4), q4 = lds_f4(sq4 + 16 * d4);
            const float kk[4] = {k4.x, k4.y, k4.z, k4.w}, qq[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int dk = 4 * d4 + j;
                const float t = __fadd_rn(s[dk * stride], __fmul_rn(kk[j], delta));
                s[dk * stride] = t;
                oa = __fadd_rn(oa, __fmul_rn(t, qq[j]));
            }
        }
    } else {
#pragma unroll
        for (int dk = 0; dk < n; dk++) { /* rank-one update, then S^T q with the updated S */
            const float t = __fadd_rn(s[dk * stride], __fmul_rn(sk[dk], delta));
            s[dk * stride] = t;
            oa = __fadd_rn(oa, __fmul_rn(t, sq[dk]));
        }
    }
    return oa;
}

/* The gated RMS norm of one head's output o (vd threads; thread dv holds oa = o[i], i = head*vd + dv,
 * zz = z[i], wv = w[dv]):
 * y (vh, vd) = w * (o * rsqrt(mean(o^2) + eps)) * silu(z), quantised into yq (vh*vd/32,):
 * gated_rmsnorm_q8's arithmetic in its order (block_sum over the same threads). red: 32 floats.
 * vd comes at run time, as gated_rmsnorm_q8 has it (a constant would fold the mean into an fma). */
__device__ __forceinline__ void gated_norm_q8_column(float oa, size_t i, int dv, int vd, float zz, float wv,
                                                     float eps, float *__restrict__ y, kc_q8blk *__restrict__ yq,
                                                     float *red)
{
    const float ss = block_sum(oa * oa, red);
    const float inv = rsqrtf(ss / (float)vd + eps);
    const float yv = wv * (oa * inv) * (zz / (1.0f + expf(-zz)));
    y[i] = yv;
    q8_quantize_warp(yv, yq + i / 32);
}

/* S (vh, kd, vd); q, k (kh, kd); v, o (vh, vd); g, beta (vh,). grid = vh, dynamic smem 2*kd floats.
 * z != NULL (KDT == 128 only): the gated RMS norm of the head follows in the same block, y (vh, vd) =
 * w * (o * rsqrt(mean(o^2) + eps)) * silu(z), quantised into yq (vh*vd/32,): gated_rmsnorm_q8's
 * arithmetic in its order (block_sum over the same 128 threads), so bit-identical to the two launches. */
/* TRIG (KDT == 128; option delta_trig, PERF-NOTES v25): where the block lets the next kernel (the out
 * projection, whose rings then preload 18 MB) launch: 0 at the start (kc_pdl_begin), 1 once the step's
 * loads are issued, 3 once they have returned (between delta_column's loops), 2 once the head's column
 * is computed; 1-3 keep that preload from queueing in front of this kernel's state loads. Same
 * arithmetic: the same bits. */
template <int KDT, int TRIG = 0>
__device__ __forceinline__ void delta_step_body(float *__restrict__ S, const float *q,
                                                const float *k, const float *v,
                                                const float *g, const float *beta,
                                                float *__restrict__ o, int kh, int kd, int vh, int vd,
                                                const float *z, const float *__restrict__ w, float eps,
                                                float *__restrict__ y, kc_q8blk *__restrict__ yq)
{
    extern __shared__ float sh[];
    float *sq = sh, *sk = sh + kd;
    const int vi = blockIdx.x;
    const int hk = vi % kh; /* tiled v-head -> k-head mapping of the GGUF files */
    Q8T_T(t_entry); /* bench_gemv's per-block timeline (KC_Q8T_DBG builds only; --shape gdnwin) */
    /* the norm's weight before the PDL wait (weights never change during a run: docs "PDL") */
    const float wn = KDT && z ? __ldg(w + threadIdx.x) : 0.0f;
    if (TRIG) {
        kc_pdl_wait();
        kc_trace_mark();
    } else {
        kc_pdl_begin();
    }
    Q8T_T(t_wait);
    float *Sm = S + (size_t)vi * kd * vd;
    const float gl = g[vi], bt = beta[vi];
    if (KDT == 0) {
        for (int d = threadIdx.x; d < kd; d += blockDim.x) {
            sq[d] = q[(size_t)hk * kd + d];
            sk[d] = k[(size_t)hk * kd + d];
        }
        __syncthreads();
        const float alpha = expf(gl);
        for (int dv = threadIdx.x; dv < vd; dv += blockDim.x)
            o[(size_t)vi * vd + dv] =
                delta_column<0>(Sm + dv, vd, kd, sk, sq, alpha, bt, v[(size_t)vi * vd + dv]);
        (void)t_entry;
        (void)t_wait;
    } else {
        /* every load of the step issued before the first is used: the column of S, v, z and the q/k
         * staging in one round trip (the staging's barrier came first: PERF-NOTES v14 row 3) */
        const int dv = threadIdx.x; /* blockDim.x == KDT == vd == kd */
        const size_t i = (size_t)vi * KDT + dv;
        float Sr[KDT ? KDT : 1];
#pragma unroll
        for (int dk = 0; dk < KDT; dk++) Sr[dk] = Sm[(size_t)dk * KDT + dv];
        const float vv = v[i];
        const float zz = z ? z[i] : 0.0f;
        sq[dv] = q[(size_t)hk * KDT + dv];
        sk[dv] = k[(size_t)hk * KDT + dv];
        __syncthreads();
        if (TRIG == 1) kc_pdl_trigger();
        const float oa = delta_column<KDT, TRIG == 3>(Sr, 1, KDT, sk, sq, expf(gl), bt, vv);
        Q8T_T(t_col);
        if (TRIG == 2) kc_pdl_trigger();
#pragma unroll
        for (int dk = 0; dk < KDT; dk++) Sm[(size_t)dk * KDT + dv] = Sr[dk];
#ifdef KC_Q8T_DBG
        if (g_q8t_dbg_mark == 9 && threadIdx.x == 0) t_col = q8t_now(); /* the state's stores issued */
#endif
        o[i] = oa;
        if (z) {
            __shared__ float red[32];
            gated_norm_q8_column(oa, i, dv, vd, zz, wn, eps, y, yq, red); /* vd == KDT */
        }
        Q8T_REC_N(S, t_entry, t_wait, t_col, KDT / 32); /* (entry, wait passed, column computed, end) */
    }
}

template <int KDT>
__global__ void delta_step_kernel(float *__restrict__ S, const float *q,
                                  const float *k, const float *v,
                                  const float *g, const float *beta,
                                  float *__restrict__ o, int kh, int kd, int vh, int vd,
                                  const float *z, const float *__restrict__ w, float eps,
                                  float *__restrict__ y, kc_q8blk *__restrict__ yq)
{
    delta_step_body<KDT>(S, q, k, v, g, beta, o, kh, kd, vh, vd, z, w, eps, y, yq);
}

/* the block's head of S (vh, 128, 128) into L2 (delta_pf): 64 KB, 4 lines of 128 bytes per thread of 128 */
__device__ __forceinline__ void delta_state_prefetch_l2(const float *S)
{
    const float *Sm = S + (size_t)blockIdx.x * 128 * 128;
#pragma unroll
    for (int i = 0; i < 4; i++)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(Sm + 32 * (threadIdx.x + 128 * i)));
}

/* delta_step_kernel<128> with the head's state S prefetched into L2 BEFORE the PDL wait (option
 * delta_pf): S is this layer's own state, last written by this kernel a token ago, and an L2
 * prefetch reads nothing into the kernel (L2 is the point of coherence: a line prefetched early
 * holds whatever was last written), so it is safe where a load would not be; after the wait the 64
 * KB per head come from L2 instead of HBM (~0.5 us of the step's critical path per GDN layer).
 * Same arithmetic: the same bits. 128 threads: 4 lines of 128 bytes each. */
__global__ void __launch_bounds__(128) delta_step_pf_kernel(float *__restrict__ S, const float *q,
                                                            const float *k, const float *v,
                                                            const float *g, const float *beta,
                                                            float *__restrict__ o, int kh, int kd, int vh, int vd,
                                                            const float *z, const float *__restrict__ w, float eps,
                                                            float *__restrict__ y, kc_q8blk *__restrict__ yq)
{
    delta_state_prefetch_l2(S);
    delta_step_body<128>(S, q, k, v, g, beta, o, kh, kd, vh, vd, z, w, eps, y, yq);
}

/* delta_step_kernel<128> letting the next kernel launch later (option delta_trig: TRIG 1, 2 or 3, see
 * delta_step_body); PF: after the state's L2 prefetch as delta_step_pf_kernel (delta_pf=1). Why the pair
 * (PERF-NOTES v27): with the out projection launched at the delta rule's start its 18 MB preload queues in
 * front of the state's loads (prefetched or not, v20 row 4); launched late, the preload starts only once
 * the state has come from HBM (v26 row 9). Prefetched into L2 while gdn_prep runs and HBM is idle, the
 * state returns from L2, and the preload can start that much earlier without queueing in front of it. */
template <int TRIG, int PF = 0>
__global__ void __launch_bounds__(128) delta_step_trig_kernel(float *__restrict__ S, const float *q,
                                                              const float *k, const float *v,
                                                              const float *g, const float *beta,
                                                              float *__restrict__ o, int kh, int kd, int vh, int vd,
                                                              const float *z, const float *__restrict__ w, float eps,
                                                              float *__restrict__ y, kc_q8blk *__restrict__ yq)
{
    if (PF) delta_state_prefetch_l2(S);
    delta_step_body<128, TRIG>(S, q, k, v, g, beta, o, kh, kd, vh, vd, z, w, eps, y, yq);
}

/* gdn_step: gdn_prep + delta_step_norm_q8 of one GDN layer in ONE launch (option gdn=fused; kd == vd
 * == 128). One block of 128 threads per v-head; the r = vh / kh v-heads of one k-head (hk, hk + kh,
 * ..., the tiled mapping) form one thread-block cluster. Thread t of every block computes channel t
 * of its k-head's q and k (conv + SiLU from the history, L2 norm) itself, channel t of its own
 * v-head's v (history advanced at once: no other block reads it) and its head's beta and g (from the
 * f32 beta/alpha projections of xn, or from b, a when Wb is NULL); a cluster barrier then orders every
 * block's reads of the q/k history before rank 0 advances it. The head's state S is copied into
 * shared memory by cp.async as the kernel starts, so its round trip overlaps that arithmetic. Why: the
 * gdn_prep launch cost 4.5 us per layer on the step's critical path (profile=trace, PERF-NOTES v13)
 * for almost no work. Every value is computed by gdn_prep's and delta_step_kernel<128>'s code in
 * their order (one value per thread, the same 128-thread block sums): bit-identical to the two
 * launches (test_kernels). Grid vh blocks, cluster r, dynamic shared memory kd * vd floats. */
#define GDN_DOT_U 10 /* float4 per thread of each projection row: D <= 4 * 128 * GDN_DOT_U = 5120 */
__global__ void __launch_bounds__(128) gdn_step_kernel(const kc_gdn_step_args a)
{
    extern __shared__ float4 gdn_S4[]; /* (kd * vd / 4) the head's S */
    __shared__ __align__(16) float sq[128], sk[128]; /* read as float4 by delta_column<128> */
    __shared__ float red[32];
    const int t = threadIdx.x, r = a.vh / a.kh, j = blockIdx.x % r, hk = blockIdx.x / r, vi = hk + j * a.kh;
    const int C = a.C, K = a.K;
    kc_pdl_begin();
    float *Sg = a.S + (size_t)vi * 128 * 128;
    {
        const unsigned sb = (unsigned)__cvta_generic_to_shared(gdn_S4);
        for (int i = t; i < 128 * 128 / 4; i += 128)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sb + 16u * (unsigned)i), "l"(Sg + 4 * i)
                         : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    /* the beta/alpha projection rows of head vi and xn, every load issued before any is used (the
     * first build looped over them one round trip per iteration: 15.5 us per layer, PERF-NOTES v14) */
    float4 bv[GDN_DOT_U], av[GDN_DOT_U], xv[GDN_DOT_U];
    const int n4 = a.Wb ? a.D / 4 : 0;
    if (a.Wb) {
        const float4 *wb = (const float4 *)(a.Wb + (size_t)vi * a.D), *wa = (const float4 *)(a.Wa + (size_t)vi * a.D);
        const float4 *x4 = (const float4 *)a.xn; /* the predecessor's output: coherent loads */
#pragma unroll
        for (int u = 0; u < GDN_DOT_U; u++) {
            const int i = t + 128 * u;
            if (i < n4) {
                bv[u] = __ldg(wb + i);
                av[u] = __ldg(wa + i);
                xv[u] = x4[i];
            }
        }
    }
    /* conv + SiLU: q and k of head hk (history only read), v of head vi (own channel: advanced) */
    const int cq = hk * 128 + t, ck = a.kh * 128 + cq, cv = 2 * a.kh * 128 + vi * 128 + t;
    const float vq = conv_value(a.x, a.hist, a.conv_w, C, K, cq);
    const float vk = conv_value(a.x, a.hist, a.conv_w, C, K, ck);
    const float vv = conv_channel(a.x, a.hist, a.conv_w, a.conv, C, K, cv);
    /* L2 norms as gdn_prep's head blocks (one value per thread of 128); the projections as its row
     * blocks (thread t: columns 4(t + 128u).., in u order); the four block sums in one pass, each
     * with block_sum's tree */
    float ssq = 0.0f, ssk = 0.0f, sb = 0.0f, sa = 0.0f;
    ssq += vq * vq;
    ssk += vk * vk;
    if (a.Wb) {
#pragma unroll
        for (int u = 0; u < GDN_DOT_U; u++) {
            if (t + 128 * u < n4) {
                sb += bv[u].x * xv[u].x;
                sb += bv[u].y * xv[u].y;
                sb += bv[u].z * xv[u].z;
                sb += bv[u].w * xv[u].w;
                sa += av[u].x * xv[u].x;
                sa += av[u].y * xv[u].y;
                sa += av[u].z * xv[u].z;
                sa += av[u].w * xv[u].w;
            }
        }
    }
    {
        __shared__ float4 red4[32];
        float4 v4 = make_float4(warp_sum(ssq), warp_sum(ssk), warp_sum(sb), warp_sum(sa));
        if ((t & 31) == 0) red4[t >> 5] = v4;
        __syncthreads();
        v4 = (t & 31) < 4 ? red4[t & 31] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        ssq = warp_sum(v4.x);
        ssk = warp_sum(v4.y);
        sb = warp_sum(v4.z);
        sa = warp_sum(v4.w);
    }
    const float invq = rsqrtf(ssq + 1e-6f) * a.qscale, invk = rsqrtf(ssk + 1e-6f) * 1.0f;
    sq[t] = vq * invq;
    sk[t] = vk * invk;
    if (j == 0) { /* the values gdn_prep stores (readback, the unfused path's inputs) */
        a.conv[cq] = vq;
        a.conv[ck] = vk;
        a.qn[cq] = sq[t];
        a.kn[cq] = sk[t];
    }
    /* beta and g of head vi */
    float bt, gv;
    if (a.Wb) { /* gdn_prep's formulas on the projections */
        bt = 1.0f / (1.0f + expf(-sb));
        const float xa = sa + a.dt_bias[vi];
        const float sp = xa > 20.0f ? xa : log1pf(expf(xa));
        gv = a.ssm_a[vi] * sp;
        if (t == 0) {
            a.b[vi] = sb;
            a.a[vi] = sa;
        }
    } else { /* beta_g_one's formulas on b, a from the projections' launch */
        const float xa = a.a[vi] + a.dt_bias[vi];
        const float sp = xa > 20.0f ? xa : log1pf(expf(xa));
        gv = a.ssm_a[vi] * sp;
        bt = 1.0f / (1.0f + expf(-a.b[vi]));
    }
    if (t == 0) {
        a.beta[vi] = bt;
        a.g[vi] = gv;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (r > 1) { /* every block of the cluster has read the q/k history */
        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
        asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    }
#endif
    if (j == 0) {
        conv_advance(a.hist, C, K, cq, a.x[cq]);
        conv_advance(a.hist, C, K, ck, a.x[ck]);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads(); /* S, sq, sk */
    const float zz = a.z[(size_t)vi * 128 + t];
    const float *sS = (const float *)gdn_S4;
    float Sr[128];
#pragma unroll
    for (int dk = 0; dk < 128; dk++) Sr[dk] = sS[dk * 128 + t];
    const float alpha = expf(gv);
    const float oa = delta_column<128>(Sr, 1, 128, sk, sq, alpha, bt, vv);
#pragma unroll
    for (int dk = 0; dk < 128; dk++) Sg[(size_t)dk * 128 + t] = Sr[dk];
    a.o[(size_t)vi * 128 + t] = oa;
    gated_norm_q8_column(oa, (size_t)vi * 128 + t, t, a.vd, zz, a.w[t], a.eps, a.y, a.yq, red);
}

#endif
