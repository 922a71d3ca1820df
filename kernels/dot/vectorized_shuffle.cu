// cudabench: dot
// description: One pass: 128-bit grid-stride loads (scalar tail), warp-shuffle block sums added atomically; the last block to finish writes the result and resets the accumulator and counter.
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// param BLOCKS_PER_SM: default 4; allowed 1..64
// param UNROLL: default 4; allowed 1, 2, 4, 8
// launch dot_vectorized_shuffle: grid min(cdiv(N, BLOCK * 16 // ELEM_SIZE), SM_COUNT * BLOCKS_PER_SM); block BLOCK

// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/dot_1_26.json; docs/kernels.md), `cudabench
// dot --size '1<<26'`: 2,645 GB/s, 0.909 of the device-to-device copy. No --best sweep has
// run yet (`scripts/ladder/run.sh OUT tune` runs one), so these are the best measured;
// change them with the sweep's numbers.
//
// The rung after `atomic`, which needs a second launch to zero the result and sums each
// block in a shared-memory tree with a __syncthreads per level. Here:
//
// - Loads: a thread reads 16 bytes of a and of b per access (LDG.E.128: 4 floats or ints,
//   8 halves, 2 doubles), UNROLL vectors apart by the grid's stride, all issued before
//   any is used, so each thread keeps 2 x UNROLL loads in flight. The grid is a few blocks
//   per SM, striding over the vectors. When a or b is not 16-byte aligned the whole sum
//   is scalar; the last N % VEC elements always are.
// - Block sum: warp shuffles (__shfl_down_sync, no shared memory), the warps' sums in
//   shared memory, and a last shuffle in warp 0: one __syncthreads.
// - One pass, no zeroing launch: each block atomically adds its sum into a __device__
//   accumulator and then, after a __threadfence, counts itself in a __device__ counter.
//   The block that counts last (every other block's sum already added: the fence orders
//   each block's add before its count) reads the accumulator, writes the result, and puts
//   accumulator and counter back to zero, so the next launch (stream-ordered after this
//   one) starts clean. Both variables are zero when the module loads. Float additions
//   across blocks happen in arrival order, so the result may differ between runs by
//   rounding (deterministic.cu does not). `partials` is not used.

#define VEC (16 / ELEM_SIZE)

struct __align__(16) Vec { DTYPE e[VEC]; };

__device__ ACC_TYPE dot_vs_sum;           // the blocks' sums; reset by the last block
__device__ unsigned int dot_vs_arrived;   // blocks done; reset by the last block

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

__device__ __forceinline__ ACC_TYPE warp_sum(ACC_TYPE v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dot_vectorized_shuffle(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
                       OUT_TYPE* __restrict__ out, OUT_TYPE* __restrict__ partials,
                       int N, int num_partials)
{
    __shared__ ACC_TYPE warp_sums[BLOCK / 32];
    const long long stride = (long long)BLOCK * gridDim.x;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x;
    ACC_TYPE sum = 0;  // float16 products are exact in float32
    long long scalar_from = 0;
    if (aligned16(a) && aligned16(b)) {
        const Vec* av = reinterpret_cast<const Vec*>(a);
        const Vec* bv = reinterpret_cast<const Vec*>(b);
        const long long vectors = N / VEC;
        long long i = first;
        for (; i + (UNROLL - 1) * stride < vectors; i += UNROLL * stride) {
            Vec x[UNROLL], y[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                x[u] = av[i + u * stride];
                y[u] = bv[i + u * stride];
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                for (int j = 0; j < VEC; ++j) sum += (ACC_TYPE)x[u].e[j] * (ACC_TYPE)y[u].e[j];
        }
        for (; i < vectors; i += stride) {
            const Vec x = av[i], y = bv[i];
#pragma unroll
            for (int j = 0; j < VEC; ++j) sum += (ACC_TYPE)x.e[j] * (ACC_TYPE)y.e[j];
        }
        scalar_from = vectors * VEC;
    }
    for (long long i = scalar_from + first; i < N; i += stride)  // the tail, or everything
        sum += (ACC_TYPE)a[i] * (ACC_TYPE)b[i];

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    sum = warp_sum(sum);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < BLOCK / 32 ? warp_sums[lane] : (ACC_TYPE)0;
        sum = warp_sum(sum);
        if (lane == 0) {
            atomicAdd(&dot_vs_sum, sum);
            __threadfence();  // this block's add is visible before its count
            if (atomicAdd(&dot_vs_arrived, 1u) == gridDim.x - 1) {
                __threadfence();
                const ACC_TYPE total = atomicAdd(&dot_vs_sum, (ACC_TYPE)0);  // read at L2
                out[0] = (OUT_TYPE)total;
                dot_vs_sum = 0;       // the next launch starts from zero
                dot_vs_arrived = 0;
            }
        }
    }
}
