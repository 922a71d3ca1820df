"""The fake engine's kernels: what a compiled fake variant is, how a launch runs it (its
op's host stand-in), and the ways a variant can be told to misbehave (Fault), each as a
GPU would show it: a wrong element, a fault, a hang, a write out of bounds, a cheat."""

from __future__ import annotations

import enum
import multiprocessing
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.catalog import KernelVariant
from cudabench.ops import Op, TypeSet
from cudabench.errors import OpFileError
from cudabench.ops.base import user_code


class Fault(str, enum.Enum):
    """Ways a fake kernel misbehaves."""

    WRONG_ELEMENT = "wrong_element"  # one element of the result is wrong
    # After its first run, leaves one element of its result as the buffer held it: only
    # the poison put in before the checked launch reveals that (in-place ops, which have
    # no output to poison, see the element keep its input value).
    UNWRITTEN_ELEMENT = "unwritten_element"
    FAULT = "fault"  # the launch faults, like an illegal address: the process's CUDA is lost
    OUT_OF_MEMORY = "out_of_memory"  # allocations fail once this variant is compiled
    # In a worker process the process dies at launch (a driver crash, the OOM killer); in
    # the first process, where workers do not run, it faults like FAULT.
    KILLS_WORKER = "kills_worker"
    HANGS = "hangs"  # never finishes: the next wait for the GPU blocks forever
    COMPILE_HANGS = "compile_hangs"  # its compile never ends (nvcc stuck)
    CHANGES_INPUTS = "changes_inputs"  # right result, but overwrites its read-only inputs
    WRITES_PAST_END = "writes_past_end"  # writes one row (or element) past its result
    WRITES_BEFORE_START = "writes_before_start"  # writes the element before its result
    # Cheats: right on the launches cudabench used to check, wrong later.
    REPLAYS = "replays"  # keeps its first result and copies it out on every later launch
    FIRST_LAUNCHES_ONLY = "first_launches_only"  # computes on its first 3 launches only
    FASTER_ON_ZEROS = "faster_on_zeros"  # right, but twice as fast when its inputs are zero
    # Computes only when its result's buffer holds the poison put in before a checked launch:
    # a timed launch finds the last result there, and does nothing.
    SKIPS_WHEN_WRITTEN = "skips_when_written"
    # Right in the buffers of its first launcher, one element wrong in any other's (a result
    # keyed by address): only the recheck in new buffers sees it.
    WRONG_ELSEWHERE = "wrong_elsewhere"


@dataclass
class FakeKernel:
    """A compiled fake variant: which op it emulates and how it misbehaves."""

    variant: KernelVariant
    types: TypeSet
    fault: Fault | None
    slowdown: float
    home: int | None = None  # WRONG_ELSEWHERE: the address of the first result's buffer


class EngineState(Protocol):
    """What a fake launch reads and changes of its engine."""

    log: list[tuple[str, Any]]
    pending_s: float
    pending_fault: bool
    pending_hang: bool
    rng: np.random.Generator

    def alive(self) -> None:
        """Raise if the engine faulted."""


