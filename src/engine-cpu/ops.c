/*
 * ops.c - the CPU twins of the engine's kernels (see ops.h for the contract
 * of each op) and the small thread pool that matvec splits rows over.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "ops.h"
#include "quant.h"

/* ------------------------------------------------------------------------ */
/* thread pool: n-1 workers + the caller; one job at a time                  */

struct ops_pool {
    int n;                 /* threads including the caller */
    pthread_t *th;         /* (n - 1,) workers */
    int n_started;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;          /* bumped for every job */
    int pending;           /* workers still running the current job */
    int quit;
    void (*fn)(void *arg, int tid, int n);
    void *arg;
};

typedef struct worker_arg {
    ops_pool *p;
    int tid;
} worker_arg;

static void *pool_worker(void *varg) {
    worker_arg *wa = varg;
    ops_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->quit) pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        void (*fn)(void *, int, int) = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        fn(arg, tid, p->n);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int ops_pool_create(int n_threads, ops_pool **out) {
    *out = NULL;
    if (n_threads < 1) return -1;
    ops_pool *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->th = calloc((size_t)(n_threads - 1), sizeof *p->th);
        if (!p->th) goto fail;
        for (int i = 0; i < n_threads - 1; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (!wa) goto fail;
            wa->p = p;
            wa->tid = i + 1;
            if (pthread_create(&p->th[i], NULL, pool_worker, wa) != 0) {
                free(wa);
                goto fail;
            }
            p->n_started++;
        }
    }
    *out = p;
    return 0;
fail:
    ops_pool_destroy(p);
    return -1;
}

void ops_pool_destroy(ops_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++) pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->th);
    free(p);
}

int ops_pool_threads(const ops_pool *p) { return p ? p->n : 1; }

void ops_pool_run(ops_pool *p, void (*fn)(void *arg, int tid, int n), void *arg) {
    if (!p || p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------------------ */
/* scalar helpers                                                            */

float op_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
float op_silu(float x) { return x / (1.0f + expf(-x)); }
float op_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* ------------------------------------------------------------------------ */
/* ops                                                                       */

void rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * w[i];
}

void l2norm(float *out, const float *x, int n) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss + 1e-6f);
    for (int i = 0; i < n; i++) out[i] = x[i] * r;
}

void gdn_beta_g(float *beta, float *g, const float *b, const float *a, const float *ssm_a,
                const float *dt_bias, int vh) {
    for (int h = 0; h < vh; h++) {
        beta[h] = op_sigmoid(b[h]);
        g[h] = ssm_a[h] * op_softplus(a[h] + dt_bias[h]);
    }
}

void conv_step(float *out, float *hist, const float *x, const float *w, int C, int K) {
    for (int c = 0; c < C; c++) {
        const float *wc = w + (size_t)c * K; /* (K,) taps, tap K-1 = newest */
        float acc = 0.0f;
        for (int j = 0; j < K - 1; j++) acc += hist[(size_t)j * C + c] * wc[j];
        acc += x[c] * wc[K - 1];
        out[c] = op_silu(acc);
    }
    /* advance: drop the oldest row, append x */
    if (K > 1) {
        memmove(hist, hist + C, sizeof(float) * (size_t)C * (size_t)(K - 2));
        memcpy(hist + (size_t)C * (size_t)(K - 2), x, sizeof(float) * (size_t)C);
    }
}

void delta_step(float *S, float *o, const float *q, const float *k, const float *v, const float *g,
                const float *beta, int kh, int vh, int kd, int vd) {
    for (int h = 0; h < vh; h++) {
        float *Sh = S + (size_t)h * kd * vd; /* (kd, vd) */
        const float *qh = q + (size_t)(h % kh) * kd; /* (kd,) */
        const float *kk = k + (size_t)(h % kh) * kd; /* (kd,) */
        const float *vv = v + (size_t)h * vd;        /* (vd,) */
        float *oh = o + (size_t)h * vd;              /* (vd,) */
        float decay = expf(g[h]);
        for (int i = 0; i < kd * vd; i++) Sh[i] *= decay;
        for (int j = 0; j < vd; j++) {
            /* kv_j = sum_i S[i][j] k_i ; delta_j = (v_j - kv_j) * beta */
            float kv = 0.0f;
            for (int i = 0; i < kd; i++) kv += Sh[(size_t)i * vd + j] * kk[i];
            float delta = (vv[j] - kv) * beta[h];
            /* S[:, j] += k * delta_j ; o_j = sum_i S[i][j] q_i */
            float acc = 0.0f;
            for (int i = 0; i < kd; i++) {
                Sh[(size_t)i * vd + j] += kk[i] * delta;
                acc += Sh[(size_t)i * vd + j] * qh[i];
            }
            oh[j] = acc;
        }
    }
}

