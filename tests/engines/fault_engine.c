/*
 * fault_engine.c - libkestrel-fault.so, a TEST engine: it dlopens an inner
 * engine and forwards every call to it, and on request injects a fault or a
 * delay, so the runner's crash isolation, timeouts and the regression
 * detection of `report` / `ab` can be tested on real model outputs.
 *
 * Its own open() options (stripped before the rest go to the inner engine):
 *   inner=PATH        inner engine library (default: libkestrel-cpu.so in $KESTREL_ENGINE_DIR)
 *   fault=segv|abort|hang   what to inject (none by default)
 *   fault_on=open|forward   where (default forward)
 *   fault_after=N     forward calls that succeed before the fault (default 0)
 *   sleep_us=N        extra sleep before every forward call (timing regressions)
 *   sleep_grow_us=N   and N us more for each earlier forward call (call k sleeps sleep_us + k*N: a
 *                     step time that drifts upward within a run)
 *   perturb=1         flip the lowest mantissa bit of element 0 of every logits row
 *                     forward() returns (a one-ulp output change for bitexact tests)
 * bandwidth_probe() takes the same keys (fault_on=forward never fires there).
 *
 * Unlike a real engine it prints one line to stderr before it faults (so the
 * runner's stderr tail has something to show) and it deliberately crashes.
 * Built by `make check` only (src/cli/run.mk): tests/engines/.libs/libkestrel-fault.so.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kestrel/engine.h"

enum fault_kind { FAULT_NONE, FAULT_SEGV, FAULT_ABORT, FAULT_HANG };
enum fault_where { ON_OPEN, ON_FORWARD };

typedef struct fault_cfg {
    char inner[4096];
    enum fault_kind kind;
    enum fault_where where;
    long long after;
    long long sleep_us, sleep_grow_us;
    int perturb;
    char *rest; /* options for the inner engine, malloc'd */
} fault_cfg;

struct kestrel_engine {
    void *dl;
    const kestrel_engine_api *api;
    kestrel_engine *inner;
    fault_cfg cfg;
    long long n_forward;
    char info_name[160];
    char err[512];
};

/* an unmapped, aligned, non-NULL address (read at run time so the store really faults; not NULL so
 * UBSan builds fault the same way instead of reporting a null store) */
static volatile uintptr_t fault_address = 16;

static void inject(enum fault_kind kind, const char *where, long long call) {
    static const char *const names[] = {"none", "segv", "abort", "hang"};
    fprintf(stderr, "fault engine: injecting %s in %s (forward calls before: %lld)\n", names[kind], where, call);
    fflush(stderr);
    switch (kind) {
    case FAULT_SEGV:
        *(volatile int *)fault_address = 1;
        break;
    case FAULT_ABORT:
        abort();
    case FAULT_HANG:
        for (;;) pause();
    case FAULT_NONE:
        break;
    }
}

