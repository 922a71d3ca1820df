"""Run one planned variant and judge it.

SKIP when this GPU cannot run it (its `arch`, tensor maps before Hopper, a tensor map the
driver cannot make at this shape); compile; allocate between guard zones; warm up; one
checked launch on fresh inputs and poisoned outputs (verified, guard zones and read-only
inputs checked); timed samples; the same on all-zero inputs (a note if faster); rechecks on
later launches (recheck.py); the sanitizer when asked; and SUSPECT when the result beats
the device's roofs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.phases import phase
from cudabench.errors import CompileError, CudabenchError, OpFileError, UsageError
from cudabench.insight import roofs
from cudabench.measure import guards
from cudabench.observers import ncu as counters
from cudabench.observers import sanitizer as sanitize
from cudabench.observers import transfers
from cudabench.observers.energy import RELIABLE_S, EnergyUnavailable, measure_energy
from cudabench.engines.protocol import Compiled, Engine, Geometry, KernelFault, Run
from cudabench.measure.jobs import Prepared, record
from cudabench.planning.plan import (
    Plan,
    PlannedVariant,
    check_geometry,
    compile_defines,
    header_variables,
    unsupported_on,
)
from cudabench.measure.device_checks import (
    changed_inputs,
    download_result,
    verify_result,
)
from cudabench.measure.recheck import Layout, recheck
from cudabench.measure.resident import RESIDENT
from cudabench.measure.sampling import sample, warm_up_on, zero_input_note
from cudabench.engines.tensormaps import (
    TensorMapRequest,
    TensorMapUnavailable,
    resolve,
    signature_of,
)
from cudabench.ops import LaunchShape, TypeSet
from cudabench.ops.base import int32_argument, user_code
from cudabench.results.model import BenchmarkResult, Verification

FAULTED = Verification(False, math.inf, math.inf, 0, 0, "the kernel faulted")


def run_variant(plan: Plan, engine: Engine, planned: PlannedVariant, prepared: Prepared,
                on_compiled: Callable[[], None] = lambda: None) -> BenchmarkResult:
    """Return the variant's row: measured and verified, or why not (see the module doc).

    on_compiled is called once the compile is done and the GPU work begins.
    """
    op, types, variant = plan.op, plan.types, planned.variant
    launches: list[dict[str, Any]] = []
    guarded: dict[str, guards.Guarded] = {}

    def row(**fields: Any) -> BenchmarkResult:
        return record(plan, variant.name, dict(planned.params), str(variant.path), engine.info,
                      prepared.cpu_reference_s, launches=tuple(launches),
                      unit=variant.unit if op.flops(plan.shape) else "",
                      compute_type=roof_type(variant.unit, types) if op.flops(plan.shape)
                      else "",
                      **fields)

    inputs = prepared.inputs
    unsupported = unsupported_on(variant, engine.info.compute_capability)
    if unsupported is not None:
        return row(skipped=unsupported)
    try:
        with phase("compile"):
            compiled, geometry, arg_spec, dynamic = compile_variant(
                plan, engine, planned, launches, {name: a.shape for name, a in inputs.items()})
        on_compiled()
        with user_code(op, "outputs"):
            outputs = op.outputs(plan.shape, types, math.prod(geometry[0][0]))
        shapes = {name: array.shape for name, array in inputs.items()} | outputs
        sizes = {name: math.prod(shape) * (types.output if name in outputs else types.input
                                           ).itemsize for name, shape in shapes.items()}
        with phase("allocate"):
            for name, nbytes in sizes.items():
                guarded[name] = guards.allocate(engine, nbytes)
        buffers = {name: g.data for name, g in guarded.items()}
        unknown = [a for a in arg_spec if isinstance(a, str) and a not in buffers]
        if unknown:  # the op's mistake: name its file, not a KeyError in the worker
            raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.args names "
                              f"{', '.join(map(repr, unknown))}, which is no buffer: its "
                              f"inputs and outputs are {', '.join(map(repr, buffers))}")
        unpassed = [name for name in outputs if name not in arg_spec]
        if unpassed:  # the kernel cannot write it: a launch short of an argument
            raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.args leaves out "
                              f"the output {', '.join(map(repr, unpassed))}: the kernel must "
                              "be passed every buffer it writes")
        args = [buffers[a] if isinstance(a, str) else int32_argument(op, a) for a in arg_spec]
        run = engine.launcher(compiled, geometry, args, dynamic)

        with phase("upload"):
            for name, array in inputs.items():
                RESIDENT.put(engine, buffers[name], array)
        with phase("warm-up"):
            warm_up_on(engine, run, plan)

        with phase("checked launch"):
            checked_launch(plan, engine, run, buffers, inputs, outputs)
        launched = [LaunchShape(grid, block) for grid, block in geometry]
        with phase("verify"):
            verification = verify_result(plan, engine, buffers, inputs, outputs,
                                         prepared.expected, launched)
        itemsizes = {name: (types.output if name in outputs else types.input).itemsize
                     for name in shapes}
        with phase("guard checks"):
            trespass = guards.check(engine, guarded, itemsizes) + changed_inputs(
                engine, buffers, inputs, op.result_buffer)
        if trespass:
            return row(verification=dataclasses.replace(verification, passed=False),
                       error=f"{variant.path}: " + "; ".join(trespass))

        with phase("samples"):
            measured = sample(engine, run, plan, sum(sizes.values()))
        samples, warnings = measured.samples_s, measured.warnings
        with phase("energy"):
            extras = extra_passes(plan, engine, run,
                                  float(np.median(samples)) if samples else 0.0)
        warnings += extras.pop("warnings", ())

        def upload_zeros() -> None:  # a memset on the GPU: nothing crosses the link
            for name, array in inputs.items():
                engine.fill(buffers[name], np.uint8(0), array.nbytes)

        with phase("zero-input samples"):
            note, on_zeros = zero_input_note(engine, run, plan, samples, upload_zeros)
        warnings += (note,) if note else ()
        layout = Layout(compiled, geometry, dynamic, arg_spec, outputs, sizes)
        problems = []
        # The recheck asks whether the timed launches compute what the checked one did: of
        # a kernel already wrong at its checked launch it would only blame the timing.
        cheat = None
        if verification.passed:
            with phase("recheck"):
                cheat = recheck(plan, engine, layout, buffers, run, inputs, prepared.expected)
        if cheat is not None:
            problems.append(f"{variant.path}: {cheat[0]}")
            verification = cheat[1]  # the wrong launch's elements and errors, not the
            # checked launch's (0 wrong beside "every element wrong")
        if plan.sanitize is not None:
            with phase("sanitizer"):
                report = sanitize.run(plan, planned, plan.sanitize, engine.info.index)
            if not report.ran:  # no device access for the tool here, say: not the kernel's fault
                warnings += (report.first,)
            elif report.errors:
                problems.append(f"compute-sanitizer {report.tool}: {report.errors} error(s); "
                                f"the first: {report.first}")
            else:
                warnings += (f"compute-sanitizer {report.tool}: no error",)
        if plan.insight.transfers and samples:
            with phase("transfers"):
                result = download_result(plan, engine, buffers, inputs, outputs)
                extras["transfers"] = transfers.measure(
                    engine, buffers, inputs, (op.result_buffer, result),
                    float(np.median(samples)), prepared.cpu_reference_s)
        if plan.insight.counters:
            with phase("counters"):
                extras.update(counters_fields(plan, planned, engine.info.index))
        fields = {**measured.fields(), **extras, "warnings": warnings}
        if problems:
            return row(**fields, error="; ".join(problems),
                       verification=dataclasses.replace(verification, passed=False))
        measured_row = row(**fields, verification=verification,
                           zero_input_samples_s=on_zeros)
        return dataclasses.replace(measured_row, suspect=roofs.suspect(
            measured_row, measured_row.compute_type, measured_row.unit or "cuda"))
    except KernelFault as exc:
        seen = getattr(exc, "phase", None)
        seen = None if seen == "other" else seen  # "other": between the named steps
        return row(
            verification=FAULTED,
            error=f"{variant.path}: the kernel faulted on the GPU ({exc}"
            + (f"; seen in the {seen}" if seen else "") + "); the variants after "
            "it ran in a fresh process. --sanitize memcheck names the bad access",
        )
    except TensorMapUnavailable as exc:  # not at this shape, or no CUDA Python here (a
        # SKIP the tuning cache does not keep: installing it changes the answer)
        return row(skipped=str(exc))
    except UsageError as exc:  # beyond this GPU's limits (shared memory, grid)
        # In a sweep that is a combination this GPU cannot run, not a broken kernel.
        return row(skipped=str(exc)) if plan.sweep else row(error=str(exc))
    except CudabenchError as exc:  # compile errors, out of memory
        return row(error=str(exc))
    finally:
        with phase("free"):
            for allocation in guarded.values():
                engine.free(allocation.base)


def checked_launch(plan: Plan, engine: Engine, run: Run, buffers: Mapping[str, Any],
                   inputs: Mapping[str, np.ndarray], outputs: Mapping[str, tuple[int, ...]]
                   ) -> None:
    """Run once on fresh inputs and poisoned outputs, and wait for it; the result stays in
    its buffer for device_checks.verify_result.

    Fresh inputs: an in-place kernel changed them while warming up. Poison: an element the
    kernel never writes then fails verification.
    """
    for name, array in inputs.items():
        RESIDENT.put(engine, buffers[name], array)
    for name, shape in outputs.items():
        engine.fill(buffers[name], plan.types.output.poison(), math.prod(shape))
    run()
    engine.synchronize()


def roof_type(unit: str, types: TypeSet) -> str:
    """Return the type a row's roof is looked up by: tensor cores are rated by their input
    type (FP16 with FP32 accumulation is the FP16 roof; float32 runs as TF32), CUDA cores by
    the accumulator's."""
    if unit == "tensor":
        # float32 inputs reach tensor cores only as TF32: that is their roof.
        return "tf32" if types.input.name == "float32" else types.input.name
    return types.accumulate.name


