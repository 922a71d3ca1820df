// cudabench: transpose_inplace
// description: One thread per element; the thread below the diagonal swaps its pair, exactly once (seed 002).
// param TILE: default 32; allowed 8, 16, 32
// launch transpose_inplace_naive: grid cdiv(N, TILE), cdiv(N, TILE); block TILE, TILE

// Only threads with col < row swap: if both threads of a pair swapped, the pair would be
// transposed twice, that is not at all. Diagonal and upper-triangle threads do nothing.
extern "C" __global__ void transpose_inplace_naive(DTYPE* __restrict__ A, int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < N && col < row) {
        const size_t below = (size_t)row * N + col, above = (size_t)col * N + row;
        const DTYPE tmp = A[below];
        A[below] = A[above];
        A[above] = tmp;
    }
}
