"""Compare two results files benchmark by benchmark: pure logic, no rendering, no CUDA.

Benchmarks pair on BenchmarkResult.key: (op, variant, sorted params, shape, dtype, hot).
Benchmarks only in the current file are listed as added. A kernel or vendor row of the
baseline that the current file lacks, or holds only as SKIP, is `missing`: a gate that passed
because a benchmark vanished (renamed, re-parameterised, its file deleted, a crashed run)
would pass anything, so missing fails the gate unless the user says `allow_missing` (then
it is listed as removed). A current file the writer marked incomplete fails the gate too.

Verdict of a pair, first rule that applies:

- `failed`: the current run is FAIL or ERROR (whatever the baseline was: a run that is not
  verified cannot pass a gate, even if it already failed before), or a kernel of the
  baseline is a reference or vendor row in the current file (not gated, not verified as a
  kernel). A regression.
- `fixed`: the baseline was FAIL, ERROR, TIMEOUT or SUSPECT and the current run passes
  (PASS or REF). A FAIL baseline was timed, so the fix's speed is judged by the rules
  below against it: `slower` or `untestable` stay regressions (a fix that costs 2x is
  shown, not waved through); the other rows have no timing to judge against.
- `untestable`: slower by more than the threshold, but with so few samples that the rank
  test could not reach p < alpha whatever they were (6 against 6 cannot reach 0.001): a
  large slowdown that cannot be judged fails the gate rather than passing unseen. With
  such samples and no large slowdown, `noisy`.
- With medians m0 (baseline) and m1 (current): change = m1 / m0 - 1, and p the two-sided
  Mann-Whitney U p-value of the raw samples; a change is significant when p < alpha.
- `slower`: significant and change > threshold. A regression, for kernels: a slower
  reference row (the device-to-device copy) means the machine changed, and is not gated.
- `faster`: significant and change < -threshold.
- `noisy`: |change| > threshold but not significant, or either side's median is known only
  to more than threshold / 2 (95% half-width, stats.pooled_precision: of the samples, or of
  the rounds' medians where --rounds pooled them and they agree less): the samples are
  too spread to resolve a change of threshold size.
- `same`: otherwise (no significant change, or a significant one within the threshold).

Samples a run took below SLOW_CLOCK of the maximum SM clock are set aside, as the machine's
accident, and a note says how many. Where at least half the current run's samples ran at
a slow clock (set aside, or kept where too few would remain without them) and at most half
that share of the baseline's, the kernel made the card throttle: the
current row is judged on its samples at the slow clock too (verdicts.throttled_by_kernel),
and where that verdict is the worse, it stands, and its reason says so.

A change must pass both tests because they guard against different mistakes: the
threshold ignores real but unimportant shifts (clocks differ by a percent from run to run,
and with hundreds of samples that is significant), and the significance test ignores large
changes of the median that noise alone produces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from cudabench.analysis.verdicts import (
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    MAX_THRESHOLD,
    MIN_SAMPLES,
    REGRESSION,
    Comparison,
    ComparisonRow,
    Verdict,
    at_slow_clock,
    set_aside_note,
    slow_clock_text,
    throttled_by_kernel,
    throttled_text,
    ungated,
    worse,
)
from cudabench.common.stats import mann_whitney_u, pooled_precision, u_p_value
from cudabench.common.units import (
    exceeds,
    format_change,
    format_p_value,
    format_percent,
    p_test_text,
    params_text,
    shape_text,
)
from cudabench.errors import ResultsFileError, UsageError
from cudabench.results.model import (
    FAILING_STATUSES,
    BenchmarkResult,
    DeviceInfo,
    Kind,
    ResultsFile,
    Status,
)

ThresholdFor = Callable[[BenchmarkResult], tuple[float, str]]  # row -> (threshold, source)
PowerFor = Callable[[float, BenchmarkResult, BenchmarkResult], float]  # -> detectable change


def compare(baseline: ResultsFile, current: ResultsFile, threshold: float = DEFAULT_THRESHOLD,
            alpha: float = DEFAULT_ALPHA, allow_different_gpu: bool = False,
            threshold_for: ThresholdFor | None = None, power_for: PowerFor | None = None,
            allow_missing: bool = False) -> Comparison:
    """Pair the benchmarks of two results files and judge each pair's change.

    threshold_for, when given, sets each row's threshold (--threshold auto: from history);
    threshold is then the floor it falls back to. power_for fills each row's detectable
    change (--power). allow_missing lists the baseline's benchmarks that the current file
    lacks as removed instead of failing them as missing.
    """
    if not 0 < threshold < MAX_THRESHOLD:
        raise UsageError(f"--threshold {threshold!r}: must be above 0 and below {MAX_THRESHOLD}")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha!r}: must be between 0 and 1 (exclusive)")
    models = _models(baseline), _models(current)
    if (models[0] and models[1] and not models[0] & models[1]) and not allow_different_gpu:
        raise UsageError(
            f"{baseline.path} was measured on {baseline.gpu_name or '(no GPU recorded)'!r} but "
            f"{current.path} on {current.gpu_name or '(no GPU recorded)'!r}: timings of "
            "different GPU models are not comparable; pass --allow-different-gpu to compare "
            "them anyway"
        )
    if not allow_different_gpu:
        _refuse_unknown_gpu((baseline, current), models)
    by_model = not allow_different_gpu  # pair on the GPU model too: never across models
    before, after = _index(baseline), _index(current)
    several = len({r.device.identity for r in current.benchmarks if r.device}) > 1
    rows, added_rows, removed_rows, judged = [], [], [], []
    for key in [*before, *(key for key in after if key not in before)]:
        pairs, unpaired_new, unpaired_old = _pairs(before.get(key, []), after.get(key, []),
                                                   by_model)
        # a kernel the baseline lacks (new, renamed, or SKIP there) that fails verification
        # fails the gate: listed as added it passed, wrong results and all
        rows += [_new_and_failing(new, several) for new in unpaired_new
                 if new.kind is Kind.VARIANT and new.status in FAILING_STATUSES]
        added_rows += [new for new in unpaired_new
                       if not (new.kind is Kind.VARIANT and new.status in FAILING_STATUSES)]
        removed_rows += unpaired_old
        for old, new in pairs:
            # hot rows pair with hot rows (hot is in the key), which no flush precedes: any
            # difference is a cold row's, no flush at all (a warm L2) included
            if old.l2_flush != new.l2_flush:
                raise _flush_mismatch(baseline, current, old, new)
            limit, source = (threshold_for(new) if threshold_for is not None
                             else (threshold, "--threshold"))
            row, at_slow = _compare_pair(old, new, limit, alpha)
            if not at_slow:
                judged.append(new)  # its set-aside samples are noted, not judged
            detectable = power_for(limit, old, new) if power_for is not None else None
            rows.append(dataclasses.replace(
                row, threshold=limit, threshold_source=source, detectable=detectable,
                device=f"GPU {new.device.index}" if several and new.device else ""))
    if not allow_missing:
        skipped = {r.key: r for r in current.benchmarks if r.status is Status.SKIP}

        def gone(old: BenchmarkResult) -> bool:  # a kernel the current run dropped
            # cuBLAS and copy rows never fail the job, gone or not: a runner that lost CuPy
            # failed it (`missing`) where a wrong cuBLAS result did not. A row of a GPU
            # model the current file has no GPU of was never its to run: listed as removed,
            # with the note that says so, never `missing`. A current file that names no GPU
            # at all (a run stopped before its first row) lacks no model: it ran nothing.
            lacked = (by_model and bool(models[1]) and old.device is not None
                      and old.device.name not in models[1])
            return old.kind is Kind.VARIANT and not lacked and not moved(old)

        def moved(old: BenchmarkResult) -> bool:  # ran now, on another of the host's models
            # (--devices all hands work to whichever GPU is free): not compared, not gone
            return by_model and any(new.status is not Status.SKIP and new.device is not None
                                    for new in after.get(old.key, ()))

        rows += [_missing(old, skipped.get(old.key), several) for old in removed_rows
                 if gone(old)]
        removed_rows = [old for old in removed_rows if not gone(old)]
    added, removed = tuple(added_rows), tuple(removed_rows)
    between_models = _moved_pairs(removed, added)
    return Comparison(
        rows=tuple(rows),
        added=added,
        removed=removed,
        threshold=threshold,
        alpha=alpha,
        baseline_path=baseline.path,
        current_path=current.path,
        baseline_gpu=baseline.gpu_name,
        current_gpu=current.gpu_name,
        setting_changes=setting_changes(baseline, current),
        notes=(_incomplete(baseline)
               # a benchmark that moved between models is said once, by _moved_notes
               + (_model_notes(models[0], models[1],
                               tuple(new for new in added
                                     if not any(new is n for _, n in between_models)),
                               tuple(old for old in removed
                                     if not any(old is o for o, _ in between_models)))
                  if by_model and models[1] else ())
               + _moved_notes(between_models)
               + _unjudged_slowdowns(rows) + _set_aside(judged)),
        current_incomplete=current.metadata.get("complete") is False,
        gpus_named=several,
    )


def _incomplete(baseline: ResultsFile) -> tuple[str, ...]:
    """Return a note where the baseline's run stopped early (the gate's every output says
    it: the file, the API's comparison, the pytest plugin's, a job summary)."""
    if baseline.metadata.get("complete") is not False:
        return ()
    return (f"the baseline {baseline.path} is incomplete (its run stopped early): the "
            "benchmarks it lacks cannot be compared",)


def _set_aside(rows: list[BenchmarkResult]) -> tuple[str, ...]:
    """Return a note per current kernel judged on its kept samples whose run set some
    aside at a slow clock (a kernel judged at its slow clock says so in its reason)."""
    return tuple(set_aside_note(r) for r in rows
                 if r.kind is Kind.VARIANT and r.slow_clock_samples_s)


def _unjudged_slowdowns(rows: list[ComparisonRow]) -> tuple[str, ...]:
    """Return a note per kernel slower beyond its threshold that the rank test could not
    confirm (`noisy`): the gate passes it, and the reader should know what it let through
    and how to judge it (more samples give the test its power)."""
    return tuple(
        f"{row.op}/{row.variant} {params_text(row.params)} {shape_text(row.shape)} "
        f"{row.dtype}".replace(" - ", " ")
        + f": {format_change(row.change, row.threshold)} but not shown significant, so the "
        "gate passes it; measure more samples (--min-samples, --max-time) to judge it"
        for row in rows if row.kind is Kind.VARIANT and row.verdict is Verdict.NOISY
        and row.change is not None and exceeds(row.change, row.threshold))


def _flush_mismatch(baseline: ResultsFile, current: ResultsFile, old: BenchmarkResult,
                    new: BenchmarkResult) -> UsageError:
    """The error for a pair whose cold samples followed different L2 flushes: a memset
    flush charges each sample the write-back of its dirty lines, a clean one does not, so
    the two files' times differ by the method (5% on an H100's read-only dot), not the
    kernels."""
    def how(method: str) -> str:
        return f"by {method}" if method else "not at all (a warm L2)"

    return UsageError(
        f"{baseline.path} flushed the L2 {how(old.l2_flush)} and {current.path} "
        f"{how(new.l2_flush)} ({old.op}/{old.variant} {shape_text(old.shape)} {old.dtype}, and "
        "maybe others): cold times after the two flushes differ; measure both sides with "
        "the same flush (a fresh baseline, or --l2-flush, a suite's l2_flush, the API's "
        "l2_flush=); files written before cudabench recorded the flush count as memset")


def _missing(old: BenchmarkResult, skipped: BenchmarkResult | None,
             several: bool = False) -> ComparisonRow:
    """Return the row of a baseline benchmark the current file lacks or only skipped (its
    GPU named where the current file ran on several, as the other rows are)."""
    if skipped is not None:
        reason = f"now SKIP (was {old.status.value}): {skipped.skipped}"
    else:
        reason = (f"not in the current file (was {old.status.value}): renamed, "
                  "re-parameterised, deleted or not run; --allow-missing accepts that")
    return ComparisonRow(
        op=old.op, variant=old.variant, params=dict(old.params), shape=tuple(old.shape),
        dtype=old.dtype, hot=old.hot, baseline_median_s=old.median_s, current_median_s=None,
        change=None, p_value=None, verdict=Verdict.MISSING, reason=reason, kind=old.kind,
        threshold_source="missing",
        device=f"GPU {old.device.index}" if several and old.device else "")


def _new_and_failing(new: BenchmarkResult, several: bool = False) -> ComparisonRow:
    """Return the row of a current kernel the baseline has no row of, which fails
    verification (FAIL, ERROR, TIMEOUT, SUSPECT): `failed`, whatever the baseline held."""
    return ComparisonRow(
        op=new.op, variant=new.variant, params=dict(new.params), shape=tuple(new.shape),
        dtype=new.dtype, hot=new.hot, baseline_median_s=None, current_median_s=new.median_s,
        change=None, p_value=None, verdict=Verdict.FAILED,
        reason=(f"{new.status.value}, and not in the baseline (new, renamed or re-"
                f"parameterised, or not run there): {failure_text(new)}"),
        kind=new.kind, threshold_source="new",
        device=f"GPU {new.device.index}" if several and new.device else "")


def reachable_p(n1: int, n2: int) -> float:
    """Return the smallest two-sided p-value mann_whitney_u can give for n1 and n2 samples
    (every one of one side above every one of the other, no ties)."""
    return u_p_value(n1 * n2, n1, n2) if n1 >= 1 and n2 >= 1 else 1.0


def _models(results: ResultsFile) -> set[str]:
    """Return the GPU models the file's benchmarks were measured on (the file's devices
    where its rows name none: rows stripped of their GPU must not escape the check)."""
    return ({r.device.name for r in results.benchmarks if r.device is not None}
            or {d.name for d in results.devices})


def _refuse_unknown_gpu(files: tuple[ResultsFile, ResultsFile],
                        models: tuple[set[str], set[str]]) -> None:
    """Refuse a file whose measured rows record no GPU at all (`"devices": []`, rows with
    `"device": null`) against one measured on a GPU model: its rows would pair with any
    model's, and the different-GPU refusal would not see them."""
    for side in (0, 1):
        this, other, mine, theirs = files[side], files[1 - side], models[side], models[1 - side]
        if not mine and theirs and any(r.samples_s for r in this.benchmarks):
            raise UsageError(
                f"{this.path} records no GPU for its measured rows but {other.path} was "
                f"measured on {', '.join(sorted(theirs))!r}: timings of an unknown GPU are not "
                "comparable; pass --allow-different-gpu to compare them anyway")


