/*
 * runner.c - crash isolation for `kestrel-eval run`: each case runs in a
 * forked child process (its own process group, killed when the parent dies)
 * that streams length-prefixed records back through a pipe (runner.h); its
 * stderr comes through a second pipe and the parent keeps the tail. The
 * parent enforces the timeout (SIGKILL) and turns signals into crash reports.
 * What it is not: a database writer; cmd_run.c stores what comes back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "runner.h"

#define STDERR_KEEP (32 * 1024) /* bytes of the child's stderr kept */
#define STDERR_TAIL_LINES 20
#define MAX_RECORD ((uint32_t)1 << 31)

const char *case_status_name(int s) {
    static const char *const names[] = {"pass", "fail", "crash", "timeout", "error", "skip"};
    return s >= 0 && s <= CASE_SKIP ? names[s] : "error";
}

/* ================================ child side ================================ */

struct emitter {
    int fd;
    unsigned char *buf; /* (cap,) pending bytes */
    size_t len, cap;
    int failed;
};

static void write_all(emitter *em, const void *p, size_t n) {
    const unsigned char *c = p;
    while (n > 0 && !em->failed) {
        ssize_t w = write(em->fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            em->failed = 1; /* the parent is gone; nothing left to do but exit */
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

static void em_flush(emitter *em) {
    write_all(em, em->buf, em->len);
    em->len = 0;
}

static void em_put(emitter *em, const void *p, size_t n) {
    if (em->len + n > em->cap) {
        em_flush(em);
        if (n > em->cap) {
            write_all(em, p, n);
            return;
        }
    }
    memcpy(em->buf + em->len, p, n);
    em->len += n;
}

/* Record assembly: fields go into a scratch buffer, then header + payload. */
typedef struct recbuf { unsigned char *p; size_t len, cap; } recbuf;

static void rb_put(recbuf *r, const void *p, size_t n) {
    if (r->len + n > r->cap) {
        while (r->len + n > r->cap) r->cap = r->cap ? r->cap * 2 : 256;
        r->p = xrealloc(r->p, r->cap);
    }
    memcpy(r->p + r->len, p, n);
    r->len += n;
}
static void rb_str(recbuf *r, const char *s) {
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    rb_put(r, &n, 4);
    if (n) rb_put(r, s, n);
}
static void rb_i32(recbuf *r, int32_t v) { rb_put(r, &v, 4); }
static void rb_i64(recbuf *r, int64_t v) { rb_put(r, &v, 8); }
static void rb_f64(recbuf *r, double v) { rb_put(r, &v, 8); }

static void em_record(emitter *em, uint32_t type, recbuf *r, const void *tail, size_t tail_n) {
    uint32_t hdr[2] = {type, (uint32_t)(r->len + tail_n)};
    em_put(em, hdr, sizeof hdr);
    em_put(em, r->p, r->len);
    if (tail_n) em_put(em, tail, tail_n);
    free(r->p);
    r->p = NULL;
    r->len = r->cap = 0;
}

void emit_metric(emitter *em, const char *name, int has_value, double value, const char *unit, const char *text,
                 const char *gate, int gate_pass) {
    recbuf r = {0};
    rb_str(&r, name);
    rb_str(&r, unit);
    rb_str(&r, text);
    rb_str(&r, gate);
    rb_i32(&r, has_value && !isnan(value));
    rb_f64(&r, value);
    rb_i32(&r, gate_pass);
    em_record(em, REC_METRIC, &r, NULL, 0);
}

void emit_sample(emitter *em, const char *series, int idx, double value) {
    recbuf r = {0};
    rb_str(&r, series);
    rb_i32(&r, idx);
    rb_f64(&r, value);
    em_record(em, REC_SAMPLE, &r, NULL, 0);
}

void emit_output(emitter *em, const char *name, const char *dtype, const int64_t *shape, int ndim,
                 const void *data, int64_t n_elements) {
    /* shape: (ndim,), data: (n_elements,) of 4-byte elements */
    recbuf r = {0};
    rb_str(&r, name);
    rb_str(&r, dtype);
    rb_i32(&r, ndim);
    for (int i = 0; i < ndim; i++) rb_i64(&r, shape[i]);
    rb_i64(&r, n_elements);
    em_record(em, REC_OUTPUT, &r, data, (size_t)n_elements * 4);
}

void emit_profile(emitter *em, const char *kernel, int64_t calls, double total_ms, double ms_per_step) {
    recbuf r = {0};
    rb_str(&r, kernel);
    rb_i64(&r, calls);
    rb_f64(&r, total_ms);
    rb_f64(&r, ms_per_step);
    em_record(em, REC_PROFILE, &r, NULL, 0);
}

static void emit_engine_record(emitter *em, uint32_t type, const char *name, const char *version,
                               const char *build_flags, const char *device) {
    recbuf r = {0};
    rb_str(&r, name);
    rb_str(&r, version);
    rb_str(&r, build_flags);
    rb_str(&r, device);
    em_record(em, type, &r, NULL, 0);
}

void emit_engine(emitter *em, const char *name, const char *version, const char *build_flags, const char *device) {
    emit_engine_record(em, REC_ENGINE, name, version, build_flags, device);
}

void emit_ref_engine(emitter *em, const char *name, const char *version, const char *build_flags,
                     const char *device) {
    emit_engine_record(em, REC_REF_ENGINE, name, version, build_flags, device);
}

static void emit_status(emitter *em, int status, const char *error) {
    recbuf r = {0};
    rb_i32(&r, status);
    rb_str(&r, error);
    em_record(em, REC_STATUS, &r, NULL, 0);
}

static void child_main(int res_fd, int err_fd, pid_t parent, runner_child_fn fn, void *arg) {
    /* own process group, so a timeout kills everything the engine started; die with the parent */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(3);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    dup2(err_fd, STDERR_FILENO);
    dup2(err_fd, STDOUT_FILENO);
    close(err_fd);
    emitter em = {.fd = res_fd, .cap = 1 << 20};
    em.buf = xmalloc(em.cap);
    const char *error = NULL;
    int status = fn(arg, &em, &error);
    emit_status(&em, status, error && *error ? error : NULL);
    em_flush(&em);
    _exit(em.failed ? 3 : 0);
}

/* ================================ parent side ================================ */

static volatile sig_atomic_t got_signal;
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    int saved = errno;
    got_signal = sig;
    if (sig_pipe[1] >= 0) {
        char c = 1;
        ssize_t w = write(sig_pipe[1], &c, 1);
        (void)w;
    }
    errno = saved;
}

int runner_install_signals(char *err, size_t err_len) {
    if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, err_len, "cannot create a pipe: %s", strerror(errno));
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int runner_signal(void) { return got_signal; }

int runner_signal_fd(void) { return sig_pipe[0]; }

typedef struct bytes { unsigned char *p; size_t len, cap; } bytes;

static void bytes_add(bytes *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        while (b->len + n > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Read what is available; 1 on EOF, 0 otherwise. keep_tail > 0 trims b to its last keep_tail bytes. */
static int drain(int fd, bytes *b, size_t keep_tail) {
    unsigned char chunk[65536];
    for (int round = 0; round < 64; round++) { /* bounded, so a chatty child cannot starve the timeout */
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            bytes_add(b, chunk, (size_t)n);
            if (keep_tail && b->len > 2 * keep_tail) {
                memmove(b->p, b->p + b->len - keep_tail, keep_tail);
                b->len = keep_tail;
            }
            continue;
        }
        if (n == 0) return 1;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return 1; /* read error: treat as closed */
    }
    return 0;
}

/* The last STDERR_TAIL_LINES lines of the child's stderr, malloc'd ("" when empty). */
static char *stderr_tail(const bytes *b) {
    size_t end = b->len;
    while (end > 0 && (b->p[end - 1] == '\n' || b->p[end - 1] == '\r')) end--;
    size_t start = end;
    int lines = 0;
    while (start > 0) {
        if (b->p[start - 1] == '\n' && ++lines == STDERR_TAIL_LINES) break;
        start--;
    }
    char *s = xmalloc(end - start + 1);
    for (size_t i = start; i < end; i++) {
        unsigned char ch = b->p[i];
        s[i - start] = (ch == '\n' || ch == '\t' || (ch >= 32 && ch != 127) || ch >= 128) ? (char)ch : '?';
    }
    s[end - start] = '\0';
    return s;
}

/* Parse cursor over one record's payload. */
typedef struct cur { const unsigned char *p; size_t n; int bad; } cur;

static void cur_get(cur *c, void *out, size_t n) {
    if (c->bad || c->n < n) {
        c->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, c->p, n);
    c->p += n;
    c->n -= n;
}
static int32_t cur_i32(cur *c) { int32_t v; cur_get(c, &v, 4); return v; }
static int64_t cur_i64(cur *c) { int64_t v; cur_get(c, &v, 8); return v; }
static double cur_f64(cur *c) { double v; cur_get(c, &v, 8); return v; }
/* malloc'd string, or NULL for "" when empty_null */
static char *cur_str(cur *c, int empty_null) {
    uint32_t n = (uint32_t)cur_i32(c);
    if (c->bad || c->n < n) {
        c->bad = 1;
        return NULL;
    }
    if (n == 0 && empty_null) return NULL;
    char *s = xmalloc((size_t)n + 1);
    memcpy(s, c->p, n);
    s[n] = '\0';
    c->p += n;
    c->n -= n;
    return s;
}

#define GROW(arr, n) ((arr) = xrealloc((arr), sizeof *(arr) * (size_t)((n) + 1)), &(arr)[(n)++])

static void rec_engine_free(rec_engine *en) {
    free(en->name);
    free(en->version);
    free(en->build_flags);
    free(en->device);
    memset(en, 0, sizeof *en);
}

/* Parse the record stream into res. 0 ok (with a STATUS record), else err. */
static int parse_records(const bytes *b, case_result *res, char *err, size_t err_len) {
    size_t off = 0;
    int have_status = 0;
    while (off < b->len) {
        uint32_t hdr[2];
        if (b->len - off < sizeof hdr) {
            snprintf(err, err_len, "truncated record header at byte %zu", off);
            return -1;
        }
        memcpy(hdr, b->p + off, sizeof hdr);
        off += sizeof hdr;
        if (hdr[1] > b->len - off || hdr[1] >= MAX_RECORD) {
            snprintf(err, err_len, "record type %u at byte %zu claims %u bytes, %zu left", hdr[0], off - 8, hdr[1],
                     b->len - off);
            return -1;
        }
        cur c = {b->p + off, hdr[1], 0};
        off += hdr[1];
        switch (hdr[0]) {
        case REC_METRIC: {
            rec_metric *m = GROW(res->metrics, res->n_metrics);
            m->name = cur_str(&c, 0);
            m->unit = cur_str(&c, 1);
            m->text = cur_str(&c, 1);
            m->gate = cur_str(&c, 1);
            m->has_value = cur_i32(&c);
            m->value = cur_f64(&c);
            m->gate_pass = cur_i32(&c);
            break;
        }
        case REC_SAMPLE: {
            rec_sample *s = GROW(res->samples, res->n_samples);
            s->series = cur_str(&c, 0);
            s->idx = cur_i32(&c);
            s->value = cur_f64(&c);
            break;
        }
        case REC_OUTPUT: {
            rec_output *o = GROW(res->outputs, res->n_outputs);
            memset(o, 0, sizeof *o);
            o->name = cur_str(&c, 0);
            char *dt = cur_str(&c, 0);
            snprintf(o->dtype, sizeof o->dtype, "%s", dt ? dt : "");
            free(dt);
            o->ndim = cur_i32(&c);
            if (o->ndim < 1 || o->ndim > 8) {
                c.bad = 1;
                o->ndim = 0;
                break;
            }
            for (int i = 0; i < o->ndim; i++) o->shape[i] = cur_i64(&c);
            o->n_elements = cur_i64(&c);
            if (c.bad || o->n_elements < 0 || (uint64_t)o->n_elements * 4 != c.n) {
                c.bad = 1;
                break;
            }
            o->data = xmalloc(c.n);
            cur_get(&c, o->data, c.n);
            break;
        }
        case REC_PROFILE: {
            rec_profile *p = GROW(res->profile, res->n_profile);
            p->kernel = cur_str(&c, 0);
            p->calls = cur_i64(&c);
            p->total_ms = cur_f64(&c);
            p->ms_per_step = cur_f64(&c);
            break;
        }
        case REC_ENGINE:
        case REC_REF_ENGINE: {
            rec_engine *en = hdr[0] == REC_ENGINE ? &res->engine : &res->ref_engine;
            rec_engine_free(en);
            en->name = cur_str(&c, 1);
            en->version = cur_str(&c, 1);
            en->build_flags = cur_str(&c, 1);
            en->device = cur_str(&c, 1);
            en->have = 1;
            break;
        }
        case REC_STATUS:
            res->status = cur_i32(&c);
            free(res->error);
            res->error = cur_str(&c, 1);
            if (res->status != CASE_PASS && res->status != CASE_FAIL && res->status != CASE_ERROR &&
                res->status != CASE_SKIP)
                c.bad = 1;
            have_status = 1;
            break;
        default:
            snprintf(err, err_len, "unknown record type %u at byte %zu", hdr[0], off - hdr[1] - 8);
            return -1;
        }
        if (c.bad || c.n != 0) {
            snprintf(err, err_len, "malformed record type %u ending at byte %zu", hdr[0], off);
            return -1;
        }
    }
    if (!have_status) {
        snprintf(err, err_len, "no status record");
        return -1;
    }
    return 0;
}

void case_result_free(case_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n_metrics; i++) {
        free(r->metrics[i].name);
        free(r->metrics[i].unit);
        free(r->metrics[i].text);
        free(r->metrics[i].gate);
    }
    for (int i = 0; i < r->n_samples; i++) free(r->samples[i].series);
    for (int i = 0; i < r->n_outputs; i++) {
        free(r->outputs[i].name);
        free(r->outputs[i].data);
    }
    for (int i = 0; i < r->n_profile; i++) free(r->profile[i].kernel);
    free(r->metrics);
    free(r->samples);
    free(r->outputs);
    free(r->profile);
    free(r->error);
    rec_engine_free(&r->engine);
    rec_engine_free(&r->ref_engine);
    memset(r, 0, sizeof *r);
}

const rec_metric *case_result_metric(const case_result *r, const char *name) {
    for (int i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i].name, name) == 0) return &r->metrics[i];
    return NULL;
}

