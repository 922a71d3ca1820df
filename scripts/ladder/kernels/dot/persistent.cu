// cudabench: dot
// description: deterministic's fixed-order sum and one-pass finish on a persistent grid whose threads always have UNROLL 128-bit loads of each input in flight (the next batch is issued before the current one's FMAs), evict-first load hints (LOAD_CACHE), and the vectors walked grid-stride (LAYOUT 1) or in one contiguous run a block (LAYOUT 2).
// param BLOCK: default 256; allowed 32, 64, 128, 256, 512, 1024
// param BLOCKS_PER_SM: default 2; allowed 1..32
// param UNROLL: default 4; allowed 1, 2, 4, 8
// param LOAD_CACHE: default 2; allowed 1, 2, 3
// param LAYOUT: default 1; allowed 1, 2
// run: on request
// launch dot_persistent: grid min(cdiv(N, BLOCK * 16 // ELEM_SIZE), SM_COUNT * min(BLOCKS_PER_SM, 2048 // BLOCK)); block BLOCK

// DRAFT (issue 25, scripts/ladder/kernels/), measured and slower, kept as the record of what
// did not help: 0.941-0.955 of the copy at 1<<26 float32 on an H100 with its evict-first
// loads (2026-11-26, scripts/ladder/draft_call_2.sh: 0.955 at these defaults, LOAD_CACHE 2
// and 3 at either LAYOUT 0.941-0.955). With plain loads (LOAD_CACHE=1) it reached 0.986
// (LAYOUT 1) and 0.973 (LAYOUT 2), about deterministic's 0.981 in the same run: software
// pipelining gains nothing measurable; the built-in bulk.cu reached 0.991-1.000
// (docs/data/ladder-2026-11-26/draft2-sweep_dot_persistent.txt, draft2-dot_1_26.txt).
//
// deterministic.cu reads at ~2,870 GB/s on an H100 whatever its BLOCK, BLOCKS_PER_SM and
// UNROLL (a --best sweep found them all within noise). Its threads issue UNROLL loads of
// each input, wait for all of them, do the FMAs, and only then issue the next batch. Here:
//
// - Software pipelining: a thread loads batch k + 1 into a second set of registers before
//   the FMAs of batch k, so its UNROLL + UNROLL loads are never drained between batches.
//   With B = min(BLOCKS_PER_SM, 2048 / BLOCK) (what an SM's 2,048 threads hold), the grid
//   is at most SM_COUNT x B blocks and __launch_bounds__(BLOCK, B) keeps the registers
//   within what B resident blocks allow: one wave (persistent), not several.
// - Evict-first hints (LOAD_CACHE): 1 plain loads (LDG.E.128); 2 ld.global.cs (__ldcs, SASS
//   LDG.E.EF.128: the line gets evict-first priority in L1 and L2); 3
//   ld.global.L1::no_allocate with an L2 evict-first cache policy (createpolicy). Each byte is read once, so the lines a launch
//   brings into L2 can replace each other instead of older lines. Caution: with cold-L2
//   timing the L2 starts every sample full of the flush memset's dirty lines; lines that
//   stay are written back after the timed launch, not during it. A gain here that the
//   batch (warm) column does not show is that, not faster reads.
// - LAYOUT 1: deterministic's grid stride (vector v of thread g: g, g + S, g + 2S, ... with
//   S = BLOCK x gridDim.x): consecutive warps read consecutive 512-byte segments and the
//   whole grid sweeps the vectors as one front. LAYOUT 2: block b reads segments
//   [b * segs / G, (b + 1) * segs / G) of the 512-byte segments (32 vectors), thread t
//   the vectors t, t + BLOCK, ... of that run: consecutive warps still read consecutive
//   segments, but each block streams its own contiguous ~1 MB of each input at 1<<26 (G
//   streams in DRAM instead of one front). The vectors after the last whole segment, and
//   the elements after the last whole vector, go grid-stride as in LAYOUT 1.
//
// Determinism (deterministic.cu's argument): the grid depends only on N, the parameters and
// the SM count; each thread visits a fixed list of vectors in increasing order, each
// vector's elements in order, with explicit fused multiply-adds; pipelining changes when a
// load is issued, not the order of the additions. The block sums go through a fixed
// shuffle tree into partials[blockIdx.x]; the last block to count itself (a __device__
// counter it resets for the next launch) sums the partials in a fixed order. When a or b
// is not 16-byte aligned every element is summed scalar, in the same per-thread order the
// vector path would use (LAYOUT 1), or grid-stride (LAYOUT 2: no whole vectors at all).

#define VEC (16 / ELEM_SIZE)
#define SEG 32  // vectors a 512-byte segment (a warp's load)
#define MIN_BLOCKS (BLOCKS_PER_SM < 2048 / BLOCK ? BLOCKS_PER_SM : 2048 / BLOCK)

struct __align__(16) Vec { DTYPE e[VEC]; };
static_assert(sizeof(Vec) == 16, "a vector is 16 bytes");

