// cudabench: transpose
// run: on request
// description: The TMA unit moves whole tiles both ways: a TR x TC tile of A arrives as one box in a STAGES-deep ring (cp.async.bulk.tensor, an mbarrier counts its bytes), the block transposes it into one of OUT_BUFS shared tiles of B, VEC x VEC pieces in registers, conflict-free without a swizzle, and the TMA unit stores it as one box; persistent blocks walk the tiles grid-stride; sm_90, rows of A and B 16-byte multiples.
// arch: sm_90
// param TR: default 64; allowed 32, 64, 128, 256
// param TC: default 64; allowed 32, 64, 128, 256
// param THREADS: default 256; allowed 64, 128, 256, 512
// param STAGES: default 4; allowed 1, 2, 3, 4, 6, 8
// param OUT_BUFS: default 2; allowed 1, 2
// param BLOCKS_PER_SM: default 8; allowed 1, 2, 3, 4, 6, 8, 16
// param LOAD_CACHE: default 1; allowed 1, 2
// param STORE_CACHE: default 1; allowed 1, 2
// param STORE_PATH: default 1; allowed 1, 2
// constraint: TR * ELEM_SIZE >= 128
// constraint: TC * ELEM_SIZE >= 128
// constraint: (STAGES + OUT_BUFS) * TR * TC * ELEM_SIZE <= 225280
// tensor_map A: box TR, TC
// tensor_map B: box TC, TR
// launch transpose_tma: grid min(cdiv(ROWS, TR) * cdiv(COLS, TC), SM_COUNT * min(BLOCKS_PER_SM, min(2048 // THREADS, 233472 // ((STAGES + OUT_BUFS) * TR * TC * ELEM_SIZE + 2048 + 8 * STAGES)))); block THREADS; dynamic_shared (STAGES + OUT_BUFS) * TR * TC * ELEM_SIZE + 1024

// A draft for issue 25 (the transpose's last percent under the clean L2 flush): the 16-byte
// loads and stores of vectorized.cu and evict_first.cu leave every byte to the SM's load
// and store units; here the TMA unit (the copy engine each SM has since Hopper) moves a
// whole tile with one instruction each way, as bulk.cu does for the dot's reads.
//
// Measured (one H100 80GB HBM3 a call, 2026-11-27, 8192² float32, clean L2 flush, each
// beside evict_first.cu and the copy in one run; docs/kernels.md, data in
// docs/data/transpose-2026-11-27/; medians): slower than evict_first.cu in every form.
// The best, 64 x 64 with STAGES=4 and 256 threads, took 183.5-184.2 us where evict_first
// took 180.2-181.1 us. 128 x 64, 64 x 128 and 128 x 128 tiles took 184.1 us and more, and
// the threads storing B (STORE_PATH=2) 185.5 us and more. The defaults are that best
// configuration.
// Verified at odd shapes in every type at these defaults and at STAGES=2, 128 threads and
// 4 blocks an SM, with TR and TC 64 or 128 and one or two B tiles (scripts/ladder/
// transpose_tma.sh; tma-verify-defaults.txt, tma-verify-summary.txt). compute-sanitizer's
// memcheck, racecheck and synccheck are clean for those forms. So the SMs' load and store
// instructions are not what keeps the transpose from the copy.
//
// - Tiles. A TR x TC tile of A (TR rows) is one box of A's tensor map, rows of TC x
//   ELEM_SIZE bytes; its transpose one TC x TR box of B's, rows of TR x ELEM_SIZE bytes.
//   At 64 x 64 float32 each row of A is read, and each row of B written, in 256-byte
//   pieces, as evict_first.cu moves them; TR = 128 writes B in 512-byte pieces, TC = 128
//   reads A in 512-byte pieces. A first form of this draft used the 128-byte
//   swizzle, which caps a box row at 128 bytes, so a tile was two boxes of 128-byte rows:
//   189.3 us at best at 8192² float32 where evict_first.cu took 181 us beside it (medians,
//   2026-11-27),
//   about what 128-byte pieces cost evict_first.cu itself (TILE=32: 193 us). Edges cost
//   nothing: loads fill what lies outside A with zeros, stores leave what lies outside B
//   alone. A tensor map needs every row a multiple of 16 bytes apart, so this variant runs
//   only where COLS and ROWS are multiples of 16 bytes of elements; elsewhere cudabench
//   skips it, saying why.
// - Transposing in shared memory. A thread takes a VEC x VEC piece (VEC = 16 bytes of
//   elements): VEC 16-byte loads down the piece's rows in A's tile, a transpose in
//   registers, VEC 16-byte stores along the rows of B's tile. Tile rows are multiples of
//   128 bytes, so a 16-byte chunk's banks are set by its column alone (chunk % 8). Piece s
//   goes to thread s % THREADS; its lane i = s % 8 takes chunk column cb with cb % 8 = i
//   and row block rb = (s / 8 / (TC / VEC / 8) + i) % (TR / VEC): the 8
//   lanes of each quarter-warp (a 128-bit access's phase) read 8 chunks of distinct
//   cb % 8 and write 8 of distinct rb % 8, in every type (checked by enumeration for 2-,
//   4- and 8-byte elements), with no swizzle.
// - The pipeline. Block b takes tiles b, b + grid, ... in row-major order. Thread 0 keeps
//   STAGES loads in flight in a ring of A tiles, each with a `full` mbarrier armed with
//   the tile's bytes; every thread waits on it, transposes into B tile k % OUT_BUFS,
//   fences the writes for the async proxy, and after a barrier thread 0 issues the tile's
//   store (one bulk group) and the load STAGES tiles ahead into the stage just read.
//   With two B tiles, thread 0 waits before that barrier until the previous tile's store
//   has read its B tile (wait_group.read 0), which the next tile fills: one barrier a
//   tile. With one (OUT_BUFS=1, room for more stages or larger tiles) the wait and a
//   second barrier come before the transpose.
// - The grid: BLOCKS_PER_SM blocks an SM, fewer where the SM's 228 KB of shared memory
//   (a block's tiles, its 1 KB of alignment slack, its mbarriers and the 1 KB the driver
//   reserves) or its 2,048 threads hold fewer at once, so that every block is resident
//   from the start (no second wave). LOAD_CACHE / STORE_CACHE 2 give the copies an L2 evict-first policy.
// - STORE_PATH 2: B written by the threads instead of the TMA unit, 16-byte loads along
//   the rows of B's tile and 16-byte stores along B's rows (STG.128, evict-first with
//   STORE_CACHE 2), coalesced: the TMA unit reads, the threads write, to tell the two
//   paths' costs apart.

