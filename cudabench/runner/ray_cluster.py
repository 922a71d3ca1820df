"""Run benchmarks on the GPUs of a Ray cluster (--cluster).

One Ray actor per GPU (num_gpus=1; at most one per benchmark) is handed benchmarks (an op
at one shape, dtype and cache state, with all its variants and reference rows:
gpus.units_of) one at a time from one queue, as `--devices all` hands them to one worker per
GPU. The actor runs each in a watched worker on its GPU exactly as `cudabench` does on one
machine, kept warm between benchmarks, so a kernel that faults or hangs costs its row, not
the actor. The plans travel pickled
with the kernel sources in them; the kernel folders and op files they need travel too,
and are written out on a node that lacks them (cudabench/common/relocation.py), so nodes need
only cudabench installed. Rows come back as benchmarks finish. A benchmark whose actor is
lost with its process or node runs once more on a fresh actor, then its rows say ERROR and
why; Ctrl-C cancels what is still out, ends the actors and leaves the results file valid.
Over one command's runs (a search's hand-outs, --best's head-to-head) the actors stay warm
from one run to the next (RayCluster.warm, ended by close), as the local Fleet's workers do.

With --keep-workers SECONDS the actors outlive the command: named, detached actors (one a
GPU slot, named by a fingerprint of cudabench's code) keep their GPU worker and CUDA
context, and the next command on the same cluster finds them by name instead of starting
Ray workers, importing cudabench and opening the GPUs again (seconds a run); a command
without the flag uses them too, and leaves them as they were. Each ends itself after
SECONDS without work; a command running other code ends the idle ones left by another
version first, so that they do not hold the GPUs it needs.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import logging
import os
import pickle
import re
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cudabench.common.extras import broken, install_hint
from cudabench.errors import GpuEnvironmentError, Terminated, UsageError
from cudabench.runner.devices import BLAS_THREAD_VARIABLES
from cudabench.engines.protocol import EngineSpec
from cudabench.runner.gpus import units_of
from cudabench.measure.jobs import Job, error_row, jobs_of, remaining
from cudabench.runner.pipeline import outcome_of
from cudabench.runner.workers import DiedBeforeOpening
from cudabench.planning.plan import Plan
from cudabench.ops.registry import forget_file_ops
from cudabench.common.fingerprint import code_key
from cudabench.runner.sources import bundle, digest_of
from cudabench.common.relocation import ENVIRONMENT_VARIABLE
from cudabench.results.model import BenchmarkResult, RunOutcome

INSTALL_HINT = install_hint("ray")
TASK_RETRIES = 1  # a benchmark whose actor was lost runs once more; an actor may fail to start once
WAIT_S = 1.0  # how often the driver wakes while tasks run (so Ctrl-C gets through)
CLOSE_WAIT_S = 15.0  # how long an actor gets to release its GPU at the end
WAITING_NOTE_S = 30.0  # after this long with no GPU of the cluster free, say so
MEASURED_WAIT_S = 3.0  # how long a stopped command waits for the running benchmarks' rows
NAMESPACE = "cudabench"  # where kept actors are named, whatever the driver's namespace
KEPT_PREFIX = "cudabench-"  # a kept actor's name: cudabench-<code key>-gpu<slot>
IDLE_PROBE_S = 0.5  # how long a kept actor gets to say whether it is between runs
REACH_S = 3.0  # how long a cluster's address gets to accept a connection before Ray is asked


def check_address(text: str) -> str:
    """Return --cluster's text stripped; UsageError unless it names a Ray cluster whose
    address (ray://HOST:PORT, else RAY_ADDRESS's) reads as one: a dry run refuses what the
    run would, and a run refuses it before Ray is asked (which logs a traceback)."""
    text = text.strip()
    if text != "ray" and not text.startswith("ray://"):
        dashboard = (" (a dashboard's http:// address is for `ray job submit`: name the "
                     "cluster's ray://HOST:10001)" if text.startswith(("http://", "https://"))
                     else "")
        raise UsageError(f"--cluster {text!r}: expected `ray` (a local Ray, or RAY_ADDRESS's "
                         "cluster) or `ray://HOST:PORT` (a cluster's Ray Client address)"
                         + dashboard)
    cluster_address(text)
    return text


def cluster_address(text: str) -> tuple[str, str] | None:
    """Return the HOST:PORT that --cluster (ray://HOST:PORT) or else RAY_ADDRESS names,
    and how the latter is named in an error; None where Ray finds the cluster itself
    (RAY_ADDRESS unset, `auto` or `local`). UsageError where it is no HOST:PORT."""
    given = text
    if text.startswith("ray://"):
        address, named_by = text.removeprefix("ray://"), ""
    else:
        given = os.environ.get("RAY_ADDRESS", "").strip()
        if given in ("", "auto", "local"):
            return None
        address, named_by = given.removeprefix("ray://"), f" (RAY_ADDRESS={given})"
    if "://" in address:  # http://HOST:8265, the dashboard's (`ray job submit`'s) address
        raise UsageError(f"--cluster {text}: {address}{named_by} is not a Ray cluster's "
                         "address (a dashboard's http:// one is for `ray job submit`): name "
                         "the head node's HOST:6379, or ray://HOST:10001")
    host, colon, port = address.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")  # [IPv6]:PORT
    if colon and host.strip("[] ") and (bracketed or ":" not in host) and port.isascii() \
            and port.isdigit() and 1 <= int(port) <= 65535:
        return address, named_by
    if named_by:  # Ray would log a traceback for it (":6391"), or try for a minute
        raise UsageError(f"--cluster {text}: RAY_ADDRESS={given!r} is malformed: expected "
                         "HOST:PORT (the head node's HOST:6379), ray://HOST:PORT, `auto` or "
                         "`local`, PORT a number from 1 to 65535: fix or unset RAY_ADDRESS")
    raise UsageError(f"--cluster {text!r}: expected ray://HOST:PORT (a cluster's Ray Client "
                     "address), PORT a number from 1 to 65535")


def check_reachable(text: str) -> None:
    """UsageError unless the HOST:PORT that --cluster or RAY_ADDRESS names accepts a
    connection within REACH_S. Ray itself waits on its own timeouts for an address that
    does not answer (a minute or more, its log lines on stderr) before it gives up."""
    found = cluster_address(text)
    if found is None:
        return  # unset, `auto` or `local`: Ray finds the cluster
    address, named_by = found
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_S).close()
    except OSError as exc:
        why = (f"no answer in {REACH_S:g} s" if isinstance(exc, TimeoutError)
               else exc.strerror or str(exc) or type(exc).__name__)
        raise UsageError(f"--cluster {text}: cannot reach the Ray cluster at {address}"
                         f"{named_by}: {why}") from None


def ray_install_hint(text: str) -> str:
    """Return how to install the Ray that --cluster text needs: a ray:// address is Ray
    Client's, which the minimal Ray (the `ray` extra) lacks."""
    return install_hint("ray-client") if text.startswith("ray://") else INSTALL_HINT


def connect(text: str, keep_s: float = 0.0, running: bool = False) -> RayCluster:
    """Start or join the Ray cluster --cluster names; UsageError saying why it cannot.
    keep_s > 0 (--keep-workers) keeps the actors warm that long after the run. running:
    join a cluster that runs already, never start one (`workers`: a Ray started for the
    command would have no kept actors to list), GPUs or not."""
    text = check_address(text)
    try:
        import ray
    except ImportError as exc:
        why = broken("ray", exc) or "Ray is not installed"
        raise UsageError(f"--cluster {text}: {why} ({ray_install_hint(text)})") from None
    started = False
    if not ray.is_initialized():
        check_reachable(text)
        address = text if text.startswith("ray://") else ("auto" if running else None)
        try:
            with _signals_kept():
                ray.init(address=address, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR)
        except Exception as exc:  # ConnectionError, a timeout, a version mismatch...
            if address == "auto":
                raise UsageError(f"--cluster {text}: no Ray cluster is running here (kept "
                                 "actors live on one started with `ray start --head`; name "
                                 "another with RAY_ADDRESS or --cluster ray://HOST:PORT)"
                                 ) from None
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageError(f"--cluster {text}: cannot reach the Ray cluster: {first}") from None
        started = True  # this process's Ray: close() shuts it down (a joined cluster's
        # driver only disconnects)
    if running:
        return RayCluster(ray, started, text, keep_s)
    gpus = float(ray.cluster_resources().get("GPU", 0))
    if gpus < 1:
        if started:
            ray.shutdown()
        raise UsageError(f"--cluster {text}: the Ray cluster has no GPU (start its nodes with "
                         "`ray start ... --num-gpus N`, or check nvidia-smi on them)")
    return RayCluster(ray, started, text, keep_s)


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    """Keep the command's SIGTERM and SIGINT handlers over ray.init, which puts its own in
    (SIGTERM: sys.exit, a cancelled CI job then exited 1 with a crash dump, not 143)."""
    main = threading.current_thread() is threading.main_thread()
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)} \
        if main else {}
    try:
        yield
    except SystemExit as stop:
        # a SIGTERM while ray.init connects meets Ray's handler, sys.exit(15): exit 15,
        # where a terminated command exits 143 saying so
        if stop.code != signal.SIGTERM:
            raise
        Terminated.received = True
        raise Terminated() from None
    finally:
        for sig, handler in kept.items():
            if handler is not None:
                signal.signal(sig, handler)


