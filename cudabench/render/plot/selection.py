"""Which configurations a figure draws: every one, up to a limit; past it, a variant's
fastest few and its default, the figure and stderr saying how many were left out.

A search's file holds hundreds of configurations of one variant: a series and a legend
entry each made a figure a hundred times taller than wide, and their looks repeated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import parse_header
from cudabench.common.units import params_text
from cudabench.errors import CudabenchError
from cudabench.render.plot.style import (
    MAX_CONFIGS,
    Styles,
    device_identity,
    plotted,
)
from cudabench.render.run_table import counts_flops
from cudabench.results.model import BenchmarkResult, Kind

MAX_SERIES = 40  # a figure's series of variants, all its variants' together, up to this many
FASTEST = 5  # what a variant past a limit keeps: its fastest few (and its default)
HOW_TO_SEE = "`cudabench report` lists every one"

VariantKey = tuple[str, str]  # op, variant


@dataclass(frozen=True)
class Cut:
    """A variant drawn in part: how many of its configurations, of how many, and its
    default's parameters (the kernel file's) where they are among them."""

    op: str
    variant: str
    drawn: int
    total: int
    default: str | None

    def line(self, how: str = HOW_TO_SEE) -> str:
        """Say it on stderr or a page: what was drawn, what was left out, how to see it."""
        default = " and its default" if self.default else ""
        return (f"{self.variant} ({self.op}): the {FASTEST} fastest of its {self.total:,} "
                f"configurations drawn{default}, {self.total - self.drawn:,} left out ({how})")

    def title(self) -> str:
        """Say it in a panel's legend, briefly."""
        default = " and the default" if self.default else ""
        return (f"{self.variant}: the {FASTEST} fastest of {self.total:,} configurations"
                f"{default}; {HOW_TO_SEE}")


@dataclass(frozen=True)
class Selection:
    """The rows a figure draws, and the variants it draws in part."""

    rows: list[BenchmarkResult]
    cuts: tuple[Cut, ...]


def select(results: Sequence[BenchmarkResult]) -> Selection:
    """Return the rows a figure draws: every timed, believed row, but of a variant with more
    than MAX_CONFIGS configurations (or the largest ones, while the figure holds more than
    MAX_SERIES series) only its FASTEST configurations and its default. Vendor and reference
    rows are always drawn: each is one row, not a configuration of a variant."""
    rows = plotted(results)
    configs: dict[VariantKey, dict[str, list[BenchmarkResult]]] = {}
    for r in rows:
        if r.kind is Kind.VARIANT:
            configs.setdefault((r.op, r.variant), {}).setdefault(
                params_text(r.params), []).append(r)
    crowded = _crowded(configs)
    if not crowded:
        return Selection(rows, ())
    speed = _speeds(rows)
    hidden: set[tuple[str, str, str]] = set()
    cuts = []
    for key in crowded:
        found = configs[key]
        # fastest first: the geometric mean of its rows' speeds against the fastest's
        ranked = sorted(found, key=lambda params: -sum(
            math.log(speed[id(r)]) for r in found[params]) / len(found[params]))
        kept = set(ranked[:FASTEST])
        default = _default(found[ranked[0]][0])
        default = default if default in found else None
        kept |= {default} if default else set()
        hidden.update((*key, params) for params in found if params not in kept)
        cuts.append(Cut(*key, len(kept), len(found), default))
    return Selection([r for r in rows if (r.op, r.variant, params_text(r.params)) not in hidden],
                     tuple(cuts))


def styles_of(selection: Selection) -> Styles:
    """Return the styles of a selection's rows, which know what it left out."""
    styles = Styles.of(selection.rows)
    styles.cuts = {(cut.op, cut.variant): cut.title() for cut in selection.cuts}
    styles.defaults = {(cut.op, cut.variant, cut.default) for cut in selection.cuts
                       if cut.default}
    return styles


def drawn(results: Sequence[BenchmarkResult]) -> tuple[list[BenchmarkResult], Styles]:
    """Return the rows a figure draws and their styles."""
    selection = select(results)
    return selection.rows, styles_of(selection)


def _crowded(configs: dict[VariantKey, dict[str, list[BenchmarkResult]]]) -> list[VariantKey]:
    """Return the variants to cut: those past MAX_CONFIGS, then the largest others while the
    figure holds more than MAX_SERIES series (a configuration on several devices, files,
    dtypes or hot and cold is a series each)."""
    series = {key: len({(params, r.dtype, r.hot, device_identity(r), r.origin)
                        for params, members in found.items() for r in members})
              for key, found in configs.items()}

    def left(key: VariantKey) -> float:  # its series once cut
        return series[key] * min(1.0, (FASTEST + 1) / len(configs[key]))

    crowded = [key for key in configs if len(configs[key]) > MAX_CONFIGS]
    total = sum(left(key) if key in crowded else series[key] for key in configs)
    for key in sorted(configs, key=lambda key: -len(configs[key])):
        if total <= MAX_SERIES or len(configs[key]) <= FASTEST + 1:
            break
        if key not in crowded:
            crowded.append(key)
            total -= series[key] - left(key)
    return crowded


def _speeds(rows: Sequence[BenchmarkResult]) -> dict[int, float]:
    """Return each variant row's rate in the figure's unit (GFLOP/s or GB/s, as its panel
    reads) over the fastest of its variant at its point: sizes and devices weigh alike."""
    groups: dict[tuple[str, str], list[BenchmarkResult]] = {}
    for r in rows:
        groups.setdefault((r.op, r.dtype), []).append(r)
    flops = {key: counts_flops(members) for key, members in groups.items()}
    rates: dict[int, float] = {}
    best: dict[tuple[object, ...], float] = {}
    for r in rows:
        if r.kind is not Kind.VARIANT:
            continue
        rate = (r.gflops if flops[(r.op, r.dtype)] else r.gbps) or 1 / (r.median_s or math.inf)
        rates[id(r)] = rate
        best[_point(r)] = max(best.get(_point(r), 0.0), rate)
    return {id(r): rates[id(r)] / best[_point(r)] for r in rows if id(r) in rates}


def _point(r: BenchmarkResult) -> tuple[object, ...]:
    return (r.op, r.variant, r.dtype, r.shape, r.hot, device_identity(r), r.origin)


def _default(r: BenchmarkResult) -> str | None:
    """Return the parameters of the variant's default configuration, as its kernel file says
    now; None where the file is not here (a file from another machine) or not readable."""
    path = Path(r.source) if r.source else None
    if path is None or path.suffix != ".cu" or not path.is_file():  # a FIFO would block
        return None
    try:
        defaults = {spec.name: spec.default for spec in parse_header(path).params}
    except (CudabenchError, OSError):
        return None
    if set(defaults) != set(r.params):
        return None
    return params_text({name: defaults[name] for name in r.params})
