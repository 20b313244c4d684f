/*
 * cuda/engine_diff.c - run two engine libraries on the same GGUF file and
 * compare them: teacher-forced logits of a prompt (per position max_rel =
 * max|b - a| / max|a|, argmax equality) and a greedy continuation of N tokens
 * (token sequences identical, logits within the tolerance).
 *
 * This is how the quantised fixtures are checked: the CUDA engine (b) against
 * the CPU engine (a) on the SAME q8_0/q4_0 file, since the f32 oracle cannot
 * tell a wiring error from quantisation error (BRIEF §4). tools/gpu_check.sh
 * runs it; a suite does the same with the engine-diff case kind (docs/suites.md).
 *
 * usage: engine_diff --a LIB --b LIB --model FILE.gguf --tokens 1,2,3
 *                    [--greedy N] [--tol X] [--median-tol Y] [--argmax-min F] [--a-options S] [--b-options S]
 *                    [--b-kernel NAME]... [--b-no-kernel NAME]...
 * --b-kernel / --b-no-kernel: after the run, B's per-op profile (B opened with profile=1) must show
 * NAME with calls > 0 / must not (at most 8 of each). Why: an option that picks a kernel per step
 * (the CUDA engine's attention by position and ctx) is only tested when the test sees which ran.
 * --argmax-min: the fraction of prompt positions whose argmax must agree (default 1).
 * --tol 0: the logits must be bit-identical (max_rel is 0 only then).
 * --median-tol: the median over prompt positions of max_rel must also be <= Y. Why: with 8-bit
 * activations (dot=q8) a last-bit difference in an f32 op (another summation order) sometimes moves
 * one activation across a rounding boundary, and on the tiny fixtures that moves a position's logits by
 * a few 1e-2 (docs/cuda-engine.md); a wiring error moves every position. So q8 pairs run with a loose
 * --tol and a tight --median-tol.
 * Prints one line per check, then `PASS` or `FAIL`; exit 0 pass, 1 fail,
 * 2 bad input or an engine error.
 */
#include "kestrel/engine.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct side {
    const char *lib, *opts;
    void *dl;
    const kestrel_engine_api *api;
    kestrel_engine *e;
} side;

static int side_open(side *s, const char *model, char *err, size_t n)
{
    kestrel_engine_entry_fn fn;
    s->dl = dlopen(s->lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->dl) {
        snprintf(err, n, "%s: %s", s->lib, dlerror());
        return -1;
    }
    *(void **)&fn = dlsym(s->dl, KESTREL_ENGINE_ENTRY);
    s->api = fn ? fn(KESTREL_ENGINE_ABI_VERSION) : NULL;
    if (!s->api) {
        snprintf(err, n, "%s: no kestrel_engine_entry for ABI %u", s->lib, KESTREL_ENGINE_ABI_VERSION);
        return -1;
    }
    if (s->api->open(model, s->opts, &s->e, err, n)) return -1;
    return 0;
}

static double max_rel(const float *ref, const float *x, int n)
{
    double md = 0, mr = 0;
    for (int i = 0; i < n; i++) {
        if (!(x[i] == x[i])) return INFINITY;
        double d = fabs((double)x[i] - ref[i]);
        if (d > md) md = d;
        if (fabs(ref[i]) > mr) mr = fabs(ref[i]);
    }
    return mr > 0 ? md / mr : md;
}

static int parse_tokens(const char *s, int32_t **out, int *n)
{
    int cap = 16, k = 0;
    int32_t *t = malloc(cap * sizeof *t);
    char *end;
    while (t && *s) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 0x7fffffff) break;
        if (k == cap) {
            int32_t *nt = realloc(t, 2 * cap * sizeof *t);
            if (!nt) break;
            t = nt;
            cap *= 2;
        }
        t[k++] = (int32_t)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) break;
    }
    if (!t || *s || k == 0) {
        free(t);
        return -1;
    }
    *out = t;
    *n = k;
    return 0;
}

#define ED_MAX_KERNELS 8
#define ED_MAX_PROF 256

