"""Tables that fit the terminal: whole columns kept by priority, never cells cut.

At a terminal's width a table keeps the columns that fit whole, most important first (the
name, the check, the median, the column that answers the run's question, the rate, ...),
and says in one line which it left out and how to see them. Piped output is as wide as
its content and keeps every column (the console is then not a terminal), so files, CI
logs and `--markdown` lose nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

BORDER = 4  # a box table's two outer edges and the padding beside them
PER_COLUMN = 3  # each column's padding and the line between it and the next
WIDE_ENV = "CUDABENCH_WIDE"  # set (to anything but 0): every column, however wide

# Lower number, kept first; a column not named here ranks after every named one, in order.
PRIORITY = {name: rank for rank, name in enumerate((
    "variant", "benchmark", "check", "verdict", "median", "change", "params", "% of",
    "vs ", "GFLOP/s", "GB/s", "% of peak", "current", "baseline", "spread", "bound",
    "batch (warm)", "shape", "dtype", "p-value",
))}


@dataclass(frozen=True)
class Fitted:
    """The columns kept (their indices, in the table's order) and the names left out."""

    kept: tuple[int, ...]
    left_out: tuple[str, ...]

    def footer(self) -> str:
        """Return the line naming what was left out ('' when nothing was)."""
        if not self.left_out:
            return ""
        return (f"left out to fit the terminal: {', '.join(self.left_out)} (a wider "
                f"terminal, {WIDE_ENV}=1, --json or --markdown show every column)")


def rank(name: str, position: int) -> tuple[int, int]:
    """Return a column's priority: its rank, or its prefix's ("vs cuBLAS" is "vs ")."""
    if name in PRIORITY:
        return PRIORITY[name], position
    for prefix in ("% of peak", "% of", "vs "):
        if name.startswith(prefix):
            return PRIORITY[prefix], position
    return len(PRIORITY), position


def cell_width(text: str) -> int:
    """Return the width a cell needs unbroken (its longest line)."""
    return max((len(line) for line in text.splitlines()), default=0)


def header_width(name: str) -> int:
    """Return the width a header needs: all of it (a kept column's header is not cut)."""
    return len(name)


def fit(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None) -> Fitted:
    """Return which columns fit in width whole (all of them when width is None), keeping
    the most important; the first column is always kept."""
    needs = [max([header_width(name)] + [cell_width(row[i]) for row in rows if i < len(row)])
             for i, name in enumerate(columns)]
    everything = Fitted(tuple(range(len(columns))), ())
    if width is None or wide() or BORDER + sum(n + PER_COLUMN for n in needs) <= width:
        return everything
    order = sorted(range(len(columns)), key=lambda i: (i != 0, rank(columns[i], i)))
    kept: list[int] = []
    used = BORDER
    for index in order:
        need = needs[index] + PER_COLUMN
        if not kept or used + need <= width:
            kept.append(index)
            used += need
    kept.sort()
    return Fitted(tuple(kept), tuple(columns[i] for i in range(len(columns))
                                     if i not in kept))


def wide() -> bool:
    """Return whether the user asked for every column (CUDABENCH_WIDE)."""
    return os.environ.get(WIDE_ENV, "0") not in ("", "0")
