/*
 * suite.c - load and validate a suite YAML file (docs/suites.md is the spec,
 * schemas/suite.schema.json its editor-side twin).
 *
 * suite_load() reads the whole file with libyaml's document API, then walks
 * the node tree once: every key, type, number, reference and file is checked
 * and every path is resolved against the suite's directory. The first problem
 * found becomes one line "file:line:col: message" (1-based, from libyaml's
 * marks) in the caller's buffer and nothing is returned.
 *
 * What it deliberately is not: it does not resolve `cpu`/`cuda` to libraries,
 * hash files or open models; that happens when a case runs (engine_load.c,
 * runner). It never prints; allocation goes through util.c's x* helpers
 * like the rest of the CLI (they end the process only when memory runs out).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "cli.h"
#include "suite.h"

/* ---- built-in defaults (docs/suites.md, "Keys") ---- */
#define DEFAULT_TIMEOUT_S 300.0
#define DEFAULT_WARMUP 2
#define DEFAULT_ITERATIONS 20
#define DEFAULT_PROMPT_LEN 1
#define DEFAULT_STEP_TOKENS 1
#define DEFAULT_BYTES (4ull << 30)

static const char *const kind_names[CASE_KIND_COUNT] = {"oracle",    "decode-bench", "bitexact",
                                                        "bandwidth", "engine-diff"};

const char *suite_case_kind_name(enum suite_case_kind k) {
    return (unsigned)k < CASE_KIND_COUNT ? kind_names[k] : "?";
}

/* ---- the keys valid at each place, and which case kinds they apply to ---- */
enum {
    K_ORACLE = 1u << CASE_ORACLE,
    K_BENCH = 1u << CASE_DECODE_BENCH,
    K_BITEXACT = 1u << CASE_BITEXACT,
    K_BW = 1u << CASE_BANDWIDTH,
    K_EDIFF = 1u << CASE_ENGINE_DIFF,
    K_ALL = K_ORACLE | K_BENCH | K_BITEXACT | K_BW | K_EDIFF,
};

typedef struct key_rule {
    const char *key;
    unsigned kinds; /* K_* mask of the case kinds the key applies to (K_ALL outside cases) */
} key_rule;

enum { TK_SUITE, TK_DESCRIPTION, TK_BASELINE, TK_ENGINES, TK_MODELS, TK_ORACLES, TK_PROMPTS, TK_DEFAULTS, TK_CASES, TK_N };
static const key_rule top_keys[TK_N] = {
    {"suite", K_ALL},   {"description", K_ALL}, {"baseline", K_ALL}, {"engines", K_ALL}, {"models", K_ALL},
    {"oracles", K_ALL}, {"prompts", K_ALL},     {"defaults", K_ALL}, {"cases", K_ALL},
};

enum { EK_LIB, EK_SHA256, EK_OPTIONS, EK_N };
static const key_rule engine_keys[EK_N] = {{"lib", K_ALL}, {"sha256", K_ALL}, {"options", K_ALL}};

enum { FK_PATH, FK_N };
static const key_rule file_keys[FK_N] = {{"path", K_ALL}};

enum { PK_TOKENS, PK_FILE, PK_N };
static const key_rule prompt_keys[PK_N] = {{"tokens", K_ALL}, {"file", K_ALL}};

enum { DK_ENGINE, DK_TIMEOUT, DK_WARMUP, DK_ITERATIONS, DK_THREADS, DK_N };
static const key_rule default_keys[DK_N] = {
    {"engine", K_ALL}, {"timeout", K_ALL}, {"warmup", K_ALL}, {"iterations", K_ALL}, {"threads", K_ALL},
};

enum {
    CK_NAME, CK_KIND, CK_ENGINE, CK_MODEL, CK_ORACLE, CK_PROMPTS, CK_TAGS, CK_TIMEOUT, CK_WARMUP, CK_ITERATIONS,
    CK_THREADS, CK_PROMPT_LEN, CK_STEP_TOKENS, CK_GREEDY_TOKENS, CK_HIDDEN, CK_BYTES, CK_REFERENCE, CK_TOKENS,
    CK_GREEDY, CK_GATES, CK_N
};
static const key_rule case_keys[CK_N] = {
    {"name", K_ALL},
    {"kind", K_ALL},
    {"engine", K_ALL},
    {"model", K_ORACLE | K_BENCH | K_BITEXACT | K_EDIFF},
    {"oracle", K_ORACLE | K_BITEXACT},
    {"prompts", K_BENCH | K_BITEXACT},
    {"tags", K_ALL},
    {"timeout", K_ALL},
    {"warmup", K_BENCH},
    {"iterations", K_BENCH | K_BW},
    {"threads", K_ALL},
    {"prompt_len", K_BENCH},
    {"step_tokens", K_BENCH},
    {"greedy_tokens", K_ORACLE},
    {"hidden", K_ORACLE},
    {"bytes", K_BW},
    {"reference", K_EDIFF},
    {"tokens", K_EDIFF},
    {"greedy", K_EDIFF},
    {"gates", K_ALL},
};

enum {
    GK_MAX_REL, GK_RMS_REL, GK_HIDDEN_MAX_REL, GK_ARGMAX, GK_GREEDY, GK_BITEXACT, GK_MAX_MS_PER_TOKEN,
    GK_MAX_REL_GROWTH, GK_MIN_EFFECT, GK_ALPHA, GK_MEDIAN_REL, GK_MIN_ARGMAX, GK_MAX_DRIFT_PCT, GK_N
};
static const key_rule gate_keys[GK_N] = {
    {"max_rel", K_ORACLE | K_EDIFF},         {"rms_rel", K_ORACLE},
    {"hidden_max_rel", K_ORACLE},            {"argmax", K_ORACLE},
    {"greedy", K_ORACLE | K_EDIFF},          {"bitexact", K_BITEXACT},
    {"max_ms_per_token", K_BENCH},           {"max_rel_growth", K_ORACLE | K_EDIFF},
    {"min_effect", K_BENCH | K_BW},          {"alpha", K_BENCH | K_BW},
    {"median_rel", K_EDIFF},                 {"min_argmax", K_EDIFF},
    {"max_drift_pct", K_BENCH},
};

/* ---- load context and error reporting ---- */
typedef struct ctx {
    const char *file; /* the suite path as the user gave it: errors start with it */
    const char *dir;  /* absolute directory of the suite: relative paths resolve here */
    yaml_document_t *doc;
    suite *s;
    char *err;
    size_t err_len;
} ctx;

