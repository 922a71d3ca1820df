"""Tables that fit the terminal: whole columns kept by priority, never cells cut.

At a terminal's width a table keeps the columns that fit whole, most important first (the
name, the check, the median, the column that answers the run's question, the rate, ...),
and says in one line which it left out and how to see them. A long text left out (a
verdict's reason, a threshold's source) becomes a numbered note under the table instead,
keyed by a mark beside the row's name. Piped output is as wide as its content and keeps
every column (the console is then not a terminal), so files, CI logs and `--markdown`
lose nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from cudabench.render.flag_names import named

BORDER = 1  # a box table's left edge (Rich: the columns' widths + 3 per column + 1)
PER_COLUMN = 3  # each column's padding either side and the line on its right
WIDE_ENV = "CUDABENCH_WIDE"  # set (to anything but 0/false/no/off): every column
WIDE_FLAG = "--wide"  # the command line's way to say the same (cudabench.cli.group)
_asked_wide = False  # --wide given to the command running in this process
# Every column asked for by the reader of the tables being printed: a Python caller's
# `results.table(wide=True)`, not this process's command
_wide_here: ContextVar[bool] = ContextVar("wide_here", default=False)

# A run table's rate is GFLOP/s (GOP/s for int32) or GB/s, whichever reads its op's
# throughput (GB/s for a streaming op such as dot, which counts FLOPs too): it ranks as
# "rate", the other as "rate 2". A table that names no rate ranks both as "rate".
RATES = ("GFLOP/s", "GOP/s", "GB/s")
# Lower number, kept first; a column not named here ranks after every named one, in order.
# "vs " is the vendor's column (the run's question), then a reference's ("% of copy");
# "vs naive" comes after the rate.
# What tells rows apart comes right after the verdict and the numbers that answer the
# table's question (--best's: its best params): shape or size (usually narrower than
# params), params, dtype and GPU model (a comparison of several sizes, or a history of
# several GPUs, reads as duplicate rows without them).
PRIORITY = {name: rank for rank, name in enumerate((
    "variant", "benchmark", "check", "verdict", "compiled", "median", "best params",
    "latest", "change", "last change", "shape", "size", "params", "dtype", "GPU", "vs ",
    "% of", "rate",
    "vs naive", "% of peak", "current", "baseline", "B", "A", "history median", "interval",
    "gate", "seconds", "of wall", "spread", "slowest", "margin", "bound", "rate 2", "batch (warm)",
    "p-value",
))}
# Long texts: left out of a narrow table, each row's goes to a numbered note under it.
NOTED = frozenset({"reason", "threshold", "threshold from", "steps", "from", "compiled",
                   "tied with", "parameters",
                   "launches (grid, block, dynamic shared)", "dtypes", "defaults", "allowed",
                   "median per GPU"})
BLANK = ("", "-")  # a cell that says nothing: no note for it
# Columns that tell rows of one name apart (a sweep's configurations). Where the first
# column already names each row once (a run at each variant's defaults), they only describe
# it, and rank last: a variant's many parameters must not push the columns that answer the
# run's question (vs cuBLAS, % of the copy) or any other number off the screen.
TELLING_APART = frozenset({"params"})

# A first column folds to no less than this many characters, nor less than this share (%)
# of the terminal: names cut into many short lines read worse than a column left out.
FIRST_MIN = 24
FIRST_SHARE = 45


@dataclass(frozen=True)
class Fitted:
    """The columns kept (their indices, in the table's order) and the names left out;
    overflows when even the first column alone is wider than the terminal."""

    kept: tuple[int, ...]
    left_out: tuple[str, ...]
    overflows: bool = False
    first_width: int | None = None  # the first column's lines fold to this width

    def lost(self) -> int:
        """Return how many columns left out are lost, not kept as notes (NOTED)."""
        return sum(1 for name in self.left_out if name not in NOTED)

    def footer(self) -> str:
        """Return the line naming what was left out ('' when nothing was)."""
        if not self.left_out:
            return ""
        return (f"left out to fit: {', '.join(self.left_out)} "
                f"({named(WIDE_FLAG)} shows every column)")


@dataclass(frozen=True)
class Layout:
    """A fitted table with its notes: the mark beside each noted row's first cell, and
    the notes' lines, in row order."""

    fitted: Fitted
    marks: Mapping[int, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def rank(name: str, position: int, rate: str = "") -> tuple[int, int]:
    """Return a column's priority: its rank, or its prefix's ("vs cuBLAS" is "vs ");
    GFLOP/s (GOP/s) or GB/s rank as the table's rate or as the other one (RATES)."""
    if name in RATES:
        return PRIORITY["rate" if name == (rate or name) else "rate 2"], position
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


def fit(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None,
        rate: str = "") -> Fitted:
    """Return which columns fit in width whole (all of them when width is None), keeping
    the most important; the first column is always kept. A column is kept only if every
    more important one is (a long text, NOTED, becomes a note instead and stops nothing).
    A first column of long names (a benchmark with its parameters) folds onto more lines
    where that keeps more columns: it must not push the verdict off the screen."""
    needs = [max([header_width(name)] + [cell_width(row[i]) for row in rows if i < len(row)])
             for i, name in enumerate(columns)]
    everything = Fitted(tuple(range(len(columns))), ())
    if width is None or wide() or BORDER + sum(n + PER_COLUMN for n in needs) <= width:
        return everything
    whole = _fit(columns, rows, needs, width, rate)
    fold = max(FIRST_MIN, width * FIRST_SHARE // 100, header_width(columns[0]),
               max((_longest_word(row[0]) for row in rows if row), default=0))
    if needs[0] <= fold:
        return whole
    folded = _fit(columns, rows, [fold, *needs[1:]], width, rate)
    if folded.lost() >= whole.lost():
        return whole
    return dataclasses.replace(folded, first_width=fold)


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def _fit(columns: Sequence[str], rows: Sequence[Sequence[str]], needs: Sequence[int],
         width: int, rate: str) -> Fitted:
    """fit()'s choice for columns of the given widths."""
    named_once = len({row[0] for row in rows if row}) == len(rows)
    gpu = columns.index("GPU") if "GPU" in columns else None
    # Rows of one name on several GPU models (history show of a shared store): the GPU is
    # what tells them apart, so it goes right after the name, before any number.
    gpu_tells = gpu is not None and not named_once and any(
        len({row[gpu] for row in rows if row and row[0] == name}) > 1
        for name in {row[0] for row in rows if row})

    def priority(i: int) -> tuple[int, int]:
        if named_once and columns[i] in TELLING_APART:
            return len(PRIORITY) + 1, i  # after every column, named or not
        if gpu_tells and i == gpu:
            return -1, i
        return rank(columns[i], i, rate)

    order = sorted(range(len(columns)), key=lambda i: (i != 0, priority(i)))
    kept: list[int] = []
    used = BORDER
    for index in order:
        need = needs[index] + PER_COLUMN
        if not kept or used + need <= width:
            kept.append(index)
            used += need
        elif columns[index] not in NOTED:
            # Filling the space left with smaller, less important columns would show
            # "runs" where "change" was wanted, or GB/s in place of matmul's GFLOP/s.
            break
    kept.sort()
    return Fitted(tuple(kept), tuple(columns[i] for i in range(len(columns))
                                     if i not in kept), overflows=used > width)


def layout(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None,
           noted_rows: Collection[int] | None = None, rate: str = "") -> Layout:
    """Fit a table (rate: its throughput column, RATES), the long texts it leaves out
    (NOTED) becoming notes for the rows in noted_rows (every row when None) that have
    something to say there; rows that would say the same share a note."""
    noted_columns = [i for i, name in enumerate(columns) if name in NOTED and i > 0]
    # Room for the widest mark beside the first column's text, so that a mark never cuts it.
    room = [[row[0] + f" [{len(rows)}]", *row[1:]] for row in rows] if noted_columns else rows
    fitted = fit(columns, room, width, rate)
    noted = [i for i in noted_columns if i not in fitted.kept]
    texts = {r: "; ".join(f"{columns[i]}: {row[i]}" for i in noted if row[i] not in BLANK)
             for r, row in enumerate(rows) if noted_rows is None or r in noted_rows}
    numbers: dict[str, int] = {}  # rows that would say the same share one note
    for text in texts.values():
        if text:
            numbers.setdefault(text, len(numbers) + 1)
    marks = {r: f"[{numbers[text]}]" for r, text in texts.items() if text}
    notes = tuple(f"[{number}] {text}" for text, number in numbers.items())
    left_out = tuple(name for name in fitted.left_out if columns.index(name) not in noted)
    return Layout(dataclasses.replace(fitted, left_out=left_out), marks, notes)


def ask_wide(on: bool) -> None:
    """Keep every column of the tables this process prints, or stop (--wide)."""
    global _asked_wide
    _asked_wide = on


def wide() -> bool:
    """Return whether the user asked for every column (--wide, or CUDABENCH_WIDE)."""
    return (_asked_wide or _wide_here.get()
            # "false", "no", "off" say no, as 0 does (CUDABENCH_CACHE_DIR=false is off too)
            or os.environ.get(WIDE_ENV, "0").strip().lower() not in ("", "0", "false", "no",
                                                                      "off"))


@contextlib.contextmanager
def every_column(on: bool) -> Iterator[None]:
    """Keep every column of the tables printed within when on (the reader asked for them
    in a call, not with this process's --wide)."""
    token = _wide_here.set(on)
    try:
        yield
    finally:
        _wide_here.reset(token)


def differing_params(cells: Sequence[str]) -> tuple[list[str], str] | None:
    """Return params cells ("TILE=64 GROUP=8") cut to the parameters whose value differs
    between rows, and the text of those that do not, for a table too narrow for whole
    ones: a sweep's rows are then still told apart. None when a cell is not NAME=value
    pairs or nothing would be cut."""
    parsed: list[dict[str, str] | None] = []
    for cell in cells:
        if cell in BLANK:
            parsed.append(None)
            continue
        pairs = [token.partition("=") for token in cell.split()]
        if not pairs or any(not name or not sep for name, sep, _ in pairs):
            return None
        parsed.append({name: value for name, _, value in pairs})
    values: dict[str, set[str]] = {}
    for params in parsed:
        for name, value in (params or {}).items():
            values.setdefault(name, set()).add(value)
    same = {name: next(iter(seen)) for name, seen in values.items() if len(seen) == 1}
    if not same:
        return None
    short = [cell if params is None else
             " ".join(f"{k}={v}" for k, v in params.items() if k not in same) or "-"
             for cell, params in zip(cells, parsed)]
    return short, " ".join(f"{k}={v}" for k, v in same.items())

