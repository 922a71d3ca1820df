"""Run plans over several GPUs of one host (--devices): one watched worker per GPU.

The unit of work is one benchmark: an op at one shape, dtype and cache state with all
its variants and reference rows, so that every ratio in its table is measured in one run
on one GPU. Workers take units from one queue as they finish (or, with --replicate, every
GPU runs every unit: a fleet check). A kernel that faults costs its row and a fresh worker,
as on one GPU. A GPU that cannot be opened, or whose worker dies MAX_DEATHS times in a
row, is given up: the rows it was running say ERROR and why, and its queued work goes to
the other GPUs (a benchmark none of whose jobs began, its fresh worker dead before it
opened the GPU, goes back whole). Rows reach on_result one at a time (one writer), as
they are measured. A Fleet carries what the GPUs learnt over a command's runs (a
search's hand-outs, --best's re-measure): a GPU given up in one is left out of the next.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cudabench.errors import GpuEnvironmentError
from cudabench.runner.devices import Slot
from cudabench.engines.protocol import EngineSpec
from cudabench.measure.jobs import Job, error_row, remaining
from cudabench.planning.plan import Plan
from cudabench.runner.starting import new_worker
from cudabench.runner.workers import DiedBeforeOpening, Failure, Worker, hand_out
from cudabench.results.model import BenchmarkResult, DeviceInfo

MAX_DEATHS = 2  # a GPU whose fresh workers die this many times in a row is given up
JOIN_S = 0.5  # how often the main thread wakes while it waits (so Ctrl-C gets through)
STOP_GRACE_S = 2.0  # after Ctrl-C, how long the GPUs' threads get to end their workers


def units_of(plans: Sequence[Plan], jobs: Sequence[Job]) -> list[list[Job]]:
    """Group jobs into benchmarks (op, shape, dtype, cache state), in run order; each
    configuration of a --best search is a unit of its own."""
    units: dict[tuple[object, ...], list[Job]] = {}
    for job in jobs:
        plan = plans[job.plan_index]
        key = (plan.op.name, tuple(plan.shape), plan.dtype.name, plan.hot,
               job.plan_index if plan.tuning else None)
        units.setdefault(key, []).append(job)
    return list(units.values())


@dataclass
class Fleet:
    """The --devices GPUs over one command's runs: each GPU's worker is kept warm for the
    next run (a fresh one costs its imports and CUDA context, about a second, in every
    hand-out of a search); those given up in a run are left out of the later ones (they
    would fail the same way, each row an ERROR that reads as its configuration's failure,
    or fail the whole run where no other GPU is left). close() ends the workers."""

    slots: list[Slot]
    opened: set[int] = field(default_factory=set)  # slot indices whose GPU opened once
    lost: set[int] = field(default_factory=set)  # slot indices of the GPUs given up
    why: dict[int, str] = field(default_factory=dict)  # slot index -> why it was given up
    notes: list[str] = field(default_factory=list)  # why each was given up
    workers: dict[int, Worker] = field(default_factory=dict)  # slot index -> warm worker

    def usable(self) -> list[Slot]:
        """Return the GPUs not given up, in the order given."""
        return [slot for slot in self.slots if slot.index not in self.lost]

    def take(self, slot: Slot, spec: EngineSpec, plans: Sequence[Plan]) -> Worker | None:
        """Return slot's warm worker, given the plans, if it runs spec; else None."""
        return hand_out(self.workers.pop(slot.index, None), spec, plans)

    def close(self, keep: int | None = None) -> None:
        """End the warm workers (but keep's, a slot index: the next runs use that GPU
        alone); they release their GPUs while the caller goes on (workers.finish_closing
        joins them)."""
        for index in [index for index in self.workers if index != keep]:
            self.workers.pop(index).close(wait=False)


