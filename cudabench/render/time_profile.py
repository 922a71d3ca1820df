"""--profile-time's table: where the wall time went, largest phase first."""

from __future__ import annotations

from collections.abc import Sequence

from cudabench.analysis.time_profile import BESIDE, TimeProfile

COLUMNS = ("phase", "in", "seconds", "of wall")


def profile_title(profile: TimeProfile) -> str:
    """Return the table's title: the wall time and the GPU sampling share of it."""
    return (f"--profile-time: {profile.wall_s:.2f} s wall; GPU time in the samples "
            f"{profile.gpu_sampling_s:.3f} s ({profile.sampling_share:.1%} of the wall)")


def profile_rows(profile: TimeProfile) -> list[Sequence[str]]:
    """Return one row per phase (command and worker), largest first, then what no phase
    accounts for."""
    wall = profile.wall_s or 1.0
    worker = "worker" if profile.gpus == 1 else f"workers ({profile.gpus} GPUs)"
    phases = [(name, "command (beside)" if name in BESIDE else "command", seconds)
              for name, seconds in profile.command.items()]
    phases += [(name, worker, seconds) for name, seconds in profile.rows.items()]
    phases.sort(key=lambda item: -item[2])
    rows: list[Sequence[str]] = [(name, where, f"{seconds:.3f}", f"{seconds / wall:.1%}")
                                 for name, where, seconds in phases if seconds >= 5e-4]
    rest = profile.wall_s - profile.accounted_s
    if profile.gpus == 1 and rest > 0:
        rows.append(("not in a phase", "", f"{rest:.3f}", f"{rest / wall:.1%}"))
    return rows
