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