def extra_passes(plan: Plan, engine: Engine, run: Run, launch_s: float) -> dict[str, Any]:
    """Return the result fields of the passes asked for beyond the samples: --energy.

    A pass that cannot run here (no energy counter) leaves a warning, never an error.
    """
    fields: dict[str, Any] = {}
    warnings: list[str] = []
    if plan.insight.energy_s:
        monitor = engine.monitor
        if monitor is None:
            warnings.append("--energy: no NVML here (nvidia-ml-py not installed, or the "
                            "host hides it): no energy figure")
        else:
            try:
                energy = measure_energy(run, engine.synchronize, monitor, plan.insight.energy_s,
                                        launch_s=launch_s)
                fields["energy"] = {"joules": energy.joules, "launches": energy.launches,
                                    "seconds": energy.seconds}
                if plan.insight.energy_s < RELIABLE_S:  # kept, not refused: a quick look
                    warnings.append(
                        f"--energy {plan.insight.energy_s:g}: NVML's energy counter moves "
                        "about every 100 ms, so a pass under "
                        f"{RELIABLE_S:g} s can be off by tens of percent; give several "
                        "seconds (--energy alone: 5)")
            except EnergyUnavailable as exc:
                warnings.append(f"--energy: {exc.reason}")
    fields["warnings"] = tuple(warnings)
    return fields


