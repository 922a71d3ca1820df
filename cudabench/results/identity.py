"""What makes a results file one run: its measurements, not its text.

Raw samples taken on a GPU never repeat to the last bit, so the rows with their samples
identify a run whatever else a copy of its file changes: indentation, row order, a
warning or a note edited away, metadata. compare refuses two files of one run, and the
history store records a run once, by this digest.
"""

from __future__ import annotations

import hashlib
import json

from cudabench.results.model import ResultsFile


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