def _model_notes(before: set[str], after: set[str], added: tuple[BenchmarkResult, ...],
                 removed: tuple[BenchmarkResult, ...]) -> tuple[str, ...]:
    """Say which GPU models only one file has: their rows are listed, never paired."""
    notes = []
    for model in sorted(after - before):
        count = sum(1 for r in added if r.device is not None and r.device.name == model)
        if count:
            notes.append(f"{count} benchmark(s) of the current file ran on {model}, which the "
                         "baseline lacks: listed as added, not compared")
    for model in sorted(before - after):
        count = sum(1 for r in removed if r.device is not None and r.device.name == model)
        if count:
            notes.append(f"{count} benchmark(s) of the baseline ran on {model}, which the "
                         "current file lacks: listed as removed, not compared")
    return tuple(notes)


def _moved_pairs(removed: tuple[BenchmarkResult, ...], added: tuple[BenchmarkResult, ...]
                 ) -> list[tuple[BenchmarkResult, BenchmarkResult]]:
    """Return each baseline row left unpaired with the current row, unpaired too, of the
    same benchmark on another GPU model: a benchmark that moved between models."""
    pairs = []
    for old, news in same_key(removed, added):
        new = next((new for new in news if new.device is not None and old.device is not None
                    and new.device.name != old.device.name), None)
        if new is not None:
            pairs.append((old, new))
    return pairs


