/*
 * cmd_baseline.c - `kestrel-eval baseline set|list|show|delete|export|import`:
 * named baselines (the baselines table) and self-contained archives of a
 * baseline's run so baselines can live in git under results/baselines/.
 *
 * Archive format (docs/baselines.md): one zstd frame whose content is a SQLite
 * database with the results schema holding exactly one run (its artifacts,
 * cases, metrics, samples, outputs, kernel_profile, ab_rounds) and exactly one
 * baselines row naming it. Import re-inserts every row with fresh ids.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "cli.h"
#include "store.h"

#define ARCHIVE_MAX_BYTES ((size_t)4 << 30) /* refuse to inflate archives beyond 4 GiB */

static int valid_name(const char *s) {
    if (!*s || strlen(s) > 128) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* Open the DB; a read-only open refuses a missing file instead of creating one. */
static int open_db(const char *path, int mode, sqlite3 **db) {
    char err[512];
    if (mode == STORE_READONLY && access(path, F_OK) != 0) {
        cli_error("%s: no results database (%s)", path, strerror(errno));
        return -1;
    }
    if (store_open(path, mode, db, err, sizeof err) != 0) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

static int baseline_run(sqlite3 *db, const char *name, int64_t *run_id) {
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT run_id FROM baselines WHERE name = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *run_id = sqlite3_column_int64(st, 0);
            found = 1;
        }
    }
    sqlite3_finalize(st);
    return found;
}

/* ---------------------------------------------------------------- set / list / show / delete */

static int baseline_set(const char *db_path, const char *run_spec, const char *name, const char *note) {
    int ret = EXIT_USAGE;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char err[512], now[32];
    int64_t run_id;
    if (!valid_name(name)) {
        cli_error("baseline: invalid name '%s' (use [A-Za-z0-9._-], at most 128 characters)", name);
        return EXIT_USAGE;
    }
    if (open_db(db_path, STORE_RW, &db) != 0) goto cleanup;
    if (store_resolve_run(db, run_spec, &run_id, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    now_iso8601(now);
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO baselines (name, run_id, created_at, note) VALUES (?1, ?2, ?3, ?4)"
                           " ON CONFLICT(name) DO UPDATE SET run_id = ?2, created_at = ?3, note = ?4",
                           -1, &st, NULL) != SQLITE_OK) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, run_id);
    sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
    if (note) sqlite3_bind_text(st, 4, note, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
        cli_error("%s: setting baseline '%s': %s", db_path, name, sqlite3_errmsg(db));
        goto cleanup;
    }
    printf("baseline '%s' -> run %lld\n", name, (long long)run_id);
    ret = EXIT_OK;
cleanup:
    sqlite3_finalize(st);
    if (db) store_close(db);
    return ret;
}

static int baseline_list(const char *db_path) {
    int ret = EXIT_USAGE;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (open_db(db_path, STORE_READONLY, &db) != 0) goto cleanup;
    if (sqlite3_prepare_v2(db,
                           "SELECT b.name, b.run_id, b.created_at, r.suite_name, r.started_at, r.status,"
                           " r.imported_from, b.note FROM baselines b JOIN runs r ON r.id = b.run_id ORDER BY b.name",
                           -1, &st, NULL) != SQLITE_OK) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    printf("%-24s %6s  %-20s  %-16s  %-20s  %-8s  %s\n", "name", "run", "set at", "suite", "run started", "status",
           "note");
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *imp = (const char *)sqlite3_column_text(st, 6);
        const char *note = (const char *)sqlite3_column_text(st, 7);
        printf("%-24s %6lld  %-20s  %-16s  %-20s  %-8s  %s%s%s\n", (const char *)sqlite3_column_text(st, 0),
               (long long)sqlite3_column_int64(st, 1), (const char *)sqlite3_column_text(st, 2),
               sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "-",
               (const char *)sqlite3_column_text(st, 4), (const char *)sqlite3_column_text(st, 5), note ? note : "",
               imp ? (note ? " " : "") : "", imp ? "[imported]" : "");
    }
    ret = EXIT_OK;
cleanup:
    sqlite3_finalize(st);
    if (db) store_close(db);
    return ret;
}