class RayCluster:
    """A connected Ray cluster that runs plans on one actor per GPU."""

    def __init__(self, ray: Any, started: bool, address: str, keep_s: float = 0.0) -> None:
        self.ray, self.started, self.address = ray, started, address
        self.keep_s = keep_s
        # Over one command's runs (a search's hand-outs, --best's re-measure): the idle
        # actors a run left for the next (slot -> actor, whether it is a kept one), and the
        # slots given up, left out of the next runs (a fresh actor would find the GPU that
        # failed: the only one the warm actors leave free).
        self.warm: dict[int, tuple[Any, bool]] = {}
        self.lost: set[int] = set()
        self.notes: list[str] = []  # why each was given up, over the runs (a search's)

    def close(self) -> None:
        """End the actors kept warm between runs, then stop the Ray that cudabench started
        (a cluster it joined is left running)."""
        self.end_idle()
        if self.started:
            self.ray.shutdown()
            self.started = False

    def end_idle(self, keep: int = 0) -> None:
        """End the actors kept warm between runs but `keep` of them (--best's head-to-head
        re-measures on one GPU: the others would hold theirs idle). A kept actor
        (--keep-workers) is left running for the next command, as a run leaves it."""
        for slot in list(self.warm)[keep:]:
            actor, kept = self.warm.pop(slot)
            if not kept:
                _end(self.ray, actor, wait=True)

    def run(self, plans: Sequence[Plan], spec: EngineSpec,
            on_result: Callable[[BenchmarkResult], None],
            on_start: Callable[[Mapping[str, str]], None] | None = None,
            stay: bool = False) -> RunOutcome:
        """Run every benchmark on one of the cluster's GPUs; stream rows as they finish.

        One actor per GPU (at most one per benchmark) keeps its watched worker warm for
        every benchmark it is handed, as `--devices all` does on one host: a Ray task per
        benchmark would start a Ray worker process and a GPU worker for each (Ray ends a
        GPU task's process after one call), seconds apiece. A benchmark goes only to an
        actor that has started (one still waiting for a GPU holds none), an actor ends as
        soon as nothing is left to hand out (stay: it waits, warm, for this cluster's next
        run, until close or end_idle: a search hands out a batch after another), and the
        driver, not Ray, retries: a benchmark whose actor was lost runs once more on a fresh
        one; a GPU whose actor fails to start, that cannot be opened, or whose fresh worker
        dies before it opens it, twice in a row, is given up (and left out of the later
        runs). With keep_s the actors are named and detached: found again by the next
        command, left running at the end, each ending itself after keep_s idle seconds;
        without, one kept earlier is used where it holds a GPU."""
        ray = self.ray
        plans = list(plans)
        units = units_of(plans, jobs_of(plans))
        if not units:
            return outcome_of(plans, [], [], on_result)
        files = bundle(plans)
        rows: dict[int, list[BenchmarkResult]] = {}
        waiting = collections.deque(range(len(units)))
        attempts: collections.Counter[int] = collections.Counter()
        started = False
        # The plans and files go to the object store once, not once per actor.
        pickled = pickle.dumps((plans, units))
        blob, shared_files = ray.put(pickled), ray.put(files)
        # What a kept actor checks: the plans (unpickled once) and the sources they use.
        work = hashlib.sha256(pickled).hexdigest()[:16] + "-" + digest_of(files)
        # two threads: measured() answers while a run holds the other (a stopped command)
        runner = ray.remote(num_gpus=1, max_concurrency=2)(GpuRunner)
        key = code_key()
        retire_stale(ray, key)
        kept: set[int] = set()  # the slots whose actor outlives the run
        gpus = int(ray.cluster_resources().get("GPU", 1))
        actors: dict[int, Any] = {}
        starting: dict[Any, int] = {}  # ready() call -> slot
        start_failures: collections.Counter[int] = collections.Counter()
        running: dict[Any, tuple[int, int]] = {}  # run() call -> (slot, benchmark)
        idle: collections.deque[int] = collections.deque()
        last_failure: BaseException | None = None
        # A GPU that cannot be opened shows in its actor's first run (the actor starts,
        # its worker opens the GPU meanwhile): its benchmark goes back to the queue, the
        # slot gets a fresh actor once (Ray may place it on another GPU), then is given up,
        # as `--devices all` gives up such a GPU.
        open_failures: collections.Counter[int] = collections.Counter()
        unusable: list[str] = []  # why each GPU given up could not be opened
        notes: list[str] = []

        def start(slot: int) -> None:
            name = f"{KEPT_PREFIX}{key}-gpu{slot}"
            actor = None
            if self.keep_s > 0:  # the next command finds it by name
                actor = runner.options(name=name, namespace=NAMESPACE, lifetime="detached",
                                       get_if_exists=True).remote(spec, self.keep_s)
            else:  # one kept by an earlier command holds this GPU: use it, leave it kept
                with contextlib.suppress(Exception):
                    actor = ray.get_actor(name, namespace=NAMESPACE)
            if actor is None:
                actor = runner.remote(spec)
                kept.discard(slot)
            else:
                kept.add(slot)
            actors[slot] = actor
            starting[actors[slot].ready.remote()] = slot

        def rewarm(slot: int) -> None:  # a warm actor (of the last run, or this one's)
            actors[slot], is_kept = self.warm.pop(slot)
            if is_kept:
                kept.add(slot)
            idle.append(slot)

        def finish(index: int, unit_rows: list[BenchmarkResult]) -> None:
            rows[index] = unit_rows
            for row in unit_rows:
                on_result(row)

        progress_at = time.monotonic()  # when work last went out or came back
        said_waiting = False
        try:
            wanted = max(1, min(gpus - len(self.lost), len(units)))
            for slot in list(self.warm)[:wanted]:  # the last run's, started already
                rewarm(slot)
            fresh = [slot for slot in range(gpus)
                     if slot not in actors and slot not in self.warm and slot not in self.lost]
            for slot in fresh[:wanted - len(actors)]:  # none: every GPU given up before
                start(slot)
            while running or (waiting and starting) or (waiting and idle):
                if running or idle:
                    progress_at = time.monotonic()
                elif not said_waiting and time.monotonic() - progress_at > WAITING_NOTE_S:
                    # every GPU held by other work: Ray waits for one without a word
                    said_waiting = True
                    sys.stderr.write(
                        f"cudabench: waiting for a GPU of the Ray cluster ({len(waiting)} "
                        f"benchmark(s) queued, none running for {WAITING_NOTE_S:g} s): "
                        f"{_why_waiting(ray, len(starting))}; Ctrl-C stops\n")
                while idle and waiting:
                    slot, index = idle.popleft(), waiting.popleft()
                    call = actors[slot].run.remote(spec, work, blob, shared_files, index,
                                                   self.keep_s)
                    running[call] = (slot, index)
                done, _ = ray.wait([*running, *starting], num_returns=1, timeout=WAIT_S)
                for ref in done:
                    if ref in starting:
                        slot = starting.pop(ref)
                        try:
                            ray.get(ref)
                        except Exception as exc:  # its process died or its start raised
                            last_failure = exc
                            _end(ray, actors.pop(slot), wait=False)
                            start_failures[slot] += 1
                            if start_failures[slot] > TASK_RETRIES:  # said, as a GPU that
                                # cannot be opened is (cudabench missing on its node)
                                reason = f"its Ray actor could not start: {_reason(exc)}"
                                if "No module named 'cudabench" in reason:
                                    reason += " (install cudabench, this version, on its node)"
                                unusable.append(f"a GPU of the Ray cluster: {reason}")
                                notes.append(f"a GPU of the cluster was given up ({reason}); "
                                             "its queued benchmarks went to the other GPUs")
                                self.lost.add(slot)
                            elif waiting:
                                start(slot)
                            continue
                        start_failures[slot] = 0
                        idle.append(slot)
                        continue
                    slot, index = running.pop(ref)
                    try:
                        unit_rows, versions = ray.get(ref)
                    except Exception as exc:  # the actor was lost, or its run raised
                        last_failure = exc
                        _end(ray, actors.pop(slot), wait=False)
                        cause = cause_of(exc)
                        if isinstance(cause, (GpuEnvironmentError, DiedBeforeOpening)):
                            waiting.appendleft(index)  # not the benchmark's doing
                            open_failures[slot] += 1
                            reason = (f"it could not be opened: {_reason(cause)}"
                                      if isinstance(cause, GpuEnvironmentError) else
                                      "its fresh worker process died before it opened the "
                                      f"GPU ({cause})")
                            if open_failures[slot] > TASK_RETRIES:
                                unusable.append(f"a GPU of the Ray cluster: {reason}")
                                notes.append(f"a GPU of the cluster was given up ({reason}); "
                                             "its queued benchmarks went to the other GPUs")
                                self.lost.add(slot)
                            elif waiting:
                                start(slot)
                            continue
                        attempts[index] += 1
                        if attempts[index] <= TASK_RETRIES:
                            waiting.appendleft(index)  # once more, on a fresh actor
                        else:
                            finish(index, lost_rows(plans, units[index], exc))
                        if waiting:
                            start(slot)
                        continue
                    if versions and not started and on_start is not None:
                        on_start(versions)
                        started = True
                    open_failures[slot] = 0
                    finish(index, unit_rows)
                    idle.append(slot)
                if waiting and not idle and self.warm:  # a benchmark handed back after
                    # the others ran out of work: one of them, warm still, takes it
                    rewarm(next(iter(self.warm)))
                if not waiting:  # nothing left to hand out: free the GPUs now
                    while idle:  # a kept actor stays warm for the next command
                        slot = idle.popleft()
                        if stay:  # and each, for this command's next run
                            self.warm[slot] = (actors.pop(slot), slot in kept)
                        elif slot not in kept:
                            _end(ray, actors.pop(slot), wait=True)
                    for ref in list(starting):  # one still waiting for a GPU: none kept
                        _end(ray, actors.pop(starting.pop(ref)), wait=False)
            if waiting and unusable and not rows:  # no GPU could be opened at all
                raise GpuEnvironmentError(unusable[0])
            for index in waiting:  # no GPU could start an actor, or every one given up
                finish(index, lost_rows(plans, units[index], last_failure)
                       if last_failure is not None else  # none tried: all given up before
                       [error_row(plans[job.plan_index], job, None, "not run: every GPU of "
                                  "the Ray cluster was given up (see the notes)")
                        for job in units[index]])
        except BaseException:  # Ctrl-C, or the writer failing: nothing is left running
            # The rows the benchmarks still out measured so far are kept, as a stopped
            # `--devices all` keeps its workers' (a run stopped before any benchmark
            # finished wrote no file at all); a second Ctrl-C gives up on them.
            with contextlib.suppress(BaseException):
                asked = {ref: actors[slot].measured.remote()
                         for ref, (slot, _) in running.items()}
                ready, _ = ray.wait(list(asked.values()), num_returns=len(asked),
                                    timeout=MEASURED_WAIT_S)
                for ref, answer in asked.items():
                    if answer not in ready:
                        continue
                    so_far, versions = ray.get(answer)
                    if versions and not started and on_start is not None:
                        on_start(versions)
                        started = True
                    finish(running[ref][1], so_far)
            for ref in running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)  # an actor call: force is for tasks; the kill below ends it
            ours = {slot for slot, _ in running.values()}  # running this command's calls
            for slot, actor in actors.items():
                if slot not in kept or slot in ours:  # a kept one between calls stays
                    _end(ray, actor, wait=False)
            raise
        for slot, actor in actors.items():
            if slot not in kept:
                _end(ray, actor, wait=True)
        results = [row for index in sorted(rows) for row in rows[index]]
        self.notes += notes
        return outcome_of(plans, results, notes, on_result)