def same_key(olds: Sequence[BenchmarkResult], news: Sequence[BenchmarkResult]
             ) -> list[tuple[BenchmarkResult, list[BenchmarkResult]]]:
    """Return each old row with the new rows of its benchmark (its key), in their orders:
    each key built once, so that thousands of unpaired rows are not compared pair by pair
    (3000 a side took 38 s)."""
    by_key: dict[tuple[object, ...], list[BenchmarkResult]] = {}
    for new in news:
        by_key.setdefault(new.key, []).append(new)
    return [(old, by_key.get(old.key, [])) for old in olds]


def _moved_notes(moved: list[tuple[BenchmarkResult, BenchmarkResult]]) -> tuple[str, ...]:
    """Say which benchmarks of the baseline ran on another GPU model in the current file:
    listed, not compared, and not missing."""
    if not moved:
        return ()
    old, new = moved[0]
    assert old.device is not None and new.device is not None
    return (f"{len(moved)} benchmark(s) of the baseline ran on another GPU model in the "
            f"current file ({old.op}/{old.variant}: {old.device.name}, now "
            f"{new.device.name}): listed as removed, not compared; give --devices the GPUs "
            "of one model to keep each benchmark on it",)


def _same_model(old: BenchmarkResult, new: BenchmarkResult, by_model: bool) -> bool:
    """Return whether two rows may pair: the same GPU model, or a row that names no GPU
    (an ERROR row of a GPU or task that never started pairs with whatever was measured)."""
    if not by_model or old.device is None or new.device is None:
        return True
    return old.device.name == new.device.name


