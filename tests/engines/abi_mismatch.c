/*
 * abi_mismatch.c - a test engine that speaks only ABI version
 * KESTREL_ENGINE_ABI_VERSION + 1, as a library from a newer Kestrel would.
 * kestrel-eval must refuse it with one clear line (tests/engine-logits.sh).
 *
 * By default its entry returns NULL for any other version (the polite way).
 * With KESTREL_TEST_ABI_IGNORE=1 in the environment it returns its table
 * whatever it is asked, so the loader's own abi_version check is exercised.
 * Its functions are never called: the loader stops at the version check.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/engine.h"

static const kestrel_engine_api future_api = {
    .abi_version = KESTREL_ENGINE_ABI_VERSION + 1,
    .struct_size = sizeof(kestrel_engine_api),
};

KESTREL_EXPORT const kestrel_engine_api *kestrel_engine_entry(uint32_t abi_version) {
    const char *ignore = getenv("KESTREL_TEST_ABI_IGNORE");
    if (ignore && strcmp(ignore, "1") == 0) return &future_api;
    return abi_version == KESTREL_ENGINE_ABI_VERSION + 1 ? &future_api : NULL;
}
