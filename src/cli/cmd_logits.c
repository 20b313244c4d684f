/*
 * cmd_logits.c - `kestrel-eval logits`: run a token sequence teacher-forced
 * through an engine and write the (T, vocab) logits as a float32 .npy, or
 * print the top-K ids per position.
 *
 *   kestrel-eval logits --engine cpu|cuda|PATH --model FILE.gguf --tokens 1,2,3
 *                       [--out FILE.npy] [--top K] [--options OPTS]
 *
 * Without --out and --top it prints the top 5. Input errors: one line, exit 2.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_load.h"

typedef struct logits_args {
    const char *engine, *model, *tokens, *out, *options;
    long long top;
} logits_args;

static int parse_args(int argc, char **argv, logits_args *a) {
    memset(a, 0, sizeof *a);
    a->top = -1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (strcmp(k, "--help") == 0 || strcmp(k, "-h") == 0) return cli_usage("logits");
        if (i + 1 >= argc) {
            cli_error("logits: %s needs a value", k);
            return cli_usage("logits");
        }
        const char *v = argv[++i];
        if (strcmp(k, "--engine") == 0) a->engine = v;
        else if (strcmp(k, "--model") == 0) a->model = v;
        else if (strcmp(k, "--tokens") == 0) a->tokens = v;
        else if (strcmp(k, "--out") == 0) a->out = v;
        else if (strcmp(k, "--options") == 0) a->options = v;
        else if (strcmp(k, "--top") == 0) {
            if (parse_int(v, &a->top) != 0 || a->top < 1) {
                cli_error("logits: --top %s: expected a positive integer", v);
                return EXIT_USAGE;
            }
        } else {
            cli_error("logits: unknown argument '%s'", k);
            return cli_usage("logits");
        }
    }
    if (!a->engine || !a->model || !a->tokens) {
        cli_error("logits: --engine, --model and --tokens are required");
        return cli_usage("logits");
    }
    if (!a->out && a->top < 0) a->top = 5;
    return EXIT_OK;
}

/* Print the top-k ids of each row: "pos t: id (logit) id (logit) ...". logits: (T, V) */
static void print_top(const float *logits, int T, int V, int k) {
    if (k > V) k = V;
    int *best = xmalloc(sizeof(int) * (size_t)k);
    for (int t = 0; t < T; t++) {
        const float *row = logits + (size_t)t * V;
        int nb = 0;
        for (int i = 0; i < V; i++) {
            if (row[i] != row[i]) continue; /* NaN never ranks */
            int j;
            if (nb < k) j = nb++;
            else if (row[i] > row[best[k - 1]]) j = k - 1;
            else continue;
            /* keep best[] sorted: larger logit first, the lower id first on ties */
            while (j > 0 && row[i] > row[best[j - 1]]) {
                best[j] = best[j - 1];
                j--;
            }
            best[j] = i;
        }
        printf("pos %d:", t);
        for (int j = 0; j < nb; j++) printf(" %d (%.4f)", best[j], row[best[j]]);
        putchar('\n');
    }
    free(best);
}

int cmd_logits(int argc, char **argv) {
    int ret = EXIT_USAGE;
    logits_args a;
    engine_lib lib = {0};
    kestrel_engine *e = NULL;
    int32_t *tokens = NULL;
    float *logits = NULL;
    int T = 0;
    char err[1024];
    int rc = parse_args(argc, argv, &a);
    if (rc != EXIT_OK) return rc;
    if (parse_token_list(a.tokens, &tokens, &T) != 0) {
        cli_error("logits: --tokens '%s': expected comma-separated non-negative token ids", a.tokens);
        goto cleanup;
    }
    if (engine_lib_open(a.engine, &lib, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    if (lib.api->open(a.model, a.options ? a.options : "", &e, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    kestrel_info info;
    if (lib.api->info(e, &info) != 0) {
        cli_error("%s: info: %s", a.model, lib.api->last_error(e));
        ret = EXIT_FAIL;
        goto cleanup;
    }
    int V = info.n_vocab;
    for (int t = 0; t < T; t++)
        if (tokens[t] < 0 || tokens[t] >= V) {
            cli_error("logits: --tokens: token %d at position %d is out of range for %s (vocab %d)", tokens[t], t,
                      a.model, V);
            goto cleanup;
        }
    if (T > info.max_context) {
        cli_error("logits: --tokens: %d tokens exceed the engine's max_context %d (see --options ctx=N)", T,
                  info.max_context);
        goto cleanup;
    }
    logits = xmalloc(sizeof(float) * (size_t)T * (size_t)V);
    if (lib.api->forward(e, tokens, T, KESTREL_FWD_ALL_LOGITS, logits, NULL) != 0) {
        cli_error("%s: forward: %s", a.model, lib.api->last_error(e));
        ret = EXIT_FAIL;
        goto cleanup;
    }
    if (a.out && write_npy_f32(a.out, logits, T, V, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto cleanup;
    }
    if (a.top > 0) print_top(logits, T, V, (int)(a.top > V ? V : a.top));
    ret = EXIT_OK;
cleanup:
    if (e) lib.api->close(e);
    engine_lib_close(&lib);
    free(tokens);
    free(logits);
    return ret;
}