def _pairs(olds: list[BenchmarkResult], news: list[BenchmarkResult], by_model: bool
           ) -> tuple[list[tuple[BenchmarkResult, BenchmarkResult]], list[BenchmarkResult],
                      list[BenchmarkResult]]:
    """Pair one benchmark's rows across files: (pairs, current rows with no baseline of
    their GPU model, baseline rows no current row could pair with).

    A current row pairs with the baseline row of the same GPU, else with a baseline row of
    its model not yet paired, else with the first of its model: a baseline measured on one
    GPU pairs with the benchmark on every GPU of a multi-GPU run.
    """
    pairs, unpaired_new, used = [], [], set()
    for new in news:
        candidates = [old for old in olds if _same_model(old, new, by_model)]
        if not candidates:
            unpaired_new.append(new)
            continue
        same = [old for old in candidates if old.device and new.device
                and old.device.identity == new.device.identity]
        fresh = [old for old in candidates if id(old) not in used]
        old = (same or fresh or candidates)[0]
        used.add(id(old))
        pairs.append((old, new))
    unpaired_old = [old for old in olds if id(old) not in used
                    and not any(_same_model(old, new, by_model) for new in news)]
    return pairs, unpaired_new, unpaired_old


SETTING_NAMES = {
    "power_limit_w": "power limit (W)", "ecc_enabled": "ECC", "mig_enabled": "MIG mode",
    "persistence_enabled": "persistence mode", "max_sm_clock_mhz": "max SM clock (MHz)",
    "max_memory_clock_mhz": "max memory clock (MHz)",
}


