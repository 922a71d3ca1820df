"""`cudabench list` as text: one table per op, a variant a row, every cell on one line.

A row holds the variant, its dtypes, its parameters' defaults, their allowed values and its
file. On a narrow terminal the dtypes, defaults and allowed values that do not fit become
numbered notes (fit.py's NOTED; variants that would say the same share one) and the file
column gives way to a line per folder naming its files, so that no row wraps and nothing
is cut. Text only: terminal.py prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cudabench.catalog import KernelVariant
from cudabench.render.fit import layout

COLUMNS = ("variant", "dtypes", "defaults", "allowed", "file")


@dataclass(frozen=True)
class OpListing:
    """One op's table: its rows (COLUMNS), the lines naming its files by folder, and the
    line that says what the op computes, its types and its kernels' signature."""

    op: str
    rows: tuple[tuple[str, ...], ...]
    folders: tuple[str, ...]
    about: str


def listings(catalog: Mapping[str, Mapping[str, KernelVariant]], ops: Mapping[str, Any]
             ) -> list[OpListing]:
    """Return each op's listing, in the catalog's order (an op without variants: one row
    saying so)."""
    found = []
    for name, variants in catalog.items():
        rows = tuple(row(variant) for variant in variants.values()) or (
            ("(none)", "-", "-", "-", "-"),)
        folders: dict[str, list[str]] = {}
        for variant in variants.values():
            folders.setdefault(str(variant.path.parent), []).append(variant.path.name)
        op = ops.get(name)
        about = name if op is None else (
            f"{name} ({op.origin}): {op.summary}; types "
            f"{', '.join(op.type_set(dtype).describe() for dtype in op.dtypes)}; kernels take "
            f"{op.signature}")
        if any(variant.on_request for variant in variants.values()):
            about += "; * runs on request only (`--variant NAME` or `--variant all`)"
        found.append(OpListing(name, rows, tuple(
            f"files in {folder}: {', '.join(sorted(files))}" for folder, files in folders.items()
        ), about))
    return found


def row(variant: KernelVariant) -> tuple[str, ...]:
    """Return a variant's cells: name (marked * when it runs on request only), dtypes,
    defaults, allowed values, file."""
    params = variant.params
    marked = variant.name + (" *" if variant.on_request else "")
    return (marked, " ".join(variant.dtypes),
            " ".join(f"{p.name}={p.default}" for p in params) or "-",
            "; ".join(f"{p.name} in {p.describe_allowed()}" for p in params) or "-",
            str(variant.path))


def shows_files(rows: Sequence[Sequence[str]], width: int | None) -> bool:
    """Return whether the file column fits whole beside the others at width (it is the
    last to be kept: when it is, so is every other column or its note)."""
    return COLUMNS.index("file") in layout(COLUMNS, rows, width).fitted.kept
