// cudabench: transpose_inplace
// description: A block loads tiles (i,j) and (j,i) into padded shared memory and writes both back transposed; diagonal tiles in place (seed 002).
// param TILE: default 32; allowed 8, 16, 32
// param BLOCK_ROWS: default 8; allowed 1, 2, 4, 8
// shared_bytes: 2 * TILE * (TILE + 1) * ELEM_SIZE
// launch transpose_inplace_tiled: grid cdiv(N, TILE) * (cdiv(N, TILE) + 1) // 2; block TILE, BLOCK_ROWS

// The grid has one block per tile pair on or below the diagonal (the seed launched the
// full square and left half the blocks idle). Block k takes the pair (i, j), i >= j, with
// k = i (i + 1) / 2 + j. Every block reads both of its tiles before it writes either, and
// no two blocks touch the same tile, so the swap needs no synchronisation between blocks.
extern "C" __global__ void transpose_inplace_tiled(DTYPE* __restrict__ A, int N)
{
    __shared__ DTYPE lower[TILE][TILE + 1];  // tile (i, j); +1 avoids bank conflicts
    __shared__ DTYPE upper[TILE][TILE + 1];  // tile (j, i)
    const long long k = blockIdx.x;
    long long i = (long long)((sqrt(8.0 * (double)k + 1.0) - 1.0) / 2.0);
    while (i * (i + 1) / 2 > k) --i;         // correct the rounding of sqrt
    while ((i + 1) * (i + 2) / 2 <= k) ++i;
    const long long j = k - i * (i + 1) / 2;
    const int r0 = (int)i * TILE, c0 = (int)j * TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const bool diagonal = (i == j);

    for (int y = ty; y < TILE; y += BLOCK_ROWS) {
        if (r0 + y < N && c0 + tx < N) lower[y][tx] = A[(size_t)(r0 + y) * N + c0 + tx];
        if (!diagonal && c0 + y < N && r0 + tx < N)
            upper[y][tx] = A[(size_t)(c0 + y) * N + r0 + tx];
    }
    __syncthreads();
    for (int y = ty; y < TILE; y += BLOCK_ROWS) {
        if (c0 + y < N && r0 + tx < N) A[(size_t)(c0 + y) * N + r0 + tx] = lower[tx][y];
        if (!diagonal && r0 + y < N && c0 + tx < N)
            A[(size_t)(r0 + y) * N + c0 + tx] = upper[tx][y];
    }
}
