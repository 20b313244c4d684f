/*
 * cuda/cuda_engine.cu - libkestrel-cuda.so: the engine ABI (kestrel/engine.h)
 * over the device model of model.cu. Reads the GGUF (`qwen35` names, BRIEF §2)
 * with the shared reader, uploads every weight once, and decodes with the
 * whole step on the GPU; logits leave the device only when asked for.
 *
 * Options (comma-separated key=value): device=N, graph=0|1 (default 1),
 * profile=0|1|trace (per-kernel time: 1 CUDA events around each launch with graph and PDL off;
 * trace: each kernel's time on the critical path of the real step, graph and PDL as configured,
 * from device timestamps at each kernel's dependency wait; one traced engine per process),
 * ctx=N (KV positions, default min(context_length, 4096)),
 * vram_limit=BYTES (allocator refuses beyond it: tests out-of-memory),
 * delta=auto|generic|reg, gemv=reg|pipe (q4_0 GEMV: register prefetch (default) or cp.async),
 * gemv_rpw=0|1|2|4 (rows per warp of the q4_0 GEMVs, 0 = by rows; for A/B),
 * dot=q8|f32 (q4_0 GEMVs: activations quantised to 8 bits per block of 32 and integer dot
 * products (default), or f32 activations with exact float dots), gemv_unroll=0|1|2|4 (q8 GEMV
 * blocks per lane loaded before use, 0 = by rows; for A/B), pdl=0|1 (programmatic dependent
 * launch of the step's kernels, default 1), gemv_prefetch=0|1 (q8 GEMVs L2-prefetch their first
 * weights before waiting on the previous kernel, default 0), q8gemv=tma|xs|stream (q8 GEMVs up to
 * 6144 columns: weights bulk-copied into shared-memory rings, the first before the PDL wait, x in
 * registers (default; the SwiGLU also quantises its output; wider ones up to 65536 rows take it with
 * x in shared memory), activation blocks in registers with weights loaded by the warps (xs), or the
 * streaming kernel), q8t_kb=16..227 / q8t_sm=1..4 (tma: ring KB and blocks per SM, default 100, 2),
 * q8t_wkb=0|16..227 (tma for matrices wider than 6144 columns: ring KB at one block per SM, default
 * 200; 0: they stream), q8t_xs=0|1 (tma: x in shared memory for every width, A/B),
 * q8t_wu=0|1|2 (tma, the 9B's and 27B's down projection: the 8 warps of a stage split by dot lanes, each
 * x block read once for its 8 rows (2, the default: matvec_q8t_bc_kernel, PERF-NOTES v24), the dot per row
 * unrolled for its width (1) or the run-time loop (0, A/B); same bits),
 * q8t_skip=0..15 (tma not for: 1 ssm_out/attn_output, 2 ffn_down, 4 input projections, 8 gate/up;
 * A/B), q8t_okb / q8t_osm (the out projections' own ring; 0 = q8t_kb / q8t_sm; A/B), q8t_ogrid=auto|0..1024
 * (the out projections' grid in blocks: auto, the default, the full grid less the delta rule's blocks
 * where that adds no stage per block (the 27B: 216 of 264; PERF-NOTES v23), 0 the full grid, N blocks),
 * rms_fold=0|1|in|ffn|auto (q8gemv=tma: each layer's two RMS norms (1), its input norm (in) or its FFN
 * norm (ffn) computed by the GEMV that consumes them, one launch less each, same bits; auto, the
 * default: ffn where the model is at most 4096 wide, else 0), norm_tail=0|1 (q8gemv=tma: each RMS norm computed by the last block
 * of the residual GEMV before it, one launch less each, same bits; not with rms_fold), carveout=0..100|101 (percent of L1/shared storage as shared memory for every step kernel; 101 = the
 * driver's choice per kernel),
 * q8wide=stream|nc|smem (q8 GEMVs too wide or tall for xs: the streaming kernel (default), the same
 * with x read through the read-only path (A/B only: not PDL-safe), or a persistent grid with x in
 * shared memory, or (xs) the same with all of a row's loads in flight), ffn=split|fused|ring (dot=q8:
 * the FFN as the SwiGLU and down launches, or one persistent launch with grid barriers, for the
 * 2B/9B/27B widths, or one launch streaming both phases through one TMA ring per SM), gdn=split|fused (dot=q8, kd = vd = 128: a GDN layer's conv/norm/beta prep and
 * delta rule as two launches (default), or one with the v-heads of a k-head as a thread-block cluster:
 * measured slower, PERF-NOTES v14), attn=split|gqa|short (the decode attention: one block per q head and split, or one per kv head and split (gqa, for
 * the shapes it takes), or (short, the default) one block per q head for the steps of n <= attn_short positions (attn_short=N, default 128), a
 * cluster of attn_clsize (default 4) blocks per head up to attn_cl (default 8192), beyond it split by kv head (attn_long=gqa, the
 * default, where attention_gqa takes the shape, else the cluster goes on) or by q head (attn_long=split), PERF-NOTES v20-v21), delta_pf=0|1 (the delta rule's state L2-prefetched before the PDL wait: same bits; default 1),
 * delta_trig=0..3 (the delta rule lets the out projection launch at its start (0), once its loads are issued (1),
 * once they have returned (3, the default) or once its columns are computed (2), so that projection's ring
 * preload does not queue in front of the state's loads; same bits; PERF-NOTES v25-v27: 3 with delta_pf=1 `ab`
 * 0.9930 against 0 without, each alone no difference), prep_early=0..2 (gdn_prep loads each conv channel's weights
 * before its PDL wait and (1) L2-prefetches its history with an evict_last hint: same bits; default 2),
 * attn_early=0|1 (attn_prep loads its q/k norm weight and computes its RoPE frequency before its PDL wait: same
 * bits; default 1),
 * attn_fuse=0..3 (attn_prep folded into the short attention: bit 1 the one-block kernel (attention_short_prep),
 * bit 2 the clustered one (attention_short_cl_prep); same bits; default 3, PERF-NOTES v32),
 * attn_kvc=auto|0|2..16, attn_kvc_from=N and attn_kvc_to=M (the steps with N < n <= min(ctx, M, attn_kvc x
 * attn_kvc_sp x 1024) by kv head, attention_kvc: a cluster of attn_kvc blocks per kv head reads each K and V row
 * once for its q heads; attn_prep inside where attn_fuse bit 2 folds it; within rounding of the clustered form;
 * defaults auto (8 blocks where attn_kvc_sp > 1, else 16: PERF-NOTES v35, v39), 1024 (v35) and 16384 (past
 * attn_cl too, v36); attn_kvc=0: off),
 * attn_kvc_tm=0|1 (attention_kvc's ring slots each filled by one tensor copy of 32 rows through a tensor map of the
 * cache, attention_kvct, instead of a bulk copy per row: same bits; default 1, PERF-NOTES v36; where the driver
 * cannot encode tensor maps the bulk copies go on),
 * attn_kvc_sp=auto|1..32 (the steps by kv head over this many clusters of attn_kvc blocks per kv head,
 * attention_kvcx: more SMs on the same bytes, each cluster's partial merged by the last one (a ticket); within
 * rounding of attention_kvct; needs attn_kvc_tm=1; default auto: 3 where attn_kvc is auto too and the tensor maps
 * are in use (attn_kvc_tm=1 and a driver that encodes them), else 1; PERF-NOTES v38, v39),
 * attn_kvc_push=0|1 (the steps by kv head merge their blocks' partials by push, attention_kvc*_push kernels: each
 * block stores them into the merging block's shared memory, one cluster barrier more, instead of the merging blocks
 * reading them between two (0: v39's kernels, unchanged): same bits; default 1, PERF-NOTES v40, v41),
 * attn_cl_push=0|1 (the same for the cluster by q head, attention_short_cl(_prep)_push kernels: each block stores
 * its partial into block 0's shared memory, one cluster barrier: same bits; default 1, PERF-NOTES v40, v41),
 * norm_lean=0|1 (the RMS norms whose f32 output no kernel reads — the FFN's, the attention layers' input norm,
 * the final one, with dot=q8 — write only their q8 blocks, rmsnorm8_q8_lean_kernel: same bits; default 1, PERF-NOTES v43),
 * norm_split=1..32 (the q8 norms over this many blocks, at most one per warp of the row, each summing all of x's
 * squares in the one-block order and emitting its share, rmsnorm8_q8_split_kernel: same bits; 1: one block, the
 * kernels before v43; default 8, PERF-NOTES v43),
 * q8t_half=0|1 (the TMA SwiGLU's gate and up rows in separate ring slots, each released after its dot: same bits;
 * default 1, PERF-NOTES v29),
 * q8t_bch=0|1 (the x-broadcast down projection (q8t_wu=2) with each stage's columns as two ring slots, released
 * one after the other: same bits; default 1, PERF-NOTES v31),
 * gemv_early=0|1 (x-stationary q8 GEMVs load their first row of weights before
 * waiting on the previous kernel, default 1), pf_next=MB (0..64: each q8 GEMV L2-prefetches the first MB megabytes of the next GEMV's weights
 * as its warps start their last row; 0 = off),
 * threads=N (accepted for suite compatibility, unused).
 * Everything but kestrel_engine_entry has hidden visibility.
 */
