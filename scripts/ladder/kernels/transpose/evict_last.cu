// cudabench: transpose
// description: Draft (issue 25, 2026-11-27): evict_first's moves with B's lines held in the L2 at evict-last priority (st.global.L2::cache_hint, KEEP percent of them); A's reads plain (LOAD_CACHE=1) or evict-first (2); tiles in groups of GROUP tile rows. Faster cold, not back to back (the batch column): not a rung.
// run: on request
// param TILE: default 64; allowed 8, 16, 32, 64, 128
// param BLOCK_ROWS: default 8; allowed 4, 8, 16, 32
// param GROUP: default 1; allowed 1, 2, 4, 8, 16, 32, 64, 128, 1024
// param LOAD_CACHE: default 1; allowed 1, 2
// param KEEP: default 100; allowed 25, 50, 75, 100
// launch transpose_evict_last: grid cdiv(ROWS, TILE) * cdiv(COLS, TILE); block TILE * ELEM_SIZE // 16, min(BLOCK_ROWS, 1024 // (TILE * ELEM_SIZE // 16)); dynamic_shared TILE * (TILE + 1) * ELEM_SIZE

// Why it was tried (issue 25, ninth session): row-major tiles read A in long runs, but
// each row of B receives only TILE elements (256 bytes at TILE 64 float32) from a tile, the
// next 256 bytes of that row coming from the tile beside it a little later. Held at
// evict-last priority, B's lines might outlive A's (read once) until more of each row is
// written, and reach DRAM in longer runs.
//
// What it does (H100 80GB HBM3, 8192² float32; scripts/ladder/evict_last_check.sh and
// scripts/gpu-checks/writeback.sh, data in docs/data/transpose-evict-last-2026-11-27/, the
// whole table in docs/kernels.md): under cudabench's clean flush, in pooled rounds, 178.8-
// 179.4 us where evict_first takes 180.9-181.3: 0.977-0.979 of the copy, past the goal's
// 0.97 (KEEP 25 to 100, GROUP 1 or 128, plain loads: 0.971-0.987 in two sweeps). It
// verifies at odd shapes in every type and under memcheck. But back to back, each launch
// paying for the dirty lines the one before left (the batch column), it gains nothing:
// 186.7-187.1 us against evict_first's 185.7-185.9 at 8192², 48.4 us as evict_first's at
// 4096² (where cold it read 1.05-1.06 of the copy). Cold, it writes 7-8 MB less of B to
// DRAM inside its window (the counters), as much as it gains; what the next flush pays for
// that the flush timings do not settle (--writeback: +9.2 us against +9.8; a two-pass
// flush: +12.2 against +9.7).
//
// The code: evict_first.cu's (GROUP=1 LOAD_CACHE=1): a block of TX = TILE / VEC threads
// across (VEC 16-byte elements: 4 floats or ints, 8 halves, 2 doubles) by BR thread rows
// moves one TILE x TILE tile through a padded shared tile: every load of a thread issued
// before the first shared store, a barrier, then 16-byte stores along B's rows gathered
// from a column of the tile, with the policy KEEP / 100 of the lines at evict-last
// priority. Unaligned rows (COLS or ROWS not a multiple of VEC, or a misaligned pointer)
// move element by element with plain stores. Before sm_80 (no cache policies) the vector
// stores are plain.

#define VEC (16 / ELEM_SIZE)
#define TX (TILE / VEC)                                   // threads across a tile row
#define BR (BLOCK_ROWS < 1024 / TX ? BLOCK_ROWS : 1024 / TX)  // thread rows (the launch's)
#define ROW_STEPS ((TILE + BR - 1) / BR)                  // tile rows a thread moves

struct __align__(16) Vec { DTYPE e[VEC]; };
static_assert(sizeof(Vec) == 16, "a vector is 16 bytes");

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

__device__ __forceinline__ Vec load_vec(const DTYPE* p)
{
#if LOAD_CACHE == 2
    const uint4 r = __ldcs(reinterpret_cast<const uint4*>(p));  // ld.global.cs.v4
    Vec v;
    memcpy(&v, &r, sizeof(v));
    return v;
#else
    return *reinterpret_cast<const Vec*>(p);
#endif
}