#include <cuda.h>  // CUtensorMap

#define IN_ROW (TC * ELEM_SIZE)                      // bytes of a row of A's tile
#define OUT_ROW (TR * ELEM_SIZE)                     // bytes of a row of B's tile
#define VEC (16 / ELEM_SIZE)                         // elements in a 16-byte chunk
#define PIECE_ROWS (TR / VEC)                        // VEC x VEC pieces down A's tile
#define PIECE_COLS (TC / VEC)                        // and across it
#define PIECES (PIECE_ROWS * PIECE_COLS)
#define CHUNK_GROUPS (PIECE_COLS / 8)                // groups of 8 chunk columns (128 bytes)
#define TILE_BYTES (TR * TC * ELEM_SIZE)

static_assert(IN_ROW % 128 == 0 && OUT_ROW % 128 == 0,
              "tile rows are whole 128-byte lines (the constraints)");

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void barrier_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void barrier_expect_bytes(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(bar), "r"(bytes) : "memory");
}

// Wait until the barrier's phase of this parity has completed.
__device__ __forceinline__ void barrier_wait(unsigned bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n"
                 "}\n" :: "r"(bar), "r"(parity) : "memory");
}

// A 2-D box at (x: the inner coordinate, y) of map into shared memory at dst.
__device__ __forceinline__ void tma_load(unsigned dst, const CUtensorMap* map, int x, int y,
                                         unsigned bar, unsigned long long policy)
{
#if LOAD_CACHE == 2
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y),
                    "r"(bar), "l"(policy)
                 : "memory");
#else
    (void)policy;
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y),
                    "r"(bar)
                 : "memory");
#endif
}

// A 2-D box from shared memory at src into map at (x, y); part of the current bulk group.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, int x, int y, unsigned src,
                                          unsigned long long policy)
{
#if STORE_CACHE == 2
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint"
                 " [%0, {%1, %2}], [%3], %4;\n"
                 :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(src),
                    "l"(policy)
                 : "memory");
#else
    (void)policy;
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
                 " [%0, {%1, %2}], [%3];\n"
                 :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(src)
                 : "memory");
#endif
}

// The byte offset of (row, 16-byte chunk column) in a tile of row_bytes rows.
__device__ __forceinline__ unsigned chunk_at(int row, int chunk, int row_bytes)
{
    return (unsigned)(row * row_bytes + chunk * 16);
}

struct __align__(16) Vec { DTYPE e[VEC]; };
static_assert(sizeof(Vec) == 16, "a vector is 16 bytes");

