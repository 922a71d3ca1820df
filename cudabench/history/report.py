"""What `history show` and `history check` say: trends and verdicts, no rendering.

check judges each benchmark of a results file against the distribution of the medians of
its last N runs on the same GPU model (not one baseline), with compare's verdict words:

- `failed`: the current row is not verified (FAIL, ERROR, TIMEOUT, SUSPECT). A regression.
- `fixed`: the last recorded run of it failed, and this one passes, its speed judged
  against the passing runs as below (slower than them: `slower`, not `fixed`).
- `missing`: a kernel that most of the last recorded runs of the same command measured
  (check's _missing; newer runs that lack it too passed over until they are a level, and
  runs that failed the gate passed over for good) and the file lacks or holds only as
  SKIP. A regression, unless allow_missing.
- `noisy` (never a regression): too few samples to know the current median; too little
  history (fewer than min_runs runs in its established level, _level); a change
  above the threshold that the history's own spread explains; or a current median known
  less precisely than half the threshold.
- `slower` / `faster`: the change from the history's median exceeds the threshold (auto:
  threshold.history_threshold, the runs of the current commit and the outliers left out)
  and is significant: outside every recorded median but the outliers
  (threshold.without_outliers: one slow run recorded must not let its re-run pass), and
  p < alpha for a median drawn from the
  history's spread (robust, between runs) plus the current median's own uncertainty. A
  slower reference row means the machine changed: shown, not gated.
- `same`: otherwise.

If a step or a drift is found in the window, only the runs after it count (the history
before it is another kernel, or another machine), once they are an established level:
min_runs runs from at least 3 commits, counting the runs nearer the new level than the old
(_level, _at_level). Until then they are left out and the runs before the step stay the
history, the window reaching back past them (_history): `--record --check` records the
runs that fail the gate too, and re-running a slow commit must keep failing, not make its
own baseline. A faster
level is a stricter baseline and counts at once: a run that loses a speedup the newest
runs show (2 or more, of other commits, all faster than the history) is `slower` against
them (_Newest), and so is each run after it until the slower runs are an established level
again (the runs that lost it, recorded as they failed, are no baseline).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cudabench.analysis.compare import card_changes
from cudabench.analysis.verdicts import (
    DEFAULT_ALPHA,
    MIN_SAMPLES,
    REGRESSION,
    Verdict,
    at_slow_clock,
    set_aside_note,
    throttled_by_kernel,
    throttled_text,
    ungated,
    worse,
)
from cudabench.common.stats import pooled_precision, relative_spread
from cudabench.common.units import exceeds, format_change, format_percent, p_test_text
from cudabench.errors import ExitCode, UsageError
from cudabench.history.records import (
    USABLE_STATUSES,
    Benchmark,
    SeriesPoint,
    Tracked,
    command_key,
    comparable_key,
    encode_benchmark,
    one_row_each,
    unflushed_key,
)
from cudabench.history.steps import (
    DEFAULT_THRESHOLD,
    NOISE_FLOOR,
    Detection,
    Drift,
    Step,
    detect,
)
from cudabench.history.store import Store
from cudabench.history.threshold import (
    DEFAULT_CAP,
    DEFAULT_MIN_RUNS,
    LEVEL_COMMITS,
    between_run_spread,
    commits,
    established,
    history_threshold,
    without_outliers,
)
from cudabench.results.model import FAILING_STATUSES, BenchmarkResult, Kind, ResultsFile, Status

DEFAULT_LAST = 20  # runs a check weighs
BAND_RUNS = 10  # runs the noise band of `show` is taken over


@dataclass(frozen=True)
class Trend:
    """One benchmark on one GPU model over its recorded runs (per commit)."""

    tracked: Tracked
    points: tuple[SeriesPoint, ...]  # one per commit (runs of one commit merged), oldest first
    detection: Detection
    # min..max of the last BAND_RUNS points since the last step or drift
    band: tuple[float, float]
    spread: float  # their robust relative spread (1.4826 MAD / median)
    failing: SeriesPoint | None = None  # the newest run, where it is newer and not usable

    @property
    def latest_s(self) -> float:
        """Return the newest median in seconds."""
        return self.points[-1].median_s

    def label(self, index: int) -> str:
        """Return how a point is named: its short commit, or its run."""
        return point_label(self.points[index])


def point_label(point: SeriesPoint) -> str:
    """Return a point's short commit, or 'run N' when the run named none."""
    return point.commit[:7] if point.commit else f"run {point.run_id}"


