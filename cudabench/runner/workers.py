"""Run jobs in a worker process that the parent watches: the watchdog.

All GPU work happens in a spawned worker (a fork would inherit CUDA state). The worker
takes batches of jobs from its inbox; it says when each job starts, when its GPU work
starts (after the compile), and streams each result back, so progress and the results
file keep up and an interrupted run loses nothing it measured. The parent kills the
worker when a job's compile outlasts `compile_timeout_s` or its GPU work `timeout_s`: that
job's row says TIMEOUT, and the jobs after it run in a fresh worker. A worker that dies (a
driver crash, the OOM killer) costs the job it was running an ERROR row; one that stops
after a kernel fault hands the rest to a fresh worker too. A worker that ends a batch
cleanly stays for the next one (a benchmark after another on the same GPU pays no start).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cudabench.common.lazy import signals_held
from cudabench.errors import CudabenchError, GpuEnvironmentError, WorkerStopped
from cudabench.engines.protocol import EngineSpec
from cudabench.measure.jobs import Job, error_row
from cudabench.planning.plan import Plan
from cudabench.results.model import BenchmarkResult, DeviceInfo

POLL_S = 0.25  # how often the parent looks at a silent worker
PARENT_POLL_S = 1.0  # how often a worker looks whether its parent is still there
DONE = "done"  # the worker finished a batch: ("done", faulted)
_SPAWN_LOCK = threading.Lock()  # the environment is set around one spawn at a time
STOPS = {signal.SIGINT, signal.SIGTERM}  # what stops a command (SIGTERM: entry.py's)


@dataclass
class Watch:
    """What the parent knows of its worker: the device, the current job, its deadline."""

    device: DeviceInfo | None = None
    current: int | None = None  # index into the jobs given to the worker
    deadline: float | None = None  # time.monotonic() by which the current phase must end
    phase: str = ""  # "inputs" (and the CPU reference), "compile" or "GPU work"


class Failure:
    """Why a worker stopped before its batch was done (Worker.failure)."""

    DIED = "died"  # the process died or an error escaped it
    UNUSABLE = "unusable"  # a fresh worker could not open the GPU
    TIMEOUT = "timeout"  # a job outlasted its limit and was killed with the worker


class DiedBeforeOpening(Exception):
    """A fresh worker process died before it said anything (it never opened its GPU): no
    job ran, so none is blamed; the caller hands the jobs to another worker (Worker.run's
    hand_back). Its text says how it died: "exit code -11"."""


class Worker:
    """A watched worker process on one GPU, started on first use and replaced after it
    stops; it runs batches of jobs of the same plans.

    env is set in the process's environment when it starts (CUDA_VISIBLE_DEVICES for one
    GPU of several, BLAS threads); label, when given, is the device index its results
    name (the GPU's index among all, where the process sees it as device 0).
    """

    def __init__(self, spec: EngineSpec, plans: Sequence[Plan],
                 env: Mapping[str, str] | None = None, label: int | None = None) -> None:
        self.spec, self.plans = spec, list(plans)
        self.env, self.label = dict(env or {}), label
        self.device: DeviceInfo | None = None  # known once a worker has started
        self.failure: str | None = None  # why the last batch stopped early, if it did
        self.death = ""  # how its last process died: "exit code -11"
        self._process: Any = None
        self._inbox: Any = None
        self._messages: Any = None
        self._has_plans = False  # whether the running process was sent the plans
        # Whether the running process has said anything: one that dies before it does died
        # importing (an unguarded script calling cudabench); one that dies later did not.
        self._heard = False

    @property
    def answered(self) -> bool:
        """Whether the worker's process (the last one started) said anything: one that
        died before it did never opened its GPU."""
        return self._heard

    def start(self) -> None:
        """Spawn the process now: it imports and opens its engine while the caller goes on
        (a prestarted worker, see prestart)."""
        if self._process is None:
            self._start()

    def use(self, plans: Sequence[Plan]) -> None:
        """Run batches of these plans from now on (a warm worker handed to another run):
        its process gets them with the next batch."""
        self.plans = list(plans)
        self._has_plans = False

    def run(self, jobs: Sequence[Job], on_result: Callable[[BenchmarkResult], None],
            on_start: Callable[[Mapping[str, str]], None] | None = None,
            first: bool = True, hand_back: bool = False) -> list[BenchmarkResult]:
        """Run jobs until they are done or the worker stops.

        Returns the rows of the jobs it got through: all of them, or those up to and
        including one that faulted, timed out (TIMEOUT row) or killed the worker (ERROR
        row). If the first worker of a run cannot open the GPU, GpuEnvironmentError says
        why; with hand_back, a process that died before it said anything raises
        DiedBeforeOpening instead of an ERROR row for a job it never began.
        """
        self.failure = None
        if self._process is None:
            self._start()
        if not self._has_plans:  # once per process: a batch names plans by index
            self._inbox.put(("plans", self.plans))
            self._has_plans = True
        self._inbox.put(list(jobs))
        watch = Watch(device=self.device)
        results: list[BenchmarkResult] = []
        reason, keep = "", False
        try:
            reason, keep = self._follow_batch(watch, jobs, results, on_result, on_start,
                                              first)
        finally:
            self.device = watch.device or self.device
            if not keep:
                self._discard()
        if reason and hand_back and not self._heard:
            raise DiedBeforeOpening(self.death)
        if reason and len(results) < len(jobs):
            job = jobs[len(results)]
            # a worker that died before it opened its GPU never said which: name it here
            where = f"GPU {self.label}: " if watch.device is None and self.label is not None \
                else ""
            row = error_row(self.plans[job.plan_index], job, watch.device,
                            f"{where}{reason}; the jobs after it ran in a fresh worker",
                            timed_out=self.failure == Failure.TIMEOUT)
            results.append(row)
            on_result(row)
        return results

    def close(self, wait: bool = True) -> None:
        """Let the worker end (it is told there is no more work), or kill it. Without
        wait, the caller goes on while the worker releases its GPU (finish_closing joins)."""
        if self._process is not None and self._process.is_alive():
            with contextlib.suppress(Exception):
                self._inbox.put(None)
            if not wait:
                _CLOSING.append(self._process)
                self._messages.close()
                _let_go(self._inbox)
                self._process = self._inbox = self._messages = None
                self._has_plans = False
                return
        self._discard()

    def _follow_batch(self, watch: Watch, jobs: Sequence[Job],
                      results: list[BenchmarkResult],
                      on_result: Callable[[BenchmarkResult], None],
                      on_start: Callable[[Mapping[str, str]], None] | None,
                      first: bool) -> tuple[str, bool]:
        """Take the worker's messages until the batch ends: (why it stopped early, whether
        the worker can take another batch)."""
        while True:
            now = time.monotonic()
            wait = POLL_S if watch.deadline is None else max(0.0, min(POLL_S,
                                                                      watch.deadline - now))
            try:
                if not self._messages.poll(wait):
                    raise queue.Empty
                message = self._messages.recv()
                self._heard = True
            except (queue.Empty, EOFError, OSError):  # nothing yet, or the worker is gone
                if watch.deadline is not None and time.monotonic() >= watch.deadline:
                    self.failure = Failure.TIMEOUT
                    return _timeout_reason(watch, self.plans, jobs), False
                if not self._process.is_alive():
                    self.failure = Failure.DIED
                    ended_by = getattr(self._process, "ended_by", None)  # a kept worker's
                    if ended_by is not None:
                        self.death = f"ended by {ended_by}"
                        return f"its worker process was ended by {ended_by}", False
                    code = self._process.exitcode
                    # the unguarded script's worker exits 2 (refuse_in_a_worker_import);
                    # one killed by a signal (-11: a crash in the driver) never is that
                    unguarded = code == 2 and not self._heard and _main_is_a_script()
                    hint = UNGUARDED_HINT if unguarded else ""
                    self.death = f"exit code {code}{hint}"
                    return f"its worker process died (exit code {code}){hint}", False
                continue
            if isinstance(message, BenchmarkResult):
                results.append(message)
                on_result(message)
                watch.current = watch.deadline = None
            elif isinstance(message, tuple) and message[0] == Failure.UNUSABLE:
                if first:  # the run cannot start: the user's environment is the error
                    raise GpuEnvironmentError(message[1])
                self.failure = Failure.UNUSABLE
                return f"a fresh worker could not open the GPU: {message[1]}", False
            elif isinstance(message, tuple) and message[0] == DONE:
                return "", not message[1]  # a worker whose kernel faulted is done for
            elif isinstance(message, tuple):
                _follow(watch, message, self.plans, jobs, on_start)
            else:  # the text of an error in the worker
                self.failure = Failure.DIED
                return f"its worker process failed: {message}", False

    def kill(self) -> None:
        """End the worker process now, whatever it is doing."""
        if self._process is not None:
            self._process.kill()
            self._process.join(timeout=10)
        self._discard()

    def abandon(self) -> None:
        """Kill the worker process from another thread than the one running it (Ctrl-C on
        several GPUs, a worker stuck in a kernel): the thread's poll then finds it dead.
        Its inbox is let go, so that the command's exit does not wait on its feeder."""
        process, inbox = self._process, self._inbox
        if process is not None:
            with contextlib.suppress(Exception):
                process.kill()
        if inbox is not None:
            _let_go(inbox)

    def _start(self) -> None:
        """Spawn a worker process with the worker's environment. A stop (Ctrl-C, SIGTERM)
        meanwhile is raised once the worker is whole, and ends it: nobody will use it."""
        # Held over the whole start (in the main thread, where Python raises them: a
        # start in a GPU's thread is stopped by the main thread's handling): raised
        # inside multiprocessing's (SIGTERM, which the mask below did not hold), a stop
        # left a process half made that no clean-up could join.
        try:
            with signals_held():
                self._spawn()
        except KeyboardInterrupt:
            self.kill()
            raise

    def _spawn(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._has_plans = self._heard = False
        # Messages travel through a pipe, written synchronously: a row sent just before the
        # worker dies is not lost in a queue's feeder thread (and blamed for the death).
        messages, sender = context.Pipe(duplex=False)
        inbox = context.Queue()
        process = context.Process(target=_worker, args=(self.spec, inbox, sender, self.label),
                                  daemon=True)
        with _environment(self.env), _interrupts_held(), _no_unreadable_main():
            process.start()
        sender.close()  # the worker holds the only writing end: its death ends the pipe
        self._messages, self._inbox, self._process = messages, inbox, process

    def _discard(self) -> None:
        """End the worker process, if any: it has finished, or it is stuck and is killed."""
        if self._process is not None:
            _stop(self._process)
            self._messages.close()
            _let_go(self._inbox)
        self._process = self._inbox = self._messages = None


def _let_go(inbox: Any) -> None:
    """Close a worker's inbox so that the process can exit without draining it.

    A queue's feeder thread writes into a pipe that only the worker reads; if the worker
    died (PyCUDA missing, a fault) with a large batch unsent (a sweep's plans), Python's
    exit joins that thread and waits forever. Whatever is unsent is no longer wanted.
    """
    with contextlib.suppress(Exception):
        inbox.cancel_join_thread()
        inbox.close()


_KEPT: list[Worker] = []  # warm after a run, for the same command's next run (at most one)
_CLOSING: list[Any] = []  # processes told to end, not yet joined


def keep(worker: Worker) -> None:
    """Keep a worker that finished a run warm for the command's next run on its spec
    (--best's head-to-head re-measure), instead of ending it: take_kept hands it out,
    discard_kept ends it."""
    discard_kept()
    _KEPT.append(worker)


def take_kept(spec: EngineSpec, plans: Sequence[Plan]) -> Worker | None:
    """Return the kept worker, given the plans, if it runs spec's GPU; else None (and a
    kept worker of another spec is ended)."""
    return hand_out(_KEPT.pop() if _KEPT else None, spec, plans)


def hand_out(worker: Worker | None, spec: EngineSpec, plans: Sequence[Plan]) -> Worker | None:
    """Return a warm worker (None: none) for a run of plans on spec's GPU, given the plans;
    None, having ended it, where it runs another spec or its process is gone."""
    if worker is not None and (worker.spec != spec or worker._process is None):
        worker.close(wait=False)
        return None
    if worker is not None:
        worker.use(plans)  # its process holds the last run's plans: send these
    return worker


def discard_kept() -> None:
    """End a kept worker (the command is done with the GPU); it releases its GPU while the
    caller goes on (finish_closing joins)."""
    while _KEPT:
        _KEPT.pop().close(wait=False)


def finish_closing(grace_s: float = 0.05) -> None:
    """End the workers told to end (close(wait=False)): every row is in, so one still
    releasing its GPU after grace_s is killed (the driver frees what a process leaves).
    SIGKILL, not SIGTERM: a worker ends on SIGTERM as on Ctrl-C, once the CUDA call it is
    in returns, which is the wait this spares the command."""
    while _CLOSING:
        process = _CLOSING.pop()
        process.join(timeout=grace_s)
        if process.is_alive():
            process.kill()
            process.join(timeout=10)


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """Set variables in os.environ while a child is spawned (it inherits them), then restore
    them; one spawn at a time, so that threads starting workers on other GPUs do not mix."""
    with _SPAWN_LOCK:
        saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@contextlib.contextmanager
def _no_unreadable_main() -> Iterator[None]:
    """Hide __main__'s file from a spawn while it names no file (`python - <<EOF` names
    "<stdin>"): the spawned process would run it again and die, its every row an ERROR.
    Called under _environment's lock: one spawn at a time."""
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    # where multiprocessing looks: a relative path from where the process started
    where = os.path.join(getattr(multiprocessing.process, "ORIGINAL_DIR", None) or "",
                         path) if isinstance(path, str) else ""
    if main is None or not isinstance(path, str) or getattr(main, "__spec__", None) \
            is not None or os.path.isfile(where):
        yield
        return
    del main.__file__  # as `python -c` has none: the worker starts without it
    try:
        yield
    finally:
        main.__file__ = path


def _follow(watch: Watch, message: tuple[Any, ...], plans: Sequence[Plan],
            jobs: Sequence[Job], on_start: Callable[[Mapping[str, str]], None] | None) -> None:
    """Update the watch from a worker's message: started, a job began, its GPU work began."""
    kind = message[0]
    if kind == "start":
        watch.device = message[1]
        if on_start is not None:
            on_start(message[2])
    elif kind == "ready" and watch.current == message[1]:
        watch.phase = "compile"  # the same limit: --compile-timeout bounds both
    elif kind in ("job", "gpu"):
        index = message[1]
        plan = plans[jobs[index].plan_index]
        watch.current = index
        watch.phase = "inputs" if kind == "job" else "GPU work"
        limit = (plan.timing.compile_timeout_s if kind == "job"
                 else plan.timing.timeout_s + observers_allowance(plan))
        watch.deadline = time.monotonic() + limit


def observers_allowance(plan: Plan) -> float:
    """Return the seconds the passes asked for beyond the samples may take on top of
    --timeout: the energy pass its --energy seconds, --writeback's pass a second, ncu and
    compute-sanitizer their own limits (they end a stuck tool themselves, with a note).
    Counted in --timeout, an `--energy 3` under `--timeout 2` turned a right kernel's
    measured row into a TIMEOUT."""
    from cudabench.measure.sampling import WRITEBACK_ALLOWANCE_S
    from cudabench.observers import ncu, sanitizer

    return (plan.insight.energy_s + (ncu.TIMEOUT_S if plan.insight.counters else 0)
            + (sanitizer.TIMEOUT_S if plan.sanitize else 0)
            + (WRITEBACK_ALLOWANCE_S if plan.insight.writeback else 0))


def _timeout_reason(watch: Watch, plans: Sequence[Plan], jobs: Sequence[Job]) -> str:
    """Say which limit a job outlasted."""
    index = watch.current if watch.current is not None else 0
    timing = plans[jobs[index].plan_index].timing
    if watch.phase == "compile":
        return (f"its compile did not finish within {timing.compile_timeout_s:g} s "
                "(--compile-timeout) and was killed with its worker")
    if watch.phase == "inputs":  # a user's op: its inputs() or reference() that never ends
        return (f"its inputs and CPU reference (the op's inputs() and reference()) did not "
                f"finish within {timing.compile_timeout_s:g} s (--compile-timeout, which "
                "bounds the work before the GPU's) and were killed with its worker")
    return (f"did not finish within {timing.timeout_s:g} s of GPU work (--timeout) and was "
            "killed with its worker")


def _stop(worker: Any) -> None:
    """End the worker: it has finished, or it is stuck in a kernel and is killed."""
    worker.join(timeout=2)
    if worker.is_alive():
        worker.kill()
        worker.join(timeout=10)


def _worker(spec: EngineSpec, inbox: Any, sender: Any, label: int | None) -> None:
    """Open an engine, then take the plans and run each batch of jobs from the inbox
    (None: stop), reporting each phase and result and ("done", faulted) after a batch."""
    # Ctrl-C in a terminal reaches the whole process group: the parent says "interrupted"
    # and keeps the rows so far; this process just ends (a KeyboardInterrupt here printed
    # its traceback under the parent's one line). Where SIGINT came ignored (a command
    # started with `&` in a script), it stays ignored, as the parent's is.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _end_on_interrupt)
    # SIGTERM to the process group (a CI job cancelled) ends it the same way, its clean-ups
    # run, where the default action killed it in the middle of them
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _end_on_interrupt)
    # Held since the spawn (_interrupts_held): a Ctrl-C or SIGTERM while this process
    # imported ends it here, quietly, not with a traceback from the middle of an import.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
    _exit_with_parent()
    # An op's reference may start processes of its own (a multiprocessing Pool), which a
    # daemonic process may not. The parent still holds this one as daemonic: its exit
    # ends this worker as before (and _exit_with_parent, if it is killed).
    multiprocessing.current_process().daemon = False
    messages = _Sender(sender)
    engine = open_engine(spec, label, messages)
    if engine is None:
        return
    try:
        try:
            messages.put(("start", engine.info, dict(engine.versions)))
            serve_batches(engine, inbox.get, messages)
        finally:
            engine.close()
    except Exception as exc:  # a bug or a lost GPU: the parent records it and goes on
        messages.put(f"{type(exc).__name__}: {exc}")
        return
    if engine.faulted:
        # CUDA is dead here: end without collecting its objects (PyCUDA would warn about
        # each allocation it cannot free); every message has left (the pipe is synchronous).
        sender.close()
        os._exit(0)


