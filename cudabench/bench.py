"""Run checked plans on a GPU: compile, verify against the reference, then time."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from cudabench.errors import CompileError, CudabenchError, ExitCode, UsageError
from cudabench.ops import LaunchShape
from cudabench.plan import Plan, PlannedVariant, Request, header_variables, make_plan
from cudabench.results import BenchmarkResult, DeviceInfo, Verification
from cudabench.timing import collect, measurement_warnings, warm_up

COPY_VARIANT = "memcpy_dtod"

OnResult = Callable[[BenchmarkResult], None]


@dataclass(frozen=True)
class RunOutcome:
    """Everything one command measured, on one GPU."""

    device: DeviceInfo
    results: tuple[BenchmarkResult, ...]
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        """Return 2 if a variant could not be compiled or run, 3 if one failed, else 0."""
        statuses = {r.status for r in self.results}
        if "ERROR" in statuses:
            return ExitCode.USAGE
        if "FAIL" in statuses:
            return ExitCode.VERIFICATION_FAILED
        return ExitCode.OK


def run_request(request: Request, device_index: int = 0, on_result: OnResult | None = None,
                on_device: Callable[[DeviceInfo], None] | None = None) -> RunOutcome:
    """Plan (no GPU touched if the request is bad), then run every variant on the GPU."""
    return run_plans([make_plan(request)], device_index, on_result, on_device)


COPY_JOB = None  # in a job list, stands for the plan's device-to-device copy reference


def run_plans(plans: Sequence[Plan], device_index: int = 0, on_result: OnResult | None = None,
              on_device: Callable[[DeviceInfo], None] | None = None,
              engine=None) -> RunOutcome:
    """Run checked plans one after another on one GPU (on engine, if one is given).

    A kernel that faults (an illegal address, say) leaves CUDA unusable in this process, for
    good: even a new context cannot be created. The jobs after it then run in a fresh
    process, so that one broken variant never hides the results of the others.
    """
    if engine is None:
        from cudabench.engine import Engine  # the GPU is touched only past this line

        with Engine(device_index) as engine:
            return run_plans(plans, device_index, on_result, on_device, engine)
    jobs = [(i, job) for i, plan in enumerate(plans)
            for job in (*plan.variants, *([COPY_JOB] if plan.op.copy_reference else []))]
    notes = tuple(note for plan in plans for note in plan.notes)
    if on_device is not None:
        on_device(engine.info)
    results = _run_jobs(plans, jobs, engine, on_result)
    while len(results) < len(jobs):
        results += _run_jobs_in_fresh_process(plans, jobs[len(results):], device_index,
                                              on_result)
    return RunOutcome(engine.info, tuple(results), notes)


def _run_jobs(plans: Sequence[Plan], jobs, engine, on_result: OnResult | None
              ) -> list[BenchmarkResult]:
    """Run jobs in order until done or until a kernel faults; return their results."""
    prepared: dict[int, tuple] = {}
    results = []
    for index, job in jobs:
        plan = plans[index]
        if index not in prepared:
            prepared = {index: _prepare(plan)}  # one plan's inputs in memory at a time
        inputs, expected, cpu_reference_s = prepared[index]
        if job is COPY_JOB:
            result = _run_copy(plan, engine, cpu_reference_s)
        else:
            result = _run_variant(plan, engine, job, inputs, expected, cpu_reference_s)
        results.append(result)
        if on_result is not None:
            on_result(result)
        if engine.faulted:
            break
    return results


def _prepare(plan: Plan) -> tuple:
    """Return the plan's random inputs, its reference result and the reference's CPU time."""
    inputs = plan.op.inputs(plan.shape, plan.dtype, np.random.default_rng(plan.seed))
    started = time.perf_counter()
    expected = plan.op.reference(inputs)
    return inputs, expected, time.perf_counter() - started


def _run_jobs_in_fresh_process(plans, jobs, device_index: int, on_result: OnResult | None
                               ) -> list[BenchmarkResult]:
    """Run jobs in a new process (spawned: a fork would inherit the broken CUDA state)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        results = pool.apply(_child_run_jobs, (plans, jobs, device_index))
    for result in results:
        if on_result is not None:
            on_result(result)
    return results


def _child_run_jobs(plans, jobs, device_index: int) -> list[BenchmarkResult]:
    from cudabench.engine import Engine

    with Engine(device_index) as engine:
        return _run_jobs(plans, jobs, engine, None)


def _record(plan: Plan, variant: str, params, source: str, cpu_reference_s: float,
            **fields) -> BenchmarkResult:
    op = plan.op
    return BenchmarkResult(
        op=op.name, variant=variant, params=dict(params), shape=tuple(plan.shape),
        dims=op.dims, dtype=plan.dtype.name, hot=plan.hot,
        flops=op.flops(plan.shape), bytes_moved=op.bytes_moved(plan.shape, plan.dtype.itemsize),
        source=source, cpu_reference_s=cpu_reference_s, **fields,
    )


