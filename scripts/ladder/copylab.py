"""What the copy and transpose experiments of issue 25 share (copy_paths.py, copy_sweep.py,
flush_debt.py, alloc_spread.py, copy_kernel_probe.py, carveout.py): cudabench's clean flush
(its own kernel, through CuPy), a plain SM copy, the driver's copy, the built-in transpose
kernels compiled with nvcc, and interleaved event timing. Needs CuPy (and nvcc for the kernel
files)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import cupy as cp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from cudabench.engines.utility_kernels import UTILITY_SOURCE  # noqa: E402

ARCH = "-arch=sm_90"

# A plain SM copy: V 16-byte vectors a thread, all loads before the first store.
COPY_SOURCE = r"""
extern "C" __global__ void copy_unrolled(const uint4* __restrict__ a, uint4* __restrict__ b,
                                         long long n)
{
    const long long base = blockIdx.x * (long long)blockDim.x * V + threadIdx.x;
    uint4 v[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
        if (base + k * blockDim.x < n) v[k] = a[base + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < V; ++k)
        if (base + k * blockDim.x < n) b[base + k * blockDim.x] = v[k];
}
"""


def device() -> tuple[int, int]:
    """Return the GPU's SM count and L2 size in bytes."""
    props = cp.cuda.runtime.getDeviceProperties(0)
    return props["multiProcessorCount"], props["l2CacheSize"]


def clean_flush() -> Callable[[], None]:
    """Return a function that runs cudabench's clean flush on the current stream (its own
    kernel, engines/utility_kernels.py)."""
    sms, l2 = device()
    module = cp.RawModule(code=UTILITY_SOURCE, options=(ARCH,))
    kernel = module.get_function("cudabench_read_flush")
    buffer = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.uint32)
    vectors = cp.uint64(buffer.nbytes // 16)
    return lambda: kernel((sms * 8,), (256,), (buffer, vectors, cp.int32(0), sink))


def sm_copy(a: cp.ndarray, b: cp.ndarray, vectors_a_thread: int = 8,
            threads: int = 256) -> Callable[[], None]:
    """Return a launch of the plain SM copy of a into b (a grid of every vector)."""
    kernel = cp.RawModule(code=COPY_SOURCE, options=(
        ARCH, f"-DV={vectors_a_thread}")).get_function("copy_unrolled")
    vectors = a.nbytes // 16
    per_block = vectors_a_thread * threads
    return lambda: kernel(((vectors + per_block - 1) // per_block,), (threads,),
                          (a, b, cp.int64(vectors)))


def driver_copy(a: cp.ndarray, b: cp.ndarray) -> Callable[[], None]:
    """Return cuMemcpyDtoDAsync of a into b on the current stream: cudabench's memcpy_dtod."""
    return lambda: cp.cuda.runtime.memcpyAsync(
        b.data.ptr, a.data.ptr, a.nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
        cp.cuda.get_current_stream().ptr)


def transpose_kernel(name: str, entry: str, **params: int):
    """Return kernels/transpose/NAME.cu's float32 entry built with nvcc for these params."""
    source = (ROOT / "kernels" / "transpose" / f"{name}.cu").read_text()
    options = (ARCH, "-DDTYPE=float", "-DELEM_SIZE=4",
               *(f"-D{key}={value}" for key, value in params.items()))
    return cp.RawModule(code=source, options=options, backend="nvcc").get_function(entry)


def tile_transpose(name: str, a: cp.ndarray, b: cp.ndarray, **params: int) -> Callable[[], None]:
    """Return a launch of the transpose NAME.cu (evict_first, say) at TILE 64,
    BLOCK_ROWS 8, GROUP 1, LOAD_CACHE 1 and PARAMS, as cudabench launches it (a 1-D grid of
    64 x 64 tiles, 16 x 8 threads, the tile's dynamic shared memory)."""
    kernel = transpose_kernel(name, f"transpose_{name}", TILE=64, BLOCK_ROWS=8, GROUP=1,
                              LOAD_CACHE=1, **params)
    rows, cols = a.shape
    tiles = ((rows + 63) // 64) * ((cols + 63) // 64)
    return lambda: kernel((tiles,), (16, 8), (a, b, cp.int32(rows), cp.int32(cols)),
                          shared_mem=64 * 65 * 4)


def evict_first(a: cp.ndarray, b: cp.ndarray) -> Callable[[], None]:
    """Return a launch of kernels/transpose/evict_first.cu at its defaults."""
    return tile_transpose("evict_first", a, b, STORE_CACHE=2)


def evict_last(a: cp.ndarray, b: cp.ndarray) -> Callable[[], None]:
    """Return a launch of evict_first.cu with evict-last stores (STORE_CACHE=3)."""
    return tile_transpose("evict_first", a, b, STORE_CACHE=3)


def time_interleaved(ops: Mapping[str, Callable[[], None]], flush: Callable[[], None],
                     reps: int, warmup: int,
                     check: Mapping[str, Callable[[], bool]] | None = None,
                     poison: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """Time each op after a flush, the ops taking turns, reps rounds; return microseconds
    per op, the first warmup rounds left out. In the first round each op with a check is
    run on a poisoned output (poison) and checked."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times: dict[str, list[float]] = {name: [] for name in ops}
    for rep in range(reps):
        for name, run in ops.items():
            if rep == 0 and check and name in check and poison:
                poison()
            flush()
            start.record()
            run()
            stop.record()
            stop.synchronize()
            if rep == 0 and check and name in check:
                assert check[name](), f"{name} is wrong"
            if rep >= warmup:
                times[name].append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return times


def over_placements(placements: int, seed: int,
                    make_ops: Callable[[cp.ndarray, cp.ndarray], dict[str, Callable[[], None]]],
                    width: int = 58) -> None:
    """Time the driver's copy and make_ops(A, B)'s launches, interleaved after the clean
    flush, on A and B placed afresh each time (8192² float32), each launch checked first (a
    name with "copy" in it must copy A, any other transpose it); print each placement's
    medians and ratios to the copy, then the median ratio over the placements."""
    import statistics

    n = 8192
    flush = clean_flush()
    rng = cp.random.default_rng(seed)
    keep: list[object] = []  # every buffer stays allocated: each placement is new memory
    ratios: dict[str, list[float]] = {}
    for placement in range(placements):
        keep.append(cp.empty((placement + 1) * 2**21 + 4096 * placement, dtype=cp.uint8))
        a = rng.random((n, n), dtype=cp.float32)
        b = cp.empty_like(a)
        keep.append((a, b))
        ops = {"driver copy": driver_copy(a, b), **make_ops(a, b)}
        copied = lambda a=a, b=b: bool((b == a).all())  # noqa: E731
        transposed = lambda a=a, b=b: bool((b == a.T).all())  # noqa: E731
        checks = {name: copied if "copy" in name else transposed for name in ops}
        times = time_interleaved(ops, flush, reps=60, warmup=10, check=checks,
                                 poison=lambda b=b: b.fill(-1))
        copy = statistics.median(times["driver copy"])
        print(f"placement {placement} (A at {a.data.ptr:#x}): driver copy {copy:.1f} us")
        for name, values in times.items():
            median = statistics.median(values)
            ratios.setdefault(name, []).append(copy / median)
            print(f"  {name:{width}} {median:7.1f} us  {copy / median:.3f} of the copy")
    print(f"over {placements} placements, the median ratio to the driver's copy:")
    for name, values in ratios.items():
        print(f"  {name:{width}} {statistics.median(values):.3f}  "
              f"({min(values):.3f}-{max(values):.3f})")

