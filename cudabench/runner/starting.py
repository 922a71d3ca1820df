"""Which worker a run starts, and when: one started early (before the plans are made,
overlapping the command's own start), a plain one, or one kept across commands
(--keep-workers: kept_worker.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cudabench.engines.protocol import EngineSpec
from cudabench.planning.plan import Plan
from cudabench.runner.kept_worker import KeptWorker
from cudabench.runner.workers import Worker

_PRESTARTED: list[Worker] = []  # started before the plans were made (at most one)
_KEEP_S = [0.0]  # --keep-workers: new workers are kept across commands this long idle


def keep_across_commands(seconds: float) -> None:
    """Make the workers started from now on kept workers (kept_worker.py) that outlive the
    command by `seconds` idle seconds; 0: plain workers that end with it."""
    _KEEP_S[0] = seconds


def new_worker(spec: EngineSpec, plans: Sequence[Plan], env: Mapping[str, str] | None = None,
               label: int | None = None) -> Worker:
    """Return a worker for spec: a kept one where --keep-workers asked for it."""
    if _KEEP_S[0] > 0:
        return KeptWorker(spec, plans, _KEEP_S[0], env=env, label=label)
    return Worker(spec, plans, env=env, label=label)


def prestart(spec: EngineSpec) -> None:
    """Start a worker for spec now, so that its imports and CUDA context overlap with the
    caller's planning; the next run on spec (take_prestarted) uses it. One already started
    for the same spec (cli/early.py) is kept."""
    if _PRESTARTED and _fits(_PRESTARTED[0], spec):
        return
    discard_prestarted()
    worker = new_worker(spec, [])
    worker.start()
    _PRESTARTED.append(worker)


def take_prestarted(spec: EngineSpec, plans: Sequence[Plan]) -> Worker | None:
    """Return the prestarted worker if it was started for spec (given the plans), else
    None; either way no worker stays prestarted."""
    worker = _PRESTARTED.pop() if _PRESTARTED else None
    if worker is not None and not _fits(worker, spec):
        worker.close()
        worker = None
    if worker is not None:
        worker.use(plans)
    return worker


def _kept(worker: Worker) -> bool:
    return isinstance(worker, KeptWorker)


def _fits(worker: Worker, spec: EngineSpec) -> bool:
    """Return whether a worker started earlier is the one a run on spec would start now."""
    return worker.spec == spec and _kept(worker) == (_KEEP_S[0] > 0)


def discard_prestarted() -> None:
    """End a prestarted worker nobody used (the command stopped before its run) at once:
    it has no work, and may still be importing or opening its GPU. A kept one stays kept:
    only this command's session with it ends."""
    while _PRESTARTED:
        worker = _PRESTARTED.pop()
        if _kept(worker):
            worker.close()
        else:
            worker.kill()
