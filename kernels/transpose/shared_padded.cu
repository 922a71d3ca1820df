// cudabench: transpose
// description: As shared, with a tile of TILE x (TILE+1): the padding puts a column in TILE different banks (seed 002).
// param TILE: default 32; allowed 8, 16, 32
// param BLOCK_ROWS: default 8; allowed 1, 2, 4, 8
// shared_bytes: TILE * (TILE + 1) * ELEM_SIZE
// launch transpose_shared_padded: grid cdiv(COLS, TILE), cdiv(ROWS, TILE); block TILE, BLOCK_ROWS

// The same moves as shared.cu. Each row of the tile is TILE + 1 words long, so walking
// down a column advances one bank per row: a warp's 32 reads of tile[tx][ty + j] land in
// 32 different banks and are served at once.
extern "C" __global__ void transpose_shared_padded(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                                   int ROWS, int COLS)
{
    __shared__ DTYPE tile[TILE][TILE + 1];  // +1: a column spans all banks
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
