/*
 * cmd_check.c - `kestrel-eval check SUITE.yaml [--list | --json] [--engine NAME=LIB]...`
 *
 * Validates a suite exactly as `run` would before running anything
 * (suite_load + the same --engine overrides) and reports:
 *   default  "SUITE: ok (N cases)"
 *   --list   a table of cases: name, kind, engine, model, tags
 *   --json   the resolved suite (absolute paths, defaults applied, prompt
 *            token ids) as JSON: what the runner will see; the tests diff it
 * Errors: one line "kestrel-eval: file:line:col: message", exit 2.
 * It opens no engine, model or database.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "suite.h"

static void json_pos(FILE *f, suite_pos p) { fprintf(f, "\"%d:%d\"", p.line, p.col); }

/* Shortest of %.15g / %.17g that reads back as v. */
static void json_double(FILE *f, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, f);
}

static void json_num(FILE *f, const char *key, double v) {
    fprintf(f, ", \"%s\": ", key);
    json_double(f, v);
}

static void print_gates(FILE *f, const suite_gates *g) {
    fputs("{", f);
    int first = 1;
#define GATE(setf, body)                                                                                               \
    if (g->setf) {                                                                                                     \
        fputs(first ? "" : ", ", f);                                                                                   \
        first = 0;                                                                                                     \
        body;                                                                                                          \
    }
    GATE(max_rel_set, (fputs("\"max_rel\": ", f), json_double(f, g->max_rel)));
    GATE(rms_rel_set, (fputs("\"rms_rel\": ", f), json_double(f, g->rms_rel)));
    GATE(hidden_max_rel_set, (fputs("\"hidden_max_rel\": ", f), json_double(f, g->hidden_max_rel)));
    GATE(argmax_set, if (g->argmax_all) fputs("\"argmax\": \"all\"", f);
         else (fputs("\"argmax\": ", f), json_double(f, g->argmax_min_frac)));
    GATE(greedy_set, fputs("\"greedy\": \"exact\"", f));
    GATE(bitexact_set, fprintf(f, "\"bitexact\": %s", g->bitexact ? "true" : "false"));
    GATE(max_ms_per_token_set, (fputs("\"max_ms_per_token\": ", f), json_double(f, g->max_ms_per_token)));
    GATE(max_drift_pct_set, (fputs("\"max_drift_pct\": ", f), json_double(f, g->max_drift_pct)));
    GATE(max_rel_growth_set, (fputs("\"max_rel_growth\": ", f), json_double(f, g->max_rel_growth)));
    GATE(min_effect_set, (fputs("\"min_effect\": ", f), json_double(f, g->min_effect)));
    GATE(alpha_set, (fputs("\"alpha\": ", f), json_double(f, g->alpha)));
    GATE(median_rel_set, (fputs("\"median_rel\": ", f), json_double(f, g->median_rel)));
    GATE(min_argmax_set, (fputs("\"min_argmax\": ", f), json_double(f, g->min_argmax)));
#undef GATE
    fputs("}", f);
}

static void print_files(FILE *f, const char *key, const suite_file_ref *refs, int n) {
    fprintf(f, "  \"%s\": [", key);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, refs[i].name);
        fputs(", \"path\": ", f);
        json_string(f, refs[i].path);
        fputs(", \"pos\": ", f);
        json_pos(f, refs[i].pos);
        fputs("}", f);
    }
    fputs(n ? "\n  ],\n" : "],\n", f);
}

static void print_json(FILE *f, const suite *s) {
    fputs("{\n  \"suite\": ", f);
    json_string(f, s->name);
    fputs(",\n  \"path\": ", f);
    json_string(f, s->path);
    fputs(",\n  \"dir\": ", f);
    json_string(f, s->dir);
    fputs(",\n  \"description\": ", f);
    json_string(f, s->description);
    fputs(",\n  \"baseline\": ", f);
    json_string(f, s->baseline);
    fputs(",\n  \"engines\": [", f);
    for (int i = 0; i < s->n_engines; i++) {
        const suite_engine *e = &s->engines[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, e->name);
        fputs(", \"lib\": ", f);
        json_string(f, e->lib);
        fputs(", \"sha256\": ", f);
        json_string(f, e->sha256);
        fputs(", \"options\": ", f);
        json_string(f, e->options);
        fputs(", \"pos\": ", f);
        json_pos(f, e->pos);
        fputs("}", f);
    }
    fputs(s->n_engines ? "\n  ],\n" : "],\n", f);
    print_files(f, "models", s->models, s->n_models);
    print_files(f, "oracles", s->oracles, s->n_oracles);
    fputs("  \"prompts\": [", f);
    for (int i = 0; i < s->n_prompts; i++) {
        const suite_prompt_set *ps = &s->prompts[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, ps->name);
        fputs(", \"file\": ", f);
        json_string(f, ps->path);
        fputs(", \"pos\": ", f);
        json_pos(f, ps->pos);
        fputs(", \"tokens\": [", f);
        for (int j = 0; j < ps->n_prompts; j++) {
            fputs(j ? ", [" : "[", f);
            for (int t = 0; t < ps->n_tokens[j]; t++) fprintf(f, "%s%" PRId32, t ? ", " : "", ps->tokens[j][t]);
            fputs("]", f);
        }
        fputs("]}", f);
    }
    fputs(s->n_prompts ? "\n  ],\n" : "],\n", f);
    fputs("  \"cases\": [", f);
    for (int i = 0; i < s->n_cases; i++) {
        const suite_case *cs = &s->cases[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, cs->name);
        fputs(", \"kind\": ", f);
        json_string(f, suite_case_kind_name(cs->kind));
        fputs(", \"pos\": ", f);
        json_pos(f, cs->pos);
        fputs(", \"engine\": ", f);
        json_string(f, cs->engine ? cs->engine->name : NULL);
        fputs(", \"model\": ", f);
        json_string(f, cs->model ? cs->model->name : NULL);
        fputs(", \"oracle\": ", f);
        json_string(f, cs->oracle ? cs->oracle->name : NULL);
        fputs(", \"prompts\": ", f);
        json_string(f, cs->prompts ? cs->prompts->name : NULL);
        fputs(",\n     \"tags\": [", f);
        for (int t = 0; t < cs->n_tags; t++) {
            fputs(t ? ", " : "", f);
            json_string(f, cs->tags[t]);
        }
        fputs("]", f);
        json_num(f, "timeout", cs->timeout_s);
        fprintf(f, ", \"warmup\": %d, \"iterations\": %d, \"threads\": %d", cs->warmup, cs->iterations, cs->threads);
        fprintf(f, ", \"prompt_len\": %d, \"step_tokens\": %d, \"greedy_tokens\": %d, \"hidden\": %s", cs->prompt_len,
                cs->step_tokens, cs->greedy_tokens, cs->capture_hidden ? "true" : "false");
        fprintf(f, ", \"bytes\": %" PRIu64, cs->bytes);
        if (cs->kind == CASE_ENGINE_DIFF) { /* the engine-diff keys */
            fputs(",\n     \"reference\": ", f);
            json_string(f, cs->reference ? cs->reference->name : NULL);
            fprintf(f, ", \"greedy\": %d, \"tokens\": [", cs->greedy);
            for (int t = 0; t < cs->n_tokens; t++) fprintf(f, "%s%" PRId32, t ? ", " : "", cs->tokens[t]);
            fputs("]", f);
        }
        fputs(",\n     \"gates\": ", f);
        print_gates(f, &cs->gates);
        fputs("}", f);
    }
    fputs(s->n_cases ? "\n  ]\n}\n" : "]\n}\n", f);
}

