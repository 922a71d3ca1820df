// cudabench: transpose
// description: Test kernel: a TILE x TILE tile (TILE + 1 padded) staged through dynamic shared memory, 66 KiB at TILE 128 in float32 (beyond the 48 KiB a block has without opting in).
// param TILE: default 128; allowed 64, 128, 256
// launch big_tile: grid cdiv(COLS, TILE), cdiv(ROWS, TILE); block 32, 32; dynamic_shared TILE * (TILE + 1) * ELEM_SIZE

// Every element of the tile goes into shared memory and comes back out into B, so the
// result reads every byte the kernel asked for (the padding column aside).
extern "C" __global__ void big_tile(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                    int ROWS, int COLS)
{
    extern __shared__ unsigned char shared[];
    DTYPE* tile = reinterpret_cast<DTYPE*>(shared);
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    for (int r = threadIdx.y; r < TILE; r += 32)
        for (int c = threadIdx.x; c < TILE; c += 32)
            if (r0 + r < ROWS && c0 + c < COLS)
                tile[r * (TILE + 1) + c] = A[(size_t)(r0 + r) * COLS + c0 + c];
    __syncthreads();
    // B is COLS x ROWS: its row c0 + r holds A's column c0 + r.
    for (int r = threadIdx.y; r < TILE; r += 32)
        for (int c = threadIdx.x; c < TILE; c += 32)
            if (c0 + r < COLS && r0 + c < ROWS)
                B[(size_t)(c0 + r) * ROWS + r0 + c] = tile[c * (TILE + 1) + r];
}
