// cudabench: matmul
// description: Tensor cores through mma.sync.m16n8k16 (float16 in, float32 accumulation): each warp computes a 64x64 tile from ldmatrix fragments of XOR-swizzled shared tiles, the next tiles loaded into registers while this one is computed; sm_80 and later.
// dtypes: float16
// unit: tensor
// param BN: default 128; allowed 128, 256
// launch matmul_mma_sync: grid cdiv(N, BN), cdiv(M, 128); block 2 * (BN // 64) * 32; dynamic_shared 2 * (128 * 32 + 32 * BN) * ELEM_SIZE

// Tensor-core rung 1. A block computes a BM x BN tile of C (BM = 128) with 2 x (BN/64) warps,
// each a 64 x 64 tile: 4 x 8 mma.sync.m16n8k16 per 16 of K, 128 float accumulators per
// thread. K advances in steps of BK = 32.
//
// - Shared tiles: A as BM rows of 32 halves (4 chunks of 16 bytes), B as 32 rows of BN
//   halves. ldmatrix reads 8 rows x 16 bytes per 8x8 matrix; unswizzled, those 8 rows of
//   a 64- or 256-byte-wide tile share banks (4- and 8-way conflicts). The 16-byte chunk c
//   of row r is stored at chunk c ^ (r & 7) (rows of 8 or more chunks) or c ^ ((r >> 1) & 3)
//   (A's rows of 4 chunks, two rows per 128 bytes), so the 8 addresses of one ldmatrix
//   phase, and the 16-byte stores that fill the tile, touch 8 different bank groups.
// - Fragments: ldmatrix.x4 gives one 16x16 A fragment; ldmatrix.x4.trans on the k-major B
//   tile gives the "col" B fragments of two n8 tiles.
// - Pipeline without cp.async: the next K tile is loaded from global memory into
//   registers before this one is computed, and stored into the other of two shared
//   buffers after; one __syncthreads per tile.
// - Edges: 16-byte global loads where the rows are 16-byte aligned (K, resp. N, a multiple
//   of 8 and the buffer aligned), a chunk past M, K or N reads as zeros; otherwise element
//   by element with the same zeros. C is stored two halves at a time where N is even,
//   one at a time otherwise, only inside M x N.
//
// mma.sync and ldmatrix need sm_80 (the m16n8k16 shape); there is no arch line, so the
// variant builds for the GPU it runs on. On Hopper it reaches a fraction of the tensor
// cores' rate: wgmma (wgmma_tma.cu) is the instruction that feeds them fully.

#include <cuda_fp16.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_sync needs sm_80 or later (mma.sync.m16n8k16 and ldmatrix)"
#endif

#define BM 128  // 64 spills: each of its fewer threads holds more of the next tiles
#define BK 32
#define WM 64
#define WN 64
#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define MT (WM / 16)                            // m16 tiles per warp
#define NT (WN / 8)                             // n8 tiles per warp
#define A_CHUNKS (BM * BK / 8)                  // 16-byte chunks of an A tile
#define B_CHUNKS (BK * BN / 8)
#define A_PER_THREAD (A_CHUNKS / THREADS)
#define B_PER_THREAD (B_CHUNKS / THREADS)
#define STAGE_HALVES (BM * BK + BK * BN)

static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "tile chunks per thread");

// Offset in halves of 16-byte chunk `chunk` of row `row`, in a tile of CHUNKS chunks a row.
template <int CHUNKS>
__device__ __forceinline__ int swizzled(int row, int chunk)
{
    if (CHUNKS >= 8)
        return row * CHUNKS * 8 + ((chunk ^ (row & 7)) << 3);
    return row * CHUNKS * 8 + ((chunk ^ ((row >> 1) & 3)) << 3);  // CHUNKS == 4
}

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
}

// D += A (16x16, row) * B (16x8, col), float16 in, float32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4],
                                          unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 8 halves of row-major src (rows x cols) at row r, columns c..c+7; zeros outside.
// load_vector: rows are 16-byte aligned (cols % 8 == 0), so a chunk is all in or all out.
__device__ __forceinline__ uint4 load_vector(const __half* __restrict__ src, int r, int c,
                                             int rows, int cols)
{
    if (r < rows && c < cols)
        return *reinterpret_cast<const uint4*>(src + (size_t)r * cols + c);
    return make_uint4(0, 0, 0, 0);
}