static int baseline_show(const char *db_path, const char *name) {
    int ret = EXIT_USAGE;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t run_id;
    if (open_db(db_path, STORE_READONLY, &db) != 0) goto cleanup;
    if (!baseline_run(db, name, &run_id)) {
        cli_error("%s: no baseline '%s'", db_path, name);
        goto cleanup;
    }
    if (sqlite3_prepare_v2(db,
                           "SELECT b.created_at, b.note, r.started_at, r.ended_at, r.status, r.suite_name, r.host,"
                           " r.gpu_name, r.gpu_driver, r.imported_from, r.label FROM baselines b"
                           " JOIN runs r ON r.id = b.run_id WHERE b.name = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) {
        static const char *keys[] = {"set at", "note", "started", "ended", "status", "suite", "host", "gpu",
                                     "driver", "imported from", "label"};
        printf("baseline: %s\nrun:      %lld\n", name, (long long)run_id);
        for (int i = 0; i < 11; i++) {
            const char *v = (const char *)sqlite3_column_text(st, i);
            if (v) printf("%-9s %s\n", keys[i], v);
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT kind, name, sha256, path FROM artifacts WHERE run_id = ? ORDER BY kind, name", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        printf("artifacts:\n");
        while (sqlite3_step(st) == SQLITE_ROW)
            printf("  %-8s %-20s %s  %s\n", (const char *)sqlite3_column_text(st, 0),
                   (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2),
                   (const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT name, kind, status, (SELECT COUNT(*) FROM metrics WHERE case_id = c.id),"
                           " (SELECT COUNT(*) FROM samples WHERE case_id = c.id),"
                           " (SELECT COUNT(*) FROM outputs WHERE case_id = c.id) FROM cases c WHERE run_id = ?"
                           " ORDER BY id",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        printf("cases:\n");
        while (sqlite3_step(st) == SQLITE_ROW)
            printf("  %-32s %-13s %-8s %3d metrics %5d samples %3d outputs\n", (const char *)sqlite3_column_text(st, 0),
                   (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2),
                   sqlite3_column_int(st, 3), sqlite3_column_int(st, 4), sqlite3_column_int(st, 5));
    }
    ret = EXIT_OK;
cleanup:
    sqlite3_finalize(st);
    if (db) store_close(db);
    return ret;
}

static int baseline_delete(const char *db_path, const char *name) {
    int ret = EXIT_USAGE;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t run_id;
    if (open_db(db_path, STORE_RW, &db) != 0) goto cleanup;
    if (!baseline_run(db, name, &run_id)) {
        cli_error("%s: no baseline '%s'", db_path, name);
        goto cleanup;
    }
    if (sqlite3_prepare_v2(db, "DELETE FROM baselines WHERE name = ?", -1, &st, NULL) != SQLITE_OK) {
        cli_error("%s: %s", db_path, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
        cli_error("%s: deleting baseline '%s': %s", db_path, name, sqlite3_errmsg(db));
        goto cleanup;
    }
    printf("baseline '%s' deleted (run %lld is kept)\n", name, (long long)run_id);
    ret = EXIT_OK;
cleanup:
    sqlite3_finalize(st);
    if (db) store_close(db);
    return ret;
}

/* ---------------------------------------------------------------- file helpers */

static int read_file(const char *path, unsigned char **data, size_t *n) {
    int ret = -1;
    unsigned char *buf = NULL;
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0) {
        cli_error("%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }
    buf = xmalloc((size_t)sb.st_size + 1);
    if (fread(buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
        cli_error("%s: read error: %s", path, strerror(errno));
        goto cleanup;
    }
    *data = buf;
    *n = (size_t)sb.st_size;
    buf = NULL;
    ret = 0;
cleanup:
    free(buf);
    if (f) fclose(f);
    return ret;
}

/* Write atomically: tmp file in the same directory, fsync, rename. */
static int write_file_atomic(const char *path, const void *data, size_t n) {
    char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    int ret = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        cli_error("%s: cannot write: %s", path, strerror(errno));
        goto cleanup;
    }
    const unsigned char *p = data;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            cli_error("%s: write error: %s", path, strerror(errno));
            goto cleanup;
        }
        p += w;
        left -= (size_t)w;
    }
    int sync_failed = fsync(fd) != 0, sync_errno = errno; /* close even when fsync failed */
    int close_failed = close(fd) != 0;
    fd = -1;
    if (sync_failed || close_failed) {
        cli_error("%s: write error: %s", path, strerror(sync_failed ? sync_errno : errno));
        goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        cli_error("%s: cannot rename into place: %s", path, strerror(errno));
        goto cleanup;
    }
    ret = 0;
cleanup:
    if (fd >= 0) close(fd);
    if (ret != 0) unlink(tmp);
    free(tmp);
    return ret;
}

static char *temp_db_path(void) {
    const char *dir = getenv("TMPDIR");
    char *tmpl = xasprintf("%s/kestrel-baseline.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        cli_error("%s: cannot create a temporary file: %s", tmpl, strerror(errno));
        free(tmpl);
        return NULL;
    }
    close(fd);
    unlink(tmpl); /* store_open creates it with the schema */
    return tmpl;
}

static void remove_db_files(const char *path) {
    static const char *suffix[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        char *p = xasprintf("%s%s", path, suffix[i]);
        unlink(p);
        free(p);
    }
}

/* Columns of table `t` in schema `schema` joined by ", ", skipping `skip` (may be NULL),
 * each prefixed with `prefix`; subst: NULL-terminated pairs (column, expression)
 * whose expression replaces the column (for SELECT lists). */
static char *column_list(sqlite3 *db, const char *schema, const char *t, const char *skip, const char *prefix,
                         const char *const *subst) {
    char *sql = xasprintf("PRAGMA %s.table_info(%s)", schema, t);
    sqlite3_stmt *st = NULL;
    char *out = xstrdup("");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(st, 1);
            if (skip && strcmp(c, skip) == 0) continue;
            const char *expr = NULL;
            for (int i = 0; subst && subst[i]; i += 2)
                if (strcmp(subst[i], c) == 0) expr = subst[i + 1];
            char *n = expr ? xasprintf("%s%s%s", out, *out ? ", " : "", expr)
                           : xasprintf("%s%s%s%s", out, *out ? ", " : "", prefix, c);
            free(out);
            out = n;
        }
    }
    sqlite3_finalize(st);
    free(sql);
    return out;
}

static int exec_sql(sqlite3 *db, const char *sql, const char *what) {
    char *e = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &e) != SQLITE_OK) {
        cli_error("%s: %s", what, e ? e : sqlite3_errmsg(db));
        sqlite3_free(e);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- export */

static const char *child_tables[] = {"metrics", "samples", "outputs", "kernel_profile", "ab_rounds"};

static int baseline_export(const char *db_path, const char *name, const char *out_path) {
    int ret = EXIT_USAGE;
    sqlite3 *db = NULL, *arc = NULL;
    char *tmp = NULL, *sql = NULL, *cols = NULL;
    unsigned char *raw = NULL, *comp = NULL;
    size_t n_raw = 0;
    char err[512];
    int64_t run_id;
    if (open_db(db_path, STORE_READONLY, &db) != 0) goto cleanup;
    if (!baseline_run(db, name, &run_id)) {
        cli_error("%s: no baseline '%s'", db_path, name);
        goto cleanup;
    }
    store_close(db);
    db = NULL;
    if (!(tmp = temp_db_path())) goto cleanup;
    /* a fresh DB with the current schema, then copy the run's rows in, ids kept */
    if (store_open(tmp, STORE_RW, &arc, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    sql = sqlite3_mprintf("ATTACH DATABASE %Q AS src", db_path);
    if (exec_sql(arc, sql, db_path) != 0) goto cleanup;
    sqlite3_free(sql);
    sql = NULL;
    if (exec_sql(arc, "BEGIN", tmp) != 0) goto cleanup;
    static const struct { const char *table, *where; } parts[] = {
        {"runs", "id = %lld"},
        {"artifacts", "run_id = %lld"},
        {"cases", "run_id = %lld"},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        cols = column_list(arc, "main", parts[i].table, NULL, "", NULL);
        char *where = xasprintf(parts[i].where, (long long)run_id);
        sql = sqlite3_mprintf("INSERT INTO main.%s (%s) SELECT %s FROM src.%s WHERE %s", parts[i].table, cols, cols,
                              parts[i].table, where);
        free(where);
        free(cols);
        cols = NULL;
        if (exec_sql(arc, sql, db_path) != 0) goto cleanup;
        sqlite3_free(sql);
        sql = NULL;
    }
    for (size_t i = 0; i < sizeof child_tables / sizeof child_tables[0]; i++) {
        cols = column_list(arc, "main", child_tables[i], NULL, "", NULL);
        sql = sqlite3_mprintf("INSERT INTO main.%s (%s) SELECT %s FROM src.%s WHERE case_id IN"
                              " (SELECT id FROM main.cases) ORDER BY rowid",
                              child_tables[i], cols, cols, child_tables[i]);
        free(cols);
        cols = NULL;
        if (exec_sql(arc, sql, db_path) != 0) goto cleanup;
        sqlite3_free(sql);
        sql = NULL;
    }
    sql = sqlite3_mprintf("INSERT INTO main.baselines (name, run_id, created_at, note) SELECT name, run_id,"
                          " created_at, note FROM src.baselines WHERE name = %Q",
                          name);
    if (exec_sql(arc, sql, db_path) != 0 || exec_sql(arc, "COMMIT", tmp) != 0 ||
        exec_sql(arc, "DETACH DATABASE src", tmp) != 0 || exec_sql(arc, "PRAGMA journal_mode = DELETE", tmp) != 0 ||
        exec_sql(arc, "VACUUM", tmp) != 0)
        goto cleanup;
    store_close(arc);
    arc = NULL;
    if (read_file(tmp, &raw, &n_raw) != 0) goto cleanup;
    size_t cap = ZSTD_compressBound(n_raw);
    comp = xmalloc(cap);
    size_t n_comp = ZSTD_compress(comp, cap, raw, n_raw, 19);
    if (ZSTD_isError(n_comp)) {
        cli_error("%s: zstd: %s", out_path, ZSTD_getErrorName(n_comp));
        goto cleanup;
    }
    if (write_file_atomic(out_path, comp, n_comp) != 0) goto cleanup;
    printf("baseline '%s' (run %lld) exported to %s (%zu bytes, %zu uncompressed)\n", name, (long long)run_id, out_path,
           n_comp, n_raw);
    ret = EXIT_OK;
cleanup:
    sqlite3_free(sql);
    free(cols);
    free(raw);
    free(comp);
    if (arc) store_close(arc);
    if (db) store_close(db);
    if (tmp) remove_db_files(tmp);
    free(tmp);
    return ret;
}

/* ---------------------------------------------------------------- import */

static int64_t scalar_int(sqlite3 *db, const char *sql, int64_t dflt) {
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Insert rows of arc.table (one per old id in ids order), mapping ids into temp.map_<table>. */
static int import_with_ids(sqlite3 *db, const char *table, const char *where, const char *select_cols,
                           const char *insert_cols, const char *file) {
    int ret = -1;
    sqlite3_stmt *ids = NULL, *ins = NULL, *map = NULL;
    char *sql = sqlite3_mprintf("SELECT id FROM arc.%s WHERE %s ORDER BY id", table, where);
    char *isql = sqlite3_mprintf("INSERT INTO main.%s (%s) SELECT %s FROM arc.%s WHERE id = ?", table, insert_cols,
                                 select_cols, table);
    char *msql = sqlite3_mprintf("INSERT INTO temp.map_%s (old, new) VALUES (?, ?)", table);
    if (sqlite3_prepare_v2(db, sql, -1, &ids, NULL) != SQLITE_OK || sqlite3_prepare_v2(db, isql, -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, msql, -1, &map, NULL) != SQLITE_OK) {
        cli_error("%s: %s: %s", file, table, sqlite3_errmsg(db));
        goto cleanup;
    }
    int rc;
    while ((rc = sqlite3_step(ids)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(ids, 0);
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, old);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            cli_error("%s: %s row %lld: %s", file, table, (long long)old, sqlite3_errmsg(db));
            goto cleanup;
        }
        sqlite3_reset(map);
        sqlite3_bind_int64(map, 1, old);
        sqlite3_bind_int64(map, 2, sqlite3_last_insert_rowid(db));
        if (sqlite3_step(map) != SQLITE_DONE) {
            cli_error("%s: %s: %s", file, table, sqlite3_errmsg(db));
            goto cleanup;
        }
    }
    if (rc != SQLITE_DONE) {
        cli_error("%s: %s: %s", file, table, sqlite3_errmsg(db));
        goto cleanup;
    }
    ret = 0;
cleanup:
    sqlite3_finalize(ids);
    sqlite3_finalize(ins);
    sqlite3_finalize(map);
    sqlite3_free(sql);
    sqlite3_free(isql);
    sqlite3_free(msql);
    return ret;
}

static int baseline_import(const char *db_path, const char *file, const char *name_flag) {
    int ret = EXIT_USAGE, in_tx = 0;
    unsigned char *comp = NULL, *raw = NULL;
    size_t n_comp = 0;
    char *tmp = NULL, *sql = NULL, *arc_name = NULL, *cols = NULL, *scols = NULL;
    sqlite3 *arc = NULL, *db = NULL;
    char err[512], now[32];
    sqlite3_stmt *st = NULL;
    if (name_flag && !valid_name(name_flag)) {
        cli_error("baseline import: invalid name '%s' (use [A-Za-z0-9._-])", name_flag);
        return EXIT_USAGE;
    }
    if (read_file(file, &comp, &n_comp) != 0) goto cleanup;
    unsigned long long n_raw = ZSTD_getFrameContentSize(comp, n_comp);
    if (n_raw == ZSTD_CONTENTSIZE_ERROR || n_raw == ZSTD_CONTENTSIZE_UNKNOWN || n_raw > ARCHIVE_MAX_BYTES ||
        n_raw < 100) {
        cli_error("%s: not a baseline archive (no zstd frame with a known size)", file);
        goto cleanup;
    }
    raw = xmalloc((size_t)n_raw);
    size_t got = ZSTD_decompress(raw, (size_t)n_raw, comp, n_comp);
    if (ZSTD_isError(got) || got != n_raw) {
        cli_error("%s: corrupt archive: %s", file, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
        goto cleanup;
    }
    if (memcmp(raw, "SQLite format 3", 16) != 0) {
        cli_error("%s: not a baseline archive (the zstd frame holds no SQLite database)", file);
        goto cleanup;
    }
    if (!(tmp = temp_db_path())) goto cleanup;
    {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, raw, (size_t)n_raw) != (ssize_t)n_raw) {
            cli_error("%s: cannot write: %s", tmp, strerror(errno));
            if (fd >= 0) close(fd);
            goto cleanup;
        }
        close(fd);
    }
    /* open RW so an archive of an older schema is migrated forward (a newer one is refused) */
    if (store_open(tmp, STORE_RW, &arc, err, sizeof err) != 0) {
        cli_error("%s: %s", file, err);
        goto cleanup;
    }
    if (scalar_int(arc, "SELECT COUNT(*) FROM runs", -1) != 1 || scalar_int(arc, "SELECT COUNT(*) FROM baselines", -1) != 1) {
        cli_error("%s: not a baseline archive (needs exactly one run and one baseline, has %lld and %lld)", file,
                  (long long)scalar_int(arc, "SELECT COUNT(*) FROM runs", -1),
                  (long long)scalar_int(arc, "SELECT COUNT(*) FROM baselines", -1));
        goto cleanup;
    }
    if (sqlite3_prepare_v2(arc, "SELECT name FROM baselines", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        arc_name = xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    st = NULL;
    store_close(arc);
    arc = NULL;
    if (!arc_name) {
        cli_error("%s: not a baseline archive (unreadable baselines row)", file);
        goto cleanup;
    }
    const char *name = name_flag ? name_flag : arc_name;

    if (open_db(db_path, STORE_RW, &db) != 0) goto cleanup;
    sql = sqlite3_mprintf("ATTACH DATABASE %Q AS arc", tmp);
    if (exec_sql(db, sql, file) != 0) goto cleanup;
    sqlite3_free(sql);
    sql = NULL;
    /* the same run already here (imported before, or the original): identity is
     * (started_at, host, pid, suite_sha256) of the run row */
    int64_t existing = scalar_int(db,
                                  "SELECT m.id FROM main.runs m JOIN arc.runs a ON m.started_at IS a.started_at"
                                  " AND m.host IS a.host AND m.pid IS a.pid AND m.suite_sha256 IS a.suite_sha256"
                                  " AND (SELECT COUNT(*) FROM main.cases WHERE run_id = m.id) ="
                                  " (SELECT COUNT(*) FROM arc.cases) ORDER BY m.id LIMIT 1",
                                  0);
    int64_t have_name = 0;
    {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, "SELECT run_id FROM main.baselines WHERE name = ?", -1, &q, NULL) == SQLITE_OK) {
            sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(q) == SQLITE_ROW) have_name = sqlite3_column_int64(q, 0);
        }
        sqlite3_finalize(q);
    }
    if (have_name && have_name != existing) {
        cli_error("%s: baseline '%s' already exists in %s (run %lld); import under another name with --name", file,
                  name, db_path, (long long)have_name);
        goto cleanup;
    }
    if (exec_sql(db, "BEGIN IMMEDIATE", db_path) != 0) goto cleanup;
    in_tx = 1;
    int64_t new_run = existing;
    if (!existing) {
        if (exec_sql(db,
                     "CREATE TEMP TABLE IF NOT EXISTS map_runs (old INTEGER PRIMARY KEY, new INTEGER);"
                     "CREATE TEMP TABLE IF NOT EXISTS map_artifacts (old INTEGER PRIMARY KEY, new INTEGER);"
                     "CREATE TEMP TABLE IF NOT EXISTS map_cases (old INTEGER PRIMARY KEY, new INTEGER);",
                     db_path) != 0)
            goto cleanup;
        /* runs: fresh id, imported_from = the archive's baseline name (?1) */
        static const char *const run_subst[] = {"imported_from", "?1", NULL};
        cols = column_list(db, "main", "runs", "id", "", NULL);
        scols = column_list(db, "main", "runs", "id", "", run_subst);
        sqlite3_stmt *ins = NULL;
        sql = sqlite3_mprintf("INSERT INTO main.runs (%s) SELECT %s FROM arc.runs", cols, scols);
        int ok = sqlite3_prepare_v2(db, sql, -1, &ins, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(ins, 1, arc_name, -1, SQLITE_TRANSIENT);
            ok = sqlite3_step(ins) == SQLITE_DONE;
        }
        if (!ok) cli_error("%s: runs: %s", file, sqlite3_errmsg(db));
        sqlite3_finalize(ins);
        sqlite3_free(sql);
        sql = NULL;
        free(cols);
        free(scols);
        cols = scols = NULL;
        if (!ok) goto cleanup;
        new_run = sqlite3_last_insert_rowid(db);
        /* artifacts */
        char run_expr[32];
        snprintf(run_expr, sizeof run_expr, "%lld", (long long)new_run);
        const char *const art_subst[] = {"run_id", run_expr, NULL};
        cols = column_list(db, "main", "artifacts", "id", "", NULL);
        scols = column_list(db, "main", "artifacts", "id", "", art_subst);
        if (import_with_ids(db, "artifacts", "1", scols, cols, file) != 0) goto cleanup;
        free(cols);
        free(scols);
        cols = scols = NULL;
        /* cases: run id and artifact references mapped */
        const char *const case_subst[] = {
            "run_id", run_expr,
            "engine_artifact", "(SELECT new FROM temp.map_artifacts WHERE old = arc.cases.engine_artifact)",
            "model_artifact", "(SELECT new FROM temp.map_artifacts WHERE old = arc.cases.model_artifact)",
            "oracle_artifact", "(SELECT new FROM temp.map_artifacts WHERE old = arc.cases.oracle_artifact)",
            "prompts_artifact", "(SELECT new FROM temp.map_artifacts WHERE old = arc.cases.prompts_artifact)",
            NULL};
        cols = column_list(db, "main", "cases", "id", "", NULL);
        scols = column_list(db, "main", "cases", "id", "", case_subst);
        if (import_with_ids(db, "cases", "1", scols, cols, file) != 0) goto cleanup;
        free(cols);
        free(scols);
        cols = scols = NULL;
        for (size_t i = 0; i < sizeof child_tables / sizeof child_tables[0]; i++) {
            cols = column_list(db, "main", child_tables[i], "case_id", "", NULL);
            scols = column_list(db, "main", child_tables[i], "case_id", "t.", NULL);
            sql = sqlite3_mprintf("INSERT INTO main.%s (case_id, %s) SELECT m.new, %s FROM arc.%s t"
                                  " JOIN temp.map_cases m ON m.old = t.case_id ORDER BY t.rowid",
                                  child_tables[i], cols, scols, child_tables[i]);
            if (exec_sql(db, sql, file) != 0) goto cleanup;
            sqlite3_free(sql);
            sql = NULL;
            free(cols);
            free(scols);
            cols = scols = NULL;
        }
    }
    now_iso8601(now);
    sql = sqlite3_mprintf("INSERT INTO main.baselines (name, run_id, created_at, note) SELECT %Q, %lld, %Q,"
                          " (SELECT note FROM arc.baselines) WHERE NOT EXISTS (SELECT 1 FROM main.baselines WHERE"
                          " name = %Q)",
                          name, (long long)new_run, now, name);
    if (exec_sql(db, sql, file) != 0 || exec_sql(db, "COMMIT", db_path) != 0) goto cleanup;
    in_tx = 0;
    if (existing)
        printf("baseline '%s': %s already holds this run as run %lld; nothing imported\n", name, db_path,
               (long long)existing);
    else
        printf("baseline '%s' imported from %s as run %lld\n", name, file, (long long)new_run);
    ret = EXIT_OK;
cleanup:
    if (in_tx) exec_sql(db, "ROLLBACK", db_path);
    sqlite3_free(sql);
    free(cols);
    free(scols);
    free(arc_name);
    free(comp);
    free(raw);
    if (arc) store_close(arc);
    if (db) store_close(db);
    if (tmp) remove_db_files(tmp);
    free(tmp);
    return ret;
}

/* ---------------------------------------------------------------- command */

int cmd_baseline(int argc, char **argv) {
    const char *db_flag = NULL, *note = NULL, *out = NULL, *name = NULL;
    const char *pos[3] = {NULL, NULL, NULL};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "--db") && has_next) db_flag = argv[++i];
        else if (!strcmp(a, "--note") && has_next) note = argv[++i];
        else if (!strcmp(a, "-o") && has_next) out = argv[++i];
        else if (!strcmp(a, "--name") && has_next) name = argv[++i];
        else if (a[0] == '-') {
            cli_error("baseline: unknown option '%s'%s", a, has_next ? "" : " (or missing its value)");
            return cli_usage("baseline");
        } else if (n_pos < 3) pos[n_pos++] = a;
        else {
            cli_error("baseline: unexpected argument '%s'", a);
            return cli_usage("baseline");
        }
    }
    const char *db_path = default_db_path(db_flag);
    const char *sub = pos[0];
    if (!sub) return cli_usage("baseline");
