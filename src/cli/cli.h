/*
 * cli.h - shared pieces of kestrel-eval: the command table entry type, exit
 * codes, and small helpers (src/cli/util.c).
 *
 * Exit codes, for every subcommand:
 *   0  success (every gate passed, nothing regressed)
 *   1  a gate failed, a case crashed/timed out, or something regressed
 *   2  usage or input error (bad flag, malformed suite/model/oracle, ...)
 */
#ifndef KESTREL_CLI_H
#define KESTREL_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

typedef struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the command name */
    const char *usage;                /* one line of arguments, shown by `kestrel-eval help` */
    const char *summary;
} cli_command;

/* Every command's function. */
int cmd_logits(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_baseline(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_ab(int argc, char **argv);
int cmd_gen_model(int argc, char **argv);
int cmd_check(int argc, char **argv);

/* Print "kestrel-eval: <msg>\n" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the usage line of `cmd` to stderr and return EXIT_USAGE. */
int cli_usage(const char *cmd);

/* ---- util.c ---- */
void *xmalloc(size_t n);             /* abort-free: prints and exits 2 only in the CLI, never in libs */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SHA-256 of a file as 64 lowercase hex chars + NUL (OpenSSL EVP). 0 ok; err on failure. */
int sha256_file(const char *path, char out[65], char *err, size_t err_len);
void sha256_hex(const void *data, size_t n, char out[65]);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ". */
void now_iso8601(char out[32]);
double now_seconds(void); /* CLOCK_MONOTONIC seconds */

/* Strict number parsing: whole string must parse; 0 ok, nonzero otherwise. */
int parse_int(const char *s, long long *out);
int parse_double(const char *s, double *out);
/* "1,2,3" -> malloc'd array; 0 ok. */
int parse_token_list(const char *s, int32_t **out, int *n);

/* Default results DB: --db value if non-NULL, else $KESTREL_DB, else "results/kestrel.db". */
const char *default_db_path(const char *flag_value);

/* Write a float32 (rows, cols) array as a NumPy .npy (v1.0, '<f4', C order). Atomic (tmp + rename). */
int write_npy_f32(const char *path, const float *data, int64_t rows, int64_t cols, char *err, size_t err_len);

/* One RFC 4180 CSV field: quoted (quotes doubled) when it holds , " CR or LF; NULL writes nothing. */
void csv_field(FILE *f, const char *s);
/* A JSON string literal (" \\ and control characters escaped); NULL writes null. */
void json_string(FILE *f, const char *s);
/* The same literal as a malloc'd string ("null" for NULL). */
char *json_quote(const char *s);

/* Is stdout/stderr a terminal (and TERM not dumb, NO_COLOR unset)? */
int use_color(FILE *f);

#endif