__device__ __forceinline__ uint4 load_elements(const __half* __restrict__ src, int r, int c,
                                               int rows, int cols)
{
    union { uint4 v; __half h[8]; } out;
#pragma unroll
    for (int e = 0; e < 8; ++e)
        out.h[e] = (r < rows && c + e < cols) ? src[(size_t)r * cols + c + e] : __float2half(0.f);
    return out.v;
}

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_mma_sync(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    extern __shared__ uint4 smem_raw[];
    __half* smem = reinterpret_cast<__half*>(smem_raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool a_vec = (K & 7) == 0 && aligned16(A);
    const bool b_vec = (N & 7) == 0 && aligned16(B);
    const int tiles = (K + BK - 1) / BK;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.f;

    uint4 a_reg[A_PER_THREAD], b_reg[B_PER_THREAD];
    // One branch per operand, not per chunk (both unrolled: the registers are indexed by
    // compile-time constants only).
    auto load_global = [&](int k0) {
        if (a_vec) {
#pragma unroll
            for (int j = 0; j < A_PER_THREAD; ++j) {
                const int i = tid + j * THREADS, r = i / (BK / 8), c = i % (BK / 8);
                a_reg[j] = load_vector(A, m0 + r, k0 + c * 8, M, K);
            }
        } else {
#pragma unroll
            for (int j = 0; j < A_PER_THREAD; ++j) {
                const int i = tid + j * THREADS, r = i / (BK / 8), c = i % (BK / 8);
                a_reg[j] = load_elements(A, m0 + r, k0 + c * 8, M, K);
            }
        }
        if (b_vec) {
#pragma unroll
            for (int j = 0; j < B_PER_THREAD; ++j) {
                const int i = tid + j * THREADS, r = i / (BN / 8), c = i % (BN / 8);
                b_reg[j] = load_vector(B, k0 + r, n0 + c * 8, K, N);
            }
        } else {
#pragma unroll
            for (int j = 0; j < B_PER_THREAD; ++j) {
                const int i = tid + j * THREADS, r = i / (BN / 8), c = i % (BN / 8);
                b_reg[j] = load_elements(B, k0 + r, n0 + c * 8, K, N);
            }
        }
    };
    auto store_shared = [&](int stage) {
        __half* As = smem + stage * STAGE_HALVES;
        __half* Bs = As + BM * BK;
#pragma unroll
        for (int j = 0; j < A_PER_THREAD; ++j) {
            const int i = tid + j * THREADS;
            *reinterpret_cast<uint4*>(As + swizzled<BK / 8>(i / (BK / 8), i % (BK / 8))) = a_reg[j];
        }
#pragma unroll
        for (int j = 0; j < B_PER_THREAD; ++j) {
            const int i = tid + j * THREADS;
            *reinterpret_cast<uint4*>(Bs + swizzled<BN / 8>(i / (BN / 8), i % (BN / 8))) = b_reg[j];
        }
    };

    load_global(0);
    store_shared(0);
    __syncthreads();

    for (int t = 0; t < tiles; ++t) {
        const int stage = t & 1;
        if (t + 1 < tiles)
            load_global((t + 1) * BK);  // in flight while this tile is computed

        const __half* As = smem + stage * STAGE_HALVES;
        const __half* Bs = As + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            unsigned af[MT][4], bf[NT][2];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: the same rows at k 8-15
                const int r = wm * WM + mt * 16 + (lane & 15);
                ldmatrix_x4(af[mt], smem_u32(As + swizzled<BK / 8>(r, kk * 2 + (lane >> 4))));
            }
#pragma unroll
            for (int np = 0; np < NT / 2; ++np) {
                // matrices: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
                const int r = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                const int c = (wn * WN + np * 16) / 8 + (lane >> 4);
                unsigned x[4];
                ldmatrix_x4_trans(x, smem_u32(Bs + swizzled<BN / 8>(r, c)));
                bf[2 * np][0] = x[0];
                bf[2 * np][1] = x[1];
                bf[2 * np + 1][0] = x[2];
                bf[2 * np + 1][1] = x[3];
            }
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
                    mma_16816(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
        }

        if (t + 1 < tiles)
            store_shared(stage ^ 1);  // that buffer was last read before the previous barrier
        __syncthreads();
    }

    // Accumulator (mt, nt): e 0, 1 at row lane/4, columns 2 (lane%4) + 0, 1; e 2, 3 eight
    // rows below.
    const bool c_pairs = (N & 1) == 0 && (reinterpret_cast<unsigned long long>(C) & 3) == 0;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = m0 + wm * WM + mt * 16 + (lane >> 2) + half * 8;
            if (row >= M)
                continue;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                const int col = n0 + wn * WN + nt * 8 + (lane & 3) * 2;
                const float v0 = acc[mt][nt][half * 2], v1 = acc[mt][nt][half * 2 + 1];
                OUT_TYPE* out = C + (size_t)row * N + col;
                if (c_pairs) {
                    if (col < N)
                        *reinterpret_cast<__half2*>(out) = __floats2half2_rn(v0, v1);
                } else {
                    if (col < N)
                        out[0] = __float2half_rn(v0);
                    if (col + 1 < N)
                        out[1] = __float2half_rn(v1);
                }
            }
        }
    }
}
