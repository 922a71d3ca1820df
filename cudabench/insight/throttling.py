"""What a window's NVML readings say of throttling, in words: the throttle reasons NVML
named and the seconds of power or thermal violation it counted. The run's warning and the
tables' footers say it alike (a footer that read "no throttling" under a warning that the
GPU throttled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def throttle_causes(summary: Mapping[str, Any]) -> list[str]:
    """Return each cause of throttling a telemetry summary holds ([] when none)."""
    causes = [str(reason) for reason in summary.get("throttle_reasons") or []]
    for kind in ("power", "thermal"):
        seconds = summary.get(f"{kind}_violation_s")
        if seconds:
            causes.append(f"{seconds:.2g} s of {kind} violation")
    return causes
