/*
 * cuda/model.cuh - the Qwen3.5 model resident on one GPU: weights, recurrent
 * state, KV cache, scratch, and the decode step (all layers on the device,
 * no host round trip). Used by cuda_engine.cu (GGUF -> kc_model, the ABI)
 * and by test_kernels.cu (layer-level bit-exact checks on random weights).
 *
 * Error handling: every function returns 0 or -1; on -1, m->err holds one
 * line "cudaErrorX (message) at file:line in function" (or a shape/limit
 * message). Nothing here prints, exits or aborts.
 */
#ifndef KESTREL_CUDA_MODEL_CUH
#define KESTREL_CUDA_MODEL_CUH

#include "kernels.cuh"
#include <stddef.h>
#include <stdio.h>

/* Check a CUDA call; on failure record where into m->err and goto cleanup. */
#define KC_CK(m, call)                                                                            \
    do {                                                                                          \
        cudaError_t kc_e_ = (call);                                                               \
        if (kc_e_ != cudaSuccess) {                                                               \
            kc_set_cuda_err((m), kc_e_, #call, __FILE__, __LINE__, __func__);                     \
            goto cleanup;                                                                         \
        }                                                                                         \
    } while (0)

typedef struct kc_dims {
    int n_embd, n_ff, n_vocab, n_layers;
    int kh, vh, kd, vd, conv_k, conv_dim; /* GDN; conv_dim = 2*kh*kd + vh*vd */
    int nh, nkv, hd, rope_dim;            /* attention */
    float rope_base, eps;
    int ctx;                              /* KV cache positions */
} kc_dims;

typedef struct kc_layer {
    int type;                /* KESTREL_LAYER_GDN / KESTREL_LAYER_ATTN */
    int gdn_index;           /* index among GDN layers (state slot), or -1 */
    int attn_index;          /* index among attention layers (KV slot), or -1 */
    float *attn_norm;        /* (D,) stored 1+w */
    float *post_norm;        /* (D,) */
    kc_mat ffn_gate, ffn_up; /* (n_ff, D) */
    kc_mat ffn_down;         /* (D, n_ff) */
    /* GDN */
    kc_mat qkv;              /* (C, D) */
    kc_mat z;                /* (vh*vd, D) */
    kc_mat beta_w, alpha_w;  /* (vh, D) */
    kc_mat out;              /* (D, vh*vd) */
    float *conv_w;           /* (C, K) */
    float *ssm_a;            /* (vh,) = -exp(A_log) */
    float *dt_bias;          /* (vh,) */
    float *ssm_norm;         /* (vd,) raw w */
    /* attention */
    kc_mat wq;               /* (nh*2*hd, D): per head [q | gate] */
    kc_mat wk, wv;           /* (nkv*hd, D) */
    kc_mat wo;               /* (D, nh*hd) */
    float *q_norm, *k_norm;  /* (hd,) stored 1+w */
} kc_layer;

/* Per-GDN-layer step intermediates of the last token (readback). */
typedef struct kc_gdn_scratch {
    float *raw;      /* (C,) qkv projection before the conv */
    float *conv;     /* (C,) after conv + SiLU: q | k | v */
    float *qn, *kn;  /* (kh, kd) after L2 norm (q also scaled by 1/sqrt(kd)) */
    float *z;        /* (vh*vd,) */
    float *b, *a;    /* (vh,) projections */
    float *beta, *g; /* (vh,) */
    float *o;        /* (vh, vd) before the gated norm */
    float *o_norm;   /* (vh, vd) after it */
} kc_gdn_scratch;

#define KC_PROF_MAX_NAMES 64
#define KC_PROF_MAX_EVENTS 4096
#define KC_STEP_KINDS 8 /* graphs: with/without logits x split/short/clustered short/by-kv-head cluster attention */

typedef struct kc_model {
    kc_dims dm;
    int n_gdn, n_attn;
    kc_layer *layers;         /* (L,) host array of device pointers */
    kc_mat tok_embd;          /* (V, D) */
    kc_mat lm_head;           /* (V, D); aliases tok_embd when tied */
    float *out_norm;          /* (D,) */
    int delta_variant;        /* -1 pick, 0 generic, 1 register-resident */
    int gemv_rpw;             /* rows per warp of the q4_0 GEMVs: 0 = by rows, or 1, 2, 4 (option gemv_rpw) */
    int q8kind;               /* option q8gemv=xs|stream|tma: kc_mat.q8kind */
    int rms_fold;             /* option rms_fold: bits 1 input, 2 FFN norm inside the q8gemv=tma GEMVs (kc_matvec_q8_rms); -1 auto (rms_fold_bits) */
    int norm_tail;            /* option norm_tail: each RMS norm computed by the residual GEMV before it (kc_matvec_q8_tail) */
    int norm_ready;           /* while issuing a step: the next RMS norm was computed by the last GEMV's tail */
    int carveout;             /* option carveout: kc_set_carveout for every step kernel (-1: the driver's) */
    int q8t_half;             /* option q8t_half: kc_set_q8t_half for every step */
    int q8t_bch;              /* option q8t_bch: kc_set_q8t_bch for every step */
    int q8t_kb, q8t_sm, q8t_wkb, q8t_xs; /* options q8t_*: every matrix's kc_mat.q8t_* (q8t_wkb 0 -> -1: off) */
    int q8t_wu;               /* option q8t_wu: kc_mat.q8t_wloop 1 (0: the wide dot's run-time loop), 0 (1), 2 (2: x broadcast) */
    int q8t_okb, q8t_osm;     /* options q8t_okb, q8t_osm: the out projections' ring (kc_mat.q8t_kb, q8t_sm) */
    int q8t_ogrid;            /* option q8t_ogrid: the out projections' grid in blocks (kc_mat.q8t_sm = -grid); -1 auto, 0 full */
    int q8t_skip;             /* option q8t_skip: q8gemv=tma not for (bits) 1 ssm_out/attn_output, 2 ffn_down,
                               * 4 the input projections (qkv, z, q/k/v), 8 ffn_gate/up (A/B) */
    int gemv_prefetch;        /* option gemv_prefetch: q8 GEMVs L2-prefetch their first weights (kc_mat.prefetch) */
    int q8wide;               /* option q8wide: kc_mat.q8wide */
    int gemv_early;           /* option gemv_early: kc_mat.early */
    int ffn_fused;            /* option ffn: 1 fused (one kc_ffn_q8 launch), 2 ring (one kc_ffn_ring launch) */
    int gdn_fused;            /* option gdn=fused: gdn_prep + delta_step_norm_q8 as one kc_gdn_step launch */
    int attn_gqa;             /* option attn: 1 (gqa) kc_attention_gqa, 2 (short) kc_attention_short, where they take the shape */
    int attn_short;           /* option attn_short: kc_attention_short's nmax (positions served by one block per head) */
    int attn_cl, attn_clsize; /* options attn_cl, attn_clsize: kc_attention_short_cl up to attn_cl positions, its cluster */
    int attn_long;            /* option attn_long=gqa: attn=short's steps past attn_cl take kc_attention_gqa, not split */
    int delta_pf;             /* option delta_pf: the delta rule's state prefetched into L2 before the PDL wait */
    int delta_trig;           /* option delta_trig: where the delta rule lets the out projection launch (1-3; 0 start) */
    int prep_early;           /* option prep_early: gdn_prep's conv weights (and 1: history prefetch) before its wait */
    int attn_early;           /* option attn_early: attn_prep's norm weight and RoPE frequency before its wait */
    int attn_fuse;            /* option attn_fuse: attn_prep inside the short attention, bit 1 one block, bit 2 clustered */
    int attn_kvc, attn_kvc_from, attn_kvc_to; /* options attn_kvc, attn_kvc_from, attn_kvc_to: the steps with
                                  * attn_kvc_from < n <= kvc_top(m) by kv head (kc_attention_kvc) over clusters of
                                  * attn_kvc blocks; 0 off, -1 auto (kvc_blocks) */
    int attn_kvc_tm;          /* option attn_kvc_tm: attention_kvc's ring slots by one tensor copy each (kv_tmap) */
    int attn_kvc_sp;          /* option attn_kvc_sp: the steps by kv head over this many clusters per kv head
                               * (kc_attention_kvcx, with attn_kvc_tm); 1: one cluster (kc_attention_kvc); -1
                               * auto (kvc_sp) */
    int attn_kvc_push;        /* option attn_kvc_push: those steps merge the blocks' partials by push (one barrier) */
    int attn_cl_push;         /* option attn_cl_push: the cluster by q head (attention_short_cl) merges by push */
    int norm_lean;            /* option norm_lean: norms whose f32 output no kernel reads write only the q8 blocks */
    int norm_split;           /* option norm_split: kc_set_norm_split for every step */
    kc_tmap *kv_tmap;         /* (n_attn, 2) each attention layer's K and V cache tensor maps, built at first use */
    size_t pf_bytes;          /* option pf_next: bytes of the next GEMV's weights each q8 GEMV prefetches (0 off) */
    int step_logits;          /* the step being issued ends with the lm_head (next GEMV after the last layer) */
    int pdl;                  /* option pdl: programmatic dependent launch of the step's kernels */
    int dot_q8;               /* option dot=q8: q4_0 GEMVs with 8-bit activations and integer dots */
    int gemv_unroll;          /* q4_0 x q8 GEMV blocks per lane in flight (option gemv_unroll; 0 = default) */
    int gemv_kind;            /* q4_0 GEMV kernel: 0 register prefetch (default), 1 cp.async (option gemv=reg|pipe) */
    /* state */
    float *S;                 /* (n_gdn, vh, kd, vd) */
    float *hist;              /* (n_gdn, K-1, C) */
    float *kcache, *vcache;   /* (n_attn, ctx, nkv, hd) each */
    kc_gdn_scratch *gs;       /* (n_gdn,) */
    /* scratch */
    float *x;                 /* (D,) residual stream */
    float *xn;                /* (D,) normed */
    float *ff;                /* (n_ff,) */
    float *qg;                /* (nh*2*hd,) */
    float *aq, *ak, *av, *ao; /* (nh*hd,), (nkv*hd,), (nkv*hd,), (nh*hd,) */
    float *xf;                /* (D,) final-normed */
    float *logits;            /* (V,) */
    kc_argmax_scratch *argmax_scr; /* (1,) the multi-block argmax's partials */
    float *attn_part;         /* (nh, kc_attention_splits(ctx), hd + 2) split-attention partials */
    unsigned int *attn_cnt;   /* (nh,) split-attention tickets */
    unsigned int *ffcnt;      /* (n_ff/32,) swiglu_q8's row-group counters (zero between steps) */
    kc_q8blk *xq2;            /* (n_ff/32,) the SwiGLU output quantised by swiglu_q8 itself */
    unsigned int *ffbar;      /* (2,) kc_ffn_q8's grid barrier (zeroed at allocation) */
    unsigned int *tailcnt;    /* (2,) norm_tail's tickets: out projection, down (zero between launches) */
    kc_q8blk *xq;             /* (max(D, n_ff, vh*vd, nh*hd)/32,) the quantised GEMV input (dot=q8) */
    float *hcap;              /* (L, D) residual after each layer, written in capture mode */
    int32_t *tokens;          /* (tok_cap,) */
    int tok_cap;
    int32_t *argmax;          /* (tok_cap,) */
    kc_ctl *ctl;              /* (1,) */
    cudaStream_t st;
    /* graph per step kind: want_logits (lm_head + argmax) + 2 * attn_short_step */
    int use_graph;
    cudaGraphExec_t graph[KC_STEP_KINDS];
    int attn_short_step;      /* the current step's attention (attn=short): 1 kc_attention_short (n <= attn_short),
                               * 2 kc_attention_short_cl (n <= attn_cl), 3 kc_attention_kvc (attn_kvc_from < n <=
                               * min(ctx, attn_kvc_to, attn_kvc x 1024)), 0 the split kernel */
    /* profiling */
    int prof;
    int prof_n_names;
    char prof_names[KC_PROF_MAX_NAMES][64];
    double prof_ms[KC_PROF_MAX_NAMES];
    uint64_t prof_calls[KC_PROF_MAX_NAMES];
    cudaEvent_t *prof_ev;     /* (2 * KC_PROF_MAX_EVENTS,) */
    int prof_ev_n;            /* events recorded in the current step */
    int prof_ev_name[KC_PROF_MAX_EVENTS];
    /* profile=trace (prof == 2): kernel marks (kernels.cuh kc_trace) and the launch sequence of each
     * step kind (as graph[]), so mark i is named trace_seq[kind][i] */
    unsigned long long *trace_t; /* (KC_PROF_MAX_EVENTS,) device */
    unsigned int *trace_n;       /* (1,) device */
    unsigned long long *trace_h; /* (KC_PROF_MAX_EVENTS,) host */
    int trace_seq[KC_STEP_KINDS][KC_PROF_MAX_EVENTS];
    int trace_len[KC_STEP_KINDS];
    /* device allocations (freed by kc_model_free) */
    void **allocs;
    size_t n_allocs, cap_allocs;
    uint64_t bytes;           /* device bytes allocated */
    uint64_t vram_limit;      /* 0 = none */
    char err[512];
} kc_model;

void kc_set_cuda_err(kc_model *m, cudaError_t e, const char *what, const char *file, int line,
                     const char *func);
void kc_set_err(kc_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Device allocation, zeroed, tracked for kc_model_free; honours m->vram_limit. */
int kc_alloc(kc_model *m, void **out, size_t bytes);
/* Allocate and upload a matrix from ggml rows (repacking quantised types). what: for errors. */
int kc_upload_mat(kc_model *m, kc_mat *out, uint32_t type, int64_t rows, int64_t cols, const void *src,
                  const char *what);
/* Allocate and upload n floats. */
int kc_upload_f32(kc_model *m, float **out, const float *src, size_t n);

/* After dims/layers are set: allocate state, KV cache and scratch; create the stream. */
int kc_model_alloc_runtime(kc_model *m);
/* Clear state, conv history, KV cache and the position. */
int kc_model_reset(kc_model *m);
/* Make room for n tokens in the device token buffer. */
int kc_model_reserve_tokens(kc_model *m, int n);

/* The layers of one token (everything between embedding and final norm), for layer l only. */
/* The final norm and (want_logits) the lm_head GEMV into m->logits, by the engine's GEMV path. */
int kc_model_head(kc_model *m, int want_logits);
int kc_layer_step(kc_model *m, int l);
/* One whole decode step: ctl_begin, embedding, all layers, final norm, [lm_head + argmax], ctl_end.
 * capture != 0 copies the residual after each layer into m->hcap. Uses the graph of the step's kind
 * when enabled and not capturing/profiling. n_pos: the positions the step's attention sees (its
 * position + 1; the device reads the position from ctl, the host picks the kind of step with it). */
int kc_model_step(kc_model *m, int want_logits, int capture, int n_pos);
/* Free all device memory and handles (the struct itself too). NULL is fine. */
void kc_model_free(kc_model *m);

/* The model behind an engine handle of cuda_engine.cu (for test_kernels). */
struct kestrel_engine;
kc_model *kc_engine_model(struct kestrel_engine *e);

/* Profiling: begin/end of one named launch; kc_prof_collect after a synchronised step (profile=1:
 * CUDA events around each launch, graph and PDL off). */
int kc_prof_collect(kc_model *m);

#endif
