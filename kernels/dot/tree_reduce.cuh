// Shared by the dot variants (a .cuh is not a variant: only .cu files are).
#pragma once

// Sum cache[0..BLOCK) into cache[0] by halving; BLOCK is a power of two and every thread
// of the block must call it after writing its own cache entry and a __syncthreads().
__device__ void tree_reduce(ACC_TYPE* cache)
{
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) cache[threadIdx.x] += cache[threadIdx.x + stride];
        __syncthreads();
    }
}
