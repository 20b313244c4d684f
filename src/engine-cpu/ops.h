/*
 * ops.h - the building blocks of the CPU reference engine (cpu_engine.c).
 *
 * Each op is a pure function of its arguments (no globals, no allocation),
 * all arithmetic in f32, and is the CPU twin of the CUDA kernel of the SAME
 * name: the CUDA engine validates each kernel against the function here.
 * tests/unit/test_ops.c checks every op against values computed by hand.
 *
 * It deliberately is not fast code: it is the readable spec. The one op that
 * matters for speed, matvec, splits rows over a small persistent thread pool
 * (ops_pool) that the engine handle owns; each row's dot product is computed
 * by exactly one thread, in a fixed order, so results do not depend on the
 * number of threads.
 *
 * Letters used in shapes: D model dim, C channels, K conv kernel width,
 * kh/vh key/value heads (GDN), kd/vd key/value head dims, H attention heads,
 * Hkv kv heads, hd attention head dim, P positions in the KV cache.
 */
#ifndef KESTREL_OPS_H
#define KESTREL_OPS_H

#include <stdint.h>

/* ---- thread pool (owned by an engine handle; no global state) ---- */
typedef struct ops_pool ops_pool;

/* n_threads >= 1 (the caller's thread counts as one). 0 ok, nonzero on failure. */
int ops_pool_create(int n_threads, ops_pool **out);
void ops_pool_destroy(ops_pool *p); /* NULL is fine */
int ops_pool_threads(const ops_pool *p);
/* Run fn(arg, tid, n) on every thread tid = 0..n-1 (tid 0 is the caller) and wait for all. */
void ops_pool_run(ops_pool *p, void (*fn)(void *arg, int tid, int n), void *arg);

/* ---- scalar helpers (the CUDA twins use the same formulas) ---- */
float op_sigmoid(float x);  /* 1 / (1 + exp(-x)) */
float op_silu(float x);     /* x * sigmoid(x) */
float op_softplus(float x); /* log(1 + exp(x)), x for x > 20 (torch's threshold) */

/* ---- ops ---- */

/* out = x * rsqrt(mean(x^2) + eps) * w. x, w, out: (n,); out may alias x.
 * The GGUF stores zero-centred norms as 1+w, so w is the stored weight. */
void rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* out = x * rsqrt(sum(x^2) + 1e-6). x, out: (n,); out may alias x. */
void l2norm(float *out, const float *x, int n);

/* beta = sigmoid(b), g = ssm_a * softplus(a + dt_bias), ssm_a = -exp(A_log) as stored.
 * beta, g, b, a, ssm_a, dt_bias: (vh,) */
void gdn_beta_g(float *beta, float *g, const float *b, const float *a, const float *ssm_a,
                const float *dt_bias, int vh);

/* Depthwise causal conv, one step, then SiLU, then the history advanced.
 * out: (C,) = silu(sum_{j<K-1} hist[j][c] * w[c][j] + x[c] * w[c][K-1])
 * hist: (K-1, C) the previous K-1 inputs, oldest first; on return it holds the
 *       last K-1 inputs including x. x: (C,) new input. w: (C, K) (GGUF {K, C}),
 *       tap K-1 multiplies the newest input. out must not alias hist or x. */
void conv_step(float *out, float *hist, const float *x, const float *w, int C, int K);

/* Gated delta rule, one step, all value heads. v-head h reads k-head h % kh (tiled order).
 * S: (vh, kd, vd) state, updated in place. o: (vh, vd) out.
 * q, k: (kh, kd) (already l2-normed, q already scaled by 1/sqrt(kd)). v: (vh, vd).
 * g, beta: (vh,). Per head: S *= exp(g); kv = S^T k; delta = (v - kv) * beta;
 * S += k (x) delta; o = S^T q. */
void delta_step(float *S, float *o, const float *q, const float *k, const float *v, const float *g,
                const float *beta, int kh, int vh, int kd, int vd);

/* out = w * (o * rsqrt(mean(o^2) + eps)) * silu(z), per row of n (plain w, not 1+w).
 * out, o, z: (n,); w: (n,). out may alias o. */
void gated_rmsnorm(float *out, const float *o, const float *z, const float *w, int n, float eps);

/* NeoX RoPE on the first n_rot dims of each head, in place; dims >= n_rot pass through.
 * x: (n_heads, head_dim). Pairs (i, i + n_rot/2), angle pos * base^(-2i/n_rot). */
void rope_neox(float *x, int n_heads, int head_dim, int n_rot, int pos, float base);

/* Gated GQA attention of one query position over n_pos cached positions.
 * out: (H, hd) = sigmoid(gate) * sum_p softmax_p(q.k_p / sqrt(hd)) v_p, head h uses kv head
 * h / (H / Hkv). q, gate: (H, hd). kc, vc: (P >= n_pos, Hkv * hd) row p = position p.
 * att: (n_pos,) scratch. */
void attention(float *out, const float *q, const float *gate, const float *kc, const float *vc,
               int H, int Hkv, int hd, int n_pos, float *att);

/* out = silu(gate) * up. out, gate, up: (n,); out may alias gate. */
void swiglu(float *out, const float *gate, const float *up, int n);

/* out = W x for a weight matrix of any type (enum ggml_type) decoded on the fly by dot_row.
 * W: (n_out, n_in) rows of ggml_row_bytes(type, n_in) bytes (GGUF {n_in, n_out}).
 * x: (n_in,). out: (n_out,). pool may be NULL (single thread). */
void matvec(ops_pool *pool, float *out, const void *W, uint32_t type, const float *x, int n_in, int n_out);

/* ---- 8-bit activations (the CUDA engine's dp4a GEMV, issue 6) ---- */

/* 8-bit activations for integer dot products (CPU engine option dot=q8; CUDA twins quantize_q8 / matvec_q8). */
typedef struct q8_block {
    int8_t q[32];   /* the 32 values of the block quantised: round(x * 127 / amax) */
    float d;        /* amax / 127 (the value of one step) */
    int32_t s8;     /* -8 * (sum of q): folds q4_0's offset of 8 into the integer dot */
    int32_t pad[2]; /* 48 bytes: three 16-byte loads on the device */
} q8_block;
/* out (n/32,) from x (n,), n % 32 == 0.
 * Per block, in f32 without FMA: amax = max |x| (a NaN is sticky), d = amax / 127,
 * id = amax > 0 ? 127 / amax : 0 (NaN amax -> 0); q = nearbyintf(clamp(x * id, -127, 127))
 * (ties to even; a NaN product gives 0); s8 = -8 * sum(q); pad = 0. */
void quantize_q8(q8_block *out, const float *x, int n);
/* out (n_out,) = W (n_out, n_in) . x with x given as quantize_q8 blocks xq (n_in/32,); W: q4_0 rows
 * (ggml blocks of 18 bytes). type must be GGML q4_0 (2). pool may be NULL.
 * Per row: c_b = s8_b + sum_j nibble_j * q_j (int32, exact); partial sums p[l], l < 32, take blocks
 * b = l, l+32, ... in ascending order: p[l] += (dw_b * d_b) * (float)c_b; then the butterfly
 * p[l] += p[l ^ off] for off = 16, 8, 4, 2, 1; out = p[0]. Any other type: out is all NaN (a caller bug). */
void matvec_q8(ops_pool *pool, float *out, const void *W, uint32_t type, const q8_block *xq, int n_in, int n_out);

#endif
