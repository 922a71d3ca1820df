// cudabench: matmul
// description: warptile fed by cp.async into STAGES shared-memory buffers (2: double buffering), so the next tiles load while this one is computed; synchronous copies before sm_80.
// param BM: default 128; allowed 64, 128
// param BN: default 128; allowed 64, 128
// param BK: default 16; allowed 8, 16, 32
// param WM: default 32; allowed 32, 64
// param WN: default 64; allowed 32, 64
// param STAGES: default 2; allowed 2, 3, 4
// param MIN_BLOCKS: default 2; allowed 1, 2
// launch matmul_async_double_buffer: grid cdiv(N, BN), cdiv(M, BM); block (BM // WM) * (BN // WN) * 32; dynamic_shared STAGES * (BK * (BM + 16 // ELEM_SIZE) + BK * BN) * ELEM_SIZE

// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/matmul_4096.json, matmul_1000.json;
// docs/kernels.md), `cudabench matmul --size 4096`: 35.5 TFLOP/s, 0.688 of cuBLAS; at 1000^3
// 15.0 TFLOP/s, 0.456 (the best rung there). No --best sweep has run yet
// (`scripts/ladder/run.sh OUT tune` runs one), so these are the best measured; change them
// with the sweep's numbers.
//
// Rung 4. warptile loads a tile, waits for it (__syncthreads), computes, and only then
// loads the next: the load latency is paid once per tile, with the FMA units idle. Here
// the shared memory holds STAGES tiles of A and B. Tiles t + 1 .. t + STAGES - 1 are in
// flight while tile t is computed, copied by cp.async (sm_80 and later): global to shared
// memory without passing through registers, asynchronously, in commit groups that
// cp.async.wait_group waits for.
//
// - B's rows are copied 16 bytes at a time (LDGSTS.E.BYPASS.128 in the SASS) where every
//   row is 16-byte aligned (N a multiple of 16 bytes of elements, B aligned), else one
//   element at a time. A's tile is stored transposed (As[k][m], as in warptile), which a
//   16-byte copy cannot do, so A moves one element per cp.async (4 or 8 bytes; CUTLASS's
//   SIMT pipeline does the same for a row-major A). cp.async has no 2-byte form: float16
//   copies A (and a misaligned B) with ordinary loads and stores, still double-buffered.
// - Edges: a copy past M, K or N asks cp.async for 0 source bytes, which reads nothing
//   and fills the destination with zeros (the source address given is the buffer's start,
//   always valid); the epilogue stores only inside C.
// - The pipeline: the prologue issues tiles 0 .. STAGES-2, one commit group each (empty
//   groups too, so the count is the same at every step). At step t the kernel waits until
//   at most STAGES-2 groups are pending, i.e. tile t has landed, synchronises the block
//   (which also means every warp has finished step t-1), issues tile t + STAGES - 1 into
//   the buffer step t-1 read, and computes tile t. One __syncthreads per tile.
//
// The `arch` header field builds a variant for one compute capability's major version
// (sm_80 would skip on an H100), so nothing in the header restricts this variant: before
// sm_80 the copies are plain loads and stores (`#if __CUDA_ARCH__ >= 800`), right but
// without the overlap.

// MIN_BLOCKS is __launch_bounds__'s minimum of resident blocks per SM: 2 caps the registers
// at 32768 / THREADS (128 at 256 threads), so two blocks share an SM, at the price of a
// few spilled bytes in some configurations; 1 lets ptxas use up to 255. It applies to
// 4-byte accumulators only: float64's accumulators alone fill 128 registers at the
// defaults, and capping them spills kilobytes, so float64 always gets 1.
#define RESIDENT_BLOCKS (ACC_SIZE == 8 ? 1 : MIN_BLOCKS)

#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER (WM / 16)
#define WNITER (WN / 32)
#define CDIV(a, b) (((a) + (b) - 1) / (b))
#define VEC (16 / ELEM_SIZE)
#define OVEC (16 / OUT_SIZE)
#define LDA (BM + VEC)                       // padded row of the transposed A tile
#define STAGE_ELEMS (BK * LDA + BK * BN)     // one stage: A tile then B tile; 16-byte multiple

struct __align__(16) OutVec { OUT_TYPE e[OVEC]; };

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// 16 bytes global -> shared; pred false: no read, 16 zero bytes written.
__device__ __forceinline__ void copy16(void* dst, const void* src, bool pred)
{
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(s), "l"(src), "r"(pred ? 16 : 0) : "memory");
#else
    *reinterpret_cast<int4*>(dst) = pred ? *reinterpret_cast<const int4*>(src)
                                         : make_int4(0, 0, 0, 0);
#endif
}

// One element global -> shared; pred false: no read, a zero written. Asynchronous for 4- and
// 8-byte elements on sm_80 and later, an ordinary load and store otherwise.
__device__ __forceinline__ void copy1(DTYPE* dst, const DTYPE* src, bool pred)
{
#if __CUDA_ARCH__ >= 800 && ELEM_SIZE >= 4
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n"
                 :: "r"(s), "l"(src), "n"(ELEM_SIZE), "r"(pred ? ELEM_SIZE : 0) : "memory");
#else
    *dst = pred ? *src : DTYPE(0);
#endif
}

