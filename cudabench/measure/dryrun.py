"""`--dry-run`: the whole plan, on any machine, and each kernel compiled where nvcc is.

Nothing touches a GPU: launch geometry is evaluated with an assumed SM count, memory is
the plan's own estimate (memory.py), and kernels are compiled to PTX by nvcc directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cudabench.measure import memory
from cudabench.measure.nvcc import compile_ptx
from cudabench.measure.plan import Plan, compile_defines, header_variables
from cudabench.units import format_bytes, params_text, shape_text

ASSUMED_SM_COUNT = 132  # an H100's: launch geometry that scales with SMs is shown for it


@dataclass(frozen=True)
class PlannedRow:
    """One variant of one plan as the dry run shows it."""

    benchmark: str
    variant: str
    params: str
    launches: str
    work: str  # bytes moved and FLOPs
    memory: str  # device and host need
    compiled: str  # "ok", "not compiled (no nvcc)", or nvcc's first error line
    compile_ok: bool


def plan_rows(plans: Sequence[Plan], arch: str, nvcc: str | None) -> list[PlannedRow]:
    """Describe every variant of every plan; compile each with nvcc when it is there."""
    rows = []
    for plan in plans:
        need = memory.need(plan)
        benchmark = f"{plan.op.name} {shape_text(plan.shape)} {plan.types.describe()}"
        work = (f"{format_bytes(plan.op.bytes_moved(plan.shape, plan.types))}, "
                f"{plan.op.flops(plan.shape):,} FLOP")
        needs = f"GPU {format_bytes(need.device_bytes)}, host {format_bytes(need.host_bytes)}"
        for planned in plan.variants:
            variant = planned.variant
            variables = header_variables(plan.op, plan.shape, plan.types, planned.params,
                                         ASSUMED_SM_COUNT)
            geometry = variant.geometry(variables)
            dynamic = variant.dynamic_shared_bytes(variables)
            launches = "; ".join(
                f"{launch.entry} <<<{_dims(grid)}, {_dims(block)}"
                f"{f', {nbytes}' if nbytes else ''}>>> ({math.prod(grid):,} blocks)"
                for launch, (grid, block), nbytes in zip(variant.launches, geometry, dynamic))
            compiled = ("not compiled (nvcc is not on PATH, in $CUDA_ROOT/bin or "
                        "/usr/local/cuda/bin)")
            ok = True
            if nvcc is not None:
                build = compile_ptx(variant, compile_defines(planned.params, plan.types),
                                    plan.types.headers, arch, nvcc)
                ok = build.returncode == 0
                compiled = f"ok ({arch})" if ok else _first_error(build.output)
            rows.append(PlannedRow(benchmark, variant.name, params_text(planned.params),
                                   launches, work, needs, compiled, ok))
    return rows


def _dims(values: Sequence[int]) -> str:
    trimmed = list(values)
    while len(trimmed) > 1 and trimmed[-1] == 1:
        trimmed.pop()
    return "x".join(map(str, trimmed))


def _first_error(output: str) -> str:
    """Return nvcc's first error line (the file(line): error: ... form), or its first line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line]
    return (errors or lines or ["nvcc failed"])[0]
