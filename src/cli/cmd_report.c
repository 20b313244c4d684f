/*
 * cmd_report.c - `kestrel-eval report`: one run against a baseline (or its own
 * gates), written as text (colours on a TTY), Markdown, JSON, JUnit XML or one
 * self-contained HTML file with inline SVG charts. The decisions are made in
 * compare_runs.c; this file only writes them. Formats: docs/methodology.md.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "compare_runs.h"
#include "store.h"

/* ---------------------------------------------------------------- escaping */

enum esc_mode { ESC_NONE, ESC_XML, ESC_JSON, ESC_MD };

/* Length of the valid UTF-8 sequence at s, or 0 when invalid. */
static int utf8_len(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xc2)) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* Write s escaped for the mode; invalid UTF-8 bytes become '?', control
 * characters (other than \n \t in text) are dropped for XML. */
static void put_esc(FILE *f, const char *s, enum esc_mode mode) {
    if (!s) return;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_len(p);
        if (n == 0) {
            fputc('?', f);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
            continue;
        }
        unsigned char c = *p++;
        switch (mode) {
        case ESC_XML:
            if (c == '&') fputs("&amp;", f);
            else if (c == '<') fputs("&lt;", f);
            else if (c == '>') fputs("&gt;", f);
            else if (c == '"') fputs("&quot;", f);
            else if (c == '\'') fputs("&#39;", f);
            else if (c >= 0x20 || c == '\n' || c == '\t') fputc(c, f);
            break;
        case ESC_JSON:
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else if (c == '\n') fputs("\\n", f);
            else if (c == '\t') fputs("\\t", f);
            else if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
            break;
        case ESC_MD:
            if (c == '|') fputs("\\|", f);
            else if (c == '\n') fputc(' ', f);
            else if (c == '<') fputs("&lt;", f);
            else fputc(c, f);
            break;
        default:
            fputc(c, f);
        }
    }
}

static void json_str(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    put_esc(f, s, ESC_JSON);
    fputc('"', f);
}

