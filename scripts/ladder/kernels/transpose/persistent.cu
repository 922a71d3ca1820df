// cudabench: transpose
// description: A persistent grid (SM_COUNT x BLOCKS_PER_SM blocks) in which each block loops over tiles in evict_first's grouped order, loading its next tile into registers (16-byte loads) while it stores the current one from shared memory: reads and writes overlap inside every block, no block launches after the first wave; evict-first hints as evict_first.
// param TILE: default 64; allowed 8, 16, 32, 64, 128
// param BLOCK_ROWS: default 8; allowed 4, 8, 16, 32
// param GROUP: default 16; allowed 1, 2, 4, 8, 16, 32, 64, 128, 1024
// param BLOCKS_PER_SM: default 8; allowed 1..32
// param LOAD_CACHE: default 2; allowed 1, 2
// param STORE_CACHE: default 2; allowed 1, 2
// run: on request
// launch transpose_persistent: grid min(cdiv(ROWS, TILE) * cdiv(COLS, TILE), SM_COUNT * min(BLOCKS_PER_SM, min(1024 // (TILE * ELEM_SIZE // 16 * min(BLOCK_ROWS, 1024 // (TILE * ELEM_SIZE // 16))), 233472 // (TILE * (TILE + 1) * ELEM_SIZE + 1024)))); block TILE * ELEM_SIZE // 16, min(BLOCK_ROWS, 1024 // (TILE * ELEM_SIZE // 16)); dynamic_shared TILE * (TILE + 1) * ELEM_SIZE

// DRAFT (issue 25, scripts/ladder/kernels/), measured and slower, kept as the record of what
// did not help: 0.907-0.936 of the copy at 8192² float32 on an H100 (2026-11-26,
// scripts/ladder/draft_call_2.sh: 0.907-0.908 at these defaults, 0.931-0.936 with plain
// loads (LOAD_CACHE=1) at either GROUP and STORE_CACHE, the best GROUP=1 LOAD_CACHE=1
// STORE_CACHE=1; docs/data/ladder-2026-11-26/draft2-sweep_transpose_persistent.txt),
// where vectorized reached 0.967-0.970 and evict_first 0.973 beside it. Overlapping a block's
// reads and writes by hand does no better than 13 independent blocks an SM do.
// (8 blocks an SM of 128 threads at TILE 64 float32: 133 KB of shared memory, 1,056 blocks
// on an H100, each resident for the whole launch if its registers allow 8 a SM).
//
// kernels/transpose/evict_first.cu's tile, moves, order and hints (it was the draft grouped.cu
// when this was written), made persistent and software-pipelined:
//
// - The grid is at most SM_COUNT x B blocks, B = BLOCKS_PER_SM or fewer where an SM's
//   shared memory holds fewer or its registers would leave a thread fewer than 64 (8
//   blocks of 128 threads at TILE 64 float32), and __launch_bounds__(threads, B) keeps
//   the registers within what B blocks allow: one wave, each block resident for the
//   whole launch. Block b takes tiles b, b + G, b + 2G, ... (G = gridDim.x) of the
//   grouped order, so
//   at any time the blocks work on about G consecutive tiles of that order: the same
//   window of A and B as evict_first's resident blocks.
// - Each thread holds its part of a tile in registers (cdiv(TILE, BR) vectors of VEC
//   elements). A step: registers -> shared tile, barrier, issue the next tile's loads into
//   the registers, store the current tile from shared memory to B, barrier. The next
//   tile's loads are in flight while the current one is written, so each block keeps
//   DRAM busy in both directions instead of alternating load and store phases (vectorized
//   relies on 13 independent blocks an SM for that overlap).
// - Register contents outside the matrix (edge tiles) are copied to the shared tile too,
//   stale, and never written out: an element of B is stored only when its A element is
//   inside the matrix, and then it was loaded.
//
// Alignment and edges as evict_first (and vectorized): rows of A are vectors when COLS is a
// multiple of VEC and A is 16-byte aligned, rows of B when ROWS is and B is, otherwise
// element by element (thread x takes columns x, x + TX, ... of the tile: still coalesced);
// the choice is uniform over the grid. Thread rows beyond the tile (BR > TILE) hold nothing.

