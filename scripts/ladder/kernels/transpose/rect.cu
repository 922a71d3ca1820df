// cudabench: transpose
// run: on request
// description: Draft (issue 25, 2026-11-27): evict_first's moves with a rectangular tile, TR rows x TC columns of A, so that A's reads and B's writes come in runs of different lengths (TC and TR elements); NT threads a block, each moving TR*TC/(VEC*NT) vectors each way; plain or evict-first stores (STORE_CACHE 1, 2).
// param TR: default 64; allowed 16, 32, 64, 128
// param TC: default 64; allowed 16, 32, 64, 128
// param NT: default 128; allowed 64, 128, 256, 512
// param STORE_CACHE: default 1; allowed 1, 2
// launch transpose_rect: grid cdiv(ROWS, TR) * cdiv(COLS, TC); block NT; dynamic_shared TR * (TC + 1) * ELEM_SIZE

// Why: under the clean L2 flush evict_first (64 x 64 tiles: 256-byte runs both ways at
// float32) reads at 0.964-0.971 of the copy. A tile of 32 rows x 128 columns reads A in
// 512-byte runs and writes B in 128-byte ones; 128 x 32 the other way round. The sweep in
// scripts/ladder/transpose_rect.sh says which, if either, DRAM prefers.
//
// Tiles run row-major over A (block k: tile row k / tiles_c, tile column k % tiles_c), as
// evict_first's GROUP=1. Load: vector i of the tile (i = tid, tid + NT, ...) is row i / CV,
// vector column i % CV (CV = TC / VEC), all of a thread's loads issued before the first is
// stored to the padded shared tile. Store: vector i of B's tile is B row i / RV (RV = TR /
// VEC) of the tile, vector column i % RV, gathered from a column of the shared tile. Rows
// that are not 16-byte aligned (COLS or ROWS not a multiple of VEC, or a misaligned
// pointer) move element by element. Edges are predicated per vector (a vector is wholly
// inside or outside when its row is vectorised).

#define VEC (16 / ELEM_SIZE)
#define CV (TC / VEC)                       // vectors across a tile row of A
#define RV (TR / VEC)                       // vectors across a tile row of B
#define LOADS ((TR * CV + NT - 1) / NT)     // vectors a thread loads
#define STORES ((TC * RV + NT - 1) / NT)    // vectors a thread stores

struct __align__(16) Vec { DTYPE e[VEC]; };
static_assert(sizeof(Vec) == 16, "a vector is 16 bytes");
static_assert(TC % VEC == 0 && TR % VEC == 0, "tile sides are whole vectors");

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

__device__ __forceinline__ void store_vec(DTYPE* p, const Vec& v)
{
#if STORE_CACHE == 2
    uint4 r;
    memcpy(&r, &v, sizeof(r));
    __stcs(reinterpret_cast<uint4*>(p), r);  // st.global.cs.v4
#else
    *reinterpret_cast<Vec*>(p) = v;
#endif
}

extern "C" __global__ void __launch_bounds__(NT)
transpose_rect(const DTYPE* __restrict__ A, DTYPE* __restrict__ B, int ROWS, int COLS)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE (*tile)[TC + 1] = reinterpret_cast<DTYPE (*)[TC + 1]>(smem);
    const int tid = threadIdx.x;
    const int tiles_c = (COLS + TC - 1) / TC;
    const int r0 = (int)(blockIdx.x / tiles_c) * TR, c0 = (int)(blockIdx.x % tiles_c) * TC;
    const bool vec_in = COLS % VEC == 0 && aligned16(A);
    const bool vec_out = ROWS % VEC == 0 && aligned16(B);

    if (vec_in) {
        Vec v[LOADS];
#pragma unroll
        for (int k = 0; k < LOADS; ++k) {
            const int i = tid + k * NT;
            const int r = r0 + i / CV, c = c0 + (i % CV) * VEC;
            if ((TR * CV % NT == 0 || i < TR * CV) && r < ROWS && c < COLS)
                v[k] = *reinterpret_cast<const Vec*>(A + (size_t)r * COLS + c);
        }
#pragma unroll
        for (int k = 0; k < LOADS; ++k) {
            const int i = tid + k * NT;
            const int y = i / CV, x = (i % CV) * VEC;
            if ((TR * CV % NT == 0 || i < TR * CV) && r0 + y < ROWS && c0 + x < COLS) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) tile[y][x + j] = v[k].e[j];
            }
        }
    } else {
        for (int i = tid; i < TR * TC; i += NT) {
            const int y = i / TC, x = i % TC;
            if (r0 + y < ROWS && c0 + x < COLS) tile[y][x] = A[(size_t)(r0 + y) * COLS + c0 + x];
        }
    }
    __syncthreads();

    // B is COLS x ROWS: this block writes rows c0 .. c0+TC-1, columns r0 .. r0+TR-1.
    if (vec_out) {
#pragma unroll
        for (int k = 0; k < STORES; ++k) {
            const int i = tid + k * NT;
            const int y = i / RV, x = (i % RV) * VEC;  // B row c0 + y, columns r0 + x ...
            if ((TC * RV % NT == 0 || i < TC * RV) && c0 + y < COLS && r0 + x < ROWS) {
                Vec v;
#pragma unroll
                for (int j = 0; j < VEC; ++j) v.e[j] = tile[x + j][y];
                store_vec(B + (size_t)(c0 + y) * ROWS + r0 + x, v);
            }
        }
    } else {
        for (int i = tid; i < TR * TC; i += NT) {
            const int y = i / TR, x = i % TR;
            if (c0 + y < COLS && r0 + x < ROWS) B[(size_t)(c0 + y) * ROWS + r0 + x] = tile[x][y];
        }
    }
}