def _end(ray: Any, actor: Any, wait: bool) -> None:
    """Stop an actor's GPU worker (waiting a little for it, if asked), then the actor."""
    with contextlib.suppress(Exception):
        if wait:
            ray.get(actor.close.remote(), timeout=CLOSE_WAIT_S)
    with contextlib.suppress(Exception):
        ray.kill(actor, no_restart=True)


def kept_actors(ray: Any) -> list[str]:
    """Return the names of the kept cudabench actors alive on the cluster."""
    try:
        entries = ray.util.list_named_actors(all_namespaces=True)
    except Exception:  # an older Ray, or the listing failed: nothing to retire
        return []
    return sorted(entry["name"] for entry in entries
                  if isinstance(entry, dict) and entry.get("namespace") == NAMESPACE
                  and str(entry.get("name", "")).startswith(KEPT_PREFIX))


def retire_stale(ray: Any, key: str) -> None:
    """End the idle kept actors of other code (an older cudabench): they would hold GPUs
    this run needs until their idle time ran out. One busy with another command's run
    does not answer at once and is left alone."""
    for name in kept_actors(ray):
        if name.startswith(f"{KEPT_PREFIX}{key}-"):
            continue
        with contextlib.suppress(Exception):
            actor = ray.get_actor(name, namespace=NAMESPACE)
            if not _idle(ray, actor):
                continue
            _end(ray, actor, wait=True)