__device__ unsigned int dot_persistent_arrived;  // blocks done; reset by the last block

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// s + x y, rounded once for floats whatever -fmad says.
__device__ __forceinline__ float mad(float x, float y, float s) { return fmaf(x, y, s); }
__device__ __forceinline__ double mad(double x, double y, double s) { return fma(x, y, s); }
__device__ __forceinline__ int mad(int x, int y, int s) { return x * y + s; }

__device__ __forceinline__ unsigned long long evict_first_policy()
{
    unsigned long long policy = 0;
#if LOAD_CACHE == 3
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

__device__ __forceinline__ Vec load(const Vec* p, unsigned long long policy)
{
#if LOAD_CACHE == 1
    return *p;
#else
    uint4 r;
#if LOAD_CACHE == 2
    r = __ldcs(reinterpret_cast<const uint4*>(p));  // ld.global.cs.v4.u32
#else
    asm("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(policy));
#endif
    Vec v;
    memcpy(&v, &r, sizeof(v));
    return v;
#endif
}

__device__ __forceinline__ void add_vec(const Vec& x, const Vec& y, ACC_TYPE& sum)
{
#pragma unroll
    for (int j = 0; j < VEC; ++j) sum = mad((ACC_TYPE)x.e[j], (ACC_TYPE)y.e[j], sum);
}

// Sum the whole vectors v, v + step, v + 2 step, ... below limit into sum, in that order:
// UNROLL at a time with the next UNROLL already loading, then one at a time. Returns the
// first v not summed (>= limit).
__device__ __forceinline__ long long sum_run(const Vec* __restrict__ av, const Vec* __restrict__ bv,
                                             long long v, long long step, long long limit,
                                             unsigned long long policy, ACC_TYPE& sum)
{
    if (v + (UNROLL - 1) * step < limit) {
        Vec x[UNROLL], y[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            x[u] = load(av + v + u * step, policy);
            y[u] = load(bv + v + u * step, policy);
        }
        // While another whole batch follows: issue its loads, then the FMAs of this one.
        // (The loads are unconditional inside the loop so that ptxas keeps them ahead of
        // the FMAs; a conditional prefetch was scheduled after them.)
        for (; v + (2 * UNROLL - 1) * step < limit; v += UNROLL * step) {
            Vec nx[UNROLL], ny[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                nx[u] = load(av + v + (UNROLL + u) * step, policy);
                ny[u] = load(bv + v + (UNROLL + u) * step, policy);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) add_vec(x[u], y[u], sum);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                x[u] = nx[u];
                y[u] = ny[u];
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) add_vec(x[u], y[u], sum);  // the last batch
        v += UNROLL * step;
    }
    for (; v < limit; v += step) add_vec(load(av + v, policy), load(bv + v, policy), sum);
    return v;
}

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

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
dot_persistent(const DTYPE* __restrict__ a, const DTYPE* __restrict__ b,
               OUT_TYPE* __restrict__ out, OUT_TYPE* __restrict__ partials,
               int N, int num_partials)
{
    __shared__ ACC_TYPE warp_sums[BLOCK / 32];
    __shared__ bool last;
    const long long grid = gridDim.x;
    const long long stride = (long long)BLOCK * grid;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const long long vectors = ((long long)N + VEC - 1) / VEC;  // the last may be partial
    const long long whole = aligned16(a) && aligned16(b) ? N / VEC : 0;  // loadable as vectors
    const Vec* av = reinterpret_cast<const Vec*>(a);
    const Vec* bv = reinterpret_cast<const Vec*>(b);
    const unsigned long long policy = evict_first_policy();

    ACC_TYPE sum = 0;
    long long v;  // where the grid-stride rest starts, for this thread
#if LAYOUT == 1
    v = sum_run(av, bv, first, stride, whole, policy, sum);
#else
    {
        const long long segs = whole / SEG;  // whole 512-byte segments
        const long long s0 = segs * blockIdx.x / grid, s1 = segs * (blockIdx.x + 1) / grid;
        sum_run(av, bv, s0 * SEG + threadIdx.x, BLOCK, s1 * SEG, policy, sum);
        v = segs * SEG + first;  // the vectors after the last whole segment
        for (; v < whole; v += stride) add_vec(load(av + v, policy), load(bv + v, policy), sum);
    }
#endif
    // Past the whole vectors: the last partial vector, or everything when a or b is not
    // 16-byte aligned (whole == 0), element by element in vector order.
    for (; v < vectors; v += stride) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const long long i = v * VEC + j;
            if (i < N) sum = mad((ACC_TYPE)a[i], (ACC_TYPE)b[i], sum);
        }
    }

    sum = block_sum(sum, warp_sums);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = (OUT_TYPE)sum;  // OUT_TYPE is ACC_TYPE for every dot type
        __threadfence();                       // the partial is visible before the count
        last = atomicAdd(&dot_persistent_arrived, 1u) == gridDim.x - 1;
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
        dot_persistent_arrived = 0;  // the next launch counts from zero
    }
}
