/*
 * cmd_query.c - `kestrel-eval query SQL [--format table|csv|json] [--db PATH]`:
 * user SQL on a read-only connection (SQLITE_OPEN_READONLY + PRAGMA
 * query_only). A statement that would write is refused before it runs.
 * CSV follows RFC 4180 (CRLF line ends, fields with , " CR LF quoted, quotes
 * doubled, NULL as an empty field); JSON is an array of objects per row.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"

enum qfmt { Q_TABLE, Q_CSV, Q_JSON };

/* A cell as text for table/CSV: NULL -> NULL pointer; blobs as x'hex' (first 32 bytes). */
static char *cell_text(sqlite3_stmt *st, int i) {
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return NULL;
    case SQLITE_INTEGER: return xasprintf("%lld", (long long)sqlite3_column_int64(st, i));
    case SQLITE_FLOAT: return xasprintf("%.17g", sqlite3_column_double(st, i));
    case SQLITE_BLOB: {
        int n = sqlite3_column_bytes(st, i);
        const unsigned char *b = sqlite3_column_blob(st, i);
        int show = n > 32 ? 32 : n;
        char *s = xmalloc((size_t)show * 2 + 32);
        int k = sprintf(s, "x'");
        for (int j = 0; j < show; j++) k += sprintf(s + k, "%02x", b[j]);
        sprintf(s + k, "%s' (%d bytes)", n > show ? "..." : "", n);
        return s;
    }
    default: return xstrdup((const char *)sqlite3_column_text(st, i));
    }
}

static void json_cell(FILE *f, sqlite3_stmt *st, int i) {
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: fputs("null", f); break;
    case SQLITE_INTEGER: fprintf(f, "%lld", (long long)sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: {
        double v = sqlite3_column_double(st, i);
        if (isfinite(v)) fprintf(f, "%.17g", v);
        else fputs("null", f);
        break;
    }
    case SQLITE_BLOB: {
        int n = sqlite3_column_bytes(st, i);
        const unsigned char *b = sqlite3_column_blob(st, i);
        fputc('"', f);
        for (int j = 0; j < n; j++) fprintf(f, "%02x", b[j]);
        fputc('"', f);
        break;
    }
    default: json_string(f, (const char *)sqlite3_column_text(st, i));
    }
}

