// cudabench: matmul
// description: mma_sync's 64x64 warp tiles (mma.sync.m16n8k16, ldmatrix, XOR-swizzled shared tiles) fed by a STAGES-deep cp.async pipeline: tiles t+1 .. t+STAGES-1 are in flight while tile t is computed; sm_80 and later.
// dtypes: float16
// unit: tensor
// param BN: default 128; allowed 128, 256
// param BK: default 64; allowed 32, 64
// param STAGES: default 3; allowed 2, 3, 4
// launch matmul_mma_async: grid cdiv(N, BN), cdiv(M, 128); block 2 * (BN // 64) * 32; dynamic_shared STAGES * (128 * BK + BK * BN) * ELEM_SIZE

// Tensor-core rung 2. The warp tiles, fragments, swizzle and epilogue are mma_sync.cu's;
// what changes is how tiles reach shared memory. mma_sync stages the next tile in
// registers (load before the compute, store after), so a thread holds the tile's bytes
// and every load's latency must fit in one tile's compute. Here cp.async.cg copies 16
// bytes global -> shared with no register in between, STAGES tiles deep:
//
// - The prologue issues tiles 0 .. STAGES-2, one commit group each (empty groups too, so
//   the count of pending groups is the same at every step).
// - At step t: cp.async.wait_group STAGES-2 (tile t has landed for this thread), one
//   __syncthreads (every thread's copies of tile t are visible, and every warp has finished
//   computing tile t-1), then issue tile t+STAGES-1 into the buffer tile t-1 used, then
//   compute tile t.
// - Edges: a chunk past M, K or N is a cp.async with src-size 0, which reads nothing and
//   zero-fills the 16 bytes. Where rows are not 16-byte aligned (K, resp. N, not a multiple
//   of 8 halves, or a misaligned buffer) cp.async cannot copy 16 bytes and has no 2-byte
//   form: that operand's chunks are loaded element by element and stored with ordinary
//   stores into the same stage (still STAGES-1 tiles ahead, made visible by the same
//   barrier), correct but without the asynchrony.
//
// With BK = 64 each row of A holds 8 chunks and takes the same c ^ (r & 7) swizzle as B.

#include <cuda_fp16.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_async needs sm_80 or later (cp.async, mma.sync.m16n8k16 and ldmatrix)"
#endif

#define BM 128
#define WM 64
#define WN 64
#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define MT (WM / 16)
#define NT (WN / 8)
#define A_CHUNKS (BM * BK / 8)
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

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4],
                                          unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes global -> shared, asynchronously; in false: nothing read, 16 zeros written.
__device__ __forceinline__ void copy16(unsigned dst, const void* src, bool in)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(in ? 16 : 0) : "memory");
}

__device__ __forceinline__ void commit_group()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int PENDING>
__device__ __forceinline__ void wait_group()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
}

// The 8 halves of row-major src (rows x cols) at row r, columns c..c+7, element by element
// (rows not 16-byte aligned), into shared memory at dst; zeros outside rows x cols.
__device__ __forceinline__ void copy_elements(__half* dst, const __half* __restrict__ src,
                                              int r, int c, int rows, int cols)
{
    union { uint4 v; __half h[8]; } out;
#pragma unroll
    for (int e = 0; e < 8; ++e)
        out.h[e] = (r < rows && c + e < cols) ? src[(size_t)r * cols + c + e] : __float2half(0.f);
    *reinterpret_cast<uint4*>(dst) = out.v;
}

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_mma_async(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
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

    // Issue the copies of K tile t into its stage, then close a commit group (an empty
    // one past the last tile, so that wait_group counts the same at every step).
    auto issue = [&](int t) {
        if (t < tiles) {
            __half* As = smem + (t % STAGES) * STAGE_HALVES;
            __half* Bs = As + BM * BK;
            const int k0 = t * BK;
            // One branch per operand, not per chunk: the copies stay straight-line code.
            if (a_vec) {
#pragma unroll
                for (int j = 0; j < A_PER_THREAD; ++j) {
                    const int i = tid + j * THREADS, r = i / (BK / 8), c = i % (BK / 8);
                    const bool in = m0 + r < M && k0 + c * 8 < K;  // K % 8 == 0: all or none
                    copy16(smem_u32(As + swizzled<BK / 8>(r, c)),
                           in ? A + (size_t)(m0 + r) * K + k0 + c * 8 : A, in);
                }
            } else {
#pragma unroll 1
                for (int j = 0; j < A_PER_THREAD; ++j) {
                    const int i = tid + j * THREADS, r = i / (BK / 8), c = i % (BK / 8);
                    copy_elements(As + swizzled<BK / 8>(r, c), A, m0 + r, k0 + c * 8, M, K);
                }
            }
            if (b_vec) {
#pragma unroll
                for (int j = 0; j < B_PER_THREAD; ++j) {
                    const int i = tid + j * THREADS, r = i / (BN / 8), c = i % (BN / 8);
                    const bool in = k0 + r < K && n0 + c * 8 < N;
                    copy16(smem_u32(Bs + swizzled<BN / 8>(r, c)),
                           in ? B + (size_t)(k0 + r) * N + n0 + c * 8 : B, in);
                }
            } else {
#pragma unroll 1
                for (int j = 0; j < B_PER_THREAD; ++j) {
                    const int i = tid + j * THREADS, r = i / (BN / 8), c = i % (BN / 8);
                    copy_elements(Bs + swizzled<BN / 8>(r, c), B, k0 + r, n0 + c * 8, K, N);
                }
            }
        }
        commit_group();
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s)
        issue(s);

    for (int t = 0; t < tiles; ++t) {
        wait_group<STAGES - 2>();  // this thread's copies of tile t have landed
        __syncthreads();           // everyone's have; everyone is done with tile t-1
        issue(t + STAGES - 1);     // into the stage tile t-1 used

        const __half* As = smem + (t % STAGES) * STAGE_HALVES;
        const __half* Bs = As + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            unsigned af[MT][4], bf[NT][2];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                const int r = wm * WM + mt * 16 + (lane & 15);
                ldmatrix_x4(af[mt], smem_u32(As + swizzled<BK / 8>(r, kk * 2 + (lane >> 4))));
            }
#pragma unroll
            for (int np = 0; np < NT / 2; ++np) {
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
    }
    wait_group<0>();  // no copy outlives the block (the trailing groups are empty)

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