__device__ __forceinline__ void commit_group()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int PENDING>
__device__ __forceinline__ void wait_group()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
#endif
}

// Issue the copies of the tiles at k0 into one stage. The per-element loops stay rolled
// (`unroll 1`): a cp.async has no destination register, so unrolling buys no loads in
// flight, and unrolled, the compiler hoists every copy's address out of the k loop (up
// to 32 of them per thread) and spills.
__device__ __forceinline__ void load_tile(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                                          DTYPE* As, DTYPE* Bs, int M, int K, int N,
                                          int row0, int col0, int k0, bool b_vec, int tid)
{
#pragma unroll 1
    for (int it = 0; it < CDIV(BM * BK, THREADS); ++it) {
        const int i = it * THREADS + tid;
        if ((BM * BK) % THREADS == 0 || i < BM * BK) {
            const int r = i / BK, c = i % BK;  // consecutive threads: consecutive k of a row
            const int gr = row0 + r, gc = k0 + c;
            const bool in = gr < M && gc < K;
            copy1(As + c * LDA + r, in ? A + (size_t)gr * K + gc : A, in);
        }
    }
    if (b_vec) {
#pragma unroll
        for (int it = 0; it < CDIV(BK * BN / VEC, THREADS); ++it) {
            const int i = it * THREADS + tid;
            if ((BK * BN / VEC) % THREADS == 0 || i < BK * BN / VEC) {
                const int r = i / (BN / VEC), cv = i % (BN / VEC);
                const int gr = k0 + r, gc = col0 + cv * VEC;
                const bool in = gr < K && gc < N;  // N % VEC == 0: then gc + VEC <= N
                copy16(Bs + r * BN + cv * VEC, in ? B + (size_t)gr * N + gc : B, in);
            }
        }
    } else {
#pragma unroll 1
        for (int it = 0; it < CDIV(BK * BN, THREADS); ++it) {
            const int i = it * THREADS + tid;
            if ((BK * BN) % THREADS == 0 || i < BK * BN) {
                const int r = i / BN, c = i % BN;
                const int gr = k0 + r, gc = col0 + c;
                const bool in = gr < K && gc < N;
                copy1(Bs + r * BN + c, in ? B + (size_t)gr * N + gc : B, in);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, RESIDENT_BLOCKS)
matmul_async_double_buffer(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                           OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE* stages = reinterpret_cast<DTYPE*>(smem);  // STAGES x ([BK][LDA] A, [BK][BN] B)

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wrow = (warp / WARPS_N) * WM, wcol = (warp % WARPS_N) * WN;
    const int lrow = (lane / 8) * 4, lcol = (lane % 8) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool b_vec = N % VEC == 0 && aligned16(B);
    const bool c_vec = 4 % OVEC == 0 && N % OVEC == 0 && aligned16(C);
    const int tiles = CDIV(K, BK);

    ACC_TYPE acc[WMITER][WNITER][4][4];
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[wm][wn][i][j] = 0;

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            DTYPE* As = stages + s * STAGE_ELEMS;
            load_tile(A, B, As, As + BK * LDA, M, K, N, row0, col0, s * BK, b_vec, tid);
        }
        commit_group();
    }

    int read_stage = 0, write_stage = STAGES - 1;
    for (int t = 0; t < tiles; ++t) {
        wait_group<STAGES - 2>();  // tile t has landed (this thread's copies)
        __syncthreads();           // everyone's copies of tile t; everyone done with t-1
        if (t + STAGES - 1 < tiles) {
            DTYPE* As = stages + write_stage * STAGE_ELEMS;  // the stage step t-1 read
            load_tile(A, B, As, As + BK * LDA, M, K, N, row0, col0, (t + STAGES - 1) * BK,
                      b_vec, tid);
        }
        commit_group();
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;

        const DTYPE* As = stages + read_stage * STAGE_ELEMS;
        const DTYPE* Bs = As + BK * LDA;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            ACC_TYPE a[WMITER][4], b[WNITER][4];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    a[wm][i] = (ACC_TYPE)As[k * LDA + wrow + wm * 16 + lrow + i];
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    b[wn][j] = (ACC_TYPE)Bs[k * BN + wcol + wn * 32 + lcol + j];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int j = 0; j < 4; ++j) acc[wm][wn][i][j] += a[wm][i] * b[wn][j];
        }
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    }
    wait_group<0>();  // only empty groups can be pending here; leave none behind

#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = row0 + wrow + wm * 16 + lrow + i;
            if (r >= M) continue;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int c = col0 + wcol + wn * 32 + lcol;
                if (c_vec) {
#pragma unroll
                    for (int jv = 0; jv < 4 / OVEC; ++jv) {
                        if (c + jv * OVEC < N) {  // N % OVEC == 0: the whole vector is inside
                            OutVec v;
#pragma unroll
                            for (int j = 0; j < OVEC; ++j)
                                v.e[j] = (OUT_TYPE)acc[wm][wn][i][jv * OVEC + j];
                            *reinterpret_cast<OutVec*>(C + (size_t)r * N + c + jv * OVEC) = v;
                        }
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (c + j < N) C[(size_t)r * N + c + j] = (OUT_TYPE)acc[wm][wn][i][j];
                }
            }
        }
}
