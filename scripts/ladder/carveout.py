"""Does the transpose lose to the copy because its shared memory leaves the L1 too small
(issue 25)?

An SM's 256 KB is split between shared memory and the L1, and a load that misses the L1 is
staged in it until its data arrives. At TILE 64 float32 evict_first holds 16.6 KB of shared
memory a block and 8 blocks share an SM (its registers set that), so the driver gives
shared memory its largest share (228 KB) and the L1 keeps about 28 KB. A copy kernel,
with no shared memory, has the whole L1 for its loads in flight. The padding experiment
(transpose_occupancy.sh) kept the shared memory at its largest share, so it could not tell.

This times, interleaved after cudabench's clean flush (8192² float32, CUDA events, medians):
the driver's copy; the SM copy as is and with 16 KB of unused shared memory a block under
the largest shared share (does a copy slow down when its L1 shrinks?); and evict_first at
its defaults under each preferred shared-memory carveout (CU_FUNC_ATTRIBUTE_PREFERRED_
SHARED_MEMORY_CARVEOUT: fewer blocks an SM, a larger L1). Each placement allocates A and B
afresh. Needs CuPy and nvcc. Measured on an H100 (docs/kernels.md, 2026-11-27): no
carveout moved the ratio, and the squeezed copy was not slower: the L1 is not the limit.
    python3 scripts/ladder/carveout.py [PLACEMENTS]
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

import cupy as cp
from copylab import over_placements, sm_copy, transpose_kernel

PREFERRED_CARVEOUT = 9  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
CARVEOUTS = (-1, 100, 86, 72, 58, 44, 28)  # percent of 228 KB; -1: the driver's choice
LIBCUDA = ctypes.CDLL("libcuda.so.1")


def handle(function: object) -> ctypes.c_void_p:
    """Return a CuPy RawKernel's CUfunction."""
    return ctypes.c_void_p(function.kernel.ptr)  # type: ignore[attr-defined]


def set_carveout(function: object, percent: int) -> None:
    """Set a kernel's preferred shared-memory share (a hint the driver follows when it can)."""
    rc = LIBCUDA.cuFuncSetAttribute(handle(function), PREFERRED_CARVEOUT,
                                    ctypes.c_int(percent))
    assert rc == 0, f"cuFuncSetAttribute returned {rc}"


def blocks_per_sm(function: object, threads: int, shared: int) -> int:
    """Return the occupancy API's resident blocks an SM (it reads the carveout too)."""
    count = ctypes.c_int()
    rc = LIBCUDA.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(count), handle(function), ctypes.c_int(threads),
        ctypes.c_size_t(shared))
    return count.value if rc == 0 else -1


def transposes(a: cp.ndarray, b: cp.ndarray) -> dict[str, Callable[[], None]]:
    """Return evict_first's launch under each carveout: a module of its own for each (the
    attribute belongs to the function)."""
    rows, cols = a.shape
    tiles = ((rows + 63) // 64) * ((cols + 63) // 64)
    shared = 64 * 65 * 4
    ops = {}
    for percent in CARVEOUTS:
        kernel = transpose_kernel("evict_first", "transpose_evict_first", TILE=64,
                                  BLOCK_ROWS=8, GROUP=1, LOAD_CACHE=1, STORE_CACHE=2,
                                  CARVEOUT_TAG=percent + 1)
        if percent >= 0:
            set_carveout(kernel, percent)
        name = (f"evict_first, carveout {percent}% "
                f"({blocks_per_sm(kernel, 128, shared)} blocks an SM)")
        ops[name] = (lambda k=kernel: k((tiles,), (16, 8), (a, b, cp.int32(rows),
                                                             cp.int32(cols)),
                                        shared_mem=shared))
    return ops


def squeezed_copy(a: cp.ndarray, b: cp.ndarray) -> Callable[[], None]:
    """Return the SM copy (8 vectors by 256 threads) holding 16 KB of shared memory a block
    it does not use, under the largest shared share: its L1 as small as evict_first's."""
    from copylab import ARCH, COPY_SOURCE
    kernel = cp.RawModule(code=COPY_SOURCE, options=(ARCH, "-DV=8", "-DSQUEEZED=1")
                          ).get_function("copy_unrolled")
    set_carveout(kernel, 100)
    vectors = a.nbytes // 16
    return lambda: kernel(((vectors + 2047) // 2048,), (256,), (a, b, cp.int64(vectors)),
                          shared_mem=16 * 1024)


def main() -> None:
    placements = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    over_placements(placements, 11, lambda a, b: {
        "SM copy 8x256": sm_copy(a, b),
        "SM copy 8x256, 16 KB shared a block, carveout 100%": squeezed_copy(a, b),
        **transposes(a, b)})


if __name__ == "__main__":
    main()
