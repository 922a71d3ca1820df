// cudabench: matmul
// description: Shared-memory tiles of TILE x TILE, zero-filled past the edges (seeds 000, 001, 004).
// param TILE: default 16; allowed 8, 16, 32
// shared_bytes: 2 * TILE * TILE * ELEM_SIZE
// launch matmul_tiled: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE

// Each block computes a TILE x TILE tile of C. It walks K in steps of TILE: every thread
// loads one element of A's and one of B's tile (coalesced), the block synchronises, and
// each thread accumulates TILE products from shared memory. Elements past M, K or N load
// as zero, so any shape is right (the seeds' loop over gridDim.x assumed square matrices).
extern "C" __global__ void matmul_tiled(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                                        OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    __shared__ DTYPE As[TILE][TILE];
    __shared__ DTYPE Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    ACC_TYPE sum = 0;  // float16 inputs accumulate in float32
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : DTYPE(0);
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : DTYPE(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            sum += (ACC_TYPE)As[ty][k] * (ACC_TYPE)Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = (OUT_TYPE)sum;
}
