"""How much a memory-bound kernel's time depends on where its buffers land (issue 25).

Identical kernels measured in one cudabench run have differed by up to 0.9% (evict_first
with GROUP=128 and GROUP=1024, the same code), more than each row's spread. cudabench gives
each row buffers of its own; if their physical placement moves the time, that is the noise
of a ratio between rows. This allocates A and B afresh several times (a spacer allocation of
random size before each, so they land elsewhere), and for each placement times evict_first's
transpose and the device-to-device copy, interleaved, after the clean flush: medians per
placement, and their spread. 8192² float32. Needs CuPy and nvcc.
    python3 scripts/ladder/alloc_spread.py [PLACEMENTS]
"""

from __future__ import annotations

import random
import statistics
import sys

import cupy as cp
from copylab import clean_flush, driver_copy, evict_first, time_interleaved


def main() -> None:
    placements = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    n = 8192
    flush = clean_flush()
    rng = cp.random.default_rng(7)
    host_rng = random.Random(7)
    rows = []
    keep: list[object] = []  # every buffer stays allocated: each placement is new memory
    for placement in range(placements):
        keep.append(cp.empty(host_rng.randrange(1, 64) * 2**21 + host_rng.randrange(0, 2**20),
                             dtype=cp.uint8))  # a spacer, so A and B land elsewhere
        a = rng.random((n, n), dtype=cp.float32)
        b = cp.empty_like(a)
        keep.append((a, b))
        times = time_interleaved({"transpose": evict_first(a, b), "copy": driver_copy(a, b)},
                                 flush, reps=50, warmup=10,
                                 check={"transpose": lambda a=a, b=b: bool((b == a.T).all())},
                                 poison=lambda b=b: b.fill(-1))
        t, c = statistics.median(times["transpose"]), statistics.median(times["copy"])
        spread = {k: (statistics.quantiles(v, n=4)[2] - statistics.quantiles(v, n=4)[0]) / 2
                  / statistics.median(v) for k, v in times.items()}
        rows.append((t, c))
        print(f"placement {placement}: A at {a.data.ptr:#x}, B at {b.data.ptr:#x}: transpose "
              f"{t:.1f} us (±{spread['transpose']:.1%}), copy {c:.1f} us "
              f"(±{spread['copy']:.1%}), ratio {c / t:.3f}")
    ts, cs = [r[0] for r in rows], [r[1] for r in rows]
    ratios = [c / t for t, c in rows]
    print(f"over {placements} placements: transpose {min(ts):.1f}-{max(ts):.1f} us, copy "
          f"{min(cs):.1f}-{max(cs):.1f} us, ratio {min(ratios):.3f}-{max(ratios):.3f} "
          f"(median {statistics.median(ratios):.3f})")


if __name__ == "__main__":
    main()
