"""Checks after the timing: a kernel must be right on every launch, not only the checked one.

A kernel can keep its first result and replay it, compute only on its first launches, skip
the work when its output looks written, or key a cache on its buffers' addresses. After the
samples are taken cudabench verifies:
1. a timed launch (through the same event-timed path) on poisoned outputs;
2. a launch on fresh random inputs in the same buffers, its outputs left holding the last
   launch's result, as every timed launch finds them (a replayed result is stale, and so
   is one a kernel skipped because its output held no poison);
3. a launch on fresh inputs in newly allocated buffers (a result keyed by address is too).
Each starts from freshly uploaded inputs, so in-place kernels are checked after one launch.
A kernel that needs its output reset (an atomic sum) resets it in a launch of its own, as
dot's atomic.cu does: that launch runs before every timed one too.
The third's result is first compared bit for bit, on the GPU, with the second's (verified,
the same inputs, still in its buffer): equal, it passes without a download.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.phases import phase
from cudabench.measure import guards
from cudabench.measure.device_checks import equals_on_device, verify_result
from cudabench.measure.jobs import expected_method, full_check, inputs_key
from cudabench.measure.reference_cache import cached_reference
from cudabench.measure.resident import RESIDENT
from cudabench.engines.protocol import Compiled, Engine, Geometry, Run
from cudabench.planning.plan import Plan
from cudabench.ops import LaunchShape
from cudabench.ops.base import check_rng, user_code
from cudabench.results.model import Verification


@dataclass
class Layout:
    """How a variant's buffers and arguments are laid out (as the checked launch had them)."""

    compiled: Compiled
    geometry: Geometry
    dynamic: list[int]
    arg_spec: list[str | int]
    outputs: Mapping[str, tuple[int, ...]]
    sizes: Mapping[str, int]


def recheck(plan: Plan, engine: Engine, layout: Layout, buffers: Mapping[str, Any],
            run: Run, inputs: Mapping[str, np.ndarray], expected: Any
            ) -> tuple[str, Verification] | None:
    """Return why a later launch of the kernel is wrong and that launch's verification
    (the row's, in place of the checked launch's: its wrong elements and errors), or None
    when all three pass.

    expected is what the checked launch was verified against (Op.expected); the fresh
    inputs get their own, made the same way (the full reference or the same randomized
    check, with draws of their own).
    """
    timed = _launch_and_verify(plan, engine, layout, buffers, inputs, expected,
                               lambda: engine.time_once(run, plan.flush))
    if timed is not None:
        return (f"a timed launch is wrong ({_wrong(timed)}): every launch must compute its "
                "result", timed)
    fresh, fresh_expected = fresh_inputs(plan)
    # Not poisoned: the timed launches found the last launch's result in their outputs,
    # and a kernel that computes only on poison skipped their work.
    same = _launch_and_verify(plan, engine, layout, buffers, fresh, fresh_expected,
                              _run_once(engine, run), poison=False)
    if same is not None:
        return (f"wrong on fresh inputs in the same buffers ({_wrong(same)}): a replayed "
                "result, or work skipped where the output held the last one?", same)
    moved: dict[str, guards.Guarded] = {}
    try:
        for name, nbytes in layout.sizes.items():
            moved[name] = guards.allocate(engine, nbytes)
        data = {name: g.data for name, g in moved.items()}
        args = [data[a] if isinstance(a, str) else np.int32(a) for a in layout.arg_spec]
        elsewhere = engine.launcher(layout.compiled, layout.geometry, args, layout.dynamic)
        # Its result is first held to the one just verified on the same inputs, bit for
        # bit on the GPU: equal, it passes as that one did; a kernel whose bits vary run
        # to run (atomics) is verified on the CPU as before.
        new = _launch_and_verify(plan, engine, layout, data, fresh, fresh_expected,
                                 _run_once(engine, elsewhere),
                                 twin=buffers[plan.op.result_buffer])
    finally:
        for buffer in moved.values():
            engine.free(buffer.base)
    if new is not None:
        return (f"wrong on fresh inputs in new buffers ({_wrong(new)}): a result keyed by "
                "address?", new)
    return None


def _wrong(verification: Verification) -> str:
    return f"{verification.bad_elements} of {verification.total_elements} elements wrong"


_FRESH: list[tuple[tuple[object, ...], dict[str, np.ndarray], Any]] = []  # the last


def fresh_inputs(plan: Plan) -> tuple[dict[str, np.ndarray], Any]:
    """Return the plan's second set of inputs (seed + 1) and what to verify against (as
    for the first: Op.expected), made once per benchmark: every variant and sweep point of
    it is rechecked on the same ones."""
    # The key holds the op itself (not its id, which a later op may reuse once freed).
    if not _FRESH or _FRESH[0][0] != inputs_key(plan):
        _FRESH.clear()  # one plan's at a time: they are as large as its inputs
        rng = np.random.default_rng(plan.seed + 1)
        with phase("inputs"), user_code(plan.op, "inputs"):
            fresh = plan.op.inputs(plan.shape, plan.types, rng)
        full = full_check(plan)
        with phase("CPU reference"), user_code(plan.op, expected_method(plan.op)):
            expected, _ = cached_reference(
                plan, plan.seed + 1, fresh, lambda: plan.op.expected(
                    fresh, plan.types, check_rng(plan.seed + 1), full), full)
            _FRESH.append((inputs_key(plan), fresh, expected))
    return _FRESH[0][1], _FRESH[0][2]


def _run_once(engine: Engine, run: Run) -> Callable[[], object]:
    def once() -> None:
        run()
        engine.synchronize()

    return once


def _launch_and_verify(plan: Plan, engine: Engine, layout: Layout, buffers: Mapping[str, Any],
                       inputs: Mapping[str, np.ndarray], expected: Any,
                       launch: Callable[[], object], twin: Any = None, poison: bool = True
                       ) -> Verification | None:
    """Upload inputs, poison outputs (unless not poison), launch once, verify: None, or the
    failed verification. twin: a device buffer holding a result already verified for these
    inputs; a result equal to it bit for bit (counted on the GPU) passes without the CPU's
    check."""
    types = plan.types
    for name, array in inputs.items():
        RESIDENT.put(engine, buffers[name], array)
    for name, shape in layout.outputs.items() if poison else ():
        engine.fill(buffers[name], types.output.poison(), math.prod(shape))
    launch()
    engine.synchronize()
    launched = [LaunchShape(grid, block) for grid, block in layout.geometry]
    with phase("verify"):
        if twin is not None and equals_on_device(plan, engine, buffers, inputs,
                                                 layout.outputs, twin):
            return None
        verification = verify_result(plan, engine, buffers, inputs, layout.outputs, expected,
                                     launched)
    return None if verification.passed else verification
