/*
 * sysinfo.c - the machine facts a run row records (sysinfo.h). Anything that
 * cannot be found is left NULL; nothing here fails the run.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "sysinfo.h"

/* First line of a shell command's stdout (trimmed), or NULL. */
static char *first_line(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    char buf[512];
    char *s = NULL;
    if (fgets(buf, sizeof buf, p)) {
        buf[strcspn(buf, "\r\n")] = '\0';
        if (buf[0]) s = xstrdup(buf);
    }
    while (fgets(buf, sizeof buf, p)) { /* drain */
    }
    if (pclose(p) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

static char *trim_dup(const char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n')) n--;
    char *r = xmalloc(n + 1);
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

static char *cpu_model(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return NULL;
    char line[512];
    char *model = NULL;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!model && colon && strncmp(line, "model name", 10) == 0) model = trim_dup(colon + 1);
    }
    fclose(f);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (!model) return n > 0 ? xasprintf("unknown CPU (%ld logical CPUs)", n) : NULL;
    char *s = n > 0 ? xasprintf("%s (%ld logical CPUs)", model, n) : xstrdup(model);
    free(model);
    return s;
}

/* GPU name/driver from `nvidia-smi --query-gpu`, CUDA version from its banner. */
static void gpu_info(sysinfo *out) {
    if (system("command -v nvidia-smi >/dev/null 2>&1") != 0) return;
    FILE *p = popen("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null", "r");
    if (!p) return;
    char buf[512], first[512] = "";
    int n = 0;
    while (fgets(buf, sizeof buf, p)) {
        buf[strcspn(buf, "\r\n")] = '\0';
        if (!buf[0]) continue;
        if (n++ == 0) snprintf(first, sizeof first, "%s", buf);
    }
    if (pclose(p) != 0 || n == 0) return;
    char *comma = strrchr(first, ',');
    if (comma) {
        *comma = '\0';
        out->gpu_driver = trim_dup(comma + 1);
    }
    char *name = trim_dup(first);
    out->gpu_name = n > 1 ? xasprintf("%s x%d", name, n) : xstrdup(name);
    free(name);
    char *banner = first_line("nvidia-smi 2>/dev/null | grep -o 'CUDA Version: *[0-9.]*' | sed 's/.*: *//'");
    out->cuda_version = banner;
}

void sysinfo_collect(sysinfo *out) {
    memset(out, 0, sizeof *out);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0 && host[0]) out->host = xstrdup(host);
    struct utsname u;
    if (uname(&u) == 0) out->os = xasprintf("%s %s %s %s", u.sysname, u.release, u.version, u.machine);
    out->cpu = cpu_model();
    gpu_info(out);
    /* GIT_OPTIONAL_LOCKS=0: describe --dirty must not refresh (write) the index of a tree others work in */
    char *cmd = xasprintf("GIT_OPTIONAL_LOCKS=0 git -C '%s' describe --always --dirty 2>/dev/null", KESTREL_SRCDIR);
    out->git_describe = access(KESTREL_SRCDIR "/.git", F_OK) == 0 ? first_line(cmd) : NULL;
    free(cmd);
}

void sysinfo_free(sysinfo *s) {
    if (!s) return;
    free(s->host);
    free(s->os);
    free(s->cpu);
    free(s->gpu_name);
    free(s->gpu_driver);
    free(s->cuda_version);
    free(s->git_describe);
    memset(s, 0, sizeof *s);
}
