// cudabench: matmul
// description: tiled with both tiles stored transposed in shared memory: same product, bank conflicts (seed 001).
// param TILE: default 16; allowed 8, 16, 32
// shared_bytes: 2 * TILE * TILE * ELEM_SIZE
// launch matmul_tiled_conflict: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE

// Global loads stay coalesced, as in `tiled`, but each tile is stored transposed:
// AsT[c][r] = A-tile[r][c]. A warp's consecutive threadIdx.x then store, and in the inner
// loop read BsT[tx][k], at a stride of TILE words: the same bank for every TILE/32-th
// thread, so shared-memory accesses are serialised. (The seed's version of this kernel
// also swapped the global index and so multiplied the wrong elements.)
extern "C" __global__ void matmul_tiled_conflict(const DTYPE* __restrict__ A,
                                                 const DTYPE* __restrict__ B,
                                                 OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    __shared__ DTYPE AsT[TILE][TILE];
    __shared__ DTYPE BsT[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    ACC_TYPE sum = 0;  // float16 inputs accumulate in float32
    for (int k0 = 0; k0 < K; k0 += TILE) {
        AsT[tx][ty] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : DTYPE(0);
        BsT[tx][ty] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : DTYPE(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            sum += (ACC_TYPE)AsT[k][ty] * (ACC_TYPE)BsT[tx][k];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = (OUT_TYPE)sum;
}
