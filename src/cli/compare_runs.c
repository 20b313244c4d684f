/*
 * compare_runs.c - compare one run with a baseline run (or with its own gates
 * only): per case and metric verdicts, like-with-like differences, the top
 * kernels. The rules are written down in docs/methodology.md; this file is
 * their only implementation. The writers for each output format live in
 * cmd_report.c; this file loads and decides.
 *
 * Not here: resolving command-line arguments, printing (except report_against).
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "compare_runs.h"
#include "stats.h"
#include "store.h"
#include "suite.h"

const char *cr_verdict_name(enum cr_verdict v) {
    static const char *names[] = {"ok", "improved", "regressed", "new", "missing", "crashed"};
    return (unsigned)v < 6 ? names[v] : "?";
}

/* ---------------------------------------------------------------- loading */

typedef struct mrow {
    char *name;
    int has_value;
    double value;
    char *text, *gate;
    int gate_pass; /* 1, 0, or -1 when NULL */
} mrow;

typedef struct crow {
    int64_t id;
    char *name, *kind, *status, *error, *params;
    mrow *m; int nm;
} crow;

static void crows_free(crow *c, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < c[i].nm; j++) {
            free(c[i].m[j].name);
            free(c[i].m[j].text);
            free(c[i].m[j].gate);
        }
        free(c[i].m);
        free(c[i].name);
        free(c[i].kind);
        free(c[i].status);
        free(c[i].error);
        free(c[i].params);
    }
    free(c);
}

/* Cases of a run (ordered by id) with their metrics. */
static int load_cases(sqlite3 *db, int64_t run_id, crow **out, int *n_out, char *err, size_t err_len) {
    int ret = -1, n = 0, cap = 0;
    crow *c = NULL;
    sqlite3_stmt *st = NULL, *sm = NULL;
    if (sqlite3_prepare_v2(db, "SELECT id, name, kind, status, error, params FROM cases WHERE run_id = ? ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT name, value, text, gate, gate_pass FROM metrics WHERE case_id = ? ORDER BY rowid",
                           -1, &sm, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "reading cases: %s", sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_int64(st, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            c = xrealloc(c, sizeof(crow) * (size_t)cap);
        }
        crow *r = &c[n++];
        memset(r, 0, sizeof(*r));
        r->id = sqlite3_column_int64(st, 0);
        r->name = store_col_dup(st, 1);
        r->kind = store_col_dup(st, 2);
        r->status = store_col_dup(st, 3);
        r->error = store_col_dup(st, 4);
        r->params = store_col_dup(st, 5);
        sqlite3_reset(sm);
        sqlite3_bind_int64(sm, 1, r->id);
        int mcap = 0, rm;
        while ((rm = sqlite3_step(sm)) == SQLITE_ROW) {
            if (r->nm == mcap) {
                mcap = mcap ? 2 * mcap : 8;
                r->m = xrealloc(r->m, sizeof(mrow) * (size_t)mcap);
            }
            mrow *m = &r->m[r->nm++];
            m->name = store_col_dup(sm, 0);
            m->has_value = sqlite3_column_type(sm, 1) != SQLITE_NULL;
            m->value = m->has_value ? sqlite3_column_double(sm, 1) : NAN;
            m->text = store_col_dup(sm, 2);
            m->gate = store_col_dup(sm, 3);
            m->gate_pass = sqlite3_column_type(sm, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(sm, 4);
        }
        if (rm != SQLITE_DONE) {
            snprintf(err, err_len, "reading metrics: %s", sqlite3_errmsg(db));
            goto cleanup;
        }
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, err_len, "reading cases: %s", sqlite3_errmsg(db));
        goto cleanup;
    }
    *out = c;
    *n_out = n;
    c = NULL;
    n = 0;
    ret = 0;
cleanup:
    crows_free(c, n);
    sqlite3_finalize(st);
    sqlite3_finalize(sm);
    return ret;
}

static const crow *find_case(const crow *c, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return &c[i];
    return NULL;
}

static const mrow *find_metric(const crow *c, const char *name) {
    if (!c) return NULL;
    for (int i = 0; i < c->nm; i++)
        if (strcmp(c->m[i].name, name) == 0) return &c->m[i];
    return NULL;
}

/* A number from the case's params JSON: the first `"key": number` anywhere in
 * the text (top level or inside "gates"). 0 found, -1 not. */
static int json_number(const char *json, const char *key, double *out) {
    if (!json) return -1;
    size_t kl = strlen(key);
    for (const char *p = json; (p = strchr(p, '"')) != NULL; p++) {
        if (strncmp(p + 1, key, kl) != 0 || p[1 + kl] != '"') continue;
        const char *q = p + 2 + kl;
        while (isspace((unsigned char)*q)) q++;
        if (*q != ':') continue;
        q++;
        while (isspace((unsigned char)*q)) q++;
        char *end;
        double v = strtod(q, &end);
        if (end == q || !isfinite(v)) return -1;
        *out = v;
        return 0;
    }
    return -1;
}

static double param_or(const crow *c, const char *key, double dflt) {
    double v;
    return (c && json_number(c->params, key, &v) == 0 && v > 0) ? v : dflt;
}

/* Samples of one series of a case, ordered by idx. Returns count; *out malloc'd (n,). */
static int load_series(sqlite3 *db, int64_t case_id, const char *series, double **out) {
    sqlite3_stmt *st = NULL;
    int n = 0, cap = 0;
    double *v = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM samples WHERE case_id = ? AND series = ? ORDER BY idx", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, case_id);
        sqlite3_bind_text(st, 2, series, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                v = xrealloc(v, sizeof(double) * (size_t)cap);
            }
            v[n++] = sqlite3_column_double(st, 0);
        }
    }
    sqlite3_finalize(st);
    *out = v;
    return n;
}