/* Parse options into cfg; unknown keys pass through to the inner engine. 0 ok, else err. */
static int parse_options(const char *options, fault_cfg *cfg, char *err, size_t err_len) {
    memset(cfg, 0, sizeof *cfg);
    cfg->where = ON_FORWARD;
    const char *dir = getenv("KESTREL_ENGINE_DIR");
    if (dir && *dir) snprintf(cfg->inner, sizeof cfg->inner, "%s/libkestrel-cpu.so", dir);
    size_t n = options ? strlen(options) : 0;
    cfg->rest = malloc(n + 1);
    char *copy = malloc(n + 1);
    if (!cfg->rest || !copy) {
        free(copy);
        snprintf(err, err_len, "fault engine: out of memory");
        return -1;
    }
    cfg->rest[0] = '\0';
    memcpy(copy, options ? options : "", n + 1);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        const char *val = eq ? eq + 1 : "";
        size_t klen = eq ? (size_t)(eq - tok) : strlen(tok);
        char *end = NULL;
#define KEY(k) (klen == strlen(k) && strncmp(tok, k, klen) == 0)
        if (KEY("inner")) {
            snprintf(cfg->inner, sizeof cfg->inner, "%s", val);
        } else if (KEY("fault")) {
            if (strcmp(val, "segv") == 0) cfg->kind = FAULT_SEGV;
            else if (strcmp(val, "abort") == 0) cfg->kind = FAULT_ABORT;
            else if (strcmp(val, "hang") == 0) cfg->kind = FAULT_HANG;
            else {
                snprintf(err, err_len, "fault engine: option fault=%s: expected segv, abort or hang", val);
                goto fail;
            }
        } else if (KEY("fault_on")) {
            if (strcmp(val, "open") == 0) cfg->where = ON_OPEN;
            else if (strcmp(val, "forward") == 0) cfg->where = ON_FORWARD;
            else {
                snprintf(err, err_len, "fault engine: option fault_on=%s: expected open or forward", val);
                goto fail;
            }
        } else if (KEY("perturb")) {
            if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0) {
                snprintf(err, err_len, "fault engine: option perturb=%s: expected 0 or 1", val);
                goto fail;
            }
            cfg->perturb = val[0] == '1';
        } else if (KEY("fault_after") || KEY("sleep_us") || KEY("sleep_grow_us")) {
            errno = 0;
            long long v = strtoll(val, &end, 10);
            if (!*val || *end || errno || v < 0) {
                snprintf(err, err_len, "fault engine: option %.*s=%s: expected a non-negative integer", (int)klen, tok,
                         val);
                goto fail;
            }
            if (KEY("fault_after")) cfg->after = v;
            else if (KEY("sleep_us")) cfg->sleep_us = v;
            else cfg->sleep_grow_us = v;
        } else {
            if (eq) *eq = '=';
            if (cfg->rest[0]) strcat(cfg->rest, ",");
            strcat(cfg->rest, tok);
        }
#undef KEY
    }
    free(copy);
    if (!cfg->inner[0]) {
        snprintf(err, err_len, "fault engine: no inner engine (set inner=PATH or KESTREL_ENGINE_DIR)");
        free(cfg->rest);
        cfg->rest = NULL;
        return -1;
    }
    return 0;
fail:
    free(copy);
    free(cfg->rest);
    cfg->rest = NULL;
    return -1;
}

/* dlopen the inner engine; 0 ok. */
static int load_inner(const char *path, void **dl, const kestrel_engine_api **api, char *err, size_t err_len) {
    *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*dl) {
        snprintf(err, err_len, "fault engine: cannot load inner engine: %s", dlerror());
        return -1;
    }
    kestrel_engine_entry_fn entry;
    *(void **)&entry = dlsym(*dl, KESTREL_ENGINE_ENTRY);
    *api = entry ? entry(KESTREL_ENGINE_ABI_VERSION) : NULL;
    if (!*api) {
        snprintf(err, err_len, "fault engine: %s is not a Kestrel engine of ABI %u", path, KESTREL_ENGINE_ABI_VERSION);
        dlclose(*dl);
        *dl = NULL;
        return -1;
    }
    return 0;
}

static void fe_close(kestrel_engine *e) {
    if (!e) return;
    if (e->inner) e->api->close(e->inner);
    if (e->dl) dlclose(e->dl);
    free(e->cfg.rest);
    free(e);
}

static int fe_open(const char *model_path, const char *options, kestrel_engine **out, char *err, size_t err_len) {
    *out = NULL;
    kestrel_engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, err_len, "fault engine: out of memory");
        return -1;
    }
    if (parse_options(options, &e->cfg, err, err_len) != 0) goto fail;
    if (e->cfg.kind != FAULT_NONE && e->cfg.where == ON_OPEN) inject(e->cfg.kind, "open", 0);
    if (load_inner(e->cfg.inner, &e->dl, &e->api, err, err_len) != 0) goto fail;
    if (e->api->open(model_path, e->cfg.rest, &e->inner, err, err_len) != 0) goto fail;
    *out = e;
    return 0;
