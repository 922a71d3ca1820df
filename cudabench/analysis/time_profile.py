"""Where a run's wall time went (--profile-time): the command's own phases and its rows'.

The rows' phases are the measuring workers' (compile, inputs, CPU reference, samples,
verification...); the command's are around them (start-up, planning, waiting for the first
worker, tables). Writing the results file runs beside the worker, not in its way: it is
shown, but not counted against the wall time. With several GPUs the rows' phases add up to
more than the wall time: they ran side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudabench.common.phases import merge
from cudabench.results.model import BenchmarkResult

BESIDE = frozenset({"writing results"})  # parent work that overlaps the worker's


@dataclass(frozen=True)
class TimeProfile:
    """A run's wall time, its phases (seconds each) and the GPU time in its samples."""

    wall_s: float
    command: Mapping[str, float]  # the command's own phases
    rows: Mapping[str, float]  # the rows' phases, summed over rows (and GPUs)
    gpu_sampling_s: float
    gpus: int = 1

    @property
    def accounted_s(self) -> float:
        """Return the seconds the phases on the run's path account for."""
        own = sum(s for name, s in self.command.items() if name not in BESIDE)
        return own + sum(self.rows.values()) / max(self.gpus, 1)

    @property
    def sampling_share(self) -> float:
        """Return the share of the wall time the GPU spent in the samples."""
        return self.gpu_sampling_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        """Return the results file's `profile` object."""
        return {"wall_s": self.wall_s, "gpu_sampling_s": self.gpu_sampling_s,
                "gpus": self.gpus, "phases": dict(self.command),
                "row_phases": dict(self.rows)}


def time_profile(wall_s: float, command: Mapping[str, float],
                 results: Sequence[BenchmarkResult], gpus: int = 1) -> TimeProfile:
    """Return the run's profile from the command's phases and its rows' (each row's
    `phases`, recorded when --profile-time was given)."""
    rows: dict[str, float] = {}
    for result in results:
        merge(rows, result.phases)
    return TimeProfile(wall_s, dict(command), rows,
                       sum(result.gpu_sampling_s for result in results), gpus)