class FakeLaunch:
    """One launcher's run: emulates the variant on its buffers, misbehaving as its Fault
    says, and enqueues its synthetic time on the engine."""

    def __init__(self, engine: EngineState, kernel: FakeKernel, op: Op, args: Sequence[Any],
                 cost_s: float) -> None:
        self.engine, self.kernel, self.op, self.args = engine, kernel, op, args
        self.cost_s = cost_s
        self.runs = 0
        self.stash: list[np.ndarray] = []  # REPLAYS: the first result, kept

    def __call__(self) -> None:
        engine, kernel, op, args = self.engine, self.kernel, self.op, self.args
        engine.alive()
        engine.log.append(("run", kernel.variant.name))
        self.runs += 1
        if kernel.fault is Fault.KILLS_WORKER and multiprocessing.parent_process():
            os._exit(9)
        if kernel.fault is Fault.HANGS:
            engine.pending_hang = True
        if kernel.fault in (Fault.FAULT, Fault.KILLS_WORKER):
            engine.pending_fault = True
            return
        if kernel.fault is Fault.FIRST_LAUNCHES_ONLY and self.runs > 3:
            engine.pending_s += self.cost_s
            return
        if kernel.fault is Fault.REPLAYS and self.runs > 1:
            stash_view = emulated(op, args, kernel.types)  # find the result's place
            stash_view[...] = self.stash[0]
            engine.pending_s += self.cost_s
            return
        # Its first input's first element tells zeros from random values.
        zeros = kernel.fault is Fault.FASTER_ON_ZEROS and not args[0][:2].any()
        keep = kernel.fault is Fault.UNWRITTEN_ELEMENT and self.runs > 1
        skips = kernel.fault is Fault.SKIPS_WHEN_WRITTEN
        before = [np.array(arg) if isinstance(arg, np.ndarray) and (keep or skips) else None
                  for arg in args]
        # garbage in a buffer computes quietly, as on a GPU; a mistake in emulate names it
        with np.errstate(all="ignore"):
            result = emulated(op, args, kernel.types)
        spot = 1 if result.size > 1 else 0
        if keep:  # put back what the result's buffer held before this run
            for arg, old in zip(args, before):
                if old is not None and np.shares_memory(arg, result):
                    # typed() views start at byte 0 of their buffer
                    size = result.dtype.itemsize
                    result.reshape(-1)[spot] = old[: result.size * size].view(
                        result.dtype)[spot]
        if skips:  # put back the whole result where it held no poison: nothing computed
            for arg, old in zip(args, before):
                if old is not None and np.shares_memory(arg, result):
                    held = old[:result.nbytes].view(result.dtype)
                    poison = kernel.types.output.poison()
                    if not (np.isnan(held) if np.isnan(poison) else held == poison).any():
                        arg[...] = old
        if kernel.fault is Fault.CHANGES_INPUTS:
            for arg in args:
                if isinstance(arg, np.ndarray) and not np.shares_memory(arg, result):
                    arg[:] = engine.rng.integers(1, 255, size=arg.size, dtype=np.uint8)
        if kernel.fault is Fault.REPLAYS and not self.stash:
            self.stash.append(result.copy())
        if kernel.fault in (Fault.WRITES_PAST_END, Fault.WRITES_BEFORE_START):
            trespass(args, result, kernel.fault is Fault.WRITES_PAST_END)
        address = result.__array_interface__["data"][0]
        if kernel.fault is Fault.WRONG_ELSEWHERE and kernel.home is None:
            kernel.home = address
        if kernel.fault is Fault.WRONG_ELEMENT or (kernel.fault is Fault.WRONG_ELSEWHERE
                                                   and address != kernel.home):
            flat = result.reshape(-1)
            flat[spot] = flat[spot] + (1 if flat.dtype.kind in "iu" else 0.5 + abs(flat[spot]))
        engine.pending_s += self.cost_s * len(kernel.variant.launches) * (0.5 if zeros else 1.0)


def emulated(op: Op, args: Sequence[Any], types: TypeSet) -> np.ndarray:
    """Run op's emulate; return the view of the result buffer it returns, or raise
    OpFileError naming the op file where it returns another thing (None read "its worker
    process failed: AttributeError: 'NoneType' object has no attribute 'size'")."""
    with user_code(op, "emulate"):
        result = op.emulate(args, types)
    if not isinstance(result, np.ndarray) or not any(
            isinstance(arg, np.ndarray) and np.may_share_memory(arg, result) for arg in args):
        got = ("an array in none of its buffers" if isinstance(result, np.ndarray)
               else f"{result!r:.60}")
        raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.emulate returned "
                          f"{got}: it must return the view of the result buffer it wrote "
                          "(as typed(args[i], types.output, shape) gives), for the fake "
                          "engine to check and spoil (docs/writing-an-op.md)")
    return result


def trespass(args: Sequence[Any], result: np.ndarray, past_end: bool) -> None:
    """Write zeros just outside the result's buffer: a row past its end, or before it."""
    buffer = next(a for a in args if isinstance(a, np.ndarray) and np.shares_memory(a, result))
    row = result.shape[-1] * result.itemsize if result.ndim else result.itemsize
    if past_end:
        buffer[result.nbytes: result.nbytes + row] = 0
        return
    base = buffer.base if buffer.base is not None else buffer
    start = buffer.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    base[start - result.itemsize: start] = 0
