"""`--dry-run`: the whole plan, on any machine, and each kernel compiled where nvcc is.

Nothing touches a GPU: launch geometry is evaluated with an assumed SM count, memory is
the plan's own estimate (memory.py), and kernels are compiled to PTX for --arch by nvcc
directly; a variant whose header names an `arch` is compiled for that target alone, to a
cubin as the engine builds it (cubin.py), and the row says when a GPU of --arch's compute
capability would skip it (plan.unsupported_on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cudabench.catalog.headers import parse_arch
from cudabench.measure import memory
from cudabench.engines.cubin import compile_cubin
from cudabench.engines.nvcc import compile_ptx
from cudabench.planning.plan import Plan, compile_defines, header_variables, unsupported_on
from cudabench.common.units import format_bytes, params_text, shape_text

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
    compiled: str  # "ok", "not compiled (no nvcc)", or nvcc's first error line; and
    # whether a GPU of --arch would skip the variant, and why
    compile_ok: bool


def plan_rows(plans: Sequence[Plan], arch: str, nvcc: str | None) -> list[PlannedRow]:
    """Describe every variant of every plan; compile each with nvcc when it is there."""
    target = parse_arch(arch)
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
            launches += "".join(
                f"; tensor_map {spec.describe(box)}"
                for spec, box in zip(variant.tensor_maps, variant.tensor_map_boxes(variables)))
            compiled = ("not compiled (nvcc is not on PATH, in $CUDA_ROOT/bin or "
                        "/usr/local/cuda/bin)")
            ok = True
            defines = compile_defines(planned.params, plan.types)
            if nvcc is not None and variant.arch is not None:
                cubin = compile_cubin(variant, defines, variant.arch, plan.types.headers, nvcc)
                ok = cubin.returncode == 0
                compiled = (f"ok ({variant.arch.name} cubin)" if ok
                            else _first_error(cubin.output))
            elif nvcc is not None:
                build = compile_ptx(variant, defines, plan.types.headers, arch, nvcc)
                ok = build.returncode == 0
                compiled = f"ok ({arch})" if ok else _first_error(build.output)
            if target is not None:
                reason = unsupported_on(variant, f"{target.major}.{target.minor}")
                if reason is not None:
                    compiled += f"; would SKIP on {arch}: {reason}"
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
