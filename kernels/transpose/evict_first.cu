// cudabench: transpose
// description: vectorized's 16-byte moves with evict-first (.cs) stores (STORE_CACHE=2; 1: plain), through dynamic shared memory (TILE up to 128) from a 1-D grid; as parameters, what did not help: tiles walked in groups of GROUP tile rows (GROUP=1: row-major) evict-first loads (LOAD_CACHE=2), plain loads with a 256-byte L2 fetch (LOAD_CACHE=3), and evict-last stores (STORE_CACHE=3: faster cold, not back to back).
// param TILE: default 64; allowed 8, 16, 32, 64, 128
// param BLOCK_ROWS: default 8; allowed 4, 8, 16, 32
// param GROUP: default 1; allowed 1, 2, 4, 8, 16, 32, 64, 128, 1024
// param LOAD_CACHE: default 1; allowed 1, 2, 3
// param STORE_CACHE: default 2; allowed 1, 2, 3
// launch transpose_evict_first: grid cdiv(ROWS, TILE) * cdiv(COLS, TILE); block TILE * ELEM_SIZE // 16, min(BLOCK_ROWS, 1024 // (TILE * ELEM_SIZE // 16)); dynamic_shared TILE * (TILE + 1) * ELEM_SIZE

// Measured (issue 25, 2026-11-26; one H100 80GB HBM3, 8192² float32, cold L2, medians, each
// line one run beside the device-to-device copy; scripts/ladder/draft_call_2.sh, then two
// confirmation runs: docs/kernels.md, tables in docs/data/ladder-2026-11-26/): the defaults,
// GROUP=1 LOAD_CACHE=1 STORE_CACHE=2 (row-major tile order, plain loads, evict-first
// stores), reached 0.973, 0.973 and 0.976 of the copy in three runs (186.2, 186.9, 186.4
// us), where vectorized.cu reached 0.967, 0.970 and 0.970 beside it (187.5-187.6 us), and
// 0.973 against vectorized's 0.971 in the ladder's bench run after the promotion. The gain,
// 0.2-0.7% (about 0.5%), is about the size of the run-to-run spread (±0.3%): small, though
// in every run. Plain stores (STORE_CACHE=1) gave 0.972-0.973. Tile groups (GROUP=16:
// 0.952-0.958; 1024: 0.957-0.972) and evict-first loads (LOAD_CACHE=2: 0.938-0.960) were
// slower, so those parameters stay as the record of what did not help. (Written as the
// draft `grouped` in scripts/ladder/kernels/transpose/: its defaults then were GROUP=16
// LOAD_CACHE=2 STORE_CACHE=2, 0.937.)
//
// kernels/transpose/vectorized.cu with three changes, each a parameter so that one sweep
// separates them (GROUP=1 LOAD_CACHE=1 STORE_CACHE=1 at TILE=64 is vectorized's schedule
// and moves, through dynamic shared memory):
//
// - Tile order (GROUP). vectorized's 2-D grid runs tiles in row-major order: the ~1,060
//   blocks resident on an H100 at once (8 an SM at TILE 64 float32: ptxas gives the kernel
//   60 registers a thread, and registers, not shared memory, set the count) cover about 8
//   tile rows of A, so reads sweep whole rows of A (32 KB runs at 8192 columns) while each
//   row of B receives only 8 x 256 bytes at a time: B's writes reach DRAM as short runs all
//   over B. Here block k
//   of a 1-D grid takes the tile of a grouped order: groups of GROUP tile rows, and inside
//   a group the tiles go down a tile column, then to the next column. The resident window
//   is then about GROUP tile rows by 1,060 / GROUP tile columns: runs of ~1060/GROUP x
//   TILE elements along A's rows and GROUP x TILE along B's rows. GROUP=1 is row-major
//   (vectorized), GROUP >= the tile rows column-major (blocks walk along B's rows: B's
//   writes stream, A's reads are short runs), 16-32 balanced.
// - Evict-first hints (LOAD_CACHE, STORE_CACHE: 1 plain, 2 evict-first; parameter values
//   must be positive): 16-byte loads as ld.global.cs (__ldcs), stores as st.global.cs
//   (__stcs), SASS LDG.E.EF.128 / STG.E.EF.128: lines allocated in L2 with evict-first
//   priority. Each byte is used once; the lines a sample brings in then replace each
//   other before they replace older lines. Caution when reading a gain measured with
//   `--l2-flush memset` (the default until 2026-11-27): the L2 is then full of the flush's
//   dirty lines at the start of each sample, and sparing them moves their write-back out
//   of the timed launch: compare the batch (warm) column too. Under the clean flush, the
//   default now, evict-first stores gain nothing (0.965-0.970 against plain stores'
//   0.967-0.971). The scalar paths (misaligned rows) use plain loads and stores.
// - LOAD_CACHE 3: plain 16-byte loads with the `.L2::256B` prefetch size (a tile row is
//   256 bytes at TILE=64 float32, so DRAM could be asked for it whole). Slower: 0.957-0.962
//   of the copy under the clean flush where plain loads gave 0.965-0.971 (2026-11-27,
//   docs/kernels.md).
// - STORE_CACHE 3: B's lines kept in the L2 at evict-last priority (st.global.L2::cache_hint,
//   a createpolicy evict_last policy for every vector store; plain stores before sm_80 and
//   on the element-by-element path, as STORE_CACHE 2 there), so that
//   more of a row of B might be in the L2 when it is written back, in longer runs. Under
//   the clean flush it took 178.8-179.4 us where STORE_CACHE=2 took 180.9-181.3, 0.977-
//   0.979 of the copy, past issue 25's goal; but back to back (the batch column), where
//   each launch pays for the dirty lines the last one left, it gains nothing (186.7-187.1
//   us against 185.7-185.9 at 8192², equal at 4096², where cold it read 1.05-1.06 of the
//   copy), and it writes 7-8 MB less of B inside its window (the counters). Measured as
//   the draft evict_last (2026-11-27, ninth session; docs/kernels.md, "Evict-last stores").
// - TILE up to 128 (dynamic shared memory: 66,048 bytes at 128 for float32): longer runs a
//   block, 512 bytes a tile row at 4-byte elements; more bytes in flight a thread.
//
// Everything else is vectorized's: a block of TX = TILE / VEC threads across (VEC 16-byte
// elements: 4 floats or ints, 8 halves, 2 doubles) by BR thread rows (BLOCK_ROWS, capped so
// that a block has at most 1,024 threads: the header's min), each thread loading
// cdiv(TILE, BR) vectors down the tile (all issued before the first is stored to shared
// memory), a barrier, and 16-byte stores along B's rows gathered from a column of the
// padded tile. Rows of A are loaded as vectors when COLS is a multiple of VEC and A is
// 16-byte aligned, rows of B stored as vectors when ROWS is and B is, else element by
// element (still coalesced). Edges are predicated: a vector is wholly inside or wholly
// outside the matrix when its row is vectorised. Thread rows beyond the tile (BR > TILE)
// load nothing and store nothing but take part in the barrier.

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
#elif LOAD_CACHE == 3
    uint4 r;  // a plain load asking L2 to fetch the whole 256-byte block from DRAM at once
    asm volatile("ld.global.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
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
#elif STORE_CACHE == 3 && __CUDA_ARCH__ >= 800
    uint4 r;
    memcpy(&r, &v, sizeof(r));
    unsigned long long policy;  // the same value each time: ptxas folds it into a constant
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(p), "r"(r.x), "r"(r.y), "r"(r.z), "r"(r.w), "l"(policy) : "memory");
#else
    *reinterpret_cast<Vec*>(p) = v;
#endif
}

// The tile (row, column) block `id` moves: groups of GROUP tile rows, each walked down its
// tile columns one after the other. A bijection of [0, tiles_r * tiles_c).
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

extern "C" __global__ void __launch_bounds__(TX * BR)
transpose_evict_first(const DTYPE* __restrict__ A, DTYPE* __restrict__ B, int ROWS, int COLS)
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
}
