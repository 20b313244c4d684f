/*
 * case_engine_diff.c - the `engine-diff` case kind (issue 6): the case's
 * engine (b) against a reference engine (a) on the SAME model file, both
 * opened in the case's child process.
 *
 * Teacher-forced logits of the case's token list with KESTREL_FWD_ALL_LOGITS
 * on both engines; per position max_rel = max|b - a| / max|a| (max_rel_row);
 * argmax equality; then an optional greedy continuation of N tokens in which
 * each side feeds its own argmax, compared token by token up to the first
 * difference. Metrics and gates: docs/metrics.md ("engine-diff"). This is the
 * pipeline twin of the standalone tool cuda/engine_diff.c, with the same
 * definitions.
 *
 * What it is not: an oracle check. Both sides may be wrong the same way; the
 * f32 oracle cases hold the CPU engine to HF transformers.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "cli.h"
#include "compare.h"
#include "stats.h"

/* dlopen the reference library and open the case's model with ctx->reference_options. 0 ok, else
 * the message is in ctx->error. */
static int open_reference(case_ctx *ctx, engine_lib *lib, kestrel_engine **eng, kestrel_info *info) {
    char e[1024];
    const suite_case *c = ctx->c;
    *eng = NULL;
    if (engine_lib_open(ctx->reference_path, lib, e, sizeof e) != 0) {
        case_error(ctx, "reference engine '%s': %s", c->reference->name, e);
        return -1;
    }
    fprintf(stderr, "case %s: reference engine %s, model %s, options '%s'\n", c->name, lib->path, c->model->path,
            ctx->reference_options);
    e[0] = '\0';
    if (lib->api->open(c->model->path, ctx->reference_options, eng, e, sizeof e) != 0 || !*eng) {
        case_error(ctx, "reference engine '%s': cannot open model '%s': %s", c->reference->name, c->model->name,
                   e[0] ? e : "(no message)");
        *eng = NULL;
        return -1;
    }
    memset(info, 0, sizeof *info);
    if (lib->api->info(*eng, info) != 0) {
        case_error(ctx, "reference engine '%s': info() failed: %s", c->reference->name, lib->api->last_error(*eng));
        return -1;
    }
    emit_ref_engine(ctx->em, info->engine_name, info->engine_version, info->build_flags, info->device);
    return 0;
}

/* The case's tokens fit both engines: ids < n_vocab, prompt + greedy within max_context. */
static int check_inputs(case_ctx *ctx, const kestrel_info *ia, const kestrel_info *ib) {
    const suite_case *c = ctx->c;
    if (ia->n_vocab != ib->n_vocab) {
        case_error(ctx, "engine '%s' reports n_vocab %d, reference engine '%s' %d on model '%s'", c->engine->name,
                   ib->n_vocab, c->reference->name, ia->n_vocab, c->model->name);
        return -1;
    }
    for (int i = 0; i < c->n_tokens; i++)
        if (c->tokens[i] >= ia->n_vocab) {
            case_error(ctx, "tokens[%d] = %d is not a token of model '%s' (n_vocab %d, ids 0..%d)", i, c->tokens[i],
                       c->model->name, ia->n_vocab, ia->n_vocab - 1);
            return -1;
        }
    const int64_t need = (int64_t)c->n_tokens + (c->greedy > 0 ? c->greedy - 1 : 0);
    const int32_t ctx_min = ia->max_context < ib->max_context ? ia->max_context : ib->max_context;
    if (need > ctx_min) {
        case_error(ctx, "%d tokens + greedy %d need %lld positions, the engines hold %d (ctx option)", c->n_tokens,
                   c->greedy, (long long)need, ctx_min);
        return -1;
    }
    return 0;
}

