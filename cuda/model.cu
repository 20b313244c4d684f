/*
 * cuda/model.cu - device memory, the decode step of every layer, CUDA Graph
 * capture of the whole step, and per-kernel profiling (see model.cuh).
 *
 * The step reads the token id and the position from a small device control
 * block (kc_ctl), so one captured graph replays for every token; the host
 * only uploads the token ids of a forward() call once.
 */
#include "model.cuh"
#include "kestrel/engine.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void kc_set_cuda_err(kc_model *m, cudaError_t e, const char *what, const char *file, int line,
                     const char *func)
{
    const char *base = strrchr(file, '/');
    snprintf(m->err, sizeof m->err, "%s (%s) at %s:%d in %s: %s", cudaGetErrorName(e), cudaGetErrorString(e),
             base ? base + 1 : file, line, func, what ? what : "?");
    (void)cudaGetLastError(); /* clear a sticky-free launch error so later calls are not blamed */
}

void kc_set_err(kc_model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ memory */

int kc_alloc(kc_model *m, void **out, size_t bytes)
{
    int rc = -1;
    void *p = NULL;
    *out = NULL;
    if (bytes == 0) bytes = 16;
    if (m->vram_limit && m->bytes + bytes > m->vram_limit) {
        kc_set_err(m, "out of device memory: %llu bytes needed beyond the %llu already allocated "
                      "(vram_limit=%llu)",
                   (unsigned long long)bytes, (unsigned long long)m->bytes,
                   (unsigned long long)m->vram_limit);
        goto cleanup;
    }
    if (m->n_allocs == m->cap_allocs) {
        size_t nc = m->cap_allocs ? 2 * m->cap_allocs : 256;
        void **na = (void **)realloc(m->allocs, nc * sizeof *na);
        if (!na) {
            kc_set_err(m, "out of host memory");
            goto cleanup;
        }
        m->allocs = na;
        m->cap_allocs = nc;
    }
    KC_CK(m, cudaMalloc(&p, bytes));
    m->allocs[m->n_allocs++] = p;
    m->bytes += bytes;
    KC_CK(m, cudaMemset(p, 0, bytes));
    *out = p;
    rc = 0;
cleanup:
    return rc;
}

int kc_upload_mat(kc_model *m, kc_mat *out, uint32_t type, int64_t rows, int64_t cols, const void *src,
                  const char *what)
{
    int rc = -1;
    void *raw = NULL;
    const uint64_t db = kc_mat_data_bytes(type, rows, cols), sb = kc_mat_scale_bytes(type, rows, cols);
    memset(out, 0, sizeof *out);
    if (!kc_mat_supported(type, cols) || rows <= 0 || rows > 0x7fffffff) {
        kc_set_err(m, "tensor '%s': type %u with %lld columns is not supported by the CUDA GEMV "
                      "(needs f32/f16/bf16/q8_0/q4_0 and columns %% 32 == 0)",
                   what, type, (long long)cols);
        goto cleanup;
    }
    out->type = type;
    out->layout = kc_mat_layout(type, cols, m->dot_q8);
    out->rows = (int32_t)rows;
    out->cols = (int32_t)cols;
    out->rpw = m->gemv_rpw;
    out->gemv = m->gemv_kind;
    out->unroll = m->gemv_unroll;
    out->prefetch = m->gemv_prefetch;
    out->q8wide = m->q8wide;
    out->early = m->gemv_early;
    out->q8kind = m->q8kind;
    if (out->q8kind == 2 && what) { /* option q8t_skip: these matrices keep the register kernels */
        const int out_proj = strstr(what, "ssm_out") || strstr(what, "attn_output"),
                  down = strstr(what, "ffn_down") != NULL, ffn = strstr(what, "ffn_gate") || strstr(what, "ffn_up");
        const int bit = out_proj ? 1 : down ? 2 : ffn ? 8 : 4;
        if (m->q8t_skip & bit) out->q8kind = 0;
        out->q8t_kb = out_proj && m->q8t_okb ? m->q8t_okb : m->q8t_kb;
        out->q8t_sm = out_proj && m->q8t_ogrid > 0 ? -m->q8t_ogrid : out_proj && m->q8t_osm ? m->q8t_osm : m->q8t_sm;
        if (out_proj && m->q8t_ogrid < 0) { /* auto: resident beside the delta rule's blocks, where free */
            const int g = kc_q8t_out_grid(out, m->dm.vh);
            if (g) out->q8t_sm = -g;
        }
        out->q8t_wkb = m->q8t_wkb ? m->q8t_wkb : -1;
        out->q8t_xs = m->q8t_xs;
        out->q8t_wloop = m->q8t_wu == 0 ? 1 : m->q8t_wu == 2 ? 2 : 0; /* q8t_wu: 0 loop, 1 unrolled, 2 x broadcast */
    }
    if (kc_alloc(m, &out->data, db)) goto cleanup;
    if (sb && kc_alloc(m, (void **)&out->d, sb)) goto cleanup;
    if (sb) {
        /* raw GGUF blocks to a temporary device buffer, repacked there (not counted in vram_limit) */
        KC_CK(m, cudaMalloc(&raw, db + sb));
        KC_CK(m, cudaMemcpy(raw, src, db + sb, cudaMemcpyHostToDevice));
        KC_CK(m, kc_mat_repack_dev(type, rows, cols, out->layout, raw, out->data, out->d, 0));
        KC_CK(m, cudaDeviceSynchronize());
    } else {
        KC_CK(m, cudaMemcpy(out->data, src, db, cudaMemcpyHostToDevice));
    }
    rc = 0;
cleanup:
    if (raw) cudaFree(raw);
    return rc;
}

int kc_upload_f32(kc_model *m, float **out, const float *src, size_t n)
{
    int rc = -1;
    if (kc_alloc(m, (void **)out, n * sizeof(float))) goto cleanup;
    KC_CK(m, cudaMemcpy(*out, src, n * sizeof(float), cudaMemcpyHostToDevice));
    rc = 0;
cleanup:
    return rc;
}

#define ALLOC(ptr, n)                                                                             \
    do {                                                                                          \
        if (kc_alloc(m, (void **)&(ptr), (size_t)(n) * sizeof *(ptr))) goto cleanup;              \
    } while (0)

/* options attn_kvc_sp and attn_kvc, auto (-1) resolved (PERF-NOTES v39: 3 clusters of 8 blocks per kv head beat one
 * of 16 at 27B prompt 12288, ab 0.9842 [0.9810, 0.9909], and tied at 4096; attention_kvcx reads the caches by tensor
 * maps, so without them one cluster of 16, the v35-v38 default). The pair is the default: an attn_kvc given by
 * name keeps its v35-v38 meaning, one cluster of that many blocks, unless attn_kvc_sp is given too. */
#define KVC_SP_AUTO 3
#define KVC_BLOCKS_AUTO_SP 8  /* blocks per cluster where attn_kvc_sp > 1 */
#define KVC_BLOCKS_AUTO_ONE 16 /* with one cluster per kv head */
static int kvc_sp(const kc_model *m)
{
    return m->attn_kvc_sp > 0 ? m->attn_kvc_sp : m->attn_kvc < 0 && m->attn_kvc_tm ? KVC_SP_AUTO : 1;
}
static int kvc_blocks(const kc_model *m)
{
    return m->attn_kvc >= 0 ? m->attn_kvc : kvc_sp(m) > 1 ? KVC_BLOCKS_AUTO_SP : KVC_BLOCKS_AUTO_ONE;
}

int kc_model_alloc_runtime(kc_model *m)
{
    int rc = -1;
    const kc_dims *d = &m->dm;
    const size_t sS = (size_t)d->vh * d->kd * d->vd, sH = (size_t)(d->conv_k - 1) * d->conv_dim;
    const size_t sKV = (size_t)d->ctx * d->nkv * d->hd;
    KC_CK(m, cudaStreamCreateWithFlags(&m->st, cudaStreamNonBlocking));
    if (m->n_gdn) {
        ALLOC(m->S, sS * m->n_gdn);
        ALLOC(m->hist, sH * m->n_gdn);
        m->gs = (kc_gdn_scratch *)calloc((size_t)m->n_gdn, sizeof *m->gs);
        if (!m->gs) {
            kc_set_err(m, "out of host memory");
            goto cleanup;
        }
        for (int i = 0; i < m->n_gdn; i++) {
            kc_gdn_scratch *g = &m->gs[i];
            ALLOC(g->raw, d->conv_dim);
            ALLOC(g->conv, d->conv_dim);
            ALLOC(g->qn, d->kh * d->kd);
            ALLOC(g->kn, d->kh * d->kd);
            ALLOC(g->z, d->vh * d->vd);
            ALLOC(g->b, d->vh);
            ALLOC(g->a, d->vh);
            ALLOC(g->beta, d->vh);
            ALLOC(g->g, d->vh);
            ALLOC(g->o, d->vh * d->vd);
            ALLOC(g->o_norm, d->vh * d->vd);
        }
    }
    if (m->n_attn) {
        ALLOC(m->kcache, sKV * m->n_attn);
        ALLOC(m->vcache, sKV * m->n_attn);
        ALLOC(m->qg, d->nh * 2 * d->hd);
        ALLOC(m->aq, d->nh * d->hd);
        ALLOC(m->ao, d->nh * d->hd);
        ALLOC(m->ak, d->nkv * d->hd);
        ALLOC(m->av, d->nkv * d->hd);
        KC_CK(m, kc_attention_setup(d->ctx, d->hd));
        const int sp = kvc_sp(m), nsp = kc_attention_splits(d->ctx) > sp ? kc_attention_splits(d->ctx) : sp;
        ALLOC(m->attn_part, (size_t)d->nh * nsp * (d->hd + 2)); /* also attention_kvcx's (nh, attn_kvc_sp, hd + 2) */
        ALLOC(m->attn_cnt, d->nh);
    }
    KC_CK(m, kc_gemv_setup()); /* the GEMV grids' occupancy query stays out of graph capture */
    ALLOC(m->x, d->n_embd);
    ALLOC(m->xn, d->n_embd);
    ALLOC(m->xf, d->n_embd);
    ALLOC(m->ff, d->n_ff);
    ALLOC(m->logits, d->n_vocab);
    ALLOC(m->argmax_scr, 1);
    ALLOC(m->ffcnt, d->n_ff / 32 + 1);
    ALLOC(m->xq2, d->n_ff / 32 + 1);
    ALLOC(m->ffbar, 2);
    ALLOC(m->tailcnt, 2);
    {
        int nq = d->n_embd > d->n_ff ? d->n_embd : d->n_ff;
        if (d->vh * d->vd > nq) nq = d->vh * d->vd;
        if (d->nh * d->hd > nq) nq = d->nh * d->hd;
        ALLOC(m->xq, nq / 32 + 1);
    }
    ALLOC(m->hcap, (size_t)d->n_layers * d->n_embd);
    ALLOC(m->ctl, 1);
    if (kc_model_reserve_tokens(m, 64)) goto cleanup;
    if (m->prof == 2) { /* profile=trace: the kernels' marks go to this model's buffers */
        kc_trace tr;
        if (!kc_trace_supported()) {
            kc_set_err(m, "profile=trace needs the engine library built with the trace marks "
                          "(libkestrel-cuda-trace.so, suite engine lib: cuda-trace); this one has none");
            goto cleanup;
        }
        ALLOC(m->trace_t, KC_PROF_MAX_EVENTS);
        ALLOC(m->trace_n, 1);
        m->trace_h = (unsigned long long *)calloc(KC_PROF_MAX_EVENTS, sizeof *m->trace_h);
        if (!m->trace_h) {
            kc_set_err(m, "out of host memory");
            goto cleanup;
        }
        tr.t = m->trace_t;
        tr.n = m->trace_n;
        tr.cap = KC_PROF_MAX_EVENTS;
        KC_CK(m, kc_set_trace(&tr));
        KC_CK(m, cudaDeviceSynchronize()); /* the symbol is set before any step is issued on m->st */
    } else if (m->prof) {
        m->prof_ev = (cudaEvent_t *)calloc(2 * KC_PROF_MAX_EVENTS, sizeof *m->prof_ev);
        if (!m->prof_ev) {
            kc_set_err(m, "out of host memory");
            goto cleanup;
        }
        for (int i = 0; i < 2 * KC_PROF_MAX_EVENTS; i++) KC_CK(m, cudaEventCreate(&m->prof_ev[i]));
    }
    rc = 0;
cleanup:
    return rc;
}

int kc_model_reserve_tokens(kc_model *m, int n)
{
    int rc = -1;
    if (n <= m->tok_cap) return 0;
    int cap = m->tok_cap ? m->tok_cap : 64;
    while (cap < n) cap *= 2;
    /* the old buffers stay in the allocation list until close (a few bytes each) */
    ALLOC(m->tokens, cap);
    ALLOC(m->argmax, cap);
    m->tok_cap = cap;
    for (int i = 0; i < KC_STEP_KINDS; i++) { /* graphs captured the old pointers */
        if (m->graph[i]) cudaGraphExecDestroy(m->graph[i]);
        m->graph[i] = NULL;
    }
    rc = 0;
cleanup:
    return rc;
}

int kc_model_reset(kc_model *m)
{
    int rc = -1;
    const kc_dims *d = &m->dm;
    if (m->n_gdn) {
        KC_CK(m, cudaMemsetAsync(m->S, 0, sizeof(float) * (size_t)m->n_gdn * d->vh * d->kd * d->vd, m->st));
        KC_CK(m, cudaMemsetAsync(m->hist, 0, sizeof(float) * (size_t)m->n_gdn * (d->conv_k - 1) * d->conv_dim,
                                 m->st));
    }
    if (m->n_attn) {
        const size_t n = sizeof(float) * (size_t)m->n_attn * d->ctx * d->nkv * d->hd;
        KC_CK(m, cudaMemsetAsync(m->kcache, 0, n, m->st));
        KC_CK(m, cudaMemsetAsync(m->vcache, 0, n, m->st));
    }
    KC_CK(m, cudaMemsetAsync(m->ctl, 0, sizeof *m->ctl, m->st));
    KC_CK(m, cudaStreamSynchronize(m->st));
    rc = 0;
cleanup:
    return rc;
}

void kc_model_free(kc_model *m)
{
    if (!m) return;
    for (int i = 0; i < KC_STEP_KINDS; i++)
        if (m->graph[i]) cudaGraphExecDestroy(m->graph[i]);
    if (m->prof_ev) {
        for (int i = 0; i < 2 * KC_PROF_MAX_EVENTS; i++)
            if (m->prof_ev[i]) cudaEventDestroy(m->prof_ev[i]);
        free(m->prof_ev);
    }
    if (m->st) cudaStreamSynchronize(m->st);
    if (m->trace_t) { /* the kernels stop marking into buffers about to be freed */
        kc_trace off;
        memset(&off, 0, sizeof off);
        (void)kc_set_trace(&off);
        (void)cudaDeviceSynchronize();
    }
    free(m->trace_h);
    for (size_t i = 0; i < m->n_allocs; i++) cudaFree(m->allocs[i]);
    if (m->st) cudaStreamDestroy(m->st);
    (void)cudaGetLastError();
    free(m->allocs);
    free(m->gs);
    free(m->kv_tmap);
    free(m->layers);
    free(m);
}

/* ------------------------------------------------------------------ profiling */

/* *ni = the profile's index of `name`, added when new */
static int prof_name(kc_model *m, const char *name, int *ni)
{
    int rc = -1, i;
    for (i = 0; i < m->prof_n_names; i++)
        if (!strcmp(m->prof_names[i], name)) break;
    if (i == m->prof_n_names) {
        if (i == KC_PROF_MAX_NAMES) {
            kc_set_err(m, "profile: more than %d kernel names", KC_PROF_MAX_NAMES);
            goto cleanup;
        }
        snprintf(m->prof_names[i], sizeof m->prof_names[i], "%s", name);
        m->prof_n_names++;
    }
    *ni = i;
    rc = 0;
cleanup:
    return rc;
}

static int prof_begin(kc_model *m, const char *name, int *slot)
{
    int rc = -1, ni;
    *slot = -1;
    if (m->prof_ev_n >= KC_PROF_MAX_EVENTS) {
        kc_set_err(m, "profile: more than %d launches in one step", KC_PROF_MAX_EVENTS);
        goto cleanup;
    }
    if (prof_name(m, name, &ni)) goto cleanup;
    *slot = m->prof_ev_n++;
    m->prof_ev_name[*slot] = ni;
    KC_CK(m, cudaEventRecord(m->prof_ev[2 * *slot], m->st));
    rc = 0;
cleanup:
    return rc;
}

int kc_prof_collect(kc_model *m)
{
    int rc = -1;
    KC_CK(m, cudaStreamSynchronize(m->st));
    for (int i = 0; i < m->prof_ev_n; i++) {
        float ms = 0.0f;
        KC_CK(m, cudaEventElapsedTime(&ms, m->prof_ev[2 * i], m->prof_ev[2 * i + 1]));
        m->prof_ms[m->prof_ev_name[i]] += ms;
        m->prof_calls[m->prof_ev_name[i]]++;
    }
    m->prof_ev_n = 0;
    rc = 0;
cleanup:
    return rc;
}

/* profile=trace: after a step of kind wl (synchronised here), each kernel's time on the critical
 * path, mark i+1 - mark i, booked under the name it was launched with; the step's last kernel
 * (ctl_end, a single thread) has no next mark and is counted with no time. */
static int trace_collect(kc_model *m, int wl)
{
    int rc = -1;
    unsigned int n = 0;
    KC_CK(m, cudaStreamSynchronize(m->st));
    KC_CK(m, cudaMemcpy(&n, m->trace_n, sizeof n, cudaMemcpyDeviceToHost));
    if ((int)n != m->trace_len[wl] || n > KC_PROF_MAX_EVENTS) {
        kc_set_err(m, "profile=trace: %u kernel marks for %d launches in the step (at most %d)", n, m->trace_len[wl],
                   KC_PROF_MAX_EVENTS);
        goto cleanup;
    }
    KC_CK(m, cudaMemcpy(m->trace_h, m->trace_t, n * sizeof *m->trace_h, cudaMemcpyDeviceToHost));
    for (unsigned int i = 0; i < n; i++) {
        const int ni = m->trace_seq[wl][i];
        if (i + 1 < n) m->prof_ms[ni] += (double)(m->trace_h[i + 1] - m->trace_h[i]) * 1e-6;
        m->prof_calls[ni]++;
    }
    rc = 0;
cleanup:
    return rc;
}

/* Launch `call` (a kc_* launcher) under `name`, timed when profiling (profile=1: events around
 * it; profile=trace: its kernels are logged under the name, kernels.cuh kc_trace). */
#define RUN(name, call)                                                                           \
    do {                                                                                          \
        int kc_slot_ = -1, kc_ni_ = 0;                                                            \
        if (m->prof == 1 && prof_begin(m, (name), &kc_slot_)) goto cleanup;                       \
        if (m->prof == 2) {                                                                       \
            if (prof_name(m, (name), &kc_ni_)) goto cleanup;                                      \
            kc_set_launch_name(kc_ni_);                                                           \
        }                                                                                         \
        KC_CK(m, call);                                                                           \
        if (kc_slot_ >= 0) KC_CK(m, cudaEventRecord(m->prof_ev[2 * kc_slot_ + 1], m->st));       \
    } while (0)

static const char *type_suffix(uint32_t t)
{
    switch (t) {
    case 0: return "f32";
    case 1: return "f16";
    case 2: return "q4_0";
    case 8: return "q8_0";
    case 30: return "bf16";
    default: return "unknown";
    }
}

/* "<op>_<type>" into buf */
static const char *kname(char *buf, size_t n, const char *op, const kc_mat *w)
{
    snprintf(buf, n, "%s_%s", op, type_suffix(w->type));
    return buf;
}

/* ------------------------------------------------------------------ the step */

/* m->kv_tmap <- the K and V cache tensor maps of every attention layer (option attn_kvc_tm); 0, or -1 with the
 * error set (no host memory). A driver that cannot encode them (cudaErrorNotSupported: no cuTensorMapEncodeTiled)
 * turns attn_kvc_tm off: the bulk copies per row go on, the same bits. */
static int kv_tmaps_build(kc_model *m)
{
    const kc_dims *d = &m->dm;
    const size_t kvs = (size_t)d->ctx * d->nkv * d->hd;
    kc_tmap *t = (kc_tmap *)aligned_alloc(alignof(kc_tmap), (size_t)m->n_attn * 2 * sizeof *t);
    if (!t) {
        kc_set_err(m, "out of host memory (attn_kvc_tm: the caches' tensor maps)");
        return -1;
    }
    for (int i = 0; i < m->n_attn; i++)
        for (int j = 0; j < 2; j++) {
            const cudaError_t e = kc_kv_tmap(&t[2 * i + j], (j ? m->vcache : m->kcache) + (size_t)i * kvs, d->ctx,
                                             d->nkv, d->hd);
            if (e == cudaErrorNotSupported && m->attn_kvc_sp > 1) { /* asked for by name */
                kc_set_err(m, "attn_kvc_sp=%d: attention_kvcx reads the caches by tensor maps, which this driver "
                              "cannot encode (no cuTensorMapEncodeTiled); attn_kvc_sp=1 takes bulk copies",
                           m->attn_kvc_sp);
                free(t);
                return -1;
            }
            if (e == cudaErrorNotSupported) { /* attn_kvc_sp and attn_kvc auto now resolve to 1 and 16 */
                free(t);
                m->attn_kvc_tm = 0;
                return 0;
            }
            if (e != cudaSuccess) {
                kc_set_err(m, "attn_kvc_tm: the %s cache tensor map of attention layer %d: %s", j ? "V" : "K", i,
                           cudaGetErrorString(e));
                free(t);
                return -1;
            }
        }
    m->kv_tmap = t;
    return 0;
}

/* the largest n of the steps by kv head: min(ctx, attn_kvc_to, what attn_kvc_sp clusters of attn_kvc blocks hold);
 * it is also the nmax kc_attention_kvc (kc_attention_kvcx) is asked to take */
static int kvc_top(const kc_model *m)
{
    const int cap = kc_attention_kvc_max(kvc_blocks(m)) * kvc_sp(m);
    int top = m->dm.ctx < m->attn_kvc_to ? m->dm.ctx : m->attn_kvc_to;
    return top < cap ? top : cap;
}

/* whether the step with n_pos positions goes by kv head (kc_attention_kvc or, over attn_kvc_sp clusters,
 * kc_attention_kvcx): attn_kvc_from < n_pos <= kvc_top where the kernel takes the shape */
static int kvc_step(const kc_model *m, int n_pos)
{
    const int top = kvc_top(m), kb = kvc_blocks(m), sp = kvc_sp(m);
    return kb && n_pos > m->attn_kvc_from && n_pos <= top &&
           (sp > 1 ? kc_attention_kvcx_ok(m->dm.nh, m->dm.nkv, m->dm.hd, kb, sp, top)
                   : kc_attention_kvc_ok(m->dm.nh, m->dm.nkv, m->dm.hd, kb, top));
}

/* Two matrices kc_matvec2 takes in one launch: same type, width and layout */
static int same_shape_class(const kc_mat *a, const kc_mat *b)
{
    return a->type == b->type && a->cols == b->cols && a->layout == b->layout && a->gemv == b->gemv;
}

/* dot=q8 takes matrix W: q4_0 (uploaded in layout 0 for it) */
static int q8_path(const kc_model *m, const kc_mat *W) { return m->dot_q8 && W->type == 2u && W->layout == 0; }

/* Option pf_next: the plan for the first m->pf_bytes of weights the q8 GEMV over W[0..n) reads
 * (paired: the SwiGLU's gate and up), for the GEMV launched before it; NULL when off or when that
 * GEMV is not on the q8 path. */
static const kc_pf *plan_for(const kc_model *m, kc_pf *pf, const kc_mat *const *W, int n, int paired)
{
    if (!m->pf_bytes) return NULL;
    for (int i = 0; i < n; i++)
        if (!q8_path(m, W[i])) return NULL;
    kc_prefetch_plan(pf, W, n, paired, m->pf_bytes);
    return pf->nr ? pf : NULL;
}

/* GDN layer: beta/alpha go with qkv and z in the q8 launch (see kc_layer_step) */
static int gdn_ba_q8(const kc_model *m, const kc_layer *L)
{
    return q8_path(m, &L->qkv) && q8_path(m, &L->z) && q8_path(m, &L->beta_w) && q8_path(m, &L->alpha_w) &&
           L->beta_w.cols == m->dm.n_embd;
}

/* The plan for the first GEMV of layer l (its input projections), for l == n_layers the lm_head
 * when the step computes logits, else none. */
static const kc_pf *plan_layer_in(const kc_model *m, kc_pf *pf, int l)
{
    if (l >= m->dm.n_layers) {
        const kc_mat *W[1] = {&m->lm_head};
        return m->step_logits ? plan_for(m, pf, W, 1, 0) : NULL;
    }
    const kc_layer *L = &m->layers[l];
    if (L->type == KESTREL_LAYER_GDN) {
        const kc_mat *W[4] = {&L->qkv, &L->z, &L->beta_w, &L->alpha_w};
        return plan_for(m, pf, W, gdn_ba_q8(m, L) ? 4 : 2, 0);
    }
    const kc_mat *W[3] = {&L->wq, &L->wk, &L->wv};
    return plan_for(m, pf, W, 3, 0);
}

/* y[i] (W[i]->rows,) [+]= W[i] . x (cols,) for n <= KC_Q8_MATS matrices of one width. dot=q8 with
 * q4_0 weights: ONE integer-dot launch for all n on xq, the quantised x that the previous kernel
 * produced, or (xq NULL) x quantised here into m->xq; otherwise the f32 GEMVs (pairs fused by
 * matvec2). `what` names the launch in the profile ("<what>_q4_0xq8" / "<what>_<type>"). pf: the next
 * GEMV's weights for the q8 launch to prefetch (plan_for), or NULL. */
static int gemv_set(kc_model *m, const char *what, const kc_mat *const *W, float *const *y, int n, const float *x,
                    const kc_q8blk *xq, int accumulate, const kc_pf *pf)
{
    int rc = -1;
    cudaStream_t st = m->st;
    char nm[64];
    int all_q8 = 1;
    for (int i = 0; i < n; i++) all_q8 &= q8_path(m, W[i]);
    if (all_q8) {
        if (!xq) {
            RUN("quantize_q8", kc_quantize_q8(x, W[0]->cols, m->xq, st));
            xq = m->xq;
        }
        snprintf(nm, sizeof nm, "%s_q4_0xq8", what);
        kc_set_prefetch_next(pf);
        RUN(nm, kc_matvec_q8(W, y, n, xq, accumulate, st));
        rc = 0;
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        if (!accumulate && i + 1 < n && same_shape_class(W[i], W[i + 1])) { /* one launch for the pair */
            RUN(kname(nm, sizeof nm, what, W[i]), kc_matvec2(W[i], W[i + 1], x, y[i], y[i + 1], st));
            i++;
        } else {
            RUN(kname(nm, sizeof nm, what, W[i]), kc_matvec(W[i], x, y[i], accumulate, st));
        }
    }
    rc = 0;
cleanup:
    return rc;
}

/* y (G.rows,) = silu(G . x) * (U . x), by path as gemv_set. yq != NULL (q8 path, rows % 32 == 0):
 * y also quantised into yq for the next GEMV. */
static int gemv_swiglu(kc_model *m, const kc_mat *G, const kc_mat *U, const float *x, float *y, int xq_ready,
                       kc_q8blk *yq, const kc_pf *pf)
{
    int rc = -1;
    cudaStream_t st = m->st;
    char nm[64];
    if (q8_path(m, G) && q8_path(m, U)) {
        if (!xq_ready) RUN("quantize_q8", kc_quantize_q8(x, G->cols, m->xq, st));
        kc_set_prefetch_next(pf);
        if (kc_q8_stationary(G) && !(yq && kc_q8_tma_swiglu_takes(G, U, 1))) { /* its rows are not grouped by 32
                                                                                  * per block: quantise y after it */
            RUN("matvec_swiglu_q4_0xq8", kc_matvec_swiglu_q8(G, U, m->xq, y, NULL, NULL, st));
            if (yq) RUN("quantize_q8", kc_quantize_q8(y, G->rows, yq, st));
        } else {
            RUN(yq ? "matvec_swiglu_q8_q4_0xq8" : "matvec_swiglu_q4_0xq8",
                kc_matvec_swiglu_q8(G, U, m->xq, y, yq, yq ? m->ffcnt : NULL, st));
        }
    } else {
        RUN(kname(nm, sizeof nm, "matvec_swiglu", G), kc_matvec_swiglu(G, U, x, y, st));
    }
    rc = 0;
cleanup:
    return rc;
}

/* kc_gdn_step's arguments for GDN layer L: the buffers and shapes gdn_prep and delta_step_norm_q8
 * take in kc_layer_step */
static void gdn_step_args(const kc_model *m, const kc_layer *L, float *S, float *hist, int prep_ba,
                          kc_gdn_step_args *a)
{
    const kc_dims *d = &m->dm;
    const kc_gdn_scratch *g = &m->gs[L->gdn_index];
    memset(a, 0, sizeof *a);
    a->x = g->raw;
    a->hist = hist;
    a->conv_w = L->conv_w;
    a->conv = g->conv;
    a->qn = g->qn;
    a->kn = g->kn;
    a->b = g->b;
    a->a = g->a;
    a->ssm_a = L->ssm_a;
    a->dt_bias = L->dt_bias;
    a->beta = g->beta;
    a->g = g->g;
    a->xn = prep_ba ? m->xn : NULL;
    a->Wb = prep_ba ? (const float *)L->beta_w.data : NULL;
    a->Wa = prep_ba ? (const float *)L->alpha_w.data : NULL;
    a->S = S;
    a->o = g->o;
    a->z = g->z;
    a->w = L->ssm_norm;
    a->y = g->o_norm;
    a->yq = m->xq;
    a->qscale = 1.0f / sqrtf((float)d->kd);
    a->eps = d->eps;
    a->C = d->conv_dim;
    a->K = d->conv_k;
    a->kh = d->kh;
    a->kd = d->kd;
    a->vh = d->vh;
    a->vd = d->vd;
    a->D = d->n_embd;
}

/* the f32 output of a q8 norm (kc_rmsnorm_q8's y): NULL, so that only its q8 blocks are written, where option
 * norm_lean is on, `unread` says no kernel reads it and the lean kernel takes the width; else buf */
static float *norm_out(const kc_model *m, int unread, const float *w, float *buf)
{
    return m->norm_lean && unread && kc_rmsnorm_q8_lean_ok(m->dm.n_embd, m->x, w) ? NULL : buf;
}

/* dot=q8 input projections: the layer's input norm also quantises its output (rmsnorm_q8) */
static int layer_q8_in(kc_model *m, const kc_layer *L)
{
    return L->type == KESTREL_LAYER_GDN ? q8_path(m, &L->qkv) && q8_path(m, &L->z)
                                        : q8_path(m, &L->wq) && q8_path(m, &L->wk) && q8_path(m, &L->wv);
}

/* option rms_fold as bits (1 the input norm, 2 the FFN norm, folded into the GEMV that consumes it);
 * auto (-1): the FFN norm where the model is at most RMS_FOLD_AUTO_DIM wide. Why: measured on the
 * H200 (PERF-NOTES v22), the 9B (4096): FFN fold 1.720 vs 1.761-1.766 ms/token, both folds `ab` 0.9686,
 * the input fold alone 1.782 (slower); the 27B (5120): every fold 0.5-1.6% slower. */
#define RMS_FOLD_AUTO_DIM 4096
static int rms_fold_bits(const kc_model *m)
{
    return m->rms_fold >= 0 ? m->rms_fold : m->dm.n_embd <= RMS_FOLD_AUTO_DIM ? 2 : 0;
}

/* option norm_tail: y += W . x as the residual GEMV (q8 path, x already quantised in xq) that also
 * computes the next RMS norm *nx in its last block (kc_matvec_q8_tail). 1: launched, the caller
 * skips that norm's launch; 0: nothing launched (option off, no norm to fold, a route without the
 * TMA kernel): the caller runs gemv_set; -1: error. */
static int gemv_tail(kc_model *m, const char *what, const kc_mat *W, const kc_q8blk *xq, const kc_rmsq *nx,
                     unsigned int *cnt, const kc_pf *pf)
{
    int rc = -1;
    cudaStream_t st = m->st;
    char nm[80];
    if (!m->norm_tail || rms_fold_bits(m) || !nx || !xq || !q8_path(m, W) || !kc_matvec_q8_tail_ok(W, nx)) return 0;
    snprintf(nm, sizeof nm, "%s_rmsnorm_q4_0xq8", what);
    kc_set_prefetch_next(pf);
    RUN(nm, kc_matvec_q8_tail(W, m->x, xq, nx, cnt, st));
    rc = 1;
cleanup:
    return rc;
}

/* the RMS norm that follows layer l's down projection, as a plain rmsnorm_q8 launch would compute it
 * (the next layer's input norm, or the head's); NULL when that norm is not a plain rmsnorm_q8 */
static const kc_rmsq *norm_after_layer(kc_model *m, int l, kc_rmsq *nx)
{
    const kc_dims *d = &m->dm;
    if (l + 1 < d->n_layers) {
        const kc_layer *Ln = &m->layers[l + 1];
        if (!layer_q8_in(m, Ln)) return NULL;
        *nx = kc_rmsq{m->x, Ln->attn_norm, m->xn, m->xq, d->eps, d->n_embd};
        return nx;
    }
    if (!m->step_logits || !q8_path(m, &m->lm_head)) return NULL;
    *nx = kc_rmsq{m->x, m->out_norm, m->xf, m->xq, d->eps, d->n_embd};
    return nx;
}

int kc_layer_step(kc_model *m, int l)
{
    int rc = -1;
    const kc_dims *d = &m->dm;
    const kc_layer *L = &m->layers[l];
    cudaStream_t st = m->st;
    const int D = d->n_embd;
    char nm[64];
    kc_pf pf; /* option pf_next: the next GEMV's weights, for the GEMV launched before it */
    const kc_mat *FF[2] = {&L->ffn_gate, &L->ffn_up}, *DOWN[1] = {&L->ffn_down};
    /* dot=q8: the norm also quantises its output for the projections that follow */
    const int q8_in = layer_q8_in(m, L);
    const int in_ready = m->norm_ready; /* option norm_tail: the previous down projection computed it */
    int ff_ready = 0;                   /* and the out projection below the FFN's */
    m->norm_ready = 0;
    const int q8_ff = q8_path(m, &L->ffn_gate) && q8_path(m, &L->ffn_up);
    const int q8_down = q8_ff && q8_path(m, &L->ffn_down) && d->n_ff % 32 == 0;
    /* option rms_fold: the input norm computed by the projection GEMV itself (kc_matvec_q8_rms) */
    const kc_rmsq norm_in = {m->x, L->attn_norm, m->xn, m->xq, d->eps, D};
    const kc_mat *GDN_IN[4] = {&L->qkv, &L->z, &L->beta_w, &L->alpha_w}, *ATT_IN[3] = {&L->wq, &L->wk, &L->wv};
    const int fold_in = (rms_fold_bits(m) & 1) && q8_in &&
                        (L->type == KESTREL_LAYER_GDN ? gdn_ba_q8(m, L) && kc_matvec_q8_rms_ok(GDN_IN, 4, &norm_in)
                                                      : kc_matvec_q8_rms_ok(ATT_IN, 3, &norm_in));
    const kc_rmsq norm_ff = {m->x, L->post_norm, m->xn, m->xq, d->eps, D}; /* and the FFN's norm by the SwiGLU */
    const int fold_ff = (rms_fold_bits(m) & 2) && q8_ff && !m->ffn_fused &&
                        kc_matvec_swiglu_q8_rms_ok(&L->ffn_gate, &L->ffn_up, &norm_ff, q8_down);
    if (fold_in) { /* below */
    } else if (q8_in && in_ready) { /* computed by the previous layer's down projection (norm_tail) */
    } else if (q8_in) /* option norm_lean: an attention layer's projections read xq alone (a GDN layer's gdn_prep or
                         * beta/alpha GEMV reads xn) */
        RUN("rmsnorm_q8", kc_rmsnorm_q8(m->x, L->attn_norm, norm_out(m, L->type != KESTREL_LAYER_GDN, L->attn_norm, m->xn),
                                        m->xq, D, d->eps, st));
    else RUN("rmsnorm", kc_rmsnorm(m->x, D, L->attn_norm, m->xn, D, 1, D, d->eps, st));
    if (L->type == KESTREL_LAYER_GDN) {
        const int gi = L->gdn_index, C = d->conv_dim, K = d->conv_k;
        const kc_gdn_scratch *g = &m->gs[gi];
        float *S = m->S + (size_t)gi * d->vh * d->kd * d->vd;
        float *hist = m->hist + (size_t)gi * (K - 1) * C;
        const int variant = m->delta_variant < 0 ? (d->kd == 128 && d->vd == 128) : m->delta_variant;
        /* the projections of xn: qkv and z in one launch, with dot=q8 also q4_0 beta/alpha (every q4_0
         * matrix takes the integer-dot path, the rule the CPU engine's dot=q8 follows); f32 beta/alpha
         * with dot=q8 are computed by gdn_prep itself (one launch less) */
        const int ba_q8 = q8_in && gdn_ba_q8(m, L);
        const int prep_ba = m->dot_q8 && L->beta_w.type == 0u && L->alpha_w.type == 0u && L->beta_w.cols == D;
        if (fold_in) {
            float *Y[4] = {g->raw, g->z, g->b, g->a};
            RUN("rmsnorm_matvec4_q4_0xq8", kc_matvec_q8_rms(GDN_IN, Y, 4, &norm_in, 0, st));
        } else {
            const kc_mat *W[4] = {&L->qkv, &L->z, &L->beta_w, &L->alpha_w};
            float *Y[4] = {g->raw, g->z, g->b, g->a};
            const kc_mat *OUT[1] = {&L->out};
            if (gemv_set(m, ba_q8 ? "matvec4" : "matvec2", W, Y, ba_q8 ? 4 : 2, m->xn, q8_in ? m->xq : NULL, 0,
                         plan_for(m, &pf, OUT, 1, 0)))
                goto cleanup;
        }
        if (!ba_q8 && !prep_ba && L->beta_w.type == L->alpha_w.type) {
            RUN(kname(nm, sizeof nm, "matvec2", &L->beta_w),
                kc_matvec2(&L->beta_w, &L->alpha_w, m->xn, g->b, g->a, st));
        } else if (!ba_q8 && !prep_ba) {
            RUN(kname(nm, sizeof nm, "matvec", &L->beta_w), kc_matvec(&L->beta_w, m->xn, g->b, 0, st));
            RUN(kname(nm, sizeof nm, "matvec", &L->alpha_w), kc_matvec(&L->alpha_w, m->xn, g->a, 0, st));
        }
        const int q8_out = q8_path(m, &L->out) && d->vd % 32 == 0;
        if (m->gdn_fused && q8_out && variant == 1 && kc_gdn_step_supported(d->kh, d->kd, d->vh, d->vd, D)) {
            /* option gdn=fused: gdn_prep and delta_step_norm_q8 below as ONE launch, same bits */
            kc_gdn_step_args ga;
            gdn_step_args(m, L, S, hist, prep_ba, &ga);
            RUN("gdn_step", kc_gdn_step(&ga, st));
        } else {
            /* beta/g, conv + SiLU, L2 norms of q and k: one launch (bit-identical to the four); prep_ba: also
             * the beta/alpha projections */
            RUN("gdn_prep", kc_gdn_prep(g->raw, hist, L->conv_w, g->conv, C, K, d->kh, d->kd,
                                        1.0f / sqrtf((float)d->kd), g->qn, g->kn, g->b, g->a, L->ssm_a, L->dt_bias,
                                        g->beta, g->g, d->vh, prep_ba ? m->xn : NULL,
                                        prep_ba ? (const float *)L->beta_w.data : NULL,
                                        prep_ba ? (const float *)L->alpha_w.data : NULL, D, m->prep_early, st));
            if (q8_out && variant == 1 && m->delta_trig) { /* option delta_trig: the same, the next launch later */
                RUN("delta_step_norm_q8",
                    kc_delta_step_norm_q8_trig(S, g->qn, g->kn, g->conv + (size_t)2 * d->kh * d->kd, g->g, g->beta,
                                               g->o, g->z, L->ssm_norm, d->eps, g->o_norm, m->xq, d->kh, d->kd, d->vh,
                                               d->vd, m->delta_trig, m->delta_pf, st));
            } else if (q8_out && variant) { /* delta + gated norm + quantisation: one launch */
                RUN("delta_step_norm_q8",
                    (m->delta_pf ? kc_delta_step_norm_q8_pf : kc_delta_step_norm_q8)(
                        S, g->qn, g->kn, g->conv + (size_t)2 * d->kh * d->kd, g->g, g->beta, g->o, g->z, L->ssm_norm,
                        d->eps, g->o_norm, m->xq, d->kh, d->kd, d->vh, d->vd, st));
            } else {
                RUN(variant ? "delta_step_reg" : "delta_step",
                    kc_delta_step(S, g->qn, g->kn, g->conv + (size_t)2 * d->kh * d->kd, g->g, g->beta, g->o, d->kh,
                                  d->kd, d->vh, d->vd, variant, st));
                if (q8_out)
                    RUN("gated_rmsnorm_q8",
                        kc_gated_rmsnorm_q8(g->o, g->z, L->ssm_norm, g->o_norm, m->xq, d->vh, d->vd, d->eps, st));
                else
                    RUN("gated_rmsnorm",
                        kc_gated_rmsnorm(g->o, g->z, L->ssm_norm, g->o_norm, d->vh, d->vd, d->eps, st));
            }
        }
        {
            const kc_mat *W[1] = {&L->out};
            float *Y[1] = {m->x};
            const kc_pf *pp = plan_for(m, &pf, FF, 2, 1);
            ff_ready = gemv_tail(m, "matvec_out_add", &L->out, q8_out ? m->xq : NULL, q8_ff && !fold_ff ? &norm_ff : NULL,
                                 m->tailcnt, pp);
            if (ff_ready < 0) goto cleanup;
            if (!ff_ready && gemv_set(m, "matvec_out_add", W, Y, 1, g->o_norm, q8_out ? m->xq : NULL, 1, pp)) goto cleanup;
        }
    } else {
        const int ai = L->attn_index, hd = d->hd;
        const size_t kvs = (size_t)d->ctx * d->nkv * hd;
        float *kc = m->kcache + (size_t)ai * kvs, *vc = m->vcache + (size_t)ai * kvs;
        if (fold_in) {
            float *Y[3] = {m->qg, m->ak, m->av};
            RUN("rmsnorm_matvec3_q4_0xq8", kc_matvec_q8_rms(ATT_IN, Y, 3, &norm_in, 0, st));
        } else if (q8_path(m, &L->wq) && q8_path(m, &L->wk) && q8_path(m, &L->wv)) { /* q, k, v: one launch */
            const kc_mat *W[3] = {&L->wq, &L->wk, &L->wv};
            float *Y[3] = {m->qg, m->ak, m->av};
            const kc_mat *WO[1] = {&L->wo};
            if (gemv_set(m, "matvec3", W, Y, 3, m->xn, q8_in ? m->xq : NULL, 0, plan_for(m, &pf, WO, 1, 0)))
                goto cleanup;
        } else {
            const kc_mat *W[3] = {&L->wq, &L->wk, &L->wv};
            float *Y[3] = {m->qg, m->ak, m->av};
            if (gemv_set(m, "matvec", W, Y, 1, m->xn, NULL, 0, NULL)) goto cleanup;
            if (gemv_set(m, "matvec2", W + 1, Y + 1, 2, m->xn, NULL, 0, NULL)) goto cleanup;
        }
        /* q/k norms, RoPE and the KV append: one launch (bit-identical to the five), or (attn_fuse) inside the
         * short attention's own launch, one block (bit 1) or a cluster (bit 2) per q head */
        const int fuse = ((m->attn_fuse & 1) && m->attn_short_step == 1) ||
                         ((m->attn_fuse & 2) && m->attn_short_step >= 2);
        const int fuse_ok = fuse && kc_attention_short_prep_ok(d->nh, d->nkv, hd, d->rope_dim);
        /* the steps past attn_kvc_from by kv head (kc_model_step has checked the shape); attn_prep inside where
         * attn_fuse bit 2 folds it into the clustered kernels */
        const int kvc = m->attn_short_step == 3;
        if (!fuse_ok)
            RUN("attn_prep", kc_attn_prep(m->qg, m->ak, m->av, L->q_norm, L->k_norm, m->aq, kc, vc, d->nh, d->nkv, hd,
                                          d->rope_dim, d->rope_base, d->eps, &m->ctl->pos, m->attn_early, st));
        /* one block per q head up to attn_short positions, a cluster of attn_clsize blocks per head up
         * to attn_cl (attn=short, the default: this step's kind), else split over positions (by kv head
         * with attn_long=gqa); the output is quantised for wo by the same launch (dot=q8), so the out
         * projection needs no quantize launch of its own */
        const int q8_wo = q8_path(m, &L->wo) && hd % 32 == 0;
        /* attn_kvc_tm: kc_model_step built the caches' tensor maps before it routed a step here (kvc) */
        if (kvc && kvc_sp(m) > 1)
            RUN("attention_kvcx",
                kc_attention_kvcx(fuse_ok ? m->qg : m->aq, fuse_ok ? m->ak : NULL, m->av, L->q_norm, L->k_norm, kc, vc,
                                  m->qg + hd, 2 * hd, m->ao, q8_wo ? m->xq : NULL, d->nh, d->nkv, hd, kvc_blocks(m),
                                  kvc_sp(m), kvc_top(m), d->rope_dim, d->rope_base, d->eps,
                                  1.0f / sqrtf((float)hd), &m->ctl->pos, m->kv_tmap + 2 * ai, m->attn_part,
                                  m->attn_cnt, m->attn_kvc_push, st));
        else if (kvc)
            RUN(m->attn_kvc_tm ? "attention_kvct" : "attention_kvc",
                kc_attention_kvc(fuse_ok ? m->qg : m->aq, fuse_ok ? m->ak : NULL, m->av, L->q_norm, L->k_norm, kc, vc,
                                 m->qg + hd, 2 * hd, m->ao, q8_wo ? m->xq : NULL, d->nh, d->nkv, hd, kvc_blocks(m),
                                 kvc_top(m), d->rope_dim, d->rope_base, d->eps,
                                 1.0f / sqrtf((float)hd), &m->ctl->pos, m->attn_kvc_tm ? m->kv_tmap + 2 * ai : NULL,
                                 m->attn_kvc_push, st));
        else if (fuse_ok && m->attn_short_step == 1)
            RUN("attention_short_prep",
                kc_attention_short_prep(m->qg, m->ak, m->av, L->q_norm, L->k_norm, kc, vc, m->ao, q8_wo ? m->xq : NULL,
                                        d->nh, d->nkv, hd, d->rope_dim, d->rope_base, d->eps,
                                        1.0f / sqrtf((float)hd), &m->ctl->pos, st));
        else if (fuse_ok)
            RUN("attention_short_cl_prep",
                kc_attention_short_cl_prep(m->qg, m->ak, m->av, L->q_norm, L->k_norm, kc, vc, m->ao,
                                           q8_wo ? m->xq : NULL, d->nh, d->nkv, hd, m->attn_clsize, d->rope_dim,
                                           d->rope_base, d->eps, 1.0f / sqrtf((float)hd), &m->ctl->pos,
                                           m->attn_cl_push, st));
        else if (m->attn_short_step == 1 && kc_attention_short_ok(d->nh, d->nkv, hd))
            RUN("attention_short", kc_attention_short(m->aq, kc, vc, m->qg + hd, 2 * hd, m->ao, q8_wo ? m->xq : NULL,
                                                      d->nh, d->nkv, hd, 1.0f / sqrtf((float)hd), &m->ctl->pos, st));
        else if (m->attn_short_step == 2 && kc_attention_short_ok(d->nh, d->nkv, hd))
            RUN("attention_short_cl",
                kc_attention_short_cl(m->aq, kc, vc, m->qg + hd, 2 * hd, m->ao, q8_wo ? m->xq : NULL, d->nh, d->nkv, hd,
                                      m->attn_clsize, 1.0f / sqrtf((float)hd), &m->ctl->pos, m->attn_cl_push, st));
        else if ((m->attn_gqa == 1 || (m->attn_gqa == 2 && m->attn_long)) && kc_attention_gqa_ok(d->nh, d->nkv, hd, d->ctx))
            RUN("attention_gqa", kc_attention_gqa(m->aq, kc, vc, m->qg + hd, 2 * hd, m->ao, q8_wo ? m->xq : NULL, d->nh,
                                                  d->nkv, hd, d->ctx, 1.0f / sqrtf((float)hd), &m->ctl->pos,
                                                  m->attn_part, m->attn_cnt, st));
        else
            RUN("attention_split", kc_attention_split(m->aq, kc, vc, m->qg + hd, 2 * hd, m->ao, q8_wo ? m->xq : NULL,
                                                  d->nh, d->nkv, hd, d->ctx, 1.0f / sqrtf((float)hd), &m->ctl->pos,
                                                  m->attn_part, m->attn_cnt, st));
        {
            const kc_mat *W[1] = {&L->wo};
            float *Y[1] = {m->x};
            const kc_pf *pp = plan_for(m, &pf, FF, 2, 1);
            ff_ready = gemv_tail(m, "matvec_out_add", &L->wo, q8_wo ? m->xq : NULL, q8_ff && !fold_ff ? &norm_ff : NULL,
                                 m->tailcnt, pp);
            if (ff_ready < 0) goto cleanup;
            if (!ff_ready && gemv_set(m, "matvec_out_add", W, Y, 1, m->ao, q8_wo ? m->xq : NULL, 1, pp)) goto cleanup;
        }
    }
    if (fold_ff) {
        RUN(q8_down ? "rmsnorm_matvec_swiglu_q8_q4_0xq8" : "rmsnorm_matvec_swiglu_q4_0xq8",
            kc_matvec_swiglu_q8_rms(&L->ffn_gate, &L->ffn_up, &norm_ff, m->ff, q8_down ? m->xq2 : NULL,
                                    q8_down ? m->ffcnt : NULL, st));
        float *Y[1] = {m->x};
        if (gemv_set(m, "matvec_add", DOWN, Y, 1, m->ff, q8_down ? m->xq2 : NULL, 1, plan_layer_in(m, &pf, l + 1)))
            goto cleanup;
        rc = 0;
        goto cleanup;
    }
    if (q8_ff && ff_ready) { /* computed by the out projection's tail (norm_tail) */
    } else if (q8_ff) /* every FFN form below reads xq alone */
        RUN("rmsnorm_q8", kc_rmsnorm_q8(m->x, L->post_norm, norm_out(m, 1, L->post_norm, m->xn), m->xq, D, d->eps, st));
    else RUN("rmsnorm", kc_rmsnorm(m->x, D, L->post_norm, m->xn, D, 1, D, d->eps, st));
    if (m->ffn_fused == 2 && q8_ff && q8_down && kc_ffn_ring_supported(&L->ffn_gate, &L->ffn_up, &L->ffn_down)) {
        /* one launch, the weights of both phases through one ring per SM */
        RUN("ffn_ring", kc_ffn_ring(&L->ffn_gate, &L->ffn_up, &L->ffn_down, m->xq, m->ff, m->xq2, m->ffcnt, m->ffbar,
                                    m->x, st));
        rc = 0;
        goto cleanup;
    }
    if (m->ffn_fused == 1 && q8_down && kc_q8_stationary(&L->ffn_gate) &&
        kc_ffn_q8_supported(&L->ffn_gate, &L->ffn_up, &L->ffn_down)) { /* one persistent launch */
        RUN("ffn_q8", kc_ffn_q8(&L->ffn_gate, &L->ffn_up, &L->ffn_down, m->xq, m->ff, m->xq2, m->x, m->ffbar, st));
        rc = 0;
        goto cleanup;
    }
    /* dot=q8: the SwiGLU kernel also quantises its output for the down projection, into xq2 (its
     * input xq is still being read by other warps of the same launch) */
    if (gemv_swiglu(m, &L->ffn_gate, &L->ffn_up, m->xn, m->ff, q8_ff, q8_down ? m->xq2 : NULL,
                    plan_for(m, &pf, DOWN, 1, 0)))
        goto cleanup;
    {
        float *Y[1] = {m->x};
        kc_rmsq nx;
        const kc_pf *pp = plan_layer_in(m, &pf, l + 1);
        const int t = gemv_tail(m, "matvec_add", &L->ffn_down, q8_down ? m->xq2 : NULL, norm_after_layer(m, l, &nx),
                                m->tailcnt + 1, pp);
        if (t < 0) goto cleanup;
        m->norm_ready = t;
        if (!t && gemv_set(m, "matvec_add", DOWN, Y, 1, m->ff, q8_down ? m->xq2 : NULL, 1, pp)) goto cleanup;
    }
    rc = 0;
cleanup:
    return rc;
}

int kc_model_head(kc_model *m, int want_logits)
{
    int rc = -1;
    const kc_dims *d = &m->dm;
    cudaStream_t st = m->st;
    const int q8_head = want_logits && q8_path(m, &m->lm_head); /* the final norm quantises for the head */
    const int ready = m->norm_ready; /* computed by the last down projection's tail (norm_tail) */
    m->norm_ready = 0;
    if (q8_head && ready) {
    } else if (q8_head) /* the head reads xq alone */
        RUN("rmsnorm_q8",
            kc_rmsnorm_q8(m->x, m->out_norm, norm_out(m, 1, m->out_norm, m->xf), m->xq, d->n_embd, d->eps, st));
    else RUN("rmsnorm", kc_rmsnorm(m->x, d->n_embd, m->out_norm, m->xf, d->n_embd, 1, d->n_embd, d->eps, st));
    if (want_logits) {
        const kc_mat *W[1] = {&m->lm_head};
        float *Y[1] = {m->logits};
        kc_pf pf; /* the next step's first GEMV (graph replays follow each other) */
        if (gemv_set(m, "matvec_lm_head", W, Y, 1, m->xf, q8_head ? m->xq : NULL, 0, plan_layer_in(m, &pf, 0)))
            goto cleanup;
    }
    rc = 0;
cleanup:
    return rc;
}

static int step_body(kc_model *m, int want_logits, int capture)
{
    int rc = -1;
    const kc_dims *d = &m->dm;
    cudaStream_t st = m->st;
    char nm[64];
    kc_set_pdl(m->pdl);
    kc_set_carveout(m->carveout);
    kc_set_q8t_half(m->q8t_half);
    kc_set_norm_split(m->norm_split);
    kc_set_q8t_bch(m->q8t_bch);
    m->step_logits = want_logits;
    m->norm_ready = 0;
    RUN("ctl_begin", kc_ctl_begin(m->ctl, m->tokens, st));
    RUN(kname(nm, sizeof nm, "embed", &m->tok_embd), kc_embed(&m->tok_embd, &m->ctl->tok, m->x, st));
    for (int l = 0; l < d->n_layers; l++) {
        if (kc_layer_step(m, l)) goto cleanup;
        if (capture)
            KC_CK(m, cudaMemcpyAsync(m->hcap + (size_t)l * d->n_embd, m->x, sizeof(float) * d->n_embd,
                                     cudaMemcpyDeviceToDevice, st));
    }
    if (kc_model_head(m, want_logits)) goto cleanup;
    if (want_logits) RUN("argmax", kc_argmax(m->logits, d->n_vocab, m->argmax, &m->ctl->idx, m->argmax_scr, st));
    RUN("ctl_end", kc_ctl_end(m->ctl, st));
    rc = 0;
cleanup:
    return rc;
}

/* Capture step_body into m->graph[kind]. On a capture failure the graph is
 * switched off (m->use_graph = 0) and 0 is returned: the caller runs the plain step. */
static int capture_graph(kc_model *m, int want_logits, int kind)
{
    int rc = -1;
    cudaGraph_t g = NULL;
    cudaStreamCaptureStatus cs;
    KC_CK(m, cudaStreamBeginCapture(m->st, cudaStreamCaptureModeThreadLocal));
    if (step_body(m, want_logits, 0)) {
        char keep[sizeof m->err];
        memcpy(keep, m->err, sizeof keep);
        (void)cudaStreamEndCapture(m->st, &g);
        if (g) cudaGraphDestroy(g);
        g = NULL;
        (void)cudaGetLastError();
        memcpy(m->err, keep, sizeof keep);
        goto cleanup;
    }
    KC_CK(m, cudaStreamEndCapture(m->st, &g));
    KC_CK(m, cudaGraphInstantiate(&m->graph[kind], g, 0));
    rc = 0;
cleanup:
    if (g) cudaGraphDestroy(g);
    if (rc) {
        /* make sure the stream has left capture mode, then fall back to plain launches */
        if (cudaStreamIsCapturing(m->st, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone) {
            cudaGraph_t g2 = NULL;
            (void)cudaStreamEndCapture(m->st, &g2);
            if (g2) cudaGraphDestroy(g2);
        }
        (void)cudaGetLastError();
        m->use_graph = 0;
        rc = 0;
    }
    return rc;
}

int kc_model_step(kc_model *m, int want_logits, int capture, int n_pos)
{
    int rc = -1, st_rc;
    const int trace = m->prof == 2;
    want_logits = want_logits ? 1 : 0;
    /* past attn_cl, attn_long=gqa takes the kv-head kernel; where that kernel does not take the shape (its
     * shared memory grows with ctx), the clustered form goes on rather than the slower split kernel */
    const int long_kind = m->attn_long && !kc_attention_gqa_ok(m->dm.nh, m->dm.nkv, m->dm.hd, m->dm.ctx) ? 2 : 0;
    /* past attn_kvc_from positions up to kvc_top, the clustered steps by kv head where that kernel takes the shape
     * (their own bound: v36 call 4, past attn_cl they beat attention_gqa); else the cluster by q head up to attn_cl.
     * attn_kvc_tm: the caches' tensor maps, built on the first step that takes them (host work only); a driver that
     * cannot encode them turns attn_kvc_tm off, and with it what attn_kvc_sp and attn_kvc auto resolve to, so the
     * step is routed again. Nothing of the step is started yet: an error returns at once. */
    int kvc = kvc_step(m, n_pos);
    if (kvc && m->attn_gqa == 2 && m->attn_kvc_tm && !m->kv_tmap) {
        if (kv_tmaps_build(m)) return -1;
        kvc = kvc_step(m, n_pos);
    }
    m->attn_short_step = m->attn_gqa != 2 ? 0 : n_pos <= m->attn_short ? 1 : kvc ? 3 : n_pos <= m->attn_cl ? 2 : long_kind;
    const int kind = want_logits + 2 * m->attn_short_step;
    if (trace) KC_CK(m, cudaMemsetAsync(m->trace_n, 0, sizeof *m->trace_n, m->st));
    if (m->use_graph && !capture && m->prof != 1) {
        if (!m->graph[kind]) { /* trace: the launch sequence of this step kind, logged at capture */
            m->trace_len[kind] = 0;
            if (trace) kc_set_launch_log(m->trace_seq[kind], KC_PROF_MAX_EVENTS, &m->trace_len[kind]);
            st_rc = capture_graph(m, want_logits, kind);
            kc_set_launch_log(NULL, 0, NULL);
            if (st_rc) goto cleanup;
        }
        if (m->use_graph) {
            KC_CK(m, cudaGraphLaunch(m->graph[kind], m->st));
            if (trace && trace_collect(m, kind)) goto cleanup;
            rc = 0;
            goto cleanup;
        }
    }
    m->trace_len[kind] = 0;
    if (trace) kc_set_launch_log(m->trace_seq[kind], KC_PROF_MAX_EVENTS, &m->trace_len[kind]);
    st_rc = step_body(m, want_logits, capture);
    kc_set_launch_log(NULL, 0, NULL);
    if (st_rc) goto cleanup;
    if (m->prof == 1 && kc_prof_collect(m)) goto cleanup;
    if (trace && trace_collect(m, kind)) goto cleanup;
    rc = 0;
cleanup:
    return rc;
}
