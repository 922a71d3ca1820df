"""`--dry-run`: the whole plan, on any machine, and each kernel compiled where nvcc is.

Nothing touches a GPU: launch geometry is evaluated with an assumed SM count, memory is
the plan's own estimate (memory.py), and kernels are compiled by nvcc directly, to the
cubins the engine would build on a GPU of --arch (engines/compiler.py): for --arch, or for
exactly the target a header's `arch` names. They are built all at once on the CPU's cores,
through the compile cache, so a dry run warms it for the run. The row says when a GPU of
--arch's compute capability would skip a variant (plan.unsupported_on).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import KernelVariant
from cudabench.catalog.variants import Arch, parse_arch
from cudabench.common.flag_terms import SUITE_KEYS, rename_flags
from cudabench.common.units import format_bytes, params_text, shape_text
from cudabench.engines.compile_pool import CompilePool
from cudabench.engines.cubin import entry_points
from cudabench.engines.compiler import CubinRequest, request_for
from cudabench.measure import memory
from cudabench.errors import UsageError
from cudabench.planning.plan import (
    Plan,
    check_geometry,
    compile_defines,
    header_variables,
    unsupported_on,
)

ASSUMED_SM_COUNT = 132  # an H100's: launch geometry that scales with SMs is shown for it
GRID_LIMITS = (2**31 - 1, 65535, 65535)  # every CUDA GPU since compute capability 3.0
# Dynamic shared memory a block may have once its kernel opts in, by compute capability
# (CUDA C Programming Guide, "Technical Specifications"); newer ones as the latest known.
OPTIN_SHARED_BYTES = {(7, 0): 96 * 1024, (7, 2): 48 * 1024, (7, 5): 64 * 1024,
                      (8, 0): 163 * 1024, (8, 6): 99 * 1024, (8, 7): 163 * 1024,
                      (8, 9): 99 * 1024, (9, 0): 227 * 1024, (10, 0): 227 * 1024,
                      (12, 0): 99 * 1024}


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
    skipped: bool = False  # a SKIP row in a run (on a GPU of --arch): nothing measured


def plan_rows(plans: Sequence[Plan], arch: str, nvcc: str | None) -> list[PlannedRow]:
    """Describe every variant of every plan; compile each with nvcc when it is there, all
    at once on the CPU's cores, into the cache a run on a GPU of --arch reads."""
    target = parse_arch(arch)
    drafts = [draft for plan in plans for draft in _drafts(plan, arch, target)]
    pool = CompilePool(nvcc) if nvcc is not None else None
    try:
        if pool is not None:
            pool.ahead(request for _, request, _ in drafts if request is not None)
        return [_finished(row, request, variant, arch, target, pool)
                for row, request, variant in drafts]
    finally:
        if pool is not None:
            pool.close()


Draft = tuple[PlannedRow, CubinRequest | None, KernelVariant | None]  # row, build, variant


def timing_lines(plans: Sequence[Plan]) -> list[str]:
    """Return how the run would time its benchmarks: one line per distinct way (a suite's
    entries may differ), naming the benchmarks where there are several ways."""
    ways: dict[str, list[str]] = {}
    for plan in plans:
        t = plan.timing
        flush = "hot L2 (no flush)" if plan.hot else f"cold L2 ({plan.l2_flush} flush)"
        rounds = (f"; {t.rounds} rounds a benchmark, its rows taking turns on buffers placed "
                  "afresh, pooled" if t.rounds > 1 else "")
        held = " (--max-time, held under --timeout)"
        if plan.entry:  # a suite's entry: its [timing] keys, as its errors name them
            held = rename_flags(held, SUITE_KEYS)
        text = (f"warm-up {t.warmup_s:g} s; {t.min_samples}-{t.max_samples} samples a "
                f"variant, until the median is known to ±{t.precision:.2%} or after "
                f"{t.sampling_budget_s:g} s"
                + (held if t.sampling_budget_s < t.max_time_s else "") + f"; {flush}{rounds}")
        ways.setdefault(text, []).append(f"{plan.op.name} {shape_text(plan.shape)}")
    if len(ways) == 1:
        return [f"timing: {text}" for text in ways]
    return [f"timing of {', '.join(dict.fromkeys(names))}: {text}" for text, names in ways.items()]


