/*
 * test_ops.c - TAP tests of the CPU engine's ops (src/engine-cpu/ops.c)
 * against values computed by hand (the arithmetic is in the comments), and
 * matvec over q8_0/q4_0 weights against a naive dot of the dequantised rows.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "ops.h"
#include "quant.h"
#include "tap.h"


/* expected vs actual, element by element, within abs tolerance tol. exp, got: (n,) */
static void is_vec(const float *exp, const float *got, int n, float tol, const char *desc) {
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (!(fabsf(exp[i] - got[i]) <= tol)) bad = i;
    ok(bad < 0, "%s", desc);
    if (bad >= 0) printf("#   element %d: expected %.9g, got %.9g (tol %g)\n", bad, exp[bad], got[bad], tol);
}

static void test_rmsnorm(void) {
    /* x = [2,-2,2,-2]: mean(x^2) = 4, eps 0 -> rsqrt = 0.5 -> x/2 = [1,-1,1,-1], times w = [1,2,3,0.5] */
    float x[4] = {2, -2, 2, -2}, w[4] = {1, 2, 3, 0.5f}, out[4];
    float exp[4] = {1, -2, 3, -0.5f};
    rmsnorm(out, x, w, 4, 0.0f);
    is_vec(exp, out, 4, 1e-7f, "rmsnorm: x * rsqrt(mean(x^2)) * w");
    /* eps counts: x = [1,1,1,1], eps = 3: rsqrt(1 + 3) = 0.5 */
    float x1[4] = {1, 1, 1, 1}, w1[4] = {1, 1, 1, 1}, exp1[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    rmsnorm(x1, x1, w1, 4, 3.0f);
    is_vec(exp1, x1, 4, 1e-7f, "rmsnorm: eps inside the rsqrt, in place");
}

static void test_l2norm(void) {
    /* x = [3,4]: sum x^2 = 25 (+1e-6) -> [0.6, 0.8] */
    float x[2] = {3, 4}, out[2], exp[2] = {0.6f, 0.8f};
    l2norm(out, x, 2);
    is_vec(exp, out, 2, 1e-7f, "l2norm: [3,4] -> [0.6,0.8]");
    /* zero vector stays finite: 0 * rsqrt(1e-6) = 0 */
    float z[3] = {0, 0, 0}, ez[3] = {0, 0, 0};
    l2norm(z, z, 3);
    is_vec(ez, z, 3, 0.0f, "l2norm: zero vector -> zero (eps 1e-6)");
}

static void test_beta_g(void) {
    /* head 0: b = 0 -> beta 0.5; a = 0, dt_bias = ln(e-1) -> softplus = ln(1 + e - 1) = 1 -> g = -2 * 1
     * head 1: b = ln 3 -> beta = 3/4; a + dt = 30 > 20 -> softplus = 30 -> g = -0.5 * 30 = -15 */
    float b[2] = {0, logf(3.0f)}, a[2] = {0, 30}, ssm_a[2] = {-2, -0.5f}, dt[2] = {0.541324854612918f, 0};
    float beta[2], g[2];
    gdn_beta_g(beta, g, b, a, ssm_a, dt, 2);
    float eb[2] = {0.5f, 0.75f}, eg[2] = {-2, -15};
    is_vec(eb, beta, 2, 1e-6f, "gdn_beta_g: beta = sigmoid(b)");
    is_vec(eg, g, 2, 1e-5f, "gdn_beta_g: g = ssm_a * softplus(a + dt_bias)");
}

static void test_conv_step(void) {
    /* C = 2, K = 3. history (K-1, C), oldest first: [[1,10],[2,20]]; new x = [3,30].
     * w (C, K): c0 = [1,-1,0.5] -> 1*1 + 2*(-1) + 3*0.5 = 0.5; c1 = [0.1,0,-0.1] -> 1 + 0 - 3 = -2
     * silu(0.5) = 0.5 / (1 + e^-0.5) = 0.311229666; silu(-2) = -2 / (1 + e^2) = -0.238405844 */
    float hist[4] = {1, 10, 2, 20}, x[2] = {3, 30}, w[6] = {1, -1, 0.5f, 0.1f, 0, -0.1f}, out[2];
    conv_step(out, hist, x, w, 2, 3);
    float eo[2] = {0.311229666f, -0.238405844f}, eh[4] = {2, 20, 3, 30};
    is_vec(eo, out, 2, 1e-6f, "conv_step: silu(taps . [hist; x]), tap K-1 on the newest");
    is_vec(eh, hist, 4, 0.0f, "conv_step: history advanced to the last K-1 inputs");
    /* a second step: history [[2,20],[3,30]], x = [0,0]: c0 = 2 - 3 + 0 = -1 -> silu(-1) = -0.268941421 */
    float x2[2] = {0, 0};
    conv_step(out, hist, x2, w, 2, 3);
    ok(fabsf(out[0] - (-0.268941421f)) < 1e-6f, "conv_step: second step uses the advanced history");
}

static void test_delta_step(void) {
    /* kd = vd = 2, one head. S (kd, vd) = [[1,0],[0,2]]; g = ln 0.5 -> S = [[0.5,0],[0,1]]
     * k = [1,0]: kv_j = sum_i S[i][j] k_i = [0.5, 0]; v = [2,3], beta 0.5: delta = [0.75, 1.5]
     * S += k (x) delta -> [[1.25, 1.5],[0, 1]]; q = [1,1]: o_j = sum_i S[i][j] q_i = [1.25, 2.5] */
    float S[4] = {1, 0, 0, 2}, q[2] = {1, 1}, k[2] = {1, 0}, v[2] = {2, 3}, g[1] = {logf(0.5f)}, beta[1] = {0.5f};
    float o[2];
    delta_step(S, o, q, k, v, g, beta, 1, 1, 2, 2);
    float eS[4] = {1.25f, 1.5f, 0, 1}, eo[2] = {1.25f, 2.5f};
    is_vec(eS, S, 4, 1e-6f, "delta_step: state S *= exp(g); S += k (x) (v - S^T k) * beta");
    is_vec(eo, o, 2, 1e-6f, "delta_step: o = S^T q");
    /* tiled heads: kh = 2, vh = 4, kd = vd = 1, S = 0, g = 0, beta = 1, v = 1:
     * S_h = k_{h%2}; o_h = k_{h%2} * q_{h%2}; k = [1,2], q = [1,10] -> o = [1, 20, 1, 20]
     * (grouped order would give [1, 1, 20, 20]) */
    float S2[4] = {0}, q2[2] = {1, 10}, k2[2] = {1, 2}, v2[4] = {1, 1, 1, 1}, g2[4] = {0}, b2[4] = {1, 1, 1, 1}, o2[4];
    delta_step(S2, o2, q2, k2, v2, g2, b2, 2, 4, 1, 1);
    float eo2[4] = {1, 20, 1, 20};
    is_vec(eo2, o2, 4, 1e-6f, "delta_step: v-head h reads k-head h % kh (tiled)");
}

static void test_gated_rmsnorm(void) {
    /* o = [2,-2]: rsqrt(mean o^2) = 0.5 -> [1,-1]; z = [0, ln 3]: silu = [0, 0.75 ln 3];
     * w = [1,3] -> [0, 3 * -1 * 0.8239592] = [0, -2.47187765] */
    float o[2] = {2, -2}, z[2] = {0, logf(3.0f)}, w[2] = {1, 3}, out[2], exp[2] = {0, -2.47187765f};
    gated_rmsnorm(out, o, z, w, 2, 0.0f);
    is_vec(exp, out, 2, 1e-6f, "gated_rmsnorm: w * rmsnorm(o) * silu(z)");
}

static void test_rope(void) {
    /* head_dim 4, n_rot 4, pos 1, base 1e4: pairs (0,2) angle 1, (1,3) angle 1e4^(-2/4) = 0.01
     * x = [1,2,3,4]: out0 = 1 cos1 - 3 sin1 = -1.98411065; out2 = 3 cos1 + 1 sin1 = 2.46237790
     *                out1 = 2 cos.01 - 4 sin.01 = 1.95990067; out3 = 4 cos.01 + 2 sin.01 = 4.01979967 */
    float x[4] = {1, 2, 3, 4}, exp[4] = {-1.98411065f, 1.95990067f, 2.46237790f, 4.01979967f};
    rope_neox(x, 1, 4, 4, 1, 10000.0f);
    is_vec(exp, x, 4, 1e-6f, "rope_neox: 4-dim vector, pos 1");
    /* partial: head_dim 6, n_rot 4, two heads; dims 4,5 untouched; pos 0 is the identity */
    float y[12] = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6};
    float ey[12] = {-1.98411065f, 1.95990067f, 2.46237790f, 4.01979967f, 5, 6,
                    -1.98411065f, 1.95990067f, 2.46237790f, 4.01979967f, 5, 6};
    rope_neox(y, 2, 6, 4, 1, 10000.0f);
    is_vec(ey, y, 12, 1e-6f, "rope_neox: partial rotary, two heads, tail dims pass through");
    float p0[4] = {1, 2, 3, 4}, e0[4] = {1, 2, 3, 4};
    rope_neox(p0, 1, 4, 4, 0, 10000.0f);
    is_vec(e0, p0, 4, 0.0f, "rope_neox: position 0 is the identity");
}

