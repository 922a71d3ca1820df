// cudabench: matmul
// description: blocktile2d with 128-bit loads of A and B (scalar where a row is not 16-byte aligned), a padded transposed A tile and 128-bit stores of C (siboehm's kernel 6).
// param BM: default 128; allowed 64, 128
// param BN: default 128; allowed 64, 128
// param BK: default 16; allowed 8, 16, 32
// param TM: default 8; allowed 4, 8
// param TN: default 8; allowed 4, 8
// param MIN_BLOCKS: default 1; allowed 1, 2
// run: on request
// launch matmul_vectorized: grid cdiv(N, BN), cdiv(M, BM); block (BM // TM) * (BN // TN); dynamic_shared (BK * (BM + 16 // ELEM_SIZE) + BK * BN) * ELEM_SIZE

// `run: on request`: an intermediate rung, beaten at both goal sizes by warptile (4096^3)
// and async_double_buffer (1000^3), so the default matmul table leaves it out (one note
// says so); `--variant vectorized` or `--variant all` (the whole ladder) runs it.
//
// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/matmul_4096.json, matmul_1000.json;
// docs/kernels.md), `cudabench matmul --size 4096`: 26.3 TFLOP/s, 0.509 of cuBLAS; at 1000^3
// 12.0 TFLOP/s, 0.366. No --best sweep has run yet (`scripts/ladder/run.sh OUT tune` runs
// one), so these are the best measured; change them with the sweep's numbers.
//
// Rung 2. The same register tiles as blocktile2d; what changes is how the tiles travel:
//
// - Global loads of A and B move 16 bytes per instruction (LDG.E.128: 4 floats or ints,
//   8 halves, 2 doubles), a quarter of the load instructions for float32.
// - A 16-byte load needs a 16-byte-aligned address. A row of A starts at A + r * K, so
//   every row is aligned only when the base is and K is a multiple of VEC (16 bytes of
//   elements); likewise B's rows with N. The kernel checks that once (the same answer for
//   every block) and otherwise loads element by element, as blocktile2d does: K = 1001 or
//   N = 37 are as right as K = 1024, only slower. When rows are aligned, a vector starts at
//   a multiple of VEC and K (or N) is one too, so a vector is either wholly inside the
//   matrix or wholly past its edge (loaded as zeros): no partial vectors exist.
// - A's tile is stored transposed with VEC elements (16 bytes) of padding per row of the
//   shared tile: a warp's scalar stores of a loaded vector then fall in different banks,
//   and each shared row stays 16-byte aligned for vector reads of the fragments.
// - C is written 16 bytes at a time where N's rows are aligned and TN holds whole vectors.

// MIN_BLOCKS is __launch_bounds__'s minimum of resident blocks per SM: 2 caps the registers
// at 32768 / THREADS (128 at 256 threads), so two blocks share an SM, at the price of a
// few spilled bytes in some configurations; 1 lets ptxas use up to 255. It applies to
// 4-byte accumulators only: float64's accumulators alone fill 128 registers at the
// defaults, and capping them spills kilobytes, so float64 always gets 1.
#define RESIDENT_BLOCKS (ACC_SIZE == 8 ? 1 : MIN_BLOCKS)

#define THREADS ((BM / TM) * (BN / TN))
#define CDIV(a, b) (((a) + (b) - 1) / (b))
#define VEC (16 / ELEM_SIZE)    // input elements in 16 bytes
#define OVEC (16 / OUT_SIZE)    // output elements in 16 bytes
#define LDA (BM + VEC)          // row length of the transposed A tile, padded by 16 bytes

struct __align__(16) Vec { DTYPE e[VEC]; };
struct __align__(16) OutVec { OUT_TYPE e[OVEC]; };

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

