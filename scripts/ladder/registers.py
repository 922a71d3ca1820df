"""Does evict_first gain from more blocks an SM (issue 25)?

At its defaults (TILE 64, BLOCK_ROWS 8, float32) ptxas gives it 60 registers a thread, so
registers, not its 16.6 KB of shared memory, hold it to 8 blocks of 128 threads an SM. The
occupancy experiment (transpose_occupancy.sh) found 3 to 8 blocks equally fast; this asks
the other way: `__launch_bounds__(128, MINB)` makes ptxas fit MINB blocks an SM (at most
65,536 / (128 MINB) registers a thread; shared memory caps it at 12), and each build is
timed beside the unchanged kernel and the driver's copy, interleaved after cudabench's clean
flush (8192² float32, CUDA events, medians), each checked first. Needs CuPy and nvcc.
    python3 scripts/ladder/registers.py [PLACEMENTS]
"""

from __future__ import annotations

import sys

import cupy as cp
from carveout import blocks_per_sm
from copylab import ARCH, ROOT, over_placements

MIN_BLOCKS = (0, 10, 12)  # 0: the kernel as it is


def build(min_blocks: int) -> cp.RawKernel:
    """Return evict_first's float32 entry at its defaults, bounded to min_blocks an SM."""
    source = (ROOT / "kernels" / "transpose" / "evict_first.cu").read_text()
    if min_blocks:
        bound = "__launch_bounds__(TX * BR)"
        assert bound in source, "evict_first.cu no longer declares its launch bounds so"
        source = source.replace(bound, f"__launch_bounds__(TX * BR, {min_blocks})")
    options = (ARCH, "-DDTYPE=float", "-DELEM_SIZE=4", "-DTILE=64", "-DBLOCK_ROWS=8",
               "-DGROUP=1", "-DLOAD_CACHE=1", "-DSTORE_CACHE=2")
    return cp.RawModule(code=source, options=options, backend="nvcc").get_function(
        "transpose_evict_first")


def main() -> None:
    placements = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n, shared = 8192, 64 * 65 * 4
    tiles = (n // 64) ** 2
    kernels = {}
    for min_blocks in MIN_BLOCKS:
        kernel = build(min_blocks)
        attrs = kernel.attributes
        kernels[f"evict_first, launch bounds {min_blocks or '-'}: {attrs['num_regs']} "
                f"registers, {attrs['local_size_bytes']} B local, "
                f"{blocks_per_sm(kernel, 128, shared)} blocks an SM"] = kernel
    over_placements(placements, 13, lambda a, b: {
        name: (lambda k=kernel: k((tiles,), (16, 8), (a, b, cp.int32(n), cp.int32(n)),
                                  shared_mem=shared))
        for name, kernel in kernels.items()}, width=72)


if __name__ == "__main__":
    main()