static void json_num(FILE *f, int has, double v) {
    if (has && isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

/* A value cell: "3.1e-07", "0.977 (84/86)", "86/86", or "-". Caller frees. */
static char *cell(int has, double v, const char *text) {
    if (has && text) return xasprintf("%.4g (%s)", v, text);
    if (has) return xasprintf("%.4g", v);
    if (text) return xstrdup(text);
    return xstrdup("-");
}

static int is_bad(const char *v) {
    return !strcmp(v, "regressed") || !strcmp(v, "fail") || !strcmp(v, "slower") || !strcmp(v, "crashed");
}
static int is_good(const char *v) {
    return !strcmp(v, "improved") || !strcmp(v, "faster");
}
static int is_warn(const char *v) {
    return !strcmp(v, "inconclusive") || !strcmp(v, "new") || !strcmp(v, "missing");
}

static int show_case(const cr_case *c, int only_regressions) {
    return !only_regressions || c->verdict == CR_REGRESSED || c->verdict == CR_CRASHED;
}

static char *short_sha(const char *s) {
    return xasprintf("%.12s", s ? s : "-");
}

static void summary_line(const cr_result *r, FILE *f) {
    fprintf(f, "%d cases: %d ok, %d improved, %d regressed, %d new, %d missing, %d crashed; %d gate failures; "
               "%d inconclusive",
            r->n_cases, r->counts[CR_OK], r->counts[CR_IMPROVED], r->counts[CR_REGRESSED], r->counts[CR_NEW],
            r->counts[CR_MISSING], r->counts[CR_CRASHED], r->n_gate_fail, r->n_inconclusive);
}

/* ---------------------------------------------------------------- text */

/* A top kernel's derived cells: its share of the floor ("30.0%") and the baseline's ms per step with
 * the change ("0.500 (+20.0%)"); "" where the run had no probe / the baseline no such kernel. */
static void kernel_cells(const cr_kernel *k, char *floor, size_t nf, char *base, size_t nb) {
    floor[0] = base[0] = '\0';
    if (isfinite(k->floor_share)) snprintf(floor, nf, "%.1f%%", 100 * k->floor_share);
    if (isfinite(k->base_ms_per_step) && k->base_ms_per_step > 0)
        snprintf(base, nb, "%.3f (%+.1f%%)", k->base_ms_per_step, 100 * (k->ms_per_step / k->base_ms_per_step - 1));
}

int cr_write_text(const cr_result *r, FILE *f, int only_regressions, int color) {
    const char *red = color ? "\033[31;1m" : "", *green = color ? "\033[32m" : "", *yellow = color ? "\033[33m" : "",
               *bold = color ? "\033[1m" : "", *off = color ? "\033[0m" : "";
    char *sha = short_sha(r->engine_sha256);
    fprintf(f, "%sreport: run %lld%s (suite %s, %s, %s, engine %s)\n", bold, (long long)r->run_id, off,
            r->suite ? r->suite : "-", r->started_at ? r->started_at : "-", r->status ? r->status : "-", sha);
    free(sha);
    if (r->base_run_id)
        fprintf(f, "against: %s, started %s\n", r->against ? r->against : "?",
                r->base_started_at ? r->base_started_at : "-");
    else
        fprintf(f, "against: nothing (no baseline given or set for the suite): the run's own gates only\n");
    if (r->base_run_id) {
        fprintf(f, "like with like:\n");
        if (r->n_diffs == 0) fprintf(f, "  same engine, model, oracle, prompts, GPU, driver and host\n");
        if (r->suspect)
            fprintf(f, "  %s!! SUSPECT COMPARISON: inputs or hardware differ (see below); verdicts may not mean a "
                       "code regression%s\n",
                    red, off);
        for (int i = 0; i < r->n_diffs; i++) {
            const cr_diff *d = &r->diffs[i];
            int sus = !strcmp(d->cls, "suspect");
            fprintf(f, "  %s%-9s%s %s: %s -> %s\n", sus ? red : "", d->cls, sus ? off : "", d->what, d->base, d->cur);
        }
    }
    /* column widths */
    const char *hdr[6] = {"metric", "baseline", "current", "delta", "verdict", "rule"};
    size_t w[5];
    for (int k = 0; k < 5; k++) w[k] = strlen(hdr[k]);
    for (int i = 0; i < r->n_cases; i++) {
        if (!show_case(&r->cases[i], only_regressions)) continue;
        for (int j = 0; j < r->cases[i].n_lines; j++) {
            const cr_line *l = &r->cases[i].lines[j];
            char *b = cell(l->has_base, l->base, l->base_text), *c = cell(l->has_cur, l->cur, l->cur_text);
            size_t len[5] = {strlen(l->metric), strlen(b), strlen(c), l->delta ? strlen(l->delta) : 1,
                             strlen(l->verdict)};
            for (int k = 0; k < 5; k++)
                if (len[k] > w[k]) w[k] = len[k];
            free(b);
            free(c);
        }
    }
    fprintf(f, "\n  %-*s  %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], hdr[0], (int)w[1], hdr[1], (int)w[2], hdr[2],
            (int)w[3], hdr[3], (int)w[4], hdr[4], hdr[5]);
    for (int i = 0; i < r->n_cases; i++) {
        const cr_case *cc = &r->cases[i];
        if (!show_case(cc, only_regressions)) continue;
        const char *v = cr_verdict_name(cc->verdict);
        const char *col = is_bad(v) ? red : is_good(v) ? green : is_warn(v) ? yellow : "";
        fprintf(f, "%s%s%s (%s): %s%s%s%s\n", bold, cc->name, off, cc->kind ? cc->kind : "-", col, v,
                cc->n_inconclusive ? " (with inconclusive lines)" : "", off);
        for (int j = 0; j < cc->n_lines; j++) {
            const cr_line *l = &cc->lines[j];
            char *b = cell(l->has_base, l->base, l->base_text), *c = cell(l->has_cur, l->cur, l->cur_text);
            const char *lc = is_bad(l->verdict) ? red : is_good(l->verdict) ? green : is_warn(l->verdict) ? yellow : "";
            fprintf(f, "  %-*s  %-*s  %-*s  %-*s  %s%-*s%s  %s\n", (int)w[0], l->metric, (int)w[1], b, (int)w[2], c,
                    (int)w[3], l->delta ? l->delta : "-", lc, (int)w[4], l->verdict, off, l->rule ? l->rule : "");
            free(b);
            free(c);
        }
    }
    fputc('\n', f);
    summary_line(r, f);
    fputc('\n', f);
    if (r->n_kernels) {
        fprintf(f, "\ntop kernels (share of the case's profiled step time; ms per step, as %% of the case's floor%s):\n",
                r->base_run_id ? "; the baseline's ms per step" : "");
        for (int i = 0; i < r->n_kernels; i++) {
            const cr_kernel *k = &r->kernels[i];
            char fl[32], bs[64];
            kernel_cells(k, fl, sizeof fl, bs, sizeof bs);
            fprintf(f, "  %-24s %-28s %8lld calls  %10.3f ms  %5.1f%%  %8.3f ms/step", k->case_name, k->kernel,
                    (long long)k->calls, k->total_ms, 100 * k->share, k->ms_per_step);
            if (fl[0]) fprintf(f, "  %7s of floor", fl);
            else fputs("  no floor", f);
            if (bs[0]) fprintf(f, "  baseline %s", bs);
            else if (r->base_run_id) fputs("  not in the baseline", f);
            fputc('\n', f);
        }
    }
    return ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- markdown */

int cr_write_md(const cr_result *r, FILE *f, int only_regressions) {
    fprintf(f, "### kestrel-eval report: run %lld", (long long)r->run_id);
    if (r->suite) {
        fputs(" (suite `", f);
        put_esc(f, r->suite, ESC_MD);
        fputs("`)", f);
    }
    fputs(r->base_run_id ? " against " : ": own gates only", f);
    if (r->base_run_id) put_esc(f, r->against, ESC_MD);
    fputs("\n\n", f);
    int exit_code = cr_exit_code(r);
    fprintf(f, "**%s**: ", exit_code ? "FAIL" : "PASS");
    summary_line(r, f);
    fputs("\n\n", f);
    if (r->suspect)
        fputs("> :warning: **Suspect comparison**: the model, oracle, prompts or GPU differ between the runs.\n\n", f);
    if (r->n_diffs) {
        fputs("| difference | baseline | current | class |\n| --- | --- | --- | --- |\n", f);
        for (int i = 0; i < r->n_diffs; i++) {
            fputs("| ", f);
            put_esc(f, r->diffs[i].what, ESC_MD);
            fputs(" | `", f);
            put_esc(f, r->diffs[i].base, ESC_MD);
            fputs("` | `", f);
            put_esc(f, r->diffs[i].cur, ESC_MD);
            fprintf(f, "` | %s%s%s |\n", !strcmp(r->diffs[i].cls, "suspect") ? "**" : "", r->diffs[i].cls,
                    !strcmp(r->diffs[i].cls, "suspect") ? "**" : "");
        }
        fputc('\n', f);
    }
    fputs("| case | metric | baseline | current | delta | verdict | rule |\n"
          "| --- | --- | --- | --- | --- | --- | --- |\n", f);
    for (int i = 0; i < r->n_cases; i++) {
        const cr_case *cc = &r->cases[i];
        if (!show_case(cc, only_regressions)) continue;
        for (int j = 0; j < cc->n_lines; j++) {
            const cr_line *l = &cc->lines[j];
            char *b = cell(l->has_base, l->base, l->base_text), *c = cell(l->has_cur, l->cur, l->cur_text);
            fputs("| ", f);
            if (j == 0) {
                fputs("`", f);
                put_esc(f, cc->name, ESC_MD);
                fprintf(f, "` %s%s%s", is_bad(cr_verdict_name(cc->verdict)) ? "**" : "", cr_verdict_name(cc->verdict),
                        is_bad(cr_verdict_name(cc->verdict)) ? "**" : "");
            }
            fputs(" | ", f);
            put_esc(f, l->metric, ESC_MD);
            fputs(" | ", f);
            put_esc(f, b, ESC_MD);
            fputs(" | ", f);
            put_esc(f, c, ESC_MD);
            fputs(" | ", f);
            put_esc(f, l->delta ? l->delta : "", ESC_MD);
            fprintf(f, " | %s%s%s | ", is_bad(l->verdict) ? "**" : "", l->verdict, is_bad(l->verdict) ? "**" : "");
            put_esc(f, l->rule ? l->rule : "", ESC_MD);
            fputs(" |\n", f);
            free(b);
            free(c);
        }
    }
    if (r->n_kernels) {
        fputs("\n| case | kernel | calls | total ms | share | ms/step | of floor | baseline ms/step |\n"
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n", f);
        for (int i = 0; i < r->n_kernels; i++) {
            const cr_kernel *k = &r->kernels[i];
            char fl[32], bs[64];
            kernel_cells(k, fl, sizeof fl, bs, sizeof bs);
            fputs("| ", f);
            put_esc(f, k->case_name, ESC_MD);
            fputs(" | ", f);
            put_esc(f, k->kernel, ESC_MD);
            fprintf(f, " | %lld | %.3f | %.1f%% | %.3f | %s | %s |\n", (long long)k->calls, k->total_ms, 100 * k->share,
                    k->ms_per_step, fl[0] ? fl : "-", bs[0] ? bs : "-");
        }
    }
    return ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- json */

int cr_write_json(const cr_result *r, FILE *f, int only_regressions) {
    fprintf(f, "{\n  \"format\": \"kestrel-report-1\",\n  \"run\": {\"id\": %lld, \"suite\": ", (long long)r->run_id);
    json_str(f, r->suite);
    fputs(", \"started_at\": ", f);
    json_str(f, r->started_at);
    fputs(", \"status\": ", f);
    json_str(f, r->status);
    fputs(", \"engine_sha256\": ", f);
    json_str(f, r->engine_sha256);
    fputs("},\n  \"against\": ", f);
    if (r->base_run_id) {
        fprintf(f, "{\"run_id\": %lld, \"label\": ", (long long)r->base_run_id);
        json_str(f, r->against);
        fputs(", \"started_at\": ", f);
        json_str(f, r->base_started_at);
        fputs("}", f);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\n  \"suspect\": %s,\n  \"differences\": [", r->suspect ? "true" : "false");
    for (int i = 0; i < r->n_diffs; i++) {
        fprintf(f, "%s\n    {\"what\": ", i ? "," : "");
        json_str(f, r->diffs[i].what);
        fputs(", \"baseline\": ", f);
        json_str(f, r->diffs[i].base);
        fputs(", \"current\": ", f);
        json_str(f, r->diffs[i].cur);
        fputs(", \"class\": ", f);
        json_str(f, r->diffs[i].cls);
        fputs("}", f);
    }
    fprintf(f, "%s],\n  \"summary\": {\"cases\": %d, \"ok\": %d, \"improved\": %d, \"regressed\": %d, \"new\": %d, "
               "\"missing\": %d, \"crashed\": %d, \"gate_failures\": %d, \"inconclusive\": %d, \"exit_code\": %d},\n"
               "  \"cases\": [",
            r->n_diffs ? "\n  " : "", r->n_cases, r->counts[CR_OK], r->counts[CR_IMPROVED], r->counts[CR_REGRESSED],
            r->counts[CR_NEW], r->counts[CR_MISSING], r->counts[CR_CRASHED], r->n_gate_fail, r->n_inconclusive,
            cr_exit_code(r));
    int first = 1;
    for (int i = 0; i < r->n_cases; i++) {
        const cr_case *cc = &r->cases[i];
        if (!show_case(cc, only_regressions)) continue;
        fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
        first = 0;
        json_str(f, cc->name);
        fputs(", \"kind\": ", f);
        json_str(f, cc->kind);
        fprintf(f, ", \"verdict\": \"%s\", \"status\": ", cr_verdict_name(cc->verdict));
        json_str(f, cc->cur_status);
        fputs(", \"baseline_status\": ", f);
        json_str(f, cc->base_status);
        fputs(", \"error\": ", f);
        json_str(f, cc->error);
        fputs(",\n     \"lines\": [", f);
        for (int j = 0; j < cc->n_lines; j++) {
            const cr_line *l = &cc->lines[j];
            fprintf(f, "%s\n      {\"metric\": ", j ? "," : "");
            json_str(f, l->metric);
            fputs(", \"baseline\": ", f);
            json_num(f, l->has_base, l->base);
            fputs(", \"current\": ", f);
            json_num(f, l->has_cur, l->cur);
            fputs(", \"baseline_text\": ", f);
            json_str(f, l->base_text);
            fputs(", \"current_text\": ", f);
            json_str(f, l->cur_text);
            fputs(", \"delta\": ", f);
            json_str(f, l->delta);
            fputs(", \"verdict\": ", f);
            json_str(f, l->verdict);
            fputs(", \"rule\": ", f);
            json_str(f, l->rule);
            fputs("}", f);
        }
        fprintf(f, "%s]}", cc->n_lines ? "\n     " : "");
    }
    fprintf(f, "%s],\n  \"kernels\": [", first ? "" : "\n  ");
    for (int i = 0; i < r->n_kernels; i++) {
        const cr_kernel *k = &r->kernels[i];
        fprintf(f, "%s\n    {\"case\": ", i ? "," : "");
        json_str(f, k->case_name);
        fputs(", \"kernel\": ", f);
        json_str(f, k->kernel);
        fprintf(f, ", \"calls\": %lld, \"total_ms\": ", (long long)k->calls);
        json_num(f, 1, k->total_ms);
        fputs(", \"ms_per_step\": ", f);
        json_num(f, 1, k->ms_per_step);
        fputs(", \"share\": ", f);
        json_num(f, 1, k->share);
        fputs(", \"floor_share\": ", f);
        json_num(f, 1, k->floor_share);
        fputs(", \"baseline_ms_per_step\": ", f);
        json_num(f, 1, k->base_ms_per_step);
        fputs("}", f);
    }
    fprintf(f, "%s]\n}\n", r->n_kernels ? "\n  " : "");
    return ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- junit */

static void junit_lines(FILE *f, const cr_case *cc) {
    for (int j = 0; j < cc->n_lines; j++) {
        const cr_line *l = &cc->lines[j];
        char *b = cell(l->has_base, l->base, l->base_text), *c = cell(l->has_cur, l->cur, l->cur_text);
        char *line = xasprintf("%s: %s; baseline %s, current %s%s%s; %s\n", l->metric, l->verdict, b, c,
                               l->delta ? ", " : "", l->delta ? l->delta : "", l->rule ? l->rule : "");
        put_esc(f, line, ESC_XML);
        free(line);
        free(b);
        free(c);
    }
}

int cr_write_junit(const cr_result *r, FILE *f, int only_regressions) {
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    for (int i = 0; i < r->n_cases; i++) {
        if (!show_case(&r->cases[i], only_regressions)) continue;
        tests++;
        failures += r->cases[i].verdict == CR_REGRESSED;
        errors += r->cases[i].verdict == CR_CRASHED;
        skipped += r->cases[i].verdict == CR_MISSING;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kestrel-eval\" tests=\"%d\" "
               "failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n  <testsuite name=\"",
            tests, failures, errors, skipped);
    put_esc(f, r->suite ? r->suite : "kestrel", ESC_XML);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" timestamp=\"", tests, failures, errors,
            skipped);
    put_esc(f, r->started_at ? r->started_at : "", ESC_XML);
    fprintf(f, "\">\n    <properties>\n      <property name=\"run_id\" value=\"%lld\"/>\n", (long long)r->run_id);
    fputs("      <property name=\"against\" value=\"", f);
    put_esc(f, r->against ? r->against : "own gates", ESC_XML);
    fprintf(f, "\"/>\n      <property name=\"suspect\" value=\"%s\"/>\n", r->suspect ? "true" : "false");
    for (int i = 0; i < r->n_diffs; i++) {
        char *v = xasprintf("%s -> %s (%s)", r->diffs[i].base, r->diffs[i].cur, r->diffs[i].cls);
        fputs("      <property name=\"", f);
        put_esc(f, r->diffs[i].what, ESC_XML);
        fputs("\" value=\"", f);
        put_esc(f, v, ESC_XML);
        fputs("\"/>\n", f);
        free(v);
    }
    fputs("    </properties>\n", f);
    for (int i = 0; i < r->n_cases; i++) {
        const cr_case *cc = &r->cases[i];
        if (!show_case(cc, only_regressions)) continue;
        fputs("    <testcase classname=\"", f);
        put_esc(f, r->suite ? r->suite : "kestrel", ESC_XML);
        fputs(".", f);
        put_esc(f, cc->kind ? cc->kind : "case", ESC_XML);
        fputs("\" name=\"", f);
        put_esc(f, cc->name, ESC_XML);
        fputs("\">\n", f);
        const char *v = cr_verdict_name(cc->verdict);
        if (cc->verdict == CR_REGRESSED || cc->verdict == CR_CRASHED) {
            const char *tag = cc->verdict == CR_CRASHED ? "error" : "failure";
            fprintf(f, "      <%s type=\"%s\" message=\"", tag, v);
            char *msg = NULL;
            for (int j = 0; j < cc->n_lines && !msg; j++)
                if (is_bad(cc->lines[j].verdict))
                    msg = xasprintf("%s %s: %s", cc->lines[j].metric, cc->lines[j].verdict,
                                    cc->lines[j].rule ? cc->lines[j].rule : "");
            put_esc(f, msg ? msg : v, ESC_XML);
            free(msg);
            fputs("\">", f);
            junit_lines(f, cc);
            if (cc->error) put_esc(f, cc->error, ESC_XML);
            fprintf(f, "</%s>\n", tag);
        } else if (cc->verdict == CR_MISSING) {
            fputs("      <skipped message=\"missing: in the baseline, not in this run\"/>\n", f);
        } else {
            fputs("      <system-out>", f);
            junit_lines(f, cc);
            fputs("</system-out>\n", f);
        }
        fputs("    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- html */

/* Last n values of a metric of a case over runs up to run_id (oldest first). */
static int history_points(sqlite3 *db, const char *case_name, const char *metric, int64_t run_id, int last_n,
                          int64_t *runs, double *vals) { /* runs, vals: (last_n,) */
    sqlite3_stmt *st = NULL;
    int n = 0;
    const char *sql = "SELECT c.run_id, m.value FROM cases c JOIN metrics m ON m.case_id = c.id"
                      " WHERE c.name = ?1 AND m.name = ?2 AND c.run_id <= ?3 AND m.value IS NOT NULL"
                      " ORDER BY c.run_id DESC LIMIT ?4";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, case_name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, metric, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, run_id);
        sqlite3_bind_int(st, 4, last_n);
        while (n < last_n && sqlite3_step(st) == SQLITE_ROW) {
            runs[n] = sqlite3_column_int64(st, 0);
            vals[n] = sqlite3_column_double(st, 1);
            n++;
        }
    }
    sqlite3_finalize(st);
    for (int i = 0; i < n / 2; i++) { /* oldest first */
        int64_t tr = runs[i];
        runs[i] = runs[n - 1 - i];
        runs[n - 1 - i] = tr;
        double tv = vals[i];
        vals[i] = vals[n - 1 - i];
        vals[n - 1 - i] = tv;
    }
    return n;
}

/* An inline SVG line chart of one metric over the last runs; the current run
 * is drawn as a larger red point with class "current". Log scale for max_rel. */
static void svg_chart(FILE *f, sqlite3 *db, const cr_case *cc, const char *metric, const char *title, int64_t run_id,
                      int last_n) {
    int64_t *runs = xmalloc(sizeof(int64_t) * (size_t)last_n);
    double *vals = xmalloc(sizeof(double) * (size_t)last_n);
    int n = history_points(db, cc->name, metric, run_id, last_n, runs, vals);
    if (n == 0) goto cleanup;
    int logy = strstr(metric, "max_rel") != NULL;
    double y[1024];
    if (n > 1024) n = 1024;
    for (int i = 0; i < n; i++) y[i] = logy ? log10(fmax(vals[i], 1e-12)) : vals[i];
    double lo = y[0], hi = y[0];
    for (int i = 1; i < n; i++) {
        lo = fmin(lo, y[i]);
        hi = fmax(hi, y[i]);
    }
    if (hi - lo < 1e-12) {
        lo -= 0.5;
        hi += 0.5;
    }
    const double W = 360, H = 140, L = 60, R = 10, T = 20, B = 24;
    fprintf(f, "<svg class=\"chart\" data-metric=\"%s\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "role=\"img\">\n<title>",
            metric, W, H, W, H);
    put_esc(f, cc->name, ESC_XML);
    fprintf(f, ": %s over the last %d runs</title>\n", title, n);
    fprintf(f, "<text x=\"%.0f\" y=\"14\" class=\"ct\">%s%s</text>\n", L, title, logy ? " (log scale)" : "");
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"axis\"/>\n", L, H - B, W - R, H - B);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"axis\"/>\n", L, T, L, H - B);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"yl\">%.3g</text>\n", L - 4, T + 4, logy ? pow(10, hi) : hi);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"yl\">%.3g</text>\n", L - 4, H - B, logy ? pow(10, lo) : lo);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"xl\">run %lld</text>\n", L, H - 6, (long long)runs[0]);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"xl\" text-anchor=\"end\">run %lld</text>\n", W - R, H - 6,
            (long long)runs[n - 1]);
    double px[1024], py[1024];
    for (int i = 0; i < n; i++) {
        px[i] = n == 1 ? (L + W - R) / 2 : L + (W - R - L) * i / (n - 1);
        py[i] = (H - B) - (H - B - T) * (y[i] - lo) / (hi - lo);
    }
    fputs("<polyline class=\"line\" points=\"", f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%.1f,%.1f", i ? " " : "", px[i], py[i]);
    fputs("\"/>\n", f);
    for (int i = 0; i < n; i++) {
        int cur = runs[i] == run_id;
        fprintf(f, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\"><title>run %lld: %.4g%s</title></circle>\n",
                cur ? "pt current" : "pt", px[i], py[i], cur ? 5 : 3, (long long)runs[i], vals[i],
                cur ? " (this run)" : "");
    }
    fputs("</svg>\n", f);
cleanup:
    free(runs);
    free(vals);
}

int cr_write_html(const cr_result *r, sqlite3 *db, int last_n, FILE *f, int only_regressions) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kestrel-eval report: run ", f);
    fprintf(f, "%lld</title>\n", (long long)r->run_id);
    fputs("<style>\n"
          "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\n"
          "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}\n"
          "code{word-break:break-all}th{background:#f0f0f0}.v-regressed,.v-fail,.v-slower,.v-crashed{color:#b00;font-weight:bold}\n"
          ".v-improved,.v-faster{color:#070}.v-inconclusive,.v-new,.v-missing{color:#a60}\n"
          ".suspect{background:#fdd;border:2px solid #b00;padding:.5em;font-weight:bold}\n"
          ".chart{border:1px solid #ddd;margin:4px;background:#fff}.axis{stroke:#888}.line{fill:none;stroke:#36c;"
          "stroke-width:1.5}\n.pt{fill:#36c}.current{fill:#d00;stroke:#000}.ct{font-size:12px}.yl{font-size:10px;"
          "text-anchor:end}.xl{font-size:10px}\nsection{margin-top:1.2em}\n"
          "</style>\n</head>\n<body>\n", f);
    fprintf(f, "<h1>kestrel-eval report: run %lld</h1>\n<p>suite <b>", (long long)r->run_id);
    put_esc(f, r->suite ? r->suite : "-", ESC_XML);
    fputs("</b>, started ", f);
    put_esc(f, r->started_at ? r->started_at : "-", ESC_XML);
    fputs(", status ", f);
    put_esc(f, r->status ? r->status : "-", ESC_XML);
    fputs(", engine <code>", f);
    put_esc(f, r->engine_sha256 ? r->engine_sha256 : "-", ESC_XML);
    fputs("</code></p>\n<p>against: ", f);
    put_esc(f, r->base_run_id ? r->against : "nothing (the run's own gates only)", ESC_XML);
    fprintf(f, "</p>\n<p class=\"summary\"><b>%s</b>: ", cr_exit_code(r) ? "FAIL" : "PASS");
    summary_line(r, f);
    fputs("</p>\n", f);
    if (r->suspect)
        fputs("<p class=\"suspect\">Suspect comparison: the model, oracle, prompts or GPU differ between the two "
              "runs.</p>\n", f);
    if (r->n_diffs) {
        fputs("<h2>Like with like</h2>\n<table><tr><th>difference</th><th>baseline</th><th>current</th><th>class</th>"
              "</tr>\n", f);
        for (int i = 0; i < r->n_diffs; i++) {
            fputs("<tr><td>", f);
            put_esc(f, r->diffs[i].what, ESC_XML);
            fputs("</td><td><code>", f);
            put_esc(f, r->diffs[i].base, ESC_XML);
            fputs("</code></td><td><code>", f);
            put_esc(f, r->diffs[i].cur, ESC_XML);
            fprintf(f, "</code></td><td class=\"%s\">%s</td></tr>\n", !strcmp(r->diffs[i].cls, "suspect") ? "v-fail" : "",
                    r->diffs[i].cls);
        }
        fputs("</table>\n", f);
    }
    for (int i = 0; i < r->n_cases; i++) {
        const cr_case *cc = &r->cases[i];
        if (!show_case(cc, only_regressions)) continue;
        const char *v = cr_verdict_name(cc->verdict);
        fputs("<section class=\"case\">\n<h2>", f);
        put_esc(f, cc->name, ESC_XML);
        fputs(" <small>(", f);
        put_esc(f, cc->kind ? cc->kind : "-", ESC_XML);
        fprintf(f, ")</small> <span class=\"v-%s\">%s</span></h2>\n", v, v);
        fputs("<table><tr><th>metric</th><th>baseline</th><th>current</th><th>delta</th><th>verdict</th><th>rule</th>"
              "</tr>\n", f);
        for (int j = 0; j < cc->n_lines; j++) {
            const cr_line *l = &cc->lines[j];
            char *b = cell(l->has_base, l->base, l->base_text), *c = cell(l->has_cur, l->cur, l->cur_text);
            fputs("<tr><td>", f);
            put_esc(f, l->metric, ESC_XML);
            fputs("</td><td>", f);
            put_esc(f, b, ESC_XML);
            fputs("</td><td>", f);
            put_esc(f, c, ESC_XML);
            fputs("</td><td>", f);
            put_esc(f, l->delta ? l->delta : "", ESC_XML);
            fprintf(f, "</td><td class=\"v-%s\">%s</td><td>", l->verdict, l->verdict);
            put_esc(f, l->rule ? l->rule : "", ESC_XML);
            fputs("</td></tr>\n", f);
            free(b);
            free(c);
        }
        fputs("</table>\n", f);
        if (cc->cur_id) {
            fputs("<div class=\"charts\">\n", f);
            svg_chart(f, db, cc, "ms_per_token_median", "ms/token (median)", r->run_id, last_n);
            svg_chart(f, db, cc, "max_rel", "max_rel", r->run_id, last_n);
            fputs("</div>\n", f);
        }
        fputs("</section>\n", f);
    }
    if (r->n_kernels) {
        fputs("<h2>Top kernels</h2>\n<table><tr><th>case</th><th>kernel</th><th>calls</th><th>total ms</th>"
              "<th>share</th><th>ms/step</th><th>of floor</th><th>baseline ms/step</th></tr>\n", f);
        for (int i = 0; i < r->n_kernels; i++) {
            const cr_kernel *k = &r->kernels[i];
            char fl[32], bs[64];
            kernel_cells(k, fl, sizeof fl, bs, sizeof bs);
            fputs("<tr><td>", f);
            put_esc(f, k->case_name, ESC_XML);
            fputs("</td><td>", f);
            put_esc(f, k->kernel, ESC_XML);
            fprintf(f, "</td><td>%lld</td><td>%.3f</td><td>%.1f%%</td><td>%.3f</td><td>%s</td><td>%s</td></tr>\n",
                    (long long)k->calls, k->total_ms, 100 * k->share, k->ms_per_step, fl[0] ? fl : "-", bs[0] ? bs : "-");
        }
        fputs("</table>\n", f);
    }
    fputs("</body>\n</html>\n", f);
    return ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- command */

int cmd_report(int argc, char **argv) {
    const char *run_spec = NULL, *against = NULL, *format = "text", *out_path = NULL, *db_flag = NULL;
    int only_regressions = 0;
    long long last_n = 20;
    int ret = EXIT_USAGE;
    sqlite3 *db = NULL;
    char *label = NULL, *tmp_path = NULL;
    FILE *out = NULL;
    cr_result r;
    int have_result = 0;
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "--against") && has_next) against = argv[++i];
        else if (!strcmp(a, "--format") && has_next) format = argv[++i];
        else if (!strcmp(a, "-o") && has_next) out_path = argv[++i];
        else if (!strcmp(a, "--db") && has_next) db_flag = argv[++i];
        else if (!strcmp(a, "--only-regressions")) only_regressions = 1;
        else if (!strcmp(a, "--last") && has_next) {
            if (parse_int(argv[++i], &last_n) != 0 || last_n < 1 || last_n > 1000) {
                cli_error("report: --last: '%s' is not a number of runs in 1..1000", argv[i]);
                return EXIT_USAGE;
            }
        } else if (a[0] == '-' && strcmp(a, "-") != 0) {
            cli_error("report: unknown option '%s'%s", a, has_next ? "" : " (or missing its value)");
            return cli_usage("report");
        } else if (!run_spec) run_spec = a;
        else {
            cli_error("report: unexpected argument '%s'", a);
            return cli_usage("report");
        }
    }
    if (strcmp(format, "text") && strcmp(format, "md") && strcmp(format, "json") && strcmp(format, "junit") &&
        strcmp(format, "html")) {
        cli_error("report: unknown format '%s' (text, md, json, junit, html)", format);
        return EXIT_USAGE;
    }
    const char *db_path = default_db_path(db_flag);
    if (access(db_path, F_OK) != 0) {
        cli_error("%s: no results database (%s)", db_path, strerror(errno));
        return EXIT_USAGE;
    }
    if (store_open(db_path, STORE_READONLY, &db, err, sizeof err) != 0) {
        cli_error("%s", err);
        return EXIT_USAGE;
    }
    int64_t run_id = 0, base = 0;
    if (store_resolve_run(db, run_spec ? run_spec : "latest", &run_id, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    if (against) {
        if (cr_resolve_against(db, db_path, against, &base, &label, err, sizeof err) != 0) {
            cli_error("%s", err);
            goto cleanup;
        }
    } else {
        cr_default_baseline(db, run_id, &base, &label);
    }
    if (compare_runs(db, run_id, base, label, &r, err, sizeof err) != 0) {
        cli_error("%s: %s", db_path, err);
        goto cleanup;
    }
    have_result = 1;
    if (out_path) { /* write to a temporary file, rename when complete */
        tmp_path = xasprintf("%s.tmp.%ld", out_path, (long)getpid());
        out = fopen(tmp_path, "w");
        if (!out) {
            cli_error("%s: cannot write: %s", out_path, strerror(errno));
            goto cleanup;
        }
    } else {
        out = stdout;
    }
    int wrc;
    if (!strcmp(format, "text")) wrc = cr_write_text(&r, out, only_regressions, !out_path && use_color(stdout));
    else if (!strcmp(format, "md")) wrc = cr_write_md(&r, out, only_regressions);
    else if (!strcmp(format, "json")) wrc = cr_write_json(&r, out, only_regressions);
    else if (!strcmp(format, "junit")) wrc = cr_write_junit(&r, out, only_regressions);
    else wrc = cr_write_html(&r, db, (int)last_n, out, only_regressions);
    if (out_path) {
        int cerr = fclose(out);
        out = NULL;
        if (wrc != 0 || cerr != 0 || rename(tmp_path, out_path) != 0) {
            cli_error("%s: write failed: %s", out_path, strerror(errno));
            unlink(tmp_path);
            goto cleanup;
        }
    }
    ret = cr_exit_code(&r);
cleanup:
    if (out && out != stdout) {
        fclose(out);
        unlink(tmp_path);
    }
    if (have_result) cr_result_free(&r);
    free(tmp_path);
    free(label);
    if (db) store_close(db);
    return ret;
}
