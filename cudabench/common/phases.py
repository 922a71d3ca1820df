"""Where a run's wall time goes: a clock of named phases, for --profile-time.

Phases nest, and each second counts once, in the innermost phase open at the time: a
recheck's verification is `verify`, not `recheck`, so the phases of a row add up to its
wall time. One clock per process (a worker runs one job at a time); the runner takes a
row's phases when the row is done (take) and the parent adds its own (start-up, planning,
writing, tables) around the run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping


class PhaseClock:
    """Seconds spent per phase, exclusive of the phases nested in it."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._open: list[list[float]] = []  # [start, seconds spent in nested phases]

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count the time spent inside the block to name (less its nested phases)."""
        frame = [time.perf_counter(), 0.0]
        self._open.append(frame)
        try:
            yield
        except Exception as exc:
            # The innermost phase an error left, for its message: a fault surfaces at the
            # next synchronisation, and the phase says which of a row's steps that was.
            if getattr(exc, "phase", None) is None:
                with contextlib.suppress(AttributeError):  # a type with __slots__
                    exc.phase = name  # type: ignore[attr-defined]
            raise
        finally:
            elapsed = time.perf_counter() - frame[0]
            self._open.pop()
            self.add(name, elapsed - frame[1])
            if self._open:
                self._open[-1][1] += elapsed

    def add(self, name: str, seconds: float) -> None:
        """Count seconds to name (time measured elsewhere, e.g. by the parent)."""
        self.totals[name] = self.totals.get(name, 0.0) + max(seconds, 0.0)

    def take(self) -> dict[str, float]:
        """Return the totals so far and start again from zero."""
        totals, self.totals = self.totals, {}
        return totals


CLOCK = PhaseClock()  # this process's


def phase(name: str) -> contextlib.AbstractContextManager[None]:
    """Count the block's time to name on this process's clock."""
    return CLOCK.phase(name)


def merge(into: dict[str, float], more: Mapping[str, float]) -> dict[str, float]:
    """Add more's seconds into into (in place) and return it."""
    for name, seconds in more.items():
        into[name] = into.get(name, 0.0) + seconds
    return into


def process_age_s() -> float | None:
    """Return how long ago this process started (Linux: from /proc), or None if unknown:
    the start-up phase includes the interpreter's and the imports' time."""
    try:
        import os

        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as uptime:
            now_s = float(uptime.read().split()[0])
        started_s = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return max(now_s - started_s, 0.0)
