/*
 * fuzz_suite.c - fuzz target for the suite reader (src/cli/suite.c): each input is a whole suite
 * file, written as a.yaml two levels below a scratch folder that holds the files the test suites
 * refer to (lib.sh, prompts/long.txt, the folder a/valid), and loaded with suite_load. An accepted suite is walked and
 * its promises checked (every case has a name, a kind, an engine, the files its kind needs; prompt
 * sets' arrays as long as they say; names unique per table); a rejection must be exactly one line
 * "PATH:LINE:COL: message" (PATH the suite or a file it names; both positions >= 1, or both 0). A broken
 * promise abort()s, which the fuzzer reports like a crash.
 *
 * libFuzzer build (clang), from the source tree root, after ./configure (config.h):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DKESTREL_LIBFUZZER -D_GNU_SOURCE -I. -Isrc/cli -Isrc/lib \
 *     tests/fuzz/fuzz_suite.c src/cli/suite.c src/cli/util.c -lyaml -lcrypto -lm -o fuzz_suite
 *   mkdir -p corpus && cp tests/suites/valid/[a-z]?*.yaml corpus/ && cp -r tests/fuzz/corpus-suite/. corpus/
 *   ./fuzz_suite -max_total_time=300 -max_len=8192 corpus
 *
 * Without -DKESTREL_LIBFUZZER this file has its own main (the make-check replay, tests/suite-fuzz.sh):
 * `fuzz_suite FILE|DIR...` runs each file through the same target and prints one line per input,
 * "<path>: ok (N cases)" or "<path>: rejected: <message without the scratch path>", then a count line.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suite.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char scratch[64], suite_path[128];
static char last_err[1024];
static int last_cases = -1; /* cases of the last accepted input, -1 when rejected */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_suite: %s\n", what);
    abort();
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) die("cannot write the scratch files");
}

/* the scratch folder (made once per process): the test suites' relative paths resolve inside it.
 * Folders in creation order (removed in reverse), then the files with their contents. */
static const char *const scratch_dirs[] = {"a", "a/b", "a/b/prompts", "a/valid" /* full.yaml's ./../valid */};
static const char *const scratch_files[][2] = {{"lib.sh", ""}, {"a/b/prompts/long.txt", "1, 2, 3\n4 5 6 7\n"}};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* at exit: the input's file, the files, the folders in reverse, the scratch folder */
static void remove_scratch(void)
{
    char p[200];
    unlink(suite_path);
    for (size_t i = 0; i < N_OF(scratch_files); i++) {
        snprintf(p, sizeof p, "%s/%s", scratch, scratch_files[i][0]);
        unlink(p);
    }
    for (size_t i = N_OF(scratch_dirs); i-- > 0;) {
        snprintf(p, sizeof p, "%s/%s", scratch, scratch_dirs[i]);
        rmdir(p);
    }
    rmdir(scratch);
}

static void setup(void)
{
    char p[200];
    if (scratch[0]) return;
    snprintf(scratch, sizeof scratch, "/tmp/fuzz_suite.XXXXXX");
    if (!mkdtemp(scratch)) die("mkdtemp");
    for (size_t i = 0; i < N_OF(scratch_dirs); i++) {
        snprintf(p, sizeof p, "%s/%s", scratch, scratch_dirs[i]);
        if (mkdir(p, 0700)) die("mkdir");
    }
    for (size_t i = 0; i < N_OF(scratch_files); i++) {
        snprintf(p, sizeof p, "%s/%s", scratch, scratch_files[i][0]);
        put_file(p, scratch_files[i][1]);
    }
    snprintf(suite_path, sizeof suite_path, "%s/a/b/a.yaml", scratch);
    atexit(remove_scratch);
}

static void check_unique(const char *table, const char *name, const char *const *earlier, int n)
{
    if (!name || !name[0]) die(table);
    for (int i = 0; i < n; i++)
        if (!strcmp(earlier[i], name)) die(table);
}