def setting_changes(baseline: ResultsFile, current: ResultsFile) -> tuple[str, ...]:
    """Return each card setting or driver fact that differs between the two files."""
    return card_changes(baseline.devices, current.devices, several=len(current.devices) > 1)


def card_changes(olds: Sequence[DeviceInfo], news: Sequence[DeviceInfo],
                 several: bool = False) -> tuple[str, ...]:
    """Return each card setting or driver fact that differs between two runs' cards, as
    "driver: 13.0 -> 12.0" (compare's and history check's words; several: each named by
    its GPU index, the current run having more than one card).

    Each card pairs with the same card (its UUID, else its name, bus and index), else with
    the first unpaired card of its model, else of any: the writer lists a run's cards in no
    fixed order, so pairs in file order would report two settings swapped between cards
    that never changed. A setting either side does not record is not compared.
    """
    changes = []
    for before, after in _card_pairs(olds, news):
        facts: list[tuple[str, object, object]] = [
            ("driver", before.driver_version, after.driver_version),
            ("CUDA", before.cuda_version, after.cuda_version)]
        facts += [(label, before.settings.get(key), after.settings.get(key))
                  for key, label in SETTING_NAMES.items()]
        where = f" on GPU {after.index}" if several else ""
        changes += [f"{label}{where}: {old} -> {new}" for label, old, new in facts
                    if old is not None and new is not None and old != new]
    return tuple(changes)


def _card_pairs(olds: Sequence[DeviceInfo], news: Sequence[DeviceInfo]
                ) -> list[tuple[DeviceInfo, DeviceInfo]]:
    """Pair each current card with a baseline card (card_changes' rule), in the current
    cards' order: every same card first, then by name, then any (card by card, an earlier
    card's fallback took the card a later one is)."""
    paired: dict[int, tuple[DeviceInfo, DeviceInfo]] = {}
    free = list(olds)
    rules: tuple[Callable[[DeviceInfo, DeviceInfo], bool], ...] = (
        lambda old, new: old.identity == new.identity,
        lambda old, new: old.name == new.name,
        lambda old, new: True)
    for alike in rules:
        for at, new in enumerate(news):
            match = None if at in paired else next(
                (old for old in free if alike(old, new)), None)
            if match is not None:
                free = [old for old in free if old is not match]  # == ignores settings
                paired[at] = (match, new)
    return [paired[at] for at in sorted(paired)]


