"""Vendor rows: the op's library routine (cuBLAS) on the same inputs, timed and verified.

A vendor row runs like a variant: its buffers between guard zones, fresh inputs and a
poisoned output for one checked call, verified by the op; then warm-up, samples (cold L2)
and batches like every row. The library's handle is made before any timing. Where there is
no routine for the type, or the library is missing, the row says so (SKIP).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from cudabench.common.phases import phase
from cudabench.errors import CudabenchError, OpFileError
from cudabench.insight import roofs
from cudabench.measure import guards
from cudabench.engines.protocol import Engine, KernelFault
from cudabench.measure.jobs import Prepared, record
from cudabench.planning.plan import Plan
from cudabench.measure.sampling import sample, warm_up_on
from cudabench.measure.device_checks import verify_result
from cudabench.measure.variant import checked_launch
from cudabench.ops.base import user_code
from cudabench.ops.types import DTYPES
from cudabench.ops.vendor import VendorCall, VendorUnavailable
from cudabench.results.model import UNITS, BenchmarkResult, Kind

VENDOR_BLOCKS = 1  # scratch buffers sized for one block: a library needs none of the op's


def _check_call(plan: Plan, call: object) -> None:
    """Raise OpFileError naming the op's file where vendor(types) returned neither a
    VendorCall of a known unit and type nor a reason (the worker was lost to an
    AttributeError or ValueError, its file unnamed)."""
    op = plan.op
    if isinstance(call, str):
        return
    fine = (isinstance(call, VendorCall) and call.unit in ("", *UNITS)
            and call.compute_type in ("", *DTYPES) and callable(call.bind))
    if not fine:
        raise OpFileError(
            f"{op.origin or type(op).__module__}: {op.name}.vendor returned {call!r:.80} for "
            f"{plan.types.input.name}: expected a VendorCall (unit one of "
            f"{', '.join(repr(u) for u in ('', *UNITS))}, compute_type a type's name or "
            "\"\", bind callable) or a string saying why there is none")


def run_vendor(plan: Plan, engine: Engine, prepared: Prepared) -> BenchmarkResult:
    """Return the vendor row of a plan: measured and verified, SKIP, or why it failed."""
    op, types = plan.op, plan.types
    library = op.vendor_library
    with user_code(op, "vendor"):
        call = op.vendor(types)
    try:
        _check_call(plan, call)
    except OpFileError as exc:  # the row says so, naming the file; the others run
        return record(plan, library, {}, "", engine.info, prepared.cpu_reference_s,
                      kind=Kind.VENDOR, error=str(exc))
    if isinstance(call, str):
        return record(plan, library, {}, "", engine.info, prepared.cpu_reference_s,
                      kind=Kind.VENDOR, skipped=call)
    fields: dict[str, Any] = {}
    guarded: dict[str, guards.Guarded] = {}
    release = None
    try:
        inputs = prepared.inputs
        with user_code(op, "outputs"):
            outputs = op.outputs(plan.shape, types, VENDOR_BLOCKS)
        shapes = {name: array.shape for name, array in inputs.items()} | outputs
        itemsizes = {name: (types.output if name in outputs else types.input).itemsize
                     for name in shapes}
        for name, shape in shapes.items():
            guarded[name] = guards.allocate(engine, math.prod(shape) * itemsizes[name])
        buffers = {name: g.data for name, g in guarded.items()}
        with user_code(op, "args"):
            args = [buffers[a] if isinstance(a, str) else a
                    for a in op.args(plan.shape, VENDOR_BLOCKS)]

        def emulate() -> None:  # what a fake engine runs in the library's place
            op.emulate(args, types)

        with phase("vendor library"):  # CuPy's import and handle, the first time
            run, release = engine.vendor_launcher(call, buffers, tuple(plan.shape), emulate)
        with phase("checked launch"):
            checked_launch(plan, engine, run, buffers, inputs, outputs)
        with phase("verify"):
            fields["verification"] = verify_result(plan, engine, buffers, inputs, outputs,
                                                   prepared.expected, [])
        trespass = guards.check(engine, guarded, itemsizes)
        if trespass:
            fields["error"] = f"{call.routine}: " + "; ".join(trespass)
            fields["verification"] = dataclasses.replace(fields["verification"], passed=False)
        else:
            with phase("warm-up"):
                warm_up_on(engine, run, plan)
            with phase("samples"):
                fields.update(sample(engine, run, plan, sum(
                    math.prod(shape) * itemsizes[name] for name, shape in shapes.items())
                ).fields())
    except VendorUnavailable as exc:
        fields = {"skipped": str(exc)}
    except KernelFault as exc:
        fields["error"] = f"{call.routine} faulted on the GPU ({exc})"
    except CudabenchError as exc:  # out of memory
        fields["error"] = str(exc)
    finally:
        if release is not None and not engine.faulted:
            release()
        for allocation in guarded.values():
            engine.free(allocation.base)
    # cuBLAS's float64 GEMM asks for tensor cores; a GPU without FP64 ones runs it on CUDA
    # cores, and the row is held to that roof.
    unit = roofs.library_unit(engine.info, call.unit, call.compute_type)
    row = record(plan, library, {}, call.routine, engine.info, prepared.cpu_reference_s,
                 kind=Kind.VENDOR, unit=unit, compute_type=call.compute_type, **fields)
    if row.verification is not None and row.verification.passed:
        return _suspect(row)
    return row


def _suspect(row: BenchmarkResult) -> BenchmarkResult:
    """Hold a verified vendor row to its unit's roof, like a variant."""
    return dataclasses.replace(row, suspect=roofs.suspect(row, row.compute_type,
                                                          row.unit or "cuda"))
