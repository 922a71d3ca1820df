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
"""


def main() -> None:
    placements = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    n = 8192
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, l2 = props["multiProcessorCount"], props["l2CacheSize"]
    flush = cp.RawModule(code=FLUSH, options=("-arch=sm_90",)).get_function("read_flush")
    source = (ROOT / "kernels" / "transpose" / "evict_first.cu").read_text()
    transpose = cp.RawModule(code=source, backend="nvcc", options=(
        "-arch=sm_90", "-DDTYPE=float", "-DELEM_SIZE=4", "-DTILE=64", "-DBLOCK_ROWS=8",
        "-DGROUP=1", "-DLOAD_CACHE=1", "-DSTORE_CACHE=2")).get_function("transpose_evict_first")
    flush_buf = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.uint32)
    rng = cp.random.default_rng(7)
    host_rng = __import__("random").Random(7)
    stream = cp.cuda.get_current_stream()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    keep: list[object] = []  # every buffer stays allocated: each placement is new memory
    for placement in range(placements):
        keep.append(cp.empty(host_rng.randrange(1, 64) * 2**21 + host_rng.randrange(0, 2**20),
                             dtype=cp.uint8))
        a = rng.random((n, n), dtype=cp.float32)
        b = cp.empty_like(a)
        tiles = n // 64
        ops = {
            "transpose": lambda: transpose((tiles * tiles,), (16, 8),
                                           (a, b, cp.int32(n), cp.int32(n)),
                                           shared_mem=64 * 65 * 4),
            "copy": lambda: cp.cuda.runtime.memcpyAsync(
                b.data.ptr, a.data.ptr, a.nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
                stream.ptr),
        }
        times: dict[str, list[float]] = {name: [] for name in ops}
        for rep in range(50):
            for name, run in ops.items():
                flush((sms * 8,), (256,), (flush_buf, cp.int64(flush_buf.nbytes // 16), sink))
                start.record()
                run()
                stop.record()
                stop.synchronize()
                if rep >= 10:
                    times[name].append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        t, c = statistics.median(times["transpose"]), statistics.median(times["copy"])
        spread = {k: (statistics.quantiles(v, n=4)[2] - statistics.quantiles(v, n=4)[0]) / 2
                  / statistics.median(v) for k, v in times.items()}
        rows.append((t, c))
        print(f"placement {placement}: A at {a.data.ptr:#x}, B at {b.data.ptr:#x}: transpose "
              f"{t:.1f} us (±{spread['transpose']:.1%}), copy {c:.1f} us "
              f"(±{spread['copy']:.1%}), ratio {c / t:.3f}")
        keep.append((a, b))  # the next placement's buffers are new memory
    ts, cs = [r[0] for r in rows], [r[1] for r in rows]
    ratios = [c / t for t, c in rows]
    print(f"over {placements} placements: transpose {min(ts):.1f}-{max(ts):.1f} us, copy "
          f"{min(cs):.1f}-{max(cs):.1f} us, ratio {min(ratios):.3f}-{max(ratios):.3f} "
          f"(median {statistics.median(ratios):.3f})")


if __name__ == "__main__":
    main()
