"""Which SM copy matches the driver's (issue 25): cuMemcpyDtoDAsync runs on the SMs
(copy_paths.py) and beats a plain copy of 8 16-byte vectors a thread by about 1.5%. This
sweeps vectors a thread (V), threads a block (T), and the cache hints of the loads (plain,
.nc read-only path, evict-first) and stores (plain, evict-first), and copies done by the TMA
unit (cp.async.bulk global -> shared -> global, CHUNK bytes a piece, STAGES pieces in
flight a block, persistent blocks), each after the clean flush, interleaved with the
driver's copy, medians of CUDA event times; 8192² float32.
    python3 scripts/ladder/copy_sweep.py
"""

from __future__ import annotations

import itertools
import statistics

import cupy as cp

SOURCE = r"""
__device__ __forceinline__ uint4 load(const uint4* p)
{
#if LOADS == 1
    return *p;
#elif LOADS == 2
    return __ldg(p);
#else
    return __ldcs(p);
#endif
}
extern "C" __global__ void copy(const uint4* __restrict__ a, uint4* __restrict__ b, long long n)
{
    const long long base = blockIdx.x * (long long)blockDim.x * V + threadIdx.x;
    uint4 v[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
        if (base + k * blockDim.x < n) v[k] = load(a + base + k * blockDim.x);
#pragma unroll
    for (int k = 0; k < V; ++k)
        if (base + k * blockDim.x < n) {
#if STORES == 2
            __stcs(b + base + k * blockDim.x, v[k]);
#else
            b[base + k * blockDim.x] = v[k];
#endif
        }
}
// The TMA unit's copy: thread 0 of each block keeps STAGES CHUNK-byte loads in flight
// (cp.async.bulk into shared memory, an mbarrier a stage), stores each piece back with
// cp.async.bulk once it has arrived, and reloads a stage once its store has read it.
extern "C" __global__ void copy_bulk(const char* __restrict__ a, char* __restrict__ b,
                                     long long nbytes)
{
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    if (threadIdx.x != 0) return;
    const long long pieces = nbytes / CHUNK;  // the caller's sizes are whole pieces
    const long long mine = pieces > blockIdx.x ? (pieces - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const unsigned base = (unsigned)__cvta_generic_to_shared(ring);
    for (int s = 0; s < STAGES; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::
                     "r"((unsigned)__cvta_generic_to_shared(&full[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    auto load = [&](long long k) {
        const int s = (int)(k % STAGES);
        const unsigned bar = (unsigned)__cvta_generic_to_shared(&full[s]);
        const char* src = a + (blockIdx.x + k * gridDim.x) * CHUNK;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::
                     "r"(bar), "r"(CHUNK) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1], %2, [%3];" :: "r"(base + s * CHUNK), "l"(src), "r"(CHUNK),
                     "r"(bar) : "memory");
    };
    for (long long k = 0; k < STAGES && k < mine; ++k) load(k);
    for (long long k = 0; k < mine; ++k) {
        const int s = (int)(k % STAGES);
        const unsigned bar = (unsigned)__cvta_generic_to_shared(&full[s]);
        const unsigned parity = (unsigned)((k / STAGES) & 1);
        asm volatile("{ .reg .pred done; wait_%=: "
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1; "
                     "@!done bra wait_%=; }" :: "r"(bar), "r"(parity) : "memory");
        char* dst = b + (blockIdx.x + k * gridDim.x) * CHUNK;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::
                     "l"(dst), "r"(base + s * CHUNK), "r"(CHUNK) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (k >= 1 && k - 1 + STAGES < mine) {  // stage (k - 1) % STAGES, once its store read it
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            load(k - 1 + STAGES);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
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
LOADS = {1: "plain", 2: "nc", 3: "evict-first"}
STORES = {1: "plain", 2: "evict-first"}


def main() -> None:
    n = 8192
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, l2 = props["multiProcessorCount"], props["l2CacheSize"]
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    b = cp.empty_like(a)
    flush_buf = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.uint32)
    vectors = a.nbytes // 16
    base = cp.RawModule(code=SOURCE, options=("-arch=sm_90", "-DV=1", "-DLOADS=1",
                                              "-DSTORES=1", "-DCHUNK=1024", "-DSTAGES=2"))
    flush = base.get_function("read_flush")
    stream = cp.cuda.get_current_stream()
    runs = {"memcpy_dtod": lambda: cp.cuda.runtime.memcpyAsync(
        b.data.ptr, a.data.ptr, a.nbytes, cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr)}
    for v, t, ld, st in itertools.product((4, 8, 16), (128, 256, 512), (1, 2, 3), (1, 2)):
        if ld != 1 and (v, t) != (8, 256):
            continue  # the hints at one geometry
        if st != 1 and (v, t) != (8, 256):
            continue
        kernel = cp.RawModule(code=SOURCE, options=(
            "-arch=sm_90", f"-DV={v}", f"-DLOADS={ld}", f"-DSTORES={st}", "-DCHUNK=1024",
            "-DSTAGES=2")).get_function("copy")
        grid = (vectors + v * t - 1) // (v * t)
        runs[f"V={v} T={t} loads {LOADS[ld]} stores {STORES[st]}"] = (
            lambda k=kernel, g=grid, tt=t: k((g,), (tt,), (a, b, cp.int64(vectors))))
    for chunk, stages, per_sm in itertools.product((8192, 16384, 32768), (2, 4), (1, 2, 4)):
        smem = chunk * stages
        if smem * per_sm > 200 * 1024 or smem > 200 * 1024:
            continue
        kernel = cp.RawModule(code=SOURCE, options=(
            "-arch=sm_90", "-DV=1", "-DLOADS=1", "-DSTORES=1", f"-DCHUNK={chunk}",
            f"-DSTAGES={stages}")).get_function("copy_bulk")
        kernel.max_dynamic_shared_size_bytes = smem
        runs[f"TMA bulk CHUNK={chunk} STAGES={stages} blocks an SM {per_sm}"] = (
            lambda k=kernel, g=sms * per_sm, sm=smem: k(
                (g,), (32,), (a, b, cp.int64(a.nbytes)), shared_mem=sm))
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(40):
        for name, run in runs.items():
            flush((sms * 8,), (256,), (flush_buf, cp.int64(flush_buf.nbytes // 16), sink))
            start.record()
            run()
            stop.record()
            stop.synchronize()
            if rep == 0:
                assert bool((b == a).all()), f"{name} is wrong"
                b.fill(-1)
            elif rep >= 8:
                times[name].append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    reference = statistics.median(times["memcpy_dtod"])
    print(f"{n}x{n} float32 copies after the clean flush, {len(times['memcpy_dtod'])} samples")
    for name, values in sorted(times.items(), key=lambda item: statistics.median(item[1])):
        median = statistics.median(values)
        print(f"  {median:6.1f} us  {reference / median:.3f} of memcpy_dtod  {name}")


if __name__ == "__main__":
    main()
