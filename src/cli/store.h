/*
 * store.h - the SQLite results store (schemas/results.sql, docs/results-db.md).
 *
 * store_open() sets WAL mode, a busy timeout and foreign keys, creates the
 * schema on a new file and applies forward migrations (schemas/migrations/)
 * on an old one. A read-only open never writes (query, report, history).
 */
#ifndef KESTREL_STORE_H
#define KESTREL_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define STORE_SCHEMA_VERSION 1

enum { STORE_RW = 0, STORE_READONLY = 1 };

/* Open (creating parent-less file if needed for RW). Errors name the path. */
int store_open(const char *path, int mode, sqlite3 **out, char *err, size_t err_len);
void store_close(sqlite3 *db);

/* "latest" (newest run by id), or a decimal id that exists. Error: "no run 42 in results/kestrel.db". */
int store_resolve_run(sqlite3 *db, const char *spec, int64_t *run_id, char *err, size_t err_len);

/* Archived outputs: zstd-compressed little-endian bytes + sha256 of the raw bytes.
 * dtype "f32" or "i32"; shape outermost first. */
int store_put_output(sqlite3 *db, int64_t case_id, const char *name, const char *dtype,
                     const int64_t *shape, int ndim, const void *data, size_t n_elements,
                     char *err, size_t err_len);
/* Returns malloc'd raw data (caller frees) and its element count; dtype_out gets "f32"/"i32". */
int store_get_output(sqlite3 *db, int64_t case_id, const char *name, void **data, size_t *n_elements,
                     char dtype_out[8], char *err, size_t err_len);

/* Column i of the current row as a malloc'd string (sqlite's text form), NULL for SQL NULL. */
char *store_col_dup(sqlite3_stmt *st, int i);

/* Run a statement with no result rows; err gets sqlite's message. */
int store_exec(sqlite3 *db, const char *sql, char *err, size_t err_len);

#endif