def _idle(ray: Any, actor: Any) -> bool:
    """Return whether a kept actor is between runs. Its own answer where it has idle()
    (two threads: measured() answers beside a run, so ready() answers too); an actor of
    older code runs one call at a time: one that answers ready() at once is idle."""
    asked = getattr(actor, "idle", None)  # a handle has the methods of the actor's class
    if asked is None:
        ray.get(actor.ready.remote(), timeout=IDLE_PROBE_S)  # raises when busy
        return True
    try:
        return bool(ray.get(asked.remote(), timeout=IDLE_PROBE_S))
    except Exception:  # no answer in time: busy
        return False


def _why_waiting(ray: Any, starting: int) -> str:
    """Say why no benchmark runs yet: other work holds the GPUs, or this command's actors
    (starting of them not yet ready) are slow to start, as the cluster's free GPUs tell."""
    both = "its actors are still starting, or other work holds its GPUs (`ray status` says which)"
    try:
        total = float(ray.cluster_resources().get("GPU", 0))
        free = float(ray.available_resources().get("GPU", 0))
    except Exception:  # the cluster did not answer: say both
        return both
    if free >= 1:
        return (f"{free:g} GPU(s) free, its actors still starting (a slow runtime "
                "environment, or a node slow to start Python and import cudabench)")
    if total - free > starting:  # more held than this command's actors could hold
        return "other work holds its GPUs (`ray status` says what)"
    return both


