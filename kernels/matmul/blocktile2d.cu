// cudabench: matmul
// description: 2D register blocking: a block computes BM x BN of C, each thread a TM x TN register tile (siboehm's kernel 5).
// param BM: default 128; allowed 64, 128
// param BN: default 128; allowed 64, 128
// param BK: default 8; allowed 8, 16, 32
// param TM: default 8; allowed 4, 8
// param TN: default 8; allowed 4, 8
// run: on request
// launch matmul_blocktile2d: grid cdiv(N, BN), cdiv(M, BM); block (BM // TM) * (BN // TN); dynamic_shared (BM + BN) * BK * ELEM_SIZE

// `run: on request`: an intermediate rung, beaten at both goal sizes by warptile (4096^3)
// and async_double_buffer (1000^3), so the default matmul table leaves it out (one note
// says so); `--variant blocktile2d` or `--variant all` (the whole ladder) runs it.
//
// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/matmul_4096.json, matmul_1000.json;
// docs/kernels.md), `cudabench matmul --size 4096`: 29.9 TFLOP/s, 0.580 of cuBLAS; at 1000^3
// 10.1 TFLOP/s, 0.307. No --best sweep has run yet (`scripts/ladder/run.sh OUT tune` runs
// one), so these are the best measured; change them with the sweep's numbers.
//
// Rung 1 of the CUDA-core ladder (docs/kernels.md). `tiled` does one multiply-add
// per two shared-memory loads; here each thread keeps TM values of A and TN values of B in
// registers per step of k and does TM * TN multiply-adds with them, so shared memory is
// read TM * TN / (TM + TN) times less often per FLOP (4x at 8 x 8).
//
// A's tile is stored transposed (As[k][m]) so that a thread's TM values of A for one k are
// contiguous, like its TN values of B. Every combination of the allowed parameters is valid:
// the tile loads are loops over the tile with a compile-time trip count, whatever the
// thread count (64 to 1024), and elements past M, K or N load as zero and are never stored.
// Shared memory is dynamic, so float64 with the largest tiles (64 KiB) is opted in.

#define THREADS ((BM / TM) * (BN / TN))
#define CDIV(a, b) (((a) + (b) - 1) / (b))

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_blocktile2d(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                   OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE* As = reinterpret_cast<DTYPE*>(smem);  // [BK][BM], A's tile transposed
    DTYPE* Bs = As + BK * BM;                     // [BK][BN]

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);

    ACC_TYPE acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0;  // float16 inputs accumulate in float32

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A's tile: consecutive threads read consecutive k of a row (coalesced).
#pragma unroll
        for (int it = 0; it < CDIV(BM * BK, THREADS); ++it) {
            const int i = it * THREADS + tid;
            if ((BM * BK) % THREADS == 0 || i < BM * BK) {
                const int r = i / BK, c = i % BK;
                const int gr = row0 + r, gc = k0 + c;
                As[c * BM + r] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : DTYPE(0);
            }
        }
        // B's tile: consecutive threads read consecutive columns of a row.
#pragma unroll
        for (int it = 0; it < CDIV(BK * BN, THREADS); ++it) {
            const int i = it * THREADS + tid;
            if ((BK * BN) % THREADS == 0 || i < BK * BN) {
                const int r = i / BN, c = i % BN;
                const int gr = k0 + r, gc = col0 + c;
                Bs[r * BN + c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : DTYPE(0);
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            ACC_TYPE a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = (ACC_TYPE)As[k * BM + trow * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = (ACC_TYPE)Bs[k * BN + tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + trow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tcol * TN + j;
            if (r < M && c < N) C[(size_t)r * N + c] = (OUT_TYPE)acc[i][j];
        }
    }
}
