/*
 * cuda/bench_sync.cu - what one dependency between two kernels of the step costs, by how it is
 * waited for (issue 6, cuda/PERF-NOTES.md v21).
 *
 * Why: the 27B step is ~8 dependent kernels per layer, 512 per token. v15's timelines put ~2.4 us
 * between one kernel's last block ending and the next kernel's griddepcontrol.wait returning; a
 * counter published by each block and polled by the next kernel (v16: ~0.5-1.2 us) might cost less.
 * Before any engine kernel changes, this measures the two on a chain of small kernels alone.
 *
 * Each variant is a chain of L kernels captured in one CUDA graph (replayed, timed by events); kernel
 * i reads ALL n floats its predecessor wrote (every block: an all-to-all dependency, as GEMV -> GEMV)
 * and writes its share of n floats for kernel i + 1:
 *   stream  plain stream order (no PDL attribute)
 *   pdl     PDL attribute; griddepcontrol.launch_dependents then griddepcontrol.wait (kc_pdl_begin)
 *   flag    PDL attribute, no griddepcontrol.wait: thread 0 of each block polls the predecessor's
 *           counter (ld.acquire.gpu) until it holds the predecessor's block count, bar.sync, then
 *           launch_dependents (so at most two kernels wait at once); each block ends with bar.sync and
 *           thread 0's fence + atomicAdd on its own counter. Counters zeroed by a memset node first.
 *   nosync  PDL attribute, launch_dependents and NO wait (racy: timing only, the chain's floor)
 * The y of stream, pdl and flag must agree bit for bit (same arithmetic, same order): a flag race
 * would show as a difference.
 * smem: dynamic shared memory per block (0 or 100 KB: two blocks per SM at most, so the next kernel's
 * blocks cannot be resident beside them — the TMA GEMVs' case).
 *
 * Usage: bench_sync  (prints one TSV line per variant: grid, threads, n, smem, us per link)
 *
 * bench_sync roundtrip [LINKS]: what the host round trip of one decode step costs (PERF-NOTES "After v44"
 * item 3). decode-bench times each forward() from the host: at T = 1 the engine uploads the token (4 bytes,
 * pageable), zeroes the step's ticket counter (a 4-byte memset), launches the step's graph, reads the argmax back
 * (4 bytes, pageable) and synchronises; the GPU idles from the step's end until the next graph starts. A chain
 * of LINKS (default 512, the 27B step's launch count) PDL kernels of one wave in one graph stands for the step;
 * each variant runs 200 timed iterations (CLOCK_MONOTONIC around each, as decode-bench), median and MAD:
 *   queued          8 replays launched back to back, one synchronise, per replay: the GPU's time for the chain
 *                   with no host in between (the base)
 *   launch_sync     graph launch, synchronise
 *   pinned_nomemset pinned upload, graph launch, pinned readback, synchronise
 *   pinned          pinned upload, memset, graph launch, pinned readback, synchronise
 *   engine          pageable upload, memset, graph launch, pageable readback, synchronise (the engine today)
 * and each one's excess over the chain alone (queued less its 1/8 share of launch_sync's round trip): the host
 * round trip that variant adds per token.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <vector>

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "bench_sync: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            return 1;                                                                                     \
        }                                                                                                 \
    } while (0)

enum { V_STREAM, V_PDL, V_FLAG, V_NOSYNC, V_COUNT };
static const char *const VNAME[V_COUNT] = {"stream", "pdl", "flag", "nosync"};

#define CHAIN_MAX 512 /* kernels per graph at most */
static int CHAIN = 128; /* kernels per graph (roundtrip: LINKS) */
#define REPS 15   /* timed graph replays */

typedef struct link_args {
    const float *x;        /* (n,) the predecessor's output */
    float *y;              /* (n,) this kernel's output */
    int n;
    int mode;              /* V_* */
    const unsigned *wait;  /* flag: the predecessor's counter (NULL: the chain's first kernel) */
    unsigned target;       /* flag: the predecessor's block count */
    unsigned *post;        /* flag: this kernel's counter */
} link_args;

__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__global__ void link_kernel(link_args a)
{
    __shared__ float red[32]; /* (the smem variants' dynamic shared memory is reserved by the launch alone) */
    if (a.mode == V_PDL) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    } else if (a.mode == V_FLAG) {
        if (threadIdx.x == 0 && a.wait) {
            while (ld_acquire_gpu(a.wait) < a.target) __nanosleep(20);
        }
        __syncthreads();
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    } else if (a.mode == V_NOSYNC) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    float s = 0.f;
    for (int i = threadIdx.x; i < a.n; i += blockDim.x) s += __ldcg(a.x + i);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
        for (int o = 16; o; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        if (threadIdx.x == 0) red[0] = t;
    }
    __syncthreads();
    const float tot = red[0] * (1.0f / 4096.0f);
    const int share = (a.n + gridDim.x - 1) / gridDim.x;
    const int j0 = blockIdx.x * share, j1 = min(a.n, j0 + share);
    for (int j = j0 + threadIdx.x; j < j1; j += blockDim.x) a.y[j] = tot + (float)(j & 255) * (1.0f / 256.0f);
    if (a.mode == V_FLAG) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(a.post, 1u);
        }
    }
}

