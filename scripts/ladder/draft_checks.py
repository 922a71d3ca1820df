#!/usr/bin/env python3
"""On a GPU: what `cudabench transpose/dot` cannot show about issue 25's second drafts
(transpose grouped, persistent; dot persistent, bulk): inputs and outputs that are not
16-byte aligned (the scalar fallbacks chosen by pointer alignment), guard bytes around every
output, and repeated one-pass dot launches (the arrival counter reset by the last block, one
bit pattern per case). Run on 2026-11-26 in draft_call_2.sh with the drafts' defaults then
(docs/data/ladder-2026-11-26/draft2-checks.txt). Since then `grouped` is the built-in
kernels/transpose/evict_first.cu and `bulk` the built-in kernels/dot/bulk.cu, checked here
at their headers' (measured) defaults; the two `persistent` drafts stay in
scripts/ladder/kernels/.

    python3 scripts/ladder/draft_checks.py [--launches 5] [--dtype float32 ...] [--jobs 16]

- transpose: each draft at odd shapes with A and/or B placed one element past a 16-byte
  boundary; B must equal A^T bit for bit, and the 16 guard bytes before and after B must
  keep their pattern (no write outside B).
- dot: each draft (persistent at LAYOUT 1 and 2, bulk) at sizes 1 .. (1<<24)+3, a and b
  aligned and one element off, launched --launches times interleaved (grids change between
  launches); every result must pass the op's own verification, give one bit pattern per
  (N, offset), and persistent LAYOUT 1 must give the same bits aligned and misaligned (its
  per-thread order is the same on both paths, as deterministic.cu's).
Every build is the cudabench one (the source with its type headers, the -D defines of
compile_defines, -I the kernel's folder), compiled with nvcc in parallel to cubins, then
loaded with PyCUDA. Exit 1 on any failure. Needs PyCUDA (. .device-kit/setup.sh) and a GPU.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from cudabench.catalog import builtin_kernels_dir
from cudabench.catalog.headers import parse_header
from cudabench.engines.pycuda_engine import needs_optin
from cudabench.ops import get_op
from cudabench.ops.base import LaunchShape
from cudabench.planning.plan import compile_defines, header_variables

DRAFTS = Path(__file__).resolve().parent / "kernels"  # the drafts left: persistent.cu
BUILTIN = builtin_kernels_dir()  # the promoted ones: transpose/evict_first.cu, dot/bulk.cu
PROMOTED = {("transpose", "evict_first"), ("dot", "bulk")}
TRANSPOSES = ("evict_first", "persistent")
DOTS = (("persistent", {"LAYOUT": 1}), ("persistent", {"LAYOUT": 2}), ("bulk", {}))
SAME_BITS_ALIGNED = {("persistent", 1)}  # (name, LAYOUT): the same order on both paths
T_SHAPES = ((64, 64), (1000, 1004), (37, 1000), (1000, 37), (65, 63), (1, 7), (2048, 1000))
D_SIZES = (1, 7, 1000, 1000003, (1 << 24) + 3)
GUARD = 16  # bytes before (beyond the offset) and after each output, kept at PATTERN
PATTERN = 0xA5


def kernel_path(op: str, name: str) -> Path:
    return (BUILTIN if (op, name) in PROMOTED else DRAFTS) / op / f"{name}.cu"


def build(path: Path, params: dict[str, int], types, arch: str, work: Path, tag: str) -> bytes:
    variant = parse_header(path)
    source = work / f"{tag}.cu"
    source.write_text(variant.compile_source(types.headers), encoding="utf-8")
    cubin = work / f"{tag}.cubin"
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    command = [nvcc, "-cubin", f"-arch={arch}", "-lineinfo", f"-I{path.parent}",
               *(f"-D{k}={v}" for k, v in sorted(compile_defines(params, types).items())),
               str(source), "-o", str(cubin)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed for {tag}: {done.stderr.strip()[:500]}")
    return cubin.read_bytes()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--dtype", action="append")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    args = parser.parse_args()
    dtypes = args.dtype or ["float32", "int32", "float16", "float64"]

    import pycuda.autoinit  # noqa: F401  (a context on device 0)
    import pycuda.driver as cuda

    device = cuda.Context.get_device()
    sms = device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
    major, minor = device.compute_capability()
    arch = f"sm_{major}{minor}"

    transpose, dot = get_op("transpose"), get_op("dot")
    jobs = []  # (op, name, path, params, dtype)
    for dtype in dtypes:
        for name in TRANSPOSES:
            path = kernel_path("transpose", name)
            variant = parse_header(path)
            jobs.append((transpose, name, path, {p.name: p.default for p in variant.params},
                         dtype))
        for name, extra in DOTS:
            path = kernel_path("dot", name)
            variant = parse_header(path)
            params = {p.name: p.default for p in variant.params}
            params.update(extra)
            jobs.append((dot, name, path, params, dtype))

    failures = 0
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        work = Path(tmp)
        futures = [pool.submit(build, path, params, op.type_set(dtype), arch, work,
                               f"{op.name}-{name}-{dtype}-{i}")
                   for i, (op, name, path, params, dtype) in enumerate(jobs)]
        for (op, name, path, params, dtype), future in zip(jobs, futures):
            label = f"{op.name}/{name} {dtype} " + " ".join(f"{k}={v}" for k, v in params.items())
            try:
                module = cuda.module_from_buffer(future.result())
                variant = parse_header(path)
                kernel = module.get_function(variant.launches[0].entry)
                check = check_transpose if op.name == "transpose" else check_dot
                ok, detail = check(cuda, op, variant, kernel, name, params, dtype, sms,
                                   args.launches)
            except Exception as exc:  # a failed build or launch is a failure, not a crash
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}", flush=True)
    return 1 if failures else 0


def geometry(op, variant, shape, types, params, sms):
    variables = header_variables(op, shape, types, params, sms)
    grid, block = variant.geometry(variables)[0]
    shared = variant.dynamic_shared_bytes(variables)[0]
    return grid, block, shared


def launch(cuda, kernel, args, grid, block, shared):
    if needs_optin(shared, kernel.shared_size_bytes, 48 * 1024):  # static + dynamic
        kernel.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
    kernel(*args, grid=tuple(grid[:2]), block=tuple(block), shared=shared)


def check_transpose(cuda, op, variant, kernel, name, params, dtype, sms, launches):
    types = op.type_set(dtype)
    bad = []
    cases = 0
    for rows, cols in T_SHAPES:
        a = op.inputs((rows, cols), types, np.random.default_rng(rows * 7919 + cols))["A"]
        expected = np.ascontiguousarray(a.T)
        item = a.itemsize
        grid, block, shared = geometry(op, variant, (rows, cols), types, params, sms)
        for off_a, off_b in ((0, 0), (item, 0), (0, item), (item, item)):
            raw_a = cuda.mem_alloc(a.nbytes + 16)
            cuda.memcpy_htod(int(raw_a) + off_a, a)
            size_b = off_b + GUARD + a.nbytes + GUARD
            raw_b = cuda.mem_alloc(size_b)
            cuda.memset_d8(raw_b, PATTERN, size_b)
            start = int(raw_b) + off_b + GUARD  # 16-byte aligned plus off_b
            launch(cuda, kernel, (np.intp(int(raw_a) + off_a), np.intp(start),
                                  np.int32(rows), np.int32(cols)), grid, block, shared)
            host = np.empty(size_b, np.uint8)
            cuda.memcpy_dtoh(host, raw_b)
            raw_a.free()
            raw_b.free()
            got = host[off_b + GUARD:off_b + GUARD + a.nbytes]
            guard_ok = (np.all(host[:off_b + GUARD] == PATTERN)
                        and np.all(host[off_b + GUARD + a.nbytes:] == PATTERN))
            wrong = int(np.count_nonzero(got != np.frombuffer(expected.tobytes(), np.uint8)))
            cases += 1
            if wrong or not guard_ok:
                bad.append(f"{rows}x{cols} offsets A {off_a} B {off_b}: {wrong} wrong bytes, "
                           f"guard {'kept' if guard_ok else 'OVERWRITTEN'}")
    if bad:
        return False, f"{len(bad)} of {cases} cases wrong: " + "; ".join(bad[:4])
    return True, f"{cases} cases (shapes x alignments of A and B) exact, guards kept"


def check_dot(cuda, op, variant, kernel, name, params, dtype, sms, launches):
    types = op.type_set(dtype)
    out_dtype = np.dtype(types.output.numpy)
    cases = []
    for n in D_SIZES:
        if n > (1 << 20) and dtype not in ("float32", "int32"):
            continue
        inputs = op.inputs((n,), types, np.random.default_rng(n))
        expected = op.expected(inputs, types, np.random.default_rng(0))
        grid, block, shared = geometry(op, variant, (n,), types, params, sms)
        item = inputs["a"].itemsize
        for offset in (0, item):  # one element: not 16-byte aligned
            bufs = {}
            for key in ("a", "b"):
                raw = cuda.mem_alloc(inputs[key].nbytes + 16)
                cuda.memcpy_htod(int(raw) + offset, inputs[key])
                bufs[key] = raw
            out = cuda.mem_alloc(out_dtype.itemsize)
            partials = cuda.mem_alloc(max(int(np.prod(grid)), 1) * out_dtype.itemsize)
            cases.append((n, offset, inputs, expected, grid, block, shared, bufs, out,
                          partials))
    results: dict[tuple[int, int], set[bytes]] = {}
    bad = []
    for _ in range(launches):  # interleaved: consecutive launches change size and grid
        for n, offset, inputs, expected, grid, block, shared, bufs, out, partials in cases:
            launch(cuda, kernel, (np.intp(int(bufs["a"]) + offset),
                                  np.intp(int(bufs["b"]) + offset), out, partials,
                                  np.int32(n), np.int32(int(np.prod(grid)))),
                   grid, block, shared)
            host = np.empty(1, out_dtype)
            cuda.memcpy_dtoh(host, out)
            results.setdefault((n, offset), set()).add(host.tobytes())
            check = op.verify(inputs, expected, host,
                              [LaunchShape(tuple(grid), tuple(block))], types)
            if not check.passed:
                bad.append(f"N={n} offset={offset}: got {host[0]!r} ({check.criterion})")
    cuda.Context.synchronize()
    for *_, bufs, out, partials in cases:
        for buffer in (*bufs.values(), out, partials):
            buffer.free()
    distinct = {key: len(values) for key, values in results.items()}
    same_bits = None
    if (name, params.get("LAYOUT")) in SAME_BITS_ALIGNED:
        same_bits = all(results[(n, 0)] == results[(n, off)] for (n, off) in results)
    ok = not bad and all(v == 1 for v in distinct.values()) and same_bits is not False
    detail = (f"{launches} launches x {len(cases)} cases, {len(bad)} wrong; distinct results "
              f"per (N, offset): {distinct}"
              + ("" if same_bits is None else f"; aligned == misaligned bits: {same_bits}"))
    if bad:
        detail += "; " + "; ".join(bad[:3])
    return ok, detail


if __name__ == "__main__":
    sys.exit(main())
