// cudabench: matmul
// description: One thread per element of C, bounds-checked; TILE is the block edge (seeds 000, 001).
// param TILE: default 16; allowed 8, 16, 32
// launch matmul_naive: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE

// Every thread reads a row of A and a column of B straight from global memory.
extern "C" __global__ void matmul_naive(const DTYPE* __restrict__ A, const DTYPE* __restrict__ B,
                                        OUT_TYPE* __restrict__ C, int M, int K, int N)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    ACC_TYPE sum = 0;  // float16 inputs accumulate in float32
    for (int k = 0; k < K; ++k)
        sum += (ACC_TYPE)A[(size_t)row * K + k] * (ACC_TYPE)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = (OUT_TYPE)sum;
}
