// cudabench: dot
// description: vectorized_shuffle's loads and shuffles, but each block writes its sum to the partials buffer and the last block sums them in a fixed order: bit-identical results run to run.
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// param BLOCKS_PER_SM: default 4; allowed 1..64
// param UNROLL: default 4; allowed 1, 2, 4, 8
// launch dot_deterministic: grid min(cdiv(N, BLOCK * 16 // ELEM_SIZE), SM_COUNT * BLOCKS_PER_SM); block BLOCK

// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/dot_1_26.json; docs/kernels.md), `cudabench
// dot --size '1<<26'`: 2,832 GB/s, 0.973 of the device-to-device copy. No --best sweep has
// run yet (`scripts/ladder/run.sh OUT tune` runs one), so these are the best measured;
// change them with the sweep's numbers.
//
// A float sum is deterministic when the grouping of its additions is. Here nothing
// depends on timing:
//
// - The grid is fixed by N, the parameters and the GPU's SM count (the header's launch
//   line), so each thread owns the same vectors every run: v = first, first + stride, ...
//   in increasing order, each vector's elements in order, with explicit fused
//   multiply-adds (fmaf/fma), so the rounding cannot change with what the compiler
//   contracts. The scalar fallback (a or b not 16-byte aligned) and the partial last
//   vector visit exactly the same elements in the same order.
// - Each block's sum goes through the same shuffle tree and lands in partials[blockIdx.x]
//   (the op's scratch buffer: one element per block of the first launch, so num_partials
//   == gridDim.x here).
// - One pass: after writing its partial and a __threadfence, each block counts itself in
//   a __device__ counter; the block that counts last (which one is a matter of timing,
//   what it computes is not) reads all the partials past L1 (__ldcg), sums them with
//   threads striding over them in order and the same shuffle tree, writes the result and
//   resets the counter to zero for the next launch (stream-ordered after this one). The
//   counter is zero when the module loads.

#define VEC (16 / ELEM_SIZE)

struct __align__(16) Vec { DTYPE e[VEC]; };

__device__ unsigned int dot_det_arrived;  // blocks done; reset by the last block

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// s + x y, rounded once for floats whatever -fmad says.
__device__ __forceinline__ float mad(float x, float y, float s) { return fmaf(x, y, s); }
__device__ __forceinline__ double mad(double x, double y, double s) { return fma(x, y, s); }
__device__ __forceinline__ int mad(int x, int y, int s) { return x * y + s; }

__device__ __forceinline__ ACC_TYPE warp_sum(ACC_TYPE v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The block's sum in thread 0, through a fixed tree. Starts and ends with a barrier-safe
// use of warp_sums: callers separate two calls with a __syncthreads.
__device__ __forceinline__ ACC_TYPE block_sum(ACC_TYPE v, ACC_TYPE* warp_sums)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = 0;
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_sums[lane] : (ACC_TYPE)0;
        v = warp_sum(v);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dot_deterministic(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                  OUT_TYPE* __restrict__ out, OUT_TYPE* __restrict__ partials,
                  int N, int num_partials)
{
    __shared__ ACC_TYPE warp_sums[BLOCK / 32];
    __shared__ bool last;
    const long long stride = (long long)BLOCK * gridDim.x;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const long long vectors = ((long long)N + VEC - 1) / VEC;  // the last may be partial
    const long long whole = aligned16(a) && aligned16(b) ? N / VEC : 0;  // loadable as vectors
    const Vec* av = reinterpret_cast<const Vec*>(a);
    const Vec* bv = reinterpret_cast<const Vec*>(b);

    ACC_TYPE sum = 0;
    long long v = first;
    for (; v + (UNROLL - 1) * stride < whole; v += UNROLL * stride) {
        Vec x[UNROLL], y[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            x[u] = av[v + u * stride];
            y[u] = bv[v + u * stride];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                sum = mad((ACC_TYPE)x[u].e[j], (ACC_TYPE)y[u].e[j], sum);
    }
    for (; v < vectors; v += stride) {
        if (v < whole) {
            const Vec x = av[v], y = bv[v];
#pragma unroll
            for (int j = 0; j < VEC; ++j) sum = mad((ACC_TYPE)x.e[j], (ACC_TYPE)y.e[j], sum);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const long long i = v * VEC + j;
                if (i < N) sum = mad((ACC_TYPE)a[i], (ACC_TYPE)b[i], sum);
            }
        }
    }

    sum = block_sum(sum, warp_sums);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = (OUT_TYPE)sum;  // OUT_TYPE is ACC_TYPE for every dot type
        __threadfence();                       // the partial is visible before the count
        last = atomicAdd(&dot_det_arrived, 1u) == gridDim.x - 1;
    }
    __syncthreads();  // `last` is known; warp_sums is free again
    if (!last) return;

    __threadfence();
    ACC_TYPE total = 0;
    for (int i = threadIdx.x; i < (int)gridDim.x; i += BLOCK)
        total += (ACC_TYPE)__ldcg(partials + i);  // past L1: written by other blocks
    total = block_sum(total, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = (OUT_TYPE)total;
        dot_det_arrived = 0;  // the next launch counts from zero
    }
}
