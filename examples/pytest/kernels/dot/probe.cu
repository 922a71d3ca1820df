// cudabench: dot
// description: atomic.cu's dot product in one file; EXTRA_PERMILLE (default 0) makes it read that many thousandths of its inputs once more: the slowdown run-gpu-check.sh plants.
// param BLOCK: default 256; allowed 256
// param BLOCKS_PER_SM: default 8; allowed 1..64
// shared_bytes: BLOCK * ACC_SIZE
// launch probe_zero: grid 1; block 1
// launch probe_dot: grid min(cdiv(N, BLOCK), SM_COUNT * BLOCKS_PER_SM); block BLOCK

// A compile-time define, not a header parameter: a parameter would be part of the
// benchmark's name, and a baseline pairs rows by name. run-gpu-check.sh defines it in a
// copy of this project to make the probe ~3.5% slower under the same name.
#ifndef EXTRA_PERMILLE
#define EXTRA_PERMILLE 0
#endif

extern "C" __global__ void probe_zero(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                      OUT_TYPE* __restrict__ out,
                                      OUT_TYPE* __restrict__ partials, int N, int num_partials)
{
    out[0] = 0;
}

extern "C" __global__ void probe_dot(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                                     OUT_TYPE* __restrict__ out,
                                     OUT_TYPE* __restrict__ partials, int N, int num_partials)
{
    __shared__ ACC_TYPE cache[BLOCK];
    ACC_TYPE sum = 0, extra = 0;
    const long long total = N + (long long)N * EXTRA_PERMILLE / 1000;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < total;
         i += (long long)BLOCK * gridDim.x) {
        if (i < N)
            sum += (ACC_TYPE)a[i] * (ACC_TYPE)b[i];
        else
            extra += (ACC_TYPE)a[i - N] * (ACC_TYPE)b[i - N];
    }
    cache[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {  // tree sum of the block
        if (threadIdx.x < stride) cache[threadIdx.x] += cache[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, (OUT_TYPE)cache[0]);
    if (extra == (ACC_TYPE)123456789) partials[0] = extra;  // never true: keeps the reads
}