/* Tags of a case as "a,b" (or "-") into buf. */
static void tags_text(char *buf, size_t len, const suite_case *cs) {
    size_t o = 0;
    buf[0] = '\0';
    for (int t = 0; t < cs->n_tags && o < len; t++) {
        int w = snprintf(buf + o, len - o, "%s%s", t ? "," : "", cs->tags[t]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (!cs->n_tags) snprintf(buf, len, "-");
}

static void print_list(FILE *f, const suite *s) {
    int wn = 4, wk = 4, we = 6, wm = 5;
    for (int i = 0; i < s->n_cases; i++) {
        const suite_case *cs = &s->cases[i];
        int n;
        if ((n = (int)strlen(cs->name)) > wn) wn = n;
        if ((n = (int)strlen(suite_case_kind_name(cs->kind))) > wk) wk = n;
        if ((n = (int)strlen(cs->engine->name)) > we) we = n;
        if (cs->model && (n = (int)strlen(cs->model->name)) > wm) wm = n;
    }
    fprintf(f, "%-*s  %-*s  %-*s  %-*s  %s\n", wn, "name", wk, "kind", we, "engine", wm, "model", "tags");
    for (int i = 0; i < s->n_cases; i++) {
        const suite_case *cs = &s->cases[i];
        char tags[512];
        tags_text(tags, sizeof tags, cs);
        fprintf(f, "%-*s  %-*s  %-*s  %-*s  %s\n", wn, cs->name, wk, suite_case_kind_name(cs->kind), we,
                cs->engine->name, wm, cs->model ? cs->model->name : "-", tags);
    }
}

int cmd_check(int argc, char **argv) {
    int ret = EXIT_USAGE;
    int list = 0, json = 0;
    const char *path = NULL;
    suite *s = NULL;
    char err[2048];
    const char **overrides = NULL; /* (argc,) NAME=LIB strings */
    int n_over = 0;

    overrides = xcalloc((size_t)argc, sizeof *overrides);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) list = 1;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--engine")) {
            if (i + 1 >= argc) {
                cli_error("check: --engine needs NAME=LIB");
                ret = cli_usage("check");
                goto cleanup;
            }
            overrides[n_over++] = argv[++i];
        } else if (!strncmp(argv[i], "--engine=", 9)) overrides[n_over++] = argv[i] + 9;
        else if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("check: unknown option '%s'", argv[i]);
            ret = cli_usage("check");
            goto cleanup;
        } else if (path) {
            cli_error("check: one suite at a time (got '%s' and '%s')", path, argv[i]);
            ret = cli_usage("check");
            goto cleanup;
        } else path = argv[i];
    }
    if (!path || (list && json)) {
        if (list && json) cli_error("check: --list and --json are exclusive");
        ret = cli_usage("check");
        goto cleanup;
    }
    if (suite_load(path, &s, err, sizeof err)) {
        cli_error("%s", err);
        goto cleanup;
    }
    for (int i = 0; i < n_over; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!eq || eq == overrides[i] || !eq[1]) {
            cli_error("check: --engine %s: expected NAME=LIB", overrides[i]);
            goto cleanup;
        }
        char *name = xstrdup(overrides[i]);
        name[eq - overrides[i]] = '\0';
        int rc = suite_override_engine(s, name, eq + 1, err, sizeof err);
        free(name);
        if (rc) {
            cli_error("%s", err);
            goto cleanup;
        }
    }
    if (json) print_json(stdout, s);
    else if (list) print_list(stdout, s);
    else printf("%s: ok (%d case%s)\n", path, s->n_cases, s->n_cases == 1 ? "" : "s");
    ret = EXIT_OK;
cleanup:
    suite_free(s);
    free(overrides);
    return ret;
}
