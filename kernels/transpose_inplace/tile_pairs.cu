// cudabench: transpose_inplace
// description: One block per tile pair (i, j), i >= j: both tiles through padded shared memory with 16-byte loads and stores where rows are aligned, swapped transposed; diagonal tiles in place.
// param TILE: default 32; allowed 8, 16, 32, 64
// param BLOCK_ROWS: default 8; allowed 4, 8, 16, 32
// launch transpose_inplace_tile_pairs: grid cdiv(N, TILE) * (cdiv(N, TILE) + 1) // 2; block TILE * ELEM_SIZE // 16, BLOCK_ROWS; dynamic_shared 2 * TILE * (TILE + 1) * ELEM_SIZE

// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/transpose_inplace_8192.json; docs/kernels.md),
// `cudabench transpose --inplace --size 8192`: 2,699 GB/s, 0.911 of the device-to-device
// copy. No --best sweep has run yet (`scripts/ladder/run.sh OUT tune` runs one), so these
// are the best measured; change them with the sweep's numbers.
//
// The in-place rung after `tiled`, with the out-of-place `vectorized`'s moves. With T =
// cdiv(N, TILE) tiles a side, block k takes the pair P = (i, j), Q = (j, i) with i >= j and
// k = i (i + 1) / 2 + j: the T (T + 1) / 2 blocks cover the lower triangle of tiles and
// the diagonal once each, so no two blocks touch the same element and no block waits for
// another. A block reads all of P and Q into two shared tiles before the __syncthreads,
// and only then writes P^T where Q was and Q^T where P was: every read of the old values
// precedes every write (a diagonal block, i == j, reads P and writes P^T over it).
//
// Both the reads and the writes go along rows of A, so both are coalesced, and both use
// 128-bit accesses (VEC = 16 bytes of elements) when every row is 16-byte aligned (N a
// multiple of VEC and A aligned; checked once), else scalar accesses, x, x + TILE/VEC, ...
// per thread so that a warp's accesses stay consecutive. Shared memory is dynamic (two
// TILE x (TILE + 1) tiles: 66,560 bytes for float64 at TILE = 64, beyond the 48 KiB a block
// may declare statically).

#define VEC (16 / ELEM_SIZE)
#define TX (TILE / VEC)  // threads across a tile row
#define ROW_STEPS ((TILE + BLOCK_ROWS - 1) / BLOCK_ROWS)  // tile rows per thread (BLOCK_ROWS may exceed TILE)
#define LD (TILE + 1)

struct __align__(16) Vec { DTYPE e[VEC]; };

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// Read the tile whose corner is (r0, c0) into s (row y of the tile -> s[y * LD ...]).
__device__ __forceinline__ void read_tile(const DTYPE* A, DTYPE* s, int N, int r0, int c0,
                                          bool vec)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    if (vec) {
        const int c = c0 + tx * VEC;
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
            if (r0 + y < N && c < N) {  // N % VEC == 0: the whole vector is inside
                const Vec v = *reinterpret_cast<const Vec*>(A + (size_t)(r0 + y) * N + c);
#pragma unroll
                for (int j = 0; j < VEC; ++j) s[y * LD + tx * VEC + j] = v.e[j];
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int x = tx + j * TX;
                if (r0 + y < N && c0 + x < N) s[y * LD + x] = A[(size_t)(r0 + y) * N + c0 + x];
            }
        }
    }
}

// Write the transpose of s at the tile whose corner is (r0, c0): row y gets s's column y.
__device__ __forceinline__ void write_transposed(DTYPE* A, const DTYPE* s, int N, int r0, int c0,
                                                 bool vec)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    if (vec) {
        const int c = c0 + tx * VEC;
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
            if (r0 + y < N && c < N) {
                Vec v;
#pragma unroll
                for (int j = 0; j < VEC; ++j) v.e[j] = s[(tx * VEC + j) * LD + y];
                *reinterpret_cast<Vec*>(A + (size_t)(r0 + y) * N + c) = v;
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int x = tx + j * TX;
                if (r0 + y < N && c0 + x < N) A[(size_t)(r0 + y) * N + c0 + x] = s[x * LD + y];
            }
        }
    }
}

extern "C" __global__ void transpose_inplace_tile_pairs(DTYPE* __restrict__ A, int N)
{
    extern __shared__ __align__(16) unsigned char smem[];
    DTYPE* p_tile = reinterpret_cast<DTYPE*>(smem);  // tile P = (i, j): rows i, columns j
    DTYPE* q_tile = p_tile + TILE * LD;              // tile Q = (j, i)

    // Pair k -> (i, j), i >= j: i is the largest with i (i + 1) / 2 <= k (sqrt, corrected).
    const long long k = blockIdx.x;
    long long i = (long long)((sqrt(8.0 * (double)k + 1.0) - 1.0) / 2.0);
    while (i * (i + 1) / 2 > k) --i;
    while ((i + 1) * (i + 2) / 2 <= k) ++i;
    const long long j = k - i * (i + 1) / 2;
    const int pr = (int)i * TILE, pc = (int)j * TILE;  // P's corner; Q's is (pc, pr)
    const bool vec = N % VEC == 0 && aligned16(A);

    read_tile(A, p_tile, N, pr, pc, vec);
    if (i != j) read_tile(A, q_tile, N, pc, pr, vec);
    __syncthreads();  // every old value is in shared memory before anything is written
    write_transposed(A, p_tile, N, pc, pr, vec);      // P^T where Q was (or over P: diagonal)
    if (i != j) write_transposed(A, q_tile, N, pr, pc, vec);  // Q^T where P was
}
