/*
 * cmd_ab.c - `kestrel-eval ab`: interleaved A/B of two engine builds (or two
 * option sets of one build) on one decode-bench case of a suite.
 *
 * Method (docs/methodology.md, "Interleaved A/B"): one session, pairs of rounds
 * in a balanced order AB, BA, AB, ... (or A then B in every pair with --order ab,
 * or a seeded random order within each pair with --seed), every round a FRESH
 * process (fork + exec of this binary's hidden round entry) that opens the
 * engine, runs the case's decode-bench and streams its info and per-step
 * samples back through a pipe. The unit of comparison is the round median;
 * B/A is the ratio of the two groups' medians with a bootstrap CI (stats.h)
 * and a Mann-Whitney p over the round medians. Verdict: `B faster` / `B
 * slower` when the CI excludes 1 AND |ratio - 1| >= min_effect; `B faster,
 * below min_effect` / `B slower, below min_effect` when the CI excludes 1 but
 * the effect is smaller (consistent, too small to call a change); else `no
 * difference beyond noise`.
 *
 * One variable: both sides run the same suite, case and model file by
 * construction; ab refuses (exit 2) when the two engines report different
 * model shapes (vocab, layers, embedding, layer types, context), when the
 * model / oracle / prompt files change between rounds (sha256 before the
 * first and after the last round, stat identity before every round), and
 * when BOTH the library and the options differ - unless --force.
 *
 * Results go to the DB in one transaction at the end: a run (label "ab:
 * ..."), one case of kind 'ab', ab_rounds rows, every sample of both sides
 * (series A.ms_per_token / B.ms_per_token), metrics. Exit 0 whatever the
 * verdict, 1 if a round crashed or timed out, 2 on usage/input errors or a
 * refusal (nothing written then). SIGINT/SIGTERM (a Ctrl-C, a `timeout`
 * wrapper) kill the running round and end the session: the pairs completed so
 * far are recorded (the unfinished pair dropped, so the order stays balanced),
 * with their statistics and verdict when at least 3 pairs completed, the run
 * 'interrupted', the case 'error' naming the signal; exit 130 / 143.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "cli.h"
#include "engine_load.h"
#include "kestrel/engine.h"
#include "runner.h"
#include "stats.h"
#include "store.h"
#include "suite.h"
#include "sysinfo.h"

#define AB_PROTO_FD 3          /* the round child writes its records here */
#define AB_DEFAULT_PAIRS 10
#define AB_BOOT 10000
#define AB_ERR_TAIL 2048       /* bytes of a round's stderr kept for the error text */
#define AB_CHILD_INPUT_ERROR 2 /* round child exit code: engine refused the model/options */

/* ====================================================================== */
/* the round child: `kestrel-eval ab --round-child SUITE CASE LIB OPTIONS` */