/* Names from a one-column query; ?1 = a, ?2 = b (when the query uses it). */
static char **load_names(sqlite3 *db, const char *sql, int64_t a, int64_t b, int *n_out) {
    sqlite3_stmt *st = NULL;
    char **names = NULL;
    int n = 0, cap = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, a);
        sqlite3_bind_int64(st, 2, b);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                names = xrealloc(names, sizeof(char *) * (size_t)cap);
            }
            names[n++] = store_col_dup(st, 0);
        }
    }
    sqlite3_finalize(st);
    *n_out = n;
    return names;
}

static void names_free(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* ---------------------------------------------------------------- lines */

static cr_line *add_line(cr_case *cc, const char *metric) {
    cc->lines = xrealloc(cc->lines, sizeof(cr_line) * (size_t)(cc->n_lines + 1));
    cr_line *l = &cc->lines[cc->n_lines++];
    memset(l, 0, sizeof(*l));
    l->metric = xstrdup(metric);
    l->base = l->cur = NAN;
    l->verdict = "ok";
    return l;
}

static void set_values(cr_line *l, const mrow *bm, const mrow *cm) {
    if (bm) {
        l->has_base = bm->has_value;
        l->base = bm->value;
        l->base_text = bm->text ? xstrdup(bm->text) : NULL;
    }
    if (cm) {
        l->has_cur = cm->has_value;
        l->cur = cm->value;
        l->cur_text = cm->text ? xstrdup(cm->text) : NULL;
    }
}

/* Relative-error metrics: worst max_rel / rms_rel of logits, hidden, greedy; engine-diff's median. */
static int is_relerr_metric(const char *name) {
    size_t n = strlen(name);
    return (n >= 7 && strcmp(name + n - 7, "max_rel") == 0) || (n >= 7 && strcmp(name + n - 7, "rms_rel") == 0) ||
           strcmp(name, "diff_median_rel") == 0;
}

/* Headline metrics shown even without a gate or a rule. */
static int is_headline_metric(const char *name) {
    return strcmp(name, "ms_per_token_median") == 0 || strcmp(name, "gbps") == 0 ||
           strcmp(name, "pct_of_bandwidth") == 0 || strcmp(name, "floor_ms_per_token") == 0;
}

/* One metric: absolute gate of the current run, then the rule relative to the baseline. */
static void compare_metric(cr_case *cc, const crow *bc, const crow *cc_row, const mrow *cm) {
    const mrow *bm = find_metric(bc, cm->name);
    int relerr = is_relerr_metric(cm->name);
    int argmax = strcmp(cm->name, "argmax_agree") == 0 || strcmp(cm->name, "diff_argmax_agree") == 0;
    int greedy = strcmp(cm->name, "greedy_match") == 0 || strcmp(cm->name, "diff_greedy_match") == 0;
    int has_rule = bm && (relerr || argmax || greedy) && bm->has_value;
    if (cm->gate_pass < 0 && !has_rule && !is_headline_metric(cm->name)) return;

    cr_line *l = add_line(cc, cm->name);
    set_values(l, bm, cm);
    char rule[256] = "";
    size_t rl = 0;
    if (cm->gate_pass >= 0) {
        rl += (size_t)snprintf(rule + rl, sizeof rule - rl, "gate %s: %s", cm->gate ? cm->gate : "?",
                               cm->gate_pass ? "pass" : "FAIL");
        if (!cm->gate_pass) l->verdict = "fail";
    }
    if (has_rule && cm->has_value) {
        const char *rel = "ok";
        char buf[200];
        double b = bm->value, c = cm->value;
        if (relerr) {
            double growth = param_or(cc_row, "max_rel_growth", CR_DEFAULT_MAX_REL_GROWTH);
            double allowed = growth * fmax(b, CR_MAX_REL_FLOOR);
            if (b > 0 && isfinite(b)) l->delta = xasprintf("x%.3g", c / b);
            if (!isfinite(c) && !isfinite(b)) {
                snprintf(buf, sizeof buf, "non-finite in both runs");
            } else if (!(c <= allowed)) { /* also catches NaN and +Inf */
                rel = "regressed";
                snprintf(buf, sizeof buf, "%.3g > %g x max(base %.3g, floor %g) = %.3g", c, growth, b,
                         CR_MAX_REL_FLOOR, allowed);
            } else if (b > CR_MAX_REL_FLOOR && c * growth < b) {
                rel = "improved";
                snprintf(buf, sizeof buf, "%.3g < base %.3g / %g", c, b, growth);
            } else {
                snprintf(buf, sizeof buf, "%.3g <= %g x max(base %.3g, floor %g)", c, growth, b, CR_MAX_REL_FLOOR);
            }
        } else if (argmax) {
            l->delta = xasprintf("%+.4g", c - b);
            if (c < b - 1e-12) {
                rel = "regressed";
                snprintf(buf, sizeof buf, "argmax agreement dropped: %s < %s", cm->text ? cm->text : "",
                         bm->text ? bm->text : "");
            } else if (c > b + 1e-12) {
                rel = "improved";
                snprintf(buf, sizeof buf, "argmax agreement rose");
            } else {
                snprintf(buf, sizeof buf, "argmax agreement may not drop: equal");
            }
        } else { /* greedy_match */
            if (b == 1 && c != 1) {
                rel = "regressed";
                snprintf(buf, sizeof buf, "greedy matched in the baseline, now %s", cm->text ? cm->text : "differs");
            } else if (b != 1 && c == 1) {
                rel = "improved";
                snprintf(buf, sizeof buf, "greedy now matches");
            } else {
                snprintf(buf, sizeof buf, "greedy match unchanged");
            }
        }
        rl += (size_t)snprintf(rule + rl, sizeof rule - rl, "%s%s", rl ? "; " : "", buf);
        if (strcmp(l->verdict, "fail") != 0) l->verdict = rel;
    }
    l->rule = rule[0] ? xstrdup(rule) : NULL;
    if (!rule[0]) l->verdict = "info";
}

/* Timing: one line per sample series present on both sides. */
static void compare_series(sqlite3 *db, cr_case *cc, const crow *bc, const crow *c, const char *series) {
    double *a = NULL, *b = NULL;
    int na = load_series(db, bc->id, series, &a);
    int nb = load_series(db, c->id, series, &b);
    char *metric = xasprintf("%s samples", series);
    cr_line *l = add_line(cc, metric);
    free(metric);
    double min_effect = param_or(c, "min_effect", CR_DEFAULT_MIN_EFFECT);
    double alpha = param_or(c, "alpha", CR_DEFAULT_ALPHA);
    int higher_better = strstr(series, "gbps") != NULL || strstr(series, "tok_per_s") != NULL;
    if (na > 0) {
        l->has_base = 1;
        l->base = stats_median(a, na);
    }
    if (nb > 0) {
        l->has_cur = 1;
        l->cur = stats_median(b, nb);
    }
    l->base_text = xasprintf("median of %d", na);
    l->cur_text = xasprintf("median of %d", nb);
    if (na < CR_MIN_SAMPLES || nb < CR_MIN_SAMPLES) {
        l->verdict = "inconclusive";
        l->rule = xasprintf("too few samples: %d vs %d (need >= %d each)", na, nb, CR_MIN_SAMPLES);
        cc->n_inconclusive++;
        goto cleanup;
    }
    double ratio = l->cur / l->base, eff = ratio - 1;
    double p = stats_mann_whitney_p(a, na, b, nb, NULL);
    int sig = p < alpha, big = fabs(eff) >= min_effect;
    l->delta = xasprintf("%+.1f%%", 100 * eff);
    l->rule = xasprintf("MWU p=%.2g %s %g, %+.1f%% %s %g%%", p, sig ? "<" : ">=", alpha, 100 * eff,
                        big ? ">=" : "<", 100 * min_effect);
    if (sig && big) {
        l->verdict = (eff > 0) == !higher_better ? "slower" : "faster";
    } else {
        l->verdict = "same";
    }
cleanup:
    free(a);
    free(b);
}

/* Archived outputs, element by element: all outputs of bitexact cases, the
 * i32 (token) outputs of other cases. One line per output that differs (or
 * cannot be read), plus one summary line for those that are bit-exact. */
static void compare_outputs(sqlite3 *db, cr_case *cc, const crow *bc, const crow *c) {
    int bitexact = strcmp(c->kind, "bitexact") == 0;
    int n_names = 0, n_same = 0;
    size_t n_same_elems = 0;
    char **names = load_names(db,
                              bitexact ? "SELECT name FROM outputs WHERE case_id = ?1 ORDER BY name"
                                       : "SELECT name FROM outputs WHERE case_id = ?1 AND dtype = 'i32' ORDER BY name",
                              bc->id, c->id, &n_names);
    for (int i = 0; i < n_names; i++) {
        void *da = NULL, *dbuf = NULL;
        size_t na = 0, nb = 0;
        char ta[8] = "", tb[8] = "", e1[256] = "", e2[256] = "";
        int ra = store_get_output(db, bc->id, names[i], &da, &na, ta, e1, sizeof e1);
        int rb = store_get_output(db, c->id, names[i], &dbuf, &nb, tb, e2, sizeof e2);
        int64_t k = 0;
        if (ra == 0 && rb == 0 && strcmp(ta, tb) == 0 && na == nb) {
            k = count_unequal(da, dbuf, (int64_t)na, 4);
            if (k == 0) {
                n_same++;
                n_same_elems += na;
                goto next;
            }
        }
        char *metric = xasprintf("output %s", names[i]);
        cr_line *l = add_line(cc, metric);
        free(metric);
        if (ra != 0) {
            l->verdict = "inconclusive";
            l->rule = xasprintf("baseline output unreadable: %s", e1);
            cc->n_inconclusive++;
        } else if (rb != 0) {
            l->verdict = "regressed";
            l->rule = xasprintf("not archived by the current run (%s)", e2);
        } else if (strcmp(ta, tb) != 0 || na != nb) {
            l->verdict = "regressed";
            l->rule = xasprintf("differs in type/size: %s[%zu] vs baseline %s[%zu]", tb, nb, ta, na);
        } else {
            size_t first = 0;
            while (first < na && memcmp((char *)da + 4 * first, (char *)dbuf + 4 * first, 4) == 0) first++;
            l->has_cur = 1;
            l->cur = (double)k;
            l->cur_text = xasprintf("%lld/%zu unequal", (long long)k, na);
            l->delta = xasprintf("%lld/%zu unequal", (long long)k, na);
            l->verdict = "regressed";
            l->rule = xasprintf("%s must equal the baseline's element by element: %lld of %zu differ, first at %zu",
                                strcmp(tb, "i32") == 0 ? "tokens" : "values", (long long)k, na, first);
        }
    next:
        free(da);
        free(dbuf);
    }
    if (n_same > 0) {
        cr_line *l = add_line(cc, "outputs");
        l->base_text = xasprintf("%d archived", n_same);
        l->cur_text = xasprintf("%d archived", n_same);
        l->delta = xasprintf("0/%zu unequal", n_same_elems);
        l->rule = xasprintf("%d output%s (%s) bit-exact with the baseline, %zu elements", n_same, n_same == 1 ? "" : "s",
                            bitexact ? "all" : "tokens", n_same_elems);
    }
    names_free(names, n_names);
}

static int is_crash_status(const char *s) {
    return s && (strcmp(s, "crash") == 0 || strcmp(s, "timeout") == 0 || strcmp(s, "error") == 0);
}

static void decide_case(cr_case *cc, int have_base_run) {
    int regressed = 0, improved = 0;
    for (int i = 0; i < cc->n_lines; i++) {
        const char *v = cc->lines[i].verdict;
        if (!strcmp(v, "regressed") || !strcmp(v, "fail") || !strcmp(v, "slower")) regressed = 1;
        if (!strcmp(v, "improved") || !strcmp(v, "faster")) improved = 1;
    }
    if (is_crash_status(cc->cur_status)) cc->verdict = CR_CRASHED;
    else if (regressed) cc->verdict = CR_REGRESSED;
    else if (have_base_run && !cc->base_id) cc->verdict = CR_NEW;
    else if (improved || (cc->base_status && is_crash_status(cc->base_status))) cc->verdict = CR_IMPROVED;
    else cc->verdict = CR_OK;
}

static void compare_case(sqlite3 *db, cr_case *cc, const crow *bc, const crow *c, int have_base_run) {
    cc->name = xstrdup(c->name);
    cc->kind = xstrdup(c->kind);
    cc->cur_id = c->id;
    cc->cur_status = xstrdup(c->status);
    cc->error = c->error ? xstrdup(c->error) : NULL;
    if (bc) {
        cc->base_id = bc->id;
        cc->base_status = xstrdup(bc->status);
    }
    if (is_crash_status(c->status)) {
        cr_line *l = add_line(cc, "status");
        l->cur_text = xstrdup(c->status);
        l->base_text = bc ? xstrdup(bc->status) : NULL;
        l->verdict = "crashed";
        l->rule = xasprintf("case %s%s%.160s", c->status, c->error ? ": " : "", c->error ? c->error : "");
        char *nl = strchr(l->rule, '\n');
        if (nl) *nl = '\0';
        decide_case(cc, have_base_run);
        return;
    }
    int any_gate_fail = 0;
    for (int i = 0; i < c->nm; i++) {
        compare_metric(cc, bc, c, &c->m[i]);
        any_gate_fail |= c->m[i].gate_pass == 0;
    }
    if (strcmp(c->status, "fail") == 0 && !any_gate_fail) { /* failed without a failing gate metric */
        cr_line *l = add_line(cc, "status");
        l->cur_text = xstrdup("fail");
        l->verdict = "fail";
        l->rule = xasprintf("case failed%s%.160s", c->error ? ": " : "", c->error ? c->error : "");
    }
    if (bc && !is_crash_status(bc->status)) {
        int n_series = 0;
        char **series = load_names(db,
                                   "SELECT DISTINCT series FROM samples WHERE case_id = ?1 INTERSECT "
                                   "SELECT DISTINCT series FROM samples WHERE case_id = ?2 ORDER BY 1",
                                   bc->id, c->id, &n_series);
        for (int i = 0; i < n_series; i++) compare_series(db, cc, bc, c, series[i]);
        names_free(series, n_series);
        compare_outputs(db, cc, bc, c);
    }
    decide_case(cc, have_base_run);
}

/* ---------------------------------------------------------------- like with like */

static void add_diff(cr_result *r, const char *what, const char *b, const char *c, const char *cls) {
    r->diffs = xrealloc(r->diffs, sizeof(cr_diff) * (size_t)(r->n_diffs + 1));
    cr_diff *d = &r->diffs[r->n_diffs++];
    d->what = xstrdup(what);
    d->base = xstrdup(b ? b : "(none)");
    d->cur = xstrdup(c ? c : "(none)");
    d->cls = cls;
    if (strcmp(cls, "suspect") == 0) r->suspect = 1;
}

static int same_str(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void like_with_like(sqlite3 *db, cr_result *r) {
    static const struct { const char *col, *what, *cls; } fields[] = {
        {"gpu_name", "gpu", "suspect"},      {"gpu_driver", "gpu driver", "info"},
        {"cuda_runtime", "cuda runtime", "info"}, {"host", "host", "info"},
        {"cpu", "cpu", "info"},               {"os", "os", "info"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char *sql = xasprintf("SELECT (SELECT %s FROM runs WHERE id = ?1), (SELECT %s FROM runs WHERE id = ?2)",
                              fields[i].col, fields[i].col);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, r->base_run_id);
            sqlite3_bind_int64(st, 2, r->run_id);
            if (sqlite3_step(st) == SQLITE_ROW) {
                const char *b = (const char *)sqlite3_column_text(st, 0);
                const char *c = (const char *)sqlite3_column_text(st, 1);
                if (!same_str(b, c)) add_diff(r, fields[i].what, b, c, fields[i].cls);
            }
        }
        sqlite3_finalize(st);
        free(sql);
    }
    /* artifacts by kind and name, full outer join by hand */
    sqlite3_stmt *st = NULL;
    const char *sql =
        "SELECT kind, name, (SELECT sha256 FROM artifacts WHERE run_id = ?1 AND kind = k.kind AND name = k.name),"
        " (SELECT sha256 FROM artifacts WHERE run_id = ?2 AND kind = k.kind AND name = k.name) FROM"
        " (SELECT DISTINCT kind, name FROM artifacts WHERE run_id IN (?1, ?2)) k"
        " ORDER BY CASE kind WHEN 'engine' THEN 0 WHEN 'model' THEN 1 WHEN 'oracle' THEN 2 ELSE 3 END, name";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->base_run_id);
        sqlite3_bind_int64(st, 2, r->run_id);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *kind = (const char *)sqlite3_column_text(st, 0);
            const char *name = (const char *)sqlite3_column_text(st, 1);
            const char *b = (const char *)sqlite3_column_text(st, 2);
            const char *c = (const char *)sqlite3_column_text(st, 3);
            if (same_str(b, c)) continue;
            char *what = xasprintf("%s '%s' sha256", kind, name);
            const char *cls = strcmp(kind, "engine") == 0 ? "intended" : (b && c) ? "suspect" : "info";
            add_diff(r, what, b, c, cls);
            free(what);
        }
    }
    sqlite3_finalize(st);
}

