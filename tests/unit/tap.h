/*
 * tap.h - the TAP helpers every C unit test uses (header-only, one per test program).
 *   ok(cond, fmt, ...)   prints "ok N - desc" / "not ok N - desc", returns cond
 *   is_str(exp, got, desc), is_int(exp, got, desc)   with expected/got diagnostics
 *   tap_done()           prints the plan "1..N" and returns the exit status (0: all passed)
 */
#ifndef KESTREL_TAP_H
#define KESTREL_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int n_test, n_fail;

static int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int ok(int cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++n_test);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!cond) n_fail++;
    return cond;
}

static __attribute__((unused)) int is_str(const char *expected, const char *got, const char *desc) {
    int same = strcmp(expected, got) == 0;
    if (!ok(same, "%s", desc)) printf("#   expected: %s\n#        got: %s\n", expected, got);
    return same;
}

static __attribute__((unused)) int is_int(long long expected, long long got, const char *desc) {
    if (!ok(expected == got, "%s", desc)) printf("#   expected: %lld\n#        got: %lld\n", expected, got);
    return expected == got;
}

static __attribute__((unused)) int tap_done(void) {
    printf("1..%d\n", n_test);
    if (n_fail) printf("# %d of %d failed\n", n_fail, n_test);
    return n_fail != 0;
}

#endif