def per_commit(points: Sequence[SeriesPoint]) -> list[SeriesPoint]:
    """Merge consecutive runs of one commit into one point (the median of their medians).

    Step detection works on per-commit medians: re-runs of a commit are not a history.
    """
    merged: list[list[SeriesPoint]] = []
    for point in points:
        if merged and point.commit is not None and merged[-1][-1].commit == point.commit:
            merged[-1].append(point)
        else:
            merged.append([point])
    return [SeriesPoint(group[-1].run_id, group[-1].commit, group[-1].created,
                        statistics.median(p.median_s for p in group), group[-1].status,
                        group[-1].kind)
            for group in merged]


def since_last_change(detection: Detection) -> tuple[int, str]:
    """Return where the current level starts (after the last step or drift), and a note."""
    change = detection.last_change
    if isinstance(change, Step):
        return change.index, f" since the step at {change.label}"
    if isinstance(change, Drift):
        return change.end, f" since the drift that ended at {change.last_label}"
    return 0, ""


def _last_commits(store: Store, tracked: Tracked, since: str | None,
                  last: int | None) -> list[SeriesPoint]:
    """Return a benchmark's newest `last` per-commit points (all: None), reading the
    runs newest first in growing windows rather than its whole history."""
    if not last:
        return per_commit(store.reader(tracked.gpu_model, since).series(tracked.benchmark))
    runs = last
    while True:
        window = store.reader(tracked.gpu_model, since).series(tracked.benchmark, last=runs)
        points = per_commit(window)
        # the whole series read, or more points than kept: the oldest, which a window
        # may cut through a commit's re-runs, is then left out
        if len(window) < runs or len(points) > last:
            return points[-last:]
        runs *= 2


def trends(store: Store, op: str | None = None, variant: str | None = None,
           gpu_model: str | None = None, since: str | None = None, last: int | None = None,
           threshold: float = DEFAULT_THRESHOLD) -> list[Trend]:
    """Return the trend of every benchmark the store holds (filtered), per GPU model, in
    the order of _table_order."""
    found = []
    for tracked in sorted(store.benchmarks(op, variant, gpu_model, since), key=_table_order):
        points = _last_commits(store, tracked, since, last)
        if not points:
            continue  # only failing rows: nothing timed to follow
        labels = [point_label(p) for p in points]
        detection = detect([p.median_s for p in points], labels, threshold=threshold)
        start, _ = since_last_change(detection)
        recent = [p.median_s for p in points[start:]][-BAND_RUNS:]
        # "latest" is the newest timing a trend can follow; a newer run that failed (or
        # is not believed) is said beside it, not passed over unseen
        newest = store.reader(tracked.gpu_model, since).series(tracked.benchmark, last=1,
                                                               usable_only=False)
        failing = newest[-1] if newest else None
        if failing is not None and (failing.run_id == points[-1].run_id
                                    or failing.created < points[-1].created
                                    or failing.status in USABLE_STATUSES
                                    or failing.status == Status.SKIP.value):  # measured nothing
            failing = None
        found.append(Trend(tracked, tuple(points), detection, (min(recent), max(recent)),
                           relative_spread(recent), failing))
    return found


def _table_order(tracked: Tracked) -> tuple[object, ...]:
    """Sort key of trends: GPU model, op, variant, then shape and parameters as numbers
    (the store orders them as text: 128x128 before 64x64, TILE=16 before TILE=8)."""
    bench = tracked.benchmark
    return (tracked.gpu_model, bench.op, bench.variant, bench.shape, bench.params,
            bench.dtype, bench.hot, bench.l2_flush)


@dataclass(frozen=True)
class HistoryRow:
    """One benchmark of the current file against its history on one GPU model."""

    benchmark: Benchmark
    gpu_model: str
    kind: Kind
    current_median_s: float | None
    history_median_s: float | None
    band: tuple[float, float] | None  # min..max of the runs weighed, outliers left out
    runs: int  # runs weighed
    change: float | None  # current / history median - 1
    p_value: float | None
    threshold: float
    threshold_source: str
    verdict: Verdict
    reason: str

    @property
    def regressed(self) -> bool:
        """Return whether this row fails the gate (a kernel, never a reference row)."""
        return self.verdict in REGRESSION and self.kind is Kind.VARIANT


