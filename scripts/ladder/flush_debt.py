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
from pathlib import Path

import cupy as cp

ROOT = Path(__file__).resolve().parents[2]
FLUSH = r"""
extern "C" __global__ void read_flush(const uint4* __restrict__ p, long long n, unsigned* sink)
{
    unsigned acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;
}
extern "C" __global__ void copy_unrolled(const uint4* __restrict__ a, uint4* __restrict__ b,
                                         long long n)
{
    const long long base = blockIdx.x * (long long)blockDim.x * 8 + threadIdx.x;
    uint4 v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (base + k * blockDim.x < n) v[k] = a[base + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (base + k * blockDim.x < n) b[base + k * blockDim.x] = v[k];
}
"""


def kernel(name: str, entry: str, **params: int):
    source = (ROOT / "kernels" / "transpose" / f"{name}.cu").read_text()
    options = ("-arch=sm_90", "-DDTYPE=float", "-DELEM_SIZE=4",
               *(f"-D{key}={value}" for key, value in params.items()))
    return cp.RawModule(code=source, options=options, backend="nvcc").get_function(entry)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, l2 = props["multiProcessorCount"], props["l2CacheSize"]
    utility = cp.RawModule(code=FLUSH, options=("-arch=sm_90",))
    flush_kernel, copy_kernel = (utility.get_function(e) for e in ("read_flush", "copy_unrolled"))
    evict_first = kernel("evict_first", "transpose_evict_first", TILE=64, BLOCK_ROWS=8,
                         GROUP=1, LOAD_CACHE=1, STORE_CACHE=2)
    vectorized = kernel("vectorized", "transpose_vectorized", TILE=64, BLOCK_ROWS=8)
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    b = cp.empty_like(a)
    flush_buf = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.uint32)
    tiles = (n + 63) // 64
    shared = 64 * 65 * 4
    vectors = a.nbytes // 16
    stream = cp.cuda.get_current_stream()

    def flush() -> None:
        flush_kernel((sms * 8,), (256,), (flush_buf, cp.int64(flush_buf.nbytes // 16), sink))

    ops = {
        "nothing": lambda: None,
        "memcpy_dtod": lambda: cp.cuda.runtime.memcpyAsync(
            b.data.ptr, a.data.ptr, a.nbytes, cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr),
        "SM copy (8 vectors a thread)": lambda: copy_kernel(
            ((vectors + 2047) // 2048,), (256,), (a, b, cp.int64(vectors))),
        "transpose evict_first": lambda: evict_first(
            (tiles * tiles,), (16, 8), (a, b, cp.int32(n), cp.int32(n)), shared_mem=shared),
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
            flush()
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
    for name in ("transpose evict_first", "transpose vectorized"):
        print(f"  {name} / memcpy_dtod: {copy_op / statistics.median(op_us[name]):.3f} "
              f"as timed, {paid['memcpy_dtod'] / paid[name]:.3f} with each paying its debt")


if __name__ == "__main__":
    main()
