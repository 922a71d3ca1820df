"""The PyCUDA engine's own kernels: a clock stamp (SM 0's clock64 beside the global timer,
so a sample's SM clock can be told), a kernel that holds the stream until the host
releases it (so a run's launches start together), the clean L2 flush's read, and a count
of the elements in which two buffers differ (checks compared on the GPU:
measure/device_checks.py); and what two stamps say."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAX_STAMPS = 2 * 8192  # two per sample; samples beyond go unstamped (clock unknown)
BLOCK_TIMEOUT_NS = 2_000_000_000  # the blocking kernel's patience: never a hang
MIN_STAMP_SPAN_NS = 20_000  # the global timer ticks in about 1 us: shorter spans say little
UTILITY_NAME = "cudabench_utility"
DIFFER_KERNELS = {2: "cudabench_differ16", 4: "cudabench_differ32", 8: "cudabench_differ64"}
DIFFER_BLOCK = 256
DIFFER_BLOCKS_PER_SM = 8
FLUSH_BLOCK = 256
FLUSH_BLOCKS_PER_SM = 8
UTILITY_SOURCE = r'''
extern "C" __global__ void cudabench_stamp(unsigned long long* out) {
    unsigned int sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    if (sm == 0 && threadIdx.x == 0) {
        unsigned long long timer;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(timer));
        out[0] = timer;
        out[1] = clock64();
    }
}
extern "C" __global__ void cudabench_block(volatile int* flag, unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (flag[0] == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) { flag[1] = 1; break; }
    }
}
// The clean L2 flush (--l2-flush clean): read n 16-byte vectors, which evicts what the L2
// held and leaves it clean lines of this buffer. `store` is 0 at every call, but the compiler
// cannot know it, so the loads are kept; nothing is written.
extern "C" __global__ void cudabench_read_flush(const uint4* p, unsigned long long n,
                                                int store, unsigned* sink) {
    unsigned acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (store) sink[0] = acc;
}
// How many of n elements of a and b differ: unsigned words of the element's width, where two
// words differ when x != y and (x | y) & mask != 0. mask = every bit: the bits alone; mask =
// all but the sign bit: also +0 and -0 count as equal (as a float compares). Grid-stride,
// each warp adds its count once.
template <typename T>
__device__ void count_differing(const T* a, const T* b, unsigned long long n,
                                unsigned long long mask, unsigned long long* count) {
    const T m = (T)mask;
    unsigned long long bad = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        const T x = a[i], y = b[i];
        bad += (x != y && ((T)(x | y) & m) != 0) ? 1 : 0;
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        bad += __shfl_down_sync(0xffffffffu, bad, offset);
    if ((threadIdx.x & 31) == 0 && bad != 0) atomicAdd(count, bad);
}
extern "C" __global__ void cudabench_differ16(const unsigned short* a, const unsigned short* b,
        unsigned long long n, unsigned long long mask, unsigned long long* count) {
    count_differing(a, b, n, mask, count);
}
extern "C" __global__ void cudabench_differ32(const unsigned int* a, const unsigned int* b,
        unsigned long long n, unsigned long long mask, unsigned long long* count) {
    count_differing(a, b, n, mask, count);
}
extern "C" __global__ void cudabench_differ64(const unsigned long long* a,
        const unsigned long long* b, unsigned long long n, unsigned long long mask,
        unsigned long long* count) {
    count_differing(a, b, n, mask, count);
}
'''


def stamp_clock_mhz(before: np.ndarray, after: np.ndarray) -> float | None:
    """Return the SM clock between two (globaltimer ns, clock64) stamps, or None if a stamp
    is missing (no block landed on SM 0) or the span is too short to tell."""
    span_ns = int(after[0]) - int(before[0])
    if not before[0] or not after[0] or span_ns < MIN_STAMP_SPAN_NS:
        return None
    return (int(after[1]) - int(before[1])) / span_ns * 1e3


def differ_mask(itemsize: int, zeros_equal: bool) -> int:
    """Return the mask of the count kernels: every bit of an element, or (zeros_equal) all
    but its sign bit, so that +0 and -0 compare equal."""
    bits = 8 * itemsize
    return (1 << (bits - 1)) - 1 if zeros_equal else (1 << bits) - 1