@dataclass(frozen=True)
class HistoryCheck:
    """Every benchmark of the current file judged against the store."""

    rows: tuple[HistoryRow, ...]
    current_path: str
    last: int
    alpha: float
    excluded_run: int | None  # the current file's own run, when among the runs read
    notes: tuple[str, ...] = ()  # kernels judged on kept samples, some set aside
    # each card fact that differs from the newest recorded run judged against, as compare's
    # setting_changes with that run named ("driver: 13.0 -> 12.0 (against ...)")
    setting_changes: tuple[str, ...] = ()
    # the current file's own run, when recorded, on whatever branch: the one whose gate
    # verdict is recorded (--branch main judges a PR's run it does not read)
    recorded_run: int | None = None

    @property
    def regressions(self) -> tuple[HistoryRow, ...]:
        """Return the rows that fail the gate."""
        return tuple(row for row in self.rows if row.regressed)

    @property
    def exit_code(self) -> ExitCode:
        """Return ExitCode.REGRESSION when any row regressed, else ExitCode.OK."""
        return ExitCode.REGRESSION if self.regressions else ExitCode.OK


def check(store: Store, current: ResultsFile, source: str | None = None,
          last: int = DEFAULT_LAST, threshold: float | None = None,
          alpha: float = DEFAULT_ALPHA, min_runs: int = DEFAULT_MIN_RUNS,
          allow_missing: bool = False, cap: float = DEFAULT_CAP,
          cap_from: str = "--max-threshold") -> HistoryCheck:
    """Judge each benchmark of current against its last `last` runs in the store.

    threshold None is `--threshold auto` (per benchmark, threshold.threshold_from_medians,
    at most cap; cap_from says in a capped row's source what set the cap).
    source, the current file's text, keeps its own run out of its history if recorded.
    A kernel that most of the last recorded runs of current's command measured, and
    current lacks (or holds only as SKIP), is `missing` unless allow_missing: as in
    compare, a slowed kernel renamed or dropped must not pass unseen.
    """
    if last < min_runs or not 0 < alpha < 1 or min_runs < 3:
        raise ValueError("last >= min_runs, alpha in (0, 1), min_runs >= 3")
    _refuse_unknown_gpu(store, current)
    own = store.run_for(current, source) if source is not None else None
    commit = current.metadata.get("git_commit")
    rows, notes = [], []
    judged_on: dict[str, SeriesPoint] = {}  # per GPU model, the newest run a row is judged on
    for result in one_row_each(current, skip_skipped=True):
        gpu = result.device.name if result.device is not None else ""
        bench = Benchmark.of(result)
        history, note = _history(store, bench, gpu, last, own, min_runs)
        latest = store.reader(gpu, exclude_run=own).series(bench, last=1, usable_only=False)
        if latest and (gpu not in judged_on or (latest[-1].created, latest[-1].run_id)
                       > (judged_on[gpu].created, judged_on[gpu].run_id)):
            judged_on[gpu] = latest[-1]
        newest = store.reader(gpu, exclude_run=own).series(bench, last=last)
        row, at_slow = _judge(result, bench, gpu, history, latest, threshold, alpha,
                              min_runs, cap, cap_from, note,
                              _Newest(newest, commit, min_runs))
        rows.append(row)
        if result.kind is Kind.VARIANT and result.slow_clock_samples_s and not at_slow:
            notes.append(set_aside_note(result))  # judged on the kept ones: said, as compare
    if not allow_missing:
        _refuse_other_settings(store, current, own)
        rows += _missing(store, current, own, min_runs)
    read = own if own is not None and store.reads_run(own) else None
    return HistoryCheck(tuple(rows), current.path, last, alpha, read, tuple(notes),
                        _card_changes(store, current, judged_on), recorded_run=own)


def _card_changes(store: Store, current: ResultsFile, judged_on: dict[str, SeriesPoint]
                  ) -> tuple[str, ...]:
    """Return each driver fact or card setting of current's cards that differs from the
    newest recorded run of its GPU model that the check judged against, in compare's words
    (analysis.compare.card_changes): a driver update or a lower power limit moves every
    timing, and the verdicts alone do not say why. Runs recorded before the store kept
    their cards (schema 6) have none to compare."""
    changes: list[str] = []
    for model, point in sorted(judged_on.items()):
        cards = [card for card in current.devices if card.name == model]
        changes += [f"{change} (against the last recorded run, {point_label(point)})"
                    for change in card_changes(store.run_cards(point.run_id, model), cards,
                                               several=len(current.devices) > 1)]
    return tuple(changes)