void gated_rmsnorm(float *out, const float *o, const float *z, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += o[i] * o[i];
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = w[i] * (o[i] * r) * op_silu(z[i]);
}

void rope_neox(float *x, int n_heads, int head_dim, int n_rot, int pos, float base) {
    int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        /* inv_freq_i = base^(-2i/n_rot), as HF computes it in f32; the angle in f32 too */
        float inv_freq = (float)(1.0 / pow((double)base, (double)(2 * i) / (double)n_rot));
        float ang = (float)pos * inv_freq;
        float c = cosf(ang), s = sinf(ang);
        for (int h = 0; h < n_heads; h++) {
            float *xh = x + (size_t)h * head_dim;
            float x0 = xh[i], x1 = xh[i + half];
            xh[i] = x0 * c - x1 * s;
            xh[i + half] = x1 * c + x0 * s;
        }
    }
}

void attention(float *out, const float *q, const float *gate, const float *kc, const float *vc,
               int H, int Hkv, int hd, int n_pos, float *att) {
    int group = H / Hkv;
    size_t row = (size_t)Hkv * hd;
    float scale = 1.0f / sqrtf((float)hd);
    for (int h = 0; h < H; h++) {
        const float *qh = q + (size_t)h * hd;
        size_t koff = (size_t)(h / group) * hd;
        float mx = -INFINITY;
        for (int p = 0; p < n_pos; p++) {
            const float *kp = kc + (size_t)p * row + koff;
            float s = 0.0f;
            for (int i = 0; i < hd; i++) s += qh[i] * kp[i];
            att[p] = s * scale;
            if (att[p] > mx) mx = att[p];
        }
        float sum = 0.0f;
        for (int p = 0; p < n_pos; p++) {
            att[p] = expf(att[p] - mx);
            sum += att[p];
        }
        float inv = 1.0f / sum;
        float *oh = out + (size_t)h * hd;
        for (int i = 0; i < hd; i++) oh[i] = 0.0f;
        for (int p = 0; p < n_pos; p++) {
            const float *vp = vc + (size_t)p * row + koff;
            float a = att[p] * inv;
            for (int i = 0; i < hd; i++) oh[i] += a * vp[i];
        }
        const float *gh = gate + (size_t)h * hd;
        for (int i = 0; i < hd; i++) oh[i] *= op_sigmoid(gh[i]);
    }
}

void swiglu(float *out, const float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) out[i] = op_silu(gate[i]) * up[i];
}

typedef struct matvec_job {
    float *out;        /* (n_out,) */
    const uint8_t *W;  /* (n_out, row_bytes) */
    uint32_t type;
    const float *x;    /* (n_in,) */
    int n_in, n_out;
    size_t row_bytes;
} matvec_job;

static void matvec_part(void *varg, int tid, int n) {
    const matvec_job *j = varg;
    /* contiguous row ranges: thread tid owns rows [r0, r1) */
    int r0 = (int)((int64_t)j->n_out * tid / n);
    int r1 = (int)((int64_t)j->n_out * (tid + 1) / n);
    for (int r = r0; r < r1; r++) j->out[r] = dot_row(j->type, j->W + (size_t)r * j->row_bytes, j->x, j->n_in);
}

void matvec(ops_pool *pool, float *out, const void *W, uint32_t type, const float *x, int n_in, int n_out) {
    matvec_job j = {out, W, type, x, n_in, n_out, (size_t)ggml_row_bytes(type, (uint64_t)n_in)};
    /* small matrices are not worth waking the pool; the result is the same either way */
    if ((int64_t)n_in * n_out < 4096) pool = NULL;
    ops_pool_run(pool, matvec_part, &j);
}

/* ------------------------------------------------------------------------ */
/* 8-bit activations: the CPU twins of the CUDA engine's quantize_q8 and     */
/* matvec_q8 (q4_0 weights x q8 activations with integer dot products).      */
/* The order of the float operations below is part of the spec: the CUDA     */
/* kernels are checked against these bit for bit in the -fmad=false build.   */
/* Products are kept in their own statements, and the project compiles with  */
/* -std=c11, under which gcc does not contract a*b+c (-ffp-contract=off).    */