static suite_pos pos_of(const yaml_node_t *n) {
    suite_pos p = {(int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
    return p;
}

/* An error is one line: control bytes of the values it quotes (a YAML scalar may hold newlines, a
 * key any byte) are written as \xNN. dst (dn,) gets src, cut at a whole escape. */
static void put_err_line(char *dst, size_t dn, const char *src) {
    size_t k = 0;
    if (!dn) return;
    for (; *src; src++) {
        unsigned char ch = (unsigned char)*src;
        int ctl = ch < 0x20 || ch == 0x7f;
        if (k + (ctl ? 4 : 1) >= dn) break;
        if (ctl) k += (size_t)snprintf(dst + k, 5, "\\x%02x", ch);
        else dst[k++] = (char)ch;
    }
    dst[k] = '\0';
}

/* Write "file:line:col: message" for node n and return -1. */
static int fail(ctx *c, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ctx *c, const yaml_node_t *n, const char *fmt, ...) {
    char msg[1024], line[5200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    suite_pos p = n ? pos_of(n) : (suite_pos){1, 1};
    snprintf(line, sizeof line, "%s:%d:%d: %s", c->file, p.line, p.col, msg);
    put_err_line(c->err, c->err_len, line);
    return -1;
}

static yaml_node_t *node(ctx *c, int index) { return yaml_document_get_node(c->doc, index); }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int is_plain(const yaml_node_t *n) {
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int is_null(const yaml_node_t *n) {
    if (!is_plain(n)) return 0;
    const char *v = scalar(n);
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* YAML 1.2 core-schema number syntax: [-+]? ( . digits | digits [. digits*] ) ([eE] [-+]? digits)? */
static int number_syntax(const char *s, int *is_integer) {
    const char *p = s;
    int digits = 0, integer = 1;
    if (*p == '-' || *p == '+') p++;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        integer = 0;
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        integer = 0;
        p++;
        if (*p == '-' || *p == '+') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return 0;
    *is_integer = integer;
    return 1;
}

static int is_bool_text(const char *v) {
    return !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "True") || !strcmp(v, "False") ||
           !strcmp(v, "TRUE") || !strcmp(v, "FALSE");
}

/* "a map", "a list", "a number", ... for "expected X, got Y" messages. */
static const char *type_name(const yaml_node_t *n) {
    int integer;
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a map";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE:
        if (is_null(n)) return "null";
        if (!is_plain(n)) return "a string";
        if (number_syntax(scalar(n), &integer)) return "a number";
        if (is_bool_text(scalar(n))) return "a boolean";
        return "a string";
    default: return "nothing";
    }
}

/* Levenshtein distance of two short strings (keys, names). */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return (size_t)-1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The closest of cands (n,) to s when close enough to be a likely typo, else NULL. */
static const char *closest(const char *s, const char *const *cands, int n) {
    size_t limit = strlen(s) / 3;
    if (limit < 1) limit = 1;
    if (limit > 3) limit = 3;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (int i = 0; i < n; i++) {
        size_t d = edit_distance(s, cands[i]);
        if (d < best_d) best = cands[i], best_d = d;
    }
    return best;
}

/* "a, b, c" of names (n,) into buf. */
static void join_names(char *buf, size_t len, const char *const *names, int n) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o < len; i++) {
        int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
}

/* Names matching [A-Za-z0-9._-]+ (suite, engines, models, oracles, prompt sets, cases, tags). */
static int valid_name(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* ---- typed scalar getters: each checks the node and reports with `key` ---- */
static int get_string(ctx *c, const yaml_node_t *n, const char *key, const char **out) {
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return fail(c, n, "expected a string for '%s', got %s", key, type_name(n));
    *out = scalar(n);
    return 0;
}

static int get_name(ctx *c, const yaml_node_t *n, const char *key, const char **out) {
    if (get_string(c, n, key, out)) return -1;
    if (!valid_name(*out))
        return fail(c, n, "invalid %s '%s' (use letters, digits, '.', '_' and '-')", key, *out);
    return 0;
}

static int get_double(ctx *c, const yaml_node_t *n, const char *key, double *out) {
    int integer;
    if (n->type != YAML_SCALAR_NODE || !is_plain(n) || is_null(n))
        return fail(c, n, "expected a number for '%s', got %s", key, type_name(n));
    if (!number_syntax(scalar(n), &integer) || parse_double(scalar(n), out))
        return fail(c, n, "'%s' is not a number for '%s'", scalar(n), key);
    return 0;
}

/* An integer in [min, max]. */
static int get_int(ctx *c, const yaml_node_t *n, const char *key, long long min, long long max, long long *out) {
    int integer;
    if (n->type != YAML_SCALAR_NODE || !is_plain(n) || is_null(n))
        return fail(c, n, "expected an integer for '%s', got %s", key, type_name(n));
    if (!number_syntax(scalar(n), &integer))
        return fail(c, n, "'%s' is not a number for '%s'", scalar(n), key);
    if (!integer) return fail(c, n, "'%s' is not an integer for '%s'", scalar(n), key);
    int overflow = parse_int(scalar(n), out) != 0; /* beyond 64 bits */
    if (overflow ? scalar(n)[0] == '-' : *out < min)
        return fail(c, n, "'%s' must be >= %lld, got %s", key, min, scalar(n));
    if (overflow || *out > max) return fail(c, n, "'%s' must be at most %lld, got %s", key, max, scalar(n));
    return 0;
}

static int get_int32(ctx *c, const yaml_node_t *n, const char *key, int min, int *out) {
    long long v;
    if (get_int(c, n, key, min, INT_MAX, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int get_bool(ctx *c, const yaml_node_t *n, const char *key, int *out) {
    if (n->type != YAML_SCALAR_NODE || !is_plain(n) || !is_bool_text(scalar(n))) {
        if (n->type == YAML_SCALAR_NODE && !is_null(n))
            return fail(c, n, "expected true or false for '%s', got '%s'", key, scalar(n));
        return fail(c, n, "expected true or false for '%s', got %s", key, type_name(n));
    }
    *out = scalar(n)[0] == 't' || scalar(n)[0] == 'T';
    return 0;
}

static int expect_type(ctx *c, const yaml_node_t *n, yaml_node_type_t t, const char *what) {
    if (n->type == t) return 0;
    return fail(c, n, "expected %s for '%s', got %s", t == YAML_MAPPING_NODE ? "a map" : "a list", what,
                type_name(n));
}

/*
 * Check the keys of map: each a plain string, valid (rules (n_rules,)), not
 * repeated. keys/vals (n_rules,) receive the key and value node of each rule
 * or NULL. `where` finishes "unknown key 'x' <where>".
 */
static int map_keys(ctx *c, const yaml_node_t *map, const key_rule *rules, int n_rules, const char *where,
                    yaml_node_t **keys, yaml_node_t **vals) {
    for (int r = 0; r < n_rules; r++) keys[r] = vals[r] = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key);
        if (k->type != YAML_SCALAR_NODE) return fail(c, k, "expected a key name %s, got %s", where, type_name(k));
        int r = 0;
        while (r < n_rules && strcmp(rules[r].key, scalar(k)) != 0) r++;
        if (r == n_rules) {
            const char *names[32];
            for (int i = 0; i < n_rules && i < 32; i++) names[i] = rules[i].key;
            const char *near = closest(scalar(k), names, n_rules);
            if (near) return fail(c, k, "unknown key '%s' %s (did you mean '%s'?)", scalar(k), where, near);
            char list[512];
            join_names(list, sizeof list, names, n_rules);
            return fail(c, k, "unknown key '%s' %s (valid keys: %s)", scalar(k), where, list);
        }
        if (keys[r]) {
            suite_pos first = pos_of(keys[r]);
            return fail(c, k, "duplicate key '%s' %s (first at %d:%d)", scalar(k), where, first.line, first.col);
        }
        keys[r] = k;
        vals[r] = node(c, p->value);
    }
    return 0;
}

/* A map whose keys are names (engines, models, ...): names valid and unique. */
static int name_map(ctx *c, const yaml_node_t *map, const char *section, const char *what) {
    if (expect_type(c, map, YAML_MAPPING_NODE, section)) return -1;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key);
        const char *name;
        if (get_name(c, k, what, &name)) return -1;
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k0 = node(c, q->key);
            if (!strcmp(scalar(k0), name)) {
                suite_pos first = pos_of(k0);
                return fail(c, k, "duplicate %s '%s' in '%s' (first defined at %d:%d)", what, name, section,
                            first.line, first.col);
            }
        }
    }
    return 0;
}

/* ---- paths ---- */

/*
 * Absolute path of p (relative to dir unless absolute): the directory part
 * made canonical with realpath(), the last component kept as written so a
 * symlink such as engines/libkestrel-cpu.so stays what the user named. When
 * the directory does not exist the joined path is returned as is (the
 * existence check then reports it, as the kernel would see it).
 */
static char *resolve_path(const char *dir, const char *p) {
    char *joined = p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", dir, p);
    char real[PATH_MAX];
    char *out = NULL;
    char *slash = strrchr(joined, '/'); /* joined is absolute: there is one */
    const char *base = slash + 1;
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
        if (realpath(joined, real)) out = xstrdup(real);
    } else if (slash == joined) {
        out = xstrdup(joined);
    } else {
        *slash = '\0';
        if (realpath(joined, real)) out = xasprintf("%s/%s", strcmp(real, "/") ? real : "", base);
        *slash = '/';
    }
    if (!out) return joined;
    free(joined);
    return out;
}

