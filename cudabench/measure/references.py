"""Reference rows: measurements of the same bytes by something other than a variant.

A reference is a result of kind `reference`, timed like a variant (warm-up, events, cold L2,
adaptive stop) but not verified. An op lists the references it wants by name; each name
maps here to a setup that allocates what it needs and returns the run to time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.phases import phase
from cudabench.errors import CudabenchError
from cudabench.engines.protocol import Engine, KernelFault, Run
from cudabench.measure.jobs import record
from cudabench.planning.plan import Plan
from cudabench.measure.sampling import sample, warm_up_on
from cudabench.results.model import BenchmarkResult, Kind


@dataclass(frozen=True)
class Setup:
    """What a reference needs timed: the run and the bytes it moves."""

    run: Run
    working_set_bytes: int


def _device_copy(plan: Plan, engine: Engine, buffers: list[Any]) -> Setup:
    """Copy half the op's bytes device to device: as many read and written as the op moves.

    Each allocation joins buffers at once, so the caller frees it even if the next fails.
    """
    nbytes = plan.op.bytes_moved(plan.shape, plan.types) // 2
    buffers.append(engine.allocate(nbytes))
    buffers.append(engine.allocate(nbytes))
    source, target = buffers
    if nbytes >= 4:
        engine.fill(source, np.float32(1.0000001), nbytes // 4)  # not zeros: nothing to skip
    return Setup(lambda: engine.copy(target, source, nbytes), 2 * nbytes)


@dataclass(frozen=True)
class Reference:
    """A named reference: how to set it up and what it runs, for the results' source."""

    setup: Callable[[Plan, Engine, list[Any]], Setup]
    source: str


REFERENCES: dict[str, Reference] = {
    "memcpy_dtod": Reference(_device_copy, "cuMemcpyDtoDAsync"),
}


def run_reference(plan: Plan, engine: Engine, name: str, cpu_reference_s: float
                  ) -> BenchmarkResult:
    """Time a reference row; an error (out of memory) becomes the row's error."""
    reference = REFERENCES[name]
    fields: dict[str, Any] = {}
    buffers: list[Any] = []
    try:
        setup = reference.setup(plan, engine, buffers)
        with phase("warm-up"):
            warm_up_on(engine, setup.run, plan)
        with phase("samples"):
            fields.update(sample(engine, setup.run, plan, setup.working_set_bytes).fields())
    except KernelFault as exc:  # a fault left by the GPU: the jobs after this one move on
        fields["error"] = f"the GPU faulted during the {name} reference ({exc})"
    except CudabenchError as exc:  # out of memory
        fields["error"] = str(exc)
    finally:
        for buffer in buffers:
            engine.free(buffer)
    return record(plan, name, {}, reference.source, engine.info, cpu_reference_s,
                  kind=Kind.REFERENCE, **fields)
