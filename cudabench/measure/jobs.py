"""One unit of work on a GPU: a planned variant or a reference row of one plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.phases import phase
from cudabench.errors import OpFileError
from cudabench.measure.reference_cache import cached_reference
from cudabench.planning.plan import Plan, PlannedVariant
from cudabench.ops.base import Op, check_rng, user_code
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind, Status


@dataclass(frozen=True)
class Job:
    """Run plans[plan_index]'s variant, or (variant None) its reference row `reference`."""

    plan_index: int
    variant: PlannedVariant | None = None
    reference: str = ""  # a reference row's name, or (kind VENDOR) the vendor library's
    kind: Kind = Kind.VARIANT
    round: int = 0  # which of the plan's --rounds (0: the first, or the only one)
    # The row of an earlier round that failed: this round is not run again, it repeats it.
    failed_round: BenchmarkResult | None = None

    @property
    def name(self) -> str:
        """Return the row's name: the variant's, the reference's or the library's."""
        return self.variant.variant.name if self.variant else self.reference


def jobs_of(plans: list[Plan] | tuple[Plan, ...]) -> list[Job]:
    """Return every variant of every plan, each plan's vendor and reference rows after its
    variants, in rounds where the plans ask for them (TimingPolicy.rounds).

    A vendor or reference row is measured once per op, shape, dtype and cache state, however
    many plans (suite entries) share them: it would be the same row twice.
    """
    return in_rounds(plans, _one_round(plans))


def _one_round(plans: list[Plan] | tuple[Plan, ...]) -> list[Job]:
    """Return jobs_of's jobs as one round."""
    jobs, referenced = [], set()
    for index, plan in enumerate(plans):
        jobs += [Job(index, variant=v) for v in plan.variants]
        if plan.tuning:  # a search's configuration: the search compares variant rows only
            continue
        extra = [(name, Kind.REFERENCE) for name in plan.op.references]
        if plan.insight.vendor and plan.op.vendor_library:
            extra.insert(0, (plan.op.vendor_library, Kind.VENDOR))
        for name, kind in extra:
            key = (name, plan.op.name, tuple(plan.shape), plan.dtype.name, plan.hot)
            if key not in referenced:
                referenced.add(key)
                jobs.append(Job(index, reference=name, kind=kind))
    return jobs


def in_rounds(plans: Sequence[Plan], jobs: list[Job]) -> list[Job]:
    """Return the jobs with each benchmark's repeated plan.timing.rounds times, in
    alternating order (forward, backward, forward...): a row that runs early in one round
    runs late in the next, so that drift through a round favours no row. A benchmark is a
    run of consecutive jobs at one op, shape, dtype, cache state and seed: the rows one table
    compares. A --best search's configurations are measured once (the search's head to head
    re-measures close calls)."""
    repeated: list[Job] = []
    for group in _benchmarks(plans, jobs):
        plan = plans[group[0].plan_index]
        rounds = 1 if plan.tuning else plan.timing.rounds
        if rounds == 1:
            repeated += group
            continue
        for index in range(rounds):
            order = group if index % 2 == 0 else group[::-1]
            repeated += [dataclasses.replace(job, round=index) for job in order]
    return repeated


# A round that ends so is not run again in later rounds (it decides the row anyway): a
# wrong kernel needs no second verdict, and a hanging or crashing one would cost its
# --timeout or a fresh worker once per round.
NOT_REPEATED = frozenset({Status.FAIL, Status.ERROR, Status.TIMEOUT})


def round_key(job: Job) -> tuple[object, ...]:
    """Return what a job's rounds share: its plan, kind, name and parameters."""
    params = tuple(sorted(job.variant.params.items())) if job.variant else ()
    return (job.plan_index, job.kind, job.name, params)


def remaining(jobs: Sequence[Job], done: Sequence[BenchmarkResult]) -> list[Job]:
    """Return the jobs a new worker runs after one stopped with done's rows (the first
    len(done) jobs'): the rest, each later round of a job whose round failed marked
    failed_round (run_jobs repeats that row instead of running it: after a worker died or a
    job timed out, its later rounds are not run again)."""
    failed = {round_key(job): row for job, row in zip(jobs, done) if row.status in NOT_REPEATED}
    return [dataclasses.replace(job, failed_round=failed[round_key(job)])
            if job.round and job.failed_round is None and round_key(job) in failed else job
            for job in jobs[len(done):]]


def repeated(job: Job, row: BenchmarkResult) -> BenchmarkResult:
    """Return an earlier round's failing row as job's round, which was not run."""
    return dataclasses.replace(row, round_index=job.round, phases={})


def _benchmarks(plans: Sequence[Plan], jobs: list[Job]) -> list[list[Job]]:
    """Split jobs into runs of consecutive jobs of one benchmark."""
    groups: list[list[Job]] = []
    last: tuple[object, ...] | None = None
    for job in jobs:
        plan = plans[job.plan_index]
        key = (plan.op.name, tuple(plan.shape), plan.dtype.name, plan.hot, plan.seed,
               plan.timing.rounds, job.plan_index if plan.tuning else None)
        if key != last:
            groups.append([])
            last = key
        groups[-1].append(job)
    return groups


