// cudabench: transpose
// description: Test kernel: tiles of 32 rows x 128 bytes of A arrive by TMA with the 128-byte swizzle (16-byte chunk j of row r lands at chunk j XOR r % 8) and L2 promotion; the kernel undoes the swizzle as it writes B, so a map built without it fails.
// arch: sm_90a
// tensor_map A: box 32, 128 // ELEM_SIZE; swizzle 128; l2 256
// launch tma_swizzled: grid cdiv(COLS, 128 // ELEM_SIZE), cdiv(ROWS, 32); block 32, 8

#include "tma_common.cuh"

extern "C" __global__ void tma_swizzled(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                        int ROWS, int COLS,
                                        const __grid_constant__ CUtensorMap tensor_map_A)
{
    constexpr int ROW_BYTES = 128, WIDTH = ROW_BYTES / (int)sizeof(DTYPE);
    // The 128-byte swizzle repeats every 1024 bytes: the tile starts on such a boundary.
    __shared__ alignas(1024) unsigned char tile[32 * ROW_BYTES];
    __shared__ alignas(8) unsigned long long arrived;
    const int r0 = blockIdx.y * 32, c0 = blockIdx.x * WIDTH;
    const unsigned barrier = shared_address(&arrived);
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    if (leader)
        barrier_init(barrier);
    __syncthreads();
    if (leader)
        tma_load_2d(shared_address(tile), &tensor_map_A, c0, r0, barrier, sizeof(tile));
    barrier_wait(barrier, 0);
    for (int c = threadIdx.y; c < WIDTH; c += 8)
        for (int r = threadIdx.x; r < 32; r += 32) {
            const int byte = c * (int)sizeof(DTYPE);
            const int chunk = (byte / 16) ^ (r % 8);
            if (c0 + c < COLS && r0 + r < ROWS)
                B[(size_t)(c0 + c) * ROWS + r0 + r] = *reinterpret_cast<const DTYPE*>(
                    tile + r * ROW_BYTES + chunk * 16 + byte % 16);
        }
}