static char *with_tail(const char *head, const bytes *errb) {
    char *tail = stderr_tail(errb);
    char *s = *tail ? xasprintf("%s\nstderr tail:\n%s", head, tail) : xasprintf("%s\n(stderr was empty)", head);
    free(tail);
    return s;
}

int runner_exec(runner_child_fn fn, void *arg, double timeout_s, runner_tick_fn tick, void *tick_ud,
                case_result *res, char *err, size_t err_len) {
    int res_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    bytes resb = {0}, errb = {0};
    pid_t pid = -1;
    int ret = RUNNER_SYSERR;
    memset(res, 0, sizeof *res);
    if (pipe2(res_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        snprintf(err, err_len, "cannot create pipes: %s", strerror(errno));
        goto cleanup;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    double t0 = now_seconds();
    pid = fork();
    if (pid < 0) {
        snprintf(err, err_len, "cannot fork: %s", strerror(errno));
        goto cleanup;
    }
    if (pid == 0) {
        close(res_pipe[0]);
        close(err_pipe[0]);
        child_main(res_pipe[1], err_pipe[1], parent, fn, arg);
    }
    setpgid(pid, pid); /* also from the parent: no race with the kill below */
    close(res_pipe[1]);
    close(err_pipe[1]);
    res_pipe[1] = err_pipe[1] = -1;
    fcntl(res_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);

    int res_eof = 0, err_eof = 0, timed_out = 0, interrupted = 0;
    while (!(res_eof && err_eof)) {
        double elapsed = now_seconds() - t0;
        if (runner_signal()) {
            interrupted = 1;
            break;
        }
        if (timeout_s > 0 && elapsed >= timeout_s) {
            timed_out = 1;
            break;
        }
        int wait_ms = 200;
        if (timeout_s > 0 && (timeout_s - elapsed) * 1000 < wait_ms) wait_ms = (int)((timeout_s - elapsed) * 1000) + 1;
        struct pollfd pf[3];
        int np = 0;
        if (!res_eof) pf[np++] = (struct pollfd){.fd = res_pipe[0], .events = POLLIN};
        if (!err_eof) pf[np++] = (struct pollfd){.fd = err_pipe[0], .events = POLLIN};
        if (sig_pipe[0] >= 0) pf[np++] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
        int pr = poll(pf, (nfds_t)np, wait_ms);
        if (pr < 0 && errno != EINTR) {
            snprintf(err, err_len, "poll: %s", strerror(errno));
            kill(-pid, SIGKILL);
            goto reap;
        }
        if (!res_eof) res_eof = drain(res_pipe[0], &resb, 0);
        if (!err_eof) err_eof = drain(err_pipe[0], &errb, STDERR_KEEP);
        if (tick) tick(tick_ud, now_seconds() - t0);
    }
    if (timed_out || interrupted) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
reap:;
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, 0);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            snprintf(err, err_len, "waitpid: %s", strerror(errno));
            pid = -1;
            goto cleanup;
        }
    }
    pid = -1;
    if (!err_eof) drain(err_pipe[0], &errb, STDERR_KEEP);
    res->duration_s = now_seconds() - t0;
    if (interrupted) {
        ret = RUNNER_INTERRUPTED;
        goto cleanup;
    }
    if (timed_out) {
        res->status = CASE_TIMEOUT;
        char head[128];
        snprintf(head, sizeof head, "timed out after %.1f s (child killed with SIGKILL)", timeout_s);
        res->error = with_tail(head, &errb);
    } else if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        const char *abbrev = sigabbrev_np(sig);
        char head[160];
        snprintf(head, sizeof head, "killed by SIG%s (%s)%s", abbrev ? abbrev : "?", strsignal(sig),
                 WCOREDUMP(st) ? ", core dumped" : "");
        res->status = CASE_CRASH;
        res->error = with_tail(head, &errb);
    } else {
        char perr[256];
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (parse_records(&resb, res, perr, sizeof perr) != 0) {
            case_result_free(res);
            char head[400];
            if (code != 0)
                snprintf(head, sizeof head, "case process exited with status %d before reporting a result", code);
            else
                snprintf(head, sizeof head, "malformed result stream from the case process: %s", perr);
            res->status = CASE_ERROR;
            res->error = with_tail(head, &errb);
        } else if (code != 0) {
            char head[128];
            snprintf(head, sizeof head, "case process exited with status %d after reporting", code);
            res->status = CASE_ERROR;
            free(res->error);
            res->error = with_tail(head, &errb);
        } else if (res->status == CASE_ERROR && errb.len > 0) {
            char *e = with_tail(res->error ? res->error : "error", &errb);
            free(res->error);
            res->error = e;
        }
    }
    res->duration_s = now_seconds() - t0;
    ret = RUNNER_DONE;
cleanup:
    if (pid > 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    for (int i = 0; i < 2; i++) {
        if (res_pipe[i] >= 0) close(res_pipe[i]);
        if (err_pipe[i] >= 0) close(err_pipe[i]);
    }
    free(resb.p);
    free(errb.p);
    return ret;
}