static int build_graph(int mode, int grid, int threads, int n, int smem, float *buf0, float *buf1, unsigned *cnt,
                       cudaStream_t st, cudaGraphExec_t *out)
{
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    if (mode == V_FLAG) CK(cudaMemsetAsync(cnt, 0, CHAIN * sizeof(unsigned), st));
    for (int i = 0; i < CHAIN; i++) {
        link_args a;
        a.x = i & 1 ? buf1 : buf0;
        a.y = i & 1 ? buf0 : buf1;
        a.n = n;
        a.mode = mode;
        a.wait = i ? cnt + i - 1 : NULL;
        a.target = (unsigned)grid;
        a.post = cnt + i;
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at[1];
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3(threads);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = st;
        if (mode != V_STREAM && i > 0) {
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = at;
            cfg.numAttrs = 1;
        }
        CK(cudaLaunchKernelEx(&cfg, link_kernel, a));
    }
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(out, g, 0));
    CK(cudaGraphDestroy(g));
    return 0;
}

/* us per link (median replay / CHAIN) and the chain's final output in out (n,) */
static int time_chain(int mode, int grid, int threads, int n, int smem, float *buf0, float *buf1, unsigned *cnt,
                      cudaStream_t st, double *us, std::vector<float> &out)
{
    cudaGraphExec_t ge;
    if (build_graph(mode, grid, threads, n, smem, buf0, buf1, cnt, st, &ge)) return 1;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int r = 0; r < REPS + 3; r++) {
        /* the same input every replay: the output is comparable across variants */
        std::vector<float> x0(n > 0 ? n : 1);
        for (int i = 0; i < n; i++) x0[i] = (float)((i * 37) % 101) / 101.0f;
        CK(cudaMemcpyAsync(buf0, x0.data(), n * sizeof(float), cudaMemcpyHostToDevice, st));
        CK(cudaEventRecord(e0, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 3) t.push_back(1e3 * ms / CHAIN);
    }
    std::sort(t.begin(), t.end());
    *us = t[t.size() / 2];
    out.resize(n);
    CK(cudaMemcpy(out.data(), CHAIN & 1 ? buf1 : buf0, n * sizeof(float), cudaMemcpyDeviceToHost));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    CK(cudaGraphExecDestroy(ge));
    return 0;
}

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

enum { RT_QUEUED, RT_LAUNCH_SYNC, RT_PINNED_NOMEMSET, RT_PINNED, RT_ENGINE, RT_COUNT };
static const char *const RTNAME[RT_COUNT] = {"queued", "launch_sync", "pinned_nomemset", "pinned", "engine"};
#define RT_ITERS 200
#define RT_QUEUE 8

/* one iteration of variant v. page, pin: (2,) host token and argmax, pageable and pinned (engine copies from and to
 * page, the pinned variants pin); dev: (3,) device token, argmax and the counter the memset zeroes */
static int rt_once(int v, cudaGraphExec_t ge, cudaStream_t st, int *page, int *pin, int *dev)
{
    int *tok_h = v == RT_ENGINE ? page : pin, *arg_h = tok_h + 1, *tok_d = dev, *arg_d = dev + 1, *idx_d = dev + 2;
    if (v == RT_QUEUED) {
        for (int q = 0; q < RT_QUEUE; q++) CK(cudaGraphLaunch(ge, st));
    } else {
        if (v != RT_LAUNCH_SYNC) CK(cudaMemcpyAsync(tok_d, tok_h, sizeof(int), cudaMemcpyHostToDevice, st));
        if (v == RT_PINNED || v == RT_ENGINE) CK(cudaMemsetAsync(idx_d, 0, sizeof(int), st));
        CK(cudaGraphLaunch(ge, st));
        if (v != RT_LAUNCH_SYNC) CK(cudaMemcpyAsync(arg_h, arg_d, sizeof(int), cudaMemcpyDeviceToHost, st));
    }
    CK(cudaStreamSynchronize(st));
    return 0;
}

