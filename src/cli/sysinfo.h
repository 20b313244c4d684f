/*
 * sysinfo.h - what a run records about the machine it ran on (runs table):
 * host, OS (uname), CPU model (/proc/cpuinfo), GPU name/driver/CUDA version
 * (nvidia-smi when present), and the git describe of the source tree.
 */
#ifndef KESTREL_SYSINFO_H
#define KESTREL_SYSINFO_H

typedef struct sysinfo {
    char *host;         /* gethostname */
    char *os;           /* "Linux 6.1.0-18-amd64 #1 SMP ... x86_64" */
    char *cpu;          /* "AMD EPYC 7B13 (2 logical CPUs)" */
    char *gpu_name;     /* NULL when no nvidia-smi or no GPU; several GPUs: "NVIDIA H200 x2" */
    char *gpu_driver;   /* "570.86.15" */
    char *cuda_version; /* the CUDA version nvidia-smi reports for the driver, "13.0" */
    char *git_describe; /* NULL when the source tree is not a git checkout */
} sysinfo;

/* Fill *out (fields NULL when unknown). Never fails. */
void sysinfo_collect(sysinfo *out);
void sysinfo_free(sysinfo *s);

#endif
