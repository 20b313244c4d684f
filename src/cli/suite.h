/*
 * suite.h - a parsed, validated suite (docs/suites.md, schemas/suite.schema.json).
 *
 * suite_load() parses the YAML with libyaml, checks every key, type, number,
 * reference and file, and resolves paths relative to the suite file. Any error
 * is one line "file:line:col: message" and nothing is returned; the caller
 * exits 2 before running anything.
 */
#ifndef KESTREL_SUITE_H
#define KESTREL_SUITE_H

#include <stddef.h>
#include <stdint.h>

typedef struct suite_pos { int line, col; } suite_pos; /* 1-based, of the YAML node */

typedef struct suite_engine {
    char *name;       /* key in `engines:` */
    char *lib;        /* "cpu", "cuda" or a resolved absolute path */
    char *sha256;     /* pinned hash (lowercase hex) or NULL */
    char *options;    /* engine open() options string, "" if none */
    suite_pos pos;
} suite_engine;

typedef struct suite_file_ref { /* models, oracles */
    char *name;
    char *path;       /* resolved absolute path; existence checked at load */
    suite_pos pos;
} suite_file_ref;

typedef struct suite_prompt_set {
    char *name;
    int n_prompts;
    int32_t **tokens; /* (n_prompts,) arrays of token ids */
    int *n_tokens;    /* (n_prompts,) */
    char *path;       /* when loaded from a file (one prompt per line, comma/space separated ids), else NULL */
    suite_pos pos;
} suite_prompt_set;

enum suite_case_kind {
    CASE_ORACLE,       /* teacher-forced logits + hidden states vs an oracle dump */
    CASE_DECODE_BENCH, /* timed decode steps */
    CASE_BITEXACT,     /* outputs vs outputs archived by an earlier run */
    CASE_BANDWIDTH,    /* device streaming-read probe (issue 6) */
    CASE_ENGINE_DIFF,  /* two engines on one model: teacher-forced logits + greedy (issue 6) */
    CASE_KIND_COUNT
};

/* Gates: a field is "set" when its *_set flag is nonzero. */
typedef struct suite_gates {
    int max_rel_set;        double max_rel;         /* worst per-position logits max_rel <= */
    int rms_rel_set;        double rms_rel;         /* worst per-position logits RMS rel <= */
    int hidden_max_rel_set; double hidden_max_rel;  /* worst per-layer hidden max_rel <= */
    int argmax_set;         int argmax_all; double argmax_min_frac; /* "all" or a fraction */
    int greedy_set;         int greedy_exact;       /* greedy: exact */
    int bitexact_set;       int bitexact;           /* bitexact: true */
    int max_ms_per_token_set; double max_ms_per_token;
    int max_drift_pct_set;  double max_drift_pct;   /* decode-bench: |ms_per_token_drift_pct| <= */
    /* relative-to-baseline gates (issue 4) */
    int max_rel_growth_set; double max_rel_growth;  /* current/baseline max_rel factor allowed */
    int min_effect_set;     double min_effect;      /* timing: minimum |median ratio - 1| (default 0.03) */
    int alpha_set;          double alpha;           /* timing: Mann-Whitney alpha (default 0.01) */
    /* engine-diff (max_rel and greedy above apply too) */
    int median_rel_set;     double median_rel;      /* median per-position max_rel <= */
    int min_argmax_set;     double min_argmax;      /* fraction of positions with equal argmax >= */
} suite_gates;

typedef struct suite_case {
    char *name;
    enum suite_case_kind kind;
    const suite_engine *engine;
    const suite_file_ref *model;    /* NULL when the kind needs none */
    const suite_file_ref *oracle;   /* oracle cases */
    const suite_prompt_set *prompts;/* bitexact / decode-bench (optional) */
    char **tags; int n_tags;
    double timeout_s;
    int warmup;       /* decode-bench: untimed steps */
    int iterations;   /* decode-bench: timed steps N */
    int threads;      /* passed to the engine as threads=N when > 0 */
    int prompt_len;   /* decode-bench: P */
    int step_tokens;  /* decode-bench: T tokens per step */
    int greedy_tokens;/* oracle: continuation length to check (0 = all in the dump) */
    int capture_hidden; /* oracle: compare per-layer hidden states (default 1) */
    uint64_t bytes;   /* bandwidth: bytes per probe pass */
    const suite_engine *reference; /* engine-diff: the engine the case's engine is compared with */
    int32_t *tokens;  /* engine-diff: (n_tokens,) teacher-forced token ids, each >= 0 */
    int n_tokens;
    int greedy;       /* engine-diff: greedy continuation length N (0 = none) */
    suite_gates gates;
    suite_pos pos;
} suite_case;

typedef struct suite {
    char *path;        /* absolute path of the YAML file */
    char *dir;         /* its directory */
    char *name;
    char *description;
    char *baseline;    /* baseline name to compare against, or NULL */
    suite_engine *engines;       int n_engines;
    suite_file_ref *models;      int n_models;
    suite_file_ref *oracles;     int n_oracles;
    suite_prompt_set *prompts;   int n_prompts;
    suite_case *cases;           int n_cases;
} suite;

const char *suite_case_kind_name(enum suite_case_kind k); /* "oracle", "decode-bench", ... */

/* Returns 0 and *out, or nonzero with err = "file:line:col: message". */
int suite_load(const char *path, suite **out, char *err, size_t err_len);
void suite_free(suite *s);

/* Override an engine's library (run --engine NAME=PATH); error if NAME is unknown. */
int suite_override_engine(suite *s, const char *name, const char *lib, char *err, size_t err_len);

#endif