def open_engine(spec: EngineSpec, label: int | None, messages: Any) -> Any:
    """Open spec's engine in a worker, named by label (the GPU's index as the user counts
    it, where the process sees it as device 0); None, the reason sent, where it cannot."""
    try:
        engine = spec.open()
    except CudabenchError as exc:  # no GPU, driver or PyCUDA: nothing can run
        messages.put((Failure.UNUSABLE, str(exc)))
        return None
    if label is not None:
        engine_info = dataclasses.replace(engine.info, index=label)
        setattr(engine, "info", engine_info)  # noqa: B010 (both engines keep a plain field)
    return engine


def serve_batches(engine: Any, receive: Callable[[], Any], messages: Any) -> None:
    """Take ("plans", plans) and batches of jobs until None; run each batch, reporting each
    phase and result, then ("done", faulted); stop after a fault (CUDA is dead)."""
    from cudabench.runner.execute import run_jobs

    plans: list[Plan] = []
    while (jobs := receive()) is not None:
        if isinstance(jobs, tuple):  # ("plans", plans): what the batches index
            plans = jobs[1]
            continue
        run_jobs(plans, jobs, engine, on_result=messages.put,
                 on_phase=lambda kind, index: messages.put((kind, index)))
        messages.put((DONE, engine.faulted))
        if engine.faulted:
            break