static void proto_str(FILE *f, const char *s) { /* a field without tabs/newlines */
    for (; s && *s; s++) fputc((*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static const suite_case *find_case(const suite *s, const char *name) {
    for (int i = 0; i < s->n_cases; i++)
        if (strcmp(s->cases[i].name, name) == 0) return &s->cases[i];
    return NULL;
}

static int round_child(int argc, char **argv) {
    int ret = AB_CHILD_INPUT_ERROR;
    suite *s = NULL;
    engine_lib lib = {0};
    kestrel_engine *e = NULL;
    double *ms = NULL; /* (iterations,) */
    char err[1024];
    FILE *proto = NULL;

    if (argc != 6) {
        cli_error("ab --round-child: internal entry, expects SUITE CASE LIB OPTIONS");
        return EXIT_USAGE;
    }
    const char *suite_path = argv[2], *case_name = argv[3], *lib_path = argv[4], *options = argv[5];
    proto = fdopen(AB_PROTO_FD, "w");
    if (!proto) {
        cli_error("ab --round-child: fd %d: %s", AB_PROTO_FD, strerror(errno));
        goto cleanup;
    }
    if (suite_load(suite_path, &s, err, sizeof err)) {
        cli_error("%s", err);
        goto cleanup;
    }
    const suite_case *c = find_case(s, case_name);
    if (!c || !c->model) {
        cli_error("%s: case '%s': not a decode-bench case with a model", suite_path, case_name);
        goto cleanup;
    }
    if (engine_lib_open(lib_path, &lib, err, sizeof err)) {
        cli_error("%s", err);
        goto cleanup;
    }
    err[0] = '\0';
    if (lib.api->open(c->model->path, options, &e, err, sizeof err)) {
        cli_error("%s", err[0] ? err : "engine open failed");
        goto cleanup;
    }
    kestrel_info info;
    if (lib.api->info(e, &info)) {
        cli_error("%s: info: %s", lib.path, lib.api->last_error(e));
        goto cleanup;
    }
    fprintf(proto, "info\t%d\t%d\t%d\t%d\t%llu\t%llu\t", info.n_vocab, info.n_layers, info.n_embd,
            info.max_context, (unsigned long long)info.weight_bytes_per_token,
            (unsigned long long)info.state_bytes_per_token);
    for (int i = 0; i < info.n_layers; i++) fputc(info.layer_types && info.layer_types[i] ? 'A' : 'G', proto);
    fputc('\t', proto);
    proto_str(proto, info.engine_name);
    fputc('\t', proto);
    proto_str(proto, info.engine_version);
    fputc('\t', proto);
    proto_str(proto, info.device);
    fputc('\t', proto);
    proto_str(proto, info.build_flags);
    fputc('\n', proto);
    fflush(proto);

    /* the decode-bench protocol of `run` (case_bench.c), so A/B rounds time exactly what run times */
    int P, T, warmup, iters;
    bench_shape(c, &P, &T, &warmup, &iters);
    ms = xmalloc(sizeof(double) * (size_t)iters);
    ret = 3; /* from here on a failure is a failed round, not an input error */
    if (bench_run_steps(lib.api, e, &info, c, ms, NULL, 0, NULL, err, sizeof err) != 0) {
        cli_error("%s: case '%s': %s", lib.path, case_name, err);
        goto cleanup;
    }
    for (int i = 0; i < iters; i++) fprintf(proto, "sample\t%.9g\n", ms[i]);
    fprintf(proto, "done\n");
    ret = fflush(proto) == 0 ? EXIT_OK : 3;
cleanup:
    if (proto) fclose(proto);
    if (e) lib.api->close(e);
    if (lib.handle) engine_lib_close(&lib);
    free(ms);
    suite_free(s);
    return ret;
}

/* ====================================================================== */
/* the parent                                                            */

typedef struct ab_info { /* what a round child reports about its engine and model */
    int n_vocab, n_layers, n_embd, max_context;
    unsigned long long wbytes, sbytes;
    char *layer_types, *engine_name, *engine_version, *device, *build_flags;
} ab_info;

typedef struct ab_round {
    char side;         /* 'A' or 'B' */
    int pair;          /* 1-based pair number */
    int seq;           /* execution order within the session, 0-based */
    double *ms;        /* (n,) ms per token of every timed step */
    int n;
    double median;
    char status[16];   /* pass | crash | timeout | error */
    char *error;
} ab_round;

typedef struct ab_side {
    char name;
    char *lib;         /* resolved absolute path */
    char sha[65];
    const char *options;
    ab_info info;
    int have_info;
} ab_side;

typedef struct ab_file { /* a file the case depends on, watched across rounds */
    const char *kind, *name, *path;
    char sha[65];
    struct stat st;
} ab_file;

static void info_free(ab_info *i) {
    free(i->layer_types);
    free(i->engine_name);
    free(i->engine_version);
    free(i->device);
    free(i->build_flags);
}

static int parse_info(char *line, ab_info *out) {
    char *f[12];
    int n = 0;
    for (char *p = line, *tok; n < 12 && (tok = strsep(&p, "\t")) != NULL;) f[n++] = tok;
    if (n != 12) return -1;
    out->n_vocab = atoi(f[1]);
    out->n_layers = atoi(f[2]);
    out->n_embd = atoi(f[3]);
    out->max_context = atoi(f[4]);
    out->wbytes = strtoull(f[5], NULL, 10);
    out->sbytes = strtoull(f[6], NULL, 10);
    out->layer_types = xstrdup(f[7]);
    out->engine_name = xstrdup(f[8]);
    out->engine_version = xstrdup(f[9]);
    out->device = xstrdup(f[10]);
    out->build_flags = xstrdup(f[11]);
    return 0;
}

/* "" when a and b describe the same model, else what differs */
static void info_diff(const ab_info *a, const ab_info *b, char *out, size_t len) {
    out[0] = '\0';
    if (a->n_vocab != b->n_vocab) snprintf(out, len, "n_vocab %d vs %d", a->n_vocab, b->n_vocab);
    else if (a->n_layers != b->n_layers) snprintf(out, len, "n_layers %d vs %d", a->n_layers, b->n_layers);
    else if (a->n_embd != b->n_embd) snprintf(out, len, "n_embd %d vs %d", a->n_embd, b->n_embd);
    else if (strcmp(a->layer_types, b->layer_types) != 0)
        snprintf(out, len, "layer types %s vs %s", a->layer_types, b->layer_types);
    else if (a->max_context != b->max_context)
        snprintf(out, len, "max_context %d vs %d", a->max_context, b->max_context);
}

/* keep the last AB_ERR_TAIL-1 bytes: tail (AB_ERR_TAIL,) holds *n bytes + NUL; buf: (k,) */
static void tail_append(char *tail, size_t *n, const char *buf, size_t k) {
    if (k >= AB_ERR_TAIL) {
        memcpy(tail, buf + k - (AB_ERR_TAIL - 1), AB_ERR_TAIL - 1);
        *n = AB_ERR_TAIL - 1;
    } else {
        if (*n + k >= AB_ERR_TAIL) {
            size_t drop = *n + k - (AB_ERR_TAIL - 1);
            memmove(tail, tail + drop, *n - drop);
            *n -= drop;
        }
        memcpy(tail + *n, buf, k);
        *n += k;
    }
    tail[*n] = '\0';
}

/* The most telling line of a round's stderr tail s (modified in place): its last
 * "kestrel-eval: " line (prefix dropped), else the first sanitizer report line
 * ("runtime error", "ERROR: ...Sanitizer"), else its last non-empty line. */
static const char *last_line(char *s) {
    const char *own = NULL, *san = NULL, *last = NULL;
    for (char *p = s, *line; (line = strsep(&p, "\n")) != NULL;) {
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
        if (!n) continue;
        last = line;
        if (strncmp(line, "kestrel-eval: ", 14) == 0) own = line + 14;
        else if (!san && (strstr(line, "runtime error") || strstr(line, "Sanitizer"))) san = line;
    }
    return own ? own : san ? san : last ? last : "";
}

/*
 * Run one round in a fresh process. Fills r (samples, median, status, error) and, on the
 * first info line, side->info. Returns 0 when the round finished (status pass), 1 when it
 * crashed / timed out / failed (status says which), 2 when the engine refused the model or
 * options (an input error: msg says why), 3 when its info differs from `other` (refusal),
 * 4 when SIGINT/SIGTERM arrived (the round killed, runner_signal() says which).
 */
static int run_round(const char *suite_path, const char *case_name, ab_side *side, const ab_side *other,
                     int force, double timeout_s, ab_round *r, char *msg, size_t msg_len) {
    int ret = 1;
    int proto[2] = {-1, -1}, errp[2] = {-1, -1};
    pid_t pid = -1;
    char *pbuf = NULL, tail[AB_ERR_TAIL] = "";
    size_t plen = 0, pcap = 0, tlen = 0;
    int cap = 0, got_done = 0, killed_timeout = 0, bad_info = 0, interrupted = 0;
    msg[0] = '\0';

    if (pipe(proto) || pipe(errp)) {
        snprintf(msg, msg_len, "pipe: %s", strerror(errno));
        snprintf(r->status, sizeof r->status, "error");
        goto cleanup;
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        snprintf(msg, msg_len, "fork: %s", strerror(errno));
        snprintf(r->status, sizeof r->status, "error");
        goto cleanup;
    }
    if (pid == 0) { /* child: protocol on fd 3, stdout+stderr into the error pipe */
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        dup2(proto[1], AB_PROTO_FD);
        dup2(errp[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        for (int fd = AB_PROTO_FD + 1; fd < 1024; fd++) close(fd);
        char *args[] = {"kestrel-eval", "ab", "--round-child", (char *)suite_path, (char *)case_name,
                        side->lib, (char *)side->options, NULL};
        execv("/proc/self/exe", args);
        fprintf(stderr, "kestrel-eval: ab: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(proto[1]);
    close(errp[1]);
    proto[1] = errp[1] = -1;

    double deadline = timeout_s > 0 ? now_seconds() + timeout_s : 0;
    int open_fds = 2;
    while (open_fds > 0) {
        if (runner_signal()) {
            kill(pid, SIGKILL);
            interrupted = 1;
            break;
        }
        struct pollfd pf[3] = {{proto[0], POLLIN, 0}, {errp[0], POLLIN, 0}, {runner_signal_fd(), POLLIN, 0}};
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - now_seconds();
            if (left <= 0) {
                kill(pid, SIGKILL);
                killed_timeout = 1;
                break;
            }
            wait_ms = (int)(left * 1e3) + 1;
        }
        int pr = poll(pf, pf[2].fd >= 0 ? 3 : 2, wait_ms);
        if (pr < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (pf[2].fd >= 0 && (pf[2].revents & POLLIN)) { /* drain; the loop's top reads the signal */
            char sb[16];
            while (read(pf[2].fd, sb, sizeof sb) > 0) {}
        }
        char buf[4096];
        if (pf[1].fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = read(errp[0], buf, sizeof buf);
            if (k > 0) tail_append(tail, &tlen, buf, (size_t)k);
            else if (k == 0 || errno != EINTR) { close(errp[0]); errp[0] = -1; open_fds--; }
        }
        if (pf[0].fd >= 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = read(proto[0], buf, sizeof buf);
            if (k > 0) {
                if (plen + (size_t)k + 1 > pcap) pbuf = xrealloc(pbuf, pcap = 2 * (plen + (size_t)k + 1));
                memcpy(pbuf + plen, buf, (size_t)k);
                plen += (size_t)k;
                pbuf[plen] = '\0';
                /* consume whole lines */
                char *nl, *start = pbuf;
                while ((nl = strchr(start, '\n')) != NULL) {
                    *nl = '\0';
                    if (strncmp(start, "info\t", 5) == 0 && !side->have_info) {
                        if (parse_info(start, &side->info) == 0) side->have_info = 1;
                        if (side->have_info && other && other->have_info && !force) {
                            char d[256];
                            info_diff(&other->info, &side->info, d, sizeof d);
                            if (d[0]) {
                                snprintf(msg, msg_len, "engines report different models: %s (%c: %s, %c: %s)", d,
                                         other->name, other->lib, side->name, side->lib);
                                kill(pid, SIGKILL);
                                bad_info = 1;
                            }
                        }
                    } else if (strncmp(start, "sample\t", 7) == 0) {
                        if (r->n == cap) r->ms = xrealloc(r->ms, sizeof(double) * (size_t)(cap = cap ? 2 * cap : 128));
                        r->ms[r->n++] = strtod(start + 7, NULL);
                    } else if (strcmp(start, "done") == 0) {
                        got_done = 1;
                    }
                    start = nl + 1;
                }
                plen -= (size_t)(start - pbuf);
                memmove(pbuf, start, plen + 1);
            } else if (k == 0 || errno != EINTR) {
                close(proto[0]);
                proto[0] = -1;
                open_fds--;
            }
        }
        if (bad_info) break;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    pid = -1;
    char tcopy[AB_ERR_TAIL]; /* last_line() cuts its argument into lines; tail stays whole */
    memcpy(tcopy, tail, tlen + 1);

    if (interrupted || runner_signal()) { /* before the child's own death by the terminal's SIGINT */
        ret = 4;
        snprintf(r->status, sizeof r->status, "error");
    } else if (bad_info) {
        ret = 3;
        snprintf(r->status, sizeof r->status, "error");
    } else if (killed_timeout) {
        snprintf(r->status, sizeof r->status, "timeout");
        snprintf(msg, msg_len, "timed out after %.0f s", timeout_s);
    } else if (WIFSIGNALED(status)) {
        snprintf(r->status, sizeof r->status, "crash");
        snprintf(msg, msg_len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == AB_CHILD_INPUT_ERROR) {
        ret = 2;
        snprintf(r->status, sizeof r->status, "error");
        snprintf(msg, msg_len, "%s", tlen ? last_line(tcopy) : "round failed");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !got_done || r->n == 0) {
        snprintf(r->status, sizeof r->status, "crash");
        snprintf(msg, msg_len, "round exited with status %d%s%s", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 tlen ? ": " : "", tlen ? last_line(tcopy) : "");
    } else {
        snprintf(r->status, sizeof r->status, "pass");
        r->median = stats_median(r->ms, r->n);
        ret = 0;
    }
    if (ret != 0 && ret != 3 && ret != 4) r->error = xasprintf("%s%s%s", msg, tlen ? "\n--- stderr tail ---\n" : "", tlen ? tail : "");
cleanup:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    for (int i = 0; i < 2; i++) {
        if (proto[i] >= 0) close(proto[i]);
        if (errp[i] >= 0) close(errp[i]);
    }
    free(pbuf);
    return ret;
}

/* ---------------------------------------------------------------------- */
/* files watched across rounds */

static int file_identity_changed(const ab_file *f) {
    struct stat st;
    if (stat(f->path, &st) != 0) return 1;
    return st.st_dev != f->st.st_dev || st.st_ino != f->st.st_ino || st.st_size != f->st.st_size ||
           st.st_mtim.tv_sec != f->st.st_mtim.tv_sec || st.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec;
}

/* 0 unchanged; nonzero with msg when the file's sha256 differs from the first one */
static int file_check(ab_file *f, int rehash, char *msg, size_t msg_len) {
    char err[512], sha[65];
    if (!rehash && !file_identity_changed(f)) return 0;
    if (sha256_file(f->path, sha, err, sizeof err)) {
        snprintf(msg, msg_len, "%s", err);
        return -1;
    }
    if (strcmp(sha, f->sha) != 0) {
        snprintf(msg, msg_len, "%s '%s' changed during the session: %s sha256 was %.12s..., is now %.12s...", f->kind,
                 f->name, f->path, f->sha, sha);
        return -1;
    }
    stat(f->path, &f->st);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* the DB record */

static int bind_text_or_null(sqlite3_stmt *st, int i, const char *s) {
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

typedef struct ab_result {
    double a_med, b_med, a_mad, b_mad, a_min, a_max, b_min, b_max;
    double ratio, lo, hi, p, min_effect;
    const char *verdict;
    int n_a, n_b;
} ab_result;

static int db_insert_metric(sqlite3 *db, int64_t case_id, const char *name, double v, const char *unit,
                            const char *text) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT INTO metrics (case_id, name, value, unit, text) VALUES (?,?,?,?,?)", -1,
                                &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, case_id);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
        if (isfinite(v)) sqlite3_bind_double(st, 3, v);
        else sqlite3_bind_null(st, 3);
        bind_text_or_null(st, 4, unit);
        bind_text_or_null(st, 5, text);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc != SQLITE_OK;
}

static int64_t db_insert_artifact(sqlite3 *db, int64_t run_id, const char *kind, const char *name,
                                  const char *path, const char *sha, const ab_info *info) {
    sqlite3_stmt *st = NULL;
    int64_t id = -1;
    struct stat sb;
    int have = stat(path, &sb) == 0;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO artifacts (run_id, kind, name, path, sha256, size, mtime, engine_name, "
                           "engine_version, build_flags, device) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) == SQLITE_OK) {
        char mt[32] = "";
        if (have) {
            struct tm tm;
            gmtime_r(&sb.st_mtime, &tm);
            strftime(mt, sizeof mt, "%Y-%m-%dT%H:%M:%SZ", &tm);
        }
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, sha, -1, SQLITE_TRANSIENT);
        if (have) sqlite3_bind_int64(st, 6, (int64_t)sb.st_size);
        else sqlite3_bind_null(st, 6);
        bind_text_or_null(st, 7, have ? mt : NULL);
        bind_text_or_null(st, 8, info ? info->engine_name : NULL);
        bind_text_or_null(st, 9, info ? info->engine_version : NULL);
        bind_text_or_null(st, 10, info ? info->build_flags : NULL);
        bind_text_or_null(st, 11, info ? info->device : NULL);
        if (sqlite3_step(st) == SQLITE_DONE) id = sqlite3_last_insert_rowid(db);
    }
    sqlite3_finalize(st);
    return id;
}

/* sides: (2,) A and B; files: (n_files,) watched files; rounds: (n_rounds,) in execution order;
 * res: NULL when no verdict (a round crashed, or an interrupted session with under 3 pairs);
 * run_status: runs.status ('passed', 'failed', 'interrupted'). */
static int record_db(const char *db_path, const suite *s, const suite_case *c, const char *label,
                     const char *cmdline, const char *started, double duration, const ab_side sides[2],
                     const ab_file *files, int n_files, const ab_round *rounds, int n_rounds, const ab_result *res,
                     const char *run_status, const char *case_status, const char *case_error,
                     const char *params, int64_t *run_out, char *err, size_t err_len) {
    int ret = -1, in_tx = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char ended[32], suite_sha[65] = "";
    sysinfo si;
    int64_t run_id = -1, case_id = -1, art_a = -1, art_b = -1, art_model = -1, art_oracle = -1;

    now_iso8601(ended);
    sysinfo_collect(&si); /* the same machine facts `run` records */
    if (sha256_file(s->path, suite_sha, err, err_len)) goto cleanup;
    if (store_open(db_path, STORE_RW, &db, err, err_len)) goto cleanup;
    if (store_exec(db, "BEGIN IMMEDIATE", err, err_len)) goto cleanup;
    in_tx = 1;

#define AB_SQL_FAIL()                                                                  \
    do {                                                                               \
        snprintf(err, err_len, "%s: %s", db_path, sqlite3_errmsg(db));                 \
        goto cleanup;                                                                  \
    } while (0)
#define AB_SQL(sql)                                                                    \
    do {                                                                               \
        sqlite3_finalize(st);                                                          \
        st = NULL;                                                                     \
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) AB_SQL_FAIL();    \
    } while (0)
#define AB_STEP()                                                                      \
    do {                                                                               \
        if (sqlite3_step(st) != SQLITE_DONE) AB_SQL_FAIL();                            \
    } while (0)

    AB_SQL("INSERT INTO runs (started_at, ended_at, status, label, suite_name, suite_path, suite_sha256, host, os, "
           "cpu, gpu_name, gpu_driver, cuda_runtime, kestrel_version, git_describe, command_line, pid) "
           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    sqlite3_bind_text(st, 1, started, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, ended, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, run_status, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, label, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, s->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, s->path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, suite_sha, -1, SQLITE_TRANSIENT);
    bind_text_or_null(st, 8, si.host);
    bind_text_or_null(st, 9, si.os);
    bind_text_or_null(st, 10, si.cpu);
    bind_text_or_null(st, 11, si.gpu_name);
    bind_text_or_null(st, 12, si.gpu_driver);
    bind_text_or_null(st, 13, si.cuda_version);
    sqlite3_bind_text(st, 14, PACKAGE_VERSION, -1, SQLITE_STATIC);
    bind_text_or_null(st, 15, si.git_describe);
    sqlite3_bind_text(st, 16, cmdline, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 17, (int64_t)getpid());
    AB_STEP();
    run_id = sqlite3_last_insert_rowid(db);

    art_a = db_insert_artifact(db, run_id, "engine", "A", sides[0].lib, sides[0].sha,
                               sides[0].have_info ? &sides[0].info : NULL);
    art_b = db_insert_artifact(db, run_id, "engine", "B", sides[1].lib, sides[1].sha,
                               sides[1].have_info ? &sides[1].info : NULL);
    if (art_a < 0 || art_b < 0) AB_SQL_FAIL();
    for (int i = 0; i < n_files; i++) {
        int64_t id = db_insert_artifact(db, run_id, files[i].kind, files[i].name, files[i].path, files[i].sha, NULL);
        if (id < 0) AB_SQL_FAIL();
        if (strcmp(files[i].kind, "model") == 0) art_model = id;
        if (strcmp(files[i].kind, "oracle") == 0) art_oracle = id;
    }

    AB_SQL("INSERT INTO cases (run_id, name, kind, status, error, started_at, duration_s, engine_artifact, "
           "model_artifact, oracle_artifact, params) VALUES (?,?,'ab',?,?,?,?,?,?,?,?)");
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, c->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, case_status, -1, SQLITE_STATIC);
    bind_text_or_null(st, 4, case_error);
    sqlite3_bind_text(st, 5, started, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 6, duration);
    sqlite3_bind_int64(st, 7, art_b); /* the side under test */
    if (art_model >= 0) sqlite3_bind_int64(st, 8, art_model);
    else sqlite3_bind_null(st, 8);
    if (art_oracle >= 0) sqlite3_bind_int64(st, 9, art_oracle);
    else sqlite3_bind_null(st, 9);
    sqlite3_bind_text(st, 10, params, -1, SQLITE_TRANSIENT);
    AB_STEP();
    case_id = sqlite3_last_insert_rowid(db);

    int idx[2] = {0, 0};
    for (int i = 0; i < n_rounds; i++) {
        const ab_round *r = &rounds[i];
        if (strcmp(r->status, "pass") == 0) {
            AB_SQL("INSERT INTO ab_rounds (case_id, round, side, seq, median_ms, n_samples) VALUES (?,?,?,?,?,?)");
            sqlite3_bind_int64(st, 1, case_id);
            sqlite3_bind_int(st, 2, r->pair);
            sqlite3_bind_text(st, 3, r->side == 'A' ? "A" : "B", -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 4, r->seq);
            sqlite3_bind_double(st, 5, r->median);
            sqlite3_bind_int(st, 6, r->n);
            AB_STEP();
        }
        AB_SQL("INSERT INTO samples (case_id, series, idx, value) VALUES (?,?,?,?)");
        for (int k = 0; k < r->n; k++) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, case_id);
            sqlite3_bind_text(st, 2, r->side == 'A' ? "A.ms_per_token" : "B.ms_per_token", -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 3, idx[r->side == 'B']++);
            sqlite3_bind_double(st, 4, r->ms[k]);
            AB_STEP();
        }
    }
    sqlite3_finalize(st);
    st = NULL;

    if (res) {
        char txt[128];
        int bad = 0;
        bad |= db_insert_metric(db, case_id, "A.ms_per_token_median", res->a_med, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "B.ms_per_token_median", res->b_med, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "A.round_mad", res->a_mad, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "B.round_mad", res->b_mad, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "A.round_min", res->a_min, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "A.round_max", res->a_max, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "B.round_min", res->b_min, "ms", NULL);
        bad |= db_insert_metric(db, case_id, "B.round_max", res->b_max, "ms", NULL);
        for (int k = 0; k < 2; k++) {
            double bytes = sides[k].have_info ? (double)(sides[k].info.wbytes + sides[k].info.sbytes) : 0;
            double med = k ? res->b_med : res->a_med;
            if (bytes > 0 && med > 0)
                bad |= db_insert_metric(db, case_id, k ? "B.gbps_effective" : "A.gbps_effective",
                                        bytes / (med * 1e-3) / 1e9, "GB/s", "weights + state bytes / median");
        }
        snprintf(txt, sizeof txt, "%d/%d rounds", res->n_a, res->n_b);
        bad |= db_insert_metric(db, case_id, "n_rounds", res->n_a + res->n_b, NULL, txt);
        bad |= db_insert_metric(db, case_id, "ratio_median", res->ratio, "ratio", "B/A of round medians");
        bad |= db_insert_metric(db, case_id, "ratio_ci_lo", res->lo, "ratio", "bootstrap 95%");
        bad |= db_insert_metric(db, case_id, "ratio_ci_hi", res->hi, "ratio", "bootstrap 95%");
        bad |= db_insert_metric(db, case_id, "p_value", res->p, NULL, "Mann-Whitney U, round medians");
        bad |= db_insert_metric(db, case_id, "min_effect", res->min_effect, "fraction", NULL);
        bad |= db_insert_metric(db, case_id, "verdict", NAN, NULL, res->verdict);
        if (bad) AB_SQL_FAIL();
    }
    if (store_exec(db, "COMMIT", err, err_len)) goto cleanup;
    in_tx = 0;
    *run_out = run_id;
    ret = 0;
cleanup:
    sqlite3_finalize(st);
    if (in_tx) {
        char e2[256];
        store_exec(db, "ROLLBACK", e2, sizeof e2);
    }
    if (db) store_close(db);
    sysinfo_free(&si);
    return ret;
#undef AB_SQL_FAIL
#undef AB_SQL
#undef AB_STEP
}

/* ---------------------------------------------------------------------- */

static uint64_t ab_splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* engine options for one side: explicit, else the case engine's; threads=N appended like the runner does */
static char *side_options(const char *explicit_opts, const suite_case *c) {
    const char *base = explicit_opts ? explicit_opts : (c->engine && c->engine->options ? c->engine->options : "");
    if (c->threads > 0 && !strstr(base, "threads="))
        return *base ? xasprintf("%s,threads=%d", base, c->threads) : xasprintf("threads=%d", c->threads);
    return xstrdup(base);
}

static char *dir_of(const char *path) {
    const char *sl = strrchr(path, '/');
    if (!sl) return xstrdup(".");
    if (sl == path) return xstrdup("/");
    char *d = xmalloc((size_t)(sl - path) + 1);
    memcpy(d, path, (size_t)(sl - path));
    d[sl - path] = '\0';
    return d;
}

int cmd_ab(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "--round-child") == 0) return round_child(argc, argv);

    int ret = EXIT_USAGE;
    const char *suite_arg = NULL, *case_name = NULL, *spec[2] = {NULL, NULL}, *opts[2] = {NULL, NULL};
    const char *db_flag = NULL, *label_flag = NULL;
    long long pairs = AB_DEFAULT_PAIRS, seed = -1;
    int force = 0, order_ab = 0, order_set = 0; /* --order ab: A first in every pair; default balanced */
    suite *s = NULL;
    ab_side sides[2];
    ab_file files[3];
    int n_files = 0;
    ab_round *rounds = NULL;
    int n_rounds = 0;
    char err[1024], msg[1024];
    char *cmdline = NULL, *label = NULL, *params = NULL, *case_error = NULL, *dbdir = NULL;
    double *am = NULL, *bm = NULL;
    memset(sides, 0, sizeof sides);

    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(f, "--force") == 0) { force = 1; continue; }
        if (f[0] != '-') {
            if (suite_arg) { cli_error("ab: unexpected argument '%s'", f); return cli_usage("ab"); }
            suite_arg = f;
            continue;
        }
        if (!v) { cli_error("ab: option '%s' needs a value", f); return cli_usage("ab"); }
        if (strcmp(f, "--case") == 0) case_name = v;
        else if (strcmp(f, "--a") == 0) spec[0] = v;
        else if (strcmp(f, "--b") == 0) spec[1] = v;
        else if (strcmp(f, "--a-options") == 0) opts[0] = v;
        else if (strcmp(f, "--b-options") == 0) opts[1] = v;
        else if (strcmp(f, "--db") == 0) db_flag = v;
        else if (strcmp(f, "--label") == 0) label_flag = v;
        else if (strcmp(f, "--rounds") == 0) {
            if (parse_int(v, &pairs) || pairs < 3 || pairs > 1000) {
                cli_error("ab: --rounds '%s': expected an integer in 3..1000 (pairs of rounds)", v);
                return EXIT_USAGE;
            }
        } else if (strcmp(f, "--order") == 0) {
            if (strcmp(v, "ab") && strcmp(v, "balanced")) {
                cli_error("ab: --order '%s': expected ab or balanced (--seed N for a random order)", v);
                return EXIT_USAGE;
            }
            order_ab = strcmp(v, "ab") == 0;
            order_set = 1;
        } else if (strcmp(f, "--seed") == 0) {
            if (parse_int(v, &seed) || seed < 0) {
                cli_error("ab: --seed '%s': expected a non-negative integer", v);
                return EXIT_USAGE;
            }
        } else {
            cli_error("ab: unknown option '%s'", f);
            return cli_usage("ab");
        }
        i++;
    }
    if (order_set && seed >= 0) {
        cli_error("ab: --order and --seed exclude each other (--seed N draws each pair's order)");
        return EXIT_USAGE;
    }
    if (!suite_arg || !case_name || !spec[0] || !spec[1]) {
        cli_error("ab: missing %s", !suite_arg ? "SUITE.yaml" : !case_name ? "--case NAME" : !spec[0] ? "--a LIB_A" : "--b LIB_B");
        return cli_usage("ab");
    }

    /* ---- validate everything before the first round ---- */
    if (suite_load(suite_arg, &s, err, sizeof err)) {
        cli_error("%s", err);
        goto cleanup;
    }
    const suite_case *c = find_case(s, case_name);
    if (!c) {
        cli_error("%s: no case '%s'", suite_arg, case_name);
        goto cleanup;
    }
    if (c->kind != CASE_DECODE_BENCH) {
        cli_error("%s:%d:%d: case '%s' is a %s case; ab needs a decode-bench case", s->path, c->pos.line, c->pos.col,
                  c->name, suite_case_kind_name(c->kind));
        goto cleanup;
    }
    double min_effect = c->gates.min_effect_set ? c->gates.min_effect : 0.03;
    for (int k = 0; k < 2; k++) {
        sides[k].name = k ? 'B' : 'A';
        sides[k].lib = engine_resolve(spec[k], err, sizeof err);
        if (!sides[k].lib) {
            cli_error("ab: --%c: %s", k ? 'b' : 'a', err);
            goto cleanup;
        }
        if (sha256_file(sides[k].lib, sides[k].sha, err, sizeof err)) {
            cli_error("%s", err);
            goto cleanup;
        }
        sides[k].options = side_options(opts[k], c);
    }
    int lib_differs = strcmp(sides[0].sha, sides[1].sha) != 0;
    int opts_differ = strcmp(sides[0].options, sides[1].options) != 0;
    if (lib_differs && opts_differ && !force) {
        cli_error("ab: refusing: A and B differ in both the library (%.12s... vs %.12s...) and the options "
                  "(\"%s\" vs \"%s\"); change one thing at a time or pass --force",
                  sides[0].sha, sides[1].sha, sides[0].options, sides[1].options);
        goto cleanup;
    }
    const suite_file_ref *refs[2] = {c->model, c->oracle};
    const char *kinds[2] = {"model", "oracle"};
    for (int k = 0; k < 2; k++) {
        if (!refs[k]) continue;
        ab_file *f = &files[n_files];
        f->kind = kinds[k];
        f->name = refs[k]->name;
        f->path = refs[k]->path;
        if (stat(f->path, &f->st) != 0) {
            cli_error("%s: %s '%s': %s", s->path, kinds[k], f->name, strerror(errno));
            goto cleanup;
        }
        if (sha256_file(f->path, f->sha, err, sizeof err)) { /* err has the reason; errno may not */
            cli_error("%s: %s '%s': %s", s->path, kinds[k], f->name, err);
            goto cleanup;
        }
        n_files++;
    }
    if (c->prompts && c->prompts->path) {
        ab_file *f = &files[n_files];
        f->kind = "prompts";
        f->name = c->prompts->name;
        f->path = c->prompts->path;
        if (stat(f->path, &f->st) != 0) {
            cli_error("%s: prompts '%s': %s", s->path, f->name, strerror(errno));
            goto cleanup;
        }
        if (sha256_file(f->path, f->sha, err, sizeof err)) {
            cli_error("%s: prompts '%s': %s", s->path, f->name, err);
            goto cleanup;
        }
        n_files++;
    }
    const char *db_path = default_db_path(db_flag);
    dbdir = dir_of(db_path);
    if (access(dbdir, W_OK) != 0) {
        cli_error("ab: --db %s: directory %s is not writable: %s", db_path, dbdir, strerror(errno));
        goto cleanup;
    }

    /* ---- the session ---- */
    if (runner_install_signals(err, sizeof err)) { /* from here a SIGINT/SIGTERM records what is done */
        cli_error("ab: %s", err);
        goto cleanup;
    }
    char started[32];
    now_iso8601(started);
    double t_start = now_seconds();
    {
        size_t len = 1;
        for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 3;
        cmdline = xmalloc(len + 16);
        strcpy(cmdline, "kestrel-eval");
        for (int i = 0; i < argc; i++) {
            strcat(cmdline, " ");
            strcat(cmdline, argv[i]);
        }
    }
    const char *base_a = strrchr(sides[0].lib, '/') ? strrchr(sides[0].lib, '/') + 1 : sides[0].lib;
    const char *base_b = strrchr(sides[1].lib, '/') ? strrchr(sides[1].lib, '/') + 1 : sides[1].lib;
    label = label_flag ? xasprintf("ab: %s", label_flag)
                       : xasprintf("ab: %s: A=%s%s%s%s vs B=%s%s%s%s", c->name, base_a, opts_differ ? " [" : "",
                                   opts_differ ? sides[0].options : "", opts_differ ? "]" : "", base_b,
                                   opts_differ ? " [" : "", opts_differ ? sides[1].options : "", opts_differ ? "]" : "");
    printf("ab: suite %s, case %s (decode-bench: P=%d, T=%d, warmup %d, %d iterations), %lld pairs, order %s",
           s->name, c->name, c->prompt_len, c->step_tokens > 0 ? c->step_tokens : 1, c->warmup, c->iterations > 0 ? c->iterations : 20, pairs,
           seed >= 0 ? "seeded" : order_ab ? "A then B" : "balanced (AB, BA, AB, ...)");
    if (seed >= 0) printf(" (seed %lld)", seed);
    printf("\n  A: %s (sha256 %.16s) options \"%s\"\n  B: %s (sha256 %.16s) options \"%s\"\n", sides[0].lib,
           sides[0].sha, sides[0].options, sides[1].lib, sides[1].sha, sides[1].options);
    for (int i = 0; i < n_files; i++)
        printf("  %s %s: %s (sha256 %.16s)\n", files[i].kind, files[i].name, files[i].path, files[i].sha);
    printf("%5s %5s %12s %12s %8s\n", "pair", "order", "A ms/tok", "B ms/tok", "B/A");
    fflush(stdout);

    rounds = xcalloc((size_t)(2 * pairs), sizeof(ab_round));
    int crashed = 0, stop_sig = 0, stop_pair = 0; /* stop_sig: SIGINT/SIGTERM during pair stop_pair */
    const char *crash_status = "crash"; /* or "timeout": the cases.status of a failed session */
    for (int pr = 1; pr <= pairs && !crashed && !stop_sig; pr++) {
        /* balanced: every other pair runs B first, so a "second process runs slower/warmer" trace (seen:
         * 0.2% on the CI machine, docs/methodology.md) and a linear drift cancel instead of siding with B */
        int b_first = seed >= 0 ? (int)(ab_splitmix((uint64_t)seed * 0x10001ull + (uint64_t)pr) & 1)
                                : !order_ab && pr % 2 == 0;
        double med[2] = {NAN, NAN};
        for (int j = 0; j < 2 && !crashed && !stop_sig; j++) {
            int k = b_first ? 1 - j : j;
            if (runner_signal()) { /* between rounds */
                stop_sig = runner_signal();
                stop_pair = pr;
                break;
            }
            for (int f = 0; f < n_files; f++)
                if (file_check(&files[f], 0, msg, sizeof msg)) {
                    if (!force) {
                        cli_error("ab: refusing: %s", msg);
                        goto cleanup;
                    }
                    cli_error("ab: warning (--force): %s", msg);
                }
            ab_round *r = &rounds[n_rounds];
            r->side = sides[k].name;
            r->pair = pr;
            r->seq = n_rounds;
            n_rounds++;
            int rc = run_round(s->path, c->name, &sides[k], &sides[1 - k], force, c->timeout_s, r, msg, sizeof msg);
            if (rc == 4) {
                stop_sig = runner_signal();
                stop_pair = pr;
                break;
            }
            if (rc == 3) {
                cli_error("ab: refusing: %s", msg);
                goto cleanup;
            }
            if (rc == 2) {
                cli_error("ab: round %d (%c, %s): %s", r->seq + 1, r->side, sides[k].lib, msg);
                goto cleanup;
            }
            if (rc == 1) {
                cli_error("ab: round %d (%c) %s: %s", r->seq + 1, r->side, r->status, msg);
                case_error = xasprintf("round %d (%c) %s: %s", r->seq + 1, r->side, r->status, r->error ? r->error : msg);
                crashed = 1;
                if (strcmp(r->status, "timeout") == 0) crash_status = "timeout";
                break;
            }
            med[k] = r->median;
        }
        if (!crashed && !stop_sig)
            printf("%5d %5s %12.4f %12.4f %8.4f\n", pr, b_first ? "BA" : "AB", med[0], med[1], med[1] / med[0]);
        fflush(stdout);
    }
    if (stop_sig) { /* the unfinished pair's rounds go: the recorded pairs stay balanced */
        for (int i = 2 * (stop_pair - 1); i < n_rounds; i++) {
            free(rounds[i].ms);
            free(rounds[i].error);
            memset(&rounds[i], 0, sizeof rounds[i]);
        }
        n_rounds = 2 * (stop_pair - 1);
        const char *abbrev = sigabbrev_np(stop_sig);
        case_error = xasprintf("interrupted by SIG%s during pair %d of %lld: %d complete pair(s) recorded%s",
                               abbrev ? abbrev : "?", stop_pair, pairs, stop_pair - 1,
                               stop_pair - 1 < 3 ? ", too few for a verdict" : "");
        cli_error("ab: %s", case_error);
    }
    for (int f = 0; f < n_files && !crashed && !stop_sig; f++)
        if (file_check(&files[f], 1, msg, sizeof msg)) {
            if (!force) {
                cli_error("ab: refusing: %s", msg);
                goto cleanup;
            }
            cli_error("ab: warning (--force): %s", msg);
        }

    /* ---- statistics over the round medians ---- */
    int na = 0, nb = 0;
    am = xmalloc(sizeof(double) * (size_t)(n_rounds + 1));
    bm = xmalloc(sizeof(double) * (size_t)(n_rounds + 1));
    for (int i = 0; i < n_rounds; i++) {
        if (strcmp(rounds[i].status, "pass") != 0) continue;
        if (rounds[i].side == 'A') am[na++] = rounds[i].median;
        else bm[nb++] = rounds[i].median;
    }
    ab_result res = {0};
    int have_res = !crashed && na > 0 && nb > 0 && (!stop_sig || (na >= 3 && nb >= 3));
    if (have_res) {
        res.n_a = na;
        res.n_b = nb;
        res.a_med = stats_median(am, na);
        res.b_med = stats_median(bm, nb);
        res.a_mad = stats_mad(am, na);
        res.b_mad = stats_mad(bm, nb);
        res.a_min = stats_min(am, na);
        res.a_max = stats_max(am, na);
        res.b_min = stats_min(bm, nb);
        res.b_max = stats_max(bm, nb);
        res.ratio = res.b_med / res.a_med;
        stats_bootstrap_median_ratio(am, na, bm, nb, AB_BOOT, 0.95, seed >= 0 ? (uint64_t)seed : 0x6b65737472656cull,
                                     &res.lo, &res.hi);
        res.p = stats_mann_whitney_p(am, na, bm, nb, NULL);
        res.min_effect = min_effect;
        int ci_excludes_1 = res.lo > 1.0 || res.hi < 1.0;
        int big_enough = fabs(res.ratio - 1.0) >= min_effect;
        /* a consistent but small difference is said so, not folded into "noise" */
        res.verdict = !ci_excludes_1 ? "no difference beyond noise"
                      : big_enough   ? (res.ratio > 1.0 ? "B slower" : "B faster")
                                     : (res.ratio > 1.0 ? "B slower, below min_effect" : "B faster, below min_effect");
        printf("%-2s %7s %12s %10s %12s %12s\n", "", "rounds", "median ms", "MAD", "min", "max");
        printf("%-2s %7d %12.4f %10.4f %12.4f %12.4f\n", "A", na, res.a_med, res.a_mad, res.a_min, res.a_max);
        printf("%-2s %7d %12.4f %10.4f %12.4f %12.4f\n", "B", nb, res.b_med, res.b_mad, res.b_min, res.b_max);
        if (sides[0].info.wbytes + sides[0].info.sbytes > 0)
            printf("effective GB/s: A %.1f, B %.1f (weights + state bytes per token over the median)\n",
                   (double)(sides[0].info.wbytes + sides[0].info.sbytes) / (res.a_med * 1e6),
                   (double)(sides[1].info.wbytes + sides[1].info.sbytes) / (res.b_med * 1e6));
        printf("ratio B/A %.4f  95%% CI [%.4f, %.4f]  Mann-Whitney p %.3g  min_effect %.1f%%\n", res.ratio, res.lo,
               res.hi, res.p, 100.0 * min_effect);
        printf("verdict: %s\n", res.verdict);
    }

    /* ---- the record ---- */
    char *esc_a = json_quote(sides[0].options), *esc_b = json_quote(sides[1].options), *esc_case = json_quote(c->name);
    params = xasprintf("{\"case\":%s,\"pairs\":%lld,\"order\":\"%s\",\"seed\":%lld,\"prompt_len\":%d,"
                       "\"step_tokens\":%d,\"warmup\":%d,\"iterations\":%d,\"min_effect\":%g,\"bootstrap\":%d,"
                       "\"force\":%s,\"a_options\":%s,\"b_options\":%s}",
                       esc_case, pairs, seed >= 0 ? "seeded" : order_ab ? "ab" : "balanced", seed, c->prompt_len,
                       c->step_tokens > 0 ? c->step_tokens : 1, c->warmup, c->iterations > 0 ? c->iterations : 20, min_effect, AB_BOOT,
                       force ? "true" : "false", esc_a, esc_b);
    free(esc_a);
    free(esc_b);
    free(esc_case);
    int64_t run_id = -1;
    if (record_db(db_path, s, c, label, cmdline, started, now_seconds() - t_start, sides, files, n_files, rounds,
                  n_rounds, have_res ? &res : NULL, stop_sig ? "interrupted" : crashed ? "failed" : "passed",
                  stop_sig ? "error" : crashed ? crash_status : "pass", case_error, params, &run_id, err, sizeof err)) {
        cli_error("%s", err);
        goto cleanup;
    }
    printf("recorded: run %lld (%s) in %s%s\n", (long long)run_id, label, db_path, stop_sig ? " (interrupted)" : "");
    ret = stop_sig ? 128 + stop_sig : crashed ? EXIT_FAIL : EXIT_OK;

cleanup:
    for (int i = 0; rounds && i < n_rounds; i++) {
        free(rounds[i].ms);
        free(rounds[i].error);
    }
    free(rounds);
    for (int k = 0; k < 2; k++) {
        free(sides[k].lib);
        free((char *)sides[k].options);
        if (sides[k].have_info) info_free(&sides[k].info);
    }
    free(am);
    free(bm);
    free(cmdline);
    free(label);
    free(params);
    free(case_error);
    free(dbdir);
    suite_free(s);
    return ret;
}
