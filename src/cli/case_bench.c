/*
 * case_bench.c - the `decode-bench` case kind, in the case's child process.
 *
 * reset; a prompt of P tokens in one forward call (untimed); `warmup` untimed
 * steps; then `iterations` timed steps of T tokens each. A step is one
 * forward() call that returns only the last position's argmax; its token is
 * the next step's first token (real greedy decoding for T = 1), the other T-1
 * tokens come from the LCG. Each step is timed with CLOCK_MONOTONIC around the
 * call (engines synchronise their device before returning). Every sample
 * (ms per token = step ms / T) is stored; metrics are in docs/metrics.md.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cases.h"
#include "cli.h"
#include "stats.h"

#define BENCH_SEED 0x4b455354524c4e47ull /* "KESTRLNG": fixed, so every run feeds the same ids */
#define MAX_PROF 512
#define DRIFT_MIN_SAMPLES 8 /* ms_per_token_drift_pct: quarters of at least 2 samples */

static double mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Prompt of P ids: the suite's prompt set (its prompts concatenated, cycled), else the LCG. out: (P,) */
static int bench_prompt(const suite_case *c, int32_t n_vocab, int32_t *out, int P, char *err, size_t err_len) {
    const suite_prompt_set *ps = c->prompts;
    if (!ps || ps->n_prompts == 0) {
        case_lcg_tokens(BENCH_SEED, n_vocab, out, P);
        return 0;
    }
    int filled = 0;
    while (filled < P) {
        int any = 0;
        for (int i = 0; i < ps->n_prompts && filled < P; i++)
            for (int j = 0; j < ps->n_tokens[i] && filled < P; j++) {
                int32_t t = ps->tokens[i][j];
                if (t < 0 || t >= n_vocab) {
                    snprintf(err, err_len, "prompt set '%s' prompt %d token %d: id %d is outside the vocabulary (%d)",
                             ps->name, i, j, t, n_vocab);
                    return -1;
                }
                out[filled++] = t;
                any = 1;
            }
        if (!any) {
            snprintf(err, err_len, "prompt set '%s' has no tokens", ps->name);
            return -1;
        }
    }
    return 0;
}

void bench_shape(const suite_case *c, int *P, int *T, int *warmup, int *iters) {
    *P = c->prompt_len > 0 ? c->prompt_len : 1;
    *T = c->step_tokens > 0 ? c->step_tokens : 1;
    *warmup = c->warmup > 0 ? c->warmup : 0;
    *iters = c->iterations > 0 ? c->iterations : 20;
}

int bench_run_steps(const kestrel_engine_api *api, kestrel_engine *eng, const kestrel_info *info,
                    const suite_case *c, double *ms, kestrel_prof_entry *prof0, int32_t prof_cap,
                    int32_t *n_prof0, char *err, size_t err_len) {
    int ret = -1, P, T, warmup, iters;
    int32_t *prompt = NULL, *step = NULL; /* (P,), (T,) */
    bench_shape(c, &P, &T, &warmup, &iters);
    int64_t need = (int64_t)P + (int64_t)(warmup + iters) * T;
    if (need > info->max_context) {
        snprintf(err, err_len, "needs %lld positions (prompt %d + %d steps x %d tokens), the engine holds %d (ctx option)",
                 (long long)need, P, warmup + iters, T, info->max_context);
        goto cleanup;
    }
    prompt = xmalloc(sizeof(int32_t) * (size_t)P);
    step = xmalloc(sizeof(int32_t) * (size_t)T);
    if (bench_prompt(c, info->n_vocab, prompt, P, err, err_len) != 0) goto cleanup;
    int32_t next = 0;
    if (api->reset(eng) != 0 || api->forward(eng, prompt, P, 0, NULL, &next) != 0) {
        snprintf(err, err_len, "prompt of %d tokens failed: %s", P, api->last_error(eng));
        goto cleanup;
    }
    for (int s = 0; s < warmup + iters; s++) {
        if (s == warmup && prof0 && api->profile(eng, prof0, prof_cap, n_prof0) != 0) {
            snprintf(err, err_len, "profile() failed: %s", api->last_error(eng));
            goto cleanup;
        }
        step[0] = next;
        if (T > 1) case_lcg_tokens(BENCH_SEED + (uint64_t)s + 1, info->n_vocab, step + 1, T - 1);
        double t0 = mono_ms();
        int rc = api->forward(eng, step, T, 0, NULL, &next);
        double t1 = mono_ms();
        if (rc != 0) {
            snprintf(err, err_len, "step %d failed: %s", s, api->last_error(eng));
            goto cleanup;
        }
        if (s >= warmup) ms[s - warmup] = (t1 - t0) / T;
    }
    ret = 0;
cleanup:
    free(prompt);
    free(step);
    return ret;
}

/* Profile entry by name in (n,) entries, or NULL. */
static const kestrel_prof_entry *prof_find(const kestrel_prof_entry *p, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].name, name) == 0) return &p[i];
    return NULL;
}

