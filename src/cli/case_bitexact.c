/*
 * case_bitexact.c - the `bitexact` case kind: today's outputs against the
 * outputs an earlier run archived, element by element (count of unequal bit
 * patterns, count_unequal in compare.h).
 *
 * Parent side (before the fork): bitexact_ref_load() picks the reference case
 * (the pinned run - `run --against` or the suite's baseline - when it holds the case, else the most
 * recent earlier passing case of the same name and model sha256 with archived
 * outputs) and loads its outputs; the child inherits them.
 * Child side: run the prompts (the case's prompt set, or the oracle's prompts)
 * teacher-forced with ALL_LOGITS, archive p{i}.tokens / p{i}.logits /
 * p{i}.argmax, and compare with the reference. No reference yet: the case
 * passes and this run's outputs become the reference (docs/metrics.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "cli.h"
#include "compare.h"
#include "oracle.h"
#include "store.h"

/* ================================ parent side ================================ */

/* The reference case id + run id by SQL (one row), 0 when none. */
static int find_ref(sqlite3 *db, const char *sql, int64_t a, const char *name, const char *sha, int64_t *case_id,
                    int64_t *run_id, char *err, size_t err_len) {
    sqlite3_stmt *st = NULL;
    int ret = -1;
    *case_id = *run_id = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, err_len, "looking up the reference of case '%s': %s", name, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    if (sha) sqlite3_bind_text(st, 3, sha, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *case_id = sqlite3_column_int64(st, 0);
        *run_id = sqlite3_column_int64(st, 1);
    } else if (rc != SQLITE_DONE) {
        snprintf(err, err_len, "looking up the reference of case '%s': %s", name, sqlite3_errmsg(db));
        goto cleanup;
    }
    ret = 0;
cleanup:
    sqlite3_finalize(st);
    return ret;
}

int bitexact_ref_load(sqlite3 *db, int64_t this_run, const char *case_name, const char *model_sha256,
                      int64_t pinned_run, const char *pinned_label, bitexact_ref *out, char *err, size_t err_len) {
    sqlite3_stmt *st = NULL;
    int ret = -1;
    memset(out, 0, sizeof *out);
    int64_t case_id = 0, run_id = 0;
    if (pinned_run > 0) {
        if (find_ref(db, "SELECT c.id, c.run_id FROM cases c WHERE c.run_id = ?1 AND c.name = ?2 "
                         "AND EXISTS (SELECT 1 FROM outputs o WHERE o.case_id = c.id)",
                     pinned_run, case_name, NULL, &case_id, &run_id, err, err_len) != 0)
            goto cleanup;
        if (case_id) out->source = xstrdup(pinned_label ? pinned_label : "the pinned run");
    }
    if (!case_id) {
        if (find_ref(db, "SELECT c.id, c.run_id FROM cases c JOIN artifacts am ON am.id = c.model_artifact "
                         "WHERE c.run_id < ?1 AND c.name = ?2 AND am.sha256 = ?3 AND c.status = 'pass' "
                         "AND EXISTS (SELECT 1 FROM outputs o WHERE o.case_id = c.id) "
                         "ORDER BY c.run_id DESC LIMIT 1",
                     this_run, case_name, model_sha256, &case_id, &run_id, err, err_len) != 0)
            goto cleanup;
        if (case_id) out->source = xasprintf("latest passing run %lld", (long long)run_id);
    }
    if (!case_id) {
        ret = 0;
        goto cleanup;
    }
    out->run_id = run_id;
    out->case_id = case_id;
    if (sqlite3_prepare_v2(db, "SELECT name FROM outputs WHERE case_id = ?1 ORDER BY name", -1, &st, NULL) !=
        SQLITE_OK) {
        snprintf(err, err_len, "reading outputs of case %lld: %s", (long long)case_id, sqlite3_errmsg(db));
        goto cleanup;
    }
    sqlite3_bind_int64(st, 1, case_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int i = out->n++;
        out->names = xrealloc(out->names, sizeof *out->names * (size_t)out->n);
        out->dtypes = xrealloc(out->dtypes, sizeof *out->dtypes * (size_t)out->n);
        out->data = xrealloc(out->data, sizeof *out->data * (size_t)out->n);
        out->n_elements = xrealloc(out->n_elements, sizeof *out->n_elements * (size_t)out->n);
        out->names[i] = xstrdup((const char *)sqlite3_column_text(st, 0));
        out->data[i] = NULL;
        out->n_elements[i] = 0;
        char e[512];
        if (store_get_output(db, case_id, out->names[i], &out->data[i], &out->n_elements[i], out->dtypes[i], e,
                             sizeof e) != 0) {
            snprintf(err, err_len, "reference %s: %s", out->source, e);
            goto cleanup;
        }
    }
    ret = 0;
cleanup:
    sqlite3_finalize(st);
    if (ret != 0) bitexact_ref_free(out);
    return ret;
}

