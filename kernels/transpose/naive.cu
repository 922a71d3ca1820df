// cudabench: transpose
// description: One thread per element, straight through global memory; TILE is the block edge (seed 002).
// param TILE: default 32; allowed 8, 16, 32
// launch transpose_naive: grid cdiv(COLS, TILE), cdiv(ROWS, TILE); block TILE, TILE

// Reads along A's rows are coalesced; writes go down B's columns, ROWS elements apart,
// so every thread of a warp writes a different memory segment.
extern "C" __global__ void transpose_naive(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                           int ROWS, int COLS)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < ROWS && col < COLS)
        B[(size_t)col * ROWS + row] = A[(size_t)row * COLS + col];
}