@dataclass(frozen=True)
class Prepared:
    """A plan's random inputs, what verify compares results with (the reference, or the
    op's witness of it: Op.expected), and how long the CPU took for that."""

    inputs: dict[str, np.ndarray]
    expected: Any
    cpu_reference_s: float


def inputs_key(plan: Plan) -> tuple[object, ...]:
    """Return what a plan's inputs and reference depend on: the plans of a sweep over
    parameters share them (made once, not once per point)."""
    return (plan.op, plan.op.name, tuple(plan.shape), plan.dtype.name, plan.seed,
            full_check(plan))


def prepare(plan: Plan) -> Prepared:
    """Make the plan's inputs from its seed and what verification needs of them (the
    reference, or the op's witness of it: Op.expected), from the disk cache if kept."""
    with phase("inputs"), user_code(plan.op, "inputs"):
        inputs = plan.op.inputs(plan.shape, plan.types, np.random.default_rng(plan.seed))
    _check_inputs(plan, inputs)
    full = full_check(plan)
    with phase("CPU reference"), user_code(plan.op, expected_method(plan.op)):
        expected, spent = cached_reference(
            plan, plan.seed, inputs, lambda: plan.op.expected(
                inputs, plan.types, check_rng(plan.seed), full), full)
    return Prepared(inputs, expected, spent)


def _check_inputs(plan: Plan, inputs: object) -> None:
    """Refuse inputs that are not a dict of buffer name -> NumPy array, naming the op's
    file (a list was blamed on the reference, which failed to index it)."""
    op = plan.op
    if not isinstance(inputs, dict) or not all(
            isinstance(name, str) and isinstance(array, np.ndarray)
            for name, array in inputs.items()):
        raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.inputs returned "
                          f"{type(inputs).__name__} {inputs!r:.60}: expected a dict of buffer "
                          "name -> NumPy array, e.g. {\"x\": rng.uniform(-1, 1, shape)"
                          ".astype(types.input.numpy)}")
    where = op.origin or type(op).__module__
    size = plan.types.input.itemsize
    for name, array in inputs.items():
        # its buffer holds elements of the input type's size (an int32 index array in a
        # float32 op fits): a wider one's copy ran past it
        if array.dtype.itemsize != size:
            raise OpFileError(f"{where}: {op.name}.inputs returned {name!r} as {array.dtype} "
                              f"({array.dtype.itemsize} bytes an element), but input buffers "
                              f"hold {plan.types.input.name} ({size} bytes): make it with "
                              ".astype(types.input.numpy)")
    with user_code(op, "outputs"):
        outputs = op.outputs(plan.shape, plan.types, 1)
    both = [name for name in outputs if name in inputs]
    if both:  # one name, two buffers: the kernels were blamed for "changing" the input
        raise OpFileError(f"{where}: {op.name}.outputs names {', '.join(map(repr, both))}, "
                          "which inputs gives too: name each buffer once (an op that "
                          "writes an input in place returns it from inputs alone)")
    if op.result_buffer not in inputs and op.result_buffer not in outputs:
        raise OpFileError(f"{where}: {op.name}.result_buffer {op.result_buffer!r} is no "
                          f"buffer: its inputs and outputs are "
                          f"{', '.join(map(repr, [*inputs, *outputs]))}")


def expected_method(op: Op) -> str:
    """Return the method an error making what verify compares with is blamed on: the op's
    own `expected`, or `reference` (Op.expected calls it)."""
    return "reference" if type(op).expected is Op.expected else "expected"


def full_check(plan: Plan) -> bool:
    """Return whether the plan's results are verified against the full reference: asked
    for (--full-check), or --transfers, which holds its time against the GPU's."""
    return plan.full_check or plan.insight.transfers


def record(plan: Plan, name: str, params: dict[str, int], source: str,
           device: DeviceInfo | None,
           cpu_reference_s: float | None, kind: Kind = Kind.VARIANT, **fields: Any
           ) -> BenchmarkResult:
    """Return a result row of plan with the op's accounting filled in."""
    op = plan.op
    # int(): a NumPy integer (np.prod of a shape) is a whole number the plan accepted,
    # but no JSON number.
    with user_code(op, "flops"):
        flops = int(op.flops(plan.shape)) if kind is not Kind.REFERENCE else 0
    with user_code(op, "bytes_moved"):
        bytes_moved = int(op.bytes_moved(plan.shape, plan.types))
    return BenchmarkResult(
        op=op.name, variant=name, params=dict(params), shape=tuple(plan.shape),
        dims=op.dims, dtype=plan.dtype.name, hot=plan.hot, l2_flush=plan.flush or "", flops=flops,
        bytes_moved=bytes_moved, source=source, cpu_reference_s=cpu_reference_s, kind=kind,
        device=device, **fields,
    )


def error_row(plan: Plan, job: Job, device: DeviceInfo | None, error: str,
              timed_out: bool = False) -> BenchmarkResult:
    """Return the row of a job that could not be measured (its worker died or timed out)."""
    if job.variant is not None:
        variant = job.variant
        return record(plan, job.name, dict(variant.params), str(variant.variant.path), device,
                      None, error=error, timed_out=timed_out, round_index=job.round)
    return record(plan, job.name, {}, job.reference, device, None, kind=job.kind,
                  error=error, timed_out=timed_out, round_index=job.round)