fail:
    fe_close(e);
    return -1;
}

static int fe_info(kestrel_engine *e, kestrel_info *out) {
    if (e->api->info(e->inner, out) != 0) return -1;
    snprintf(e->info_name, sizeof e->info_name, "kestrel-fault(%s)", out->engine_name ? out->engine_name : "?");
    out->engine_name = e->info_name;
    return 0;
}

static int fe_reset(kestrel_engine *e) { return e->api->reset(e->inner); }

static int fe_forward(kestrel_engine *e, const int32_t *tokens, int32_t n, uint32_t flags, float *logits,
                      int32_t *argmax) {
    /* tokens: (n,), logits: (n, V) or (V,), argmax: (n,) or (1,) */
    if (e->cfg.kind != FAULT_NONE && e->cfg.where == ON_FORWARD && e->n_forward >= e->cfg.after)
        inject(e->cfg.kind, "forward", e->n_forward);
    const long long us = e->cfg.sleep_us + e->n_forward * e->cfg.sleep_grow_us;
    e->n_forward++;
    if (us > 0) {
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    int rc = e->api->forward(e->inner, tokens, n, flags, logits, argmax);
    if (rc == 0 && e->cfg.perturb && logits) {
        kestrel_info info;
        if (e->api->info(e->inner, &info) != 0) return rc;
        int32_t rows = (flags & KESTREL_FWD_ALL_LOGITS) ? n : 1;
        for (int32_t r = 0; r < rows; r++) {
            uint32_t bits;
            float *x = logits + (size_t)r * (size_t)info.n_vocab;
            memcpy(&bits, x, 4);
            bits ^= 1u;
            memcpy(x, &bits, 4);
        }
    }
    return rc;
}

static int fe_readback(kestrel_engine *e, const char *name, int32_t layer, int32_t pos, float *out, size_t cap,
                       size_t *n_out) {
    return e->api->readback(e->inner, name, layer, pos, out, cap, n_out);
}

static int fe_profile(kestrel_engine *e, kestrel_prof_entry *out, int32_t cap, int32_t *n) {
    return e->api->profile(e->inner, out, cap, n);
}

static int fe_bandwidth_probe(const char *options, uint64_t bytes, int32_t iterations, double *gbps, char *err,
                              size_t err_len) {
    fault_cfg cfg;
    void *dl = NULL;
    const kestrel_engine_api *api = NULL;
    if (parse_options(options, &cfg, err, err_len) != 0) return -1;
    if (cfg.kind != FAULT_NONE && cfg.where == ON_OPEN) inject(cfg.kind, "bandwidth_probe", 0);
    int rc = load_inner(cfg.inner, &dl, &api, err, err_len);
    if (rc == 0) rc = api->bandwidth_probe(cfg.rest, bytes, iterations, gbps, err, err_len);
    if (dl) dlclose(dl);
    free(cfg.rest);
    return rc;
}

static const char *fe_last_error(kestrel_engine *e) {
    if (!e) return "fault engine: no handle";
    return e->inner ? e->api->last_error(e->inner) : e->err;
}

static const kestrel_engine_api fault_api = {
    .abi_version = KESTREL_ENGINE_ABI_VERSION,
    .struct_size = sizeof(kestrel_engine_api),
    .open = fe_open,
    .info = fe_info,
    .reset = fe_reset,
    .forward = fe_forward,
    .readback = fe_readback,
    .profile = fe_profile,
    .bandwidth_probe = fe_bandwidth_probe,
    .last_error = fe_last_error,
    .close = fe_close,
};

KESTREL_EXPORT const kestrel_engine_api *kestrel_engine_entry(uint32_t abi_version) {
    return abi_version == KESTREL_ENGINE_ABI_VERSION ? &fault_api : NULL;
}
