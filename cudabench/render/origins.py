"""Rows of several results files shown together (a figure's series, a page's diagnostics):
each row named by its file, so that two files' rows of one benchmark are never merged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from cudabench.results.model import BenchmarkResult, ResultsFile


def file_labels(paths: Sequence[str]) -> dict[str, str]:
    """Name each file for a legend: its name, or the path as given where two share one."""
    names = [Path(path).name for path in paths]
    return {path: name if names.count(name) == 1 else path for path, name in zip(paths, names)}


def rows_of(files: Sequence[ResultsFile]) -> list[BenchmarkResult]:
    """Return the files' rows, each with its file's label as its origin where there are
    several files (one file's rows need no label)."""
    if len(files) < 2:
        return [r for f in files for r in f.benchmarks]
    names = file_labels([f.path for f in files])
    return [dataclasses.replace(r, origin=names[f.path]) for f in files for r in f.benchmarks]