def release_kept(ray: Any) -> int:
    """End every kept cudabench actor on the cluster, busy or not; return how many."""
    names = kept_actors(ray)
    for name in names:
        with contextlib.suppress(Exception):
            ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
    return len(names)


def cause_of(exc: BaseException) -> BaseException:
    """Return the error an actor's method raised (RayTaskError wraps it as its cause), or
    exc itself (a lost actor, a node gone)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _reason(exc: BaseException) -> str:
    """Return an error's own words on one line: a cause raised in an actor as it said
    them, else the first line of Ray's text (a creation task's error names its cause
    last), never Ray's coloured `ray::GpuRunner.run()` header."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[-1] if "creation task" in lines[0] else lines[0]


def lost_rows(plans: Sequence[Plan], jobs: Sequence[Job], exc: BaseException
              ) -> list[BenchmarkResult]:
    """Return ERROR rows for a benchmark whose actor could not finish it, saying why."""
    cause = cause_of(exc)
    name = type(cause).__name__
    why = (f"its Ray worker was lost twice (retried once): {name}: {_reason(cause)}"
           if "Crash" in name or "Died" in name or "Lost" in name
           else f"its Ray worker failed: {name}: {_reason(cause)}")
    return [error_row(plans[job.plan_index], job, None, why) for job in jobs]