/* Lexically normalised absolute path ("//", "." and ".." folded), for messages. */
static char *normalize_path(const char *abs) {
    char *out = xmalloc(strlen(abs) + 2);
    size_t o = 0;
    for (const char *p = abs; *p;) {
        while (*p == '/') p++;
        const char *e = p;
        while (*e && *e != '/') e++;
        size_t len = (size_t)(e - p);
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else if (len && !(len == 1 && p[0] == '.')) {
            out[o++] = '/';
            memcpy(out + o, p, len);
            o += len;
        }
        p = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = '\0';
    return out;
}

/* A missing file's path for messages: folded when that names no file either, else as the kernel saw it. */
static char *missing_path(const char *abs) {
    struct stat st;
    char *norm = normalize_path(abs);
    if (stat(norm, &st) != 0) return norm;
    free(norm);
    return xstrdup(abs);
}

/* The file at abs must exist, be a regular file (after symlinks) and be readable. */
static int check_file(ctx *c, const yaml_node_t *n, const char *what, const char *name, const char *abs) {
    struct stat st;
    if (stat(abs, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            char *shown = missing_path(abs);
            fail(c, n, "%s '%s': file not found: %s", what, name, shown);
            free(shown);
            return -1;
        }
        return fail(c, n, "%s '%s': %s: %s", what, name, abs, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) return fail(c, n, "%s '%s': is a directory, not a file: %s", what, name, abs);
    if (access(abs, R_OK) != 0) return fail(c, n, "%s '%s': cannot read %s: %s", what, name, abs, strerror(errno));
    return 0;
}

/* A library spec is a path when it has a '/' or ends in ".so" (the rule engine_resolve() uses). */
static int lib_is_path(const char *lib) {
    size_t n = strlen(lib);
    return strchr(lib, '/') || (n > 3 && !strcmp(lib + n - 3, ".so"));
}

/* Resolve an engine lib: names kept (resolved at run time), paths made absolute and checked. */
static char *engine_lib(ctx *c, const yaml_node_t *n, const char *engine_name, const char *lib) {
    if (!lib_is_path(lib)) {
        if (!valid_name(lib)) {
            fail(c, n, "engine '%s': lib '%s' is neither an engine name (cpu, cuda) nor a path to a .so",
                 engine_name, lib);
            return NULL;
        }
        return xstrdup(lib);
    }
    char *abs = resolve_path(c->dir, lib);
    if (check_file(c, n, "engine", engine_name, abs)) {
        free(abs);
        return NULL;
    }
    return abs;
}

/* ---- sections ---- */

static int parse_engines(ctx *c, const yaml_node_t *map) {
    if (name_map(c, map, "engines", "engine name")) return -1;
    suite *s = c->s;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    s->engines = xcalloc(n, sizeof *s->engines);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
        suite_engine *e = &s->engines[s->n_engines++];
        e->name = xstrdup(scalar(k));
        e->pos = pos_of(k);
        const yaml_node_t *lib_node = v;
        const char *lib;
        if (v->type == YAML_MAPPING_NODE) {
            yaml_node_t *keys[EK_N], *vals[EK_N];
            char where[160];
            snprintf(where, sizeof where, "in engine '%s'", e->name);
            if (map_keys(c, v, engine_keys, EK_N, where, keys, vals)) return -1;
            if (!vals[EK_LIB]) return fail(c, v, "engine '%s': missing required key 'lib'", e->name);
            lib_node = vals[EK_LIB];
            if (vals[EK_SHA256]) {
                const char *h;
                if (get_string(c, vals[EK_SHA256], "sha256", &h)) return -1;
                size_t hl = strlen(h);
                int ok = hl == 64;
                for (size_t i = 0; ok && i < hl; i++)
                    ok = (h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f') || (h[i] >= 'A' && h[i] <= 'F');
                if (!ok)
                    return fail(c, vals[EK_SHA256], "engine '%s': sha256 must be 64 hex digits, got '%s' (%zu chars)",
                                e->name, h, hl);
                e->sha256 = xstrdup(h);
                for (char *q = e->sha256; *q; q++)
                    if (*q >= 'A' && *q <= 'F') *q = (char)(*q - 'A' + 'a');
            }
            if (vals[EK_OPTIONS]) {
                const char *o;
                if (get_string(c, vals[EK_OPTIONS], "options", &o)) return -1;
                /* key=value items for the engine's open(): no engine's grammar has a control byte, and one
                 * (a quoted scalar's newline) would reach the engine's error unseen */
                for (size_t i = 0; o[i]; i++)
                    if ((unsigned char)o[i] < 0x20 || o[i] == 0x7f)
                        return fail(c, vals[EK_OPTIONS],
                                    "engine '%s': 'options' holds a control byte (\\x%02x at offset %zu)", e->name,
                                    (unsigned char)o[i], i);
                e->options = xstrdup(o);
            }
        } else if (v->type != YAML_SCALAR_NODE || is_null(v)) {
            return fail(c, v, "expected a library (cpu, cuda or a path) or a map for engine '%s', got %s", e->name,
                        type_name(v));
        }
        if (!e->options) e->options = xstrdup("");
        if (get_string(c, lib_node, "lib", &lib)) return -1;
        if (!(e->lib = engine_lib(c, lib_node, e->name, lib))) return -1;
    }
    return 0;
}

/* models: / oracles: name -> path or {path}. */
static int parse_files(ctx *c, const yaml_node_t *map, const char *section, const char *what, suite_file_ref **out,
                       int *n_out) {
    char name_what[64];
    snprintf(name_what, sizeof name_what, "%s name", what);
    if (name_map(c, map, section, name_what)) return -1;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    *out = xcalloc(n, sizeof **out);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
        suite_file_ref *f = &(*out)[(*n_out)++];
        f->name = xstrdup(scalar(k));
        f->pos = pos_of(k);
        yaml_node_t *path_node = v;
        if (v->type == YAML_MAPPING_NODE) {
            yaml_node_t *keys[FK_N], *vals[FK_N];
            char where[160];
            snprintf(where, sizeof where, "in %s '%s'", what, f->name);
            if (map_keys(c, v, file_keys, FK_N, where, keys, vals)) return -1;
            if (!vals[FK_PATH]) return fail(c, v, "%s '%s': missing required key 'path'", what, f->name);
            path_node = vals[FK_PATH];
        } else if (v->type != YAML_SCALAR_NODE || is_null(v)) {
            return fail(c, v, "expected a path or a map for %s '%s', got %s", what, f->name, type_name(v));
        }
        const char *path;
        if (get_string(c, path_node, "path", &path)) return -1;
        f->path = resolve_path(c->dir, path);
        if (check_file(c, path_node, what, f->name, f->path)) return -1;
    }
    return 0;
}

/* Append one token id to a growing prompt. */
static void push_token(int32_t **toks, int *n, int *cap, int32_t t) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *toks = xrealloc(*toks, (size_t)*cap * sizeof **toks);
    }
    (*toks)[(*n)++] = t;
}

