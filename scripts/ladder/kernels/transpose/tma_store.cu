// cudabench: transpose
// run: on request
// description: Draft (issue 25, 2026-11-27): the threads load A with 16-byte loads (every load in flight first, as evict_first does), transpose VEC x VEC pieces in registers into a 128-byte-swizzled shared tile of B, and the TMA unit stores that tile (cp.async.bulk.tensor); one tile a block from a 1-D grid; sm_90, rows of B 16-byte multiples.
// arch: sm_90
// param TILE: default 64; allowed 32, 64, 128
// param THREADS: default 128; allowed 64, 128, 256, 512
// param STORE_CACHE: default 1; allowed 1, 2
// constraint: TILE * ELEM_SIZE >= 128
// constraint: TILE * TILE * ELEM_SIZE <= 131072
// tensor_map B: box TILE, 128 // ELEM_SIZE; swizzle 128
// launch transpose_tma_store: grid cdiv(ROWS, TILE) * cdiv(COLS, TILE); block THREADS; dynamic_shared TILE * TILE * ELEM_SIZE + 1024

// Measured (one H100 80GB HBM3, 2026-11-27, 8192² float32, clean L2 flush, two sweeps, each
// beside evict_first.cu and the copy in one run; scripts/ladder/transpose_tma_store.sh with
// DRAFT=tma_store, docs/data/transpose-2026-11-27/tma-store-draft-summary.txt): slower.
// The best, TILE=64 with 256 threads, took 185.9-186.0 us where evict_first took
// 180.6-181.2 us; the defaults (64, 128 threads) 187.3-187.4 us. At TILE=32 it beats
// evict_first at TILE=32 (187.9-188.5 against 192.4-193.7 us), but 32 is not
// evict_first's best tile. Verified at odd shapes in every type (40 PASS, 4 SKIP: 3001,
// whose rows of B are not 16-byte multiples, per type). memcheck, racecheck and synccheck
// are clean.
//
// Why: of the TMA draft's (tma.cu) two halves, its store was the better one (the threads'
// STG.128 from the same shared tile took ~1 us more), and evict_first.cu's loads are the
// best loads measured. This joins the two: evict_first's schedule (one TILE x TILE tile a
// block, row-major, all of a thread's loads issued before any is used) with B written by
// the TMA unit from shared memory.
//
// - Loads: piece s (VEC x VEC elements, VEC = 16 bytes of elements) is loaded by thread
//   s % THREADS as VEC 16-byte loads down its rows. Lanes pair up: lanes 2j and 2j + 1
//   load adjacent chunks of the same rows (a 32-byte sector each), and the four pairs of
//   a quarter-warp take four consecutive row blocks. Rows of A not a multiple of VEC
//   elements long (or a misaligned A) are loaded element by element.
// - Registers to shared memory: the piece is transposed in registers and stored as VEC
//   16-byte chunks along rows of B's tile, which lies in shared memory as TILE / W boxes
//   of TILE rows x W elements (W = 128 bytes), 128-byte swizzled (chunk j of row r at
//   j ^ (r % 8)), the layout the TMA store reads. For 4-byte elements the 8 lanes of a
//   quarter-warp then store to 8 different chunks (no bank conflict); for 2- and 8-byte
//   elements two lanes share one (2-way).
// - Store: every thread fences its shared stores for the async proxy, one barrier, and
//   thread 0 issues the tile's TILE / W box stores as one bulk group (STORE_CACHE 2: with
//   an L2 evict-first policy), then waits until they have read shared memory before the
//   block may end. Elements outside B are not written (the TMA unit clips the boxes).

#include <cuda.h>  // CUtensorMap

#define VEC (16 / ELEM_SIZE)                   // elements in a 16-byte chunk
#define W (128 / ELEM_SIZE)                    // elements across a box (the swizzle span)
#define BOXES (TILE / W)
#define BOX_BYTES (TILE * 128)
#define PR (TILE / VEC)                        // row blocks of pieces
#define PC (TILE / VEC)                        // chunk columns of pieces
#define PIECES (PR * PC)
#define MINE ((PIECES + THREADS - 1) / THREADS)  // pieces a thread