def _refuse_other_settings(store: Store, current: ResultsFile, own: int | None) -> None:
    """Refuse a file whose command's last runs on its GPU model were all measured after
    another L2 flush: history is kept per model and flush, so every row had "too little
    history, not gated" and the gate passed a slowdown unseen (compare refuses a flush
    change). The next run, with this one recorded, starts the new history. (A model the
    command has no runs on is a new history, as a new runner on a store shared by
    several models is.)"""
    key = command_key(current.metadata.get("command"))
    if key is None:
        return
    settings: dict[str, set[str]] = {}
    for r in current.benchmarks:
        if r.samples_s:
            settings.setdefault(r.device.name if r.device is not None else "",
                                set()).add(r.l2_flush)
    # The command after another flush: --l2-flush memset or --hot on the command line
    # made it another command, with no runs, and the refusal never came. Its own runs
    # first: a store that keeps the command and its --hot form judges each by its own.
    alike = [known for known in store.command_keys()
             if unflushed_key(known) == unflushed_key(key)] or [key]
    for model, now in sorted(settings.items()):
        before = store.command_flushes(key, model, exclude_run=own, last=SET_RUNS)
        if len(before) < SET_RUNS:
            before = store.command_flushes(alike, model, exclude_run=own, last=SET_RUNS)
        if len(before) < SET_RUNS or any(flushes & now for flushes in before.values()):
            continue
        recorded = sorted(set().union(*before.values()))
        raise UsageError(
            f"{current.path}: this command's last {len(before)} recorded runs on "
            f"{model or '(no GPU)'} followed the {flush_names(recorded)} L2 flush, and this "
            f"file the {flush_names(now)} one: history is kept per flush, so nothing "
            "here can be judged against it; once this run is recorded (--record, history "
            "import), the checks after it start the new history; or pass --allow-missing "
            "to check it as new")


def flush_names(flushes: Iterable[str]) -> str:
    """Name L2 flushes for a message: "clean", "memset", "" (none: --hot) as "no"."""
    return ", ".join(flush or "no (--hot)" for flush in sorted(flushes))


def _refuse_unknown_gpu(store: Store, current: ResultsFile) -> None:
    """Refuse a file whose measured rows record no GPU (`"device": null`) beside rows that
    do, or against a store of runs on GPU models: history is kept per model, so such rows
    had none, "too little history, not gated", and a slowdown passed; and one such row
    made the file look like two models, which turned the missing-kernel check off. (As
    compare refuses them.)"""
    unknown = sum(1 for r in current.benchmarks if r.samples_s and r.device is None)
    if not unknown:
        return
    named = sorted({r.device.name for r in current.benchmarks if r.device is not None}
                   | {model for run in store.runs() for model in run.gpu_models if model})
    if named:
        raise UsageError(
            f"{current.path}: {unknown} measured row(s) record no GPU (device null), beside "
            f"rows or history on {', '.join(repr(n) for n in named)}: history is kept per GPU "
            "model, so they cannot be judged (a results file written by cudabench names the "
            "GPU of every measured row)")


SET_RUNS = 3  # the runs of one command that say which kernels it measures (a majority)
MISSING_WINDOW = 100  # the most runs of a command the missing check reaches back over


