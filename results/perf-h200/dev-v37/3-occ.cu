// v37 call 3 (run on the lent H200 with `nvcc -arch=sm_90 -o occ 3-occ.cu && ./occ`): how many thread-block
// clusters of C blocks (544 threads, S bytes of dynamic shared memory, as attention_kvc's) can be resident at once
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(int *p) { extern __shared__ int s[]; if (p) p[threadIdx.x] = s[threadIdx.x]; }
int main() {
    cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    const int smems[3] = {182352, 120000, 60000}, cs[4] = {16, 8, 4, 2};
    for (int si = 0; si < 3; si++) {
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smems[si]);
        for (int ci = 0; ci < 4; ci++) {
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeClusterDimension;
            at[0].val.clusterDim.x = cs[ci]; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
            cfg.gridDim = dim3(cs[ci] * 8); cfg.blockDim = dim3(544); cfg.dynamicSmemBytes = smems[si];
            cfg.attrs = at; cfg.numAttrs = 1;
            int n = -1;
            cudaError_t e = cudaOccupancyMaxActiveClusters(&n, (void *)k, &cfg);
            printf("smem %d cluster %2d: max active clusters %d (%s) -> %d blocks\n", smems[si], cs[ci], n,
                   cudaGetErrorString(e), n * cs[ci]);
        }
    }
    return 0;
}
