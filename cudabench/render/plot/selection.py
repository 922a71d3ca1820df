"""Which configurations a figure draws: those the user chose (--variant, -p: every one by
default), up to a limit; past it, a variant's fastest few and its default, and past that
the first files (or GPUs) that fit, the figure and stderr saying what was left out.

A search's file holds hundreds of configurations of one variant: a series and a legend
entry each made a figure a hundred times taller than wide, and their looks repeated.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import parse_header
from cudabench.common.units import params_text
from cudabench.errors import CudabenchError, UsageError
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

ALL_VARIANTS = "all"  # --variant all: every variant, as the run commands read it
MAX_LISTED = 12  # an error lists a parameter's values in the files up to this many

VariantKey = tuple[str, str]  # op, variant


@dataclass(frozen=True)
class Choice:
    """The kernel rows a user asked to see: named variants (--variant; none or `all`: every
    one) and parameter values (-p NAME=V1,V2: a variant that has NAME, at those values; one
    without it, whole, as a run's -p leaves it at its defaults). Vendor and reference rows
    go with the ops and types of the rows chosen: a run with --variant measures them too."""

    variants: tuple[str, ...] = ()
    params: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether the choice leaves any row out (none is: every row)."""
        return bool(self.variants or self.params)

    def rows(self, results: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
        """Return the chosen rows, in their order; a name or value that matches nothing is
        a usage error naming the variants, parameters or values the rows have."""
        if not self.narrows:
            return list(results)
        kernels = [r for r in results if r.kind is Kind.VARIANT]
        named = self._named(results)
        pool = [r for r in kernels if not named or r.variant in named]
        for name, values in self.params:
            self._check_param(name, values, pool, named)
        kept = [r for r in pool if all(r.params[name] in values for name, values in self.params
                                       if name in r.params)]
        if not kept:  # each -p matched alone: not together
            raise UsageError(f"{self.flags()}: no configuration matches them all "
                             f"({self._has(pool)})")
        for variant in named:  # one named, and matched nothing: not left out unsaid
            if not any(r.variant == variant for r in kept):
                raise UsageError(f"{self.flags()}: no configuration of {variant} matches "
                                 f"({self._has([r for r in pool if r.variant == variant])})")
        points = {(r.op, r.dtype, r.origin) for r in kept}  # a yardstick of their own run
        chosen = {id(r) for r in kept}
        return [r for r in results if id(r) in chosen
                or r.kind is not Kind.VARIANT and (r.op, r.dtype, r.origin) in points]

    def flags(self) -> str:
        """Return the choice as the flags that made it."""
        return " ".join([*(f"--variant {name}" for name in self.variants),
                         *(f"-p {name}={','.join(map(str, values))}"
                           for name, values in self.params)])

    def within(self, params: Sequence[str]) -> str:
        """Return what narrowed the configurations of a variant with these parameters:
        `with TILE=8,16`, or '' where no -p names one of them."""
        said = [f"{name}={','.join(map(str, values))}" for name, values in self.params
                if name in params]
        return f"with {' and '.join(said)}" if said else ""

    def _has(self, rows: Sequence[BenchmarkResult]) -> str:
        """Say the values of the -p parameters each variant of rows has."""
        said = []
        for variant in sorted({r.variant for r in rows}):
            own = [r for r in rows if r.variant == variant]
            values = [f"{name}={_listed({r.params[name] for r in own if name in r.params})}"
                      for name, _ in self.params if any(name in r.params for r in own)]
            if values:
                said.append(f"{variant} has {' and '.join(values)}")
        return "; ".join(said)

    def _named(self, rows: Sequence[BenchmarkResult]) -> list[str]:
        """Return the variants named (none: every one), each found in the rows."""
        if ALL_VARIANTS in self.variants:
            return []
        known = sorted({r.variant for r in rows if r.kind is Kind.VARIANT})
        names = list(dict.fromkeys(self.variants))
        for name in names:
            if name in known:
                continue
            parts = [part.strip() for part in name.split(",")]
            if len(parts) > 1 and all(part in known for part in parts):
                raise UsageError(f"--variant {name}: --variant takes one name (a comma list "
                                 f"is not one); give each: "
                                 f"{' '.join('--variant ' + part for part in parts)}")
            if any(r.variant == name for r in rows):  # cuBLAS: it comes with its op's variants
                raise UsageError(f"--variant {name}: a {name} row is no variant: it is shown "
                                 f"beside its op's variants; name one of them "
                                 f"({', '.join(known) or 'none in the files'}) or "
                                 f"{ALL_VARIANTS}")
            near = difflib.get_close_matches(name, known, n=1)
            guess = f"; did you mean {near[0]}?" if near else ""
            raise UsageError(f"--variant {name}: no such variant in the files{guess} "
                             f"(their variants: {', '.join(known) or 'none'}; or "
                             f"{ALL_VARIANTS}: every one)")
        return names

    def _check_param(self, name: str, values: tuple[int, ...],
                     pool: Sequence[BenchmarkResult], named: Sequence[str]) -> None:
        """Refuse a -p that no configuration of the chosen variants has."""
        where = f"of {', '.join(named)}" if named else "in the files"
        having = sorted({r.params[name] for r in pool if name in r.params})
        if not having:
            taken = sorted({param for r in pool for param in r.params})
            near = difflib.get_close_matches(name.upper(), taken, n=1, cutoff=0.75)
            guess = f"; did you mean {near[0]}?" if near else ""
            raise UsageError(f"-p {name}: no configuration {where} has {name}{guess} "
                             + (f"(they have {', '.join(taken)})" if taken
                                else "(they have no parameters)"))
        if not set(values) & set(having):
            asked = f"{name}={','.join(map(str, values))}"
            raise UsageError(f"-p {asked}: no configuration {where} has {asked} (they have "
                             f"{name}={_listed(having)})")


def _listed(values: Iterable[int]) -> str:
    """Return values as a -p list, the first MAX_LISTED of them: `8,16,32 and 5 more`."""
    ordered = sorted(values)
    more = len(ordered) - MAX_LISTED
    return ",".join(map(str, ordered[:MAX_LISTED])) + (f" and {more:,} more" if more > 0 else "")


@dataclass(frozen=True)
class Cut:
    """A variant drawn in part: how many of its configurations, of how many (within what
    the user chose), and its default's parameters (the kernel file's) where they are among
    them."""

    op: str
    variant: str
    drawn: int
    total: int
    default: str | None
    within: str = ""  # what the user's -p narrowed them to: `with TILE=8,16`

    def line(self, how: str = HOW_TO_SEE) -> str:
        """Say it on stderr or a page: what was drawn, what was left out, how to see it."""
        default = " and its default" if self.default else ""
        return (f"{self.variant} ({self.op}): the {FASTEST} fastest of its {self.total:,} "
                f"configurations{self._within()} drawn{default}, "
                f"{self.total - self.drawn:,} left out ({how})")

    def title(self) -> str:
        """Say it in a panel's legend, briefly."""
        default = " and the default" if self.default else ""
        return (f"{self.variant}: the {FASTEST} fastest of {self.total:,} configurations"
                f"{self._within()}{default}; {HOW_TO_SEE}")

    def _within(self) -> str:
        return f" {self.within}" if self.within else ""


@dataclass(frozen=True)
class Dropped:
    """The files (or, of one file, the GPUs) a figure left out whole: the series of the
    first ones filled it."""

    unit: str  # "files" or "GPUs"
    left: tuple[str, ...]  # each one left out, named
    total: int

    def line(self, how: str = HOW_TO_SEE) -> str:
        """Say it on stderr or a page: how many were left out, which, how to see them."""
        named = ", ".join(self.left[:MAX_LISTED]) + (
            f" and {len(self.left) - MAX_LISTED:,} more" if len(self.left) > MAX_LISTED
            else "")
        return (f"{len(self.left):,} of {self.total:,} {self.unit} left out ({named}): a "
                f"figure holds {MAX_SERIES} series ({how})")

    def title(self) -> str:
        """Say it in a panel's legend, briefly."""
        return (f"{len(self.left):,} of {self.total:,} {self.unit} left out: a figure holds "
                f"{MAX_SERIES} series; {HOW_TO_SEE}")


@dataclass(frozen=True)
class Selection:
    """The rows a figure draws, the variants it draws in part, and the files (or GPUs) it
    left out."""

    rows: list[BenchmarkResult]
    cuts: tuple[Cut, ...]
    dropped: Dropped | None = None


def select(results: Sequence[BenchmarkResult], choice: Choice = Choice()) -> Selection:
    """Return the rows a figure draws: every timed, believed row, but of a variant with more
    than MAX_CONFIGS configurations (or the largest ones, while the figure holds more than
    MAX_SERIES series, its vendor and reference rows' among them) only its FASTEST
    configurations and its default; and where the series are still more, only the rows of
    the first files (of one file, the first GPUs) that they fit (_first_groups). Results
    are those the choice kept (Choice.rows): it names what narrowed a variant cut."""
    rows = plotted(results)
    configs: dict[VariantKey, dict[str, list[BenchmarkResult]]] = {}
    for r in rows:
        if r.kind is Kind.VARIANT:
            configs.setdefault((r.op, r.variant), {}).setdefault(
                params_text(r.params), []).append(r)
    crowded = _crowded(configs, _series([r for r in rows if r.kind is not Kind.VARIANT]))
    if not crowded:
        return _fitted(rows, ())
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
        within = choice.within(list(found[ranked[0]][0].params))
        cuts.append(Cut(*key, len(kept), len(found), default, within))
    return _fitted([r for r in rows if (r.op, r.variant, params_text(r.params)) not in hidden],
                   tuple(cuts))


def _fitted(rows: list[BenchmarkResult], cuts: tuple[Cut, ...]) -> Selection:
    """Return the selection of rows, less the files (or GPUs) past MAX_SERIES series."""
    kept, dropped = _first_groups(rows)
    return Selection(kept, cuts, dropped)


def _series_key(r: BenchmarkResult) -> tuple[object, ...]:
    """Return the series a row is drawn in: a line each configuration, type, hot or cold,
    device and file."""
    return (r.op, r.variant, params_text(r.params), r.dtype, r.hot, device_identity(r),
            r.origin)


def _series(rows: Iterable[BenchmarkResult]) -> int:
    """Return how many series rows make."""
    return len({_series_key(r) for r in rows})


def _first_groups(rows: list[BenchmarkResult]
                  ) -> tuple[list[BenchmarkResult], Dropped | None]:
    """Return the rows of the first files whose series fit MAX_SERIES (of one file, of
    its first GPUs; the first always), and what was left out. Every configuration a
    variant keeps (FASTEST and its default) of 30 files, their cuBLAS and copy rows
    beside, made 330 series: a figure ten times taller than wide, nearly all legend."""
    if _series(rows) <= MAX_SERIES:
        return rows, None
    files = len({r.origin for r in rows}) > 1
    groups: dict[object, list[BenchmarkResult]] = {}
    for r in rows:
        groups.setdefault(r.origin if files else device_identity(r), []).append(r)
    kept: list[BenchmarkResult] = []
    series: set[tuple[object, ...]] = set()
    left: list[str] = []
    for members in groups.values():
        more = series | {_series_key(r) for r in members}
        if left or (kept and len(more) > MAX_SERIES):
            left.append(members[0].origin if files else _device_text(members[0]))
        else:
            kept, series = kept + members, more
    if not left:  # one file on one GPU: nothing to leave out whole
        return rows, None
    chosen = {id(r) for r in kept}
    return ([r for r in rows if id(r) in chosen],
            Dropped("files" if files else "GPUs", tuple(left), len(groups)))


def _device_text(r: BenchmarkResult) -> str:
    """Name a row's GPU in a note: its index, and its UUID's start where known."""
    device = r.device
    if device is None:
        return "the device not recorded"
    return f"GPU {device.index}" + (f" ({device.uuid[:12]})" if device.uuid else "")


def styles_of(selection: Selection) -> Styles:
    """Return the styles of a selection's rows, which know what it left out."""
    styles = Styles.of(selection.rows)
    styles.cuts = {(cut.op, cut.variant): cut.title() for cut in selection.cuts}
    styles.defaults = {(cut.op, cut.variant, cut.default) for cut in selection.cuts
                       if cut.default}
    styles.dropped = selection.dropped.title() if selection.dropped else ""
    return styles


def drawn(results: Sequence[BenchmarkResult]) -> tuple[list[BenchmarkResult], Styles]:
    """Return the rows a figure draws and their styles."""
    selection = select(results)
    return selection.rows, styles_of(selection)


def _crowded(configs: dict[VariantKey, dict[str, list[BenchmarkResult]]], others: int = 0
             ) -> list[VariantKey]:
    """Return the variants to cut: those past MAX_CONFIGS, then the largest others while the
    figure holds more than MAX_SERIES series, the others (vendor and reference series) among
    them (a configuration on several devices, files, dtypes or hot and cold is a series
    each)."""
    series = {key: len({(params, r.dtype, r.hot, device_identity(r), r.origin)
                        for params, members in found.items() for r in members})
              for key, found in configs.items()}

    def left(key: VariantKey) -> float:  # its series once cut
        return series[key] * min(1.0, (FASTEST + 1) / len(configs[key]))

    crowded = [key for key in configs if len(configs[key]) > MAX_CONFIGS]
    total = others + sum(left(key) if key in crowded else series[key] for key in configs)
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
