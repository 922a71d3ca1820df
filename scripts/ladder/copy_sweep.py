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
from copylab import ARCH, clean_flush, device, driver_copy, time_interleaved

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
"""
LOADS = {1: "plain", 2: "nc", 3: "evict-first"}
STORES = {1: "plain", 2: "evict-first"}


def main() -> None:
    n = 8192
    sms, _ = device()
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    b = cp.empty_like(a)
    vectors = a.nbytes // 16
    runs = {"memcpy_dtod": driver_copy(a, b)}
    for v, t, ld, st in itertools.product((4, 8, 16), (128, 256, 512), (1, 2, 3), (1, 2)):
        if (ld != 1 or st != 1) and (v, t) != (8, 256):
            continue  # the hints at one geometry
        kernel = cp.RawModule(code=SOURCE, options=(
            ARCH, f"-DV={v}", f"-DLOADS={ld}", f"-DSTORES={st}", "-DCHUNK=1024",
            "-DSTAGES=2")).get_function("copy")
        grid = (vectors + v * t - 1) // (v * t)
        runs[f"V={v} T={t} loads {LOADS[ld]} stores {STORES[st]}"] = (
            lambda k=kernel, g=grid, tt=t: k((g,), (tt,), (a, b, cp.int64(vectors))))
    for chunk, stages, per_sm in itertools.product((8192, 16384, 32768), (2, 4), (1, 2, 4)):
        smem = chunk * stages
        if smem * per_sm > 200 * 1024:
            continue
        kernel = cp.RawModule(code=SOURCE, options=(
            ARCH, "-DV=1", "-DLOADS=1", "-DSTORES=1", f"-DCHUNK={chunk}",
            f"-DSTAGES={stages}")).get_function("copy_bulk")
        kernel.max_dynamic_shared_size_bytes = smem
        runs[f"TMA bulk CHUNK={chunk} STAGES={stages} blocks an SM {per_sm}"] = (
            lambda k=kernel, g=sms * per_sm, sm=smem: k(
                (g,), (32,), (a, b, cp.int64(a.nbytes)), shared_mem=sm))
    times = time_interleaved(runs, clean_flush(), reps=40, warmup=8,
                             check={name: lambda: bool((b == a).all()) for name in runs},
                             poison=lambda: b.fill(-1))
    reference = statistics.median(times["memcpy_dtod"])
    print(f"{n}x{n} float32 copies after the clean flush, {len(times['memcpy_dtod'])} samples")
    for name, values in sorted(times.items(), key=lambda item: statistics.median(item[1])):
        median = statistics.median(values)
        print(f"  {median:6.1f} us  {reference / median:.3f} of memcpy_dtod  {name}")


if __name__ == "__main__":
    main()