def _index(results: ResultsFile) -> dict[tuple[object, ...], list[BenchmarkResult]]:
    """Map each benchmark to its rows, one per GPU, in file order; a benchmark twice on
    one GPU is an error."""
    twice = twice_on_one_gpu(results.benchmarks)
    if twice is not None:
        raise ResultsFileError(f"{results.path}: benchmarks[{twice}]: "
                               f"{benchmark_text(results.benchmarks[twice])} appears twice "
                               "on one GPU; a results file holds each benchmark once per GPU, "
                               "so it cannot be paired")
    index: dict[tuple[object, ...], list[BenchmarkResult]] = {}
    for result in results.benchmarks:
        if result.status is not Status.SKIP:  # not run: nothing to compare (added or removed)
            index.setdefault(result.key, []).append(result)
    return index


def twice_on_one_gpu(rows: Sequence[BenchmarkResult]) -> int | None:
    """Return the index of the first row that repeats a benchmark measured on the same GPU
    (two runs' rows joined, say), or None; rows never run (SKIP, no samples) may repeat."""
    seen: set[tuple[object, ...]] = set()
    for i, result in enumerate(rows):
        if result.status is Status.SKIP or (result.device is None and not result.samples_s):
            continue
        once = (result.key, result.device.identity if result.device else None)
        if once in seen:
            return i
        seen.add(once)
    return None


def benchmark_text(result: BenchmarkResult) -> str:
    """Name a benchmark as an error does: op/variant (hot), params, shape and type."""
    return (f"{result.op}/{result.variant}{' (hot)' if result.hot else ''} "
            f"{params_text(result.params)} {shape_text(result.shape)} {result.dtype}")


def _compare_pair(before: BenchmarkResult, after: BenchmarkResult, threshold: float,
                  alpha: float) -> tuple[ComparisonRow, bool]:
    """Judge one pair by the rules of the module docstring, and say whether by the
    current row's samples at a slow clock: a kernel that made the card throttle is judged
    on those too, where that is the worse verdict (so set-aside samples, forged or not,
    make no verdict better)."""
    row = _judge_pair(before, after, threshold, alpha)
    if throttled_by_kernel(after, before.slow_clock_share):
        slow = _judge_pair(before, at_slow_clock(after), threshold, alpha)
        if worse(slow.verdict, row.verdict):
            return dataclasses.replace(slow, reason=slow.reason + throttled_text(
                after, f"the baseline's: {slow_clock_text(before)}")), True
    return row, False


def _judge_pair(before: BenchmarkResult, after: BenchmarkResult, threshold: float,
                alpha: float) -> ComparisonRow:
    """Judge one pair on the samples each row holds."""
    m0, m1 = before.median_s, after.median_s
    change = m1 / m0 - 1 if m0 and m1 else None
    enough = min(len(before.samples_s), len(after.samples_s)) >= MIN_SAMPLES
    p = mann_whitney_u(before.samples_s, after.samples_s) if enough else None
    verdict, reason = _verdict(before, after, change, p, threshold, alpha)
    # A kernel of the baseline stays a gated kernel: one relabelled a reference or vendor
    # row (which are not gated, and a reference is not verified) fails.
    kind = Kind.VARIANT if before.kind is Kind.VARIANT else after.kind
    if kind is not Kind.VARIANT and verdict in REGRESSION:
        reason += ungated(kind.value)
    if before.kind is Kind.VARIANT and after.kind is not Kind.VARIANT:
        verdict = Verdict.FAILED
        reason = (f"a kernel in the baseline, a {after.kind.value} row here: it must be "
                  "measured and verified as a kernel")
    return ComparisonRow(
        op=after.op, variant=after.variant, params=dict(after.params), shape=tuple(after.shape),
        dtype=after.dtype, hot=after.hot, baseline_median_s=m0, current_median_s=m1,
        change=change, p_value=p, verdict=verdict, reason=reason, kind=kind,
    )