def _drafts(plan: Plan, arch: str, target: Arch | None) -> list[Draft]:
    """Return plan's rows before compiling, each with what to compile (None: nothing)."""
    need = memory.need(plan)
    benchmark = f"{plan.op.name} {shape_text(plan.shape)} {plan.types.describe()}"
    work = (f"{format_bytes(plan.op.bytes_moved(plan.shape, plan.types))}, "
            f"{plan.op.flops(plan.shape):,} FLOP")
    needs = f"GPU {format_bytes(need.device_bytes)}, host {format_bytes(need.host_bytes)}"
    drafts: list[Draft] = []
    for planned in plan.variants:
        variant = planned.variant
        variables = header_variables(plan.op, plan.shape, plan.types, planned.params,
                                     ASSUMED_SM_COUNT)
        geometry = variant.geometry(variables)
        dynamic = variant.dynamic_shared_bytes(variables)
        launches = "; ".join(
            f"{launch.entry} <<<{_dims(grid)}, {_dims(block)}"
            f"{f', {nbytes}' if nbytes else ''}>>> ({_count(math.prod(grid), 'block')})"
            for launch, (grid, block), nbytes in zip(variant.launches, geometry, dynamic))
        launches += "".join(
            f"; tensor_map {spec.describe(box)}"
            for spec, box in zip(variant.tensor_maps, variant.tensor_map_boxes(variables)))
        # A variant --arch's GPU would skip is judged by the limits of the GPU it is built
        # for: its launch is never made on --arch's (_finished says it would skip).
        skipped = target is not None and variant.arch is not None and \
            unsupported_on(variant, f"{target.major}.{target.minor}") is not None
        refused = launch_problems(variant.path, [launch.entry for launch in variant.launches],
                                  geometry, dynamic, variant.arch if skipped else target,
                                  [text for _, _, text in variant.included_files()])
        for launch, (grid, block) in zip(variant.launches, geometry):
            try:  # the plan left launches using SM_COUNT to the GPU: judged here at 132 SMs
                check_geometry(f"{launch.entry} (at {ASSUMED_SM_COUNT} SMs)", grid, block)
            except UsageError as exc:
                refused.append(str(exc))
        row = PlannedRow(benchmark, variant.name, params_text(planned.params), launches,
                         work, needs, "", True)
        if refused:  # the driver would refuse the launch: an error row, not "ok"
            drafts.append((dataclasses.replace(row, compiled="ERROR: " + "; ".join(refused),
                                               compile_ok=False), None, None))
            continue
        # what the engine builds on a GPU of --arch: the same cache entry
        request = request_for(variant, compile_defines(planned.params, plan.types),
                              plan.types.headers, variant.arch or arch)
        drafts.append((row, request, variant))
    for variant, reason, point in plan.skipped:  # left out: said, not silently dropped
        # its parameters, as a run's SKIP row has them: a sweep's are told apart
        drafts.append((PlannedRow(benchmark, variant.name, params_text(point), "-", work,
                                  needs, f"SKIP: {reason}", True, skipped=True), None, None))
    return drafts


def _finished(row: PlannedRow, request: CubinRequest | None, variant: KernelVariant | None,
              arch: str, target: Arch | None, pool: CompilePool | None) -> PlannedRow:
    """Return a draft row with its compile's outcome (and whether --arch would skip it)."""
    if request is None or variant is None:
        return row
    compiled = "not compiled (nvcc is not on PATH, in $CUDA_ROOT/bin or /usr/local/cuda/bin)"
    ok = True
    if pool is not None:
        build = pool.result(request)
        ok = build.returncode == 0
        built_for = f"{variant.arch.name} cubin" if variant.arch else arch
        compiled = f"ok ({built_for})" if ok else _first_error(build.output)
        unfound = _unfound_entries(build.cubin, [launch.entry for launch in variant.launches]
                                   ) if ok else []
        if unfound:  # the driver finds a kernel by its name in the cubin: the run's ERROR
            return dataclasses.replace(row, compiled="ERROR: " + "; ".join(unfound),
                                       compile_ok=False)
    if target is not None:
        # a dry run has no GPU: the one it judges for is its --arch
        reason = unsupported_on(variant, f"{target.major}.{target.minor}", f"--arch {arch}")
        if reason is not None:
            compiled += f"; would SKIP on {arch}: {reason}"
            return dataclasses.replace(row, compiled=compiled, compile_ok=ok, skipped=True)
    return dataclasses.replace(row, compiled=compiled, compile_ok=ok)


def _unfound_entries(cubin: bytes, entries: Sequence[str]) -> list[str]:
    """Return why each entry the cubin defines no kernel of that name would fail the run
    (a C++ name, mangled, where `extern "C"` is missing)."""
    names = entry_points(cubin)
    if names is None:
        return []
    problems = []
    for entry in dict.fromkeys(entries):
        if entry in names:
            continue
        mangled = sorted(name for name in names if name.startswith(f"_Z{len(entry)}{entry}"))
        problems.append(
            f"the built cubin has no kernel named {entry}"
            + (f" (only the C++ name {mangled[0]}): declare it extern \"C\"" if mangled
               else f" (it has {', '.join(sorted(names)) or 'none'})"))
    return problems


def launch_problems(path: Path | str, entries: Sequence[str],
                    geometry: Sequence[tuple[Sequence[int], Sequence[int]]],
                    dynamic: Sequence[int], target: Arch | None,
                    included: Sequence[str] = ()) -> list[str]:
    """Return why the driver would refuse a variant's launches on --arch: a grid beyond
    its limits, dynamic shared memory beyond the opt-in limit, an entry point that neither
    the source nor a file it includes (included: their texts) defines."""
    problems = []
    for entry, (grid, _), nbytes in zip(entries, geometry, dynamic):
        for axis, (extent, limit) in enumerate(zip(grid, GRID_LIMITS)):
            if extent > limit:
                problems.append(f"{entry}: grid {'xyz'[axis]} extent {extent:,} exceeds the "
                                f"limit of {limit:,}")
        optin = _optin_limit(target)
        if optin is not None and nbytes > optin:
            problems.append(f"{entry}: {nbytes:,} bytes of dynamic shared memory exceed the "
                            f"{optin:,} a block may opt in to on this architecture")
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        source = None
    if source is not None:
        # comments dropped: the header's `// launch NAME:` names every entry
        texts = [_COMMENTS.sub(" ", text) for text in (source, *included)]
        for entry in dict.fromkeys(entries):
            # the name anywhere in the code: a definition, or a macro's argument making one
            if not any(re.search(rf"\b{re.escape(entry)}\b", text) for text in texts):
                problems.append(f"entry point {entry} is not defined in {path}"
                                + (" nor in the files it includes" if included else ""))
    return problems


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _optin_limit(target: Arch | None) -> int | None:
    """Return the opt-in shared memory limit of an architecture (None: not known)."""
    if target is None:
        return None
    known = [key for key in OPTIN_SHARED_BYTES if key <= (target.major, target.minor)]
    return OPTIN_SHARED_BYTES[max(known)] if known else None


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


def _count(number: int, noun: str) -> str:
    """Return `1 block`, `528 blocks`."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