def _missing(store: Store, current: ResultsFile, own: int | None,
             min_runs: int = DEFAULT_MIN_RUNS) -> list[HistoryRow]:
    """Return a `missing` row for each kernel that the current file lacks or holds only as
    SKIP and that most of the last SET_RUNS recorded runs of the same command measured
    (records.command_key: its output flags aside; records.comparable_key) at earlier
    commits on its GPU model, the newer runs that lack it too passed over until they are
    a level (_dropped). Nothing with fewer such runs, a file of several GPU models
    (which kernel ran where changes from run to run), or a file that names no command.
    Runs at the file's own commit do not vote: `--record --check` records a run before it
    judges it, and two re-runs of a job that dropped a kernel outvoted the runs before.
    Nor do runs that a check recorded as failing the gate (runs.gate; the runs never
    judged vote): pushes that dropped a kernel, each failing as `missing`, were a level
    the next push passed by; a drop that is meant is recorded passing, --allow-missing."""
    key = command_key(current.metadata.get("command"))
    models = {r.device.name if r.device is not None else "" for r in current.benchmarks}
    if key is None or len(models) != 1:
        return []
    (gpu,) = models
    flushes = {Benchmark.of(r).l2_flush for r in current.benchmarks}
    measured = {Benchmark.of(r) for r in current.benchmarks if r.status is not Status.SKIP}
    keys = [known for known in store.command_keys()
            if comparable_key(known) == comparable_key(key)] or [key]
    commit = current.metadata.get("git_commit")
    wanted = SET_RUNS + min_runs
    while True:
        runs = store.runs_of_command(keys, gpu, exclude_run=own, last=wanted,
                                     exclude_commit=commit if isinstance(commit, str) else None,
                                     skip_failed=True)
        if len(runs) < SET_RUNS:  # all there are (wanted is more): too few to say
            return []
        kernels = store.run_kernels(runs, gpu)
        # each run's kernels (after another flush: another history) and commit
        measures = [({bench for bench in kernels[run][1] if bench.l2_flush in flushes},
                     kernels[run][0] or f"run {run}") for run in runs]
        found = _dropped(measures, measured, commit, min_runs,
                         whole=len(runs) < wanted or wanted >= MISSING_WINDOW)
        if found is not None:
            break
        wanted = min(2 * wanted, MISSING_WINDOW)
    rows = []
    for bench, (count, voters, newer) in sorted(found.items(), key=lambda item: (
            encode_benchmark(item[0]))):
        before = (f"the {voters} recorded runs of this command before the {newer} newest, "
                  f"which lack it too (not yet a level: {min_runs} runs from "
                  f"{LEVEL_COMMITS} commits)" if newer
                  else f"the last {voters} recorded runs of this command")
        rows.append(HistoryRow(
            benchmark=bench, gpu_model=gpu, kind=Kind.VARIANT, current_median_s=None,
            history_median_s=None, band=None, runs=count, change=None, p_value=None,
            threshold=0.0, threshold_source="-", verdict=Verdict.MISSING,
            reason=f"measured by {count} of {before} and not in this file (renamed, removed "
                   "or skipped?); pass --allow-missing if that is meant"))
    return rows


def _dropped(runs: Sequence[tuple[set[Benchmark], str]], measured: set[Benchmark],
             commit: object, min_runs: int, whole: bool
             ) -> dict[Benchmark, tuple[int, int, int]] | None:
    """Return each kernel that most of SET_RUNS runs measured and measured lacks, with how
    many measured it, of how many, and how many newer runs lack it too; None where more
    runs must be read first (whole: runs, newest first, each its kernels and commit, are
    all there are).

    The newer runs that lack a kernel are passed over, the SET_RUNS before them voting,
    until they are a level, as a slowdown is: min_runs runs from LEVEL_COMMITS commits,
    this file one of them. `--record --check` records the runs that fail the gate too,
    and two pushes to a pull request that dropped a kernel outvoted the runs before, so
    that the third passed. (The runs recorded as failing it are not among runs: _missing.)"""
    mine = commit if isinstance(commit, str) else "this file"
    level = next((n for n in range(len(runs) + 1) if n + 1 >= min_runs
                  and len({c for _, c in runs[:n]} | {mine}) >= LEVEL_COMMITS), None)
    first: dict[Benchmark, int] = {}
    for index, (kernels, _) in enumerate(runs[:level]):
        for bench in kernels - measured:
            first.setdefault(bench, index)
    if not whole and (level is None or any(index + SET_RUNS > len(runs)
                                           for index in first.values())):
        return None  # a kernel may lie further back, or its voters do
    found = {}
    for bench, index in first.items():
        voters = [kernels for kernels, _ in runs[index:index + SET_RUNS]]
        count = sum(bench in kernels for kernels in voters)
        if 2 * count > len(voters):
            found[bench] = (count, len(voters), index)
    return found


MAX_WINDOW = 1000  # the most runs a window of re-runs reaches back over (a whole store's
# series is read, and a step looked for in it, for each benchmark)


def _history(store: Store, bench: Benchmark, gpu: str, last: int, own: int | None,
             min_runs: int) -> tuple[list[SeriesPoint], str]:
    """Return the runs a benchmark is judged against and a note on where they start: the
    last `last` runs of its current level (_level), not counting the runs of a newer level
    left out (the window reaches back past them: however often a slow job is re-run, the
    runs before it stay in view)."""
    extra = 0
    while True:
        window = store.reader(gpu, exclude_run=own).series(bench, last=last + extra)
        level, left_out, note = _level(window, min_runs)
        if len(window) < last + extra:  # the whole store
            return level[-last:], note
        if left_out > extra:
            extra = left_out
        elif len(commits(window)) < LEVEL_COMMITS and last + extra < MAX_WINDOW:
            # a window of re-runs of one or two commits (a slow one's, recorded as they
            # failed): its step lies further back, and they are no baseline of their own
            extra = min(max(2 * extra, last), MAX_WINDOW - last)
        else:
            return level[-last:], note


