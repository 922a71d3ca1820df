// cudabench: matmul
// description: 128x128 block tiles, 8x8 per thread read from shared memory as 128-bit fragments, the next K tile prefetched global -> registers while this one is computed (double-buffered shared tiles, one barrier per tile), and split-K chosen by shape so that small problems still fill the GPU.
// dtypes: float32
// param BK: default 8; allowed 8, 16
// param MIN_BLOCKS: default 2; allowed 1, 2
// param SPLIT_MAX: default 8; allowed 1, 2, 4, 8, 16
// run: on request
// launch matmul_prefetch_splitk_zero: grid max(1, cdiv(M * N, 1024) * min(1, max(1, min(SPLIT_MAX, (2 * SM_COUNT) // (cdiv(N, 128) * cdiv(M, 128)), cdiv(K, 256))) - 1)); block 256
// launch matmul_prefetch_splitk: grid cdiv(N, 128), cdiv(M, 128), max(1, min(SPLIT_MAX, (2 * SM_COUNT) // (cdiv(N, 128) * cdiv(M, 128)), cdiv(K, 256))); block 256

// `run: on request`: beaten at both goal sizes by fragment_double_buffer, the rung above it
// (H100, 2026-11-26, float32, cold L2: 3.331 ms against 2.910 ms at 4096^3, 61.31 us against
// 57.02 us at 1000^3; docs/kernels.md), so the default matmul table leaves it out (one note
// says so); `--variant prefetch_splitk` or `--variant all` (the whole ladder) runs it.
//
// The CUDA-core SGEMM as fast kernels write it (the seeds' tiles grown up):
//
// - A block of 256 threads computes a 128 x 128 tile of C; each thread an 8 x 8 piece, made
//   of four 4 x 4 quarters at rows ty*4 and 64 + ty*4, columns tx*4 and 64 + tx*4. Per k a
//   thread reads its 8 values of A and 8 of B as four 128-bit shared loads (LDS.128) and does
//   64 FMAs: 16 FMAs per load instruction.
// - Lanes are laid out 4 (ty) x 8 (tx) in a warp, so one LDS.128 of B reads 8 consecutive
//   16-byte chunks (128 bytes, one wavefront, the 4 rows of lanes served by broadcast) and one
//   of A reads 4 (64 bytes): shared memory is never the bottleneck.
// - A's tile is stored transposed (As[k][m]) so a thread's 4 rows are one 16-byte chunk; its
//   rows are padded to 132 floats so that the transposing stores of a warp (16 rows x 2
//   chunks) fall in 32 different banks.
// - The prefetch: tile t+1 is loaded from global memory into registers (one float4 of A and
//   one of B per thread at BK 8) before tile t is computed, and stored to the other shared
//   buffer after: the loads' latency hides behind 8 x 64 FMAs. One __syncthreads per tile.
// - Split-K: at 1000^3 the 128 x 128 tiles make 64 blocks for 132 SMs. The grid's third
//   extent splits K into up to SPLIT_MAX slices (at least 256 of K each) until there are
//   about two blocks per SM; each slice adds its partial tile into C with atomicAdd on
//   float4 (sm_90; nvcc 13.0 emits it as four scalar REDG.ADD.F32), after a launch that
//   zeroes C. Where one slice is enough (4096^3: 1024 blocks) the zeroing launch is a
//   single block (it zeroes C's first 1024 elements, which the main kernel then
//   overwrites) and C is stored plainly. Atomic adds make the summation order vary between runs, within the float32
//   bound the check uses for any order.
// - Edges: where K and N are multiples of 4 and A and B 16-byte aligned, tiles move as
//   float4 (a vector is wholly in or out of the matrix); otherwise element by element. Either
//   way a load past M, K or N is a zero and C is written only inside M x N.

#define BM 128
#define BN 128
#define THREADS 256
#define LDA (BM + 4)                 // padded row of the transposed A tile (floats)
#define A_VECS (BM * BK / 4 / THREADS)  // float4 of A per thread per tile
#define B_VECS (BK * BN / 4 / THREADS)  // float4 of B per thread per tile

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// Zero C before the slices add into it: one float4 (or its tail) per thread. With one
// slice (split == 1) the grid is a single block and the main kernel overwrites C anyway.
extern "C" __global__ void matmul_prefetch_splitk_zero(const float* __restrict__ A,
                                                       const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int K, int N)
{
    const long long total = (long long)M * N;
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < total && aligned16(C)) {
        *reinterpret_cast<float4*>(C + i) = make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
        for (long long j = i; j < i + 4 && j < total; ++j) C[j] = 0.f;
    }
}

