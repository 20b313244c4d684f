/*
 * case_oracle.c - the `oracle` case kind: the engine against an oracle dump
 * made by HF transformers (oracle.h), in the case's child process.
 *
 * For every prompt of the dump: reset, forward all tokens teacher-forced with
 * ALL_LOGITS|CAPTURE, compare the logits (compare_rows), the residual stream
 * after every layer ("h" vs p{i}.h.{l}) and after the final norm ("hfinal"),
 * then the greedy continuation: feed the engine's own argmax token by token
 * and compare tokens and logits with p{i}.greedy.*. Metrics and gates are
 * defined in docs/metrics.md. The engine's logits and tokens are archived as
 * outputs for later bitexact comparisons and baselines.
 *
 * Also here: the helpers every case kind shares (cases.h).
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "cli.h"
#include "compare.h"
#include "oracle.h"

/* ============================ shared case helpers ============================ */

void case_error(case_ctx *ctx, const char *fmt, ...) {
    size_t len = strlen(ctx->error);
    if (len + 3 >= sizeof ctx->error) return;
    if (len) {
        memcpy(ctx->error + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error + len, sizeof ctx->error - len, fmt, ap);
    va_end(ap);
}

int case_open_engine(case_ctx *ctx, engine_lib *lib, kestrel_engine **eng, kestrel_info *info) {
    char e[1024];
    const suite_case *c = ctx->c;
    *eng = NULL;
    if (engine_lib_open(ctx->engine_path, lib, e, sizeof e) != 0) {
        case_error(ctx, "%s", e);
        return -1;
    }
    fprintf(stderr, "case %s: engine %s, model %s, options '%s'\n", c->name, lib->path, c->model->path,
            ctx->options);
    e[0] = '\0';
    if (lib->api->open(c->model->path, ctx->options, eng, e, sizeof e) != 0 || !*eng) {
        case_error(ctx, "engine '%s': cannot open model '%s': %s", c->engine->name, c->model->name,
                   e[0] ? e : "(no message)");
        *eng = NULL;
        return -1;
    }
    memset(info, 0, sizeof *info);
    if (lib->api->info(*eng, info) != 0) {
        case_error(ctx, "engine '%s': info() failed: %s", c->engine->name, lib->api->last_error(*eng));
        return -1;
    }
    emit_engine(ctx->em, info->engine_name, info->engine_version, info->build_flags, info->device);
    return 0;
}

int case_gate_le(case_ctx *ctx, const char *metric, double value, const char *unit, const char *text,
                 double limit, const char *where) {
    char gate[64];
    snprintf(gate, sizeof gate, "<= %g", limit);
    int pass = value <= limit; /* NaN fails */
    emit_metric(ctx->em, metric, 1, value, unit, text, gate, pass);
    if (!pass) case_error(ctx, "%s %.3g > %g%s%s", metric, value, limit, where ? " " : "", where ? where : "");
    return pass;
}

void case_lcg_tokens(uint64_t seed, int32_t n_vocab, int32_t *out, int n) {
    /* out: (n,) */
    uint64_t x = seed;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        out[i] = (int32_t)((x >> 33) % (uint64_t)n_vocab);
    }
}

/* ================================ the case ================================= */

typedef struct worst {
    double v; int prompt, layer; int64_t pos; /* v < 0: nothing seen */
} worst;

static void worst_take(worst *w, double v, int prompt, int layer, int64_t pos) {
    if (w->v < 0 || v > w->v || isnan(v)) {
        if (w->v >= 0 && isnan(w->v)) return; /* NaN stays the worst */
        w->v = v;
        w->prompt = prompt;
        w->layer = layer;
        w->pos = pos;
    }
}

