/*
 * runner.h - run one case in a forked child process with a timeout, and the
 * record stream the child uses to send its results to the parent.
 *
 * Wire format (child -> parent, one pipe; host byte order, both ends are the
 * same binary): a sequence of records, each
 *     u32 type | u32 payload length | payload
 * where the payload is a sequence of fields: strings as u32 length + bytes,
 * numbers as raw i32 / i64 / f64. Types and their fields:
 *     METRIC  name, unit, text, gate (strings; "" = NULL), has_value i32, value f64, gate_pass i32 (-1 NULL)
 *     SAMPLE  series (string), idx i32, value f64
 *     OUTPUT  name, dtype (strings), ndim i32, shape i64 x ndim, n_elements i64, bytes (n_elements*4)
 *     PROFILE kernel (string), calls i64, total_ms f64, ms_per_step f64
 *     ENGINE  engine_name, engine_version, build_flags, device (strings)
 *     REF_ENGINE  the same four, of an engine-diff case's reference engine
 *     STATUS  status i32 (enum case_status), error (string) - the last record
 * The child's stderr (and stdout) go through a second pipe; the parent keeps
 * its last lines for crash reports.
 */
#ifndef KESTREL_RUNNER_H
#define KESTREL_RUNNER_H

#include <stddef.h>
#include <stdint.h>

enum case_status { CASE_PASS = 0, CASE_FAIL, CASE_CRASH, CASE_TIMEOUT, CASE_ERROR, CASE_SKIP };
const char *case_status_name(int s); /* "pass", "fail", ... as in the cases table */

enum { REC_METRIC = 1, REC_SAMPLE, REC_OUTPUT, REC_PROFILE, REC_ENGINE, REC_STATUS, REC_REF_ENGINE };

/* ---- child side: the emitter (buffered writer of records to a pipe) ---- */
typedef struct emitter emitter;

/* value NAN or has_value 0 -> NULL. unit/text/gate may be NULL. gate_pass -1 -> NULL. */
void emit_metric(emitter *em, const char *name, int has_value, double value, const char *unit, const char *text,
                 const char *gate, int gate_pass);
void emit_sample(emitter *em, const char *series, int idx, double value);
/* shape: (ndim,), data: (n_elements,) f32 or i32 */
void emit_output(emitter *em, const char *name, const char *dtype, const int64_t *shape, int ndim,
                 const void *data, int64_t n_elements);
void emit_profile(emitter *em, const char *kernel, int64_t calls, double total_ms, double ms_per_step);
void emit_engine(emitter *em, const char *name, const char *version, const char *build_flags, const char *device);
/* the same for the reference engine of an engine-diff case (its artifact row gets these) */
void emit_ref_engine(emitter *em, const char *name, const char *version, const char *build_flags, const char *device);

/* ---- parent side: what came back ---- */
typedef struct rec_metric {
    char *name, *unit, *text, *gate; /* NULL when absent */
    int has_value; double value;
    int gate_pass;                   /* -1: no gate */
} rec_metric;
typedef struct rec_sample { char *series; int idx; double value; } rec_sample;
typedef struct rec_output {
    char *name; char dtype[8];
    int ndim; int64_t shape[8];
    int64_t n_elements; void *data;  /* (n_elements,) */
} rec_output;
typedef struct rec_profile { char *kernel; int64_t calls; double total_ms, ms_per_step; } rec_profile;
/* what an engine's info() reported (ENGINE / REF_ENGINE records); have 0: no record came */
typedef struct rec_engine { int have; char *name, *version, *build_flags, *device; } rec_engine;

typedef struct case_result {
    int status;            /* enum case_status */
    char *error;           /* NULL or the message (gates, crash signal + stderr tail, ...) */
    double duration_s;
    rec_metric *metrics; int n_metrics;
    rec_sample *samples; int n_samples;
    rec_output *outputs; int n_outputs;
    rec_profile *profile; int n_profile;
    rec_engine engine;     /* the case's engine */
    rec_engine ref_engine; /* engine-diff: the reference engine */
} case_result;
void case_result_free(case_result *r);
/* The metric named `name`, or NULL. */
const rec_metric *case_result_metric(const case_result *r, const char *name);

/* The work of a child: returns enum case_status; *error_out is a static/ctx buffer. */
typedef int (*runner_child_fn)(void *arg, emitter *em, const char **error_out);

/* Called about every 0.2 s while a case runs (progress display); may be NULL. */
typedef void (*runner_tick_fn)(void *ud, double elapsed_s);

enum { RUNNER_DONE = 0, RUNNER_INTERRUPTED = 1, RUNNER_SYSERR = -1 };

/* Fork a child that runs fn(arg, ...) with a fresh emitter; wait for it at most
 * timeout_s seconds (<= 0: no limit), killing it (SIGKILL, its whole process group)
 * past the limit. Fills *res (status pass/fail/error from the child, or crash /
 * timeout). Returns RUNNER_DONE, RUNNER_INTERRUPTED when SIGINT/SIGTERM arrived
 * (child killed, *res not meaningful), or RUNNER_SYSERR (fork/pipe failed; err). */
int runner_exec(runner_child_fn fn, void *arg, double timeout_s, runner_tick_fn tick, void *tick_ud,
                case_result *res, char *err, size_t err_len);

/* SIGINT/SIGTERM handling for the parent: install once; runner_exec watches it.
 * runner_signal() is the signal received (0 none). SIGPIPE is ignored. */
int runner_install_signals(char *err, size_t err_len);
int runner_signal(void);
/* A descriptor that becomes readable when one of those signals arrives (-1 before
 * runner_install_signals), for a caller's own poll loop (kestrel-eval ab); read it to drain. */
int runner_signal_fd(void);

#endif