int case_engine_diff(case_ctx *ctx) {
    const suite_case *c = ctx->c;
    const suite_gates *g = &c->gates;
    engine_lib lib_a = {0}, lib_b = {0};          /* a: reference, b: engine under test */
    kestrel_engine *ea = NULL, *eb = NULL;
    kestrel_info ia, ib;
    float *la = NULL, *lb = NULL;                 /* (T, V) teacher-forced logits */
    int32_t *ama = NULL, *amb = NULL;             /* (T,) argmax per position */
    double *rel = NULL;                           /* (T,) per-position max_rel */
    int32_t *ga = NULL, *gb = NULL;               /* (N,) greedy tokens of each side */
    int status = CASE_ERROR;

    if (case_open_engine(ctx, &lib_b, &eb, &ib) != 0) goto cleanup;
    if (open_reference(ctx, &lib_a, &ea, &ia) != 0) goto cleanup;
    if (check_inputs(ctx, &ia, &ib) != 0) goto cleanup;
    const kestrel_engine_api *A = lib_a.api, *B = lib_b.api;
    const int64_t V = ia.n_vocab, T = c->n_tokens, N = c->greedy;
    la = xmalloc(sizeof(float) * (size_t)(T * V));
    lb = xmalloc(sizeof(float) * (size_t)(T * V));
    ama = xmalloc(sizeof(int32_t) * (size_t)T);
    amb = xmalloc(sizeof(int32_t) * (size_t)T);
    rel = xmalloc(sizeof(double) * (size_t)T);

    /* ---- teacher-forced: the same tokens through both engines ---- */
    if (A->reset(ea) != 0 || A->forward(ea, c->tokens, (int32_t)T, KESTREL_FWD_ALL_LOGITS, la, ama) != 0) {
        case_error(ctx, "reference engine '%s': forward of %lld tokens failed: %s", c->reference->name, (long long)T,
                   A->last_error(ea));
        goto cleanup;
    }
    if (B->reset(eb) != 0 || B->forward(eb, c->tokens, (int32_t)T, KESTREL_FWD_ALL_LOGITS, lb, amb) != 0) {
        case_error(ctx, "engine '%s': forward of %lld tokens failed: %s", c->engine->name, (long long)T,
                   B->last_error(eb));
        goto cleanup;
    }
    double worst = -1;
    int64_t worst_pos = 0, n_agree = 0;
    for (int64_t t = 0; t < T; t++) {
        rel[t] = max_rel_row(lb + t * V, la + t * V, V); /* INFINITY when either side is non-finite */
        if (rel[t] > worst) worst = rel[t], worst_pos = t;
        n_agree += ama[t] == amb[t];
    }
    const double median = stats_median(rel, (int)T);

    /* ---- greedy: each side continues from its own argmax, token j+1 from feeding token j ---- */
    int64_t matched = 0, first_diff = -1;
    double gworst = 0;
    int64_t gworst_row = 0, steps = 0; /* greedy steps run (rows 1..steps compared) */
    if (N > 0) {
        ga = xmalloc(sizeof(int32_t) * (size_t)N);
        gb = xmalloc(sizeof(int32_t) * (size_t)N);
        ga[0] = ama[T - 1];
        gb[0] = amb[T - 1];
        for (int64_t j = 0; j < N; j++) {
            if (ga[j] != gb[j]) {
                first_diff = j;
                break;
            }
            matched++;
            if (j + 1 == N) break;
            /* la, lb row 0 are free now: one row of logits per step */
            if (A->forward(ea, &ga[j], 1, 0, la, &ga[j + 1]) != 0) {
                case_error(ctx, "reference engine '%s': greedy step %lld failed: %s", c->reference->name,
                           (long long)j + 1, A->last_error(ea));
                goto cleanup;
            }
            if (B->forward(eb, &gb[j], 1, 0, lb, &gb[j + 1]) != 0) {
                case_error(ctx, "engine '%s': greedy step %lld failed: %s", c->engine->name, (long long)j + 1,
                           B->last_error(eb));
                goto cleanup;
            }
            steps++;
            double r = max_rel_row(lb, la, V);
            if (r > gworst) gworst = r, gworst_row = j + 1;
        }
    }

    /* ---- metrics and gates ---- */
    int pass = 1;
    char text[160], where[176];
    snprintf(text, sizeof text, "pos %lld of %lld", (long long)worst_pos, (long long)T);
    snprintf(where, sizeof where, "(pos %lld)", (long long)worst_pos);
    if (g->max_rel_set)
        pass &= case_gate_le(ctx, "diff_max_rel", worst, "ratio", text, g->max_rel, where);
    else
        emit_metric(ctx->em, "diff_max_rel", 1, worst, "ratio", text, NULL, -1);
    snprintf(text, sizeof text, "median of %lld positions", (long long)T);
    if (g->median_rel_set)
        pass &= case_gate_le(ctx, "diff_median_rel", median, "ratio", text, g->median_rel, NULL);
    else
        emit_metric(ctx->em, "diff_median_rel", 1, median, "ratio", text, NULL, -1);
    const double frac = (double)n_agree / (double)T;
    snprintf(text, sizeof text, "%lld/%lld", (long long)n_agree, (long long)T);
    if (g->min_argmax_set) {
        char gate[64];
        snprintf(gate, sizeof gate, ">= %g", g->min_argmax);
        int ok = frac >= g->min_argmax;
        emit_metric(ctx->em, "diff_argmax_agree", 1, frac, "fraction", text, gate, ok);
        if (!ok) case_error(ctx, "argmax agrees at %s positions, gate %s", text, gate);
        pass &= ok;
    } else {
        emit_metric(ctx->em, "diff_argmax_agree", 1, frac, "fraction", text, NULL, -1);
    }
    if (N > 0) {
        if (first_diff >= 0)
            snprintf(text, sizeof text, "%lld/%lld tokens, first difference at %lld: %d vs reference %d",
                     (long long)matched, (long long)N, (long long)first_diff, gb[first_diff], ga[first_diff]);
        else
            snprintf(text, sizeof text, "%lld/%lld tokens", (long long)matched, (long long)N);
        int ok = matched == N;
        emit_metric(ctx->em, "diff_greedy_match", 1, (double)matched / (double)N, "fraction", text,
                    g->greedy_set ? "exact" : NULL, g->greedy_set ? ok : -1);
        if (g->greedy_set && !ok) case_error(ctx, "greedy continuation %s", text);
        if (g->greedy_set) pass &= ok;
        if (steps > 0)
            snprintf(text, sizeof text, "step %lld of %lld", (long long)gworst_row, (long long)steps);
        else
            snprintf(text, sizeof text, "no greedy step ran");
        emit_metric(ctx->em, "diff_greedy_max_rel", steps > 0, gworst, "ratio", text, NULL, -1);
    }
    status = pass ? CASE_PASS : CASE_FAIL;
cleanup:
    if (eb) lib_b.api->close(eb);
    if (ea) lib_a.api->close(ea);
    engine_lib_close(&lib_b);
    engine_lib_close(&lib_a);
    free(la);
    free(lb);
    free(ama);
    free(amb);
    free(rel);
    free(ga);
    free(gb);
    return status;
}