static void push_prompt(suite_prompt_set *ps, int *cap, int32_t *toks, int n) {
    if (ps->n_prompts == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        ps->tokens = xrealloc(ps->tokens, (size_t)*cap * sizeof *ps->tokens);
        ps->n_tokens = xrealloc(ps->n_tokens, (size_t)*cap * sizeof *ps->n_tokens);
    }
    ps->tokens[ps->n_prompts] = toks;
    ps->n_tokens[ps->n_prompts] = n;
    ps->n_prompts++;
}

/* tokens: [[1, 2, 3], [7]] */
static int prompts_inline(ctx *c, suite_prompt_set *ps, const yaml_node_t *list) {
    if (expect_type(c, list, YAML_SEQUENCE_NODE, "tokens")) return -1;
    if (list->data.sequence.items.top == list->data.sequence.items.start)
        return fail(c, list, "prompt set '%s': 'tokens' is empty (give at least one prompt)", ps->name);
    int cap = 0;
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
        yaml_node_t *pr = node(c, *it);
        int i = (int)(it - list->data.sequence.items.start) + 1;
        if (pr->type != YAML_SEQUENCE_NODE)
            return fail(c, pr, "prompt set '%s': prompt %d must be a list of token ids, got %s", ps->name, i,
                        type_name(pr));
        if (pr->data.sequence.items.top == pr->data.sequence.items.start)
            return fail(c, pr, "prompt set '%s': prompt %d is empty", ps->name, i);
        int32_t *toks = NULL;
        int n = 0, tcap = 0;
        for (yaml_node_item_t *t = pr->data.sequence.items.start; t < pr->data.sequence.items.top; t++) {
            int v;
            if (get_int32(c, node(c, *t), "token id", 0, &v)) {
                free(toks);
                return -1;
            }
            push_token(&toks, &n, &tcap, v);
        }
        push_prompt(ps, &cap, toks, n);
    }
    return 0;
}

/* file: one prompt per line, ids separated by commas and/or blanks; blank and '#' lines skipped.
 * Errors in the file name the file and its line:col. */
static int prompts_file(ctx *c, suite_prompt_set *ps, const yaml_node_t *path_node) {
    int ret = -1;
    char *line = NULL;
    size_t line_cap = 0;
    int32_t *toks = NULL;
    int cap = 0;
    FILE *f = fopen(ps->path, "r");
    if (!f) {
        fail(c, path_node, "prompt set '%s': cannot open %s: %s", ps->name, ps->path, strerror(errno));
        goto cleanup;
    }
    for (int lineno = 1; getline(&line, &line_cap, f) >= 0; lineno++) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || !*p) continue;
        int n = 0, tcap = 0;
        while (*p && *p != '\n' && *p != '\r') {
            if (*p == ' ' || *p == '\t' || *p == ',') {
                p++;
                continue;
            }
            char *start = p;
            while (*p && *p != ' ' && *p != '\t' && *p != ',' && *p != '\n' && *p != '\r') p++;
            char save = *p;
            *p = '\0';
            long long v;
            int bad = parse_int(start, &v) || v < 0 || v > INT32_MAX || start[0] == '+';
            if (bad) {
                char msg[5200];
                snprintf(msg, sizeof msg, "%s:%d:%d: '%s' is not a token id (prompt set '%s')", ps->path, lineno,
                         (int)(start - line) + 1, start, ps->name);
                put_err_line(c->err, c->err_len, msg);
                goto cleanup;
            }
            *p = save;
            push_token(&toks, &n, &tcap, (int32_t)v);
        }
        if (n == 0) {
            char msg[5200];
            snprintf(msg, sizeof msg, "%s:%d:1: empty prompt (prompt set '%s')", ps->path, lineno, ps->name);
            put_err_line(c->err, c->err_len, msg);
            goto cleanup;
        }
        push_prompt(ps, &cap, toks, n);
        toks = NULL;
    }
    if (ferror(f)) {
        fail(c, path_node, "prompt set '%s': read error on %s", ps->name, ps->path);
        goto cleanup;
    }
    if (ps->n_prompts == 0) {
        fail(c, path_node, "prompt set '%s': no prompts in %s", ps->name, ps->path);
        goto cleanup;
    }
    ret = 0;
cleanup:
    free(toks);
    free(line);
    if (f) fclose(f);
    return ret;
}

static int parse_prompts(ctx *c, const yaml_node_t *map) {
    if (name_map(c, map, "prompts", "prompt set name")) return -1;
    suite *s = c->s;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    s->prompts = xcalloc(n, sizeof *s->prompts);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
        suite_prompt_set *ps = &s->prompts[s->n_prompts++];
        ps->name = xstrdup(scalar(k));
        ps->pos = pos_of(k);
        if (v->type != YAML_MAPPING_NODE)
            return fail(c, v, "expected a map ({tokens: ...} or {file: ...}) for prompt set '%s', got %s", ps->name,
                        type_name(v));
        yaml_node_t *keys[PK_N], *vals[PK_N];
        char where[160];
        snprintf(where, sizeof where, "in prompt set '%s'", ps->name);
        if (map_keys(c, v, prompt_keys, PK_N, where, keys, vals)) return -1;
        if (vals[PK_TOKENS] && vals[PK_FILE])
            return fail(c, keys[PK_FILE], "prompt set '%s': give either 'tokens' or 'file', not both", ps->name);
        if (vals[PK_TOKENS]) {
            if (prompts_inline(c, ps, vals[PK_TOKENS])) return -1;
        } else if (vals[PK_FILE]) {
            const char *path;
            if (get_string(c, vals[PK_FILE], "file", &path)) return -1;
            ps->path = resolve_path(c->dir, path);
            if (check_file(c, vals[PK_FILE], "prompt set", ps->name, ps->path)) return -1;
            if (prompts_file(c, ps, vals[PK_FILE])) return -1;
        } else {
            return fail(c, v, "prompt set '%s': missing required key 'tokens' or 'file'", ps->name);
        }
    }
    return 0;
}

/* ---- references ---- */

/* Find `name` among n items of size `stride` whose first member is the char *name. */
static const void *find_named(const void *items, int n, size_t stride, const char *name) {
    for (int i = 0; i < n; i++) {
        const void *it = (const char *)items + (size_t)i * stride;
        if (!strcmp(*(char *const *)it, name)) return it;
    }
    return NULL;
}