// Load tile k0 of A (rows row0.., columns k0..) and of B (rows k0.., columns col0..) into
// registers; zeros past the edges.
__device__ __forceinline__ void load_tiles(const float* __restrict__ A, const float* __restrict__ B,
                                           int M, int K, int N, int row0, int col0, int k0,
                                           bool vec, int tid, float4 (&ra)[A_VECS],
                                           float4 (&rb)[B_VECS])
{
#pragma unroll
    for (int v = 0; v < A_VECS; ++v) {
        const int idx = v * THREADS + tid;
        const int r = row0 + idx / (BK / 4), c = k0 + (idx % (BK / 4)) * 4;
        if (vec) {
            ra[v] = r < M && c < K ? *reinterpret_cast<const float4*>(A + (size_t)r * K + c)
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
        } else {
            const float* p = A + (size_t)r * K + c;
            const bool in = r < M;
            ra[v].x = in && c < K ? p[0] : 0.f;
            ra[v].y = in && c + 1 < K ? p[1] : 0.f;
            ra[v].z = in && c + 2 < K ? p[2] : 0.f;
            ra[v].w = in && c + 3 < K ? p[3] : 0.f;
        }
    }
#pragma unroll
    for (int v = 0; v < B_VECS; ++v) {
        const int idx = v * THREADS + tid;
        const int r = k0 + idx / (BN / 4), c = col0 + (idx % (BN / 4)) * 4;
        if (vec) {
            rb[v] = r < K && c < N ? *reinterpret_cast<const float4*>(B + (size_t)r * N + c)
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
        } else {
            const float* p = B + (size_t)r * N + c;
            const bool in = r < K;
            rb[v].x = in && c < N ? p[0] : 0.f;
            rb[v].y = in && c + 1 < N ? p[1] : 0.f;
            rb[v].z = in && c + 2 < N ? p[2] : 0.f;
            rb[v].w = in && c + 3 < N ? p[3] : 0.f;
        }
    }
}

// Registers -> one shared buffer: A transposed into As[k][m], B as it is.
__device__ __forceinline__ void store_tiles(float* As, float* Bs, int tid,
                                            const float4 (&ra)[A_VECS],
                                            const float4 (&rb)[B_VECS])
{
#pragma unroll
    for (int v = 0; v < A_VECS; ++v) {
        const int idx = v * THREADS + tid;
        const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
        As[(c + 0) * LDA + r] = ra[v].x;
        As[(c + 1) * LDA + r] = ra[v].y;
        As[(c + 2) * LDA + r] = ra[v].z;
        As[(c + 3) * LDA + r] = ra[v].w;
    }
#pragma unroll
    for (int v = 0; v < B_VECS; ++v) {
        const int idx = v * THREADS + tid;
        const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
        *reinterpret_cast<float4*>(Bs + r * BN + c) = rb[v];
    }
}

// Four values of C at (r, c..c+3): stored, or added when K is split; inside M x N only.
__device__ __forceinline__ void put4(float* __restrict__ C, int M, int N, int r, int c,
                                     float4 v, bool split, bool vec_c)
{
    if (r >= M) return;
    float* p = C + (size_t)r * N + c;
    if (vec_c && c + 3 < N) {
        if (!split) {
            *reinterpret_cast<float4*>(p) = v;
        } else {
#if __CUDA_ARCH__ >= 900
            atomicAdd(reinterpret_cast<float4*>(p), v);
#else
            atomicAdd(p, v.x); atomicAdd(p + 1, v.y); atomicAdd(p + 2, v.z); atomicAdd(p + 3, v.w);
#endif
        }
        return;
    }
    const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (c + j < N) {
            if (split) atomicAdd(p + j, e[j]);
            else p[j] = e[j];
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
matmul_prefetch_splitk(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int M, int K, int N)
{
    __shared__ __align__(16) float As[2][BK * LDA];
    __shared__ __align__(16) float Bs[2][BK * BN];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ty = (warp / 2) * 4 + lane / 8;  // 0..15: this thread's rows ty*4, 64 + ty*4
    const int tx = (warp % 2) * 8 + lane % 8;  // 0..15: its columns tx*4, 64 + tx*4
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vec = K % 4 == 0 && N % 4 == 0 && aligned16(A) && aligned16(B);

    // This block's slice of K, in whole tiles.
    const int tiles = (K + BK - 1) / BK;
    const int per_slice = (tiles + gridDim.z - 1) / gridDim.z;
    const int first = blockIdx.z * per_slice;
    const int last = min(tiles, first + per_slice);
    const bool split = gridDim.z > 1;
    if (first >= last) return;  // an empty slice adds nothing (one slice is never empty)

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    float4 ra[A_VECS], rb[B_VECS];
    if (first < last) {
        load_tiles(A, B, M, K, N, row0, col0, first * BK, vec, tid, ra, rb);
        store_tiles(As[0], Bs[0], tid, ra, rb);
        __syncthreads();
    }
    for (int t = first; t < last; ++t) {
        const int cur = (t - first) & 1;
        const bool more = t + 1 < last;
        if (more) load_tiles(A, B, M, K, N, row0, col0, (t + 1) * BK, vec, tid, ra, rb);
        const float* as = As[cur];
        const float* bs = Bs[cur];
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(as + k * LDA + ty * 4);
            const float4 a1 = *reinterpret_cast<const float4*>(as + k * LDA + 64 + ty * 4);
            const float4 b0 = *reinterpret_cast<const float4*>(bs + k * BN + tx * 4);
            const float4 b1 = *reinterpret_cast<const float4*>(bs + k * BN + 64 + tx * 4);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) store_tiles(As[cur ^ 1], Bs[cur ^ 1], tid, ra, rb);
        __syncthreads();  // the next buffer is written; everyone is done reading this one
    }

    const bool vec_c = N % 4 == 0 && aligned16(C);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        put4(C, M, N, r, col0 + tx * 4,
             make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), split, vec_c);
        put4(C, M, N, r, col0 + 64 + tx * 4,
             make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), split, vec_c);
    }
}
