"""What makes a results file one run: its measurements, not its text.

Raw samples taken on a GPU never repeat to the last bit, so the rows with their samples
identify a run whatever else a copy of its file changes: indentation, row order, a
warning or a note edited away, metadata. compare refuses two files of one run, and the
history store records a run once, by this digest.
"""

from __future__ import annotations

import hashlib
import json

from cudabench.results.model import BenchmarkResult, ResultsFile

# A row's samples repeat another run's, as a multiset, only when copied: unless they take
# so few values that two runs may draw the same (the timer counts in 32 ns steps, and a
# steady small kernel's 20 samples can take 3 of them). At 8 distinct values or more the
# chance is negligible.
COPIED_MIN_DISTINCT = 8


def measurements_digest(results: ResultsFile) -> str | None:
    """Return the SHA-256 of the file's measured rows (each benchmark, its status, its GPU
    and its raw samples, in a fixed order), or None when no row holds samples (nothing
    measured: no run to tell apart)."""
    rows = sorted(
        json.dumps([repr(result.key), result.l2_flush, result.kind.value, result.status.value,
                    result.device.name if result.device else None,
                    result.device.uuid if result.device else None,
                    [float(s).hex() for s in result.samples_s]])
        for result in results.benchmarks if result.samples_s)
    if not rows:
        return None
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()


def same_run(first: ResultsFile, second: ResultsFile) -> bool:
    """Return whether two loaded files hold one run: the same measurements, or, where the
    second measured nothing (every row a SKIP), the same rows."""
    digest = measurements_digest(second)
    if digest is None:
        return bool(second.benchmarks) and first.benchmarks == second.benchmarks
    return measurements_digest(first) == digest


def copied_row(first: ResultsFile, second: ResultsFile) -> BenchmarkResult | None:
    """Return the first row of second whose raw samples are a row of first's, the same
    benchmark on the same GPU, in any order (one row pasted from the baseline over a
    slowed kernel's, or its samples reversed), where they are telling enough
    (COPIED_MIN_DISTINCT); else None. None for a search's file whose rows may come from
    the tuning cache."""
    def identity(result: BenchmarkResult) -> tuple[object, ...]:
        return (result.key, result.l2_flush,
                result.device.identity if result.device else None)

    if may_hold_cached_rows(second):
        return None
    earlier = {identity(r): sorted(r.samples_s) for r in first.benchmarks if r.samples_s}
    for result in second.benchmarks:
        if len(set(result.samples_s)) >= COPIED_MIN_DISTINCT and \
                earlier.get(identity(result)) == sorted(result.samples_s):
            return result
    return None


def searched(results: ResultsFile) -> bool:
    """Return whether a file is a --best search's (--strategy or --budget): configurations
    measured once each, not a run of a suite's benchmarks."""
    command = results.metadata.get("command")
    words = {str(word).split("=", 1)[0] for word in command} if isinstance(command, list) \
        else set()
    return bool(words & {"--strategy", "--budget"})


def may_hold_cached_rows(results: ResultsFile) -> bool:
    """Return whether a file's command searched with the tuning cache on (--strategy or
    --budget, without --no-tune-cache): its rows may be an earlier search's, samples and
    all, written again (cudabench/tuning/cache.py), not copied by hand."""
    command = results.metadata.get("command")
    return searched(results) and "--no-tune-cache" not in (command or ())
