/*
 * engine_load.h - find and dlopen an engine library, check its ABI version.
 */
#ifndef KESTREL_ENGINE_LOAD_H
#define KESTREL_ENGINE_LOAD_H

#include <stddef.h>
#include "kestrel/engine.h"

typedef struct engine_lib {
    char *path;                    /* resolved absolute path of the .so */
    void *handle;                  /* dlopen handle */
    const kestrel_engine_api *api;
} engine_lib;

/* Resolve "cpu" / "cuda" / a path to a library file:
 *   a spec containing '/' or ending in ".so" is a path;
 *   otherwise libkestrel-<spec>.so in $KESTREL_ENGINE_DIR, then the build
 *   tree's engines/ (when kestrel-eval runs from the build tree), then libdir.
 * Returns a malloc'd absolute path, or NULL with err set. */
char *engine_resolve(const char *spec, char *err, size_t err_len);

/* dlopen + resolve kestrel_engine_entry + check abi_version/struct_size.
 * Errors name the library: "lib.so: ABI version 2, kestrel-eval speaks 1". */
int engine_lib_open(const char *spec, engine_lib *out, char *err, size_t err_len);
void engine_lib_close(engine_lib *lib);

#endif