def place_files(files: Mapping[str, str]) -> dict[str, str]:
    """Write the files whose folder is missing or different here to a temporary folder;
    return the folders moved (original folder -> local copy)."""
    # A file in a subfolder of another's folder (an op's `_helpers/` package) goes with
    # that folder, where its op file's imports look for it.
    parents = {Path(path).parent for path in files}
    by_folder: dict[str, dict[str, str]] = {}
    for path, text in files.items():
        root = min((p for p in parents if Path(path).is_relative_to(p)),
                   key=lambda p: len(p.parts))
        by_folder.setdefault(str(root), {})[Path(path).relative_to(root).as_posix()] = text
    moved = {}
    for folder, members in by_folder.items():
        if all(_same(Path(folder) / name, text) for name, text in members.items()):
            continue
        # One folder per content, reused by every task that needs it: tasks on one node do
        # not pile up copies, and a copy is never changed under an actor that reads it.
        digest = hashlib.sha256(json.dumps([folder, sorted(members.items())]).encode())
        copy = Path(tempfile.gettempdir()) / f"cudabench-kernels-{digest.hexdigest()[:16]}"
        if not all(_same(copy / name, text) for name, text in members.items()):
            staging = Path(tempfile.mkdtemp(prefix="cudabench-kernels-"))
            for name, text in members.items():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                (staging / name).write_text(text, encoding="utf-8")
            with contextlib.suppress(OSError):  # another task put the same copy there
                staging.rename(copy)
        moved[folder] = str(copy)
    return moved