@dataclass
class Board:
    """What the GPUs' threads share: the queues, the rows so far, and one writer's lock."""

    units: list[list[Job]]
    plans: Sequence[Plan]
    on_result: Callable[[BenchmarkResult], None]
    on_start: Callable[[Mapping[str, str]], None] | None
    queues: dict[int, collections.deque[int]]  # slot index -> units to run (shared or own)
    replicate: bool = False  # every GPU runs every unit (each its own queue)
    # Each worker's environment, made before any thread starts: read while another thread
    # has its worker's variables set for a spawn, os.environ would mislead it.
    environments: dict[int, dict[str, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    rows: dict[tuple[int, int], list[BenchmarkResult]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    opened: set[int] = field(default_factory=set)  # slots whose GPU opened at least once
    lost: set[int] = field(default_factory=set)  # slots whose GPU was given up
    why: dict[int, str] = field(default_factory=dict)  # slot index -> why it was given up
    unusable: list[str] = field(default_factory=list)  # why a GPU could not be opened
    started: bool = False
    stopping: bool = False
    interrupted: bool = False  # Ctrl-C: the rows that arrive after it are not kept
    errors: list[BaseException] = field(default_factory=list)
    workers: dict[int, Worker] = field(default_factory=dict)  # slot index -> its worker
    fleet: Fleet | None = None  # where each worker is kept warm once its queue is empty

    def take(self, slot: Slot) -> int | None:
        """Return the next unit for slot's GPU, or None when there is none (or Ctrl-C)."""
        with self.lock:
            queue = self.queues[slot.index]
            return None if self.stopping or not queue else queue.popleft()

    def give_back(self, slot: Slot, unit: int) -> None:
        """Put a unit that was never started back at the front of the queue."""
        with self.lock:
            self.queues[slot.index].appendleft(unit)

    def emit(self, unit: int, slot: Slot, row: BenchmarkResult) -> None:
        """Keep a row and hand it to the one writer; none once the run is interrupted (Ctrl-C):
        what arrives then is the stop's own doing (ERROR rows of workers ended by it),
        written after the note that said how many rows the file holds, as one GPU's run
        reads nothing after its Ctrl-C."""
        with self.lock:
            if self.interrupted:
                return
            self.rows.setdefault((unit, slot.index), []).append(row)
            self.on_result(row)

    def start_once(self, versions: Mapping[str, str]) -> None:
        """Pass the first worker's versions on, once."""
        with self.lock:
            if not self.started and self.on_start is not None:
                self.on_start(versions)
            self.started = True


def run_on_devices(plans: Sequence[Plan], jobs: Sequence[Job], spec: EngineSpec,
                   devices: Sequence[Slot], replicate: bool,
                   on_result: Callable[[BenchmarkResult], None],
                   on_start: Callable[[Mapping[str, str]], None] | None = None,
                   fleet: Fleet | None = None) -> tuple[list[BenchmarkResult], list[str]]:
    """Run the jobs' benchmarks on the GPUs (those of them fleet has not given up); return
    the rows (by benchmark, then GPU) and notes on GPUs given up, each GPU's worker left
    warm in fleet. GpuEnvironmentError when no GPU could be opened at all."""
    if fleet is not None:
        devices = [slot for slot in devices if slot.index not in fleet.lost]
    units = units_of(plans, jobs)
    shared = collections.deque(range(len(units)))
    queues = {slot.index: (collections.deque(range(len(units))) if replicate else shared)
              for slot in devices}
    board = Board(units, plans, on_result, on_start, queues, replicate,
                  environments={slot.index: slot.environment(len(devices))
                                for slot in devices}, fleet=fleet)
    if fleet is not None:  # opened in an earlier run: a failure to open now is no usage error
        board.opened |= fleet.opened
    serving = list(devices)
    try:
        while serving:
            _serve_all(board, spec, serving)
            # A GPU that failed to open may hand its benchmark back after the others ran
            # out of work and stopped, some without opening (one benchmark, four GPUs):
            # every GPU not given up takes it. Each round gives a GPU up or empties the
            # queue: it ends.
            serving = [slot for slot in devices if slot.index not in board.lost] \
                if shared and not (replicate or board.errors) else []
    finally:
        if fleet is not None:
            fleet.opened |= board.opened
            fleet.lost |= board.lost
            fleet.why.update(board.why)
            fleet.notes += board.notes
    if board.errors:
        raise board.errors[0]
    if not board.opened:
        raise GpuEnvironmentError(board.unusable[0] if board.unusable
                                  else "no GPU could be opened")
    for unit in shared if not replicate else ():  # every GPU was given up before these
        for job in units[unit]:
            row = error_row(plans[job.plan_index], job, None,
                            "not run: every chosen GPU was given up (see the notes)")
            board.emit(unit, Slot(-1, ""), row)
    order = sorted(board.rows, key=lambda pair: (pair[0], pair[1]))
    return [row for pair in order for row in board.rows[pair]], board.notes


def _serve_all(board: Board, spec: EngineSpec, slots: Sequence[Slot]) -> None:
    """Serve the GPUs, a thread each, until every queue is empty or every GPU given up."""
    # Each thread says it ended by an event, waited on instead of Thread.join: a join that
    # Ctrl-C interrupts marks the thread it waited on as ended while it runs (CPython up to
    # 3.12, bpo-45274's fix), and its stuck worker then held the command's exit for good.
    ended = {slot.index: threading.Event() for slot in slots}
    threads = [threading.Thread(target=_serve_safely, args=(board, spec, slot,
                                                          ended[slot.index]),
                                name=f"cudabench GPU {slot.index}", daemon=True)
               for slot in slots]
    try:  # a Ctrl-C while the threads start ends those started
        for thread in threads:
            thread.start()
        for event in ended.values():
            while not event.wait(JOIN_S):
                pass
    except KeyboardInterrupt:
        with board.lock:  # the threads take no more work; the rows so far are written
            board.stopping = board.interrupted = True
        _end_workers(board, {slot.index: ended[slot.index]
                             for slot, thread in zip(slots, threads) if thread.ident})
        raise


def _end_workers(board: Board, ended: Mapping[int, threading.Event]) -> None:
    """After Ctrl-C: let each GPU's thread end its worker (which ends on the Ctrl-C too,
    once its CUDA call returns), then abandon those still running (a kernel that never
    returns): the command's exit must not wait on a worker, nor on its inbox's feeder."""
    deadline = time.monotonic() + STOP_GRACE_S
    try:
        for event in ended.values():
            event.wait(max(0.0, deadline - time.monotonic()))
    finally:  # a second Ctrl-C during the grace ends it: those still running go now
        with board.lock:
            stuck = [worker for index, worker in board.workers.items()
                     if index in ended and not ended[index].is_set()]
        for worker in stuck:
            worker.abandon()


def _serve_safely(board: Board, spec: EngineSpec, slot: Slot, ended: threading.Event
                  ) -> None:
    """Serve one GPU; keep an unexpected error for the main thread to raise; set ended."""
    try:
        _serve(board, spec, slot)
    except BaseException as exc:  # re-raised by the main thread once every thread ended
        with board.lock:
            board.errors.append(exc)
            board.stopping = True
    finally:
        ended.set()


def _serve(board: Board, spec: EngineSpec, slot: Slot) -> None:
    """Run units on one GPU until the queue is empty or the GPU is given up; then keep its
    worker warm in the board's fleet, if any."""
    with board.lock:
        worker = board.fleet.take(slot, spec.restricted(slot.index), board.plans) \
            if board.fleet is not None else None
    worker = worker or new_worker(spec.restricted(slot.index), board.plans,
                                  env=board.environments[slot.index], label=slot.index)
    with board.lock:
        board.workers[slot.index] = worker
    deaths, served = 0, False
    try:
        while (unit := board.take(slot)) is not None:
            jobs = board.units[unit]
            done: list[BenchmarkResult] = []
            # once the run stops (Ctrl-C), a worker it ended is not replaced: a fresh one
            # spawned while the command exits can hold its exit
            while len(done) < len(jobs) and not board.stopping:
                try:
                    # hand_back: a fresh worker that dies before it opens the GPU, with no
                    # row of the benchmark run yet, began none of its jobs: the benchmark
                    # goes back whole, as from a GPU that cannot be opened
                    rows = worker.run(remaining(jobs, done),
                                      lambda row: board.emit(unit, slot, row),
                                      board.start_once, first=slot.index not in board.opened,
                                      hand_back=not done)
                except GpuEnvironmentError as exc:  # this GPU never opened
                    board.give_back(slot, unit)
                    _give_up(board, slot, f"it could not be opened: {exc}", [], None,
                             opened=False)
                    return
                except DiedBeforeOpening as exc:
                    board.give_back(slot, unit)
                    deaths += 1
                    if deaths >= MAX_DEATHS:
                        _give_up(board, slot, f"{_why(Failure.DIED, deaths)} ({exc})", [],
                                 None, opened=slot.index in board.opened)
                        return
                    break  # a fresh worker takes it (or the next) again
                with board.lock:
                    board.opened.add(slot.index)
                done += rows
                # Only fresh workers that died before they opened the GPU count, in a row:
                # one that opened it and died in a job (a kernel that crashes the process)
                # costs that job's row, as on one GPU, not the healthy GPU.
                died = worker.failure in (Failure.DIED, Failure.UNUSABLE)
                deaths = deaths + 1 if died and not worker.answered else 0
                if worker.failure == Failure.UNUSABLE or deaths >= MAX_DEATHS:
                    left = [(unit, job) for job in jobs[len(done):]]
                    _give_up(board, slot, _why(worker.failure, deaths), left, worker.device)
                    return
        served = True
    finally:
        with board.lock:  # not after a stop (Ctrl-C, an error): nothing runs after it
            kept = served and board.fleet is not None and not board.stopping
            if kept and board.fleet is not None:
                board.fleet.workers[slot.index] = worker
        if not kept:
            worker.close()


def _why(failure: str | None, deaths: int) -> str:
    """Say why a GPU was given up."""
    if failure == Failure.UNUSABLE:
        return "a fresh worker could not open it"
    return f"its fresh worker process died {deaths} times in a row before it opened the GPU"


def _give_up(board: Board, slot: Slot, reason: str, left: list[tuple[int, Job]],
             device: DeviceInfo | None, opened: bool = True) -> None:
    """Stop using a GPU: the rows it was running say ERROR and why; its queued benchmarks
    go to the other GPUs, or, when every GPU runs every benchmark, say ERROR too."""
    if board.replicate:
        with board.lock:
            queue = board.queues[slot.index]
            while queue:
                unit = queue.popleft()
                left += [(unit, job) for job in board.units[unit]]
    for unit, job in left:
        board.emit(unit, slot, error_row(board.plans[job.plan_index], job, device,
                                         f"GPU {slot.index} was given up: {reason}"))
    with board.lock:
        board.lost.add(slot.index)
        board.why[slot.index] = reason
        if not opened:
            board.unusable.append(f"GPU {slot.index}: {reason}")
        board.notes.append(f"GPU {slot.index} was given up ({reason}); " + (
            "its benchmarks were not run on it" if board.replicate
            else "its queued benchmarks went to the other GPUs"))
