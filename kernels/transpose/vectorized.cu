// cudabench: transpose
// description: shared_padded with 16-byte loads and stores where rows are aligned (scalar otherwise) and a TILE x TILE tile per block, TILE/BLOCK_ROWS vectors per thread.
// param TILE: default 64; allowed 8, 16, 32, 64
// param BLOCK_ROWS: default 8; allowed 4, 8, 16, 32
// shared_bytes: TILE * (TILE + 1) * ELEM_SIZE
// launch transpose_vectorized: grid cdiv(COLS, TILE), cdiv(ROWS, TILE); block TILE * ELEM_SIZE // 16, BLOCK_ROWS

// Where the defaults come from: they are the one configuration measured on an H100 so far
// (2026-11-23, float32, one run, cold L2, beside the vendor row;
// measurements/2026-11-23-h100-h200x2/ladder/transpose_8192.json; docs/kernels.md),
// `cudabench transpose --size 8192`: 2,865 GB/s, 0.969 of the device-to-device copy. No
// --best sweep has run yet (`scripts/ladder/run.sh OUT tune` runs one), so these are the
// best measured; change them with the sweep's numbers.
//
// The next rung after shared_padded. A block of (TILE / VEC) x BLOCK_ROWS threads moves a
// TILE x TILE tile, VEC = 16 bytes of elements (4 floats or ints, 8 halves, 2 doubles)
// per access:
//
// - Reading A: a thread loads VEC consecutive elements of a row with one 128-bit load
//   (LDG.E.128), TILE / BLOCK_ROWS rows apart; a warp reads whole 128-byte lines.
// - Writing B: a thread gathers VEC consecutive rows of one tile column from shared
//   memory (VEC scalar reads) and stores them as one 128-bit store along a row of B.
// - The tile is TILE x (TILE + 1): with TILE = 32 and 4-byte elements, both the row writes
//   and the column reads of a warp hit 32 different banks (lane (r, c) -> bank r + 4c);
//   with TILE = 64 they are 2-way conflicts, cheap beside DRAM.
// - More work per thread: TILE / BLOCK_ROWS loads in flight per thread before the block
//   synchronises (8 at the defaults), fewer blocks and index computations per byte.
//
// Alignment: rows of A start 16-byte aligned only when COLS is a multiple of VEC (and A
// is); rows of B when ROWS is. Each side is checked once (uniform over the grid) and
// otherwise moved element by element, still coalesced: thread x then takes columns
// x, x + TILE/VEC, ... of the tile, so a warp's j-th access covers consecutive elements.
// With aligned rows a vector is wholly inside the matrix or wholly outside (its start is
// a multiple of VEC and so is the extent): edges need one test per vector.
//
// Every allowed TILE and BLOCK_ROWS go together: TILE 8 to 64 (the values --tile gives the
// other transpose variants too; TILE >= VEC always), and thread rows beyond the tile's
// (BLOCK_ROWS > TILE) do nothing but take part in the __syncthreads.

#define VEC (16 / ELEM_SIZE)
#define TX (TILE / VEC)  // threads across a tile row
#define ROW_STEPS ((TILE + BLOCK_ROWS - 1) / BLOCK_ROWS)  // tile rows per thread

struct __align__(16) Vec { DTYPE e[VEC]; };

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

extern "C" __global__ void transpose_vectorized(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                                int ROWS, int COLS)
{
    __shared__ DTYPE tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;  // the tile's corner in A
    const bool vec_in = COLS % VEC == 0 && aligned16(A);
    const bool vec_out = ROWS % VEC == 0 && aligned16(B);

    if (vec_in) {
        const int c = c0 + tx * VEC;
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
            const int r = r0 + y;
            if (r < ROWS && c < COLS) {
                const Vec v = *reinterpret_cast<const Vec*>(A + (size_t)r * COLS + c);
#pragma unroll
                for (int j = 0; j < VEC; ++j) tile[y][tx * VEC + j] = v.e[j];
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
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
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
            const int r = c0 + y;
            if (r < COLS && c < ROWS) {
                Vec v;
#pragma unroll
                for (int j = 0; j < VEC; ++j) v.e[j] = tile[tx * VEC + j][y];
                *reinterpret_cast<Vec*>(B + (size_t)r * ROWS + c) = v;
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < ROW_STEPS; ++it) {
            const int y = ty + it * BLOCK_ROWS;
            if (BLOCK_ROWS > TILE && y >= TILE) break;  // more thread rows than tile rows
            const int r = c0 + y;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int x = tx + j * TX;
                if (r < COLS && r0 + x < ROWS) B[(size_t)r * ROWS + r0 + x] = tile[x][y];
            }
        }
    }
}