static int roundtrip(int links, cudaStream_t st, float *buf0, float *buf1, unsigned *cnt, int sms)
{
    CHAIN = links;
    cudaGraphExec_t ge;
    if (build_graph(V_PDL, sms, 256, 5120, 0, buf0, buf1, cnt, st, &ge)) return 1;
    int *dev, *pin;
    static int page[2]; /* pageable: token, argmax */
    CK(cudaMalloc(&dev, 3 * sizeof(int)));
    CK(cudaHostAlloc(&pin, 2 * sizeof(int), cudaHostAllocDefault));
    printf("# roundtrip: %d PDL links of %d blocks x 256 threads per graph, %d iterations per variant; "
           "variants interleaved in 5 rounds (order as listed)\n", links, sms, RT_ITERS);
    printf("variant\tus_median\tus_mad\texcess_over_chain_us\n");
    std::vector<double> t[RT_COUNT];
    for (int w = 0; w < 20; w++)
        for (int v = 0; v < RT_COUNT; v++)
            if (rt_once(v, ge, st, page, pin, dev)) return 1;
    /* rounds: each variant's samples spread over the whole run, so a drift of the clocks touches all alike */
    for (int r = 0; r < 5; r++)
        for (int v = 0; v < RT_COUNT; v++) {
            for (int i = 0; i < RT_ITERS / 5; i++) {
                const double t0 = mono_us();
                if (rt_once(v, ge, st, page, pin, dev)) return 1;
                t[v].push_back((mono_us() - t0) / (v == RT_QUEUED ? RT_QUEUE : 1));
            }
        }
    double med[RT_COUNT], mad[RT_COUNT];
    for (int v = 0; v < RT_COUNT; v++) {
        std::vector<double> s = t[v];
        std::sort(s.begin(), s.end());
        med[v] = s[s.size() / 2];
        for (double &x : s) x = x > med[v] ? x - med[v] : med[v] - x;
        std::sort(s.begin(), s.end());
        mad[v] = s[s.size() / 2];
    }
    /* queued still carries 1/RT_QUEUE of launch_sync's round trip r: queued = G + r / Q, launch_sync = G + r,
     * so G = queued - (launch_sync - queued) / (Q - 1); each variant's excess is over G, the chain alone */
    const double g = med[RT_QUEUED] - (med[RT_LAUNCH_SYNC] - med[RT_QUEUED]) / (RT_QUEUE - 1);
    for (int v = 0; v < RT_COUNT; v++)
        printf("%s\t%.2f\t%.2f\t%.2f\n", RTNAME[v], med[v], mad[v], med[v] - g);
    printf("# the chain alone (G): %.2f us\n", g);
    CK(cudaFreeHost(pin));
    CK(cudaFree(dev));
    CK(cudaGraphExecDestroy(ge));
    return 0;
}

int main(int argc, char **argv)
{
    const int rt = argc > 1 && !strcmp(argv[1], "roundtrip");
    char *end = NULL;
    const long links = rt && argc > 2 ? strtol(argv[2], &end, 10) : 512;
    const int not_number = end && (end == argv[2] || *end); /* "8x", "" */
    if ((argc > 1 && !rt) || not_number || links < 1 || links > CHAIN_MAX || argc > 3) {
        fprintf(stderr, "usage: bench_sync [roundtrip [LINKS (1..%d, default 512)]]\n", CHAIN_MAX);
        return 2;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int sms = p.multiProcessorCount;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaFuncSetAttribute(link_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    const int NMAX = 17408;
    float *buf0, *buf1;
    unsigned *cnt;
    CK(cudaMalloc(&buf0, NMAX * sizeof(float)));
    CK(cudaMalloc(&buf1, NMAX * sizeof(float)));
    CK(cudaMalloc(&cnt, CHAIN_MAX * sizeof(unsigned)));
    printf("device\t%s\tsms\t%d\n", p.name, sms);
    if (rt) return roundtrip((int)links, st, buf0, buf1, cnt, sms);
    printf("grid\tthreads\tn\tsmem_kb\tvariant\tus_per_link\tsame_as_stream\n");
    const int grids[] = {sms, 2 * sms, 4 * sms};
    const int ns[] = {0, 256, 5120, 17408}; /* 0: no read of x (the dependency alone) */
    const int smems[] = {0, 100 * 1024};
    int fails = 0;
    for (int gi = 0; gi < 3; gi++)
        for (int ni = 0; ni < 4; ni++)
            for (int si = 0; si < 2; si++) {
                const int grid = grids[gi], n = ns[ni], smem = smems[si], threads = 256;
                if (smem && gi == 2) continue; /* 4 blocks per SM of 100 KB do not fit one wave */
                std::vector<float> ref;
                for (int v = 0; v < V_COUNT; v++) {
                    double us = 0;
                    std::vector<float> out;
                    if (time_chain(v, grid, threads, n, smem, buf0, buf1, cnt, st, &us, out)) return 1;
                    if (v == V_STREAM) ref = out;
                    const int same = v == V_NOSYNC ? -1 : (n == 0 || !memcmp(ref.data(), out.data(), n * sizeof(float)));
                    if (same == 0) fails++;
                    printf("%d\t%d\t%d\t%d\t%s\t%.3f\t%s\n", grid, threads, n, smem / 1024, VNAME[v], us,
                           same < 0 ? "-" : same ? "yes" : "NO");
                    fflush(stdout);
                }
            }
    printf("# %d variant(s) differ from the stream order\n", fails);
    return fails ? 1 : 0;
}