/* Resolve reference node `ref` into `section` (engines, models, ...). `who` starts the message. */
static const void *lookup(ctx *c, const yaml_node_t *ref, const char *who, const char *what, const char *section,
                          const void *items, int n, size_t stride) {
    const char *name;
    if (get_string(c, ref, what, &name)) return NULL;
    const void *hit = find_named(items, n, stride, name);
    if (hit) return hit;
    if (n == 0) {
        fail(c, ref, "%s: unknown %s '%s' (no %s defined: add it under '%s')", who, what, name, section, section);
        return NULL;
    }
    const char *names[64] = {0};
    int m = n < 64 ? n : 64;
    for (int i = 0; i < m; i++) names[i] = *(char *const *)((const char *)items + (size_t)i * stride);
    char list[768];
    join_names(list, sizeof list, names, m);
    const char *near = closest(name, names, m);
    if (near) fail(c, ref, "%s: unknown %s '%s' (did you mean '%s'? known: %s)", who, what, name, near, list);
    else fail(c, ref, "%s: unknown %s '%s' (known: %s)", who, what, name, list);
    return NULL;
}

static const suite_engine *lookup_engine(ctx *c, const yaml_node_t *ref, const char *who) {
    return lookup(c, ref, who, "engine", "engines", c->s->engines, c->s->n_engines, sizeof(suite_engine));
}

/* ---- defaults and cases ---- */

typedef struct defaults {
    const suite_engine *engine;
    double timeout_s;
    int warmup, iterations, threads;
} defaults;

static int parse_defaults(ctx *c, const yaml_node_t *map, defaults *d) {
    yaml_node_t *keys[DK_N], *vals[DK_N];
    if (expect_type(c, map, YAML_MAPPING_NODE, "defaults")) return -1;
    if (map_keys(c, map, default_keys, DK_N, "in defaults", keys, vals)) return -1;
    if (vals[DK_ENGINE] && !(d->engine = lookup_engine(c, vals[DK_ENGINE], "defaults"))) return -1;
    if (vals[DK_TIMEOUT]) {
        if (get_double(c, vals[DK_TIMEOUT], "timeout", &d->timeout_s)) return -1;
        if (!(d->timeout_s > 0))
            return fail(c, vals[DK_TIMEOUT], "'timeout' must be > 0 seconds, got %s", scalar(vals[DK_TIMEOUT]));
    }
    if (vals[DK_WARMUP] && get_int32(c, vals[DK_WARMUP], "warmup", 0, &d->warmup)) return -1;
    if (vals[DK_ITERATIONS] && get_int32(c, vals[DK_ITERATIONS], "iterations", 1, &d->iterations)) return -1;
    if (vals[DK_THREADS] && get_int32(c, vals[DK_THREADS], "threads", 0, &d->threads)) return -1;
    return 0;
}

static int parse_kind(ctx *c, const yaml_node_t *n, const char *who, enum suite_case_kind *out) {
    const char *k;
    if (get_string(c, n, "kind", &k)) return -1;
    for (int i = 0; i < CASE_KIND_COUNT; i++)
        if (!strcmp(k, kind_names[i])) {
            *out = (enum suite_case_kind)i;
            return 0;
        }
    const char *near = closest(k, kind_names, CASE_KIND_COUNT);
    if (near) return fail(c, n, "%s: unknown kind '%s' (did you mean '%s'?)", who, k, near);
    return fail(c, n, "%s: unknown kind '%s' (kinds: oracle, decode-bench, bitexact, bandwidth, engine-diff)", who, k);
}

/* "decode-bench" or "oracle or bitexact" for a K_* mask. */
static void kinds_text(char *buf, size_t len, unsigned mask) {
    const char *names[CASE_KIND_COUNT];
    int n = 0;
    for (int i = 0; i < CASE_KIND_COUNT; i++)
        if (mask & (1u << i)) names[n++] = kind_names[i];
    join_names(buf, len, names, n);
}

/* A fraction in (0, 1] (one_inclusive) or (0, 1). */
static int get_fraction(ctx *c, const yaml_node_t *n, const char *key, int one_inclusive, double *out) {
    if (get_double(c, n, key, out)) return -1;
    if (!(*out > 0) || (one_inclusive ? *out > 1 : *out >= 1))
        return fail(c, n, "'%s' must be a fraction in (0, 1%c, got %s", key, one_inclusive ? ']' : ')', scalar(n));
    return 0;
}

static int get_nonneg(ctx *c, const yaml_node_t *n, const char *key, double *out) {
    if (get_double(c, n, key, out)) return -1;
    if (*out < 0) return fail(c, n, "'%s' must be >= 0, got %s", key, scalar(n));
    return 0;
}

