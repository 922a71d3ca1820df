"""The intermittent "illegal instruction" of the tensor-map test kernel, reproduced.

tests/data/arch/transpose/tma_tile.cu faulted in the GPU suite twice (2026-11-27: at
2048x2048 int32, then float32; one run of test_arch_gpu.py in four), never under
compute-sanitizer. The cause, found with tma_loop.py: its wgmma fence, executed by every
thread with no wgmma after it (now on a branch no launch takes; tma_fence is the kernel as
it was).

It runs one variant of the kernel (VARIANTS: tma_base is the kernel as it is; each other
changes one thing) over the test's shapes and types (SIZES), PASSES times, in this process,
through the same run_jobs path as the test, and stops at the first row that is not PASS:
one line with the pass, the shape and the error (which names the step where the fault
surfaced). A fault ends the CUDA context, so each variant runs in a process of its own:
    python3 scripts/gpu-checks/tma_stress.py VARIANT [PASSES]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.measure.jobs import jobs_of
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import Status
from cudabench.runner.execute import run_jobs

QUICK = TimingPolicy(warmup_s=0.0, min_samples=3, max_samples=3, max_time_s=0.01)
ARCH = Path(__file__).parents[2] / "tests" / "data" / "arch" / "transpose"
# Each variant: the test kernel with one change (old text -> new text), its entry renamed.
# tma_fence is the kernel as it was until the fault was found: its wgmma fence executed by
# every thread, with no wgmma after it.
FENCE = '    if (ROWS < 0)\n        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'
VARIANTS = {
    "tma_base": ("", ""),
    "tma_fence": (FENCE, '    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'),
    "tma_nofence": (FENCE, ""),
    "tma_inval": (  # the mbarrier invalidated before the block ends, as PTX asks before reuse
        "tile[r][c];\n}",
        "tile[r][c];\n    __syncthreads();\n    if (leader)\n        asm volatile("
        '"mbarrier.inval.shared::cta.b64 [%0];" :: "r"(barrier) : "memory");\n}'),
    "tma_initfence": (  # the init made visible as CUTLASS's fence_barrier_init does
        "        barrier_init(barrier);\n",
        "    {\n        barrier_init(barrier);\n        asm volatile("
        '"fence.mbarrier_init.release.cluster;" ::: "memory");\n    }\n'),
}
SIZES = os.environ.get("SIZES", "1000x2000,37x64,2048x2048").split(",")
SHAPES = [(size, dtype) for size in SIZES for dtype in ("float16", "float32", "float64", "int32")]


def write_variant(folder: Path, name: str) -> None:
    """Write the test kernel with the variant's change, as folder/NAME.cu."""
    folder.mkdir(parents=True)
    shutil.copy(ARCH / "tma_common.cuh", folder)
    old, new = VARIANTS[name]
    source = (ARCH / "tma_tile.cu").read_text().replace("tma_tile", name)
    if old:
        assert old in source, f"{name}: the test kernel changed; update VARIANTS"
        source = source.replace(old, new)
    (folder / f"{name}.cu").write_text(source)


def main() -> int:
    variant = sys.argv[1]
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    folder = Path(tempfile.mkdtemp())
    write_variant(folder / "transpose", variant)
    engine = PycudaSpec(0).open()
    started, runs = time.perf_counter(), 0
    try:
        for index in range(passes):
            for size, dtype in SHAPES:
                request = Request(op="transpose", size=size, dtype=dtype, variants=(variant,),
                                  timing=QUICK, kernels_dirs=(folder,),
                                  insight=Insight(vendor=False, batch=False))
                plans = [make_plan(request)]
                rows = run_jobs(plans, jobs_of(plans), engine)  # the variant, then the copy
                row = next(r for r in rows if r.variant == variant)
                runs += 1
                if row.status is not Status.PASS:
                    print(f"{variant}: FAULT at pass {index + 1}, {size} {dtype}, after {runs} "
                          f"rows: {row.error or row.verification}", flush=True)
                    return 1
        print(f"{variant}: {runs} rows, all PASS, {time.perf_counter() - started:.0f} s",
              flush=True)
        return 0
    finally:
        if not engine.faulted:
            engine.close()


if __name__ == "__main__":
    sys.exit(main())