#include "model.cuh"
#include "kestrel/engine.h"

extern "C" {
#include "gguf.h"
#include "quant.h"
}

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef KC_BUILD_FLAGS
#define KC_BUILD_FLAGS "nvcc (flags not recorded)"
#endif
#define KC_VERSION "0.1.0"
#define Q8WIDE_DEFAULT 0 /* option q8wide: the streaming kernel; smem measured slower, nc equal (PERF-NOTES v12) */
#define PF_NEXT_MB_DEFAULT 0 /* option pf_next: off, every size measured slower (PERF-NOTES v12 row 2) */
#define FFN_FUSED_DEFAULT 0 /* option ffn: split until measured (PERF-NOTES v13) */
#define GEMV_EARLY_DEFAULT 1 /* option gemv_early: on, ab 0.9755 against off (PERF-NOTES v12 row 6) */
#define GDN_FUSED_DEFAULT 0 /* option gdn: split; fused measured slower, ab 1.0365 (PERF-NOTES v14 row 1) */
#define ATTN_GQA_DEFAULT 2 /* option attn: short (one block per q head) up to attn_short positions, then split (PERF-NOTES v20) */
#define ATTN_CL_DEFAULT 8192 /* option attn_cl: attn=short's clustered form up to 8192 positions (v21: prompt 4096 -7% vs split) */
#define ATTN_LONG_DEFAULT 1 /* option attn_long: past attn_cl by kv head (gqa; v21: 27B prompt 16384 -8.6%, 8192 equal) */
#define ATTN_CLSIZE_DEFAULT 4 /* option attn_clsize: blocks per head of the clustered form (v20: 4 beat 2 and 8) */
#define ATTN_SHORT_DEFAULT 128 /* option attn_short: positions up to which attn=short takes its one-block kernel (v20: the clustered form wins from ~150) */
#define Q8KIND_DEFAULT 2 /* option q8gemv: tma, ab 0.9777 against xs (PERF-NOTES v15) */
#define ATTN_FUSE_DEFAULT 3 /* option attn_fuse: attn_prep inside the short attention, both forms (PERF-NOTES v32) */
#define ATTN_KVC_DEFAULT -1 /* option attn_kvc: auto (model.cu kvc_blocks: 8 blocks per kv head over attn_kvc_sp > 1
                            * clusters, else 16; PERF-NOTES v35, v39) */
#define ATTN_KVC_FROM_DEFAULT 1024 /* option attn_kvc_from: by kv head past 1024 positions (v35 bench: up to 512 the
                                   * cluster by q head is as fast or faster) */
#define ATTN_KVC_TO_DEFAULT 16384 /* option attn_kvc_to: by kv head up to 16384 positions, past attn_cl too (v36 call 4:
                                  * 9B prompt 12288 ab 0.9237 against attention_gqa) */
#define ATTN_KVC_TM_DEFAULT 1 /* option attn_kvc_tm: a tensor copy per ring slot (PERF-NOTES v36) */
#define ATTN_KVC_SP_DEFAULT -1 /* option attn_kvc_sp: auto (model.cu kvc_sp: 3 clusters per kv head where attn_kvc is
                               * auto and the tensor maps are in use, else 1; PERF-NOTES v38, v39) */
#define ATTN_KVC_PUSH_DEFAULT 1 /* option attn_kvc_push: the kv-head attention's merge by push, kernels of their own
                                * (PERF-NOTES v40, v41; the ship decision: the abs against v39 in dev-v41/) */
#define ATTN_CL_PUSH_DEFAULT 1  /* option attn_cl_push: the q-head cluster's merge by push, kernels of their own
                                * (PERF-NOTES v40, v41; the same abs) */
#define NORM_LEAN_DEFAULT 1 /* option norm_lean (PERF-NOTES v43: ab 0.9967 at 27B ctx 1) */
#define NORM_SPLIT_DEFAULT 8 /* option norm_split (PERF-NOTES v43: 8 vs 4 ab 0.9962, 4 vs 1 0.9956; 2, 10, 20 no better) */
#define Q8T_HALF_DEFAULT 1 /* option q8t_half: the SwiGLU's gate and up rows in separate slots (PERF-NOTES v29) */
#define Q8T_BCH_DEFAULT 1  /* option q8t_bch: the down projection's stages as two column halves (PERF-NOTES v31) */
#define Q8T_KB_DEFAULT 100 /* option q8t_kb: two 100 KB rings per SM (PERF-NOTES v15) */
#define Q8T_SM_DEFAULT 2
#define RMS_FOLD_DEFAULT -1 /* option rms_fold: auto, the FFN norm folded up to 4096 wide (model.cu rms_fold_bits, PERF-NOTES v22) */
#define NORM_TAIL_DEFAULT 0 /* option norm_tail: until measured (PERF-NOTES v16) */
#define CARVEOUT_DEFAULT -1 /* option carveout (101 = -1): the driver's split per kernel */
#define Q8T_WKB_DEFAULT 200 /* option q8t_wkb: the down projection by TMA, one 200 KB ring per SM (v15) */

#define MAT_TYPES ((1u << GGML_TYPE_F32) | (1u << GGML_TYPE_F16) | (1u << GGML_TYPE_BF16) | \
                   (1u << GGML_TYPE_Q8_0) | (1u << GGML_TYPE_Q4_0))
#define VEC_TYPES ((1u << GGML_TYPE_F32) | (1u << GGML_TYPE_F16) | (1u << GGML_TYPE_BF16))

struct kestrel_engine {
    kc_model *m;
    int device;
    char device_name[400];
    uint8_t *layer_types; /* (L,) */
    uint64_t weight_bytes, state_bytes;
    int32_t pos;          /* host copy of the position */
    int32_t last_n;       /* tokens of the last forward() */
    int captured;         /* last forward() had KESTREL_FWD_CAPTURE */
    float *cap_h;         /* (last_n, L, D) */
    float *cap_hf;        /* (last_n, D) */
    size_t cap_size;      /* floats allocated in cap_h */
    char err[640];
};