int case_oracle(case_ctx *ctx) {
    const suite_case *c = ctx->c;
    const suite_gates *g = &c->gates;
    engine_lib lib = {0};
    kestrel_engine *eng = NULL;
    kestrel_info info;
    oracle *o = NULL;
    float *logits = NULL;  /* (T, V) */
    int32_t *amax = NULL;  /* (T,) */
    float *hbuf = NULL;    /* (D,) */
    float *glog = NULL;    /* (N, V) */
    int32_t *gtok = NULL;  /* (N,) */
    int status = CASE_ERROR;
    char e[1024];

    if (oracle_open(c->oracle->path, &o, e, sizeof e) != 0) {
        case_error(ctx, "oracle '%s': %s", c->oracle->name, e);
        goto cleanup;
    }
    if (case_open_engine(ctx, &lib, &eng, &info) != 0) goto cleanup;
    const kestrel_engine_api *api = lib.api;
    if (o->n_vocab != info.n_vocab || o->n_layers != info.n_layers || o->n_embd != info.n_embd) {
        case_error(ctx, "oracle '%s' (vocab %d, layers %d, embd %d) does not match model '%s' (vocab %d, layers %d, "
                   "embd %d)", c->oracle->name, o->n_vocab, o->n_layers, o->n_embd, c->model->name, info.n_vocab,
                   info.n_layers, info.n_embd);
        goto cleanup;
    }
    const int64_t V = info.n_vocab, D = info.n_embd;
    const int L = info.n_layers;
    const double tol = g->max_rel_set ? g->max_rel : 1e-5;
    worst w_max = {-1, 0, 0, 0}, w_rms = {-1, 0, 0, 0}, w_hid = {-1, 0, 0, 0}, w_greedy = {-1, 0, 0, 0};
    int64_t n_pos = 0, n_out = 0, n_agree = 0, n_nonfinite = 0;
    int64_t greedy_checked = 0, greedy_total = 0;
    int greedy_prompts = 0, diverged = 0, div_prompt = -1;
    int64_t div_pos = -1;
    hbuf = xmalloc(sizeof(float) * (size_t)D);

    for (int p = 0; p < o->n_prompts; p++) {
        const oracle_prompt *pr = &o->prompts[p];
        const int64_t T = pr->n_tokens;
        int64_t N = pr->n_greedy;
        if (c->greedy_tokens > 0 && c->greedy_tokens < N) N = c->greedy_tokens;
        if (T + (N > 0 ? N - 1 : 0) > info.max_context) {
            case_error(ctx, "prompt %d needs %lld positions, the engine holds %d (ctx option)", p,
                       (long long)(T + N - 1), info.max_context);
            goto cleanup;
        }
        logits = xrealloc(logits, sizeof(float) * (size_t)(T * V));
        amax = xrealloc(amax, sizeof(int32_t) * (size_t)T);
        if (api->reset(eng) != 0 ||
            api->forward(eng, pr->tokens, (int32_t)T, KESTREL_FWD_ALL_LOGITS | KESTREL_FWD_CAPTURE, logits, amax) != 0) {
            case_error(ctx, "prompt %d: forward of %lld tokens failed: %s", p, (long long)T, api->last_error(eng));
            goto cleanup;
        }
        compare_stats cs;
        compare_rows(logits, pr->logits, T, V, tol, &cs);
        worst_take(&w_max, cs.worst_max_rel, p, 0, cs.worst_max_rel_pos);
        worst_take(&w_rms, cs.worst_rms_rel, p, 0, cs.worst_rms_rel_pos);
        n_pos += cs.n_pos;
        n_out += cs.n_out_of_tol;
        n_agree += cs.argmax_agree;
        n_nonfinite += cs.n_nonfinite;

        if (c->capture_hidden) {
            for (int l = 0; l <= L; l++) { /* l == L: hfinal */
                for (int64_t t = 0; t < T; t++) {
                    size_t got = 0;
                    const char *name = l < L ? "h" : "hfinal";
                    if (api->readback(eng, name, l < L ? l : -1, (int32_t)t, hbuf, (size_t)D, &got) != 0 ||
                        got != (size_t)D) {
                        case_error(ctx, "prompt %d: readback('%s', layer %d, pos %lld) failed: %s", p, name, l,
                                   (long long)t, got != (size_t)D && got ? "wrong element count" : api->last_error(eng));
                        goto cleanup;
                    }
                    const float *ref = (l < L ? pr->hidden[l] : pr->hfinal) + t * D;
                    worst_take(&w_hid, max_rel_row(hbuf, ref, D), p, l, t);
                }
            }
        }
        int64_t tshape[1] = {T}, lshape[2] = {T, V};
        char name[64];
        snprintf(name, sizeof name, "p%d.tokens", p);
        emit_output(ctx->em, name, "i32", tshape, 1, pr->tokens, T);
        snprintf(name, sizeof name, "p%d.logits", p);
        emit_output(ctx->em, name, "f32", lshape, 2, logits, T * V);

        if (N > 0) {
            /* greedy: row 0 is the last prompt row; token j+1 comes from feeding token j */
            greedy_prompts++;
            glog = xrealloc(glog, sizeof(float) * (size_t)(N * V));
            gtok = xrealloc(gtok, sizeof(int32_t) * (size_t)N);
            memcpy(glog, logits + (T - 1) * V, sizeof(float) * (size_t)V);
            gtok[0] = amax[T - 1];
            for (int64_t j = 1; j < N; j++) {
                if (api->forward(eng, &gtok[j - 1], 1, 0, glog + j * V, &gtok[j]) != 0) {
                    case_error(ctx, "prompt %d: greedy step %lld failed: %s", p, (long long)j, api->last_error(eng));
                    goto cleanup;
                }
            }
            int64_t d = -1;
            for (int64_t j = 0; j < N && d < 0; j++)
                if (gtok[j] != pr->greedy_tokens[j]) d = j;
            /* rows up to the first divergence were computed from the oracle's own context */
            int64_t rows = d < 0 ? N : d + 1;
            for (int64_t j = 0; j < rows; j++)
                worst_take(&w_greedy, max_rel_row(glog + j * V, pr->greedy_logits + j * V, V), p, 0, j);
            greedy_total += N;
            greedy_checked += d < 0 ? N : d;
            if (d >= 0 && !diverged) {
                diverged = 1;
                div_prompt = p;
                div_pos = d;
            }
            int64_t gshape[1] = {N}, glshape[2] = {N, V};
            snprintf(name, sizeof name, "p%d.greedy.tokens", p);
            emit_output(ctx->em, name, "i32", gshape, 1, gtok, N);
            snprintf(name, sizeof name, "p%d.greedy.logits", p);
            emit_output(ctx->em, name, "f32", glshape, 2, glog, N * V);
        }
    }

    /* ---- metrics and gates ---- */
    int pass = 1;
    char text[160], where[176];
    snprintf(where, sizeof where, "(prompt %d pos %lld)", w_max.prompt, (long long)w_max.pos);
    snprintf(text, sizeof text, "prompt %d pos %lld", w_max.prompt, (long long)w_max.pos);
    if (g->max_rel_set)
        pass &= case_gate_le(ctx, "max_rel", w_max.v, "ratio", text, g->max_rel, where);
    else
        emit_metric(ctx->em, "max_rel", 1, w_max.v, "ratio", text, NULL, -1);
    snprintf(where, sizeof where, "(prompt %d pos %lld)", w_rms.prompt, (long long)w_rms.pos);
    snprintf(text, sizeof text, "prompt %d pos %lld", w_rms.prompt, (long long)w_rms.pos);
    if (g->rms_rel_set)
        pass &= case_gate_le(ctx, "rms_rel", w_rms.v, "ratio", text, g->rms_rel, where);
    else
        emit_metric(ctx->em, "rms_rel", 1, w_rms.v, "ratio", text, NULL, -1);
    snprintf(text, sizeof text, "%lld/%lld (max_rel > %g)", (long long)n_out, (long long)n_pos, tol);
    emit_metric(ctx->em, "max_rel_out_of_tol", 1, (double)n_out, "positions", text, NULL, -1);
    emit_metric(ctx->em, "positions", 1, (double)n_pos, "positions", NULL, NULL, -1);
    emit_metric(ctx->em, "logits_nonfinite", 1, (double)n_nonfinite, "elements", NULL, NULL, -1);
    double frac = n_pos ? (double)n_agree / (double)n_pos : 0;
    snprintf(text, sizeof text, "%lld/%lld", (long long)n_agree, (long long)n_pos);
    if (g->argmax_set) {
        int ok = g->argmax_all ? n_agree == n_pos : frac >= g->argmax_min_frac;
        char gate[64];
        if (g->argmax_all)
            snprintf(gate, sizeof gate, "all");
        else
            snprintf(gate, sizeof gate, ">= %g", g->argmax_min_frac);
        emit_metric(ctx->em, "argmax_agree", 1, frac, "fraction", text, gate, ok);
        if (!ok) case_error(ctx, "argmax agrees at %s positions, gate %s", text, gate);
        pass &= ok;
    } else {
        emit_metric(ctx->em, "argmax_agree", 1, frac, "fraction", text, NULL, -1);
    }
    if (c->capture_hidden) {
        if (w_hid.layer < L)
            snprintf(text, sizeof text, "layer %d pos %lld (prompt %d)", w_hid.layer, (long long)w_hid.pos,
                     w_hid.prompt);
        else
            snprintf(text, sizeof text, "hfinal pos %lld (prompt %d)", (long long)w_hid.pos, w_hid.prompt);
        snprintf(where, sizeof where, "(%s)", text);
        if (g->hidden_max_rel_set)
            pass &= case_gate_le(ctx, "hidden_max_rel", w_hid.v, "ratio", text, g->hidden_max_rel, where);
        else
            emit_metric(ctx->em, "hidden_max_rel", 1, w_hid.v, "ratio", text, NULL, -1);
    }
    if (greedy_prompts > 0) {
        if (diverged)
            snprintf(text, sizeof text, "diverges at %lld (prompt %d)", (long long)div_pos, div_prompt);
        else
            snprintf(text, sizeof text, "%lld/%lld tokens", (long long)greedy_checked, (long long)greedy_total);
        int ok = !diverged;
        emit_metric(ctx->em, "greedy_match", 1, ok ? 1.0 : 0.0, "bool", text, g->greedy_set ? "exact" : NULL,
                    g->greedy_set ? ok : -1);
        if (g->greedy_set && !ok) case_error(ctx, "greedy continuation %s", text);
        if (g->greedy_set) pass &= ok;
        snprintf(text, sizeof text, "prompt %d row %lld", w_greedy.prompt, (long long)w_greedy.pos);
        emit_metric(ctx->em, "greedy_max_rel", 1, w_greedy.v, "ratio", text, NULL, -1);
    } else if (g->greedy_set) {
        emit_metric(ctx->em, "greedy_match", 0, 0, "bool", "no greedy continuation in the oracle", "exact", 0);
        case_error(ctx, "greedy gate set but oracle '%s' has no greedy continuation", c->oracle->name);
        pass = 0;
    }
    status = pass ? CASE_PASS : CASE_FAIL;
cleanup:
    if (eng) lib.api->close(eng);
    engine_lib_close(&lib);
    if (o) oracle_close(o);
    free(logits);
    free(amax);
    free(hbuf);
    free(glog);
    free(gtok);
    return status;
}
