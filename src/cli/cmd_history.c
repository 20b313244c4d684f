/*
 * cmd_history.c - `kestrel-eval history [--case GLOB] [--metric NAME | --kernel GLOB]
 * [--last N] [--format text|csv|json] [--db PATH]`: one metric over time per case, with
 * the short engine SHA-256 of every point and a sparkline on a TTY.
 * Without --metric each case shows its kind's headline metric: oracle max_rel,
 * decode-bench ms_per_token_median, bitexact unequal, bandwidth gbps, ab ratio_median.
 * --kernel: instead of a metric, the ms per step of each matching kernel of the case's
 * kernel profile (engine profile=1 or profile=trace), one series per case and kernel ("kernel NAME").
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "store.h"

typedef struct hpoint {
    char *case_name, *metric, *started_at, *engine, *unit, *status;
    int64_t run_id;
    int has_value;
    double value;
} hpoint;

/* Unicode sparkline of v (n,), NaN shown as a space. */
static void sparkline(FILE *f, const hpoint *p, int n) {
    static const char *bars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (p[i].has_value && isfinite(p[i].value)) {
            lo = fmin(lo, p[i].value);
            hi = fmax(hi, p[i].value);
        }
    for (int i = 0; i < n; i++) {
        if (!p[i].has_value || !isfinite(p[i].value)) {
            fputc(' ', f);
            continue;
        }
        int k = hi > lo ? (int)lround(7 * (p[i].value - lo) / (hi - lo)) : 3;
        fputs(bars[k], f);
    }
}

