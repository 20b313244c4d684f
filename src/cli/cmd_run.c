/*
 * cmd_run.c - `kestrel-eval run SUITE.yaml`: validate, then run each selected
 * case in its own child process (runner.c) and record everything in the
 * results database (store.c, docs/results-db.md).
 *
 * Order matters: the suite is loaded and validated, engines resolved, pinned
 * sha256s checked and every input file hashed BEFORE the database is opened,
 * so an input error writes nothing (not even an empty database file). Then:
 * the run row, the artifacts, one transaction per finished case, the final
 * status. SIGINT/SIGTERM kill the running case and mark the run
 * 'interrupted' (exit 130 / 143). A runner killed with -9 leaves a valid
 * database; the next read-write open marks its run 'interrupted'.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "cli.h"
#include "compare_runs.h"
#include "engine_load.h"
#include "runner.h"
#include "store.h"
#include "suite.h"
#include "sysinfo.h"

#define DEFAULT_CASE_TIMEOUT_S 600.0 /* when a case has no timeout (suites normally default one) */

/* A hashed input file of the run (engine, model, oracle or prompt file). */
typedef struct artifact {
    const char *kind, *name, *path;
    char sha256[65];
    int64_t size;
    char mtime[32];
    int64_t id; /* artifacts.id once inserted */
} artifact;

typedef struct run_state {
    suite *s;
    const char *db_path;
    sqlite3 *db;
    int64_t run_id;
    artifact *arts; int n_arts;
    int *selected; int n_selected; /* indices into s->cases */
    int64_t pinned_ref_run;        /* bitexact reference run from --against / suite baseline, 0 none */
    char *pinned_ref_label;
    /* progress */
    int tty;
    int index;
    double total_done_s;
    int n_done;
    const char *current;
    double last_tick; /* elapsed time of the last progress line */
    /* the in-run floor: the last passing bandwidth case of this run */
    double probe_gbps;             /* 0: none yet */
    char probe_case[128];
} run_state;

/* ------------------------------------------------------------------ helpers */

static artifact *find_artifact(run_state *st, const char *kind, const char *name) {
    for (int i = 0; i < st->n_arts; i++)
        if (strcmp(st->arts[i].kind, kind) == 0 && strcmp(st->arts[i].name, name) == 0) return &st->arts[i];
    return NULL;
}

/* Hash a file once per run (by kind + name). 0 ok, else err. */
static int add_artifact(run_state *st, const char *kind, const char *name, const char *path, char *err,
                        size_t err_len) {
    if (find_artifact(st, kind, name)) return 0;
    artifact a = {.kind = kind, .name = name, .path = path};
    char e[512];
    if (sha256_file(path, a.sha256, e, sizeof e) != 0) {
        snprintf(err, err_len, "%s '%s': %s", kind, name, e);
        return -1;
    }
    struct stat sb;
    if (stat(path, &sb) == 0) {
        a.size = (int64_t)sb.st_size;
        struct tm tm;
        gmtime_r(&sb.st_mtime, &tm);
        strftime(a.mtime, sizeof a.mtime, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    st->arts = xrealloc(st->arts, sizeof *st->arts * (size_t)(st->n_arts + 1));
    st->arts[st->n_arts++] = a;
    return 0;
}

/* Engine options for a case: the engine's options with threads=N from the case (replacing any threads=). */
static char *engine_options(const suite_case *c, const suite_engine *e) {
    const char *base = e->options ? e->options : "";
    size_t cap = strlen(base) + 32;
    char *out = xmalloc(cap);
    out[0] = '\0';
    char *copy = xstrdup(base), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok || (c->threads > 0 && strncmp(tok, "threads=", 8) == 0)) continue;
        if (out[0]) strcat(out, ",");
        strcat(out, tok);
    }
    free(copy);
    if (c->threads > 0) snprintf(out + strlen(out), cap - strlen(out), "%sthreads=%d", out[0] ? "," : "", c->threads);
    return out;
}
static char *case_options(const suite_case *c) { return engine_options(c, c->engine); }