static int parse_gates(ctx *c, const yaml_node_t *map, suite_case *cs, const char *who) {
    yaml_node_t *keys[GK_N], *vals[GK_N];
    char where[160];
    snprintf(where, sizeof where, "in gates of case '%s'", cs->name);
    if (expect_type(c, map, YAML_MAPPING_NODE, "gates")) return -1;
    if (map_keys(c, map, gate_keys, GK_N, where, keys, vals)) return -1;
    for (int g = 0; g < GK_N; g++)
        if (vals[g] && !(gate_keys[g].kinds & (1u << cs->kind))) {
            char kinds[128];
            kinds_text(kinds, sizeof kinds, gate_keys[g].kinds);
            return fail(c, keys[g], "%s: gate '%s' does not apply to kind '%s' (only %s)", who, gate_keys[g].key,
                        kind_names[cs->kind], kinds);
        }
    suite_gates *gt = &cs->gates;
    if (vals[GK_MAX_REL] && get_nonneg(c, vals[GK_MAX_REL], "max_rel", &gt->max_rel)) return -1;
    gt->max_rel_set = vals[GK_MAX_REL] != NULL;
    if (vals[GK_RMS_REL] && get_nonneg(c, vals[GK_RMS_REL], "rms_rel", &gt->rms_rel)) return -1;
    gt->rms_rel_set = vals[GK_RMS_REL] != NULL;
    if (vals[GK_HIDDEN_MAX_REL] && get_nonneg(c, vals[GK_HIDDEN_MAX_REL], "hidden_max_rel", &gt->hidden_max_rel))
        return -1;
    gt->hidden_max_rel_set = vals[GK_HIDDEN_MAX_REL] != NULL;
    if (vals[GK_ARGMAX]) {
        yaml_node_t *v = vals[GK_ARGMAX];
        if (v->type == YAML_SCALAR_NODE && !strcmp(scalar(v), "all")) {
            gt->argmax_all = 1;
            gt->argmax_min_frac = 1.0;
        } else if (v->type == YAML_SCALAR_NODE && is_plain(v) && !is_null(v)) {
            int integer;
            if (!number_syntax(scalar(v), &integer))
                return fail(c, v, "'argmax' must be 'all' or a fraction in (0, 1], got '%s'", scalar(v));
            if (get_fraction(c, v, "argmax", 1, &gt->argmax_min_frac)) return -1;
        } else {
            return fail(c, v, "expected 'all' or a fraction for 'argmax', got %s", type_name(v));
        }
        gt->argmax_set = 1;
    }
    if (vals[GK_GREEDY]) {
        const char *g;
        if (get_string(c, vals[GK_GREEDY], "greedy", &g)) return -1;
        if (strcmp(g, "exact")) return fail(c, vals[GK_GREEDY], "'greedy' must be 'exact', got '%s'", g);
        gt->greedy_set = gt->greedy_exact = 1;
        if (cs->kind == CASE_ENGINE_DIFF && cs->greedy == 0) /* the case's keys are parsed before its gates */
            return fail(c, keys[GK_GREEDY], "%s: gate 'greedy: exact' needs 'greedy: N' (N >= 1 tokens to compare)",
                        who);
    }
    if (vals[GK_BITEXACT]) {
        if (get_bool(c, vals[GK_BITEXACT], "bitexact", &gt->bitexact)) return -1;
        if (!gt->bitexact)
            return fail(c, vals[GK_BITEXACT], "'bitexact' must be true (leave the gate out to not check it)");
        gt->bitexact_set = 1;
    }
    if (vals[GK_MAX_MS_PER_TOKEN]) {
        if (get_double(c, vals[GK_MAX_MS_PER_TOKEN], "max_ms_per_token", &gt->max_ms_per_token)) return -1;
        if (!(gt->max_ms_per_token > 0))
            return fail(c, vals[GK_MAX_MS_PER_TOKEN], "'max_ms_per_token' must be > 0, got %s",
                        scalar(vals[GK_MAX_MS_PER_TOKEN]));
        gt->max_ms_per_token_set = 1;
    }
    if (vals[GK_MAX_DRIFT_PCT]) {
        if (get_double(c, vals[GK_MAX_DRIFT_PCT], "max_drift_pct", &gt->max_drift_pct)) return -1;
        if (!(gt->max_drift_pct >= 0))
            return fail(c, vals[GK_MAX_DRIFT_PCT], "'max_drift_pct' must be a percentage >= 0, got %s",
                        scalar(vals[GK_MAX_DRIFT_PCT]));
        gt->max_drift_pct_set = 1;
    }
    if (vals[GK_MAX_REL_GROWTH]) {
        if (get_double(c, vals[GK_MAX_REL_GROWTH], "max_rel_growth", &gt->max_rel_growth)) return -1;
        if (!(gt->max_rel_growth >= 1))
            return fail(c, vals[GK_MAX_REL_GROWTH], "'max_rel_growth' must be a factor >= 1, got %s",
                        scalar(vals[GK_MAX_REL_GROWTH]));
        gt->max_rel_growth_set = 1;
    }
    if (vals[GK_MIN_EFFECT] && get_fraction(c, vals[GK_MIN_EFFECT], "min_effect", 0, &gt->min_effect)) return -1;
    gt->min_effect_set = vals[GK_MIN_EFFECT] != NULL;
    if (vals[GK_ALPHA] && get_fraction(c, vals[GK_ALPHA], "alpha", 0, &gt->alpha)) return -1;
    gt->alpha_set = vals[GK_ALPHA] != NULL;
    if (vals[GK_MEDIAN_REL] && get_nonneg(c, vals[GK_MEDIAN_REL], "median_rel", &gt->median_rel)) return -1;
    gt->median_rel_set = vals[GK_MEDIAN_REL] != NULL;
    if (vals[GK_MIN_ARGMAX] && get_fraction(c, vals[GK_MIN_ARGMAX], "min_argmax", 1, &gt->min_argmax)) return -1;
    gt->min_argmax_set = vals[GK_MIN_ARGMAX] != NULL;
    return 0;
}

/* engine-diff `tokens: [ids...]`: a non-empty list of integers >= 0 (checked against the vocab at run time). */
static int parse_case_tokens(ctx *c, const yaml_node_t *list, suite_case *cs, const char *who) {
    if (expect_type(c, list, YAML_SEQUENCE_NODE, "tokens")) return -1;
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    if (n == 0) return fail(c, list, "%s: 'tokens' is empty (give at least one token id)", who);
    cs->tokens = xcalloc(n, sizeof *cs->tokens);
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
        int v;
        if (get_int32(c, node(c, *it), "token id", 0, &v)) return -1;
        cs->tokens[cs->n_tokens++] = v;
    }
    return 0;
}

static int parse_tags(ctx *c, const yaml_node_t *list, suite_case *cs) {
    if (expect_type(c, list, YAML_SEQUENCE_NODE, "tags")) return -1;
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    cs->tags = xcalloc(n, sizeof *cs->tags);
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
        const char *t;
        if (get_name(c, node(c, *it), "tag", &t)) return -1;
        cs->tags[cs->n_tags++] = xstrdup(t);
    }
    return 0;
}