int cmd_history(int argc, char **argv) {
    const char *glob = "*", *metric = NULL, *kernel = NULL, *format = "text", *db_flag = NULL;
    long long last_n = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "--case") && has_next) glob = argv[++i];
        else if (!strcmp(a, "--metric") && has_next) metric = argv[++i];
        else if (!strcmp(a, "--kernel") && has_next) kernel = argv[++i];
        else if (!strcmp(a, "--format") && has_next) format = argv[++i];
        else if (!strcmp(a, "--db") && has_next) db_flag = argv[++i];
        else if (!strcmp(a, "--last") && has_next) {
            if (parse_int(argv[++i], &last_n) != 0 || last_n < 1) {
                cli_error("history: --last: '%s' is not a positive number of runs", argv[i]);
                return EXIT_USAGE;
            }
        } else {
            cli_error("history: unexpected argument '%s'", a);
            return cli_usage("history");
        }
    }
    if (metric && kernel) {
        cli_error("history: --metric and --kernel exclude each other (a kernel's series is its ms per step)");
        return EXIT_USAGE;
    }
    if (strcmp(format, "text") && strcmp(format, "csv") && strcmp(format, "json")) {
        cli_error("history: unknown format '%s' (text, csv, json)", format);
        return EXIT_USAGE;
    }
    const char *db_path = default_db_path(db_flag);
    int ret = EXIT_USAGE, n = 0, cap = 0;
    hpoint *pts = NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char err[512];
    if (access(db_path, F_OK) != 0) {
        cli_error("%s: no results database (%s)", db_path, strerror(errno));
        return EXIT_USAGE;
    }
    if (store_open(db_path, STORE_READONLY, &db, err, sizeof err) != 0) {
        cli_error("%s", err);
        return EXIT_USAGE;
    }
    const char *sql_metric =
        "SELECT name, metric, run_id, started_at, engine, value, unit, status FROM ("
        " SELECT c.name AS name, m.name AS metric, c.run_id AS run_id, r.started_at AS started_at,"
        "  ae.sha256 AS engine, m.value AS value, m.unit AS unit, c.status AS status,"
        "  ROW_NUMBER() OVER (PARTITION BY c.name, m.name ORDER BY c.run_id DESC) AS rk"
        " FROM cases c JOIN runs r ON r.id = c.run_id JOIN metrics m ON m.case_id = c.id"
        " LEFT JOIN artifacts ae ON ae.id = c.engine_artifact"
        " WHERE c.name GLOB ?1 AND m.name = COALESCE(?2, CASE c.kind WHEN 'oracle' THEN 'max_rel'"
        "  WHEN 'decode-bench' THEN 'ms_per_token_median' WHEN 'bitexact' THEN 'unequal'"
        "  WHEN 'bandwidth' THEN 'gbps' WHEN 'ab' THEN 'ratio_median' END))"
        " WHERE rk <= ?3 ORDER BY name, metric, run_id";
    /* a kernel's series: its ms per step in each profiled run of the case (docs/metrics.md) */
    const char *sql_kernel =
        "SELECT name, metric, run_id, started_at, engine, value, unit, status FROM ("
        " SELECT c.name AS name, 'kernel ' || k.kernel AS metric, c.run_id AS run_id, r.started_at AS started_at,"
        "  ae.sha256 AS engine, k.ms_per_step AS value, 'ms/step' AS unit, c.status AS status,"
        "  ROW_NUMBER() OVER (PARTITION BY c.name, k.kernel ORDER BY c.run_id DESC) AS rk"
        " FROM cases c JOIN runs r ON r.id = c.run_id JOIN kernel_profile k ON k.case_id = c.id"
        " LEFT JOIN artifacts ae ON ae.id = c.engine_artifact"
        " WHERE c.name GLOB ?1 AND k.kernel GLOB ?2)"
        " WHERE rk <= ?3 ORDER BY name, metric, run_id";
    if (sqlite3_prepare_v2(db, kernel ? sql_kernel : sql_metric, -1, &st, NULL) != SQLITE_OK) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, glob, -1, SQLITE_TRANSIENT);
    if (kernel) sqlite3_bind_text(st, 2, kernel, -1, SQLITE_TRANSIENT);
    else if (metric) sqlite3_bind_text(st, 2, metric, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, last_n);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            pts = xrealloc(pts, sizeof(hpoint) * (size_t)cap);
        }
        hpoint *p = &pts[n++];
        p->case_name = store_col_dup(st, 0);
        p->metric = store_col_dup(st, 1);
        p->run_id = sqlite3_column_int64(st, 2);
        p->started_at = store_col_dup(st, 3);
        p->engine = store_col_dup(st, 4);
        p->has_value = sqlite3_column_type(st, 5) != SQLITE_NULL;
        p->value = p->has_value ? sqlite3_column_double(st, 5) : NAN;
        p->unit = store_col_dup(st, 6);
        p->status = store_col_dup(st, 7);
    }
    if (rc != SQLITE_DONE) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    if (n == 0) {
        if (kernel)
            cli_error("%s: no kernel profile rows matching '%s' for cases matching '%s' (the engine records them with "
                      "profile=1 or profile=trace)", db_path, kernel, glob);
        else
            cli_error("%s: no %s%s%s for cases matching '%s'", db_path, metric ? "metric '" : "headline metric",
                      metric ? metric : "", metric ? "'" : "", glob);
        goto cleanup;
    }
    if (!strcmp(format, "csv")) {
        fputs("case,metric,run_id,started_at,engine_sha256,value,unit,status\r\n", stdout);
        for (int i = 0; i < n; i++) {
            const hpoint *p = &pts[i];
            csv_field(stdout, p->case_name);
            fputc(',', stdout);
            csv_field(stdout, p->metric);
            printf(",%lld,", (long long)p->run_id);
            csv_field(stdout, p->started_at);
            fputc(',', stdout);
            csv_field(stdout, p->engine);
            fputc(',', stdout);
            if (p->has_value && isfinite(p->value)) printf("%.17g", p->value);
            fputc(',', stdout);
            csv_field(stdout, p->unit);
            fputc(',', stdout);
            csv_field(stdout, p->status);
            fputs("\r\n", stdout);
        }
    } else if (!strcmp(format, "json")) {
        fputc('[', stdout);
        for (int i = 0; i < n; i++) {
            const hpoint *p = &pts[i];
            fputs(i ? ",\n  {\"case\": " : "\n  {\"case\": ", stdout);
            json_string(stdout, p->case_name);
            fputs(", \"metric\": ", stdout);
            json_string(stdout, p->metric);
            printf(", \"run_id\": %lld, \"started_at\": ", (long long)p->run_id);
            json_string(stdout, p->started_at);
            fputs(", \"engine_sha256\": ", stdout);
            json_string(stdout, p->engine);
            fputs(", \"value\": ", stdout);
            if (p->has_value && isfinite(p->value)) printf("%.17g", p->value);
            else fputs("null", stdout);
            fputs(", \"unit\": ", stdout);
            json_string(stdout, p->unit);
            fputs(", \"status\": ", stdout);
            json_string(stdout, p->status);
            fputc('}', stdout);
        }
        fputs("\n]\n", stdout);
    } else {
        int tty = use_color(stdout);
        for (int i = 0; i < n;) {
            int j = i;
            while (j < n && !strcmp(pts[j].case_name, pts[i].case_name) && !strcmp(pts[j].metric, pts[i].metric)) j++;
            printf("%s%s%s  %s%s%s%s  (%d point%s)", tty ? "\033[1m" : "", pts[i].case_name, tty ? "\033[0m" : "",
                   pts[i].metric, pts[i].unit ? " [" : "", pts[i].unit ? pts[i].unit : "", pts[i].unit ? "]" : "",
                   j - i, j - i == 1 ? "" : "s");
            if (tty) {
                fputs("  ", stdout);
                sparkline(stdout, &pts[i], j - i);
            }
            printf("\n  %6s  %-20s  %-12s  %-12s  %s\n", "run", "started", "engine", "value", "status");
            for (int k = i; k < j; k++) {
                const hpoint *p = &pts[k];
                printf("  %6lld  %-20s  %-12.12s  ", (long long)p->run_id, p->started_at ? p->started_at : "-",
                       p->engine ? p->engine : "-");
                if (p->has_value) printf("%-12.6g", p->value);
                else printf("%-12s", "-");
                printf("  %s\n", p->status ? p->status : "-");
            }
            i = j;
        }
    }
    ret = EXIT_OK;
cleanup:
    for (int i = 0; i < n; i++) {
        free(pts[i].case_name);
        free(pts[i].metric);
        free(pts[i].started_at);
        free(pts[i].engine);
        free(pts[i].unit);
        free(pts[i].status);
    }
    free(pts);
    sqlite3_finalize(st);
    if (db) store_close(db);
    return ret;
}