typedef struct sbuf { char *p; size_t len, cap; } sbuf;
static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->p = xrealloc(b->p, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
static void sb_jstr(sbuf *b, const char *key, const char *val, int *first) {
    char *v = json_quote(val);
    sb_printf(b, "%s\"%s\":%s", *first ? "" : ",", key, v);
    free(v);
    *first = 0;
}

/* The case's resolved parameters and gates as JSON (cases.params, docs/results-db.md). */
static char *case_params_json(const suite_case *c, const char *options) {
    sbuf b = {0};
    int first = 1;
    sb_printf(&b, "{");
    sb_jstr(&b, "kind", suite_case_kind_name(c->kind), &first);
    sb_jstr(&b, "engine", c->engine ? c->engine->name : NULL, &first);
    sb_jstr(&b, "options", options, &first);
    sb_jstr(&b, "model", c->model ? c->model->name : NULL, &first);
    sb_jstr(&b, "oracle", c->oracle ? c->oracle->name : NULL, &first);
    sb_jstr(&b, "prompts", c->prompts ? c->prompts->name : NULL, &first);
    sb_printf(&b, ",\"timeout_s\":%.17g,\"threads\":%d", c->timeout_s, c->threads);
    if (c->kind == CASE_DECODE_BENCH)
        sb_printf(&b, ",\"warmup\":%d,\"iterations\":%d,\"prompt_len\":%d,\"step_tokens\":%d", c->warmup,
                  c->iterations, c->prompt_len, c->step_tokens);
    if (c->kind == CASE_ORACLE)
        sb_printf(&b, ",\"greedy_tokens\":%d,\"hidden\":%s", c->greedy_tokens, c->capture_hidden ? "true" : "false");
    if (c->kind == CASE_BANDWIDTH)
        sb_printf(&b, ",\"bytes\":%llu,\"iterations\":%d", (unsigned long long)c->bytes, c->iterations);
    if (c->kind == CASE_ENGINE_DIFF) {
        char *ropt = engine_options(c, c->reference);
        sb_jstr(&b, "reference", c->reference->name, &first);
        sb_jstr(&b, "reference_options", ropt, &first);
        free(ropt);
        sb_printf(&b, ",\"greedy\":%d,\"tokens\":[", c->greedy);
        for (int i = 0; i < c->n_tokens; i++) sb_printf(&b, "%s%d", i ? "," : "", (int)c->tokens[i]);
        sb_printf(&b, "]");
    }
    sb_printf(&b, ",\"tags\":[");
    for (int i = 0; i < c->n_tags; i++) {
        char *t = json_quote(c->tags[i]);
        sb_printf(&b, "%s%s", i ? "," : "", t);
        free(t);
    }
    sb_printf(&b, "],\"gates\":{");
    const suite_gates *g = &c->gates;
    int gf = 1;
#define GATE_NUM(set, key, v)                                                                                          \
    if (g->set) {                                                                                                      \
        sb_printf(&b, "%s\"%s\":%.17g", gf ? "" : ",", key, (double)(v));                                              \
        gf = 0;                                                                                                        \
    }
    GATE_NUM(max_rel_set, "max_rel", g->max_rel)
    GATE_NUM(rms_rel_set, "rms_rel", g->rms_rel)
    GATE_NUM(hidden_max_rel_set, "hidden_max_rel", g->hidden_max_rel)
    if (g->argmax_set) {
        if (g->argmax_all)
            sb_printf(&b, "%s\"argmax\":\"all\"", gf ? "" : ",");
        else
            sb_printf(&b, "%s\"argmax\":%.17g", gf ? "" : ",", g->argmax_min_frac);
        gf = 0;
    }
    if (g->greedy_set) {
        sb_printf(&b, "%s\"greedy\":\"exact\"", gf ? "" : ",");
        gf = 0;
    }
    if (g->bitexact_set) {
        sb_printf(&b, "%s\"bitexact\":%s", gf ? "" : ",", g->bitexact ? "true" : "false");
        gf = 0;
    }
    GATE_NUM(max_ms_per_token_set, "max_ms_per_token", g->max_ms_per_token)
    GATE_NUM(max_drift_pct_set, "max_drift_pct", g->max_drift_pct)
    GATE_NUM(max_rel_growth_set, "max_rel_growth", g->max_rel_growth)
    GATE_NUM(min_effect_set, "min_effect", g->min_effect)
    GATE_NUM(alpha_set, "alpha", g->alpha)
    GATE_NUM(median_rel_set, "median_rel", g->median_rel)
    GATE_NUM(min_argmax_set, "min_argmax", g->min_argmax)
#undef GATE_NUM
    sb_printf(&b, "}}");
    return b.p;
}

/* The command line, shell-quoted where needed. */
static char *command_line(int argc, char **argv) {
    sbuf b = {0};
    sb_printf(&b, "kestrel-eval");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (*a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+@%") == strlen(a)) {
            sb_printf(&b, " %s", a);
        } else {
            sb_printf(&b, " '");
            for (const char *p = a; *p; p++) {
                if (*p == '\'')
                    sb_printf(&b, "'\\''");
                else
                    sb_printf(&b, "%c", *p);
            }
            sb_printf(&b, "'");
        }
    }
    return b.p;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s) {
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* One statement, bind + step; 0 ok. */
#define STEP_OR_FAIL(stmt)                                                                                             \
    do {                                                                                                               \
        if (sqlite3_step(stmt) != SQLITE_DONE) {                                                                       \
            snprintf(err, err_len, "%s", sqlite3_errmsg(db));                                                          \
            goto cleanup;                                                                                              \
        }                                                                                                              \
    } while (0)

static int insert_run(run_state *st, const char *label, int argc, char **argv, char *err, size_t err_len) {
    sqlite3 *db = st->db;
    sqlite3_stmt *q = NULL;
    sysinfo si;
    char started[32], sha[65], e[512];
    char *cmdline = command_line(argc, argv);
    int ret = -1;
    sysinfo_collect(&si);
    now_iso8601(started);
    if (sha256_file(st->s->path, sha, e, sizeof e) != 0) snprintf(sha, sizeof sha, "unknown");
    if (sqlite3_prepare_v2(db, "INSERT INTO runs (started_at, status, label, suite_name, suite_path, suite_sha256, "
                           "host, os, cpu, gpu_name, gpu_driver, cuda_runtime, kestrel_version, git_describe, "
                           "command_line, pid) VALUES (?1,'running',?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
                           -1, &q, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "%s", sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_text(q, 1, started, -1, SQLITE_TRANSIENT);
    bind_text_or_null(q, 2, label);
    sqlite3_bind_text(q, 3, st->s->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, st->s->path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 5, sha, -1, SQLITE_TRANSIENT);
    bind_text_or_null(q, 6, si.host);
    bind_text_or_null(q, 7, si.os);
    bind_text_or_null(q, 8, si.cpu);
    bind_text_or_null(q, 9, si.gpu_name);
    bind_text_or_null(q, 10, si.gpu_driver);
    bind_text_or_null(q, 11, si.cuda_version);
    sqlite3_bind_text(q, 12, PACKAGE_VERSION, -1, SQLITE_STATIC);
    bind_text_or_null(q, 13, si.git_describe);
    sqlite3_bind_text(q, 14, cmdline, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 15, (sqlite3_int64)getpid());
    STEP_OR_FAIL(q);
    st->run_id = sqlite3_last_insert_rowid(db);
    sqlite3_finalize(q);
    q = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO artifacts (run_id, kind, name, path, sha256, size, mtime) "
                           "VALUES (?1,?2,?3,?4,?5,?6,?7)", -1, &q, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "%s", sqlite3_errmsg(db));
        goto cleanup;
    }
    for (int i = 0; i < st->n_arts; i++) {
        artifact *a = &st->arts[i];
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, st->run_id);
        sqlite3_bind_text(q, 2, a->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, a->name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 4, a->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 5, a->sha256, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 6, a->size);
        bind_text_or_null(q, 7, a->mtime[0] ? a->mtime : NULL);
        STEP_OR_FAIL(q);
        a->id = sqlite3_last_insert_rowid(db);
    }
    ret = 0;
cleanup:
    sqlite3_finalize(q);
    sysinfo_free(&si);
    free(cmdline);
    return ret;
}