#define NEED(n, what)                                                                                          \
    if (n_pos != (n)) {                                                                                        \
        cli_error("baseline %s: expected %s", sub, what);                                                     \
        return cli_usage("baseline");                                                                          \
    }
    if (!strcmp(sub, "set")) {
        NEED(3, "RUN_ID|latest NAME");
        return baseline_set(db_path, pos[1], pos[2], note);
    } else if (!strcmp(sub, "list")) {
        NEED(1, "no arguments");
        return baseline_list(db_path);
    } else if (!strcmp(sub, "show")) {
        NEED(2, "NAME");
        return baseline_show(db_path, pos[1]);
    } else if (!strcmp(sub, "delete")) {
        NEED(2, "NAME");
        return baseline_delete(db_path, pos[1]);
    } else if (!strcmp(sub, "export")) {
        NEED(2, "NAME -o FILE");
        if (!out) {
            cli_error("baseline export: -o FILE is required");
            return cli_usage("baseline");
        }
        return baseline_export(db_path, pos[1], out);
    } else if (!strcmp(sub, "import")) {
        NEED(2, "FILE");
        return baseline_import(db_path, pos[1], name);
    }
#undef NEED
    cli_error("baseline: unknown subcommand '%s' (set, list, show, delete, export, import)", sub);
    return EXIT_USAGE;
}
