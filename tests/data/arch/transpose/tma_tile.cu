// cudabench: transpose
// description: Test kernel: each block's TILE x TILE tile of A arrives in shared memory by one TMA copy through a tensor map over A, then leaves transposed into B. Built for sm_90a only: it holds a wgmma fence (on a branch no launch takes).
// arch: sm_90a
// param TILE: default 32; allowed 16, 32, 64
// tensor_map A: box TILE, TILE
// launch tma_tile: grid cdiv(COLS, TILE), cdiv(ROWS, TILE); block 32, 8

#include "tma_common.cuh"

extern "C" __global__ void tma_tile(const DTYPE* __restrict__ A, DTYPE* __restrict__ B,
                                    int ROWS, int COLS,
                                    const __grid_constant__ CUtensorMap tensor_map_A)
{
    __shared__ alignas(128) DTYPE tile[TILE][TILE];
    __shared__ alignas(8) unsigned long long arrived;
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    const unsigned barrier = shared_address(&arrived);
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    // An instruction sm_90 (without `a`) lacks, so the build needs the header's sm_90a; on a
    // branch no launch takes (a row count is never negative), because executed here, with
    // no wgmma after it, it faulted with "an illegal instruction" about once in 5,000
    // launches at 2048x2048 (H100, 2026-11-27: scripts/gpu-checks/tma_loop.py).
    if (ROWS < 0)
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    if (leader)
        barrier_init(barrier);
    __syncthreads();
    if (leader)  // the whole box counts, the part past the edges filled with zeros
        tma_load_2d(shared_address(tile), &tensor_map_A, c0, r0, barrier, sizeof(tile));
    barrier_wait(barrier, 0);
    // B is COLS x ROWS: its row c0 + c holds A's column c0 + c.
    for (int c = threadIdx.y; c < TILE; c += 8)
        for (int r = threadIdx.x; r < TILE; r += 32)
            if (c0 + c < COLS && r0 + r < ROWS)
                B[(size_t)(c0 + c) * ROWS + r0 + r] = tile[r][c];
}