extern "C" __global__ void __launch_bounds__(THREADS, RESIDENT_BLOCKS)
matmul_vectorized(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                  OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE* As = reinterpret_cast<DTYPE*>(smem);  // [BK][LDA], A's tile transposed
    DTYPE* Bs = As + BK * LDA;                    // [BK][BN]; BK * LDA * ELEM_SIZE % 16 == 0

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    // Uniform over the grid: every row of A (of B, of C) starts 16-byte aligned.
    const bool a_vec = K % VEC == 0 && aligned16(A);
    const bool b_vec = N % VEC == 0 && aligned16(B);
    const bool c_vec = TN % OVEC == 0 && N % OVEC == 0 && aligned16(C);

    ACC_TYPE acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0;

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (a_vec) {
#pragma unroll
            for (int it = 0; it < CDIV(BM * BK / VEC, THREADS); ++it) {
                const int i = it * THREADS + tid;
                if ((BM * BK / VEC) % THREADS == 0 || i < BM * BK / VEC) {
                    const int r = i / (BK / VEC), cv = i % (BK / VEC);
                    const int gr = row0 + r, gc = k0 + cv * VEC;
                    Vec v;
                    if (gr < M && gc < K) {  // K % VEC == 0: then gc + VEC <= K
                        v = *reinterpret_cast<const Vec*>(A + (size_t)gr * K + gc);
                    } else {
#pragma unroll
                        for (int j = 0; j < VEC; ++j) v.e[j] = DTYPE(0);
                    }
#pragma unroll
                    for (int j = 0; j < VEC; ++j) As[(cv * VEC + j) * LDA + r] = v.e[j];
                }
            }
        } else {
#pragma unroll
            for (int it = 0; it < CDIV(BM * BK, THREADS); ++it) {
                const int i = it * THREADS + tid;
                if ((BM * BK) % THREADS == 0 || i < BM * BK) {
                    const int r = i / BK, c = i % BK;
                    const int gr = row0 + r, gc = k0 + c;
                    As[c * LDA + r] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : DTYPE(0);
                }
            }
        }
        if (b_vec) {
#pragma unroll
            for (int it = 0; it < CDIV(BK * BN / VEC, THREADS); ++it) {
                const int i = it * THREADS + tid;
                if ((BK * BN / VEC) % THREADS == 0 || i < BK * BN / VEC) {
                    const int r = i / (BN / VEC), cv = i % (BN / VEC);
                    const int gr = k0 + r, gc = col0 + cv * VEC;
                    Vec v;
                    if (gr < K && gc < N) {  // N % VEC == 0: then gc + VEC <= N
                        v = *reinterpret_cast<const Vec*>(B + (size_t)gr * N + gc);
                    } else {
#pragma unroll
                        for (int j = 0; j < VEC; ++j) v.e[j] = DTYPE(0);
                    }
                    *reinterpret_cast<Vec*>(Bs + r * BN + cv * VEC) = v;
                }
            }
        } else {
#pragma unroll
            for (int it = 0; it < CDIV(BK * BN, THREADS); ++it) {
                const int i = it * THREADS + tid;
                if ((BK * BN) % THREADS == 0 || i < BK * BN) {
                    const int r = i / BN, c = i % BN;
                    const int gr = k0 + r, gc = col0 + c;
                    Bs[r * BN + c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : DTYPE(0);
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            ACC_TYPE a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = (ACC_TYPE)As[k * LDA + trow * TM + i];
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
        if (r >= M) break;
        if (c_vec) {
#pragma unroll
            for (int jv = 0; jv < TN / OVEC; ++jv) {
                const int c = col0 + tcol * TN + jv * OVEC;
                if (c < N) {  // N % OVEC == 0: the whole vector is inside
                    OutVec v;
#pragma unroll
                    for (int j = 0; j < OVEC; ++j) v.e[j] = (OUT_TYPE)acc[i][jv * OVEC + j];
                    *reinterpret_cast<OutVec*>(C + (size_t)r * N + c) = v;
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const int c = col0 + tcol * TN + j;
                if (c < N) C[(size_t)r * N + c] = (OUT_TYPE)acc[i][j];
            }
        }
    }
}
