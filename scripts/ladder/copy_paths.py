"""What the transpose's reference, the device-to-device copy, costs by each path (issue 25).

cudabench's `memcpy_dtod` row is cuMemcpyDtoDAsync. This times it beside copies that run on
the SMs (16-byte loads and stores: a grid-stride kernel with a resident grid, and 8 vectors
a thread over a grid of every vector, as the transpose kernels are launched), each after
cudabench's clean flush, interleaved in one loop, medians of CUDA event times. Then whether
the copy needs the SMs at all: cuMemcpyDtoDAsync timed on a second stream while a kernel
holds every SM's threads for 2 ms. Needs CuPy.
    python3 scripts/ladder/copy_paths.py [N]      (N x N float32; default 8192)
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp
from copylab import ARCH, clean_flush, device, driver_copy, sm_copy, time_interleaved

SOURCE = r"""
extern "C" __global__ void copy_stride(const uint4* __restrict__ a, uint4* __restrict__ b,
                                       long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        b[i] = a[i];
}
extern "C" __global__ void spin(long long cycles)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    module = cp.RawModule(code=SOURCE, options=(ARCH,))
    stride = module.get_function("copy_stride")
    sms, _ = device()
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    b = cp.empty_like(a)
    vectors = a.nbytes // 16
    reference = "memcpy_dtod (cuMemcpyDtoDAsync)"
    paths = {
        reference: driver_copy(a, b),
        "SM copy, grid-stride, 8 blocks of 256 an SM": lambda: stride(
            (sms * 8,), (256,), (a, b, cp.int64(vectors))),
        "SM copy, 8 vectors a thread, a grid of every vector": sm_copy(a, b),
    }
    times = time_interleaved(paths, clean_flush(), reps=60, warmup=10,
                             check={name: lambda: bool((b == a).all()) for name in paths},
                             poison=lambda: b.fill(-1))
    base = statistics.median(times[reference])
    print(f"{n}x{n} float32 ({a.nbytes / 2**20:.0f} MiB each way), clean flush, "
          f"{len(times[reference])} samples each")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name}: {median:.1f} us, {2 * a.nbytes / median / 1e3:,.0f} GB/s, "
              f"{base / median:.3f} of memcpy_dtod")


def copy_beside_busy_sms() -> None:
    """Time cuMemcpyDtoDAsync on its own stream while every SM's threads are held."""
    spin = cp.RawModule(code=SOURCE, options=(ARCH,)).get_function("spin")
    sms, _ = device()
    clock_khz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"]
    a = cp.ones(2**26, dtype=cp.float32)
    b = cp.empty_like(a)
    busy, side = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    start, stop, spin_done = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        with busy:
            spin((sms * 2,), (1024,), (cp.int64(2 * clock_khz),))  # 2 ms at the base clock
            spin_done.record(busy)
        start.record(side)
        cp.cuda.runtime.memcpyAsync(b.data.ptr, a.data.ptr, a.nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice, side.ptr)
        stop.record(side)
        stop.synchronize()
        spin_done.synchronize()
    copy_ms = cp.cuda.get_elapsed_time(start, stop)
    to_spin_end_ms = cp.cuda.get_elapsed_time(start, spin_done)
    print(f"copy of {a.nbytes / 2**20:.0f} MiB while a kernel holds every SM's threads: "
          f"{copy_ms:.3f} ms (the kernel ended {to_spin_end_ms:.3f} ms after the copy "
          f"began): the copy {'did not wait for' if copy_ms < to_spin_end_ms else 'waited for'}"
          " the SMs")


if __name__ == "__main__":
    main()
    copy_beside_busy_sms()
