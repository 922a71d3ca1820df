// cudabench: matmul
// description: tiled made about 20% slower on purpose: the slowdown side of the regression check.
// param TILE: default 16; allowed 8, 16, 32
// shared_bytes: 2 * TILE * TILE * ELEM_SIZE
// launch probe: grid cdiv(N, TILE), cdiv(M, TILE) + cdiv(M, TILE) // 5; block TILE, TILE

// The grid has a fifth more rows of blocks than C has tiles; the extra blocks compute the
// first rows of tiles again and write the same values. The result stays right, and the
// kernel does about 20% more work: what a careless change to a kernel might cost.
extern "C" __global__ void probe(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                                 DTYPE* __restrict__ C, int M, int K, int N)
{
    __shared__ DTYPE As[TILE][TILE];
    __shared__ DTYPE Bs[TILE][TILE];
    const int tiles_m = (M + TILE - 1) / TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = (blockIdx.y % tiles_m) * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    DTYPE sum = 0;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : DTYPE(0);
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : DTYPE(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}