# A worker is spawned: it imports the script that started it, which must not run cudabench
# again then (the worker ends at once, and this says why).
UNGUARDED_HINT = ("; a script that calls cudabench must do so under `if __name__ == "
                  "\"__main__\":` (the worker process imports the script)")


def _main_is_a_script() -> bool:
    """Return whether this process runs a Python file as __main__ (python script.py)."""
    import sys

    main = sys.modules.get("__main__")
    return bool(getattr(main, "__file__", None)) and getattr(main, "__spec__", None) is None


def refuse_in_a_worker_import() -> None:
    """End a spawned process that is importing its parent's script (as __mp_main__) when
    that script calls cudabench unguarded: one line, exit 2, not three tracebacks."""
    import sys

    # _inheriting: set while a spawned process prepares (multiprocessing's own test for it)
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        sys.stderr.write("cudabench: error: the script calls cudabench when the GPU worker "
                         "imports it; put its calls under `if __name__ == \"__main__\":`\n")
        raise SystemExit(2)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM in this thread while a worker is spawned: the worker inherits
    the held mask and lets it go once its handlers are set (_worker). This thread's own stop
    waits the few milliseconds of the spawn, and is then raised (or deferred) here."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _end_on_interrupt(signum: int, frame: object) -> None:
    """End the worker quietly (multiprocessing prints no traceback for SystemExit), its
    clean-ups running on the way (a compile's temporary files, a cache's part files): the
    parent, interrupted too, reports it."""
    raise WorkerStopped(128 + signum)


def _exit_with_parent() -> None:
    """End this worker when its parent is gone (killed: a Ray actor stopped by force, a
    SIGKILL), not wait on its inbox forever holding a GPU context."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class _Sender:
    """The worker's end of the message pipe, with a queue's put."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def put(self, message: object) -> None:
        """Send one message; it is in the pipe when this returns. Where the command is gone
        (killed: the pipe is broken), end quietly: nobody reads the message, and a traceback
        per send landed in the terminal or CI log of the killed command."""
        try:
            self.connection.send(message)
        except (BrokenPipeError, ConnectionResetError):
            os._exit(0)