// The L2 policy of B's stores: KEEP percent of the lines at evict-last priority.
__device__ __forceinline__ unsigned long long keep_policy()
{
    unsigned long long policy = 0;
#if __CUDA_ARCH__ >= 800
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, %1;"
                 : "=l"(policy) : "f"(KEEP / 100.0f));
#endif
    return policy;
}

__device__ __forceinline__ void store_vec(DTYPE* p, const Vec& v, unsigned long long policy)
{
#if __CUDA_ARCH__ >= 800
    uint4 r;
    memcpy(&r, &v, sizeof(r));
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(p), "r"(r.x), "r"(r.y), "r"(r.z), "r"(r.w), "l"(policy) : "memory");
#else
    (void)policy;
    *reinterpret_cast<Vec*>(p) = v;
#endif
}

// The tile (row, column) block `id` moves: groups of GROUP tile rows, each walked down its
// tile columns one after the other (GROUP=1: row-major). A bijection of the tiles.
__device__ __forceinline__ void tile_of(unsigned id, int tiles_r, int tiles_c, int& tr, int& tc)
{
    const int group = min(GROUP, tiles_r);  // a group holds at most every tile
    const unsigned per_group = (unsigned)group * (unsigned)tiles_c;
    const unsigned g = id / per_group;
    const int first = (int)(g * group);
    const int rows_in = min(group, tiles_r - first);  // the last group may be shorter
    const unsigned local = id - g * per_group;
    tr = first + (int)(local % rows_in);
    tc = (int)(local / rows_in);
}

extern "C" __global__ void __launch_bounds__(TX * BR)
transpose_evict_last(const DTYPE* __restrict__ A, DTYPE* __restrict__ B, int ROWS, int COLS)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE (*tile)[TILE + 1] = reinterpret_cast<DTYPE (*)[TILE + 1]>(smem);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tiles_r = (ROWS + TILE - 1) / TILE, tiles_c = (COLS + TILE - 1) / TILE;
    int tr, tc;
    tile_of(blockIdx.x, tiles_r, tiles_c, tr, tc);
    const int r0 = tr * TILE, c0 = tc * TILE;  // the tile's corner in A
    const bool vec_in = COLS % VEC == 0 && aligned16(A);
    const bool vec_out = ROWS % VEC == 0 && aligned16(B);

    if (vec_in) {
        const int c = c0 + tx * VEC;
        Vec v[ROW_STEPS];
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {  // every load issued first
            const int y = ty + it * BR;
            const int r = r0 + y;
            if ((BR <= TILE || y < TILE) && r < ROWS && c < COLS)
                v[it] = load_vec(A + (size_t)r * COLS + c);
        }
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BR;
            const int r = r0 + y;
            if ((BR <= TILE || y < TILE) && r < ROWS && c < COLS) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) tile[y][tx * VEC + j] = v[it].e[j];
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BR;
            if (BR > TILE && y >= TILE) break;  // more thread rows than tile rows
            const int r = r0 + y;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int x = tx + j * TX;
                if (r < ROWS && c0 + x < COLS) tile[y][x] = A[(size_t)r * COLS + c0 + x];
            }
        }
    }
    __syncthreads();

    // B is COLS x ROWS: this block writes rows c0 .. c0+TILE-1, columns r0 .. r0+TILE-1.
    if (vec_out) {
        const unsigned long long policy = keep_policy();
        const int c = r0 + tx * VEC;
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BR;
            if (BR > TILE && y >= TILE) break;
            const int r = c0 + y;
            if (r < COLS && c < ROWS) {
                Vec v;
#pragma unroll
                for (int j = 0; j < VEC; ++j) v.e[j] = tile[tx * VEC + j][y];
                store_vec(B + (size_t)r * ROWS + c, v, policy);
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BR;
            if (BR > TILE && y >= TILE) break;
            const int r = c0 + y;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int x = tx + j * TX;
                if (r < COLS && r0 + x < ROWS) B[(size_t)r * ROWS + r0 + x] = tile[x][y];
            }
        }
    }
}
