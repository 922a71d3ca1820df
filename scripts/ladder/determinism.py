#!/usr/bin/env python3
"""On a GPU: the ladder's one-pass dot kernels launched many times in a row, with sizes (so
grid sizes) changing between launches, each result checked.

    python3 scripts/ladder/determinism.py [--launches 50]

For each type and each of dot/deterministic, dot/streaming, dot/vectorized_shuffle and
dot/bulk (sm_90 and later; default params, built with the source and -D defines cudabench
uses), on the same inputs:
- every launch's result must pass the op's own verification (the same tolerance as
  `cudabench dot`): a counter or accumulator left non-zero by a previous launch, of this
  size or another, shows up as a wrong result;
- deterministic, streaming and bulk must each give one bit pattern over all launches
  (printed: distinct results);
  vectorized_shuffle may give several for floats (atomic order), one for int32.
Inputs are placed at an offset of one element too (a and b not 16-byte aligned), which takes
the scalar paths; deterministic and streaming must then give the same bits as the aligned
run (bulk's misaligned path sums in another order: one pattern per alignment).
Exit 1 on any failure. Needs PyCUDA (. .device-kit/setup.sh) and a GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pycuda.autoinit  # noqa: F401  (a context on device 0)
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

from cudabench.catalog import builtin_kernels_dir
from cudabench.catalog.headers import parse_header
from cudabench.engines.pycuda_engine import needs_optin
from cudabench.planning.plan import compile_defines, header_variables
from cudabench.ops import get_op
from cudabench.ops.base import LaunchShape

DETERMINISTIC = ("deterministic", "streaming", "bulk")  # one bit pattern, launch after launch
SAME_BITS_ALIGNED = ("deterministic", "streaming")  # the same order on both paths
FOLDER = builtin_kernels_dir() / "dot"  # kernels/dot: deterministic.cu, vectorized_shuffle.cu
SIZES = (1, 7, 1000, 1000003, (1 << 24) + 3)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=50)
    args = parser.parse_args()
    op = get_op("dot")
    device = cuda.Context.get_device()
    sms = device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
    names = ["deterministic", "vectorized_shuffle", "streaming"]
    if device.compute_capability() >= (9, 0):
        names.append("bulk")  # `arch: sm_90`: cp.async.bulk
    failures = 0
    for dtype in ("float32", "float64", "float16", "int32"):
        types = op.type_set(dtype)
        out_dtype = np.dtype(types.output.numpy)
        for name in names:
            variant = parse_header(FOLDER / f"{name}.cu")
            params = {p.name: p.default for p in variant.params}
            options = ["-lineinfo", *(f"-D{k}={v}" for k, v in
                                      sorted(compile_defines(params, types).items()))]
            module = SourceModule(variant.compile_source(types.headers), options=options,
                                  no_extern_c=True, include_dirs=[str(FOLDER)])
            kernel = module.get_function(variant.launches[0].entry)
            cases = []
            for n in SIZES:
                if dtype == "int32" and n > (1 << 24):
                    continue
                inputs = op.inputs((n,), types, np.random.default_rng(n))
                variables = header_variables(op, (n,), types, params, sms)
                grid, block = variant.geometry(variables)[0]
                shared = variant.dynamic_shared_bytes(variables)[0]
                if needs_optin(shared, kernel.shared_size_bytes, 48 * 1024):  # bulk's ring
                    kernel.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         shared)
                expected = op.reference(inputs)
                item = inputs["a"].itemsize
                for offset in (0, item):  # bytes; one element: misaligned for 16-byte loads
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
            bad = 0
            # Interleave the cases so consecutive launches have different grids and sizes.
            for _ in range(args.launches):
                for n, offset, inputs, expected, grid, block, shared, bufs, out, partials in cases:
                    kernel(np.intp(int(bufs["a"]) + offset), np.intp(int(bufs["b"]) + offset),
                           out, partials, np.int32(n), np.int32(int(np.prod(grid))),
                           grid=tuple(grid[:2]), block=tuple(block), shared=shared)
                    host = np.empty(1, out_dtype)
                    cuda.memcpy_dtoh(host, out)
                    results.setdefault((n, offset), set()).add(host.tobytes())
                    check = op.verify(inputs, expected, host,
                                      [LaunchShape(tuple(grid), tuple(block))], types)
                    if not check.passed:
                        bad += 1
                        if bad <= 3:
                            print(f"  FAIL {name} {dtype} N={n} offset={offset}: got "
                                  f"{host[0]!r}, expected {expected[0]!r} ({check.criterion})")
            cuda.Context.synchronize()
            distinct = {key: len(values) for key, values in results.items()}
            fixed_order = name in DETERMINISTIC
            same_bits = all(results[(n, 0)] == results[(n, off)] for n, off, *_ in cases
                            ) if name in SAME_BITS_ALIGNED else None
            ok = bad == 0 and (not fixed_order or
                               (all(v == 1 for v in distinct.values())
                                and same_bits is not False))
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} dot/{name} {dtype}: {args.launches} launches x "
                  f"{len(cases)} cases, {bad} wrong; distinct results per (N, offset): "
                  f"{distinct}" + ("" if same_bits is None else
                                   f"; aligned == misaligned bits: {same_bits}"))
            for *_, bufs, out, partials in cases:
                for buffer in (*bufs.values(), out, partials):
                    buffer.free()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