extern "C" __global__ void __launch_bounds__(THREADS)
transpose_tma(const DTYPE* __restrict__ A, DTYPE* __restrict__ B, int ROWS, int COLS,
              const __grid_constant__ CUtensorMap map_a,
              const __grid_constant__ CUtensorMap map_b)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    // Tiles start on 1024-byte boundaries (TMA asks 128 bytes without a swizzle).
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
    const unsigned in_base = smem_u32(smem);                        // STAGES tiles of A
    const unsigned out_base = in_base + STAGES * TILE_BYTES;        // OUT_BUFS tiles of B
    const int tid = threadIdx.x;
    const int tiles_c = (COLS + TC - 1) / TC;
    const int tiles = ((ROWS + TR - 1) / TR) * tiles_c;
    const int grid = gridDim.x;
    const int mine = tiles > (int)blockIdx.x ? (tiles - 1 - (int)blockIdx.x) / grid + 1 : 0;
    (void)A;

    unsigned long long policy = 0;
#if LOAD_CACHE == 2 || STORE_CACHE == 2
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    auto issue = [&](int k) {  // thread 0: this block's k-th tile into stage k % STAGES
        const int s = k % STAGES;
        const int p = (int)blockIdx.x + k * grid;
        const int r0 = (p / tiles_c) * TR, c0 = (p % tiles_c) * TC;
        const unsigned bar = smem_u32(&full[s]);
        barrier_expect_bytes(bar, TILE_BYTES);  // out-of-range elements count too (zeros)
        tma_load(in_base + s * TILE_BYTES, &map_a, c0, r0, bar, policy);
    };
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) barrier_init(smem_u32(&full[s]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        for (int k = 0; k < STAGES && k < mine; ++k) issue(k);
    }
    __syncthreads();

    for (int k = 0; k < mine; ++k) {
        const int s = k % STAGES;
        const int p = (int)blockIdx.x + k * grid;
        const int r0 = (p / tiles_c) * TR, c0 = (p % tiles_c) * TC;
        const unsigned in = in_base + s * TILE_BYTES;
        const unsigned out = out_base + (k % OUT_BUFS) * TILE_BYTES;
        barrier_wait(smem_u32(&full[s]), (unsigned)(k / STAGES) & 1);
#if OUT_BUFS == 1
        if (tid == 0)  // the previous tile's store has read the one B tile
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        __syncthreads();
#endif

        for (int piece = tid; piece < PIECES; piece += THREADS) {
            const int i = piece & 7, g = piece >> 3;
            const int cb = (g % CHUNK_GROUPS) * 8 + i;              // chunk column in A's tile
            const int rb = (g / CHUNK_GROUPS + i) % PIECE_ROWS;     // row block in A's tile
            Vec v[VEC];
#pragma unroll
            for (int row = 0; row < VEC; ++row) {
                const unsigned at = in + chunk_at(rb * VEC + row, cb, IN_ROW);
                uint4 raw;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w) : "r"(at));
                memcpy(&v[row], &raw, 16);
            }
#pragma unroll
            for (int col = 0; col < VEC; ++col) {  // column col of the piece: a row of B's
                Vec t;
#pragma unroll
                for (int row = 0; row < VEC; ++row) t.e[row] = v[row].e[col];
                uint4 raw;
                memcpy(&raw, &t, 16);
                const unsigned at = out + chunk_at(cb * VEC + col, rb, OUT_ROW);
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n"
                             :: "r"(at), "r"(raw.x), "r"(raw.y), "r"(raw.z), "r"(raw.w)
                             : "memory");
            }
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // for the TMA stores
#if OUT_BUFS == 2
        if (tid == 0)  // the previous tile's store has read the B tile the next one fills
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
        __syncthreads();
#if STORE_PATH == 2
        if (tid == 0 && k + STAGES < mine) issue(k + STAGES);  // every thread has read stage s
        for (int c = tid; c < TC * PIECE_ROWS; c += THREADS) {  // chunk c of B's tile
            const int row = c / PIECE_ROWS, chunk = c % PIECE_ROWS;
            const int br = c0 + row, bc = r0 + chunk * VEC;  // ROWS % VEC == 0 (tensor map)
            if (br < COLS && bc < ROWS) {
                uint4 raw;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
                             : "r"(out + chunk_at(row, chunk, OUT_ROW)));
                uint4* to = reinterpret_cast<uint4*>(B + (size_t)br * ROWS + bc);
#if STORE_CACHE == 2
                __stcs(to, raw);
#else
                *to = raw;
#endif
            }
        }
#else
        if (tid == 0) {
            tma_store(&map_b, r0, c0, out, policy);
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            if (k + STAGES < mine) issue(k + STAGES);  // every thread has read stage s
        }
#endif
    }
    if (tid == 0)  // B is written before the block ends
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
