"""A search's progress on stderr: configurations done / budget, the best so far, an ETA.

A live line on a terminal; with --progress off a terminal, a line per configuration; with
--quiet nothing. The caller computes the numbers (render sees no measuring code).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from cudabench.common.units import format_seconds

# label, done, total, best median (s) or None, best's parameters, seconds left or None
Update = Callable[[str, int, int, "float | None", str, "float | None"], None]


def best_and_eta(done: int, total: int, best_s: float | None, best: str,
                 left_s: float | None) -> tuple[str, str]:
    """Return the best so far and the ETA ('' when done or unknown) as text."""
    best_part = f"best {format_seconds(best_s)} ({best})" if best_s is not None else "no best yet"
    eta = f"ETA {left_s:.0f} s" if left_s is not None and done < total else ""
    return best_part, eta


def status_text(label: str, done: int, total: int, best_s: float | None, best: str,
                left_s: float | None) -> str:
    """Return one line of a search's progress."""
    best_part, eta = best_and_eta(done, total, best_s, best, left_s)
    return f"{label}: {done}/{total} configurations; {best_part}" + (f"; {eta}" if eta else "")


@contextlib.contextmanager
def tune_progress(console: Console, mode: bool | None) -> Iterator[Update]:
    """Yield update(...): a live status line on a terminal, else lines (mode True) or
    nothing (mode None off a terminal; mode False everywhere)."""
    if mode is False or (mode is None and not console.is_terminal):
        yield lambda *args: None
        return
    if console.is_terminal:
        columns = (TextColumn("{task.description}", markup=False), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"))
        with Progress(*columns, console=console, transient=True) as bar:
            tasks: dict[str, object] = {}

            def live(label: str, done: int, total: int, best_s: float | None, best: str,
                     left_s: float | None) -> None:
                if label not in tasks:
                    tasks[label] = bar.add_task(label, total=total, eta="")
                best_part, eta = best_and_eta(done, total, best_s, best, left_s)
                bar.update(tasks[label], completed=done, total=total,  # type: ignore[arg-type]
                           description=f"{label}: {best_part}", eta=eta)

            yield live
        return

    def log(label: str, done: int, total: int, best_s: float | None, best: str,
            left_s: float | None) -> None:
        console.print(Text(status_text(label, done, total, best_s, best, left_s)))

    yield log