/* Append a metric computed by the parent to a finished case's results. */
static void add_metric(case_result *r, const char *name, double value, const char *unit, const char *text) {
    r->metrics = xrealloc(r->metrics, sizeof *r->metrics * (size_t)(r->n_metrics + 1));
    rec_metric *m = &r->metrics[r->n_metrics++];
    memset(m, 0, sizeof *m);
    m->name = xstrdup(name);
    m->unit = xstrdup(unit);
    m->text = text ? xstrdup(text) : NULL;
    m->has_value = 1;
    m->value = value;
    m->gate_pass = -1;
}

/* Every run carries its own floor (docs/metrics.md): a passing bandwidth case sets it; a
 * decode-bench case run after it gets pct_of_bandwidth (its effective GB/s as a percentage
 * of the probe) and floor_ms_per_token (its bytes per token at the probe's rate). */
static void relate_to_floor(run_state *st, const suite_case *c, case_result *r) {
    if (r->status != CASE_PASS && r->status != CASE_FAIL) return;
    const rec_metric *m;
    if (c->kind == CASE_BANDWIDTH) {
        if (r->status == CASE_PASS && (m = case_result_metric(r, "gbps")) && m->has_value && m->value > 0) {
            st->probe_gbps = m->value;
            snprintf(st->probe_case, sizeof st->probe_case, "%s", c->name);
        }
        return;
    }
    if (c->kind != CASE_DECODE_BENCH || st->probe_gbps <= 0) return;
    const rec_metric *eff = case_result_metric(r, "gbps_effective");
    const rec_metric *med = case_result_metric(r, "ms_per_token_median");
    if (!eff || !eff->has_value || !med || !med->has_value) return;
    /* copies: add_metric reallocates r->metrics */
    const double gbps = eff->value, median = med->value, frac = gbps / st->probe_gbps;
    char text[256];
    snprintf(text, sizeof text, "%.4g of %.4g GB/s measured by case '%s' in this run", gbps, st->probe_gbps,
             st->probe_case);
    add_metric(r, "pct_of_bandwidth", 100.0 * frac, "%", text);
    snprintf(text, sizeof text, "bytes per token at %.4g GB/s (case '%s'); measured %.4g ms", st->probe_gbps,
             st->probe_case, median);
    add_metric(r, "floor_ms_per_token", median * frac, "ms", text);
}

