"""Who leaves how much for the next flush to pay (issue 25, the clean flush's blind spot).

Under cudabench's clean flush a sample does not pay for the dirty lines it leaves in the L2:
they are written back by the next flush, off the clock. If the copy leaves more of them than
the transpose, the transpose's ratio to the copy errs low. This times, for each operation,
the operation after a clean flush (as cudabench does) and then a second flush, and reports
the second flush's extra time over that after no operation: the write-back left behind.
op + debt is what the operation costs when it pays for all it wrote. Interleaved, medians of
CUDA event times, 8192² float32 by default. Needs CuPy (and nvcc for the kernel files).
    python3 scripts/ladder/flush_debt.py [N]
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp
from copylab import (
    clean_flush,
    device,
    driver_copy,
    evict_first,
    evict_last,
    sm_copy,
    transpose_kernel,
)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    _, l2 = device()
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    b = cp.empty_like(a)
    flush = clean_flush()
    vectorized = transpose_kernel("vectorized", "transpose_vectorized", TILE=64, BLOCK_ROWS=8)
    tiles = (n + 63) // 64
    ops = {
        "nothing": lambda: None,
        "memcpy_dtod": driver_copy(a, b),
        "SM copy (8 vectors a thread)": sm_copy(a, b),
        "transpose evict_first": evict_first(a, b),
        "transpose evict_last": evict_last(a, b),
        # vectorized.cu's tile is static shared memory: no dynamic shared memory to ask for.
        "transpose vectorized": lambda: vectorized(
            (tiles, tiles), (16, 8), (a, b, cp.int32(n), cp.int32(n))),
    }
    events = [cp.cuda.Event() for _ in range(4)]
    op_us: dict[str, list[float]] = {name: [] for name in ops}
    after_us: dict[str, list[float]] = {name: [] for name in ops}
    for rep in range(70):
        for name, run in ops.items():
            flush()
            events[0].record()
            run()
            events[1].record()
            events[2].record()
            flush()  # the write-back the operation left, on the clock this time
            events[3].record()
            events[3].synchronize()
            if name.startswith("transpose") and rep == 0:
                assert bool((b == a.T).all()), f"{name} is wrong"
            if rep >= 10:
                op_us[name].append(cp.cuda.get_elapsed_time(events[0], events[1]) * 1e3)
                after_us[name].append(cp.cuda.get_elapsed_time(events[2], events[3]) * 1e3)
    base_flush = statistics.median(after_us["nothing"])
    print(f"{n}x{n} float32, clean flush (a read of 2 x {l2 / 2**20:.0f} MiB), "
          f"{len(op_us['nothing'])} samples each; the flush after nothing: {base_flush:.1f} us")
    paid = {}
    for name in ops:
        if name == "nothing":
            continue
        op = statistics.median(op_us[name])
        debt = statistics.median(after_us[name]) - base_flush
        paid[name] = op + debt
        print(f"  {name}: op {op:.1f} us, the next flush +{debt:.1f} us "
              f"(~{debt * 1e-6 * 3.0e12 / 2**20:.0f} MiB at 3 TB/s), op + debt {op + debt:.1f} us")
    copy_op = statistics.median(op_us["memcpy_dtod"])
    for name in ("transpose evict_first", "transpose evict_last", "transpose vectorized"):
        print(f"  {name} / memcpy_dtod: {copy_op / statistics.median(op_us[name]):.3f} "
              f"as timed, {paid['memcpy_dtod'] / paid[name]:.3f} with each paying its debt")


if __name__ == "__main__":
    main()
