// cudabench: transpose
// description: TILE x TILE shared-memory tile, no padding: coalesced both ways, bank conflicts on the transposed read (seed 002).
// param TILE: default 32; allowed 8, 16, 32
// param BLOCK_ROWS: default 8; allowed 1, 2, 4, 8
// shared_bytes: TILE * TILE * ELEM_SIZE
// launch transpose_shared: grid cdiv(COLS, TILE), cdiv(ROWS, TILE); block TILE, BLOCK_ROWS

// A block of TILE x BLOCK_ROWS threads moves a TILE x TILE tile, each thread TILE/BLOCK_ROWS
// elements (several loads in flight per thread). Rows of A are read and rows of B written,
// both coalesced; the transpose happens in shared memory. Reading tile[tx][ty + j] walks
// down a column, TILE words apart: with TILE = 32 all 32 threads of a warp hit the same
// bank, a 32-way conflict, which shared_padded.cu removes.
extern "C" __global__ void transpose_shared(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                            int ROWS, int COLS)
{
    __shared__ DTYPE tile[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (row + j < ROWS && col < COLS)
            tile[ty + j][tx] = A[(size_t)(row + j) * COLS + col];
    __syncthreads();
    col = blockIdx.y * TILE + tx;  // column of B = row of A
    row = blockIdx.x * TILE + ty;  // row of B = column of A
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (row + j < COLS && col < ROWS)
            B[(size_t)(row + j) * ROWS + col] = tile[tx][ty + j];
}