def _same(path: Path, text: str) -> bool:
    """Return whether path holds text already (a shared file system, or the same host)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace") == text
    except OSError:
        return False


class GpuRunner:
    """The Ray actor on one GPU: runs benchmarks, one at a time, in a watched worker that
    stays warm between them (replaced after a fault or a timeout, as on one machine), with
    the kernel folders the node lacks written out. Each run names its plans (by digest)
    and spec, so a kept actor serves any later command; keep_s > 0: it ends itself after
    that many seconds without a run."""

    def __init__(self, spec: EngineSpec, keep_s: float = 0.0) -> None:
        import ray

        gpu_ids = ray.get_gpu_ids()
        first = str(gpu_ids[0]) if gpu_ids else ""
        self.label = int(first) if first.isascii() and first.isdigit() else 0
        share = str(max(1, (os.cpu_count() or 1) // _gpus_on_this_node(ray)))
        self.env = {name: share for name in BLAS_THREAD_VARIABLES}  # Ray's default: 1 thread
        self.spec, self.moved = spec, os.environ.get(ENVIRONMENT_VARIABLE)
        self.work = ""  # the digest of the plans loaded, and of the sources they use
        self.seen: dict[str, str] = {}  # source files its worker may have loaded: hashes
        self.units: list[list[Job]] = []
        self.heard: list[BenchmarkResult] = []  # the rows of the run in progress so far
        self.versions: dict[str, str] = {}
        self.worker = self._new_worker()
        self.worker.start()  # it opens the GPU while the first benchmark travels here
        self.lock, self.last_use, self.keep_s = threading.Lock(), time.monotonic(), keep_s
        if keep_s > 0:
            threading.Thread(target=self._end_when_idle, daemon=True, name="idle-end").start()

    def _new_worker(self) -> Any:
        from cudabench.runner.workers import Worker

        return Worker(self.spec.restricted(self.label), [], env=self.env, label=self.label)

    def ready(self) -> bool:
        """Answer once the actor has started (its GPU granted, its worker starting)."""
        return True

    def run(self, spec: EngineSpec, work: str, blob: bytes, files: Mapping[str, str],
            index: int, keep_s: float = 0.0) -> tuple[list[BenchmarkResult], dict[str, str]]:
        """Run benchmark `index` of the plans `blob` (digest `work`); return its rows and
        the worker's versions. A kept actor stays keep_s idle seconds from now on, where
        the command gives it (one without --keep-workers leaves the time as it was)."""
        with self.lock:
            self.keep_s = keep_s or self.keep_s
            try:
                if work != self.work:
                    self._load(spec, work, blob, files)
                return self._run(index)
            finally:
                self.last_use = time.monotonic()

    def _load(self, spec: EngineSpec, work: str, blob: bytes, files: Mapping[str, str]
              ) -> None:
        """Take a command's plans; a new GPU worker only where the spec or the kernel
        folders written out differ (a worker inherits both when it starts)."""
        # Before the plans are loaded (an op file may be among the moved ones). The actor's
        # process is its own: the setting lasts as long as it does.
        moved = place_files(files)
        os.environ.pop(ENVIRONMENT_VARIABLE, None)
        if moved:
            os.environ[ENVIRONMENT_VARIABLE] = json.dumps(moved)
        # This command's op files are loaded afresh, as a kept worker does: an edited one
        # (or its helper module) must not answer with the last command's code.
        forget_file_ops()
        plans, self.units = pickle.loads(blob)
        setting = os.environ.get(ENVIRONMENT_VARIABLE)
        # Its worker process keeps the op modules and kernels it loaded: a file it may have
        # loaded that changed since (an edited op file or header) needs a fresh one, as
        # changed folders do. Files it never saw are loaded fresh anyway.
        hashes = {path: hashlib.sha256(text.encode()).hexdigest() for path, text in
                  files.items()}
        edited = any(self.seen.get(path, digest) != digest for path, digest in hashes.items())
        if spec != self.spec or setting != self.moved or edited:
            self.worker.close()
            self.spec, self.moved, self.seen = spec, setting, {}
            self.worker = self._new_worker()
        self.seen.update(hashes)
        self.worker.use(plans)
        self.work = work

    def _run(self, index: int) -> tuple[list[BenchmarkResult], dict[str, str]]:
        """Run benchmark `index`. A fresh worker that dies before it opens the GPU raises
        DiedBeforeOpening: the driver hands the benchmark (whose rows come back whole, none
        streamed yet) to another actor, and gives the GPU up as one that cannot be opened
        (a worker dying as it opens its GPU dies again in the next)."""
        rows: list[BenchmarkResult] = []
        versions: dict[str, str] = {}
        self.heard, self.versions = [], versions  # measured() reads them meanwhile
        jobs = self.units[index]
        while len(rows) < len(jobs):
            rows += self.worker.run(remaining(jobs, rows), self.heard.append, versions.update,
                                    first=not rows, hand_back=not rows)
        return rows, versions

    def idle(self) -> bool:
        """Answer whether no run holds the actor now (retire_stale asks before it ends
        one: its second thread answers beside a run)."""
        if not self.lock.acquire(blocking=False):
            return False
        self.lock.release()
        return True

    def measured(self) -> tuple[list[BenchmarkResult], dict[str, str]]:
        """Return the rows the benchmark running now has measured so far, and the
        worker's versions: a command stopped meanwhile (Ctrl-C, SIGTERM) keeps them. The
        actor serves this beside a run (max_concurrency=2; runs hold the lock)."""
        return list(self.heard), dict(self.versions)

    def close(self) -> None:
        """Let the worker end, releasing the GPU."""
        self.worker.close()

    def _end_when_idle(self) -> None:
        """End this actor, its worker first, once keep_s seconds pass without a run (a run
        holds the lock: one that has started is never cut)."""
        import ray

        while True:
            time.sleep(min(1.0, self.keep_s / 4))
            with self.lock:
                if time.monotonic() - self.last_use < self.keep_s:
                    continue
                self.worker.close()
                # At once: the name is freed when the process is gone, and a command that
                # finds the actor meanwhile would be handed a dying one (the lock keeps
                # runs out until then).
                with contextlib.suppress(Exception):
                    ray.kill(ray.get_runtime_context().current_actor, no_restart=True)
                os._exit(0)


def _gpus_on_this_node(ray: Any) -> int:
    """Return how many GPUs Ray counts on the node running this task (at least 1)."""
    node = ray.get_runtime_context().get_node_id()
    for entry in ray.nodes():
        if entry.get("NodeID") == node:
            return max(1, int(entry.get("Resources", {}).get("GPU", 1)))
    return 1