def _level(points: Sequence[SeriesPoint], min_runs: int
           ) -> tuple[list[SeriesPoint], int, str]:
    """Return the runs of the newest established level, how many newer runs were left out,
    and a note for the reason.

    A level after a step or drift is established once it holds min_runs runs from at least
    LEVEL_COMMITS commits. `--record --check` records every run, those that fail the gate
    too: re-runs of one slow commit are one measurement of one code, and must never become
    the baseline that lets the same slowdown pass. Until then the level before stays the
    history and the newer runs are left out.
    """
    if len(points) < 2 * 3:  # a step needs 3 runs a side
        return list(points), 0, ""
    detection = detect([p.median_s for p in points], [point_label(p) for p in points])
    changes = sorted([(s.index, f"the step at {s.label}") for s in detection.steps]
                     + [(d.end, f"the drift that ended at {d.last_label}")
                        for d in detection.drifts], reverse=True)
    end, left_note = len(points), ""
    for start, where in changes:
        if start >= end:
            continue  # inside runs already left out
        # the level it left: the runs since the change before it
        before = max((index for index, _ in changes if index < start), default=0)
        if established(_at_level(points[before:start], points[start:end]), min_runs):
            return list(points[start:end]), len(points) - end, f" since {where}{left_note}"
        if end == len(points):
            left = end - start
            left_note = (f" ({left} newer run{'s' if left != 1 else ''} since {where} left "
                         f"out: a new level needs {min_runs} runs from {LEVEL_COMMITS} "
                         "commits)")
        end = start
    return list(points[:end]), len(points) - end, left_note


FASTER_LEVEL_RUNS = 2  # the newest runs that show a speedup before a run is judged by it


@dataclass(frozen=True)
class _Newest:
    """The newest usable runs of a benchmark, and the commit of the run being judged."""

    runs: Sequence[SeriesPoint]
    commit: object  # the current file's git_commit (None where it names none)
    min_runs: int = DEFAULT_MIN_RUNS

    def faster_than(self, floor: float) -> list[SeriesPoint]:
        """Return the newest runs faster than floor (the history's fastest run but the
        outliers), back to the first that is not, where they are FASTER_LEVEL_RUNS or more:
        a speedup too recent to be a level (_level). A faster level is a stricter baseline,
        so it counts at once; one fast run may be a fluke. Runs of the current commit are
        passed over: re-runs of the code being judged are never its own baseline; and so
        are slower runs after the speedup until they are a level of their own (min_runs
        runs from LEVEL_COMMITS commits): `--record --check` records the runs that lost
        it as they fail, and the first of them let the next commit pass."""
        found: list[SeriesPoint] = []
        lost: list[SeriesPoint] = []  # slower runs newer than the speedup
        for point in reversed(self.runs):
            if self.commit is not None and point.commit == self.commit:
                continue
            if point.median_s >= floor:
                if found:
                    break  # the history before the speedup
                lost.append(point)
                if established(lost, self.min_runs):
                    return []  # the speed it lost is a level again
                continue
            found.append(point)
        return found[::-1] if len(found) >= FASTER_LEVEL_RUNS else []


def _p_value(median: float, center: float, spread: float, runs: int, own: float) -> float:
    """Return the two-sided p of a median this far from center, for a center known from
    `runs` runs of relative spread `spread`, and a median of standard error `own`."""
    scale = math.sqrt(math.log1p(spread) ** 2 * (1 + 1 / runs) + math.log1p(own) ** 2)
    return math.erfc(abs(math.log(median / center) / scale) / math.sqrt(2))


def _at_level(before: Sequence[SeriesPoint], level: Sequence[SeriesPoint]
              ) -> list[SeriesPoint]:
    """Return the runs of a level after a change that lie nearer its median than the
    level's before it: runs of other commits back at the old speed (a slow commit's
    re-runs between them) show the old level, and must not count as the new one's."""
    if not before or not level:
        return list(level)
    new = math.log(statistics.median(p.median_s for p in level))
    old = math.log(statistics.median(p.median_s for p in before))
    return [p for p in level
            if abs(math.log(p.median_s) - new) < abs(math.log(p.median_s) - old)]