void bitexact_ref_free(bitexact_ref *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        free(r->names[i]);
        free(r->data[i]);
    }
    free(r->names);
    free(r->dtypes);
    free(r->data);
    free(r->n_elements);
    free(r->source);
    memset(r, 0, sizeof *r);
}

/* ================================ child side ================================= */

typedef struct produced {
    char name[64]; const char *dtype; const void *data; int64_t n; /* data: (n,) */
} produced;

int case_bitexact(case_ctx *ctx) {
    const suite_case *c = ctx->c;
    const bitexact_ref *ref = ctx->ref;
    engine_lib lib = {0};
    kestrel_engine *eng = NULL;
    kestrel_info info;
    oracle *o = NULL;
    int n_prompts = 0;
    float **logits = NULL;   /* (n_prompts,) each (T, V) */
    int32_t **amax = NULL;   /* (n_prompts,) each (T,) */
    const int32_t **toks = NULL; int *ntok = NULL; /* (n_prompts,) */
    produced *outs = NULL;   /* (3 * n_prompts,) */
    int status = CASE_ERROR;
    char e[1024];

    if (c->prompts) {
        n_prompts = c->prompts->n_prompts;
    } else if (c->oracle) {
        if (oracle_open(c->oracle->path, &o, e, sizeof e) != 0) {
            case_error(ctx, "oracle '%s': %s", c->oracle->name, e);
            goto cleanup;
        }
        n_prompts = o->n_prompts;
    }
    if (n_prompts == 0) {
        case_error(ctx, "no prompts (the case needs `prompts` or an `oracle` with prompts)");
        goto cleanup;
    }
    toks = xcalloc((size_t)n_prompts, sizeof *toks);
    ntok = xcalloc((size_t)n_prompts, sizeof *ntok);
    for (int p = 0; p < n_prompts; p++) {
        toks[p] = c->prompts ? c->prompts->tokens[p] : o->prompts[p].tokens;
        ntok[p] = c->prompts ? c->prompts->n_tokens[p] : o->prompts[p].n_tokens;
    }
    if (case_open_engine(ctx, &lib, &eng, &info) != 0) goto cleanup;
    const kestrel_engine_api *api = lib.api;
    const int64_t V = info.n_vocab;
    logits = xcalloc((size_t)n_prompts, sizeof *logits);
    amax = xcalloc((size_t)n_prompts, sizeof *amax);
    outs = xcalloc((size_t)n_prompts * 3, sizeof *outs);
    int n_out = 0;
    for (int p = 0; p < n_prompts; p++) {
        const int64_t T = ntok[p];
        if (T < 1 || T > info.max_context) {
            case_error(ctx, "prompt %d has %lld tokens, the engine holds 1..%d", p, (long long)T, info.max_context);
            goto cleanup;
        }
        for (int64_t t = 0; t < T; t++)
            if (toks[p][t] < 0 || toks[p][t] >= V) {
                case_error(ctx, "prompt %d token %lld: id %d is outside the vocabulary (%lld)", p, (long long)t,
                           toks[p][t], (long long)V);
                goto cleanup;
            }
        logits[p] = xmalloc(sizeof(float) * (size_t)(T * V));
        amax[p] = xmalloc(sizeof(int32_t) * (size_t)T);
        if (api->reset(eng) != 0 ||
            api->forward(eng, toks[p], (int32_t)T, KESTREL_FWD_ALL_LOGITS, logits[p], amax[p]) != 0) {
            case_error(ctx, "prompt %d: forward of %lld tokens failed: %s", p, (long long)T, api->last_error(eng));
            goto cleanup;
        }
        int64_t tshape[1] = {T}, lshape[2] = {T, V};
        produced *q = &outs[n_out++];
        snprintf(q->name, sizeof q->name, "p%d.tokens", p);
        q->dtype = "i32"; q->data = toks[p]; q->n = T;
        emit_output(ctx->em, q->name, q->dtype, tshape, 1, q->data, q->n);
        q = &outs[n_out++];
        snprintf(q->name, sizeof q->name, "p%d.logits", p);
        q->dtype = "f32"; q->data = logits[p]; q->n = T * V;
        emit_output(ctx->em, q->name, q->dtype, lshape, 2, q->data, q->n);
        q = &outs[n_out++];
        snprintf(q->name, sizeof q->name, "p%d.argmax", p);
        q->dtype = "i32"; q->data = amax[p]; q->n = T;
        emit_output(ctx->em, q->name, q->dtype, tshape, 1, q->data, q->n);
    }

    const char *gate = c->gates.bitexact_set && c->gates.bitexact ? "== 0" : NULL;
    if (!ref || ref->run_id == 0) {
        emit_metric(ctx->em, "reference_run", 0, 0, "run id", "no archived outputs: this run is the reference", NULL,
                    -1);
        status = CASE_PASS;
        goto cleanup;
    }
    /* element by element against the reference; the two sets of outputs must match in names and sizes */
    int64_t unequal = 0, total = 0;
    for (int i = 0; i < n_out; i++) {
        int j = 0;
        while (j < ref->n && strcmp(ref->names[j], outs[i].name) != 0) j++;
        if (j == ref->n) {
            case_error(ctx, "reference %s has no output '%s'", ref->source, outs[i].name);
            goto cleanup;
        }
        if (strcmp(ref->dtypes[j], outs[i].dtype) != 0 || ref->n_elements[j] != (size_t)outs[i].n) {
            case_error(ctx, "output '%s': %lld %s elements, reference %s has %zu %s", outs[i].name,
                       (long long)outs[i].n, outs[i].dtype, ref->source, ref->n_elements[j], ref->dtypes[j]);
            goto cleanup;
        }
        unequal += count_unequal(outs[i].data, ref->data[j], outs[i].n, 4);
        total += outs[i].n;
    }
    if (ref->n != n_out) {
        case_error(ctx, "reference %s has %d outputs, this run %d", ref->source, ref->n, n_out);
        goto cleanup;
    }
    char text[96];
    snprintf(text, sizeof text, "%lld/%lld", (long long)unequal, (long long)total);
    int pass = !gate || unequal == 0;
    emit_metric(ctx->em, "unequal", 1, (double)unequal, "elements", text, gate, gate ? pass : -1);
    emit_metric(ctx->em, "reference_run", 1, (double)ref->run_id, "run id", ref->source, NULL, -1);
    if (!pass) case_error(ctx, "%s elements differ from %s", text, ref->source);
    status = pass ? CASE_PASS : CASE_FAIL;
cleanup:
    if (eng) lib.api->close(eng);
    engine_lib_close(&lib);
    if (o) oracle_close(o);
    for (int p = 0; p < n_prompts; p++) {
        if (logits) free(logits[p]);
        if (amax) free(amax[p]);
    }
    free(logits);
    free(amax);
    free(toks);
    free(ntok);
    free(outs);
    return status;
}
