"""Checks compared on the GPU, against device copies of the host arrays: only a count of
differing elements crosses the link.

Two checks compare a whole buffer with a host array bit for bit: the result of an op whose
verification is exact (the transposes: `Op.exact_result`) against its expected array, after
the checked launch and after each recheck; and every read-only input after the checked
launch against the input as uploaded. Downloading the buffer for each (268 MB at 8192²
float32, five times a variant) cost more than everything the GPU did for the row. The host
arrays are on the GPU already, or worth putting there once per benchmark (resident.py), so
the engine counts the differing elements there (engines/utility_kernels.py).

Nothing is weaker: the same elements are compared by the same rule as on the CPU (the bits
of each element, +0 and -0 equal where the CPU's float check counts them so). A count of 0
is the pass the CPU would give. Any other count, or an array the engine cannot compare
there (too small to keep, beyond the memory budget, an element width without a kernel),
falls back to the download and the CPU's check, whose report the row keeps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.engines.protocol import Engine
from cudabench.errors import OpFileError
from cudabench.measure import resident
from cudabench.measure.resident import RESIDENT
from cudabench.ops import LaunchShape
from cudabench.ops.base import user_code
from cudabench.ops.checks import bits_differ, same_bits_pass
from cudabench.planning.plan import Plan
from cudabench.results.model import Verification


def differing_on_device(engine: Engine, buffer: Any, array: np.ndarray, zeros_equal: bool
                        ) -> int | None:
    """Return in how many elements buffer differs from array, counted on the GPU against
    array's device copy; None where it cannot be counted there."""
    resident = RESIDENT.device_copy(engine, array)
    if resident is None:
        return None
    return engine.count_differing(buffer, resident, int(array.size), array.dtype.itemsize,
                                  zeros_equal)


def equals_on_device(plan: Plan, engine: Engine, buffers: Mapping[str, Any],
                     inputs: Mapping[str, np.ndarray], outputs: Mapping[str, tuple[int, ...]],
                     twin: Any) -> bool:
    """Return whether the result buffer equals twin (a device buffer of the same layout)
    bit for bit, counted on the GPU; False for a result below resident.MIN_BYTES (cheaper
    checked on the CPU, as resident copies are kept only above it) or one the GPU cannot
    compare."""
    shape, kind = result_layout(plan, inputs, outputs)
    count, itemsize = math.prod(shape), np.dtype(kind).itemsize
    if count == 0 or count * itemsize < resident.MIN_BYTES:
        return False
    return engine.count_differing(buffers[plan.op.result_buffer], twin, count, itemsize,
                                  False) == 0


def result_layout(plan: Plan, inputs: Mapping[str, np.ndarray],
                  outputs: Mapping[str, tuple[int, ...]]) -> tuple[tuple[int, ...], Any]:
    """Return the result buffer's shape and NumPy type (an output's, or an in-place
    input's)."""
    op, types = plan.op, plan.types
    kind = types.output if op.result_buffer in outputs else types.input
    return tuple(outputs.get(op.result_buffer) or inputs[op.result_buffer].shape), kind.numpy


def download_result(plan: Plan, engine: Engine, buffers: Mapping[str, Any],
                    inputs: Mapping[str, np.ndarray], outputs: Mapping[str, tuple[int, ...]]
                    ) -> np.ndarray:
    """Return the result buffer's contents as an array of its type and shape."""
    shape, kind = result_layout(plan, inputs, outputs)
    return engine.download(buffers[plan.op.result_buffer], shape, kind)


def verify_result(plan: Plan, engine: Engine, buffers: Mapping[str, Any],
                  inputs: Mapping[str, np.ndarray], outputs: Mapping[str, tuple[int, ...]],
                  expected: Any, launched: Sequence[LaunchShape]) -> Verification:
    """Verify the result left in its buffer: told on the GPU where the op's check is exact
    and the result holds every expected element, else downloaded and verified by the op."""
    op, types = plan.op, plan.types
    shape, kind = result_layout(plan, inputs, outputs)
    if (op.exact_result and isinstance(expected, np.ndarray) and expected.shape == shape
            and expected.dtype == np.dtype(kind)):
        bad = differing_on_device(engine, buffers[op.result_buffer], expected,
                                  zeros_equal=expected.dtype.kind == "f")
        if bad == 0:
            return same_bits_pass(math.prod(shape))
    result = download_result(plan, engine, buffers, inputs, outputs)
    with user_code(op, "verify"):
        verification: Verification = op.verify(dict(inputs), expected, result,
                                               list(launched), types)
    if not isinstance(verification, Verification):  # `return np.allclose(...)`: a bool
        raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.verify returned "
                          f"{type(verification).__name__} {verification!r:.60}: expected a "
                          "Verification; return one of cudabench.ops.checks' checks, e.g. "
                          "exact_check(result, expected) or bounded_check(result, expected, "
                          "bound, criterion)")
    verification = _well_typed(op, verification)
    if verification.passed and verification.bad_elements:
        # an op's check that passes wrong elements: they fail the row (a results file
        # saying both would be refused as inconsistent)
        verification = dataclasses.replace(verification, passed=False)
    return verification


_VERIFICATION_KINDS = {"passed": bool, "rel_error": float, "max_abs_error": float,
                       "bad_elements": int, "total_elements": int, "criterion": str}


def _well_typed(op: Any, verification: Verification) -> Verification:
    """Return an op's Verification with NumPy's scalars made Python's (np.bool_ from a
    comparison), or raise OpFileError naming the fields of another kind: `passed="yes"`
    was written into a results file that report, compare and history then refused."""
    fields = {name: getattr(verification, name) for name in _VERIFICATION_KINDS}
    fields = {name: value.item() if isinstance(value, np.generic) else value
              for name, value in fields.items()}
    wrong = []
    for name, kind in _VERIFICATION_KINDS.items():
        value = fields[name]
        if kind is float:
            fine = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind is int:
            fine = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        else:
            fine = isinstance(value, kind)
        if not fine:
            wrong.append(f"{name}={value!r:.30}")
    if wrong:
        raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.verify returned a "
                          f"Verification with {', '.join(wrong)}: passed is True or False, "
                          "the errors numbers, the element counts whole numbers (0 or more), "
                          "criterion text")
    return dataclasses.replace(verification, **fields)


def changed_inputs(engine: Engine, buffers: Mapping[str, Any],
                   inputs: Mapping[str, np.ndarray], result_buffer: str) -> list[str]:
    """Return which read-only inputs the checked launch changed, and how many elements
    (the bits of each element compared, on the GPU where the input is kept there)."""
    problems = []
    for name, array in inputs.items():
        if name == result_buffer:  # an in-place op's input is its result
            continue
        changed = differing_on_device(engine, buffers[name], array, zeros_equal=False)
        if changed is None:
            after = engine.download(buffers[name], array.shape, array.dtype.type)
            changed = bits_differ(array, after)
        if changed:
            problems.append(f"changed {changed} element(s) of its input {name}")
    return problems
