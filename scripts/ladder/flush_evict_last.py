"""Does a line kept at evict-last priority outlive cudabench's L2 flush? (issue 25)

A transpose storing B at evict-last priority (evict_first's STORE_CACHE=3, first the draft
evict_last) read 5-6% faster than the copy at 4096² under the clean flush, which a
transpose cannot honestly be. One guess: its lines outlive the flush (a read of twice the
L2 at normal priority), so the next sample's writes hit them. This writes a buffer X
(half the L2) with plain or evict-last stores, runs a flush, and times a read of X: from
the L2 it is faster (the `none` row), from DRAM slower. Flushes: none, cudabench's clean
flush (its own kernel, engines/utility_kernels.py), a memset of twice the L2 (--l2-flush
memset). Medians of 40 samples each, after 5 warm-up ones; and each flush's own time.
Needs CuPy, nvcc and an sm_90 GPU (it compiles for sm_90). On an H100 (docs/data/transpose-evict-last-2026-11-27/)
X read as slowly after either flush whichever way it was written: the guess was wrong.
    python3 scripts/ladder/flush_evict_last.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cudabench.engines.utility_kernels import UTILITY_SOURCE  # noqa: E402

PROBE_SOURCE = r"""
extern "C" __global__ void write_x(uint4* x, unsigned long long n, int keep) {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += stride) {
        const uint4 v = make_uint4((unsigned)i, 1u, 2u, 3u);
        if (keep)
            asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                         :: "l"(x + i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(policy)
                         : "memory");
        else
            x[i] = v;
    }
}
extern "C" __global__ void read_x(const uint4* x, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += stride) {
        const uint4 v = x[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;
}
"""


def main() -> None:
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, l2 = props["multiProcessorCount"], props["l2CacheSize"]
    utility = cp.RawModule(code=UTILITY_SOURCE, options=("-arch=sm_90",), backend="nvcc")
    read_flush = utility.get_function("cudabench_read_flush")
    probe = cp.RawModule(code=PROBE_SOURCE, options=("-arch=sm_90",), backend="nvcc")
    write_x, read_x = probe.get_function("write_x"), probe.get_function("read_x")

    flush_buffer = cp.zeros(2 * l2 // 4, dtype=cp.uint32)
    vectors = cp.uint64(flush_buffer.nbytes // 16)
    sink = cp.zeros(1, dtype=cp.uint32)
    grid, block = (sms * 8,), (256,)
    x = cp.empty(l2 // 2 // 4, dtype=cp.uint32)
    x_vectors = cp.uint64(x.nbytes // 16)

    flushes = {
        "none": lambda: None,
        "cudabench's clean flush": lambda: read_flush(
            grid, block, (flush_buffer, vectors, cp.int32(0), sink)),
        "a memset of 2 x L2 (--l2-flush memset)": lambda: flush_buffer.fill(0),
    }
    events = [cp.cuda.Event() for _ in range(4)]
    print(f"{props['name'].decode()}: L2 {l2 / 2**20:.0f} MiB; X {x.nbytes / 2**20:.0f} MiB; "
          f"read of X, medians of 40 (us)")
    print(f"{'flush':46} {'X plain':>9} {'X evict-last':>13} {'flush time':>11}")
    for name, flush in flushes.items():
        cells = []
        flush_us: list[float] = []
        for keep in (0, 1):
            times = []
            for rep in range(45):
                write_x(grid, block, (x, x_vectors, cp.int32(keep)))
                events[0].record()
                flush()
                events[1].record()
                read_x(grid, block, (x, x_vectors, sink))
                events[2].record()
                events[2].synchronize()
                if rep >= 5:
                    times.append(cp.cuda.get_elapsed_time(events[1], events[2]) * 1e3)
                    flush_us.append(cp.cuda.get_elapsed_time(events[0], events[1]) * 1e3)
            cells.append(statistics.median(times))
        print(f"{name:46} {cells[0]:9.2f} {cells[1]:13.2f} {statistics.median(flush_us):11.1f}")


if __name__ == "__main__":
    main()