/* the promises of an accepted suite (suite.h) */
static void walk(const suite *s)
{
    const char *names[512];
    if (!s->path || !s->dir || !s->name || s->n_cases < 0 || s->n_engines < 0) die("suite header");
    for (int i = 0; i < s->n_engines && i < 512; i++) {
        const suite_engine *e = &s->engines[i];
        check_unique("engine names", e->name, names, i);
        names[i] = e->name;
        if (!e->lib || !e->options) die("engine fields");
        if (e->sha256 && strlen(e->sha256) != 64) die("engine sha256");
    }
    for (int i = 0; i < s->n_models && i < 512; i++) {
        check_unique("model names", s->models[i].name, names, i);
        names[i] = s->models[i].name;
        if (!s->models[i].path || s->models[i].path[0] != '/') die("model path");
    }
    for (int i = 0; i < s->n_oracles && i < 512; i++) {
        check_unique("oracle names", s->oracles[i].name, names, i);
        names[i] = s->oracles[i].name;
        if (!s->oracles[i].path || s->oracles[i].path[0] != '/') die("oracle path");
    }
    for (int i = 0; i < s->n_prompts && i < 512; i++) {
        const suite_prompt_set *p = &s->prompts[i];
        check_unique("prompt set names", p->name, names, i);
        names[i] = p->name;
        if (p->n_prompts < 0 || (p->n_prompts && (!p->tokens || !p->n_tokens))) die("prompt set arrays");
        for (int j = 0; j < p->n_prompts; j++) {
            if (p->n_tokens[j] < 0 || (p->n_tokens[j] && !p->tokens[j])) die("prompt arrays");
            for (int t = 0; t < p->n_tokens[j]; t++)
                if (p->tokens[j][t] < 0) die("negative token id");
        }
    }
    for (int i = 0; i < s->n_cases && i < 512; i++) {
        const suite_case *c = &s->cases[i];
        check_unique("case names", c->name, names, i);
        names[i] = c->name;
        if ((unsigned)c->kind >= CASE_KIND_COUNT || !suite_case_kind_name(c->kind)) die("case kind");
        if (!c->engine) die("case engine");
        if (c->kind == CASE_ORACLE && (!c->model || !c->oracle)) die("oracle case files");
        if (c->kind == CASE_ENGINE_DIFF && (!c->model || !c->reference || c->n_tokens < 0)) die("engine-diff case");
        if (c->kind == CASE_DECODE_BENCH && c->iterations < 0) die("decode-bench iterations");
        if (c->n_tokens > 0 && !c->tokens) die("case tokens");
        for (int t = 0; t < c->n_tokens; t++)
            if (c->tokens[t] < 0) die("negative case token");
        if (c->n_tags < 0 || (c->n_tags && !c->tags)) die("case tags");
        for (int t = 0; t < c->n_tags; t++)
            if (!c->tags[t]) die("case tag");
        if (c->pos.line < 1 || c->pos.col < 1) die("case position");
    }
}

/* a rejection is one line "PATH:LINE:COL: message", PATH the suite or a file it names (a prompt file) */
static void check_error(const char *err)
{
    size_t n = strlen(scratch);
    if (strncmp(err, scratch, n) || err[n] != '/') die("error does not start with a path of the scratch folder");
    n = strcspn(err, ":");
    if (!err[n]) die("error has no position");
    char *end;
    long line = strtol(err + n + 1, &end, 10);
    if (end == err + n + 1 || *end != ':') die("error has no line");
    const char *colp = end + 1;
    long col = strtol(colp, &end, 10);
    if (end == colp || strncmp(end, ": ", 2) || !end[2]) die("error has no column or no message");
    if (line < 0 || col < 0 || (line == 0) != (col == 0)) die("error position");
    if (strchr(err, '\n')) die("error spans lines");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    setup();
    FILE *f = fopen(suite_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) die("cannot write the input");
    suite *s = NULL;
    char err[1024] = "";
    if (suite_load(suite_path, &s, err, sizeof err)) {
        if (s) die("suite_load failed but returned a suite");
        check_error(err);
        /* the scratch folder's name changes from run to run: shown as the suite's name or "<scratch>" */
        if (!strncmp(err, suite_path, strlen(suite_path)))
            snprintf(last_err, sizeof last_err, "%s", err + strlen(suite_path) + 1);
        else
            snprintf(last_err, sizeof last_err, "<scratch>%s", err + strlen(scratch));
        last_cases = -1;
        return 0;
    }
    if (!s) die("suite_load succeeded without a suite");
    walk(s);
    last_cases = s->n_cases;
    suite_free(s);
    return 0;
}

#ifndef KESTREL_LIBFUZZER
static int n_in, n_ok;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_suite: %s: cannot open\n", path);
        return 1;
    }
    unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    int too_long = !feof(f);
    fclose(f);
    if (too_long) {
        fprintf(stderr, "fuzz_suite: %s: longer than %zu bytes\n", path, sizeof buf);
        return 1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    n_in++;
    if (last_cases >= 0) {
        n_ok++;
        printf("%s: ok (%d cases)\n", path, last_cases);
    } else
        printf("%s: rejected: %s\n", path, last_err);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* a folder's regular files in name order, so the output is the same on every machine */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return run_file(dir);
    char *names[4096];
    int n = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 4096;)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (!stat(p, &st) && S_ISREG(st.st_mode)) rc |= run_file(p);
        free(names[i]);
    }
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_suite FILE|DIR...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) rc |= run_dir(argv[i]);
    printf("fuzz_suite: %d inputs, %d accepted, %d rejected\n", n_in, n_ok, n_in - n_ok);
    return rc;
}
#endif