def _verdict(before: BenchmarkResult, after: BenchmarkResult, change: float | None,
             p: float | None, threshold: float, alpha: float) -> tuple[Verdict, str]:
    """Return the verdict and a short sentence saying why."""
    was, now = before.status, after.status
    if now in FAILING_STATUSES:
        why = failure_text(after)
        if was in FAILING_STATUSES:
            return Verdict.FAILED, f"still {now.value} (was {was.value}): {why}"
        return Verdict.FAILED, f"now {now.value} (was {was.value}): {why}"
    if was in FAILING_STATUSES:
        return _fixed(before, after, change, p, threshold, alpha)
    return _timing_verdict(before, after, change, p, threshold, alpha)


def _fixed(before: BenchmarkResult, after: BenchmarkResult, change: float | None,
           p: float | None, threshold: float, alpha: float) -> tuple[Verdict, str]:
    """Return the verdict on a kernel the baseline failed and the current run passes.

    A FAIL row was timed as any other (its result was wrong, not its clock): a fix is
    judged on its speed against it, so a fix twice as slow is `slower`, not `fixed`. A
    SUSPECT row's timing is not believed and an ERROR or TIMEOUT row has none: `fixed`.
    """
    fix = f"now {after.status.value} (was {before.status.value})"
    if before.status is Status.SUSPECT:  # timed, but faster than the GPU allows
        return Verdict.FIXED, f"{fix}; the baseline's timing is not believed, so its speed " \
            "is not judged"
    if before.status is not Status.FAIL or len(before.samples_s) < MIN_SAMPLES:
        return Verdict.FIXED, f"{fix}; the baseline has no timing to judge its speed against"
    verdict, reason = _timing_verdict(before, after, change, p, threshold, alpha)
    if verdict in REGRESSION:
        return verdict, f"{fix}, but {reason}"
    return Verdict.FIXED, f"{fix}; {reason}"


def _timing_verdict(before: BenchmarkResult, after: BenchmarkResult, change: float | None,
                    p: float | None, threshold: float, alpha: float) -> tuple[Verdict, str]:
    """Return the verdict on two passing rows' timings, and why (the docstring's rules
    from `untestable` on)."""
    counts = len(before.samples_s), len(after.samples_s)
    floor = reachable_p(*counts) if min(counts) >= MIN_SAMPLES else 1.0
    if change is not None and floor >= alpha:
        few = (f"{counts[0]} and {counts[1]} samples can never reach p < {alpha:g} "
               f"(at best p={format_p_value(floor, alpha)})")
        if exceeds(change, threshold):
            return Verdict.UNTESTABLE, (f"{format_change(change, threshold)} but {few}: too "
                                        "few samples to judge; take more samples")
        return Verdict.NOISY, f"too few samples to test: {few}"
    if p is None or change is None:
        return Verdict.NOISY, (f"too few samples to test ({counts[0]} and {counts[1]}; at "
                               f"least {MIN_SAMPLES} a side)")
    significant = p < alpha
    test = p_test_text(p, alpha)
    shift, limit = format_change(change, threshold), format_percent(threshold)
    if significant and exceeds(change, threshold):
        return Verdict.SLOWER, f"{shift} exceeds the {limit} threshold, {test}"
    if significant and exceeds(-change, threshold):
        return Verdict.FASTER, f"{shift} exceeds the {limit} threshold, {test}"
    if exceeds(abs(change), threshold):
        return Verdict.NOISY, f"{shift} but not significant ({test})"
    precision, side = max((pooled_precision(before.samples_s, before.round_medians_s),
                           "baseline"),
                          (pooled_precision(after.samples_s, after.round_medians_s), "current"))
    if precision > threshold / 2:
        return Verdict.NOISY, (f"{side} median known only to ±{precision:.1%}, too spread to "
                         f"resolve a {limit} change")
    if significant:
        return Verdict.SAME, f"{shift} is significant ({test}) but within ±{limit}"
    return Verdict.SAME, "no significant change"


def failure_text(result: BenchmarkResult) -> str:
    """Say briefly why a benchmark is not verified."""
    if result.error is not None:
        return _brief(result.error) or "error"
    if result.suspect and result.status is Status.SUSPECT:  # verified, but faster than the
        return _brief(result.suspect)  # GPU allows: "0 elements wrong" said nothing
    v = result.verification
    if v is None:
        return "not verified"
    return f"{v.bad_elements} of {v.total_elements} elements wrong ({v.criterion})"


def _brief(text: str) -> str:
    """Return a reason's first line, at most 120 characters."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 120 else first[:117] + "..."
