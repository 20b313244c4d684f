/*
 * engine_load.c - find an engine library by name or path, dlopen it and
 * check the ABI it speaks. One failure path; every error names the library.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine_load.h"

static int is_file(const char *p) { return access(p, R_OK) == 0; }

/* Is the running kestrel-eval the one in the build tree? Then prefer the build tree's engines. */
static int running_from_build_tree(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = '\0';
    size_t bl = strlen(KESTREL_BUILD_DIR);
    return strncmp(exe, KESTREL_BUILD_DIR, bl) == 0 && (exe[bl] == '/' || exe[bl] == '\0');
}

char *engine_resolve(const char *spec, char *err, size_t err_len) {
    char buf[PATH_MAX];
    if (strchr(spec, '/') || (strlen(spec) > 3 && strcmp(spec + strlen(spec) - 3, ".so") == 0)) {
        if (!realpath(spec, buf)) {
            snprintf(err, err_len, "%s: engine library not found: %s", spec, strerror(errno));
            return NULL;
        }
        return xstrdup(buf);
    }
    const char *dirs[3];
    int nd = 0;
    const char *env = getenv("KESTREL_ENGINE_DIR");
    if (env && *env) dirs[nd++] = env;
    if (running_from_build_tree()) dirs[nd++] = KESTREL_ENGINE_BUILD_DIR;
    dirs[nd++] = KESTREL_ENGINE_INSTALL_DIR;
    for (int i = 0; i < nd; i++) {
        snprintf(buf, sizeof buf, "%s/libkestrel-%s.so", dirs[i], spec);
        if (is_file(buf)) {
            char real[PATH_MAX];
            return xstrdup(realpath(buf, real) ? real : buf);
        }
    }
    snprintf(err, err_len, "engine '%s': libkestrel-%s.so not found in %s%s%s%s%s "
             "(was it built? the CUDA engine needs configure to find nvcc)",
             spec, spec, dirs[0], nd > 1 ? ", " : "", nd > 1 ? dirs[1] : "", nd > 2 ? ", " : "",
             nd > 2 ? dirs[2] : "");
    return NULL;
}

int engine_lib_open(const char *spec, engine_lib *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    char *path = engine_resolve(spec, err, err_len);
    if (!path) return -1;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, err_len, "%s: cannot load engine: %s", path, dlerror());
        goto fail;
    }
    kestrel_engine_entry_fn entry;
    *(void **)&entry = dlsym(h, KESTREL_ENGINE_ENTRY);
    if (!entry) {
        snprintf(err, err_len, "%s: not a Kestrel engine (no symbol %s)", path, KESTREL_ENGINE_ENTRY);
        goto fail;
    }
    const kestrel_engine_api *api = entry(KESTREL_ENGINE_ABI_VERSION);
    if (!api) {
        snprintf(err, err_len, "%s: engine does not support ABI version %u", path, KESTREL_ENGINE_ABI_VERSION);
        goto fail;
    }
    if (api->abi_version != KESTREL_ENGINE_ABI_VERSION) {
        snprintf(err, err_len, "%s: engine ABI version %u, kestrel-eval speaks %u", path, api->abi_version,
                 KESTREL_ENGINE_ABI_VERSION);
        goto fail;
    }
    if (api->struct_size < sizeof(kestrel_engine_api)) {
        snprintf(err, err_len, "%s: engine function table is %u bytes, expected at least %zu", path,
                 api->struct_size, sizeof(kestrel_engine_api));
        goto fail;
    }
    if (!api->open || !api->info || !api->reset || !api->forward || !api->readback || !api->profile || !api->bandwidth_probe ||
        !api->last_error || !api->close) {
        snprintf(err, err_len, "%s: engine function table has NULL entries", path);
        goto fail;
    }
    out->path = path;
    out->handle = h;
    out->api = api;
    return 0;
fail:
    if (h) dlclose(h);
    free(path);
    return -1;
}

void engine_lib_close(engine_lib *lib) {
    if (!lib) return;
    if (lib->handle) dlclose(lib->handle);
    free(lib->path);
    memset(lib, 0, sizeof *lib);
}
