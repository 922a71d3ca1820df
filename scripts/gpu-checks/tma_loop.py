"""Which sequence makes the tensor-map test kernel fault: the kernel alone, or what a row's
checked launch does around it (tma_stress.py's fault surfaced there).

One process, one MODE, the kernel of tma_stress.py's VARIANT at 2048x2048 (SIZE) in DTYPE,
through cudabench's own compile and launcher, ITERATIONS times:
    kernel    run the kernel; wait every 100 launches
    checked   as a checked launch: A refilled by a device copy, B poisoned by a memset, the
              kernel, then wait (measure/variant.py's checked_launch)
    settled   as checked, with a wait after the copy and the memset, before the kernel
Prints one line: the iterations done, and the fault if one came.
    python3 scripts/gpu-checks/tma_loop.py MODE [ITERATIONS] [DTYPE] [VARIANT]
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tma_stress import write_variant

from cudabench.engines.protocol import KernelFault
from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.measure import guards
from cudabench.measure.jobs import prepare
from cudabench.measure.resident import RESIDENT
from cudabench.measure.variant import compile_variant
from cudabench.planning.plan import Insight, Request, make_plan


def main() -> int:
    mode = sys.argv[1]
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    dtype = sys.argv[3] if len(sys.argv) > 3 else "int32"
    variant = sys.argv[4] if len(sys.argv) > 4 else "tma_base"
    folder = Path(tempfile.mkdtemp())
    write_variant(folder / "transpose", variant)
    plan = make_plan(Request(op="transpose", size=os.environ.get("SIZE", "2048x2048"),
                             dtype=dtype, variants=(variant,), kernels_dirs=(folder,),
                             insight=Insight(vendor=False, batch=False)))
    engine = PycudaSpec(0).open()
    prepared = prepare(plan)
    inputs = prepared.inputs
    compiled, geometry, arg_spec, dynamic = compile_variant(
        plan, engine, plan.variants[0], [], {name: a.shape for name, a in inputs.items()})
    outputs = plan.op.outputs(plan.shape, plan.types, math.prod(geometry[0][0]))
    shapes = {name: array.shape for name, array in inputs.items()} | outputs
    # the Guarded objects hold the allocations: kept, or the buffers are freed under us
    guarded = {name: guards.allocate(engine, math.prod(shape) * plan.types.input.itemsize)
               for name, shape in shapes.items()}
    buffers = {name: g.data for name, g in guarded.items()}
    args = [buffers[a] if isinstance(a, str) else np.int32(a) for a in arg_spec]
    run = engine.launcher(compiled, geometry, args, dynamic)
    for name, array in inputs.items():
        RESIDENT.put(engine, buffers[name], array)
    started, done = time.perf_counter(), 0
    try:
        for done in range(1, iterations + 1):
            if mode != "kernel":
                for name, array in inputs.items():
                    RESIDENT.put(engine, buffers[name], array)
                for name, shape in outputs.items():
                    engine.fill(buffers[name], plan.types.output.poison(), math.prod(shape))
                if mode == "settled":
                    engine.synchronize()
            run()
            if mode != "kernel" or done % 100 == 0:
                engine.synchronize()
        engine.synchronize()
    except KernelFault as exc:
        print(f"{mode} {dtype} {variant}: FAULT at iteration {done} of {iterations} "
              f"({time.perf_counter() - started:.1f} s): {exc}", flush=True)
        os._exit(1)  # the context is gone: no clean-up
    print(f"{mode} {dtype} {variant}: {iterations} iterations, no fault, "
          f"{time.perf_counter() - started:.1f} s", flush=True)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
