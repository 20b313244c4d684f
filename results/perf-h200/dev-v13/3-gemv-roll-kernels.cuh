
/* ---- x-stationary with a rolling weight prefetch (option gemv_roll, PERF-NOTES v13) ----
 * v13 measured (bench_gemv l2) that the 5120 x 6144 x-stationary GEMV is as slow with its weights
 * in L2 as from HBM (8.48 vs 8.74 us): it is bound by each warp's chain of trips (load a row, wait,
 * dot, reduce, next row), not by bandwidth. Here, as soon as block k of the current row has been
 * used, its register is reloaded with block k of the warp's NEXT row: the next trip's loads are in
 * flight during the current dot and reduction, with no extra registers. Same blocks, same order,
 * same float operations per row: bit-identical to matvec_q8x_kernel / matvec_swiglu_q8x_kernel. */
template <int NBL>
__device__ __forceinline__ float q8x_dot_roll(uint4 (&w)[NBL], float (&dw)[NBL], int nb, const int4 (&xa)[NBL],
                                              const int4 (&xb)[NBL], const float (&xd)[NBL], const int (&xs)[NBL],
                                              const uint4 *__restrict__ nq, const __half *__restrict__ nd, bool next)
{
    const int lane = threadIdx.x & 31;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < NBL; k++) {
        const int b = lane + 32 * k;
        if (b < nb) {
            const int c = q4q8_block_dot(w[k], xa[k], xb[k], xs[k]);
            const float sc = dw[k] * xd[k];
            if (next) {
                w[k] = __ldg(nq + b);
                dw[k] = __half2float(__ldg(nd + b));
            }
            acc = acc + sc * (float)c;
        }
    }
    return warp_sum(acc);
}

/* matvec_q8x_kernel with the rolling prefetch (job.early as there) */
template <int NBL>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_q8xr_kernel(const q8_job job, const kc_q8blk *__restrict__ xq)
{
    const int lane = threadIdx.x & 31, nb = job.W[0].cols / 32;
    const int total = job.gstart[job.n], stride = gridDim.x * Q8M_WARPS, w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5);
    uint4 w[NBL];
    float dw[NBL];
    int mi = w0 < total ? q8_job_mat(job, w0) : 0;
    if (job.early && w0 < total) {
        const int r = w0 - job.gstart[mi];
        q8x_load_w<NBL>((const uint4 *)job.W[mi].data + (size_t)r * nb, job.W[mi].d + (size_t)r * nb, nb, w, dw);
    }
    kc_pdl_begin();
    if (w0 >= total) return;
    if (!job.early) {
        const int r = w0 - job.gstart[mi];
        q8x_load_w<NBL>((const uint4 *)job.W[mi].data + (size_t)r * nb, job.W[mi].d + (size_t)r * nb, nb, w, dw);
    }
    int4 xa[NBL], xb[NBL];
    float xd[NBL];
    int xs[NBL];
    q8x_load_x<NBL>(xq, nb, xa, xb, xd, xs);
    for (int gg = w0; gg < total; gg += stride) {
        const int r = gg - job.gstart[mi], gn = gg + stride;
        const bool next = gn < total;
        const int mn = next ? q8_job_mat(job, gn) : mi, rn = next ? gn - job.gstart[mn] : 0;
        float *y = job.y[mi];
        const float s = q8x_dot_roll<NBL>(w, dw, nb, xa, xb, xd, xs, (const uint4 *)job.W[mn].data + (size_t)rn * nb,
                                          job.W[mn].d + (size_t)rn * nb, next);
        if (lane == 0) y[r] = job.accumulate ? y[r] + s : s;
        mi = mn;
    }
}

/* matvec_swiglu_q8x_kernel with the rolling prefetch (G.early as there; no pf_next) */
template <int NBL>
__global__ void __launch_bounds__(32 * Q8M_WARPS) matvec_swiglu_q8xr_kernel(const kc_mat G, const kc_mat Up,
                                                                             const kc_q8blk *__restrict__ xq,
                                                                             float *__restrict__ y)
{
    const int lane = threadIdx.x & 31, nb = G.cols / 32;
    const int w0 = blockIdx.x * Q8M_WARPS + (threadIdx.x >> 5), stride = gridDim.x * Q8M_WARPS;
    uint4 wg[NBL], wu[NBL];
    float dg[NBL], du[NBL];
    if (G.early && w0 < G.rows) {
        q8x_load_w<NBL>((const uint4 *)G.data + (size_t)w0 * nb, G.d + (size_t)w0 * nb, nb, wg, dg);
        q8x_load_w<NBL>((const uint4 *)Up.data + (size_t)w0 * nb, Up.d + (size_t)w0 * nb, nb, wu, du);
    }
    kc_pdl_begin();
    if (w0 >= G.rows) return;
    if (!G.early) {
        q8x_load_w<NBL>((const uint4 *)G.data + (size_t)w0 * nb, G.d + (size_t)w0 * nb, nb, wg, dg);
        q8x_load_w<NBL>((const uint4 *)Up.data + (size_t)w0 * nb, Up.d + (size_t)w0 * nb, nb, wu, du);
    }
    int4 xa[NBL], xb[NBL];
    float xd[NBL];
    int xs[NBL];
    q8x_load_x<NBL>(xq, nb, xa, xb, xd, xs);
    for (int r = w0; r < G.rows; r += stride) {
        const int rn = r + stride;
        const bool next = rn < G.rows;
        const size_t on = next ? (size_t)rn * nb : 0;
        const float g = q8x_dot_roll<NBL>(wg, dg, nb, xa, xb, xd, xs, (const uint4 *)G.data + on, G.d + on, next);
        const float u = q8x_dot_roll<NBL>(wu, du, nb, xa, xb, xd, xs, (const uint4 *)Up.data + on, Up.d + on, next);
        if (lane == 0) y[r] = g / (1.0f + expf(-g)) * u;
    }
}