static int parse_case(ctx *c, const yaml_node_t *m, int index, const defaults *d) {
    suite *s = c->s;
    suite_case *cs = &s->cases[s->n_cases];
    yaml_node_t *keys[CK_N], *vals[CK_N];
    char who[160], where[192];
    if (m->type != YAML_MAPPING_NODE) return fail(c, m, "case %d: expected a map, got %s", index, type_name(m));
    cs->pos = pos_of(m);
    /* name first, so every later message can say which case */
    snprintf(where, sizeof where, "in case %d", index);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), "name") && v->type == YAML_SCALAR_NODE && !is_null(v)) {
            snprintf(where, sizeof where, "in case '%s'", scalar(v));
            break;
        }
    }
    if (map_keys(c, m, case_keys, CK_N, where, keys, vals)) return -1;
    if (!vals[CK_NAME]) return fail(c, m, "case %d: missing required key 'name'", index);
    const char *name;
    if (get_name(c, vals[CK_NAME], "case name", &name)) return -1;
    for (int i = 0; i < s->n_cases; i++)
        if (!strcmp(s->cases[i].name, name))
            return fail(c, vals[CK_NAME], "duplicate case name '%s' (first defined at %d:%d)", name,
                        s->cases[i].pos.line, s->cases[i].pos.col);
    cs->name = xstrdup(name);
    s->n_cases++; /* owned from here on: suite_free releases it */
    snprintf(who, sizeof who, "case '%s'", name);
    if (!vals[CK_KIND]) return fail(c, m, "%s: missing required key 'kind'", who);
    if (parse_kind(c, vals[CK_KIND], who, &cs->kind)) return -1;
    for (int k = 0; k < CK_N; k++)
        if (vals[k] && !(case_keys[k].kinds & (1u << cs->kind))) {
            char kinds[128];
            kinds_text(kinds, sizeof kinds, case_keys[k].kinds);
            return fail(c, keys[k], "%s: '%s' does not apply to kind '%s' (only %s)", who, case_keys[k].key,
                        kind_names[cs->kind], kinds);
        }

    /* references */
    cs->engine = d->engine;
    if (vals[CK_ENGINE] && !(cs->engine = lookup_engine(c, vals[CK_ENGINE], who))) return -1;
    if (!cs->engine) return fail(c, m, "%s: no engine (set 'engine' in the case or in 'defaults')", who);
    if (vals[CK_MODEL] && !(cs->model = lookup(c, vals[CK_MODEL], who, "model", "models", s->models, s->n_models,
                                               sizeof(suite_file_ref))))
        return -1;
    if (vals[CK_ORACLE] && !(cs->oracle = lookup(c, vals[CK_ORACLE], who, "oracle", "oracles", s->oracles,
                                                 s->n_oracles, sizeof(suite_file_ref))))
        return -1;
    if (vals[CK_PROMPTS] && !(cs->prompts = lookup(c, vals[CK_PROMPTS], who, "prompt set", "prompts", s->prompts,
                                                   s->n_prompts, sizeof(suite_prompt_set))))
        return -1;
    if (vals[CK_REFERENCE] && !(cs->reference = lookup(c, vals[CK_REFERENCE], who, "reference engine", "engines",
                                                       s->engines, s->n_engines, sizeof(suite_engine))))
        return -1;

    /* what each kind needs */
    switch (cs->kind) {
    case CASE_ORACLE:
        if (!cs->model) return fail(c, m, "%s: kind 'oracle' needs 'model'", who);
        if (!cs->oracle) return fail(c, m, "%s: kind 'oracle' needs 'oracle'", who);
        break;
    case CASE_DECODE_BENCH:
        if (!cs->model) return fail(c, m, "%s: kind 'decode-bench' needs 'model'", who);
        break;
    case CASE_BITEXACT:
        if (!cs->model) return fail(c, m, "%s: kind 'bitexact' needs 'model'", who);
        if (!cs->prompts && !cs->oracle)
            return fail(c, m, "%s: kind 'bitexact' needs 'prompts' (or 'oracle', whose prompts it uses)", who);
        break;
    case CASE_ENGINE_DIFF:
        if (!cs->reference)
            return fail(c, m, "%s: kind 'engine-diff' needs 'reference' (the engine, from 'engines', to compare with)",
                        who);
        if (!cs->model) return fail(c, m, "%s: kind 'engine-diff' needs 'model'", who);
        if (!vals[CK_TOKENS]) return fail(c, m, "%s: kind 'engine-diff' needs 'tokens' (a list of token ids)", who);
        break;
    case CASE_BANDWIDTH:
    case CASE_KIND_COUNT: break;
    }

    /* numbers, with defaults */
    cs->timeout_s = d->timeout_s;
    cs->warmup = d->warmup;
    cs->iterations = d->iterations;
    cs->threads = d->threads;
    cs->prompt_len = DEFAULT_PROMPT_LEN;
    cs->step_tokens = DEFAULT_STEP_TOKENS;
    cs->greedy_tokens = 0;
    cs->capture_hidden = 1;
    cs->bytes = cs->kind == CASE_BANDWIDTH ? DEFAULT_BYTES : 0;
    if (vals[CK_TIMEOUT]) {
        if (get_double(c, vals[CK_TIMEOUT], "timeout", &cs->timeout_s)) return -1;
        if (!(cs->timeout_s > 0))
            return fail(c, vals[CK_TIMEOUT], "'timeout' must be > 0 seconds, got %s", scalar(vals[CK_TIMEOUT]));
    }
    if (vals[CK_WARMUP] && get_int32(c, vals[CK_WARMUP], "warmup", 0, &cs->warmup)) return -1;
    if (vals[CK_ITERATIONS] && get_int32(c, vals[CK_ITERATIONS], "iterations", 1, &cs->iterations)) return -1;
    if (vals[CK_THREADS] && get_int32(c, vals[CK_THREADS], "threads", 0, &cs->threads)) return -1;
    if (vals[CK_PROMPT_LEN] && get_int32(c, vals[CK_PROMPT_LEN], "prompt_len", 1, &cs->prompt_len)) return -1;
    if (vals[CK_STEP_TOKENS] && get_int32(c, vals[CK_STEP_TOKENS], "step_tokens", 1, &cs->step_tokens)) return -1;
    if (vals[CK_GREEDY_TOKENS] && get_int32(c, vals[CK_GREEDY_TOKENS], "greedy_tokens", 0, &cs->greedy_tokens))
        return -1;
    if (vals[CK_HIDDEN] && get_bool(c, vals[CK_HIDDEN], "hidden", &cs->capture_hidden)) return -1;
    if (vals[CK_TOKENS] && parse_case_tokens(c, vals[CK_TOKENS], cs, who)) return -1;
    if (vals[CK_GREEDY] && get_int32(c, vals[CK_GREEDY], "greedy", 0, &cs->greedy)) return -1;
    if (vals[CK_BYTES]) {
        long long b;
        if (get_int(c, vals[CK_BYTES], "bytes", 1, LLONG_MAX, &b)) return -1;
        cs->bytes = (uint64_t)b;
    }
    if (vals[CK_TAGS] && parse_tags(c, vals[CK_TAGS], cs)) return -1;
    if (vals[CK_GATES] && parse_gates(c, vals[CK_GATES], cs, who)) return -1;
    return 0;
}

static int parse_cases(ctx *c, const yaml_node_t *list, const defaults *d) {
    if (expect_type(c, list, YAML_SEQUENCE_NODE, "cases")) return -1;
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    if (n == 0) return fail(c, list, "'cases' is empty: a suite needs at least one case");
    c->s->cases = xcalloc(n, sizeof *c->s->cases);
    int index = 1;
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++)
        if (parse_case(c, node(c, *it), index++, d)) return -1;
    return 0;
}

static int parse_suite(ctx *c, const yaml_node_t *root) {
    suite *s = c->s;
    yaml_node_t *keys[TK_N], *vals[TK_N];
    if (root->type != YAML_MAPPING_NODE) return fail(c, root, "expected a map at the top level, got %s", type_name(root));
    if (map_keys(c, root, top_keys, TK_N, "at the top level", keys, vals)) return -1;
    const char *str;
    if (!vals[TK_SUITE]) return fail(c, root, "missing required key 'suite' (the suite's name)");
    if (get_name(c, vals[TK_SUITE], "suite name", &str)) return -1;
    s->name = xstrdup(str);
    if (vals[TK_DESCRIPTION]) {
        if (get_string(c, vals[TK_DESCRIPTION], "description", &str)) return -1;
        s->description = xstrdup(str);
    }
    if (vals[TK_BASELINE]) {
        if (get_name(c, vals[TK_BASELINE], "baseline", &str)) return -1;
        s->baseline = xstrdup(str);
    }
    if (vals[TK_ENGINES] && parse_engines(c, vals[TK_ENGINES])) return -1;
    if (vals[TK_MODELS] && parse_files(c, vals[TK_MODELS], "models", "model", &s->models, &s->n_models)) return -1;
    if (vals[TK_ORACLES] && parse_files(c, vals[TK_ORACLES], "oracles", "oracle", &s->oracles, &s->n_oracles))
        return -1;
    if (vals[TK_PROMPTS] && parse_prompts(c, vals[TK_PROMPTS])) return -1;
    defaults d = {NULL, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, DEFAULT_ITERATIONS, 0};
    if (vals[TK_DEFAULTS] && parse_defaults(c, vals[TK_DEFAULTS], &d)) return -1;
    if (!vals[TK_CASES]) return fail(c, root, "missing required key 'cases'");
    return parse_cases(c, vals[TK_CASES], &d);
}

/* ---- entry points ---- */

/* Line and column (1-based) of byte `offset` in buf (len,), for reader errors that carry only an offset. */
static suite_pos offset_pos(const unsigned char *buf, size_t len, size_t offset) {
    suite_pos p = {1, 1};
    for (size_t i = 0; i < offset && i < len; i++) {
        if (buf[i] == '\n') p.line++, p.col = 1;
        else if ((buf[i] & 0xC0) != 0x80) p.col++;
    }
    return p;
}

