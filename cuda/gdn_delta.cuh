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

/* s: column of S, element dk at s[dk * st]; sk, sq (kd,) in shared memory. Returns o[dv]. */
template <int KDT>
__device__ __forceinline__ float delta_column(float *s, int st, int kd, const float *sk,
                                              const float *sq, float alpha, float bt, float vv)
{
    const int n = KDT ? KDT : kd;
    const int stride = KDT ? 1 : st;
    float kv = 0.0f;
#pragma unroll
    for (int dk = 0; dk < n; dk++) { /* decay, then S^T k */
        const float t = s[dk * stride] * alpha;
        s[dk * stride] = t;
        kv += t * sk[dk];
    }
    const float delta = (vv - kv) * bt;
    float oa = 0.0f;
#pragma unroll
    for (int dk = 0; dk < n; dk++) { /* rank-one update, then S^T q with the updated S */
        const float t = s[dk * stride] + sk[dk] * delta;
        s[dk * stride] = t;
        oa += t * sq[dk];
    }
    return oa;
}

/* S (vh, kd, vd); q, k (kh, kd); v, o (vh, vd); g, beta (vh,). grid = vh, dynamic smem 2*kd floats.
 * z != NULL (KDT == 128 only): the gated RMS norm of the head follows in the same block, y (vh, vd) =
 * w * (o * rsqrt(mean(o^2) + eps)) * silu(z), quantised into yq (vh*vd/32,): gated_rmsnorm_q8's
 * arithmetic in its order (block_sum over the same 128 threads), so bit-identical to the two launches. */
template <int KDT>
__global__ void delta_step_kernel(float *__restrict__ S, const float *q,
                                  const float *k, const float *v,
                                  const float *g, const float *beta,
                                  float *__restrict__ o, int kh, int kd, int vh, int vd,
                                  const float *z, const float *__restrict__ w, float eps,
                                  float *__restrict__ y, kc_q8blk *__restrict__ yq)
{
    kc_pdl_begin();
    extern __shared__ float sh[];
    float *sq = sh, *sk = sh + kd;
    const int vi = blockIdx.x;
    const int hk = vi % kh; /* tiled v-head -> k-head mapping of the GGUF files */
    for (int d = threadIdx.x; d < kd; d += blockDim.x) {
        sq[d] = q[(size_t)hk * kd + d];
        sk[d] = k[(size_t)hk * kd + d];
    }
    __syncthreads();
    float *Sm = S + (size_t)vi * kd * vd;
    const float alpha = expf(g[vi]);
    const float bt = beta[vi];
    if (KDT == 0) {
        for (int dv = threadIdx.x; dv < vd; dv += blockDim.x)
            o[(size_t)vi * vd + dv] =
                delta_column<0>(Sm + dv, vd, kd, sk, sq, alpha, bt, v[(size_t)vi * vd + dv]);
    } else {
        const int dv = threadIdx.x; /* blockDim.x == KDT == vd */
        float Sr[KDT ? KDT : 1];
#pragma unroll
        for (int dk = 0; dk < KDT; dk++) Sr[dk] = Sm[(size_t)dk * KDT + dv];
        const float oa = delta_column<KDT>(Sr, 1, KDT, sk, sq, alpha, bt, v[(size_t)vi * KDT + dv]);
#pragma unroll
        for (int dk = 0; dk < KDT; dk++) Sm[(size_t)dk * KDT + dv] = Sr[dk];
        o[(size_t)vi * KDT + dv] = oa;
        if (z) {
            __shared__ float red[32];
            const size_t i = (size_t)vi * KDT + dv;
            const float ss = block_sum(oa * oa, red);
            const float inv = rsqrtf(ss / (float)vd + eps); /* vd == KDT here */
            const float zz = z[i];
            const float yv = w[dv] * (oa * inv) * (zz / (1.0f + expf(-zz)));
            y[i] = yv;
            q8_quantize_warp(yv, yq + i / 32);
        }
    }
}

#endif
