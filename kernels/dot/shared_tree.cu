// cudabench: dot
// description: Grid-stride products, a shared-memory tree per block, then one block sums the partials in a second launch (seed 003).
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// param BLOCKS_PER_SM: default 8; allowed 1..64
// shared_bytes: BLOCK * ACC_SIZE
// launch dot_partials: grid min(cdiv(N, BLOCK), SM_COUNT * BLOCKS_PER_SM); block BLOCK
// launch dot_finish: grid 1; block BLOCK

// The seed used 32 blocks whatever the GPU; here the grid scales with the SM count, and
// the partial sums are finished on the GPU so that the timed region is the whole dot.

#include "tree_reduce.cuh"

extern "C" __global__ void dot_partials(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                        OUT_TYPE* __restrict__ out, OUT_TYPE* __restrict__ partials,
                                        int N, int num_partials)
{
    __shared__ ACC_TYPE cache[BLOCK];
    ACC_TYPE sum = 0;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < N;
         i += (long long)BLOCK * gridDim.x)
        sum += (ACC_TYPE)a[i] * (ACC_TYPE)b[i];  // float16 products are exact in float32
    cache[threadIdx.x] = sum;
    __syncthreads();
    tree_reduce(cache);
    if (threadIdx.x == 0) partials[blockIdx.x] = (OUT_TYPE)cache[0];
}

extern "C" __global__ void dot_finish(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                      OUT_TYPE* __restrict__ out, OUT_TYPE* __restrict__ partials,
                                      int N, int num_partials)
{
    __shared__ ACC_TYPE cache[BLOCK];
    ACC_TYPE sum = 0;
    for (int i = threadIdx.x; i < num_partials; i += BLOCK) sum += (ACC_TYPE)partials[i];
    cache[threadIdx.x] = sum;
    __syncthreads();
    tree_reduce(cache);
    if (threadIdx.x == 0) out[0] = (OUT_TYPE)cache[0];
}