/* Run one prepared statement and print its rows. Returns 0, or -1 (message printed). */
static int print_rows(FILE *f, sqlite3 *db, sqlite3_stmt *st, enum qfmt fmt, int *json_first, const char *db_path) {
    int ncol = sqlite3_column_count(st), rc, ret = -1;
    char ***rows = NULL; /* table: (n_rows, ncol) cells */
    int n_rows = 0, cap = 0;
    if (fmt == Q_CSV && ncol > 0) {
        for (int i = 0; i < ncol; i++) {
            if (i) fputc(',', f);
            csv_field(f, sqlite3_column_name(st, i));
        }
        fputs("\r\n", f);
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (fmt == Q_CSV) {
            for (int i = 0; i < ncol; i++) {
                if (i) fputc(',', f);
                char *c = cell_text(st, i);
                csv_field(f, c);
                free(c);
            }
            fputs("\r\n", f);
        } else if (fmt == Q_JSON) {
            fputs(*json_first ? "\n  {" : ",\n  {", f);
            *json_first = 0;
            for (int i = 0; i < ncol; i++) {
                if (i) fputs(", ", f);
                json_string(f, sqlite3_column_name(st, i));
                fputs(": ", f);
                json_cell(f, st, i);
            }
            fputc('}', f);
        } else {
            if (n_rows == cap) {
                cap = cap ? 2 * cap : 64;
                rows = xrealloc(rows, sizeof(char **) * (size_t)cap);
            }
            rows[n_rows] = xcalloc((size_t)ncol, sizeof(char *));
            for (int i = 0; i < ncol; i++) rows[n_rows][i] = cell_text(st, i);
            n_rows++;
        }
    }
    if (rc != SQLITE_DONE) {
        cli_error("%s: query failed: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    if (fmt == Q_TABLE && ncol > 0) {
        size_t *w = xcalloc((size_t)ncol, sizeof(size_t));
        for (int i = 0; i < ncol; i++) w[i] = strlen(sqlite3_column_name(st, i));
        for (int r = 0; r < n_rows; r++)
            for (int i = 0; i < ncol; i++) {
                size_t l = rows[r][i] ? strlen(rows[r][i]) : 4;
                if (l > w[i]) w[i] = l;
            }
        for (int i = 0; i < ncol; i++) /* the last column is not padded */
            fprintf(f, "%s%-*s", i ? "  " : "", i + 1 < ncol ? (int)w[i] : 0, sqlite3_column_name(st, i));
        fputc('\n', f);
        for (int i = 0; i < ncol; i++) {
            fprintf(f, "%s", i ? "  " : "");
            for (size_t k = 0; k < w[i]; k++) fputc('-', f);
        }
        fputc('\n', f);
        for (int r = 0; r < n_rows; r++) {
            for (int i = 0; i < ncol; i++)
                fprintf(f, "%s%-*s", i ? "  " : "", i + 1 < ncol ? (int)w[i] : 0, rows[r][i] ? rows[r][i] : "NULL");
            fputc('\n', f);
        }
        fprintf(f, "(%d row%s)\n", n_rows, n_rows == 1 ? "" : "s");
        free(w);
    }
    ret = 0;
cleanup:
    for (int r = 0; r < n_rows; r++) {
        for (int i = 0; i < ncol; i++) free(rows[r][i]);
        free(rows[r]);
    }
    free(rows);
    return ret;
}

int cmd_query(int argc, char **argv) {
    const char *sql = NULL, *db_flag = NULL, *format = "table";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "--db") && has_next) db_flag = argv[++i];
        else if (!strcmp(a, "--format") && has_next) format = argv[++i];
        else if (a[0] == '-' && a[1] == '-') {
            cli_error("query: unknown option '%s'%s", a, has_next ? "" : " (or missing its value)");
            return cli_usage("query");
        } else if (!sql) sql = a;
        else {
            cli_error("query: unexpected argument '%s' (quote the SQL as one argument)", a);
            return cli_usage("query");
        }
    }
    if (!sql) return cli_usage("query");
    enum qfmt fmt;
    if (!strcmp(format, "table")) fmt = Q_TABLE;
    else if (!strcmp(format, "csv")) fmt = Q_CSV;
    else if (!strcmp(format, "json")) fmt = Q_JSON;
    else {
        cli_error("query: unknown format '%s' (table, csv, json)", format);
        return EXIT_USAGE;
    }
    const char *db_path = default_db_path(db_flag);
    int ret = EXIT_USAGE, json_first = 1, n_stmt = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    FILE *out = NULL;
    char *buf = NULL;
    size_t buf_len = 0;
    if (access(db_path, F_OK) != 0) {
        cli_error("%s: no results database (%s)", db_path, strerror(errno));
        return EXIT_USAGE;
    }
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        cli_error("%s: cannot open read-only: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
        goto cleanup;
    }
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL) != SQLITE_OK) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    /* everything goes to memory first: on an error nothing is half-written */
    out = open_memstream(&buf, &buf_len);
    if (!out) {
        cli_error("query: out of memory");
        goto cleanup;
    }
    if (fmt == Q_JSON) fputc('[', out);
    const char *tail = sql;
    while (tail && *tail) {
        const char *start = tail;
        if (sqlite3_prepare_v2(db, start, -1, &st, &tail) != SQLITE_OK) {
            cli_error("query: statement %d: %s", n_stmt + 1, sqlite3_errmsg(db));
            goto cleanup;
        }
        if (!st) continue; /* whitespace or comment */
        n_stmt++;
        if (!sqlite3_stmt_readonly(st)) {
            cli_error("query: statement %d would write to %s; query runs on a read-only connection "
                      "(refused: %.*s)",
                      n_stmt, db_path, (int)strcspn(start + strspn(start, " \t\r\n"), "\r\n"),
                      start + strspn(start, " \t\r\n"));
            goto cleanup;
        }
        if (print_rows(out, db, st, fmt, &json_first, db_path) != 0) goto cleanup;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (n_stmt == 0) {
        cli_error("query: no SQL statement given");
        goto cleanup;
    }
    if (fmt == Q_JSON) fputs(json_first ? "]\n" : "\n]\n", out);
    fclose(out);
    out = NULL;
    fwrite(buf, 1, buf_len, stdout);
    ret = EXIT_OK;
cleanup:
    if (out) fclose(out);
    free(buf);
    sqlite3_finalize(st);
    if (db) sqlite3_close(db);
    return ret;
}
