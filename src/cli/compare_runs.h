/*
 * compare_runs.h - the comparison engine behind `kestrel-eval report` and
 * `run --against`: one run against a baseline run (or against its own gates
 * only), per case and metric, with the rules of docs/methodology.md.
 *
 * Library-style: functions return nonzero with `err` filled; nothing prints
 * except the explicit writers (cr_write_*) and report_against().
 */
#ifndef KESTREL_COMPARE_RUNS_H
#define KESTREL_COMPARE_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

/* Defaults when a case's params JSON sets none (docs/methodology.md). */
#define CR_DEFAULT_MAX_REL_GROWTH 2.0
#define CR_MAX_REL_FLOOR 1e-7   /* max_rel below this is treated as this (noise floor) */
#define CR_DEFAULT_MIN_EFFECT 0.03
#define CR_DEFAULT_ALPHA 0.01
#define CR_MIN_SAMPLES 5

/* Case verdicts. */
enum cr_verdict { CR_OK, CR_IMPROVED, CR_REGRESSED, CR_NEW, CR_MISSING, CR_CRASHED };
const char *cr_verdict_name(enum cr_verdict v); /* "ok", "improved", ... */

/* One metric line of a case. verdict: ok | improved | regressed | same | slower |
 * faster | inconclusive | fail (absolute gate failed) | info (shown, no rule) */
typedef struct cr_line {
    char *metric;          /* metric, sample series ("ms_per_token samples") or output name */
    int has_base, has_cur;
    double base, cur;      /* NaN when absent */
    char *base_text, *cur_text; /* metrics.text (e.g. "86/86"), or NULL */
    char *delta;           /* "x1.07", "+7.2%", "3/80 unequal", ... or NULL */
    const char *verdict;   /* static string */
    char *rule;            /* the test/threshold used, e.g. "MWU p=0.0003 < 0.01, +7.2% >= 3%" */
} cr_line;

typedef struct cr_case {
    char *name, *kind;
    int64_t cur_id, base_id;         /* cases.id, 0 when absent on that side */
    char *cur_status, *base_status;  /* cases.status or NULL */
    char *error;                     /* current cases.error (crash signal + stderr tail...) */
    enum cr_verdict verdict;
    int n_inconclusive;
    cr_line *lines; int n_lines;
} cr_case;

/* A like-with-like difference between the two runs. cls: "intended" (engine),
 * "suspect" (model/oracle/prompts hash, GPU), "info" (driver, host, ...). */
typedef struct cr_diff {
    char *what;        /* "engine 'cpu' sha256", "gpu", ... */
    char *base, *cur;
    const char *cls;
} cr_diff;

typedef struct cr_kernel {
    char *case_name, *kernel;
    int64_t calls;
    double total_ms, ms_per_step, share; /* share of the case's summed kernel time, 0..1 */
    double floor_share;      /* ms_per_step / the case's floor_ms_per_token; NAN without an in-run probe */
    double base_ms_per_step; /* the same case and kernel in the baseline run; NAN when none */
} cr_kernel;

typedef struct cr_result {
    int64_t run_id, base_run_id;     /* base_run_id 0: gates only */
    char *against;                   /* "baseline 'smoke-main' (run 3)", "run 3", or NULL */
    char *suite, *started_at, *status, *engine_sha256; /* of the current run */
    char *base_started_at;
    cr_case *cases; int n_cases;
    cr_diff *diffs; int n_diffs;
    int suspect;                     /* any diff of class suspect */
    int counts[6];                   /* per enum cr_verdict */
    int n_inconclusive, n_gate_fail;
    cr_kernel *kernels; int n_kernels; /* top kernels per case, by total_ms */
} cr_result;

/* Resolve --against: a baseline name, a run id or "latest". 0 ok; err e.g.
 * "no baseline or run 'nightly' in results/kestrel.db". label gets a malloc'd
 * description ("baseline 'x' (run 3)") when non-NULL. */
int cr_resolve_against(sqlite3 *db, const char *db_path, const char *spec, int64_t *run_id, char **label,
                       char *err, size_t err_len);

/* The baseline to use when none is given: the suite file's `baseline:` key
 * (runs.suite_path) when that baseline exists. 0 and *run_id = 0 when none. */
int cr_default_baseline(sqlite3 *db, int64_t run_id, int64_t *base_run_id, char **label);

/* Compare run_id against base_run_id (0: gates only). */
int compare_runs(sqlite3 *db, int64_t run_id, int64_t base_run_id, const char *against_label,
                 cr_result *out, char *err, size_t err_len);
void cr_result_free(cr_result *r);

/* 1 when anything regressed, crashed or failed a gate, else 0. */
int cr_exit_code(const cr_result *r);

/* Writers. only_regressions: print only cases that regressed or crashed. color: ANSI colours. */
int cr_write_text(const cr_result *r, FILE *f, int only_regressions, int color);
int cr_write_md(const cr_result *r, FILE *f, int only_regressions);
int cr_write_json(const cr_result *r, FILE *f, int only_regressions);
int cr_write_junit(const cr_result *r, FILE *f, int only_regressions);
/* HTML needs the DB for the per-case history charts (last_n runs). */
int cr_write_html(const cr_result *r, sqlite3 *db, int last_n, FILE *f, int only_regressions);

/* For `run --against NAME`: compare run_id with `against` (baseline name or
 * run id; NULL: the suite's baseline, else gates only), print the text report
 * to `out`. Returns 0 ok, 1 regressed/crashed/gate failed, 2 input error
 * (message printed to stderr as "kestrel-eval: ..."). db_path only names the
 * DB in messages (may be NULL). */
int report_against(sqlite3 *db, int64_t run_id, const char *against, FILE *out);

#endif