def _run_variant(plan: Plan, engine, planned: PlannedVariant, inputs, expected,
                 cpu_reference_s: float) -> BenchmarkResult:
    """Compile, warm up, verify once on fresh inputs and poisoned outputs, then time."""
    from cudabench.engine import KernelFault

    op, dtype, variant = plan.op, plan.dtype, planned.variant

    def record(**fields) -> BenchmarkResult:
        return _record(plan, variant.name, planned.params, str(variant.path), cpu_reference_s,
                       **fields)

    buffers: dict = {}
    launches: list[dict] = []
    try:
        compiled, geometry, arg_spec = _compile(plan, engine, planned, launches)
        blocks = math.prod(geometry[0][0])
        outputs = op.outputs(plan.shape, dtype, blocks)
        shapes = {name: array.shape for name, array in inputs.items()} | outputs
        for name, shape in shapes.items():
            buffers[name] = engine.allocate(math.prod(shape) * dtype.itemsize)
        args = [buffers[a] if isinstance(a, str) else np.int32(a) for a in arg_spec]
        run = engine.launcher(compiled, geometry, args)

        for name, array in inputs.items():
            engine.upload(buffers[name], array)
        warm_up(lambda: (run(), engine.synchronize()), plan.timing)

        # The checked launch: fresh inputs (an in-place kernel changed them while warming
        # up) and poisoned outputs, so an element the kernel never writes fails.
        for name, array in inputs.items():
            engine.upload(buffers[name], array)
        for name, shape in outputs.items():
            engine.fill(buffers[name], dtype.poison(), math.prod(shape))
        run()
        engine.synchronize()
        result = engine.download(buffers[op.result_buffer], shapes[op.result_buffer], dtype.numpy)
        launched = [LaunchShape(grid, block) for grid, block in geometry]
        verification = op.verify(inputs, expected, result, launched)

        working_set = sum(math.prod(s) for s in shapes.values()) * dtype.itemsize
        samples, warnings = _time(plan, engine, run, working_set)
        return record(samples_s=samples, verification=verification, warnings=warnings,
                      launches=tuple(launches))
    except KernelFault as exc:
        failed = Verification(False, math.inf, math.inf, 0, 0, "the kernel faulted")
        return record(
            verification=failed, launches=tuple(launches),
            error=f"{variant.path}: the kernel faulted on the GPU ({exc}); the variants after "
            "it ran in a fresh process. `compute-sanitizer python3 -m cudabench ...` shows the "
            "bad access",
        )
    except CudabenchError as exc:  # compile errors, GPU limits, out of memory
        return record(error=str(exc), launches=tuple(launches))
    finally:
        for allocation in buffers.values():
            with contextlib.suppress(Exception):  # refused after a fault; nothing to free
                allocation.free()


def _compile(plan: Plan, engine, planned: PlannedVariant, launches: list[dict]):
    """Return (compiled, geometry, kernel arguments); append each launch's facts to launches.

    Checks what only the GPU knows: its grid limits and, once compiled, how many threads
    a block may have at the registers the kernel uses.
    """
    op, dtype, variant = plan.op, plan.dtype, planned.variant
    variables = header_variables(op, plan.shape, dtype, planned.params, engine.info.sm_count)
    geometry = variant.geometry(variables)
    limits = engine.grid_limits
    for launch, (grid, _block) in zip(variant.launches, geometry):
        for axis, (extent, limit) in enumerate(zip(grid, limits)):
            if not 1 <= extent <= limit:
                raise UsageError(
                    f"{variant.path}:{launch.line}: grid {'xyz'[axis]} of {launch.entry} is "
                    f"{extent}, outside 1..{limit} on this GPU; use a smaller --size or "
                    "larger tiles"
                )
    arg_spec = op.args(plan.shape, math.prod(geometry[0][0]))
    signature = "".join("P" if isinstance(a, str) else "i" for a in arg_spec)
    defines = {**planned.params, "DTYPE": dtype.ctype, "ELEM_SIZE": dtype.itemsize}
    compiled = engine.compile(variant, defines, signature)
    for launch, (grid, block), attrs in zip(variant.launches, geometry, compiled.attributes):
        launches.append({"entry": launch.entry, "grid": list(grid), "block": list(block),
                         **attrs})
        if math.prod(block) > attrs["max_threads_per_block"]:
            raise CompileError(
                f"{variant.path}:{launch.line}: {launch.entry} uses {attrs['registers']} "
                f"registers per thread, so a block may have at most "
                f"{attrs['max_threads_per_block']} threads, not {math.prod(block)}"
            )
    return compiled, geometry, arg_spec


def _time(plan: Plan, engine, run: Callable[[], None], working_set_bytes: int):
    """Take event-timed samples (L2 flushed before each unless --hot); return them, warnings."""
    sampling = collect(lambda: engine.time_once(run, flush_l2=not plan.hot), plan.timing)
    warnings = measurement_warnings(sampling, plan.timing, plan.hot, working_set_bytes,
                                    engine.info.l2_bytes)
    return sampling.samples_s, warnings


def _run_copy(plan: Plan, engine, cpu_reference_s: float) -> BenchmarkResult:
    """Time a device-to-device copy moving the op's bytes (read + write)."""
    nbytes = plan.op.bytes_moved(plan.shape, plan.dtype.itemsize) // 2
    fields: dict = {"kind": "reference"}
    try:
        run = engine.copier(nbytes)
        warm_up(lambda: (run(), engine.synchronize()), plan.timing)
        fields["samples_s"], fields["warnings"] = _time(plan, engine, run, 2 * nbytes)
    except CudabenchError as exc:  # out of memory
        fields["error"] = str(exc)
    result = _record(plan, COPY_VARIANT, {}, "cuMemcpyDtoDAsync", cpu_reference_s, **fields)
    return replace(result, flops=0)
