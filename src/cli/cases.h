/*
 * cases.h - the case kinds of `kestrel-eval run` (docs/metrics.md).
 *
 * Each kind is one function that runs INSIDE the case's child process
 * (runner.c forks it): it opens the engine, does the work and emits its
 * results (metrics, samples, outputs, kernel profile) through the emitter to
 * the parent, which alone writes the database. A case function returns the
 * case status; gate failures and errors are appended to ctx->error.
 *
 * The bitexact kind has a parent-side part too: bitexact_ref_load() reads the
 * reference outputs from the database before the child is forked, and the
 * child inherits them.
 */
#ifndef KESTREL_CASES_H
#define KESTREL_CASES_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "engine_load.h"
#include "kestrel/engine.h"
#include "runner.h"
#include "suite.h"

/* Reference outputs of a bitexact case (loaded by the parent). */
typedef struct bitexact_ref {
    int64_t run_id;      /* 0: no reference (this run becomes the reference) */
    int64_t case_id;
    char *source;        /* "baseline 'x' (run 4)" or "latest passing run 4" */
    int n;               /* outputs */
    char **names;        /* (n,) */
    char (*dtypes)[8];   /* (n,) "f32" / "i32" */
    void **data;         /* (n,) raw little-endian elements */
    size_t *n_elements;  /* (n,) */
} bitexact_ref;

/* Everything a case function needs; lives in the child. */
typedef struct case_ctx {
    const suite_case *c;
    const char *engine_path;  /* resolved library path */
    const char *options;      /* engine open()/bandwidth_probe() options incl. threads=N */
    const bitexact_ref *ref;  /* bitexact cases */
    const char *reference_path;    /* engine-diff: resolved library path of c->reference */
    const char *reference_options; /* engine-diff: its open() options incl. threads=N */
    emitter *em;
    char error[4096];         /* "; "-joined gate failures / the error */
} case_ctx;

/* Append a message to ctx->error (joined with "; "). */
void case_error(case_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* dlopen the engine library and open the case's model with ctx->options; emits the
 * engine's info (name, version, build flags, device) for the artifact row. 0 ok, else
 * the message is in ctx->error. */
int case_open_engine(case_ctx *ctx, engine_lib *lib, kestrel_engine **eng, kestrel_info *info);

/* Gate helpers: emit the metric with its gate and pass flag; return 1 pass, 0 fail
 * (a failure is appended to ctx->error). value <= limit. */
int case_gate_le(case_ctx *ctx, const char *metric, double value, const char *unit, const char *text,
                 double limit, const char *where);

/* The kinds. Return enum case_status. */
int case_oracle(case_ctx *ctx);
int case_bench(case_ctx *ctx);
int case_bitexact(case_ctx *ctx);
int case_bandwidth(case_ctx *ctx);
int case_engine_diff(case_ctx *ctx);

/* Parent side of bitexact: find the reference case (the case of the same name in
 * pinned_run when > 0 - the run of `run --against` or of the suite's baseline - if it
 * has archived outputs, else the most recent earlier run's passing case of the same
 * name and model sha256 with archived outputs) and load its outputs. No reference:
 * 0 with out->run_id == 0. pinned_label describes pinned_run ("baseline 'x' (run 3)"). */
int bitexact_ref_load(sqlite3 *db, int64_t this_run, const char *case_name, const char *model_sha256,
                      int64_t pinned_run, const char *pinned_label, bitexact_ref *out, char *err, size_t err_len);
void bitexact_ref_free(bitexact_ref *r);

/* decode-bench protocol, shared by the decode-bench case and `ab` rounds so both time
 * exactly the same thing: P, T, warmup and iterations of case c with their defaults. */
void bench_shape(const suite_case *c, int *P, int *T, int *warmup, int *iters);
/* On an open engine: reset, a prompt of P ids in one forward call (untimed), `warmup`
 * untimed steps, then `iterations` timed steps of T tokens. ms: (iterations,) ms per
 * token. With prof0 != NULL, profile() is snapshotted into it (prof_cap entries, count in
 * *n_prof0) just before the first timed step. 0 ok, else err holds the message. */
int bench_run_steps(const kestrel_engine_api *api, kestrel_engine *eng, const kestrel_info *info,
                    const suite_case *c, double *ms, kestrel_prof_entry *prof0, int32_t prof_cap,
                    int32_t *n_prof0, char *err, size_t err_len);

/* Deterministic token ids for prompts the suite does not give: a 64-bit LCG
 * (Knuth MMIX constants) seeded with `seed`, mapped into [0, n_vocab). out: (n,) */
void case_lcg_tokens(uint64_t seed, int32_t n_vocab, int32_t *out, int n);

#endif