/* ---------------------------------------------------------------- kernels */

/* The top 5 kernels of each profiled case, each with its share of the step, its time per step as a
 * share of the case's bandwidth floor (the floor_ms_per_token metric: docs/metrics.md) and, with a
 * baseline, the baseline run's time per step of the same case and kernel. */
static void load_kernels(sqlite3 *db, cr_result *r) {
    sqlite3_stmt *st = NULL;
    const char *sql =
        "SELECT name, kernel, calls, total_ms, ms_per_step, share, floor_ms, base_mps FROM ("
        " SELECT c.name AS name, k.kernel AS kernel, k.calls AS calls, k.total_ms AS total_ms,"
        "  k.ms_per_step AS ms_per_step, k.total_ms / NULLIF(SUM(k.total_ms) OVER (PARTITION BY k.case_id), 0) AS share,"
        "  ROW_NUMBER() OVER (PARTITION BY k.case_id ORDER BY k.total_ms DESC, k.kernel) AS rk, c.id AS cid,"
        "  (SELECT m.value FROM metrics m WHERE m.case_id = c.id AND m.name = 'floor_ms_per_token') AS floor_ms,"
        "  (SELECT k2.ms_per_step FROM kernel_profile k2 JOIN cases c2 ON c2.id = k2.case_id"
        "    WHERE c2.run_id = ?2 AND c2.name = c.name AND k2.kernel = k.kernel) AS base_mps"
        " FROM kernel_profile k JOIN cases c ON c.id = k.case_id WHERE c.run_id = ?1)"
        " WHERE rk <= 5 ORDER BY cid, rk";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, r->base_run_id); /* 0: no run has it, so no baseline values */
    while (sqlite3_step(st) == SQLITE_ROW) {
        r->kernels = xrealloc(r->kernels, sizeof(cr_kernel) * (size_t)(r->n_kernels + 1));
        cr_kernel *k = &r->kernels[r->n_kernels++];
        k->case_name = store_col_dup(st, 0);
        k->kernel = store_col_dup(st, 1);
        k->calls = sqlite3_column_int64(st, 2);
        k->total_ms = sqlite3_column_double(st, 3);
        k->ms_per_step = sqlite3_column_type(st, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4);
        k->share = sqlite3_column_type(st, 5) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 5);
        const double floor_ms = sqlite3_column_type(st, 6) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 6);
        k->floor_share = floor_ms > 0 ? k->ms_per_step / floor_ms : NAN;
        k->base_ms_per_step = sqlite3_column_type(st, 7) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 7);
    }
    sqlite3_finalize(st);
}