def counters_fields(plan: Plan, planned: PlannedVariant, device_index: int) -> dict[str, Any]:
    """Return the variant's Nsight Compute counters, or the note saying why there are none."""
    report = counters.profile(plan, planned, device_index, plan.insight.counters)
    if not report.ran:
        return {"counters_note": report.reason}
    return {"counters": dict(report.values),
            "counters_units": {metric: unit for metric, unit in report.units.items()
                               if metric in report.values and unit}}


def compile_variant(plan: Plan, engine: Engine, planned: PlannedVariant,
                    launches: list[dict[str, Any]],
                    input_shapes: Mapping[str, tuple[int, ...]] | None = None
                    ) -> tuple[Compiled, Geometry, list[str | int], list[int]]:
    """Return (compiled, geometry, kernel arguments, dynamic shared bytes per launch), and
    append each launch's facts to launches. A variant with tensor maps needs input_shapes
    (each input buffer's extents): its maps are resolved over them before it is compiled
    (TensorMapUnavailable when one cannot be made at this shape) and ride in the result.

    Checks what only the GPU knows: its grid limits and, once compiled, how many threads
    a block may have at the registers the kernel uses, and whether its static and dynamic
    shared memory fit what a block may opt in to.
    """
    op, types, variant = plan.op, plan.types, planned.variant
    variables = header_variables(op, plan.shape, types, planned.params, engine.info.sm_count)
    geometry = variant.geometry(variables)
    dynamic = variant.dynamic_shared_bytes(variables)
    for launch, (grid, block) in zip(variant.launches, geometry):
        # the plan judged the launches without SM_COUNT; these, with this GPU's count
        check_geometry(f"{variant.path}:{launch.line}: {launch.entry}", grid, block)
        for axis, (extent, limit) in enumerate(zip(grid, engine.grid_limits)):
            if not 1 <= extent <= limit:
                raise UsageError(
                    f"{variant.path}:{launch.line}: grid {'xyz'[axis]} of {launch.entry} is "
                    f"{extent}, outside 1..{limit} on this GPU; use a smaller --size or "
                    "larger tiles"
                )
    with user_code(op, "args"):
        arg_spec = op.args(plan.shape, math.prod(geometry[0][0]))
    requests: tuple[TensorMapRequest, ...] = ()
    if variant.tensor_maps:
        with user_code(op, "outputs"):
            outputs = op.outputs(plan.shape, types, math.prod(geometry[0][0]))
        requests = resolve(variant, variant.tensor_map_boxes(variables), types, arg_spec,
                           {**(input_shapes or {}), **outputs}, outputs)
    compiled = engine.compile(variant, compile_defines(planned.params, types),
                              signature_of(arg_spec, len(requests)), types.headers)
    if requests:  # the engine caches compiled variants: the maps belong to this plan only
        compiled = dataclasses.replace(compiled, tensor_maps=requests)
    info = engine.info
    limit = info.max_shared_bytes_per_block_optin or info.max_shared_bytes_per_block
    for launch, (grid, block), attrs, nbytes in zip(variant.launches, geometry,
                                                    compiled.attributes, dynamic):
        launches.append({"entry": launch.entry, "grid": list(grid), "block": list(block),
                         **attrs, "dynamic_shared_bytes": nbytes})
        if attrs["shared_bytes"] + nbytes > limit:
            raise UsageError(
                f"{variant.path}:{launch.line}: {launch.entry} asks for {nbytes} bytes of "
                f"dynamic shared memory beside {attrs['shared_bytes']} static, more than the "
                f"{limit} a block may have on this GPU; choose smaller parameters"
            )
        if math.prod(block) > attrs["max_threads_per_block"]:
            raise CompileError(
                f"{variant.path}:{launch.line}: {launch.entry} uses {attrs['registers']} "
                f"registers per thread, so a block may have at most "
                f"{attrs['max_threads_per_block']} threads, not {math.prod(block)}"
            )
    return compiled, geometry, arg_spec, dynamic