_Static_assert(sizeof(q8_block) == 48, "q8_block must be 48 bytes (the CUDA twin asserts the same)");

void quantize_q8(q8_block *out, const float *x, int n) {
    for (int b = 0; b < n / 32; b++) {
        const float *xb = x + (size_t)b * 32; /* (32,) */
        q8_block *ob = &out[b];
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) {
            float a = fabsf(xb[i]);
            amax = (a > amax || a != a) ? a : amax; /* NaN is sticky */
        }
        float id = (amax > 0.0f) ? 127.0f / amax : 0.0f; /* NaN amax -> 0 */
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) {
            float v = xb[i] * id;
            int q;
            if (v != v) {
                q = 0;
            } else {
                if (v > 127.0f) v = 127.0f;
                if (v < -127.0f) v = -127.0f;
                q = (int)nearbyintf(v); /* round half to even in the default rounding mode */
            }
            ob->q[i] = (int8_t)q;
            sum += q;
        }
        ob->d = amax / 127.0f;
        ob->s8 = -8 * sum;
        ob->pad[0] = 0;
        ob->pad[1] = 0;
    }
}

/* One q4_0 row (nb blocks) against nb q8 blocks, in the CUDA warp's lane-strided order: lane l
 * sums blocks l, l+32, l+64, ... in ascending order. Walking the blocks in memory order and adding
 * block b to lane b % 32 gives every lane exactly that sequence (and reads the row sequentially).
 * row: (nb,) q4_0 blocks; xq: (nb,). */
static float dot_row_q4_0_q8(const block_q4_0 *row, const q8_block *xq, int nb) {
    float p[32]; /* lane partial sums */
    for (int l = 0; l < 32; l++) p[l] = 0.0f;
    for (int b = 0; b < nb; b++) {
        const uint8_t *qs = row[b].qs; /* (16,) weight j in the low nibble, weight j+16 in the high */
        const int8_t *q = xq[b].q;     /* (32,) */
        int32_t c = xq[b].s8;          /* the -8 offset of every nibble, folded in; the sum is exact */
        for (int j = 0; j < 16; j++) c += (int32_t)(qs[j] & 15) * q[j] + (int32_t)(qs[j] >> 4) * q[16 + j];
        float s = f16_to_f32(row[b].d) * xq[b].d;
        float t = s * (float)c;
        p[b & 31] = p[b & 31] + t;
    }
    /* the warp's butterfly (__shfl_xor_sync): every lane adds its partner's value at once */
    for (int off = 16; off >= 1; off >>= 1) {
        float cp[32];
        memcpy(cp, p, sizeof cp);
        for (int l = 0; l < 32; l++) p[l] = cp[l] + cp[l ^ off];
    }
    return p[0];
}

typedef struct matvec_q8_job {
    float *out;          /* (n_out,) */
    const uint8_t *W;    /* (n_out, row_bytes) */
    const q8_block *xq;  /* (n_in/32,) */
    int nb, n_out;
    size_t row_bytes;
} matvec_q8_job;

static void matvec_q8_part(void *varg, int tid, int n) {
    const matvec_q8_job *j = varg;
    /* contiguous row ranges as in matvec: thread tid owns rows [r0, r1) */
    int r0 = (int)((int64_t)j->n_out * tid / n);
    int r1 = (int)((int64_t)j->n_out * (tid + 1) / n);
    for (int r = r0; r < r1; r++)
        j->out[r] = dot_row_q4_0_q8((const block_q4_0 *)(const void *)(j->W + (size_t)r * j->row_bytes), j->xq, j->nb);
}

void matvec_q8(ops_pool *pool, float *out, const void *W, uint32_t type, const q8_block *xq, int n_in, int n_out) {
    if (type != GGML_TYPE_Q4_0) {
        /* not a format this op decodes: make the caller's bug loud rather than silently wrong */
        for (int r = 0; r < n_out; r++) out[r] = NAN;
        return;
    }
    matvec_q8_job j = {out, W, xq, n_in / 32, n_out, (size_t)ggml_row_bytes(type, (uint64_t)n_in)};
    if ((int64_t)n_in * n_out < 4096) pool = NULL; /* as matvec: the result is the same either way */
    ops_pool_run(pool, matvec_q8_part, &j);
}
