// cudabench: matmul
// description: vectorized plus warp tiling: each warp owns a WM x WN tile of C, each lane 4x4 sub-tiles spread over it (siboehm's kernel 10, CUTLASS's SIMT sgemm).
// param BM: default 128; allowed 64, 128
// param BN: default 128; allowed 64, 128
// param BK: default 16; allowed 8, 16, 32
// param WM: default 32; allowed 32, 64
// param WN: default 64; allowed 32, 64
// param MIN_BLOCKS: default 2; allowed 1, 2
// launch matmul_warptile: grid cdiv(N, BN), cdiv(M, BM); block (BM // WM) * (BN // WN) * 32; dynamic_shared (BK * (BM + 16 // ELEM_SIZE) + BK * BN) * ELEM_SIZE

// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/matmul_4096.json, matmul_1000.json;
// docs/kernels.md), `cudabench matmul --size 4096`: 36.2 TFLOP/s, 0.703 of cuBLAS (the best
// rung there); at 1000^3 10.4 TFLOP/s, 0.318. No --best sweep has run yet
// (`scripts/ladder/run.sh OUT tune` runs one), so these are the best measured; change them
// with the sweep's numbers.
//
// Rung 3. A block's BM x BN tile of C is split between warps, (BM / WM) x (BN / WN) of
// them, each owning a WM x WN tile. Within a warp the 32 lanes form a 4 x 8 grid; the warp
// tile is covered by WMITER x WNITER sub-tiles of 16 x 32, and in each a lane computes a
// 4 x 4 block of C: rows wm * 16 + lane_row * 4 + (0..3), columns wn * 32 + lane_col * 4 +
// (0..3). A lane holds WMITER x WNITER x 16 = WM * WN / 32 accumulators (64 at 32 x 64),
// with WMITER = WM / 16 and WNITER = WN / 32.
//
// Why: in vectorized a lane's TN values of B are TN apart from its neighbour's, so a warp's
// fragment reads spread over many banks at a stride (bank conflicts) and the per-lane tile
// layout ignores which warp reads what. Here, for one k, the 8 lane columns of a warp read
// 8 adjacent 16-byte pieces of B (128 contiguous bytes: one shared-memory wavefront, the
// 4 lane rows get them by broadcast) and the 4 lane rows read 4 adjacent 16-byte pieces of
// A. Each fragment is one 128-bit shared load (LDS.128) for 4-byte types, and a warp's
// working set stays in a small region of the tile, which is what the hardware schedules.
//
// The global loads are vectorized's (128-bit where rows are 16-byte aligned, else scalar),
// and so is the epilogue. Every allowed combination is valid: 1 to 16 warps per block.

// MIN_BLOCKS is __launch_bounds__'s minimum of resident blocks per SM: 2 caps the registers
// at 32768 / THREADS (128 at 256 threads), so two blocks share an SM, at the price of a
// few spilled bytes in some configurations; 1 lets ptxas use up to 255. It applies to
// 4-byte accumulators only: float64's accumulators alone fill 128 registers at the
// defaults, and capping them spills kilobytes, so float64 always gets 1.
#define RESIDENT_BLOCKS (ACC_SIZE == 8 ? 1 : MIN_BLOCKS)

#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER (WM / 16)        // 16 = 4 lane rows x 4 rows each
#define WNITER (WN / 32)        // 32 = 8 lane columns x 4 columns each
#define CDIV(a, b) (((a) + (b) - 1) / (b))
#define VEC (16 / ELEM_SIZE)
#define OVEC (16 / OUT_SIZE)
#define LDA (BM + VEC)          // padded row of the transposed A tile

struct __align__(16) Vec { DTYPE e[VEC]; };
struct __align__(16) OutVec { OUT_TYPE e[OVEC]; };

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

extern "C" __global__ void __launch_bounds__(THREADS, RESIDENT_BLOCKS)
matmul_warptile(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE* As = reinterpret_cast<DTYPE*>(smem);  // [BK][LDA], A's tile transposed
    DTYPE* Bs = As + BK * LDA;                    // [BK][BN]

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wrow = (warp / WARPS_N) * WM, wcol = (warp % WARPS_N) * WN;  // in the block tile
    const int lrow = (lane / 8) * 4, lcol = (lane % 8) * 4;                  // in a sub-tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool a_vec = K % VEC == 0 && aligned16(A);
    const bool b_vec = N % VEC == 0 && aligned16(B);
    const bool c_vec = 4 % OVEC == 0 && N % OVEC == 0 && aligned16(C);

    ACC_TYPE acc[WMITER][WNITER][4][4];
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[wm][wn][i][j] = 0;

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
        __syncthreads();
    }

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
