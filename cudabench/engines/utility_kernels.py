"""The PyCUDA engine's own kernels: a clock stamp (SM 0's clock64 beside the global timer,
so a sample's SM clock can be told) and a kernel that holds the stream until the host
releases it (so a run's launches start together); and what two stamps say."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAX_STAMPS = 2 * 8192  # two per sample; samples beyond go unstamped (clock unknown)
BLOCK_TIMEOUT_NS = 2_000_000_000  # the blocking kernel's patience: never a hang
MIN_STAMP_SPAN_NS = 20_000  # the global timer ticks in about 1 us: shorter spans say little
UTILITY_NAME = "cudabench_utility"
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
'''


def stamp_clock_mhz(before: np.ndarray, after: np.ndarray) -> float | None:
    """Return the SM clock between two (globaltimer ns, clock64) stamps, or None if a stamp
    is missing (no block landed on SM 0) or the span is too short to tell."""
    span_ns = int(after[0]) - int(before[0])
    if not before[0] or not after[0] or span_ns < MIN_STAMP_SPAN_NS:
        return None
    return (int(after[1]) - int(before[1])) / span_ns * 1e3