/* Store one finished case: case row, metrics, samples, outputs, profile, engine info; one transaction. */
static int store_case(run_state *st, const suite_case *c, const char *options, const char *started,
                      const case_result *r, char *err, size_t err_len) {
    sqlite3 *db = st->db;
    sqlite3_stmt *q = NULL;
    char *params = case_params_json(c, options);
    char e[512];
    int ret = -1, in_tx = 0;
    artifact *ae = c->engine ? find_artifact(st, "engine", c->engine->name) : NULL;
    artifact *am = c->model ? find_artifact(st, "model", c->model->name) : NULL;
    artifact *ao = c->oracle ? find_artifact(st, "oracle", c->oracle->name) : NULL;
    artifact *ap = c->prompts ? find_artifact(st, "prompts", c->prompts->name) : NULL;
    if (store_exec(db, "BEGIN IMMEDIATE", e, sizeof e) != 0) {
        snprintf(err, err_len, "%s", e);
        goto cleanup;
    }
    in_tx = 1;
    if (sqlite3_prepare_v2(db, "INSERT INTO cases (run_id, name, kind, status, error, started_at, duration_s, "
                           "engine_artifact, model_artifact, oracle_artifact, prompts_artifact, params) "
                           "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)", -1, &q, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "%s", sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_int64(q, 1, st->run_id);
    sqlite3_bind_text(q, 2, c->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, suite_case_kind_name(c->kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, case_status_name(r->status), -1, SQLITE_STATIC);
    bind_text_or_null(q, 5, r->error);
    sqlite3_bind_text(q, 6, started, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(q, 7, r->duration_s);
    const artifact *arts[4] = {ae, am, ao, ap};
    for (int i = 0; i < 4; i++) {
        if (arts[i])
            sqlite3_bind_int64(q, 8 + i, arts[i]->id);
        else
            sqlite3_bind_null(q, 8 + i);
    }
    sqlite3_bind_text(q, 12, params, -1, SQLITE_TRANSIENT);
    STEP_OR_FAIL(q);
    int64_t case_id = sqlite3_last_insert_rowid(db);
    sqlite3_finalize(q);
    q = NULL;

    /* only a case that ran to the end keeps its results: an error leaves no half metrics or outputs */
    const int keep = r->status == CASE_PASS || r->status == CASE_FAIL;
    const int n_metrics = keep ? r->n_metrics : 0, n_samples = keep ? r->n_samples : 0;
    const int n_outputs = keep ? r->n_outputs : 0, n_profile = keep ? r->n_profile : 0;
    if (sqlite3_prepare_v2(db, "INSERT INTO metrics (case_id, name, value, unit, text, gate, gate_pass) "
                           "VALUES (?1,?2,?3,?4,?5,?6,?7)", -1, &q, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "%s", sqlite3_errmsg(db));
        goto cleanup;
    }
    for (int i = 0; i < n_metrics; i++) {
        const rec_metric *m = &r->metrics[i];
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, case_id);
        sqlite3_bind_text(q, 2, m->name, -1, SQLITE_TRANSIENT);
        if (m->has_value)
            sqlite3_bind_double(q, 3, m->value);
        else
            sqlite3_bind_null(q, 3);
        bind_text_or_null(q, 4, m->unit);
        bind_text_or_null(q, 5, m->text);
        bind_text_or_null(q, 6, m->gate);
        if (m->gate_pass >= 0)
            sqlite3_bind_int(q, 7, m->gate_pass);
        else
            sqlite3_bind_null(q, 7);
        STEP_OR_FAIL(q);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO samples (case_id, series, idx, value) VALUES (?1,?2,?3,?4)", -1, &q,
                           NULL) != SQLITE_OK) {
        snprintf(err, err_len, "%s", sqlite3_errmsg(db));
        goto cleanup;
    }
    for (int i = 0; i < n_samples; i++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, case_id);
        sqlite3_bind_text(q, 2, r->samples[i].series, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(q, 3, r->samples[i].idx);
        sqlite3_bind_double(q, 4, r->samples[i].value);
        STEP_OR_FAIL(q);
    }
    sqlite3_finalize(q);
    q = NULL;
    for (int i = 0; i < n_outputs; i++) {
        const rec_output *o = &r->outputs[i];
        if (store_put_output(db, case_id, o->name, o->dtype, o->shape, o->ndim, o->data, (size_t)o->n_elements, err,
                             err_len) != 0)
            goto cleanup;
    }
    if (sqlite3_prepare_v2(db, "INSERT INTO kernel_profile (case_id, kernel, calls, total_ms, ms_per_step) "
                           "VALUES (?1,?2,?3,?4,?5)", -1, &q, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "%s", sqlite3_errmsg(db));
        goto cleanup;
    }
    for (int i = 0; i < n_profile; i++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, case_id);
        sqlite3_bind_text(q, 2, r->profile[i].kernel, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 3, r->profile[i].calls);
        sqlite3_bind_double(q, 4, r->profile[i].total_ms);
        sqlite3_bind_double(q, 5, r->profile[i].ms_per_step);
        STEP_OR_FAIL(q);
    }
    sqlite3_finalize(q);
    q = NULL;
    /* what the engines' info() said, onto their artifact rows (the first case to say it wins) */
    const artifact *ar = c->reference ? find_artifact(st, "engine", c->reference->name) : NULL;
    const rec_engine *said[2] = {&r->engine, &r->ref_engine};
    const artifact *onto[2] = {ae, ar};
    for (int i = 0; i < 2; i++) {
        if (!said[i]->have || !onto[i]) continue;
        if (!q && sqlite3_prepare_v2(db, "UPDATE artifacts SET engine_name = ?2, engine_version = ?3, build_flags = ?4, "
                                     "device = ?5 WHERE id = ?1 AND engine_name IS NULL", -1, &q, NULL) != SQLITE_OK) {
            snprintf(err, err_len, "%s", sqlite3_errmsg(db));
            goto cleanup;
        }
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, onto[i]->id);
        bind_text_or_null(q, 2, said[i]->name);
        bind_text_or_null(q, 3, said[i]->version);
        bind_text_or_null(q, 4, said[i]->build_flags);
        bind_text_or_null(q, 5, said[i]->device);
        STEP_OR_FAIL(q);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (store_exec(db, "COMMIT", e, sizeof e) != 0) {
        snprintf(err, err_len, "%s", e);
        goto cleanup;
    }
    in_tx = 0;
    ret = 0;
cleanup:
    sqlite3_finalize(q);
    if (in_tx) store_exec(db, "ROLLBACK", NULL, 0);
    free(params);
    return ret;
}

static int set_run_status(sqlite3 *db, int64_t run_id, const char *status, int with_end) {
    char ended[32];
    now_iso8601(ended);
    char *sql = with_end ? sqlite3_mprintf("UPDATE runs SET status = %Q, ended_at = %Q WHERE id = %lld", status,
                                           ended, (long long)run_id)
                         : sqlite3_mprintf("UPDATE runs SET status = %Q WHERE id = %lld", status, (long long)run_id);
    char e[256];
    int rc = store_exec(db, sql, e, sizeof e);
    sqlite3_free(sql);
    if (rc != 0) cli_error("%s: cannot set run %lld status: %s", sqlite3_db_filename(db, "main"), (long long)run_id, e);
    return rc;
}

/* ----------------------------------------------------------------- progress */

static void tick(void *ud, double elapsed) {
    run_state *st = ud;
    if (!st->tty || (elapsed - st->last_tick < 0.1 && elapsed >= st->last_tick)) return;
    st->last_tick = elapsed;
    char eta[32] = "ETA --";
    if (st->n_done > 0) {
        double avg = st->total_done_s / st->n_done;
        double left = avg * (st->n_selected - st->n_done) - elapsed;
        snprintf(eta, sizeof eta, "ETA %.0fs", left > 0 ? left : 0);
    }
    printf("\r\033[K[%d/%d] %s  elapsed %.1fs  %s", st->index + 1, st->n_selected, st->current, elapsed, eta);
    fflush(stdout);
}

/* One log line per finished case. */
static void print_finished(run_state *st, const suite_case *c, const case_result *r) {
    char summary[512] = "";
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(summary + n, n < sizeof summary ? sizeof summary - n : 0, __VA_ARGS__)
    const rec_metric *m;
    switch (c->kind) {
    case CASE_ORACLE:
        if ((m = case_result_metric(r, "max_rel")) && m->has_value) ADD("  max_rel=%.2g", m->value);
        if ((m = case_result_metric(r, "argmax_agree")) && m->text) ADD("  argmax=%s", m->text);
        if ((m = case_result_metric(r, "hidden_max_rel")) && m->has_value) ADD("  hidden_max_rel=%.2g", m->value);
        if ((m = case_result_metric(r, "greedy_match")) && m->text) ADD("  greedy=%s", m->text);
        break;
    case CASE_DECODE_BENCH:
        if ((m = case_result_metric(r, "ms_per_token_median")) && m->has_value) ADD("  ms/token=%.4g", m->value);
        if ((m = case_result_metric(r, "ms_per_token_mad")) && m->has_value) ADD(" (MAD %.2g)", m->value);
        if ((m = case_result_metric(r, "tok_per_s")) && m->has_value) ADD("  tok/s=%.4g", m->value);
        break;
    case CASE_BITEXACT:
        if ((m = case_result_metric(r, "unequal")) && m->text) ADD("  unequal=%s", m->text);
        if ((m = case_result_metric(r, "reference_run")) && m->text) ADD("  vs %s", m->text);
        break;
    case CASE_BANDWIDTH:
        if ((m = case_result_metric(r, "gbps")) && m->has_value) ADD("  gbps=%.4g", m->value);
        break;
    case CASE_ENGINE_DIFF:
        if ((m = case_result_metric(r, "diff_max_rel")) && m->has_value) ADD("  max_rel=%.2g", m->value);
        if ((m = case_result_metric(r, "diff_median_rel")) && m->has_value) ADD("  median_rel=%.2g", m->value);
        if ((m = case_result_metric(r, "diff_argmax_agree")) && m->text) ADD("  argmax=%s", m->text);
        if ((m = case_result_metric(r, "diff_greedy_match")) && m->text) ADD("  greedy=%s", m->text);
        break;
    default:
        break;
    }
    if (r->status != CASE_PASS && r->error) {
        size_t l = strcspn(r->error, "\n");
        ADD("  %.*s", (int)(l > 300 ? 300 : l), r->error);
    }
#undef ADD
    if (st->tty) printf("\r\033[K");
    printf("[%d/%d] %s  %s  %.2fs%s\n", st->index + 1, st->n_selected, c->name, case_status_name(r->status),
           r->duration_s, summary);
    fflush(stdout);
}

/* ---------------------------------------------------------------- the child */

static int child_fn(void *arg, emitter *em, const char **error_out) {
    case_ctx *ctx = arg;
    ctx->em = em;
    int status;
    switch (ctx->c->kind) {
    case CASE_ORACLE: status = case_oracle(ctx); break;
    case CASE_DECODE_BENCH: status = case_bench(ctx); break;
    case CASE_BITEXACT: status = case_bitexact(ctx); break;
    case CASE_BANDWIDTH: status = case_bandwidth(ctx); break;
    case CASE_ENGINE_DIFF: status = case_engine_diff(ctx); break;
    default:
        case_error(ctx, "unknown case kind %d", (int)ctx->c->kind);
        status = CASE_ERROR;
    }
    if (status != CASE_PASS && !ctx->error[0]) case_error(ctx, "%s", status == CASE_FAIL ? "gate failed" : "error");
    *error_out = ctx->error;
    return status;
}

/* Load an engine library in a throw-away child (its constructors must not run in the
 * parent that owns the database): dlopen, entry point, ABI version. */
static int probe_fn(void *arg, emitter *em, const char **error_out) {
    static char e[1024];
    engine_lib lib;
    (void)em;
    if (engine_lib_open(arg, &lib, e, sizeof e) != 0) {
        *error_out = e;
        return CASE_ERROR;
    }
    engine_lib_close(&lib);
    return CASE_PASS;
}

static int probe_engine(const char *path, char *err, size_t err_len) {
    case_result r;
    char e[512];
    int rc = runner_exec(probe_fn, (void *)path, 60, NULL, NULL, &r, e, sizeof e);
    if (rc != RUNNER_DONE) {
        snprintf(err, err_len, "%s: cannot load: %s", path, rc == RUNNER_SYSERR ? e : "interrupted");
        return -1;
    }
    if (r.status != CASE_PASS) {
        size_t l = r.error ? strcspn(r.error, "\n") : 0;
        snprintf(err, err_len, "%s%.*s", r.status == CASE_ERROR ? "" : "loading the engine: ", (int)l,
                 r.error ? r.error : "failed");
        case_result_free(&r);
        return -1;
    }
    case_result_free(&r);
    return 0;
}

/* ------------------------------------------------------------------ command */

static int has_tag(const suite_case *c, const char *tag) {
    for (int i = 0; i < c->n_tags; i++)
        if (strcmp(c->tags[i], tag) == 0) return 1;
    return 0;
}

static int usage(void) { return cli_usage("run"); }

int cmd_run(int argc, char **argv) {
    const char *suite_path = NULL, *db_flag = NULL, *label = NULL, *against = NULL;
    const char **globs = xcalloc((size_t)argc, sizeof *globs), **tags = xcalloc((size_t)argc, sizeof *tags);
    char **eng_over = xcalloc((size_t)argc, sizeof *eng_over);
    int n_globs = 0, n_tags = 0, n_over = 0;
    run_state st = {0};
    char **lib_paths = NULL; /* (s->n_engines,) resolved */
    int rc = EXIT_USAGE;
    char err[2048];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (strcmp(a, "--db") == 0 && has_val)
            db_flag = argv[++i];
        else if (strcmp(a, "--engine") == 0 && has_val)
            eng_over[n_over++] = argv[++i];
        else if (strcmp(a, "--case") == 0 && has_val)
            globs[n_globs++] = argv[++i];
        else if (strcmp(a, "--tag") == 0 && has_val)
            tags[n_tags++] = argv[++i];
        else if (strcmp(a, "--label") == 0 && has_val)
            label = argv[++i];
        else if (strcmp(a, "--against") == 0 && has_val)
            against = argv[++i];
        else if (a[0] == '-' && a[1]) {
            cli_error("run: unknown option or missing value: %s", a);
            rc = usage();
            goto cleanup;
        } else if (!suite_path)
            suite_path = a;
        else {
            cli_error("run: more than one suite given ('%s', '%s')", suite_path, a);
            rc = usage();
            goto cleanup;
        }
    }
    if (!suite_path) {
        cli_error("run: no suite given");
        rc = usage();
        goto cleanup;
    }
    st.db_path = default_db_path(db_flag);

    /* ---- 1. everything that can be wrong with the input, before the database is touched ---- */
    if (suite_load(suite_path, &st.s, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    suite *s = st.s;
    for (int i = 0; i < n_over; i++) {
        char *eq = strchr(eng_over[i], '=');
        if (!eq || eq == eng_over[i] || !eq[1]) {
            cli_error("run: --engine takes NAME=PATH, got '%s'", eng_over[i]);
            goto cleanup;
        }
        *eq = '\0';
        int orc = suite_override_engine(s, eng_over[i], eq + 1, err, sizeof err);
        *eq = '=';
        if (orc != 0) {
            cli_error("%s", err);
            goto cleanup;
        }
    }
    st.selected = xcalloc((size_t)s->n_cases + 1, sizeof *st.selected);
    for (int i = 0; i < s->n_cases; i++) {
        const suite_case *c = &s->cases[i];
        int ok = n_globs == 0;
        for (int g = 0; g < n_globs && !ok; g++) ok = fnmatch(globs[g], c->name, 0) == 0;
        if (ok && n_tags > 0) {
            ok = 0;
            for (int t = 0; t < n_tags && !ok; t++) ok = has_tag(c, tags[t]);
        }
        if (ok) st.selected[st.n_selected++] = i;
    }
    if (st.n_selected == 0) {
        sbuf sel = {0};
        for (int g = 0; g < n_globs; g++) sb_printf(&sel, " --case '%s'", globs[g]);
        for (int t = 0; t < n_tags; t++) sb_printf(&sel, " --tag '%s'", tags[t]);
        cli_error("%s: no case matches%s (the suite has %d case%s)", s->path, sel.p ? sel.p : "", s->n_cases,
                  s->n_cases == 1 ? "" : "s");
        free(sel.p);
        goto cleanup;
    }
    /* engines: resolve, hash, check pins (only the ones the selected cases use) */
    lib_paths = xcalloc((size_t)s->n_engines + 1, sizeof *lib_paths);
    for (int k = 0; k < st.n_selected; k++) {
        const suite_case *c = &s->cases[st.selected[k]];
        const suite_engine *case_engines[2] = {c->engine, c->reference}; /* reference: engine-diff only */
        for (int j = 0; j < 2; j++) {
            const suite_engine *e = case_engines[j];
            int ei = e ? (int)(e - s->engines) : 0;
            if (e && !lib_paths[ei]) {
                lib_paths[ei] = engine_resolve(e->lib, err, sizeof err);
                if (!lib_paths[ei]) {
                    cli_error("%s:%d:%d: engine '%s': %s", s->path, e->pos.line, e->pos.col, e->name, err);
                    goto cleanup;
                }
                if (probe_engine(lib_paths[ei], err, sizeof err) != 0) {
                    cli_error("engine '%s': %s", e->name, err);
                    goto cleanup;
                }
                if (add_artifact(&st, "engine", e->name, lib_paths[ei], err, sizeof err) != 0) {
                    cli_error("%s", err);
                    goto cleanup;
                }
                const artifact *a = find_artifact(&st, "engine", e->name);
                if (e->sha256 && strcmp(e->sha256, a->sha256) != 0) {
                    cli_error("engine '%s': sha256 mismatch: suite pins %.4s..., %s is %.4s... (%s:%d:%d)", e->name,
                              e->sha256, lib_paths[ei], a->sha256, s->path, e->pos.line, e->pos.col);
                    goto cleanup;
                }
            }
        }
        if (c->model && add_artifact(&st, "model", c->model->name, c->model->path, err, sizeof err) != 0) {
            cli_error("%s", err);
            goto cleanup;
        }
        if (c->oracle && add_artifact(&st, "oracle", c->oracle->name, c->oracle->path, err, sizeof err) != 0) {
            cli_error("%s", err);
            goto cleanup;
        }
        if (c->prompts && c->prompts->path &&
            add_artifact(&st, "prompts", c->prompts->name, c->prompts->path, err, sizeof err) != 0) {
            cli_error("%s", err);
            goto cleanup;
        }
    }
    /* --against must name a baseline or run that exists: peek read-only (a missing DB has none) */
    if (against) {
        if (access(st.db_path, F_OK) != 0) {
            cli_error("--against %s: no baseline or run '%s' in %s (the database does not exist yet)", against,
                      against, st.db_path);
            goto cleanup;
        }
        sqlite3 *ro = NULL;
        int64_t id = 0;
        if (store_open(st.db_path, STORE_READONLY, &ro, err, sizeof err) != 0 ||
            cr_resolve_against(ro, st.db_path, against, &id, NULL, err, sizeof err) != 0) {
            store_close(ro);
            cli_error("%s", err);
            goto cleanup;
        }
        store_close(ro);
    }

    /* ---- 2. the database: run row + artifacts ---- */
    if (!db_flag && strcmp(st.db_path, "results/kestrel.db") == 0 &&
        mkdir("results", 0777) != 0 && errno != EEXIST) { /* only the default location is created */
        cli_error("results: cannot create the directory for the default database: %s", strerror(errno));
        goto cleanup;
    }
    if (store_open(st.db_path, STORE_RW, &st.db, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    if (insert_run(&st, label, argc - 1, argv + 1, err, sizeof err) != 0) {
        cli_error("%s: cannot record the run: %s", st.db_path, err);
        goto cleanup;
    }
    /* bitexact references pinned by --against (baseline or run) or the suite's baseline */
    {
        const char *spec = against ? against : s->baseline;
        if (spec && cr_resolve_against(st.db, st.db_path, spec, &st.pinned_ref_run, &st.pinned_ref_label, err,
                                       sizeof err) != 0)
            st.pinned_ref_run = 0; /* a suite baseline not in this DB: use the latest passing run */
    }
    if (runner_install_signals(err, sizeof err) != 0) {
        cli_error("%s", err);
        set_run_status(st.db, st.run_id, "error", 1);
        rc = EXIT_FAIL;
        goto cleanup;
    }

    /* ---- 3. the cases ---- */
    st.tty = isatty(STDOUT_FILENO);
    int n_status[CASE_SKIP + 1] = {0};
    double t_run = now_seconds();
    for (int k = 0; k < st.n_selected; k++) {
        const suite_case *c = &s->cases[st.selected[k]];
        char *options = case_options(c);
        bitexact_ref ref = {0};
        case_result res;
        char started[32];
        now_iso8601(started);
        st.index = k;
        st.current = c->name;
        st.last_tick = -1;
        int prc = 0;
        if (c->kind == CASE_BITEXACT) {
            const artifact *am = c->model ? find_artifact(&st, "model", c->model->name) : NULL;
            prc = bitexact_ref_load(st.db, st.run_id, c->name, am ? am->sha256 : "", st.pinned_ref_run,
                                    st.pinned_ref_label, &ref, err, sizeof err);
        }
        memset(&res, 0, sizeof res);
        case_ctx ctx = {.c = c, .options = options, .ref = &ref};
        const artifact *ae = find_artifact(&st, "engine", c->engine->name);
        ctx.engine_path = ae->path;
        char *ref_options = c->reference ? engine_options(c, c->reference) : NULL;
        if (c->reference) {
            ctx.reference_path = find_artifact(&st, "engine", c->reference->name)->path;
            ctx.reference_options = ref_options;
        }
        int xrc;
        if (prc != 0) {
            res.status = CASE_ERROR;
            res.error = xstrdup(err);
            xrc = RUNNER_DONE;
        } else {
            xrc = runner_exec(child_fn, &ctx, c->timeout_s > 0 ? c->timeout_s : DEFAULT_CASE_TIMEOUT_S, tick, &st,
                              &res, err, sizeof err);
        }
        bitexact_ref_free(&ref);
        free(ref_options);
        if (xrc == RUNNER_INTERRUPTED) {
            int sig = runner_signal();
            if (st.tty) printf("\r\033[K");
            const char *abbrev = sigabbrev_np(sig);
            cli_error("interrupted by SIG%s during case '%s': run %lld marked interrupted", abbrev ? abbrev : "?",
                      c->name, (long long)st.run_id);
            set_run_status(st.db, st.run_id, "interrupted", 0);
            free(options);
            case_result_free(&res);
            rc = 128 + sig;
            goto cleanup;
        }
        if (xrc == RUNNER_SYSERR) {
            res.status = CASE_ERROR;
            free(res.error);
            res.error = xstrdup(err);
        }
        relate_to_floor(&st, c, &res);
        if (store_case(&st, c, options, started, &res, err, sizeof err) != 0) {
            cli_error("%s: cannot record case '%s': %s", st.db_path, c->name, err);
            set_run_status(st.db, st.run_id, "error", 1);
            free(options);
            case_result_free(&res);
            rc = EXIT_FAIL;
            goto cleanup;
        }
        n_status[res.status >= 0 && res.status <= CASE_SKIP ? res.status : CASE_ERROR]++;
        st.total_done_s += res.duration_s;
        st.n_done++;
        print_finished(&st, c, &res);
        free(options);
        case_result_free(&res);
    }
    int all_ok = n_status[CASE_FAIL] + n_status[CASE_CRASH] + n_status[CASE_TIMEOUT] + n_status[CASE_ERROR] == 0;
    if (set_run_status(st.db, st.run_id, all_ok ? "passed" : "failed", 1) != 0) {
        rc = EXIT_FAIL;
        goto cleanup;
    }
    printf("%s: run %lld %s: %d pass, %d fail, %d crash, %d timeout, %d error in %.1fs (%s)\n", s->name,
           (long long)st.run_id, all_ok ? "passed" : "failed", n_status[CASE_PASS], n_status[CASE_FAIL],
           n_status[CASE_CRASH], n_status[CASE_TIMEOUT], n_status[CASE_ERROR], now_seconds() - t_run, st.db_path);
    rc = all_ok ? EXIT_OK : EXIT_FAIL;
    if (against) {
        fflush(stdout);
        int arc = report_against(st.db, st.run_id, against, stdout);
        if (arc > rc) rc = arc;
    }
cleanup:
    if (lib_paths && st.s)
        for (int i = 0; i < st.s->n_engines; i++) free(lib_paths[i]);
    free(lib_paths);
    store_close(st.db);
    if (st.s) suite_free(st.s);
    free(st.arts);
    free(st.selected);
    free(st.pinned_ref_label);
    free(globs);
    free(tags);
    free(eng_over);
    return rc;
}