int case_bench(case_ctx *ctx) {
    const suite_case *c = ctx->c;
    engine_lib lib = {0};
    kestrel_engine *eng = NULL;
    kestrel_info info;
    double *ms = NULL;                            /* (iterations,) */
    kestrel_prof_entry *prof0 = NULL, *prof1 = NULL; /* (MAX_PROF,) each */
    int status = CASE_ERROR, P, T, warmup, iters;
    char err[1024];

    bench_shape(c, &P, &T, &warmup, &iters);
    if (case_open_engine(ctx, &lib, &eng, &info) != 0) goto cleanup;
    const kestrel_engine_api *api = lib.api;
    ms = xmalloc(sizeof(double) * (size_t)iters);
    prof0 = xcalloc(MAX_PROF, sizeof *prof0);
    prof1 = xcalloc(MAX_PROF, sizeof *prof1);
    int32_t n_prof0 = 0, n_prof1 = 0;
    if (bench_run_steps(api, eng, &info, c, ms, prof0, MAX_PROF, &n_prof0, err, sizeof err) != 0) {
        case_error(ctx, "%s", err);
        goto cleanup;
    }
    if (api->profile(eng, prof1, MAX_PROF, &n_prof1) != 0) {
        case_error(ctx, "profile() failed: %s", api->last_error(eng));
        goto cleanup;
    }
    if (n_prof0 > MAX_PROF) n_prof0 = MAX_PROF;
    if (n_prof1 > MAX_PROF) n_prof1 = MAX_PROF;

    for (int i = 0; i < iters; i++) emit_sample(ctx->em, "ms_per_token", i, ms[i]);
    double med = stats_median(ms, iters), mad = stats_mad(ms, iters);
    double mn = stats_min(ms, iters), mx = stats_max(ms, iters);
    char text[128];
    int pass = 1;
    snprintf(text, sizeof text, "MAD %.4g ms, %d samples", mad, iters);
    if (c->gates.max_ms_per_token_set)
        pass &= case_gate_le(ctx, "ms_per_token_median", med, "ms", text, c->gates.max_ms_per_token, NULL);
    else
        emit_metric(ctx->em, "ms_per_token_median", 1, med, "ms", text, NULL, -1);
    emit_metric(ctx->em, "ms_per_token_mad", 1, mad, "ms", NULL, NULL, -1);
    emit_metric(ctx->em, "ms_per_token_min", 1, mn, "ms", NULL, NULL, -1);
    emit_metric(ctx->em, "ms_per_token_max", 1, mx, "ms", NULL, NULL, -1);
    emit_metric(ctx->em, "tok_per_s", 1, med > 0 ? 1000.0 / med : INFINITY, "tokens/s", NULL, NULL, -1);
    double bytes = (double)info.weight_bytes_per_token + (double)info.state_bytes_per_token;
    snprintf(text, sizeof text, "%.4g GB/token", bytes / 1e9);
    emit_metric(ctx->em, "gbps_effective", med > 0, med > 0 ? bytes / (med * 1e-3) / 1e9 : 0, "GB/s", text, NULL, -1);
    emit_metric(ctx->em, "n_samples", 1, iters, "samples", NULL, NULL, -1);
    /* drift within the run: the last quarter's median against the first's, relative to the median
     * (a step that grows with the position, thermal throttling, a race that corrupts state) */
    if (iters >= DRIFT_MIN_SAMPLES && med > 0) {
        const int q = iters / 4;
        const double first = stats_median(ms, q), last = stats_median(ms + iters - q, q);
        const double drift = 100.0 * (last - first) / med;
        snprintf(text, sizeof text, "first quarter %.4g ms, last quarter %.4g ms", first, last);
        if (c->gates.max_drift_pct_set) { /* either direction */
            char gate[64];
            snprintf(gate, sizeof gate, "|x| <= %g", c->gates.max_drift_pct);
            const int ok = fabs(drift) <= c->gates.max_drift_pct; /* NaN fails */
            emit_metric(ctx->em, "ms_per_token_drift_pct", 1, drift, "%", text, gate, ok);
            if (!ok)
                case_error(ctx, "ms_per_token_drift_pct %.3g: |drift| > %g (%s)", drift, c->gates.max_drift_pct,
                           text);
            pass &= ok;
        } else {
            emit_metric(ctx->em, "ms_per_token_drift_pct", 1, drift, "%", text, NULL, -1);
        }
    } else if (c->gates.max_drift_pct_set) {
        case_error(ctx, "gate max_drift_pct needs iterations >= %d (got %d)", DRIFT_MIN_SAMPLES, iters);
        goto cleanup;
    }
    /* kernel profile of the timed steps only: difference of the snapshots around them */
    for (int i = 0; i < n_prof0; i++) prof0[i].name[sizeof prof0[i].name - 1] = '\0'; /* engine-filled */
    for (int i = 0; i < n_prof1; i++) prof1[i].name[sizeof prof1[i].name - 1] = '\0';
    for (int i = 0; i < n_prof1; i++) {
        const kestrel_prof_entry *b = prof_find(prof0, n_prof0, prof1[i].name);
        uint64_t calls = prof1[i].calls - (b ? b->calls : 0);
        double tot = prof1[i].total_ms - (b ? b->total_ms : 0);
        if (calls == 0) continue;
        emit_profile(ctx->em, prof1[i].name, (int64_t)calls, tot, tot / iters);
    }
    if (!pass && ctx->error[0] == '\0') case_error(ctx, "gate failed");
    status = pass ? CASE_PASS : CASE_FAIL;
cleanup:
    if (eng) lib.api->close(eng);
    engine_lib_close(&lib);
    free(ms);
    free(prof0);
    free(prof1);
    return status;
}