static void test_attention(void) {
    /* H = 2, Hkv = 1, hd = 2, 2 positions. k: p0 = [1,0], p1 = [0,1]; v: p0 = [1,2], p1 = [3,4]
     * head 0: q = 0 -> softmax [.5,.5] -> [2,3]; gate 0 -> sigmoid 0.5 -> [1, 1.5]
     * head 1: q = [sqrt2 ln3, 0] -> scores [ln3, 0] -> softmax [.75,.25] -> [1.5, 2.5];
     *         gate [ln3, -ln3] -> [.75, .25] -> [1.125, 0.625] */
    float l3 = logf(3.0f);
    float q[4] = {0, 0, sqrtf(2.0f) * l3, 0}, gate[4] = {0, 0, l3, -l3};
    float kc[4] = {1, 0, 0, 1}, vc[4] = {1, 2, 3, 4}, out[4], att[2];
    attention(out, q, gate, kc, vc, 2, 1, 2, 2, att);
    float exp[4] = {1, 1.5f, 1.125f, 0.625f};
    is_vec(exp, out, 4, 1e-6f, "attention: GQA softmax(q.k/sqrt(hd)) v * sigmoid(gate)");
    /* one position: output is v0 * sigmoid(gate) regardless of q */
    attention(out, q, gate, kc, vc, 2, 1, 2, 1, att);
    float e1[4] = {0.5f, 1.0f, 0.75f, 0.5f};
    is_vec(e1, out, 4, 1e-6f, "attention: a single position attends to itself");
}

