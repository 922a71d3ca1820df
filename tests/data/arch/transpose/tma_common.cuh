// TMA helpers for the test kernels beside this file (sm_90): an mbarrier in shared memory
// that one thread arms with the bytes a tensor copy will bring, the copy itself, and the
// wait for it.
#pragma once
#include <cuda.h>  // CUtensorMap

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
    return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// Initialise the barrier for one arrival and make that visible to the TMA unit.
__device__ __forceinline__ void barrier_init(unsigned barrier) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(barrier) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Arrive, expecting `bytes` from the copy, and start a 2-D tensor copy of the box at
// (x, y) (x: the innermost coordinate, the column) into shared memory at `destination`.
__device__ __forceinline__ void tma_load_2d(unsigned destination, const CUtensorMap* map,
                                            int x, int y, unsigned barrier, unsigned bytes) {
    asm volatile("{\n\t.reg .b64 state;\n\t"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}"
                 :: "r"(barrier), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(destination), "l"(reinterpret_cast<unsigned long long>(map)),
                    "r"(x), "r"(y), "r"(barrier)
                 : "memory");
}

// Wait until the barrier's phase `parity` has completed (the copy has landed).
__device__ __forceinline__ void barrier_wait(unsigned barrier, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred ready;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, ready;\n\t}"
                     : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
    }
}
