// cudabench: dot
// description: Grid-stride products, a shared-memory tree per block, then one block sums the partials in a second launch (seed 003).
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// param BLOCKS_PER_SM: default 8; allowed 1..64
// shared_bytes: BLOCK * ELEM_SIZE
// launch dot_partials: grid min(cdiv(N, BLOCK), SM_COUNT * BLOCKS_PER_SM); block BLOCK
// launch dot_finish: grid 1; block BLOCK

// The seed used 32 blocks whatever the GPU; here the grid scales with the SM count, and
// the partial sums are finished on the GPU so that the timed region is the whole dot.

#include "tree_reduce.cuh"

extern "C" __global__ void dot_partials(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                        DTYPE* __restrict__ out, DTYPE* __restrict__ partials,
                                        int N, int num_partials)
{
    __shared__ DTYPE cache[BLOCK];
    DTYPE sum = 0;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < N;
         i += (long long)BLOCK * gridDim.x)
        sum += a[i] * b[i];
    cache[threadIdx.x] = sum;
    __syncthreads();
    tree_reduce(cache);
    if (threadIdx.x == 0) partials[blockIdx.x] = cache[0];
}

extern "C" __global__ void dot_finish(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                      DTYPE* __restrict__ out, DTYPE* __restrict__ partials,
                                      int N, int num_partials)
{
    __shared__ DTYPE cache[BLOCK];
    DTYPE sum = 0;
    for (int i = threadIdx.x; i < num_partials; i += BLOCK) sum += partials[i];
    cache[threadIdx.x] = sum;
    __syncthreads();
    tree_reduce(cache);
    if (threadIdx.x == 0) out[0] = cache[0];
}