static void test_swiglu(void) {
    /* gate = [0, ln3], up = [5,4]: silu(0) * 5 = 0; 0.75 ln3 * 4 = 3.29583687 */
    float g[2] = {0, logf(3.0f)}, u[2] = {5, 4}, out[2], exp[2] = {0, 3.29583687f};
    swiglu(out, g, u, 2);
    is_vec(exp, out, 2, 1e-6f, "swiglu: silu(gate) * up");
}

static uint32_t rng_state = 12345;
static float frand(void) { /* xorshift32 -> [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) / (float)(1u << 23) - 1.0f;
}

/* matvec over a quantised matrix vs the naive double dot of its dequantised rows. */
static void test_matvec_type(uint32_t type, int n_in, int n_out, ops_pool *pool, const char *desc) {
    size_t rb = (size_t)ggml_row_bytes(type, (uint64_t)n_in);
    uint8_t *W = malloc(rb * (size_t)n_out);
    float *wf = malloc(sizeof(float) * (size_t)n_in), *x = malloc(sizeof(float) * (size_t)n_in);
    float *got = malloc(sizeof(float) * (size_t)n_out), *got1 = malloc(sizeof(float) * (size_t)n_out);
    for (int i = 0; i < n_in; i++) x[i] = frand();
    for (int r = 0; r < n_out; r++) {
        for (int i = 0; i < n_in; i++) wf[i] = frand();
        if (type == GGML_TYPE_Q4_0) quantize_row_q4_0(wf, (block_q4_0 *)(W + r * rb), n_in);
        else if (type == GGML_TYPE_Q8_0) quantize_row_q8_0(wf, (block_q8_0 *)(W + r * rb), n_in);
        else memcpy(W + r * rb, wf, rb);
    }
    matvec(pool, got, W, type, x, n_in, n_out);
    matvec(NULL, got1, W, type, x, n_in, n_out);
    double worst = 0;
    for (int r = 0; r < n_out; r++) {
        dequantize_row(type, W + r * rb, wf, n_in);
        double ref = 0, mag = 0;
        for (int i = 0; i < n_in; i++) {
            ref += (double)wf[i] * x[i];
            mag += fabs((double)wf[i] * x[i]);
        }
        double rel = fabs(got[r] - ref) / (mag > 0 ? mag : 1);
        if (rel > worst) worst = rel;
    }
    char d[160];
    snprintf(d, sizeof d, "matvec %s (%d x %d): vs naive dot of dequantised rows", desc, n_out, n_in);
    ok(worst < 1e-5, d);
    if (!(worst < 1e-5)) printf("#   worst |got - ref| / sum|w x| = %g, expected < 1e-5\n", worst);
    snprintf(d, sizeof d, "matvec %s: %d threads bit-identical to 1 thread", desc, ops_pool_threads(pool));
    ok(memcmp(got, got1, sizeof(float) * (size_t)n_out) == 0, d);
    free(W); free(wf); free(x); free(got); free(got1);
}

static void test_matvec_hand(void) {
    /* W (2, 2) f32 = [[1,2],[3,4]], x = [1,-1] -> [-1, -1]; W (3, 2) */
    float W[6] = {1, 2, 3, 4, 5, 7}, x[2] = {1, -1}, out[3], exp[3] = {-1, -1, -2};
    matvec(NULL, out, W, GGML_TYPE_F32, x, 2, 3);
    is_vec(exp, out, 3, 0.0f, "matvec f32: hand-computed 3 x 2");
}

/* ---- quantize_q8 / matvec_q8: 8-bit activations (CPU twins of the CUDA dp4a GEMV) ---- */

/* block b of qb: expected q (32,), d and s8; pad must be 0. */
static void is_q8_block(const q8_block *qb, const int *eq, float ed, int32_t es8, const char *desc) {
    int bad = -1;
    for (int i = 0; i < 32 && bad < 0; i++)
        if (qb->q[i] != eq[i]) bad = i;
    int d_ok = (ed != ed) ? (qb->d != qb->d) : (qb->d == ed);
    int good = bad < 0 && d_ok && qb->s8 == es8 && qb->pad[0] == 0 && qb->pad[1] == 0;
    ok(good, "%s", desc);
    if (bad >= 0) printf("#   q[%d]: expected %d, got %d\n", bad, eq[bad], qb->q[bad]);
    if (!d_ok) printf("#   d: expected %.9g, got %.9g\n", ed, qb->d);
    if (qb->s8 != es8) printf("#   s8: expected %d, got %d\n", (int)es8, (int)qb->s8);
    if (qb->pad[0] || qb->pad[1]) printf("#   pad: expected 0 0, got %d %d\n", (int)qb->pad[0], (int)qb->pad[1]);
}

static void test_quantize_q8(void) {
    float x[5 * 32];
    q8_block qb[5];
    memset(x, 0, sizeof x);
    memset(qb, 0x5a, sizeof qb); /* garbage that quantize_q8 must overwrite, pad included */
    /* block 0: amax = 127 -> id = 1, d = 1, q = nearbyint(x): ties go to even:
     * 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0 = 0, -1.5 -> -2, -2.5 -> -2, 3.5 -> 4, 126.5 -> 126;
     * 0.4 -> 0, 0.6 -> 1. sum q = 127+0+2+2+0-2-2+4-127+126+0+1 = 131 -> s8 = -1048 */
    float b0[12] = {127, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, -127, 126.5f, 0.4f, 0.6f};
    int e0[32] = {127, 0, 2, 2, 0, -2, -2, 4, -127, 126, 0, 1};
    memcpy(x, b0, sizeof b0);
    /* block 1: all zeros -> amax 0, id 0, q 0, d 0, s8 0 */
    int e1[32] = {0};
    /* block 2: a NaN at 3 and a larger |x| after it: the NaN amax sticks, id = 0, every q = 0, d = NaN */
    for (int i = 0; i < 32; i++) x[64 + i] = 1.0f;
    x[64 + 3] = NAN;
    x[64 + 10] = -100.0f;
    int e2[32] = {0};
    /* block 3: amax = 1.0157f, for which amax * (127 / amax) rounds to 127.00001 in f32: clamped to 127;
     * -amax -> -127; amax / 2 = 63.5 steps -> 64 (even); amax / 4 = 31.75 steps -> 32.
     * sum = 127 - 127 + 64 + 32 = 96 -> s8 = -768 */
    float a3 = 1.0157f;
    x[96 + 0] = a3; x[96 + 1] = -a3; x[96 + 2] = a3 * 0.5f; x[96 + 3] = a3 * 0.25f;
    int e3[32] = {127, -127, 64, 32};
    /* block 4: +inf: amax = inf, id = 127/inf = 0; inf * 0 = NaN -> 0; 5 * 0 = 0; d = inf */
    x[128 + 0] = 5.0f; x[128 + 1] = INFINITY;
    int e4[32] = {0};
    quantize_q8(qb, x, 5 * 32);
    is_q8_block(&qb[0], e0, 1.0f, -1048, "quantize_q8: amax 127, ties to even, s8 = -8 sum(q)");
    is_q8_block(&qb[1], e1, 0.0f, 0, "quantize_q8: all-zero block -> q 0, d 0, s8 0");
    is_q8_block(&qb[2], e2, NAN, 0, "quantize_q8: a NaN is sticky in amax -> d NaN, every q 0");
    volatile float id3 = 127.0f / a3, v3 = a3 * id3;
    ok(v3 > 127.0f, "quantize_q8: precondition: 1.0157f * (127 / 1.0157f) = %.9g > 127 in f32", (double)v3);
    is_q8_block(&qb[3], e3, a3 / 127.0f, -768, "quantize_q8: x * id above 127 clamped, -amax -> -127");
    is_q8_block(&qb[4], e4, INFINITY, 0, "quantize_q8: +inf -> d inf, id 0, every q 0");

    /* random blocks: every |q*d - x| <= d/2 (plus f32 slack), max |q| = 127, s8 = -8 sum q */
    enum { NR = 64 * 32 };
    float *xr = malloc(sizeof(float) * NR);
    q8_block *qr = malloc(sizeof(q8_block) * (NR / 32));
    for (int i = 0; i < NR; i++) xr[i] = frand() * (float)(1 + i / 32); /* blocks of growing scale */
    quantize_q8(qr, xr, NR);
    int bad = -1, bad_s8 = -1, bad_max = -1;
    for (int b = 0; b < NR / 32 && bad < 0 && bad_s8 < 0 && bad_max < 0; b++) {
        int32_t sum = 0, mx = 0;
        for (int i = 0; i < 32; i++) {
            int q = qr[b].q[i];
            sum += q;
            if (abs(q) > mx) mx = abs(q);
            double err = fabs((double)q * qr[b].d - xr[b * 32 + i]);
            if (!(err <= 0.5 * qr[b].d * (1 + 1e-5))) bad = b * 32 + i;
        }
        if (qr[b].s8 != -8 * sum) bad_s8 = b;
        if (mx != 127) bad_max = b;
    }
    ok(bad < 0, "quantize_q8: 64 random blocks: |q d - x| <= d / 2");
    if (bad >= 0) printf("#   element %d: x %.9g, q %d, d %.9g\n", bad, xr[bad], qr[bad / 32].q[bad % 32], qr[bad / 32].d);
    ok(bad_s8 < 0 && bad_max < 0, "quantize_q8: 64 random blocks: s8 = -8 sum(q), max |q| = 127");
    if (bad_s8 >= 0 || bad_max >= 0) printf("#   s8 wrong in block %d, max |q| != 127 in block %d\n", bad_s8, bad_max);
    free(xr);
    free(qr);
}

static void test_matvec_q8_hand(void) {
    /* one q4_0 block: dw = 0.5; every byte 0x69: low nibble 9 (w[j] = +1), high nibble 6 (w[j+16] = -2).
     * x = [127, 1 x15, 2 x16]: amax 127 -> d 1, q = x. dot = (127 + 15) * 1 + 32 * (-2) = 78;
     * (integer route: 9 * 142 + 6 * 32 + s8 (-8 * 174) = 1278 + 192 - 1392 = 78). out = 0.5 * 1 * 78 = 39.
     * Row 1: dw = -0.25, every byte 0x08 (w[j] = 0, w[j+16] = -8): -8 * 32 = -256 -> -0.25 * -256 = 64 */
    block_q4_0 W[2];
    W[0].d = f32_to_f16(0.5f);
    memset(W[0].qs, 0x69, sizeof W[0].qs);
    W[1].d = f32_to_f16(-0.25f);
    memset(W[1].qs, 0x08, sizeof W[1].qs);
    float x[32];
    x[0] = 127;
    for (int i = 1; i < 16; i++) x[i] = 1;
    for (int i = 16; i < 32; i++) x[i] = 2;
    q8_block xq[1];
    quantize_q8(xq, x, 32);
    float out[2], exp[2] = {39, 64};
    matvec_q8(NULL, out, W, GGML_TYPE_Q4_0, xq, 32, 2);
    is_vec(exp, out, 2, 0.0f, "matvec_q8: hand-computed 2 x 32 (nibble - 8 folded into s8)");
    /* 33 blocks (lane 0 takes blocks 0 and 32) of the row-0 block: 33 * 39 = 1287, exact in f32 */
    block_q4_0 W33[33];
    q8_block xq33[33];
    for (int b = 0; b < 33; b++) {
        W33[b] = W[0];
        xq33[b] = xq[0];
    }
    float out33;
    matvec_q8(NULL, &out33, W33, GGML_TYPE_Q4_0, xq33, 33 * 32, 1);
    is_vec((const float[]){1287}, &out33, 1, 0.0f, "matvec_q8: hand-computed 1 x 1056 (lane 0 takes 2 blocks)");
    /* a type other than q4_0 is a caller bug: NaN, not a silently wrong number */
    float wf[32] = {0};
    matvec_q8(NULL, out, wf, GGML_TYPE_F32, xq, 32, 1);
    ok(isnan(out[0]), "matvec_q8: a non-q4_0 type gives NaN");
}

/* The spec's lane-strided order, written independently of ops.c: the integer dot as sum (nibble - 8) * q,
 * every f32 rounding forced through volatile (so no FMA can sneak in). row: (nb,) blocks; xq: (nb,). */
static float ref_q8_order(const block_q4_0 *row, const q8_block *xq, int nb) {
    volatile float p[32];
    for (int l = 0; l < 32; l++) p[l] = 0.0f;
    for (int b = 0; b < nb; b++) {
        int32_t c = 0;
        for (int i = 0; i < 32; i++) {
            int nib = i < 16 ? (row[b].qs[i] & 15) : (row[b].qs[i - 16] >> 4);
            c += (nib - 8) * xq[b].q[i];
        }
        volatile float s = f16_to_f32(row[b].d) * xq[b].d;
        volatile float t = s * (float)c;
        p[b % 32] = p[b % 32] + t; /* blocks reach lane b % 32 in ascending order */
    }
    for (int off = 16; off >= 1; off >>= 1) {
        float cp[32];
        for (int l = 0; l < 32; l++) cp[l] = p[l];
        for (int l = 0; l < 32; l++) p[l] = cp[l] + cp[l ^ off];
    }
    return p[0];
}

/* matvec_q8 on random q4_0 rows vs (a) a double dot of the dequantised weights and the q8 values
 * (|got - ref| <= 1e-6 sum |terms|), (b) the spec's order bit for bit, (c) pool vs 1 thread bit for bit. */
static void test_matvec_q8_rand(int n_in, int n_out, ops_pool *pool) {
    int nb = n_in / 32;
    size_t rb = (size_t)ggml_row_bytes(GGML_TYPE_Q4_0, (uint64_t)n_in);
    uint8_t *W = malloc(rb * (size_t)n_out);
    float *wf = malloc(sizeof(float) * (size_t)n_in), *x = malloc(sizeof(float) * (size_t)n_in);
    float *got = malloc(sizeof(float) * (size_t)n_out), *got1 = malloc(sizeof(float) * (size_t)n_out);
    q8_block *xq = malloc(sizeof(q8_block) * (size_t)nb);
    for (int i = 0; i < n_in; i++) x[i] = frand() * (1.0f + (float)(i % 7)); /* uneven block scales */
    for (int r = 0; r < n_out; r++) {
        for (int i = 0; i < n_in; i++) wf[i] = frand();
        quantize_row_q4_0(wf, (block_q4_0 *)(W + r * rb), n_in);
    }
    quantize_q8(xq, x, n_in);
    matvec_q8(pool, got, W, GGML_TYPE_Q4_0, xq, n_in, n_out);
    matvec_q8(NULL, got1, W, GGML_TYPE_Q4_0, xq, n_in, n_out);
    double worst = 0;
    int n_order = 0, first_order = -1;
    for (int r = 0; r < n_out; r++) {
        dequantize_row(GGML_TYPE_Q4_0, W + r * rb, wf, n_in);
        double ref = 0, mag = 0;
        for (int i = 0; i < n_in; i++) {
            double term = (double)wf[i] * ((double)xq[i / 32].q[i % 32] * (double)xq[i / 32].d);
            ref += term;
            mag += fabs(term);
        }
        double rel = fabs(got[r] - ref) / (mag > 0 ? mag : 1);
        if (rel > worst) worst = rel;
        float o = ref_q8_order((const block_q4_0 *)(W + r * rb), xq, nb);
        if (memcmp(&o, &got1[r], sizeof o) != 0) {
            n_order++;
            if (first_order < 0) first_order = r;
        }
    }
    ok(worst < 1e-6, "matvec_q8 (%d x %d, %d blocks): vs double dot of dequantised q4_0 and q8 values",
       n_out, n_in, nb);
    if (!(worst < 1e-6)) printf("#   worst |got - ref| / sum|terms| = %g, expected < 1e-6\n", worst);
    ok(n_order == 0, "matvec_q8 (%d x %d): bit-identical to the spec's lane-strided order", n_out, n_in);
    if (n_order) printf("#   %d rows differ, first row %d: expected %.9g, got %.9g\n", n_order, first_order,
                        ref_q8_order((const block_q4_0 *)(W + first_order * rb), xq, nb), got1[first_order]);
    ok(memcmp(got, got1, sizeof(float) * (size_t)n_out) == 0,
       "matvec_q8 (%d x %d): %d threads bit-identical to 1 thread", n_out, n_in, ops_pool_threads(pool));
    free(W); free(wf); free(x); free(got); free(got1); free(xq);
}

int main(void) {
    test_rmsnorm();
    test_l2norm();
    test_beta_g();
    test_conv_step();
    test_delta_step();
    test_gated_rmsnorm();
    test_rope();
    test_attention();
    test_swiglu();
    test_matvec_hand();
    ops_pool *pool = NULL;
    ok(ops_pool_create(3, &pool) == 0 && ops_pool_threads(pool) == 3, "ops_pool: 3 threads started");
    /* large enough (>= 65536 weights) that the pool is really used */
    test_matvec_type(GGML_TYPE_Q8_0, 512, 301, pool, "q8_0");
    test_matvec_type(GGML_TYPE_Q4_0, 512, 301, pool, "q4_0");
    test_matvec_type(GGML_TYPE_F32, 256, 300, pool, "f32");
    test_quantize_q8();
    test_matvec_q8_hand();
    /* 3 blocks (lanes 3..31 idle), 160 blocks (5120: 5 rounds, no tail), 1056 (33: a tail of one),
     * 2080 (65); every n_in * n_out >= 4096 so the pool really splits rows */
    test_matvec_q8_rand(96, 64, pool);
    test_matvec_q8_rand(5120, 67, pool);
    test_matvec_q8_rand(1056, 31, pool);
    test_matvec_q8_rand(2080, 40, pool);
    ops_pool_destroy(pool);
    return tap_done();
}
