// cudabench: dot
// description: Grid-stride products and a shared-memory tree per block, then one atomicAdd per block into the result.
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// param BLOCKS_PER_SM: default 8; allowed 1..64
// shared_bytes: BLOCK * ACC_SIZE
// launch dot_zero: grid 1; block 1
// launch dot_atomic: grid min(cdiv(N, BLOCK), SM_COUNT * BLOCKS_PER_SM); block BLOCK

// The result must start at zero for every run, so zeroing it is a launch of its own and
// part of the timed region. Float atomics add in an unpredictable order: the result may
// differ between runs by rounding, within the tolerance.

#include "tree_reduce.cuh"

extern "C" __global__ void dot_zero(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                    OUT_TYPE* __restrict__ out, OUT_TYPE* __restrict__ partials,
                                    int N, int num_partials)
{
    out[0] = 0;
}

extern "C" __global__ void dot_atomic(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
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
    if (threadIdx.x == 0) atomicAdd(out, (OUT_TYPE)cache[0]);
}