#define VEC (16 / ELEM_SIZE)
#define TX (TILE / VEC)                                   // threads across a tile row
#define BR (BLOCK_ROWS < 1024 / TX ? BLOCK_ROWS : 1024 / TX)  // thread rows (the launch's)
#define ROW_STEPS ((TILE + BR - 1) / BR)                  // tile rows a thread moves
#define THREADS (TX * BR)
#define SMEM_BYTES (TILE * (TILE + 1) * ELEM_SIZE)
// Blocks an SM holds at once: at most BLOCKS_PER_SM, as many as its shared memory takes
// (233,472 bytes, 1,024 of them reserved a block), and as many as leave each thread 64
// registers (65,536 an SM; the tile's part in registers alone is 4 x cdiv(TILE, BR)).
// The launch line's grid uses the same numbers.
#define FIT_REGS (1024 / THREADS)
#define FIT_SMEM (233472 / (SMEM_BYTES + 1024))
#define FIT (FIT_REGS < FIT_SMEM ? FIT_REGS : FIT_SMEM)
#define MIN_BLOCKS (BLOCKS_PER_SM < FIT ? BLOCKS_PER_SM : FIT)

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

// evict_first.cu's order: groups of GROUP tile rows, each walked down its tile columns one
// after the other. A bijection of [0, tiles_r * tiles_c).
__device__ __forceinline__ void tile_of(unsigned id, int tiles_r, int tiles_c, int& tr, int& tc)
{
    // GROUP clamped to the tile rows, so a group holds at most every tile: 32-bit indices
    // suffice (a grid has fewer than 2^31 blocks, and no matrix has 2^31 tiles).
    const int group = min(GROUP, tiles_r);
    const unsigned per_group = (unsigned)group * (unsigned)tiles_c;
    const unsigned g = id / per_group;
    const int first = (int)(g * group);
    const int rows_in = min(group, tiles_r - first);  // the last group may be shorter
    const unsigned local = id - g * per_group;
    tr = first + (int)(local % rows_in);
    tc = (int)(local / rows_in);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
transpose_persistent(const DTYPE* __restrict__ A, DTYPE* __restrict__ B, int ROWS, int COLS)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE (*tile)[TILE + 1] = reinterpret_cast<DTYPE (*)[TILE + 1]>(smem);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tiles_r = (ROWS + TILE - 1) / TILE, tiles_c = (COLS + TILE - 1) / TILE;
    const long long tiles = (long long)tiles_r * tiles_c;
    const bool vec_in = COLS % VEC == 0 && aligned16(A);
    const bool vec_out = ROWS % VEC == 0 && aligned16(B);

    // This thread's part of a tile: row ty + it * BR; in the vector layout elements
    // tx * VEC + j of that row, in the scalar layout elements tx + j * TX.
    Vec reg[ROW_STEPS];
#pragma unroll
    for (int it = 0; it < ROW_STEPS; ++it)
#pragma unroll
        for (int j = 0; j < VEC; ++j) reg[it].e[j] = DTYPE(0);  // defined, never written out

    auto load_tile = [&](long long id) {
        int tr, tc;
        tile_of(id, tiles_r, tiles_c, tr, tc);
        const int r0 = tr * TILE, c0 = tc * TILE;
        if (vec_in) {
            const int c = c0 + tx * VEC;
#pragma unroll
            for (int it = 0; it < ROW_STEPS; ++it) {
                const int y = ty + it * BR;
                const int r = r0 + y;
                if ((BR <= TILE || y < TILE) && r < ROWS && c < COLS)
                    reg[it] = load_vec(A + (size_t)r * COLS + c);
            }
        } else {
#pragma unroll
            for (int it = 0; it < ROW_STEPS; ++it) {
                const int y = ty + it * BR;
                const int r = r0 + y;
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    const int x = tx + j * TX;
                    if ((BR <= TILE || y < TILE) && r < ROWS && c0 + x < COLS)
                        reg[it].e[j] = A[(size_t)r * COLS + c0 + x];
                }
            }
        }
    };

    long long t = blockIdx.x;
    if (t >= tiles) return;  // the launch line never makes such a block; uniform anyway
    load_tile(t);
    for (;;) {
        // Registers -> the shared tile (stale values where the tile leaves the matrix).
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BR;
            if (BR > TILE && y >= TILE) break;  // more thread rows than tile rows
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                if (vec_in) tile[y][tx * VEC + j] = reg[it].e[j];
                else tile[y][tx + j * TX] = reg[it].e[j];
            }
        }
        __syncthreads();

        const long long next = t + gridDim.x;
        if (next < tiles) load_tile(next);  // in flight while this tile is written

        int tr, tc;
        tile_of(t, tiles_r, tiles_c, tr, tc);
        const int r0 = tr * TILE, c0 = tc * TILE;
        // B is COLS x ROWS: rows c0 .. c0+TILE-1, columns r0 .. r0+TILE-1 of it.
        if (vec_out) {
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
                    store_vec(B + (size_t)r * ROWS + c, v);
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
        if (next >= tiles) break;  // uniform over the block
        __syncthreads();  // every read of the tile done before the next step overwrites it
        t = next;
    }
}
