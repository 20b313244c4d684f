/*
 * util.c - small helpers for kestrel-eval: allocation that reports and exits
 * (CLI only; libraries return errors), SHA-256 through OpenSSL, time, strict
 * number parsing, .npy output, CSV/JSON string output.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cli.h"

static void out_of_memory(size_t n) {
    fprintf(stderr, "kestrel-eval: out of memory (asked for %zu bytes)\n", n);
    exit(EXIT_USAGE);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory(n * size);
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n);
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

char *xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) out_of_memory(0);
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static void to_hex(const unsigned char *md, unsigned len, char *out) {
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * len] = '\0';
}

int sha256_file(const char *path, char out[65], char *err, size_t err_len) {
    int ret = -1;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    unsigned char *buf = NULL;
    EVP_MD_CTX *ctx = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        goto cleanup;
    }
    buf = xmalloc(1 << 20);
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        snprintf(err, err_len, "%s: SHA-256 init failed", path);
        goto cleanup;
    }
    for (;;) {
        ssize_t n = read(fd, buf, 1 << 20);
        if (n < 0) {
            if (errno == EINTR) continue;
            snprintf(err, err_len, "%s: read error: %s", path, strerror(errno));
            goto cleanup;
        }
        if (n == 0) break;
        EVP_DigestUpdate(ctx, buf, (size_t)n);
    }
    EVP_DigestFinal_ex(ctx, md, &md_len);
    to_hex(md, md_len, out);
    ret = 0;
cleanup:
    if (ctx) EVP_MD_CTX_free(ctx);
    free(buf);
    if (fd >= 0) close(fd);
    return ret;
}

void sha256_hex(const void *data, size_t n, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    EVP_Digest(data, n, md, &md_len, EVP_sha256(), NULL);
    to_hex(md, md_len, out);
}

void now_iso8601(char out[32]) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int parse_int(const char *s, long long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int parse_double(const char *s, double *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int parse_token_list(const char *s, int32_t **out, int *n) {
    int cap = 16, cnt = 0;
    int32_t *v = xmalloc(sizeof(int32_t) * (size_t)cap);
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long long t = strtoll(p, &end, 10);
        if (end == p || errno || t < 0 || t > INT32_MAX || (*end && *end != ',')) {
            free(v);
            return -1;
        }
        if (cnt == cap) v = xrealloc(v, sizeof(int32_t) * (size_t)(cap *= 2));
        v[cnt++] = (int32_t)t;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) { free(v); return -1; } /* trailing comma */
    }
    if (cnt == 0) {
        free(v);
        return -1;
    }
    *out = v;
    *n = cnt;
    return 0;
}

const char *default_db_path(const char *flag_value) {
    if (flag_value && *flag_value) return flag_value;
    const char *env = getenv("KESTREL_DB");
    if (env && *env) return env;
    return "results/kestrel.db";
}

int write_npy_f32(const char *path, const float *data, int64_t rows, int64_t cols, char *err, size_t err_len) {
    int ret = -1;
    char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot create: %s", tmp, strerror(errno));
        goto cleanup;
    }
    char dict[128];
    int dn = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                      (long long)rows, (long long)cols);
    /* header = magic(6) + version(2) + len(2) + dict + pad + '\n', total multiple of 64 */
    int total = 10 + dn + 1;
    int pad = (64 - total % 64) % 64;
    unsigned short hlen = (unsigned short)(dn + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)dn, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, sizeof(float), (size_t)(rows * cols), f);
    if (fflush(f) != 0 || ferror(f)) {
        snprintf(err, err_len, "%s: write error: %s", path, strerror(errno));
        fclose(f);
        unlink(tmp);
        goto cleanup;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, err_len, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        goto cleanup;
    }
    ret = 0;
cleanup:
    free(tmp);
    return ret;
}

int use_color(FILE *f) {
    const char *term = getenv("TERM");
    if (getenv("NO_COLOR")) return 0;
    if (term && strcmp(term, "dumb") == 0) return 0;
    return isatty(fileno(f));
}

void csv_field(FILE *f, const char *s) {
    if (!s) return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

void json_string(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\r') fputs("\\r", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

char *json_quote(const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) out_of_memory(s ? strlen(s) * 6 + 3 : 5);
    json_string(f, s);
    if (fclose(f) != 0 || !buf) out_of_memory(len);
    return buf;
}