/* One line per expectation on B's profile; 1 when all hold. */
static int kernels_check(const side *b, const char *const *want, int n_want, const char *const *unwanted,
                         int n_unwanted)
{
    kestrel_prof_entry pe[ED_MAX_PROF];
    int32_t n = 0;
    if (!b->api->profile || b->api->profile(b->e, pe, ED_MAX_PROF, &n) || n <= 0) {
        printf("kernel b: no profile (open B with profile=1)\n");
        return 0;
    }
    if (n > ED_MAX_PROF) n = ED_MAX_PROF;
    int ok = 1;
    for (int k = 0; k < n_want + n_unwanted; k++) {
        const char *name = k < n_want ? want[k] : unwanted[k - n_want];
        unsigned long long calls = 0;
        for (int i = 0; i < n; i++)
            if (!strcmp(pe[i].name, name)) calls += (unsigned long long)pe[i].calls;
        const int good = k < n_want ? calls > 0 : calls == 0;
        printf("kernel b: %s: %llu calls (expected %s)%s\n", name, calls, k < n_want ? "some" : "none",
               good ? "" : " MISMATCH");
        ok &= good;
    }
    return ok;
}

int main(int argc, char **argv)
{
    side a = {0}, b = {0};
    const char *model = NULL, *toks = NULL;
    int greedy = 8, ntok = 0, rc = 2, pass = 1;
    double tol = 1e-3, median_tol = -1, argmax_min = 1.0;
    int32_t *tk = NULL, *seq = NULL;
    float *la = NULL, *lb = NULL;
    char err[1024];
    kestrel_info ia, ib;
    const char *want[ED_MAX_KERNELS], *unwanted[ED_MAX_KERNELS];
    int n_want = 0, n_unwanted = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--a")) a.lib = argv[i + 1];
        else if (!strcmp(argv[i], "--b")) b.lib = argv[i + 1];
        else if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--tokens")) toks = argv[i + 1];
        else if (!strcmp(argv[i], "--greedy")) greedy = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tol")) tol = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--median-tol")) median_tol = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--argmax-min")) argmax_min = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--a-options")) a.opts = argv[i + 1];
        else if (!strcmp(argv[i], "--b-options")) b.opts = argv[i + 1];
        else if (!strcmp(argv[i], "--b-kernel") || !strcmp(argv[i], "--b-no-kernel")) {
            const int neg = argv[i][4] == 'n';
            if ((neg ? n_unwanted : n_want) == ED_MAX_KERNELS || !argv[i + 1][0]) {
                fprintf(stderr, "engine_diff: %s '%s': at most %d non-empty names\n", argv[i], argv[i + 1],
                        ED_MAX_KERNELS);
                return 2;
            }
            if (neg) unwanted[n_unwanted++] = argv[i + 1];
            else want[n_want++] = argv[i + 1];
        } else {
            fprintf(stderr, "engine_diff: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!a.lib || !b.lib || !model || !toks || greedy < 0 || !(tol >= 0) || !(argmax_min >= 0 && argmax_min <= 1)) {
        fprintf(stderr, "usage: engine_diff --a LIB --b LIB --model FILE.gguf --tokens 1,2,3 [--greedy N] [--tol X] "
                        "[--median-tol Y] [--argmax-min F] [--a-options S] [--b-options S] [--b-kernel NAME]... "
                        "[--b-no-kernel NAME]...\n");
        return 2;
    }
    if (parse_tokens(toks, &tk, &ntok)) {
        fprintf(stderr, "engine_diff: --tokens '%s': expected comma-separated non-negative ids\n", toks);
        return 2;
    }
    if (side_open(&a, model, err, sizeof err) || side_open(&b, model, err, sizeof err)) {
        fprintf(stderr, "engine_diff: %s\n", err);
        goto cleanup;
    }
    a.api->info(a.e, &ia);
    b.api->info(b.e, &ib);
    if (ia.n_vocab != ib.n_vocab) {
        fprintf(stderr, "engine_diff: %s: n_vocab %d vs %d\n", model, ia.n_vocab, ib.n_vocab);
        goto cleanup;
    }
    const int V = ia.n_vocab, T = ntok + greedy;
    la = malloc((size_t)T * V * sizeof *la);
    lb = malloc((size_t)T * V * sizeof *lb);
    seq = malloc((size_t)T * sizeof *seq);
    int32_t *am_a = malloc((size_t)T * sizeof *am_a), *am_b = malloc((size_t)T * sizeof *am_b);
    if (!la || !lb || !seq || !am_a || !am_b) {
        fprintf(stderr, "engine_diff: out of memory\n");
        free(am_a);
        free(am_b);
        goto cleanup;
    }
    /* teacher-forced prompt */
    if (a.api->forward(a.e, tk, ntok, KESTREL_FWD_ALL_LOGITS, la, am_a) ||
        b.api->forward(b.e, tk, ntok, KESTREL_FWD_ALL_LOGITS, lb, am_b)) {
        fprintf(stderr, "engine_diff: %s: forward: %s%s\n", model, a.api->last_error(a.e), b.api->last_error(b.e));
        free(am_a);
        free(am_b);
        goto cleanup;
    }
    double worst = 0, *rel = malloc((size_t)ntok * sizeof *rel);
    int worst_pos = 0, am_eq = 0;
    if (!rel) {
        fprintf(stderr, "engine_diff: out of memory\n");
        free(am_a);
        free(am_b);
        goto cleanup;
    }
    for (int t = 0; t < ntok; t++) {
        double r = max_rel(la + (size_t)t * V, lb + (size_t)t * V, V);
        if (r > worst || r != r) { worst = r; worst_pos = t; }
        rel[t] = r != r ? INFINITY : r;
        am_eq += am_a[t] == am_b[t];
    }
    for (int i = 1; i < ntok; i++) /* insertion sort: a few dozen positions */
        for (int j = i; j > 0 && rel[j] < rel[j - 1]; j--) {
            const double t = rel[j];
            rel[j] = rel[j - 1];
            rel[j - 1] = t;
        }
    const double median = ntok % 2 ? rel[ntok / 2] : 0.5 * (rel[ntok / 2 - 1] + rel[ntok / 2]);
    free(rel);
    printf("prompt: %d positions, worst max_rel %.3e at position %d (tol %.0e), median %.3e", ntok, worst, worst_pos,
           tol, median);
    if (median_tol >= 0) printf(" (tol %.0e)", median_tol);
    printf(", argmax equal %d/%d\n", am_eq, ntok);
    pass &= worst <= tol && am_eq >= argmax_min * ntok && (median_tol < 0 || median <= median_tol);
    /* greedy: each side continues from its own argmax; the sequences must be identical */
    int32_t na = am_a[ntok - 1], nb = am_b[ntok - 1];
    int div = -1;
    double gworst = 0;
    for (int j = 0; j < greedy; j++) {
        seq[j] = na;
        if (na != nb) { div = j; break; }
        if (a.api->forward(a.e, &na, 1, 0, la, &na) || b.api->forward(b.e, &nb, 1, 0, lb, &nb)) {
            fprintf(stderr, "engine_diff: %s: greedy step %d: %s%s\n", model, j, a.api->last_error(a.e),
                    b.api->last_error(b.e));
            free(am_a);
            free(am_b);
            goto cleanup;
        }
        double r = max_rel(la, lb, V);
        if (r > gworst || r != r) gworst = r;
    }
    if (div < 0 && greedy > 0 && na != nb) div = greedy;
    printf("greedy: %d tokens, %s, worst max_rel %.3e\n", greedy, div < 0 ? "identical" : "DIVERGED", gworst);
    if (div >= 0) printf("greedy: first difference at step %d\n", div);
    printf("greedy tokens:");
    for (int j = 0; j < greedy && (div < 0 || j < div); j++) printf(" %d", seq[j]);
    printf("\n");
    pass &= div < 0 && gworst <= tol;
    if (n_want + n_unwanted > 0) pass &= kernels_check(&b, want, n_want, unwanted, n_unwanted);
    printf("%s\n", pass ? "PASS" : "FAIL");
    rc = pass ? 0 : 1;
    free(am_a);
    free(am_b);
cleanup:
    if (a.api && a.e) a.api->close(a.e);
    if (b.api && b.e) b.api->close(b.e);
    /* libraries stay loaded until exit: a static CUDA runtime does not like dlclose before its atexit */
    free(tk);
    free(seq);
    free(la);
    free(lb);
    return rc;
}