/* ---------------------------------------------------------------- API */

int cr_resolve_against(sqlite3 *db, const char *db_path, const char *spec, int64_t *run_id, char **label,
                       char *err, size_t err_len) {
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT run_id FROM baselines WHERE name = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, spec, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *run_id = sqlite3_column_int64(st, 0);
            found = 1;
        }
    }
    sqlite3_finalize(st);
    if (found) {
        if (label) *label = xasprintf("baseline '%s' (run %lld)", spec, (long long)*run_id);
        return 0;
    }
    long long id;
    if (strcmp(spec, "latest") == 0 || parse_int(spec, &id) == 0) {
        char e[256];
        if (store_resolve_run(db, spec, run_id, e, sizeof e) == 0) {
            if (label) *label = xasprintf("run %lld", (long long)*run_id);
            return 0;
        }
    }
    snprintf(err, err_len, "%s: no baseline or run '%s'", db_path ? db_path : "results DB", spec);
    return -1;
}

int cr_default_baseline(sqlite3 *db, int64_t run_id, int64_t *base_run_id, char **label) {
    *base_run_id = 0;
    sqlite3_stmt *st = NULL;
    char *path = NULL;
    if (sqlite3_prepare_v2(db, "SELECT suite_path FROM runs WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        if (sqlite3_step(st) == SQLITE_ROW) path = store_col_dup(st, 0);
    }
    sqlite3_finalize(st);
    if (!path) return 0;
    suite *s = NULL;
    char err[512];
    if (suite_load(path, &s, err, sizeof err) == 0 && s->baseline) {
        int64_t id;
        if (cr_resolve_against(db, NULL, s->baseline, &id, NULL, err, sizeof err) == 0 && id != run_id) {
            *base_run_id = id;
            if (label) *label = xasprintf("baseline '%s' (run %lld, from the suite)", s->baseline, (long long)id);
        }
    }
    if (s) suite_free(s);
    free(path);
    return 0;
}

int compare_runs(sqlite3 *db, int64_t run_id, int64_t base_run_id, const char *against_label, cr_result *out,
                 char *err, size_t err_len) {
    int ret = -1;
    crow *cur = NULL, *base = NULL;
    int n_cur = 0, n_base = 0;
    memset(out, 0, sizeof(*out));
    out->run_id = run_id;
    out->base_run_id = base_run_id;
    out->against = against_label ? xstrdup(against_label) : NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT suite_name, started_at, status, (SELECT sha256 FROM artifacts WHERE run_id = r.id"
                           " AND kind = 'engine' ORDER BY id LIMIT 1), (SELECT started_at FROM runs WHERE id = ?2)"
                           " FROM runs r WHERE id = ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "reading run %lld: %s", (long long)run_id, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, base_run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        snprintf(err, err_len, "no run %lld", (long long)run_id);
        goto cleanup;
    }
    out->suite = store_col_dup(st, 0);
    out->started_at = store_col_dup(st, 1);
    out->status = store_col_dup(st, 2);
    out->engine_sha256 = store_col_dup(st, 3);
    out->base_started_at = store_col_dup(st, 4);
    if (load_cases(db, run_id, &cur, &n_cur, err, err_len) != 0) goto cleanup;
    if (base_run_id && load_cases(db, base_run_id, &base, &n_base, err, err_len) != 0) goto cleanup;

    out->cases = xcalloc((size_t)(n_cur + n_base) + 1, sizeof(cr_case));
    for (int i = 0; i < n_cur; i++) {
        const crow *bc = base_run_id ? find_case(base, n_base, cur[i].name) : NULL;
        compare_case(db, &out->cases[out->n_cases++], bc, &cur[i], base_run_id != 0);
    }
    for (int i = 0; i < n_base; i++) {
        if (find_case(cur, n_cur, base[i].name)) continue;
        cr_case *cc = &out->cases[out->n_cases++];
        cc->name = xstrdup(base[i].name);
        cc->kind = xstrdup(base[i].kind);
        cc->base_id = base[i].id;
        cc->base_status = xstrdup(base[i].status);
        cc->verdict = CR_MISSING;
        cr_line *l = add_line(cc, "case");
        l->base_text = xstrdup(base[i].status);
        l->verdict = "missing";
        l->rule = xstrdup("in the baseline, not in this run");
    }
    for (int i = 0; i < out->n_cases; i++) {
        out->counts[out->cases[i].verdict]++;
        out->n_inconclusive += out->cases[i].n_inconclusive;
        for (int j = 0; j < out->cases[i].n_lines; j++)
            out->n_gate_fail += strcmp(out->cases[i].lines[j].verdict, "fail") == 0;
    }
    if (base_run_id) like_with_like(db, out);
    load_kernels(db, out);
    ret = 0;
cleanup:
    sqlite3_finalize(st);
    crows_free(cur, n_cur);
    crows_free(base, n_base);
    if (ret != 0) cr_result_free(out);
    return ret;
}

void cr_result_free(cr_result *r) {
    for (int i = 0; i < r->n_cases; i++) {
        cr_case *c = &r->cases[i];
        for (int j = 0; j < c->n_lines; j++) {
            cr_line *l = &c->lines[j];
            free(l->metric);
            free(l->base_text);
            free(l->cur_text);
            free(l->delta);
            free(l->rule);
        }
        free(c->lines);
        free(c->name);
        free(c->kind);
        free(c->cur_status);
        free(c->base_status);
        free(c->error);
    }
    free(r->cases);
    for (int i = 0; i < r->n_diffs; i++) {
        free(r->diffs[i].what);
        free(r->diffs[i].base);
        free(r->diffs[i].cur);
    }
    free(r->diffs);
    for (int i = 0; i < r->n_kernels; i++) {
        free(r->kernels[i].case_name);
        free(r->kernels[i].kernel);
    }
    free(r->kernels);
    free(r->against);
    free(r->suite);
    free(r->started_at);
    free(r->status);
    free(r->engine_sha256);
    free(r->base_started_at);
    memset(r, 0, sizeof(*r));
}

int cr_exit_code(const cr_result *r) {
    return (r->counts[CR_REGRESSED] || r->counts[CR_CRASHED] || r->n_gate_fail) ? EXIT_FAIL : EXIT_OK;
}

int report_against(sqlite3 *db, int64_t run_id, const char *against, FILE *out) {
    char err[512];
    int64_t base = 0;
    char *label = NULL;
    cr_result r;
    int ret;
    if (against) {
        if (cr_resolve_against(db, sqlite3_db_filename(db, "main"), against, &base, &label, err, sizeof err) != 0) {
            cli_error("%s", err);
            return EXIT_USAGE;
        }
    } else {
        cr_default_baseline(db, run_id, &base, &label);
    }
    if (compare_runs(db, run_id, base, label, &r, err, sizeof err) != 0) {
        cli_error("%s", err);
        free(label);
        return EXIT_USAGE;
    }
    cr_write_text(&r, out, 0, use_color(out));
    ret = cr_exit_code(&r);
    cr_result_free(&r);
    free(label);
    return ret;
}