typedef struct kc_opts {
    int device, graph, profile, ctx, delta, gemv_rpw, gemv_kind, dot_q8, gemv_unroll, pdl, gemv_prefetch, q8kind;
    int pf_next_mb, q8wide, gemv_early, ffn_fused, gdn_fused, attn_gqa, q8t_kb, q8t_sm, q8t_xs, q8t_wu, q8t_wkb, q8t_skip, q8t_okb, q8t_osm, q8t_ogrid, carveout, rms_fold, norm_tail;
    int attn_short, delta_pf, attn_cl, attn_clsize, attn_long, delta_trig, prep_early, attn_early, q8t_half, q8t_bch;
    int attn_fuse, attn_kvc, attn_kvc_from, attn_kvc_to, attn_kvc_tm, attn_kvc_sp, attn_kvc_push, attn_cl_push, norm_lean, norm_split;
    uint64_t vram_limit;
} kc_opts;

static void fmt_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fmt_err(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    if (!err || !n) return;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

/* Options whose value is one word of a short list: the word's value goes into one int of kc_opts. */
typedef struct choice_opt {
    const char *key;
    const char *words[5]; /* NULL-terminated when shorter */
    int values[5];
    size_t field; /* offsetof(kc_opts, ...) */
} choice_opt;

static const choice_opt k_choices[] = {
    {"delta", {"auto", "generic", "reg"}, {-1, 0, 1}, offsetof(kc_opts, delta)},
    {"gemv", {"reg", "pipe"}, {0, 1}, offsetof(kc_opts, gemv_kind)},
    {"q8gemv", {"xs", "stream", "tma"}, {0, 1, 2}, offsetof(kc_opts, q8kind)},
    {"q8wide", {"stream", "nc", "smem", "xs"}, {0, 1, 2, 3}, offsetof(kc_opts, q8wide)},
    {"ffn", {"split", "fused", "ring"}, {0, 1, 2}, offsetof(kc_opts, ffn_fused)},
    {"gdn", {"split", "fused"}, {0, 1}, offsetof(kc_opts, gdn_fused)},
    {"attn", {"split", "gqa", "short"}, {0, 1, 2}, offsetof(kc_opts, attn_gqa)},
    {"attn_long", {"split", "gqa"}, {0, 1}, offsetof(kc_opts, attn_long)},
    {"dot", {"q8", "f32"}, {1, 0}, offsetof(kc_opts, dot_q8)},
    {"rms_fold", {"0", "1", "in", "ffn", "auto"}, {0, 3, 1, 2, -1}, offsetof(kc_opts, rms_fold)}, /* bits: 1 input, 2 FFN */
};

static const choice_opt *find_choice(const char *key)
{
    for (size_t i = 0; i < sizeof k_choices / sizeof k_choices[0]; i++)
        if (!strcmp(k_choices[i].key, key)) return &k_choices[i];
    return NULL;
}

/* o's field of c = the value of word val; else "options: KEY=VAL: expected a, b or c" */
static int set_choice(const choice_opt *c, const char *val, kc_opts *o, char *err, size_t err_len)
{
    int n = 0;
    while (n < (int)(sizeof c->words / sizeof c->words[0]) && c->words[n]) {
        if (!strcmp(c->words[n], val)) {
            *(int *)((char *)o + c->field) = c->values[n];
            return 0;
        }
        n++;
    }
    char list[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                 c->words[i]);
    fmt_err(err, err_len, "options: %s=%s: expected %s", c->key, val, list);
    return -1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_opts(const char *options, kc_opts *o, char *err, size_t err_len)
{
    int rc = -1;
    char *dup = NULL, *save = NULL;
    o->device = 0;
    o->graph = 1;
    o->profile = 0;
    o->ctx = 0;
    o->delta = -1;
    o->gemv_rpw = 0;
    o->gemv_kind = 0;
    o->dot_q8 = 1;
    o->pdl = 1;
    o->gemv_prefetch = 0;
    o->pf_next_mb = PF_NEXT_MB_DEFAULT;
    o->q8wide = Q8WIDE_DEFAULT;
    o->gemv_early = GEMV_EARLY_DEFAULT;
    o->ffn_fused = FFN_FUSED_DEFAULT;
    o->gdn_fused = GDN_FUSED_DEFAULT;
    o->attn_gqa = ATTN_GQA_DEFAULT;
    o->attn_short = ATTN_SHORT_DEFAULT;
    o->attn_cl = ATTN_CL_DEFAULT;
    o->attn_clsize = ATTN_CLSIZE_DEFAULT;
    o->attn_long = ATTN_LONG_DEFAULT;
    o->delta_pf = 1;   /* with delta_trig=3: the state from L2, the out projection's preload after it (v27) */
    o->delta_trig = 3;
    o->prep_early = 2; /* the conv weights before the wait (v27 row 4) */
    o->attn_early = 1; /* attn_prep's weight and RoPE frequency before the wait (v28) */
    o->attn_fuse = ATTN_FUSE_DEFAULT;
    o->attn_kvc = ATTN_KVC_DEFAULT;
    o->attn_kvc_from = ATTN_KVC_FROM_DEFAULT;
    o->attn_kvc_tm = ATTN_KVC_TM_DEFAULT;
    o->attn_kvc_to = ATTN_KVC_TO_DEFAULT;
    o->attn_kvc_sp = ATTN_KVC_SP_DEFAULT;
    o->attn_kvc_push = ATTN_KVC_PUSH_DEFAULT;
    o->attn_cl_push = ATTN_CL_PUSH_DEFAULT;
    o->norm_lean = NORM_LEAN_DEFAULT;
    o->norm_split = NORM_SPLIT_DEFAULT;
    o->q8t_half = Q8T_HALF_DEFAULT;
    o->q8t_bch = Q8T_BCH_DEFAULT;
    o->q8kind = Q8KIND_DEFAULT;
    o->q8t_kb = Q8T_KB_DEFAULT;
    o->q8t_sm = Q8T_SM_DEFAULT;
    o->q8t_xs = 0;
    o->q8t_wu = 2; /* the x-broadcast down projection (PERF-NOTES v24) */
    o->q8t_wkb = Q8T_WKB_DEFAULT;
    o->q8t_skip = 0;
    o->q8t_okb = 0;
    o->carveout = CARVEOUT_DEFAULT;
    o->rms_fold = RMS_FOLD_DEFAULT;
    o->norm_tail = NORM_TAIL_DEFAULT;
    o->q8t_osm = 0;
    o->q8t_ogrid = -1; /* auto: kc_q8t_out_grid */
    o->gemv_unroll = 0;
    o->vram_limit = 0;
    if (!options || !*options) return 0;
    dup = strdup(options);
    if (!dup) {
        fmt_err(err, err_len, "options: out of memory");
        goto cleanup;
    }
    for (char *kv = strtok_r(dup, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        uint64_t v = 0;
        if (!eq) {
            fmt_err(err, err_len, "options: '%s' is not key=value", kv);
            goto cleanup;
        }
        *eq = 0;
        const char *val = eq + 1;
        if (!strcmp(kv, "profile") && !strcmp(val, "trace")) {
            o->profile = 2;
            continue;
        }
        if (!strcmp(kv, "q8t_ogrid") && !strcmp(val, "auto")) {
            o->q8t_ogrid = -1;
            continue;
        }
        if (!strcmp(kv, "attn_kvc") && !strcmp(val, "auto")) {
            o->attn_kvc = -1;
            continue;
        }
        if (!strcmp(kv, "attn_kvc_sp") && !strcmp(val, "auto")) {
            o->attn_kvc_sp = -1;
            continue;
        }
        {
            const choice_opt *c = find_choice(kv);
            if (c) {
                if (set_choice(c, val, o, err, err_len)) goto cleanup;
                continue;
            }
        }
        if (parse_u64(val, &v)) {
            fmt_err(err, err_len, "options: %s=%s: expected a non-negative integer", kv, val);
            goto cleanup;
        }
        if (!strcmp(kv, "device")) o->device = (int)v;
        else if (!strcmp(kv, "graph") && v <= 1) o->graph = (int)v;
        else if (!strcmp(kv, "profile") && v <= 1) o->profile = (int)v;
        else if (!strcmp(kv, "pdl") && v <= 1) o->pdl = (int)v;
        else if (!strcmp(kv, "gemv_prefetch") && v <= 1) o->gemv_prefetch = (int)v;
        else if (!strcmp(kv, "pf_next") && v <= 64) o->pf_next_mb = (int)v;
        else if (!strcmp(kv, "gemv_early") && v <= 1) o->gemv_early = (int)v;
        else if (!strcmp(kv, "q8t_kb") && v >= 16 && v <= 227) o->q8t_kb = (int)v;
        else if (!strcmp(kv, "q8t_sm") && v >= 1 && v <= 4) o->q8t_sm = (int)v;
        else if (!strcmp(kv, "q8t_xs") && v <= 1) o->q8t_xs = (int)v;
        else if (!strcmp(kv, "q8t_wu") && v <= 2) o->q8t_wu = (int)v;
        else if (!strcmp(kv, "q8t_wkb") && (v == 0 || (v >= 16 && v <= 227))) o->q8t_wkb = (int)v;
        else if (!strcmp(kv, "q8t_skip") && v <= 15) o->q8t_skip = (int)v;
        else if (!strcmp(kv, "norm_tail") && v <= 1) o->norm_tail = (int)v;
        else if (!strcmp(kv, "attn_short") && v <= 4096) o->attn_short = (int)v;
        else if (!strcmp(kv, "attn_cl") && v <= INT_MAX) o->attn_cl = (int)v;
        else if (!strcmp(kv, "attn_clsize") && v >= 2 && v <= 8) o->attn_clsize = (int)v;
        else if (!strcmp(kv, "delta_pf") && v <= 1) o->delta_pf = (int)v;
        else if (!strcmp(kv, "delta_trig") && v <= 3) o->delta_trig = (int)v;
        else if (!strcmp(kv, "prep_early") && v <= 2) o->prep_early = (int)v;
        else if (!strcmp(kv, "attn_early") && v <= 1) o->attn_early = (int)v;
        else if (!strcmp(kv, "attn_fuse") && v <= 3) o->attn_fuse = (int)v;
        else if (!strcmp(kv, "attn_kvc") && (v == 0 || (v >= 2 && v <= 16))) o->attn_kvc = (int)v;
        else if (!strcmp(kv, "attn_kvc_from") && v <= INT_MAX) o->attn_kvc_from = (int)v;
        else if (!strcmp(kv, "attn_kvc_tm") && v <= 1) o->attn_kvc_tm = (int)v;
        else if (!strcmp(kv, "attn_kvc_to") && v <= INT_MAX) o->attn_kvc_to = (int)v;
        else if (!strcmp(kv, "attn_kvc_sp") && v >= 1 && v <= 32) o->attn_kvc_sp = (int)v;
        else if (!strcmp(kv, "attn_kvc_push") && v <= 1) o->attn_kvc_push = (int)v;
        else if (!strcmp(kv, "attn_cl_push") && v <= 1) o->attn_cl_push = (int)v;
        else if (!strcmp(kv, "norm_lean") && v <= 1) o->norm_lean = (int)v;
        else if (!strcmp(kv, "norm_split") && v >= 1 && v <= 32) o->norm_split = (int)v;
        else if (!strcmp(kv, "q8t_half") && v <= 1) o->q8t_half = (int)v;
        else if (!strcmp(kv, "q8t_bch") && v <= 1) o->q8t_bch = (int)v;
        else if (!strcmp(kv, "carveout") && v <= 101) o->carveout = v == 101 ? -1 : (int)v;
        else if (!strcmp(kv, "q8t_okb") && (v == 0 || (v >= 16 && v <= 227))) o->q8t_okb = (int)v;
        else if (!strcmp(kv, "q8t_osm") && v <= 4) o->q8t_osm = (int)v;
        else if (!strcmp(kv, "q8t_ogrid") && v <= 1024) o->q8t_ogrid = (int)v;
        else if (!strcmp(kv, "ctx") && v >= 1 && v <= 0x7fffffff) o->ctx = (int)v;
        else if (!strcmp(kv, "vram_limit")) o->vram_limit = v;
        else if (!strcmp(kv, "gemv_rpw") && (v == 0 || v == 1 || v == 2 || v == 4)) o->gemv_rpw = (int)v;
        else if (!strcmp(kv, "gemv_unroll") && (v == 0 || v == 1 || v == 2 || v == 4)) o->gemv_unroll = (int)v;
        else if (!strcmp(kv, "threads")) { /* accepted: the suite runner passes it to every engine */ }
        else {
            fmt_err(err, err_len, "options: unknown key or bad value '%s=%s' (device, graph=0|1, profile=0|1|trace, pdl=0|1, "
                                  "ctx, vram_limit, delta, dot=q8|f32, q8gemv=xs|stream|tma, q8t_kb=16..227, q8t_sm=1..4, q8t_xs=0|1, q8t_wu=0|1|2, q8t_wkb=0|16..227, q8t_skip=0..15, q8t_okb=0|16..227, q8t_osm=0..4, q8t_ogrid=auto|0..1024, carveout=0..100|101, rms_fold=0|1|in|ffn|auto, norm_tail=0|1, attn_short=0..4096, attn_cl=0..2147483647, attn_clsize=2..8, delta_pf=0|1, delta_trig=0..3, prep_early=0..2, attn_early=0|1, attn_fuse=0..3, attn_kvc=auto|0|2..16, attn_kvc_from=0..2147483647, attn_kvc_tm=0|1, attn_kvc_to=0..2147483647, attn_kvc_sp=auto|1..32, attn_kvc_push=0|1, attn_cl_push=0|1, norm_lean=0|1, norm_split=1..32, q8t_half=0|1, q8t_bch=0|1, q8wide=stream|nc|smem|xs, ffn=split|fused|ring, gdn=split|fused, attn=split|gqa|short, attn_long=split|gqa, gemv=reg|pipe, gemv_rpw=0|1|2|4, gemv_unroll=0|1|2|4, gemv_prefetch=0|1, gemv_early=0|1, pf_next=0..64, threads)", kv, val);
            goto cleanup;
        }
    }
    if (o->attn_kvc_sp > 1 && !o->attn_kvc_tm) {
        fmt_err(err, err_len, "options: attn_kvc_sp=%d needs attn_kvc_tm=1 (attention_kvcx reads the caches by tensor "
                              "maps)", o->attn_kvc_sp);
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(dup);
    return rc;
}

/* ------------------------------------------------------------------ GGUF -> model */

typedef struct loader {
    gguf_file *f;
    kc_model *m;
    uint64_t wbytes; /* bytes read per step */
    char *err;
    size_t err_len;
} loader;

static int get_int(loader *ld, const char *key, int64_t lo, int64_t hi, int *out)
{
    int64_t v;
    char k[128];
    snprintf(k, sizeof k, "qwen35.%s", key);
    if (gguf_get_int(ld->f, k, &v, ld->err, ld->err_len)) return -1;
    if (v < lo || v > hi) {
        fmt_err(ld->err, ld->err_len, "%s: key '%s' = %lld is out of the range the CUDA engine supports [%lld, %lld]",
                ld->f->path, k, (long long)v, (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int load_mat(loader *ld, const char *name, int64_t rows, int64_t cols, kc_mat *out)
{
    const gguf_tensor *t;
    const uint64_t ne[2] = {(uint64_t)cols, (uint64_t)rows};
    if (gguf_expect_tensor(ld->f, name, MAT_TYPES, 2, ne, &t, ld->err, ld->err_len)) return -1;
    if (!kc_mat_supported(t->type, cols)) {
        fmt_err(ld->err, ld->err_len, "%s: tensor '%s': %lld columns: the CUDA GEMV needs a multiple of 32",
                ld->f->path, name, (long long)cols);
        return -1;
    }
    if (kc_upload_mat(ld->m, out, t->type, rows, cols, t->data, name)) {
        fmt_err(ld->err, ld->err_len, "%s: tensor '%s': %s", ld->f->path, name, ld->m->err);
        return -1;
    }
    ld->wbytes += kc_mat_data_bytes(t->type, rows, cols) + kc_mat_scale_bytes(t->type, rows, cols);
    return 0;
}

/* A small tensor of n1 x n0 elements (n1 == 0: one-dimensional {n0}) to f32 on the device. */
static int load_vec(loader *ld, const char *name, int64_t n0, int64_t n1, float **out)
{
    int rc = -1;
    const gguf_tensor *t;
    float *h = NULL;
    const uint64_t ne[2] = {(uint64_t)n0, (uint64_t)n1};
    const int64_t n = n1 ? n0 * n1 : n0;
    if (gguf_expect_tensor(ld->f, name, VEC_TYPES, n1 ? 2 : 1, ne, &t, ld->err, ld->err_len)) goto cleanup;
    h = (float *)malloc((size_t)n * sizeof *h);
    if (!h) {
        fmt_err(ld->err, ld->err_len, "%s: tensor '%s': out of host memory", ld->f->path, name);
        goto cleanup;
    }
    dequantize_row(t->type, t->data, h, n);
    if (kc_upload_f32(ld->m, out, h, (size_t)n)) {
        fmt_err(ld->err, ld->err_len, "%s: tensor '%s': %s", ld->f->path, name, ld->m->err);
        goto cleanup;
    }
    ld->wbytes += (uint64_t)n * ggml_row_bytes(t->type, 1);
    rc = 0;
cleanup:
    free(h);
    return rc;
}

static int load_model(loader *ld, const kc_opts *o, kestrel_engine *e)
{
    int rc = -1;
    kc_model *m = ld->m;
    kc_dims *d = &m->dm;
    char *arch = NULL;
    char nm[128];
    int inner = 0, interval = 4, ctx_len = 0;
    const gguf_tensor *te;
    double fv;
    const char *p = ld->f->path;

    if (gguf_get_str(ld->f, "general.architecture", &arch, ld->err, ld->err_len)) goto cleanup;
    if (strcmp(arch, "qwen35") != 0) {
        fmt_err(ld->err, ld->err_len, "%s: key 'general.architecture' is '%s', the CUDA engine reads 'qwen35'",
                p, arch);
        goto cleanup;
    }
    if (get_int(ld, "block_count", 1, 4096, &d->n_layers) || get_int(ld, "embedding_length", 32, 1 << 20, &d->n_embd) ||
        get_int(ld, "feed_forward_length", 32, 1 << 22, &d->n_ff) ||
        get_int(ld, "attention.head_count", 1, 4096, &d->nh) ||
        get_int(ld, "attention.head_count_kv", 1, 4096, &d->nkv) ||
        get_int(ld, "attention.key_length", 2, 4096, &d->hd) ||
        get_int(ld, "rope.dimension_count", 0, 4096, &d->rope_dim) ||
        get_int(ld, "ssm.conv_kernel", 1, 64, &d->conv_k) || get_int(ld, "ssm.state_size", 1, 4096, &d->kd) ||
        get_int(ld, "ssm.group_count", 1, 4096, &d->kh) || get_int(ld, "ssm.time_step_rank", 1, 65536, &d->vh) ||
        get_int(ld, "ssm.inner_size", 1, 1 << 24, &inner))
        goto cleanup;
    if (gguf_find_kv(ld->f, "qwen35.full_attention_interval") &&
        get_int(ld, "full_attention_interval", 1, 4096, &interval))
        goto cleanup;
    if (gguf_find_kv(ld->f, "qwen35.context_length") && get_int(ld, "context_length", 1, 1 << 30, &ctx_len))
        goto cleanup;
    if (gguf_get_float(ld->f, "qwen35.attention.layer_norm_rms_epsilon", &fv, ld->err, ld->err_len)) goto cleanup;
    d->eps = (float)fv;
    d->rope_base = 10000.0f;
    if (gguf_find_kv(ld->f, "qwen35.rope.freq_base")) {
        if (gguf_get_float(ld->f, "qwen35.rope.freq_base", &fv, ld->err, ld->err_len)) goto cleanup;
        d->rope_base = (float)fv;
    }
    /* shapes the kernels serve; anything else is refused here, never computed wrongly */
    if (inner % d->vh) {
        fmt_err(ld->err, ld->err_len, "%s: key 'qwen35.ssm.inner_size' = %d is not a multiple of "
                "ssm.time_step_rank = %d", p, inner, d->vh);
        goto cleanup;
    }
    d->vd = inner / d->vh;
    d->conv_dim = 2 * d->kh * d->kd + d->vh * d->vd;
    if (d->vh % d->kh || d->nh % d->nkv || d->rope_dim % 2 || d->rope_dim > d->hd || d->kd > 4096 ||
        d->n_embd % 32 || d->n_ff % 32 || inner % 32 || (d->nh * d->hd) % 32) {
        fmt_err(ld->err, ld->err_len, "%s: unsupported shape for the CUDA kernels (need vh %% kh == 0 [%d, %d], "
                "head_count %% head_count_kv == 0 [%d, %d], even rope dims <= key_length [%d, %d], "
                "state_size <= 4096 [%d], and embedding, feed_forward, inner and heads*key_length multiples of 32 "
                "[%d, %d, %d, %d])", p, d->vh, d->kh, d->nh, d->nkv, d->rope_dim, d->hd, d->kd, d->n_embd, d->n_ff,
                inner, d->nh * d->hd);
        goto cleanup;
    }
    te = gguf_find_tensor(ld->f, "token_embd.weight");
    if (!te || te->n_dims != 2 || te->ne[0] != (uint64_t)d->n_embd || te->ne[1] < 1 || te->ne[1] > 0x7fffffff) {
        fmt_err(ld->err, ld->err_len, "%s: tensor 'token_embd.weight': missing or not {%d, n_vocab}", p, d->n_embd);
        goto cleanup;
    }
    d->n_vocab = (int)te->ne[1];
    d->ctx = o->ctx ? o->ctx : (ctx_len && ctx_len < 4096 ? ctx_len : 4096);
    if (d->ctx > kc_attention_max_ctx()) {
        fmt_err(ld->err, ld->err_len, "%s: ctx=%d exceeds the %d positions the attention kernel serves", p, d->ctx,
                kc_attention_max_ctx());
        goto cleanup;
    }
    m->layers = (kc_layer *)calloc((size_t)d->n_layers, sizeof *m->layers);
    e->layer_types = (uint8_t *)calloc((size_t)d->n_layers, 1);
    if (!m->layers || !e->layer_types) {
        fmt_err(ld->err, ld->err_len, "%s: out of host memory", p);
        goto cleanup;
    }
    for (int l = 0; l < d->n_layers; l++) {
        kc_layer *L = &m->layers[l];
        const int D = d->n_embd;
        L->type = (l + 1) % interval == 0 ? KESTREL_LAYER_ATTN : KESTREL_LAYER_GDN;
        L->gdn_index = L->attn_index = -1;
        e->layer_types[l] = (uint8_t)L->type;
#define BLK(s) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), nm)
        if (load_vec(ld, BLK("attn_norm.weight"), D, 0, &L->attn_norm) ||
            load_vec(ld, BLK("post_attention_norm.weight"), D, 0, &L->post_norm) ||
            load_mat(ld, BLK("ffn_gate.weight"), d->n_ff, D, &L->ffn_gate) ||
            load_mat(ld, BLK("ffn_up.weight"), d->n_ff, D, &L->ffn_up) ||
            load_mat(ld, BLK("ffn_down.weight"), D, d->n_ff, &L->ffn_down))
            goto cleanup;
        if (L->ffn_gate.type != L->ffn_up.type) {
            fmt_err(ld->err, ld->err_len, "%s: tensor 'blk.%d.ffn_up.weight': type differs from ffn_gate "
                    "(the fused SwiGLU GEMV needs one type)", p, l);
            goto cleanup;
        }
        if (L->type == KESTREL_LAYER_GDN) {
            L->gdn_index = m->n_gdn++;
            if (load_mat(ld, BLK("attn_qkv.weight"), d->conv_dim, D, &L->qkv) ||
                load_mat(ld, BLK("attn_gate.weight"), inner, D, &L->z) ||
                load_mat(ld, BLK("ssm_beta.weight"), d->vh, D, &L->beta_w) ||
                load_mat(ld, BLK("ssm_alpha.weight"), d->vh, D, &L->alpha_w) ||
                load_mat(ld, BLK("ssm_out.weight"), D, inner, &L->out) ||
                load_vec(ld, BLK("ssm_conv1d.weight"), d->conv_k, d->conv_dim, &L->conv_w) ||
                load_vec(ld, BLK("ssm_a"), d->vh, 0, &L->ssm_a) ||
                load_vec(ld, BLK("ssm_dt.bias"), d->vh, 0, &L->dt_bias) ||
                load_vec(ld, BLK("ssm_norm.weight"), d->vd, 0, &L->ssm_norm))
                goto cleanup;
        } else {
            L->attn_index = m->n_attn++;
            if (load_mat(ld, BLK("attn_q.weight"), (int64_t)d->nh * 2 * d->hd, D, &L->wq) ||
                load_mat(ld, BLK("attn_k.weight"), (int64_t)d->nkv * d->hd, D, &L->wk) ||
                load_mat(ld, BLK("attn_v.weight"), (int64_t)d->nkv * d->hd, D, &L->wv) ||
                load_mat(ld, BLK("attn_output.weight"), D, (int64_t)d->nh * d->hd, &L->wo) ||
                load_vec(ld, BLK("attn_q_norm.weight"), d->hd, 0, &L->q_norm) ||
                load_vec(ld, BLK("attn_k_norm.weight"), d->hd, 0, &L->k_norm))
                goto cleanup;
        }
#undef BLK
    }
    {
        const uint64_t before = ld->wbytes;
        if (load_mat(ld, "token_embd.weight", d->n_vocab, d->n_embd, &m->tok_embd)) goto cleanup;
        ld->wbytes = before; /* one row per step, not counted */
    }
    if (load_vec(ld, "output_norm.weight", d->n_embd, 0, &m->out_norm)) goto cleanup;
    if (gguf_find_tensor(ld->f, "output.weight")) {
        if (load_mat(ld, "output.weight", d->n_vocab, d->n_embd, &m->lm_head)) goto cleanup;
    } else {
        m->lm_head = m->tok_embd; /* tied */
        ld->wbytes += kc_mat_data_bytes(m->tok_embd.type, d->n_vocab, d->n_embd) +
                      kc_mat_scale_bytes(m->tok_embd.type, d->n_vocab, d->n_embd);
    }
    m->delta_variant = o->delta;
    if (o->delta == 1 && !(d->kd == 128 && d->vd == 128)) {
        fmt_err(ld->err, ld->err_len, "%s: option delta=reg needs ssm.state_size == 128 and a value head dim of 128 "
                "(model: %d, %d)", p, d->kd, d->vd);
        goto cleanup;
    }
    if (kc_model_alloc_runtime(m)) {
        fmt_err(ld->err, ld->err_len, "%s: %s", p, m->err);
        goto cleanup;
    }
    e->weight_bytes = ld->wbytes;
    e->state_bytes = (uint64_t)m->n_gdn * (2ull * d->vh * d->kd * d->vd + 2ull * (d->conv_k - 1) * d->conv_dim) * 4;
    rc = 0;
cleanup:
    free(arch);
    return rc;
}

kc_model *kc_engine_model(kestrel_engine *e) { return e->m; }

static void engine_free(kestrel_engine *e)
{
    if (!e) return;
    kc_model_free(e->m);
    free(e->layer_types);
    free(e->cap_h);
    free(e->cap_hf);
    free(e);
}

static int kc_open(const char *model_path, const char *options, kestrel_engine **out, char *err, size_t err_len)
{
    int rc = -1, ndev = 0;
    kc_opts o;
    loader ld;
    gguf_file *f = NULL;
    kestrel_engine *e = NULL;
    cudaDeviceProp prop;
    cudaError_t ce;

    *out = NULL;
    if (err && err_len) err[0] = 0;
    if (parse_opts(options, &o, err, err_len)) goto cleanup;
    ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || o.device >= ndev) {
        fmt_err(err, err_len, "%s: no CUDA device %d (%s; %d visible)", model_path, o.device,
                ce != cudaSuccess ? cudaGetErrorName(ce) : "cudaSuccess", ce == cudaSuccess ? ndev : 0);
        (void)cudaGetLastError();
        goto cleanup;
    }
    ce = cudaSetDevice(o.device);
    if (ce == cudaSuccess) ce = cudaGetDeviceProperties(&prop, o.device);
    if (ce != cudaSuccess) {
        fmt_err(err, err_len, "%s: device %d: %s (%s)", model_path, o.device, cudaGetErrorName(ce),
                cudaGetErrorString(ce));
        (void)cudaGetLastError();
        goto cleanup;
    }
    e = (kestrel_engine *)calloc(1, sizeof *e);
    if (e) e->m = (kc_model *)calloc(1, sizeof *e->m);
    if (!e || !e->m) {
        fmt_err(err, err_len, "%s: out of host memory", model_path);
        goto cleanup;
    }
    e->device = o.device;
    snprintf(e->device_name, sizeof e->device_name, "%s (device %d, sm_%d%d, %d SMs)", prop.name, o.device,
             prop.major, prop.minor, prop.multiProcessorCount);
    e->m->use_graph = o.graph;
    e->m->prof = o.profile;
    e->m->vram_limit = o.vram_limit;
    e->m->gemv_rpw = o.gemv_rpw;
    e->m->gemv_kind = o.gemv_kind;
    e->m->dot_q8 = o.dot_q8;
    e->m->pdl = o.pdl;
    e->m->gemv_prefetch = o.gemv_prefetch;
    e->m->pf_bytes = (size_t)o.pf_next_mb << 20;
    e->m->q8wide = o.q8wide;
    e->m->gemv_early = o.gemv_early;
    e->m->ffn_fused = o.ffn_fused;
    e->m->gdn_fused = o.gdn_fused;
    e->m->attn_gqa = o.attn_gqa;
    e->m->attn_short = o.attn_short;
    e->m->attn_cl = o.attn_cl;
    e->m->attn_clsize = o.attn_clsize;
    e->m->attn_long = o.attn_long;
    e->m->delta_pf = o.delta_pf;
    e->m->delta_trig = o.delta_trig;
    e->m->prep_early = o.prep_early;
    e->m->attn_early = o.attn_early;
    e->m->attn_fuse = o.attn_fuse;
    e->m->attn_kvc = o.attn_kvc;
    e->m->attn_kvc_from = o.attn_kvc_from;
    e->m->attn_kvc_tm = o.attn_kvc_tm;
    e->m->attn_kvc_to = o.attn_kvc_to;
    e->m->attn_kvc_sp = o.attn_kvc_sp;
    e->m->attn_kvc_push = o.attn_kvc_push;
    e->m->attn_cl_push = o.attn_cl_push;
    e->m->norm_lean = o.norm_lean;
    e->m->norm_split = o.norm_split;
    e->m->q8t_half = o.q8t_half;
    e->m->q8t_bch = o.q8t_bch;
    e->m->q8kind = o.q8kind;
    e->m->q8t_kb = o.q8t_kb;
    e->m->q8t_sm = o.q8t_sm;
    e->m->q8t_wkb = o.q8t_wkb;
    e->m->q8t_xs = o.q8t_xs;
    e->m->q8t_wu = o.q8t_wu;
    e->m->q8t_skip = o.q8t_skip;
    e->m->carveout = o.carveout;
    e->m->rms_fold = o.rms_fold;
    e->m->norm_tail = o.norm_tail;
    e->m->q8t_okb = o.q8t_okb;
    e->m->q8t_osm = o.q8t_osm;
    e->m->q8t_ogrid = o.q8t_ogrid;
    e->m->gemv_unroll = o.gemv_unroll;
    if (gguf_open(model_path, &f, err, err_len)) goto cleanup;
    ld.f = f;
    ld.m = e->m;
    ld.wbytes = 0;
    ld.err = err;
    ld.err_len = err_len;
    if (load_model(&ld, &o, e)) goto cleanup;
    if (kc_model_reset(e->m)) {
        fmt_err(err, err_len, "%s: %s", model_path, e->m->err);
        goto cleanup;
    }
    *out = e;
    e = NULL;
    rc = 0;
cleanup:
    gguf_close(f);
    engine_free(e);
    return rc;
}

static int kc_info(kestrel_engine *e, kestrel_info *out)
{
    const kc_dims *d = &e->m->dm;
    memset(out, 0, sizeof *out);
    out->engine_name = "kestrel-cuda";
    out->engine_version = KC_VERSION;
    out->build_flags = KC_BUILD_FLAGS;
    out->device = e->device_name;
    out->n_vocab = d->n_vocab;
    out->n_layers = d->n_layers;
    out->n_embd = d->n_embd;
    out->max_context = d->ctx;
    out->layer_types = e->layer_types;
    out->weight_bytes_per_token = e->weight_bytes;
    out->state_bytes_per_token = e->state_bytes;
    return 0;
}

static int engine_err(kestrel_engine *e)
{
    snprintf(e->err, sizeof e->err, "%s", e->m->err);
    return -1;
}

static int kc_reset(kestrel_engine *e)
{
    e->err[0] = 0;
    if (cudaSetDevice(e->device) != cudaSuccess) {
        snprintf(e->err, sizeof e->err, "reset: cudaSetDevice(%d) failed", e->device);
        return -1;
    }
    if (kc_model_reset(e->m)) return engine_err(e);
    e->pos = 0;
    e->last_n = 0;
    e->captured = 0;
    return 0;
}

static int kc_forward(kestrel_engine *e, const int32_t *tokens, int32_t n, uint32_t flags, float *logits,
                      int32_t *argmax)
{
    int rc = -1;
    kc_model *m = e->m;
    const kc_dims *d = &m->dm;
    const int all = (flags & KESTREL_FWD_ALL_LOGITS) != 0, cap = (flags & KESTREL_FWD_CAPTURE) != 0;
    const size_t D = (size_t)d->n_embd, V = (size_t)d->n_vocab;
    e->err[0] = 0;
    if (n <= 0 || !tokens) {
        snprintf(e->err, sizeof e->err, "forward: n = %d tokens (need >= 1)", n);
        return -1;
    }
    if (flags & ~(uint32_t)(KESTREL_FWD_ALL_LOGITS | KESTREL_FWD_CAPTURE)) {
        snprintf(e->err, sizeof e->err, "forward: unknown flags 0x%x", flags);
        return -1;
    }
    if (m->n_attn && (int64_t)e->pos + n > d->ctx) {
        snprintf(e->err, sizeof e->err, "forward: positions %d..%d exceed ctx=%d (open with a larger ctx=)", e->pos,
                 e->pos + n - 1, d->ctx);
        return -1;
    }
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= d->n_vocab) {
            snprintf(e->err, sizeof e->err, "forward: token %d at index %d is outside the vocabulary [0, %d)",
                     tokens[i], i, d->n_vocab);
            return -1;
        }
    if (cudaSetDevice(e->device) != cudaSuccess) {
        snprintf(e->err, sizeof e->err, "forward: cudaSetDevice(%d) failed", e->device);
        return -1;
    }
    if (cap) {
        const size_t need = (size_t)n * d->n_layers * D;
        if (need > e->cap_size) {
            float *nh = (float *)realloc(e->cap_h, need * sizeof(float));
            if (!nh) {
                snprintf(e->err, sizeof e->err, "forward: out of host memory for capture (%zu floats)", need);
                return -1;
            }
            e->cap_h = nh;
            float *nf = (float *)realloc(e->cap_hf, (size_t)n * D * sizeof(float));
            if (!nf) {
                snprintf(e->err, sizeof e->err, "forward: out of host memory for capture");
                return -1;
            }
            e->cap_hf = nf;
            e->cap_size = need;
        }
    }
    e->captured = 0;
    if (kc_model_reserve_tokens(m, n)) goto fail;
    KC_CK(m, cudaMemcpyAsync(m->tokens, tokens, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, m->st));
    KC_CK(m, cudaMemsetAsync(&m->ctl->idx, 0, sizeof(int32_t), m->st));
    for (int32_t i = 0; i < n; i++) {
        const int want = all || i == n - 1;
        if (kc_model_step(m, want, cap, e->pos + i + 1)) goto fail;
        if (want && logits)
            KC_CK(m, cudaMemcpyAsync(logits + (all ? (size_t)i * V : 0), m->logits, V * sizeof(float),
                                     cudaMemcpyDeviceToHost, m->st));
        if (cap) {
            KC_CK(m, cudaMemcpyAsync(e->cap_h + (size_t)i * d->n_layers * D, m->hcap,
                                     (size_t)d->n_layers * D * sizeof(float), cudaMemcpyDeviceToHost, m->st));
            KC_CK(m, cudaMemcpyAsync(e->cap_hf + (size_t)i * D, m->xf, D * sizeof(float), cudaMemcpyDeviceToHost,
                                     m->st));
        }
    }
    if (argmax) {
        if (all)
            KC_CK(m, cudaMemcpyAsync(argmax, m->argmax, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost, m->st));
        else
            KC_CK(m, cudaMemcpyAsync(argmax, m->argmax + (n - 1), sizeof(int32_t), cudaMemcpyDeviceToHost, m->st));
    }
    KC_CK(m, cudaStreamSynchronize(m->st));
    KC_CK(m, cudaGetLastError());
    e->pos += n;
    e->last_n = n;
    e->captured = cap;
    rc = 0;
    return rc;
cleanup:
fail:
    /* the sequence state is now undefined: the caller must reset() */
    (void)cudaStreamSynchronize(m->st);
    (void)cudaGetLastError();
    e->last_n = 0;
    return engine_err(e);
}

static int kc_readback(kestrel_engine *e, const char *name, int32_t layer, int32_t pos, float *out, size_t cap,
                       size_t *n_out)
{
    int rc = -1;
    kc_model *m = e->m;
    const kc_dims *d = &m->dm;
    const float *src = NULL; /* device */
    const float *hsrc = NULL; /* host */
    size_t n = 0;
    const int per_pos = !strcmp(name, "h") || !strcmp(name, "hfinal");
    e->err[0] = 0;
    if (!name || !n_out) {
        snprintf(e->err, sizeof e->err, "readback: NULL name or n_out");
        return -1;
    }
    if (e->last_n == 0) {
        snprintf(e->err, sizeof e->err, "readback '%s': no forward() since open/reset", name);
        return -1;
    }
    if (per_pos) {
        if (!e->captured) {
            snprintf(e->err, sizeof e->err, "readback '%s': the last forward() had no KESTREL_FWD_CAPTURE", name);
            return -1;
        }
        if (pos < 0 || pos >= e->last_n) {
            snprintf(e->err, sizeof e->err, "readback '%s': pos %d outside [0, %d)", name, pos, e->last_n);
            return -1;
        }
        n = (size_t)d->n_embd;
        if (!strcmp(name, "hfinal")) {
            hsrc = e->cap_hf + (size_t)pos * n;
        } else {
            if (layer < 0 || layer >= d->n_layers) {
                snprintf(e->err, sizeof e->err, "readback 'h': layer %d outside [0, %d)", layer, d->n_layers);
                return -1;
            }
            hsrc = e->cap_h + ((size_t)pos * d->n_layers + layer) * n;
        }
    } else {
        if (pos != -1 && pos != e->last_n - 1) {
            snprintf(e->err, sizeof e->err, "readback '%s': state names need pos -1 or %d (got %d)", name,
                     e->last_n - 1, pos);
            return -1;
        }
        if (layer < 0 || layer >= d->n_layers) {
            snprintf(e->err, sizeof e->err, "readback '%s': layer %d outside [0, %d)", name, layer, d->n_layers);
            return -1;
        }
        const kc_layer *L = &m->layers[layer];
        if (L->type != KESTREL_LAYER_GDN) {
            snprintf(e->err, sizeof e->err, "readback '%s': layer %d is an attention layer, not GDN", name, layer);
            return -1;
        }
        const kc_gdn_scratch *g = &m->gs[L->gdn_index];
        const size_t qk = (size_t)d->kh * d->kd, vv = (size_t)d->vh * d->vd;
        if (!strcmp(name, "S")) { src = m->S + (size_t)L->gdn_index * vv * d->kd; n = vv * d->kd; }
        else if (!strcmp(name, "conv")) {
            n = (size_t)(d->conv_k - 1) * d->conv_dim;
            src = m->hist + (size_t)L->gdn_index * n;
        }
        else if (!strcmp(name, "qkv")) { src = g->raw; n = (size_t)d->conv_dim; }
        else if (!strcmp(name, "q")) { src = g->qn; n = qk; }     /* after conv, L2 norm, 1/sqrt(kd) */
        else if (!strcmp(name, "k")) { src = g->kn; n = qk; }     /* after conv, L2 norm */
        else if (!strcmp(name, "v")) { src = g->conv + 2 * qk; n = vv; } /* after conv */
        else if (!strcmp(name, "q_conv")) { src = g->conv; n = qk; } /* after conv, before the norm */
        else if (!strcmp(name, "k_conv")) { src = g->conv + qk; n = qk; }
        else if (!strcmp(name, "z")) { src = g->z; n = vv; }
        else if (!strcmp(name, "b")) { src = g->b; n = (size_t)d->vh; }
        else if (!strcmp(name, "a")) { src = g->a; n = (size_t)d->vh; }
        else if (!strcmp(name, "beta")) { src = g->beta; n = (size_t)d->vh; }
        else if (!strcmp(name, "g")) { src = g->g; n = (size_t)d->vh; }
        else if (!strcmp(name, "o")) { src = g->o; n = vv; }
        else if (!strcmp(name, "o_norm")) { src = g->o_norm; n = vv; }
        else {
            snprintf(e->err, sizeof e->err, "readback: unknown name '%s' (h, hfinal, S, conv, qkv, q, k, v, q_conv, "
                     "k_conv, z, b, a, beta, g, o, o_norm)", name);
            return -1;
        }
    }
    *n_out = n;
    if (!out) return 0;
    if (cap < n) {
        snprintf(e->err, sizeof e->err, "readback '%s': %zu floats needed, cap is %zu", name, n, cap);
        return -1;
    }
    if (hsrc) {
        memcpy(out, hsrc, n * sizeof(float));
        return 0;
    }
    KC_CK(m, cudaSetDevice(e->device));
    KC_CK(m, cudaMemcpy(out, src, n * sizeof(float), cudaMemcpyDeviceToHost));
    rc = 0;
cleanup:
    if (rc) engine_err(e);
    return rc;
}

static int kc_profile(kestrel_engine *e, kestrel_prof_entry *out, int32_t cap, int32_t *n)
{
    kc_model *m = e->m;
    *n = m->prof ? m->prof_n_names : 0;
    for (int i = 0; i < *n && i < cap; i++) {
        snprintf(out[i].name, sizeof out[i].name, "%s", m->prof_names[i]);
        out[i].calls = m->prof_calls[i];
        out[i].total_ms = m->prof_ms[i];
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int kc_bandwidth_probe(const char *options, uint64_t bytes, int32_t iterations, double *gbps, char *err,
                              size_t err_len)
{
    int rc = -1, blocks = 0;
    kc_opts o;
    void *buf = NULL;
    uint32_t *sink = NULL;
    double *ms = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t st = NULL;
    cudaDeviceProp prop;
    kc_model em; /* only for the error macro */
    kc_model *m = &em;
    memset(&em, 0, sizeof em);
    if (parse_opts(options, &o, err, err_len)) return -1;
    if (iterations < 1 || bytes < 16) {
        fmt_err(err, err_len, "bandwidth_probe: need iterations >= 1 and bytes >= 16 (got %d, %llu)", iterations,
                (unsigned long long)bytes);
        return -1;
    }
    bytes &= ~(uint64_t)15;
    ms = (double *)calloc((size_t)iterations, sizeof *ms);
    if (!ms) {
        fmt_err(err, err_len, "bandwidth_probe: out of host memory");
        return -1;
    }
    KC_CK(m, cudaSetDevice(o.device));
    KC_CK(m, cudaGetDeviceProperties(&prop, o.device));
    blocks = prop.multiProcessorCount * 4;
    KC_CK(m, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    KC_CK(m, cudaMalloc(&buf, bytes));
    KC_CK(m, cudaMalloc((void **)&sink, sizeof *sink));
    KC_CK(m, cudaMemsetAsync(buf, 1, bytes, st));
    KC_CK(m, cudaEventCreate(&e0));
    KC_CK(m, cudaEventCreate(&e1));
    KC_CK(m, kc_stream_read((const uint4 *)buf, bytes / 16, sink, blocks, st)); /* warm-up */
    for (int i = 0; i < iterations; i++) {
        float t = 0.0f;
        KC_CK(m, cudaEventRecord(e0, st));
        KC_CK(m, kc_stream_read((const uint4 *)buf, bytes / 16, sink, blocks, st));
        KC_CK(m, cudaEventRecord(e1, st));
        KC_CK(m, cudaEventSynchronize(e1));
        KC_CK(m, cudaEventElapsedTime(&t, e0, e1));
        ms[i] = t;
    }
    qsort(ms, (size_t)iterations, sizeof *ms, cmp_double);
    {
        const double med = iterations % 2 ? ms[iterations / 2] : 0.5 * (ms[iterations / 2 - 1] + ms[iterations / 2]);
        *gbps = med > 0 ? (double)bytes / (med * 1e-3) / 1e9 : 0.0;
    }
    rc = 0;
cleanup:
    if (rc && em.err[0]) fmt_err(err, err_len, "bandwidth_probe (%llu bytes): %s", (unsigned long long)bytes, em.err);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (buf) cudaFree(buf);
    if (sink) cudaFree(sink);
    if (st) cudaStreamDestroy(st);
    free(ms);
    return rc;
}

static const char *kc_last_error(kestrel_engine *e) { return e ? e->err : ""; }

static void kc_close(kestrel_engine *e)
{
    if (!e) return;
    (void)cudaSetDevice(e->device);
    engine_free(e);
}

static const kestrel_engine_api kc_api = {
    KESTREL_ENGINE_ABI_VERSION,
    (uint32_t)sizeof(kestrel_engine_api),
    kc_open,
    kc_info,
    kc_reset,
    kc_forward,
    kc_readback,
    kc_profile,
    kc_bandwidth_probe,
    kc_last_error,
    kc_close,
};

extern "C" KESTREL_EXPORT const kestrel_engine_api *kestrel_engine_entry(uint32_t abi_version)
{
    return abi_version == KESTREL_ENGINE_ABI_VERSION ? &kc_api : NULL;
}