struct __align__(16) Vec { DTYPE e[VEC]; };
static_assert(sizeof(Vec) == 16, "a vector is 16 bytes");
static_assert(PR % 4 == 0 && PC % 2 == 0, "pieces come in quarter-warps of 4 x 2");

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The byte offset of (row, chunk column) of B's tile: box chunk / 8, 128-byte swizzled.
__device__ __forceinline__ unsigned out_at(int row, int chunk)
{
    return (unsigned)((chunk >> 3) * BOX_BYTES + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

extern "C" __global__ void __launch_bounds__(THREADS)
transpose_tma_store(const DTYPE* __restrict__ A, DTYPE* __restrict__ B, int ROWS, int COLS,
                    const __grid_constant__ CUtensorMap map_b)
{
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
    const unsigned out = smem_u32(smem);
    const int tid = threadIdx.x;
    const int tiles_c = (COLS + TILE - 1) / TILE;
    const int r0 = (int)(blockIdx.x / tiles_c) * TILE, c0 = (int)(blockIdx.x % tiles_c) * TILE;
    const bool vec_in = COLS % VEC == 0
        && (reinterpret_cast<unsigned long long>(A) & 15) == 0;
    (void)B;

    Vec v[MINE][VEC];
#pragma unroll
    for (int p = 0; p < MINE; ++p) {  // every load issued first
        const int s = tid + p * THREADS;
        const int h = s & 1, m = (s >> 1) & 3, q = s >> 3;
        const int cb = 2 * (q % (PC / 2)) + h, rb = 4 * (q / (PC / 2)) + m;
        const int c = c0 + cb * VEC;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const int r = r0 + rb * VEC + k;
            Vec x;
#pragma unroll
            for (int e = 0; e < VEC; ++e) x.e[e] = DTYPE(0);
            if (s < PIECES && r < ROWS) {
                const DTYPE* row = A + (size_t)r * COLS;
                if (vec_in) {
                    if (c < COLS) x = *reinterpret_cast<const Vec*>(row + c);
                } else {
#pragma unroll
                    for (int e = 0; e < VEC; ++e)
                        if (c + e < COLS) x.e[e] = row[c + e];
                }
            }
            v[p][k] = x;
        }
    }
#pragma unroll
    for (int p = 0; p < MINE; ++p) {
        const int s = tid + p * THREADS;
        if (s >= PIECES) continue;
        const int h = s & 1, m = (s >> 1) & 3, q = s >> 3;
        const int cb = 2 * (q % (PC / 2)) + h, rb = 4 * (q / (PC / 2)) + m;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {  // column e of the piece: part of a row of B's tile
            Vec t;
#pragma unroll
            for (int k = 0; k < VEC; ++k) t.e[k] = v[p][k].e[e];
            uint4 raw;
            memcpy(&raw, &t, 16);
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n"
                         :: "r"(out + out_at(cb * VEC + e, rb)),
                            "r"(raw.x), "r"(raw.y), "r"(raw.z), "r"(raw.w)
                         : "memory");
        }
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to the TMA unit
    __syncthreads();
    if (tid == 0) {
        unsigned long long policy = 0;
#if STORE_CACHE == 2
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
#pragma unroll
        for (int b = 0; b < BOXES; ++b) {
#if STORE_CACHE == 2
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint"
                         " [%0, {%1, %2}], [%3], %4;\n"
                         :: "l"(reinterpret_cast<unsigned long long>(&map_b)), "r"(r0 + b * W),
                            "r"(c0), "r"(out + b * BOX_BYTES), "l"(policy)
                         : "memory");
#else
            (void)policy;
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
                         " [%0, {%1, %2}], [%3];\n"
                         :: "l"(reinterpret_cast<unsigned long long>(&map_b)), "r"(r0 + b * W),
                            "r"(c0), "r"(out + b * BOX_BYTES)
                         : "memory");
#endif
        }
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");  // smem read: may end
    }
}
