/*
 * case_bandwidth.c - the `bandwidth` case kind: the engine's streaming-read
 * probe (bandwidth_probe in engine.h), so a run carries the floor its
 * decode-bench numbers are compared with. No model. Runs in the child.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "cli.h"

/* fallbacks only: the suite parser fills bytes and iterations with these defaults (docs/suites.md) */
#define DEFAULT_PROBE_BYTES (4ull << 30)
#define DEFAULT_PROBE_ITERATIONS 20

int case_bandwidth(case_ctx *ctx) {
    const suite_case *c = ctx->c;
    engine_lib lib = {0};
    int status = CASE_ERROR;
    char e[1024] = "";
    uint64_t bytes = c->bytes ? c->bytes : DEFAULT_PROBE_BYTES;
    int32_t iters = c->iterations > 0 ? c->iterations : DEFAULT_PROBE_ITERATIONS;
    double gbps = 0;

    if (engine_lib_open(ctx->engine_path, &lib, e, sizeof e) != 0) {
        case_error(ctx, "%s", e);
        goto cleanup;
    }
    fprintf(stderr, "case %s: bandwidth_probe(%s, %llu bytes, %d iterations) of %s\n", c->name, ctx->options,
            (unsigned long long)bytes, iters, lib.path);
    if (lib.api->bandwidth_probe(ctx->options, bytes, iters, &gbps, e, sizeof e) != 0) {
        case_error(ctx, "engine '%s': bandwidth_probe failed: %s", c->engine->name, e[0] ? e : "(no message)");
        goto cleanup;
    }
    char text[96];
    snprintf(text, sizeof text, "median of %d passes over %.3g GB", iters, (double)bytes / 1e9);
    emit_metric(ctx->em, "gbps", 1, gbps, "GB/s", text, NULL, -1);
    emit_metric(ctx->em, "probe_bytes", 1, (double)bytes, "bytes", NULL, NULL, -1);
    status = CASE_PASS;
cleanup:
    engine_lib_close(&lib);
    return status;
}