def _judge(result: BenchmarkResult, bench: Benchmark, gpu: str,
           history: Sequence[SeriesPoint], latest: Sequence[SeriesPoint],
           threshold: float | None, alpha: float, min_runs: int,
           cap: float = DEFAULT_CAP, cap_from: str = "--max-threshold",
           note: str = "", newest: _Newest | None = None) -> tuple[HistoryRow, bool]:
    """Return the verdict on one benchmark by the rules of the module docstring, and
    whether it was judged on its samples at a slow clock; history
    is its current level (_history), note says where that starts, newest the runs that
    may show a newer, faster level (_Newest.faster_than). A kernel that newly makes the
    card throttle (at least half its samples at a slow clock, where none of the
    history's runs had more than half that share; a store from before version 7 recorded
    none: not judged so) is judged on its samples at the slow clock too, and
    the worse verdict stands, as in compare."""
    judged = _judge_samples(result, bench, gpu, history, latest, threshold, alpha, min_runs,
                            cap, cap_from, note, newest)
    shares = [p.slow_clock_share for p in history if p.slow_clock_share is not None]
    if shares and throttled_by_kernel(result, max(shares)):
        slow = _judge_samples(at_slow_clock(result), bench, gpu, history, latest, threshold,
                              alpha, min_runs, cap, cap_from, note, newest)
        if worse(slow.verdict, judged.verdict):
            return dataclasses.replace(slow, reason=slow.reason + throttled_text(
                result, f"the history's runs: at most {max(shares):.0%}")), True
    return judged, False


