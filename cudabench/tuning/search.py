"""One search: ask the strategy for configurations, answer from the cache or measure them
in chunks (on one GPU, several, or a Ray cluster: each configuration its own unit of
work), append each row to the cache as it arrives, until the budget is spent.

The finalists are not chosen here: the caller hands the rows to --best's head-to-head.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cudabench.planning.plan import Plan
from cudabench.results.model import BenchmarkResult, RunOutcome, Status
from cudabench.tuning.budget import Budget
from cudabench.ops.fingerprint import op_fingerprint
from cudabench.tuning.cache import Key, TuneCache, cache_path, config_key, search_of
from cudabench.tuning.space import Space
from cudabench.tuning.strategies import make_strategy

Run = Callable[[Sequence[Plan], Callable[[BenchmarkResult], None]], RunOutcome]
CHUNK = {"brute": 32, "random": 32, "bayes": 8}  # configurations per GPU per hand-out


@dataclass(frozen=True)
class Settings:
    """How to search: the strategy, the budget, the seed, the cache."""

    strategy: str = "brute"
    budget: Budget = field(default_factory=Budget)
    seed: int = 0
    use_cache: bool = True
    cache_root: Path | None = None  # None: cache_root() (CUDABENCH_CACHE_DIR)
    gpus: int = 1  # how many run at once: chunks grow with them
    # What else on this host decides a cached row: the toolkit that builds the kernels, the
    # driver that runs them (a row timed before an upgrade is not one of this setup's).
    environment: tuple[tuple[str, str | None], ...] = ()


@dataclass
class Found:
    """What a search evaluated: each configuration's row (cached or measured), in order."""

    space: Space
    total: int  # the configurations its budget allows
    rows: dict[int, BenchmarkResult] = field(default_factory=dict)  # plan index -> row
    measured: int = 0
    cached: int = 0
    stopped: str | None = None  # why it ended before its total (the time budget)
    best: BenchmarkResult | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        """Return how many configurations were evaluated."""
        return len(self.rows)

    @property
    def failed(self) -> int:
        """Return how many evaluated configurations did not pass."""
        return sum(1 for row in self.rows.values() if row.status is not Status.PASS)

    def plans(self) -> list[Plan]:
        """Return the plans of the evaluated configurations (the head-to-head's)."""
        return [self.space.plans[i] for i in sorted(self.rows)]


Progress = Callable[[Found], None]


def search(space: Space, settings: Settings, run: Run, model: str | None,
           progress: Progress = lambda found: None) -> Found:
    """Search space within settings' budget; model is the GPU's (None: learnt from the
    first row, the first chunk then measured whatever the cache holds)."""
    total = settings.budget.configs_for(len(space.plans))
    found = Found(space, total)
    if not space.plans:
        return found
    strategy = make_strategy(settings.strategy, space, settings.seed, total)
    caches: dict[str, TuneCache] = {}
    known: dict[Key, BenchmarkResult] = {}

    def cache_of(name: str) -> TuneCache:
        if name not in caches:
            caches[name] = tune_cache(space, settings, name)
        return caches[name]

    if model is not None:
        known = cache_of(model).load()
    deadline = (found.started + settings.budget.seconds
                if settings.budget.seconds is not None else None)

    def record(index: int, row: BenchmarkResult) -> None:
        found.rows[index] = row
        ok = row.status is Status.PASS and row.median_s is not None
        strategy.tell(index, row.median_s if ok else None)
        if ok and (found.best is None or (row.median_s or 0) < (found.best.median_s or 0)):
            found.best = row
        progress(found)

    gpus = max(1, settings.gpus)
    chunk = CHUNK.get(settings.strategy, 8) * gpus
    while found.done < total:
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            found.stopped = f"the time budget ({settings.budget.seconds:g} s) ran out"
            break
        size = chunk
        if deadline is not None:  # checked between chunks: size them to what is left
            # seconds of wall time per configuration, the GPUs measuring side by side: what
            # is left over it is what fits in it on all of them (not once more per GPU)
            rate = (now - found.started) / found.measured if found.measured else None
            size = min(chunk, 2 * gpus if rate is None
                       else max(gpus, int((deadline - now) / rate)))
        asked = strategy.ask(min(size, total - found.done))
        if not asked:
            break
        fresh: dict[Key, int] = {}
        for index in asked:
            key = config_key(space.params(index))
            if key in known:
                found.cached += 1
                record(index, known[key])
            else:
                fresh[key] = index
        if not fresh:
            continue

        def on_result(row: BenchmarkResult) -> None:
            nonlocal model, known
            index = fresh.get(config_key(row.params))
            if index is None or index in found.rows:
                return
            name = row.device.name if row.device is not None else model or "unknown GPU"
            if model is None and row.device is not None:
                model = name
                known = cache_of(name).load()
            cache_of(name).add(row)
            found.measured += 1
            record(index, row)

        run([space.plans[i] for i in fresh.values()], on_result)
    return found


def searched(space: Space) -> tuple[object, ...]:
    """Return which search a space is, as its rows say it (cache.search_of)."""
    plan = space.plans[0]
    return (space.op, plan.variants[0].variant.name, tuple(plan.shape), plan.dtype.name,
            plan.hot)


def tune_cache(space: Space, settings: Settings, gpu: str) -> TuneCache:
    """Return the cache of a space's search on a GPU model (no file: settings say none)."""
    plan = space.plans[0]
    path = (cache_path(space.op, plan.variants[0].variant, tuple(plan.shape), plan.dtype.name,
                       plan.hot, gpu, settings.cache_root,
                       {**measuring_of(plan), **dict(settings.environment)})
            if settings.use_cache else None)
    return TuneCache(path, searched(space))


def remember(spaces: Sequence[Space], settings: Settings, row: BenchmarkResult) -> None:
    """Append a row measured outside the searches (--best's head-to-head: a configuration
    wrong when measured again is no candidate of a later search either) to the cache of
    the search it belongs to."""
    space = next((s for s in spaces if s.plans and searched(s) == search_of(row)), None)
    if space is not None and row.device is not None:
        tune_cache(space, settings, row.device.name).add(row)


def order_of(found: Found) -> list[BenchmarkResult]:
    """Return the evaluated rows in the space's order."""
    return [found.rows[i] for i in sorted(found.rows)]


def measuring_of(plan: Plan) -> dict[str, object]:
    """What besides the configuration decides a cached row: the op's code, the inputs'
    seed (a new --seed re-checks on new inputs), the timing settings that shape the samples
    (not the timeouts), the L2 flush before each, and whether the full reference checked
    it."""
    timing = plan.timing
    return {"op": op_fingerprint(plan.op), "seed": plan.seed, "warmup_s": timing.warmup_s,
            "min_samples": timing.min_samples,
            "max_samples": timing.max_samples, "precision": timing.precision,
            "max_time_s": timing.max_time_s, "full_check": plan.full_check,
            "l2_flush": plan.flush or ""}