static void yaml_error(ctx *c, const yaml_parser_t *y, const unsigned char *buf, size_t len) {
    suite_pos p = {(int)y->problem_mark.line + 1, (int)y->problem_mark.column + 1};
    const char *problem = y->problem ? y->problem : "unknown error";
    switch (y->error) {
    case YAML_MEMORY_ERROR: snprintf(c->err, c->err_len, "%s:1:1: out of memory while parsing YAML", c->file); return;
    case YAML_READER_ERROR:
        p = offset_pos(buf, len, y->problem_offset);
        if (y->problem_value != -1)
            snprintf(c->err, c->err_len, "%s:%d:%d: YAML syntax error: %s (byte 0x%02x)", c->file, p.line, p.col,
                     problem, (unsigned)y->problem_value);
        else
            snprintf(c->err, c->err_len, "%s:%d:%d: YAML syntax error: %s", c->file, p.line, p.col, problem);
        return;
    default:
        if (y->context)
            snprintf(c->err, c->err_len, "%s:%d:%d: YAML syntax error: %s (%s at %d:%d)", c->file, p.line, p.col,
                     problem, y->context, (int)y->context_mark.line + 1, (int)y->context_mark.column + 1);
        else
            snprintf(c->err, c->err_len, "%s:%d:%d: YAML syntax error: %s", c->file, p.line, p.col, problem);
    }
}

/* Read the whole file (NUL-terminated). */
static int read_all(const char *path, unsigned char **out, size_t *len, char *err, size_t err_len) {
    int ret = -1;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        goto cleanup;
    }
    for (;;) {
        if (cap - n < 4096) buf = xrealloc(buf, cap = cap ? cap * 2 : 8192);
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        snprintf(err, err_len, "%s: read error: %s", path, strerror(errno));
        goto cleanup;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
    ret = 0;
cleanup:
    free(buf);
    if (f) fclose(f);
    return ret;
}

int suite_load(const char *path, suite **out, char *err, size_t err_len) {
    int ret = -1;
    unsigned char *buf = NULL;
    size_t len = 0;
    yaml_parser_t y;
    yaml_document_t doc, extra;
    int have_parser = 0, have_doc = 0;
    suite *s = NULL;
    char real[PATH_MAX];

    *out = NULL;
    if (read_all(path, &buf, &len, err, err_len)) goto cleanup;
    if (!realpath(path, real)) {
        snprintf(err, err_len, "%s: cannot resolve path: %s", path, strerror(errno));
        goto cleanup;
    }
    s = xcalloc(1, sizeof *s);
    s->path = xstrdup(real);
    s->dir = xstrdup(real);
    *strrchr(s->dir, '/') = '\0';
    if (!s->dir[0]) strcpy(s->dir, "/");
    ctx c = {path, s->dir, &doc, s, err, err_len};

    if (!yaml_parser_initialize(&y)) {
        snprintf(err, err_len, "%s: cannot initialise the YAML parser", path);
        goto cleanup;
    }
    have_parser = 1;
    yaml_parser_set_input_string(&y, buf, len);
    if (!yaml_parser_load(&y, &doc)) {
        yaml_error(&c, &y, buf, len);
        goto cleanup;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        snprintf(err, err_len, "%s:1:1: empty suite file (expected a map with 'suite' and 'cases')", path);
        goto cleanup;
    }
    if (!yaml_parser_load(&y, &extra)) {
        yaml_error(&c, &y, buf, len);
        goto cleanup;
    }
    yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
    if (extra_root) {
        suite_pos p = pos_of(extra_root);
        snprintf(err, err_len, "%s:%d:%d: a second YAML document (a suite file holds exactly one)", path, p.line,
                 p.col);
        yaml_document_delete(&extra);
        goto cleanup;
    }
    yaml_document_delete(&extra);
    if (parse_suite(&c, root)) goto cleanup;
    *out = s;
    s = NULL;
    ret = 0;
cleanup:
    if (have_doc) yaml_document_delete(&doc);
    if (have_parser) yaml_parser_delete(&y);
    suite_free(s);
    free(buf);
    return ret;
}

void suite_free(suite *s) {
    if (!s) return;
    for (int i = 0; i < s->n_engines; i++) {
        free(s->engines[i].name);
        free(s->engines[i].lib);
        free(s->engines[i].sha256);
        free(s->engines[i].options);
    }
    for (int i = 0; i < s->n_models; i++) free(s->models[i].name), free(s->models[i].path);
    for (int i = 0; i < s->n_oracles; i++) free(s->oracles[i].name), free(s->oracles[i].path);
    for (int i = 0; i < s->n_prompts; i++) {
        suite_prompt_set *ps = &s->prompts[i];
        for (int j = 0; j < ps->n_prompts; j++) free(ps->tokens[j]);
        free(ps->tokens);
        free(ps->n_tokens);
        free(ps->path);
        free(ps->name);
    }
    for (int i = 0; i < s->n_cases; i++) {
        suite_case *cs = &s->cases[i];
        for (int j = 0; j < cs->n_tags; j++) free(cs->tags[j]);
        free(cs->tags);
        free(cs->tokens);
        free(cs->name);
    }
    free(s->engines);
    free(s->models);
    free(s->oracles);
    free(s->prompts);
    free(s->cases);
    free(s->path);
    free(s->dir);
    free(s->name);
    free(s->description);
    free(s->baseline);
    free(s);
}

int suite_override_engine(suite *s, const char *name, const char *lib, char *err, size_t err_len) {
    suite_engine *e = NULL;
    for (int i = 0; i < s->n_engines; i++)
        if (!strcmp(s->engines[i].name, name)) e = &s->engines[i];
    if (!e) {
        const char *names[64] = {0};
        int m = s->n_engines < 64 ? s->n_engines : 64;
        for (int i = 0; i < m; i++) names[i] = s->engines[i].name;
        char list[768];
        join_names(list, sizeof list, names, m);
        snprintf(err, err_len, "--engine %s=%s: suite '%s' has no engine '%s' (%s%s)", name, lib, s->name, name,
                 m ? "known: " : "it defines no engines", list);
        return -1;
    }
    char *newlib;
    if (!lib_is_path(lib)) {
        if (!valid_name(lib)) {
            snprintf(err, err_len, "--engine %s=%s: '%s' is neither an engine name (cpu, cuda) nor a path to a .so",
                     name, lib, lib);
            return -1;
        }
        newlib = xstrdup(lib);
    } else {
        /* a command-line path is relative to the working directory */
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            snprintf(err, err_len, "--engine %s=%s: cannot get the working directory: %s", name, lib, strerror(errno));
            return -1;
        }
        newlib = resolve_path(cwd, lib);
        struct stat st;
        if (stat(newlib, &st) != 0 || S_ISDIR(st.st_mode)) {
            char *shown = missing_path(newlib);
            snprintf(err, err_len, "--engine %s=%s: file not found: %s", name, lib, shown);
            free(shown);
            free(newlib);
            return -1;
        }
    }
    free(e->lib);
    e->lib = newlib;
    /* the command line wins: a pin named the binary the suite was written for, not this one */
    free(e->sha256);
    e->sha256 = NULL;
    return 0;
}