def _judge_samples(result: BenchmarkResult, bench: Benchmark, gpu: str,
                   history: Sequence[SeriesPoint], latest: Sequence[SeriesPoint],
                   threshold: float | None, alpha: float, min_runs: int,
                   cap: float = DEFAULT_CAP, cap_from: str = "--max-threshold",
                   note: str = "", newest: _Newest | None = None) -> HistoryRow:
    """Return _judge's verdict on the samples result holds."""
    medians = [p.median_s for p in history]
    if threshold is None:  # the judged commit's re-runs are no history of its threshold
        commit = newest.commit if newest is not None else None
        limit, source = history_threshold(history, commit, min_runs=min_runs, cap=cap,
                                          cap_from=cap_from)
    else:
        limit, source = threshold, "--threshold"
    m = result.median_s
    center = statistics.median(medians) if medians else None
    change = m / center - 1 if m and center else None
    band = ([p.median_s for p in without_outliers(history, center, min_runs)]
            if center is not None else [])
    template = HistoryRow(
        benchmark=bench, gpu_model=gpu, kind=result.kind, current_median_s=m,
        history_median_s=center, band=(min(band), max(band)) if band else None,
        runs=len(medians), change=change, p_value=None, threshold=limit,
        threshold_source=source, verdict=Verdict.NOISY, reason="")

    now = result.status
    was = latest[-1].status if latest else None
    # A fix is judged on its speed too, against the passing runs: the failing ones are no
    # history (usable_only), so a fix twice as slow is `slower`, not `fixed`.
    recovered = (was if now not in FAILING_STATUSES
                 and was in {s.value for s in FAILING_STATUSES} else None)

    def row(verdict: Verdict, reason: str, p: float | None = None) -> HistoryRow:
        if recovered is not None:
            fix = f"now {now.value} (last recorded {recovered})"
            verdict, reason = ((verdict, f"{fix}, but {reason}") if verdict in REGRESSION
                               else (Verdict.FIXED, f"{fix}; {reason}"))
        if result.kind is not Kind.VARIANT and verdict in REGRESSION:
            reason += ungated(result.kind.value)
        return dataclasses.replace(template, verdict=verdict, reason=reason, p_value=p)

    # A kernel the store holds as one, a vendor or reference row in this file (edited, or
    # an op file that changed its rows): gated as the kernel it was, as compare does.
    if result.kind is not Kind.VARIANT and any(
            p.kind == Kind.VARIANT.value for p in (*history, *latest)):
        return dataclasses.replace(
            template, kind=Kind.VARIANT, verdict=Verdict.FAILED,
            reason=f"recorded as a kernel, a {result.kind.value} row here: it must be "
                   "measured and verified as a kernel")
    if now in FAILING_STATUSES:
        was_text = f" (last recorded {was})" if was else ""
        return row(Verdict.FAILED, f"now {now.value}{was_text}: {_failure(result)}")
    if (len(result.samples_s) < MIN_SAMPLES and change is not None and exceeds(change, limit)
            and len(medians) >= min_runs):  # a large slowdown too few samples can judge
        return row(Verdict.UNTESTABLE, f"{format_change(change, limit)} but "
                                       f"{len(result.samples_s)} samples are too few to judge "
                                       f"(at least {MIN_SAMPLES})")
    if m is None or len(result.samples_s) < MIN_SAMPLES:
        return row(Verdict.NOISY, f"too few samples to judge ({len(result.samples_s)}; at "
                                  f"least {MIN_SAMPLES})")
    if len(medians) < min_runs or center is None or change is None:
        where = f" on {gpu}" if gpu else ""
        return row(Verdict.NOISY, f"too little history: {len(medians)} "
                                  f"run{'s' if len(medians) != 1 else ''}{where}{note} "
                                  f"(at least {min_runs} to judge; not gated)")
    # The runs' spread about their middle, or how much a run's median moves from the run
    # before (auto's threshold's), the smaller: a drift that fills the window is no step
    # nor drift within it, and its slope, read as spread, let a step on top of it pass.
    # Both estimate one run's noise; a current median must lie outside the band too.
    spread = max(min(relative_spread(medians), between_run_spread(medians)), NOISE_FLOOR)
    precision = pooled_precision(result.samples_s, result.round_medians_s)
    own = precision / 1.96  # the current median's standard error
    p = _p_value(m, center, spread, len(medians), own)
    outside = m > max(band) or m < min(band)
    significant = p < alpha and outside
    left = len(medians) - len(band)
    test = (f"{p_test_text(p, alpha)}, "
            f"{'outside' if outside else 'inside'} the {len(medians)} runs"
            + (f" ({left} outlier{'s' if left != 1 else ''} left out)" if left else "")
            + note)
    shift, limit_text = format_change(change, limit), format_percent(limit)
    if significant and exceeds(change, limit):
        return row(Verdict.SLOWER, f"{shift} exceeds the {limit_text} threshold, {test}", p)
    faster = newest.faster_than(min(band)) if newest is not None else []
    if faster:
        recent = [point.median_s for point in faster]
        base = statistics.median(recent)
        lost, p_lost = m / base - 1, _p_value(m, base, spread, len(recent), own)
        if exceeds(lost, limit) and p_lost < alpha and m > max(recent):
            since = (f"the {len(recent)} newest runs (since {point_label(faster[0])}, "
                     f"{format_change(base / center - 1)} from the history's median: a speedup "
                     "too recent to be a level)")
            return dataclasses.replace(
                row(Verdict.SLOWER, f"{format_change(lost, limit)} against {since} exceeds the "
                                    f"{limit_text} threshold, {p_test_text(p_lost, alpha)}, "
                                    "outside them", p_lost),
                history_median_s=base, band=(min(recent), max(recent)), runs=len(recent),
                change=lost)
    if significant and exceeds(-change, limit):
        return row(Verdict.FASTER, f"{shift} exceeds the {limit_text} threshold, {test}", p)
    if exceeds(abs(change), limit):
        return row(Verdict.NOISY, f"{shift} but not significant against the history's "
                                  f"run-to-run spread ({test})", p)
    if precision > limit / 2:
        return row(Verdict.NOISY, f"current median known only to ±{precision:.1%}, too spread "
                                  f"to resolve a {limit_text} change", p)
    if significant:
        return row(Verdict.SAME, f"{shift} is significant ({test}) but within ±{limit_text}", p)
    # "within the history (..., outside the 5 runs)" read as a contradiction: the median
    # may lie outside the runs' band and still not differ significantly from them
    return row(Verdict.SAME, f"{'no significant change' if outside else 'within the history'} "
                             f"({test})", p)


def _failure(result: BenchmarkResult) -> str:
    """Say briefly why a benchmark is not verified."""
    if result.suspect:
        return result.suspect
    if result.error is not None and result.error.strip():
        first = result.error.strip().splitlines()[0]
        return first if len(first) <= 120 else first[:117] + "..."
    v = result.verification
    if v is None:
        return "not verified"
    return f"{v.bad_elements} of {v.total_elements} elements wrong ({v.criterion})"
