"""What the transpose's reference, the device-to-device copy, costs by each path (issue 25).

cudabench's `memcpy_dtod` row is cuMemcpyDtoDAsync. This times it beside copies that run on
the SMs (16-byte loads and stores: a grid-stride kernel with a resident grid, and one vector
per thread over a grid of every vector, as the transpose kernels are launched), each after
cudabench's clean flush (a read of twice the L2), interleaved in one loop, medians of CUDA
event times. Then whether the copy needs the SMs at all: cuMemcpyDtoDAsync timed on a second
stream while a kernel holds every SM's threads for 2 ms. Needs CuPy.
    python3 scripts/ladder/copy_paths.py [N]      (N x N float32; default 8192)
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp

SOURCE = r"""
extern "C" __global__ void copy_stride(const uint4* __restrict__ a, uint4* __restrict__ b,
                                       long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        b[i] = a[i];
}
extern "C" __global__ void copy_unrolled(const uint4* __restrict__ a, uint4* __restrict__ b,
                                         long long n)
{   // 8 vectors a thread, all loads first (as the transpose rungs issue theirs)
    const long long base = blockIdx.x * (long long)blockDim.x * 8 + threadIdx.x;
    uint4 v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (base + k * blockDim.x < n) v[k] = a[base + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (base + k * blockDim.x < n) b[base + k * blockDim.x] = v[k];
}
extern "C" __global__ void spin(long long cycles)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
extern "C" __global__ void read_flush(const uint4* __restrict__ p, long long n,
                                      unsigned* sink)
{
    unsigned acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    module = cp.RawModule(code=SOURCE, options=("-arch=sm_90",))
    stride, unrolled, flush, spin = (module.get_function(name) for name in
                                     ("copy_stride", "copy_unrolled", "read_flush", "spin"))
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, l2 = props["multiProcessorCount"], props["l2CacheSize"]
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    b = cp.empty_like(a)
    flush_buf = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.uint32)
    vectors = a.nbytes // 16
    paths = {
        "memcpy_dtod (cuMemcpyDtoDAsync)": lambda: cp.cuda.runtime.memcpyAsync(
            b.data.ptr, a.data.ptr, a.nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
            cp.cuda.get_current_stream().ptr),
        "SM copy, grid-stride, 8 blocks of 256 an SM": lambda: stride(
            (sms * 8,), (256,), (a, b, cp.int64(vectors))),
        "SM copy, 8 vectors a thread, a grid of every vector": lambda: unrolled(
            ((vectors + 2047) // 2048,), (256,), (a, b, cp.int64(vectors))),
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for rep in range(60):
        for name, run in paths.items():
            if rep == 0:
                b.fill(-1)  # each path's copy is checked once, from a poisoned B
            flush((sms * 8,), (256,), (flush_buf, cp.int64(flush_buf.nbytes // 16), sink))
            start.record()
            run()
            stop.record()
            stop.synchronize()
            if rep == 0:
                assert bool((b == a).all()), f"{name} is wrong"
            elif rep >= 10:  # the first ten are warm-up
                times[name].append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    base = statistics.median(times["memcpy_dtod (cuMemcpyDtoDAsync)"])
    print(f"{n}x{n} float32 ({a.nbytes / 2**20:.0f} MiB each way), clean flush, "
          f"{len(next(iter(times.values())))} samples each")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name}: {median:.1f} us, {2 * a.nbytes / median / 1e3:,.0f} GB/s, "
              f"{base / median:.3f} of memcpy_dtod")




def copy_beside_busy_sms() -> None:
    """Time cuMemcpyDtoDAsync on its own stream while every SM's threads are held."""
    module = cp.RawModule(code=SOURCE, options=("-arch=sm_90",))
    spin = module.get_function("spin")
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, clock_khz = props["multiProcessorCount"], props["clockRate"]
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
