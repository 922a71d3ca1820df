"""Options every benchmark command shares, and turning them into a Request."""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from cudabench.errors import UsageError
from cudabench.history import DEFAULT_HELP, DEFAULT_PATH, default_store
from cudabench.planning.plan import SANITIZER_TOOLS, Insight, Request
from cudabench.planning.timing import TimingPolicy
from cudabench.ops import Op
from cudabench.ops.sizes import MAX_SWEEP_POINTS, expand_sizes, expand_values
from cudabench.results.model import DEFAULT_L2_FLUSH, L2_FLUSHES


class _Fraction(click.ParamType):
    """A fraction, `0.005`, or a percentage, `0.5%` (as --threshold takes it)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            return float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"{value!r} is not a fraction (0.005) or a percentage (0.5%)", param, ctx)


FRACTION = _Fraction()

F = TypeVar("F", bound=Callable[..., Any])
# --keep-workers' default for every command of a shell that sets it (cli/early.py reads it
# too); the flag, 0 included, wins.
KEEP_WORKERS_ENV = "CUDABENCH_KEEP_WORKERS"
ENERGY_DEFAULT_S = 5.0  # NVML's energy counter moves in ~100 ms steps: seconds, not ms


@dataclass(frozen=True)
class Outputs:
    """Where a benchmark command writes and what it prints beside its tables."""

    json_path: Path | None = None
    markdown_path: Path | None = None
    csv_path: Path | None = None
    progress: bool | None = None  # None: a bar on a terminal only
    best: bool = False
    best_out: Path | None = None
    record: bool = False  # append the run to the history store
    db: Path = DEFAULT_PATH  # with record: default_store() (CUDABENCH_HISTORY_DB)
    check: bool = False  # judge the recorded run against the store's history
    allow_missing: bool = False  # --check passes kernels the command's last runs had
    inputs: tuple[Path, ...] = ()  # files the run reads (its suite): never written over
    argv: list[str] | None = None  # the command a results file records (None: sys.argv)

    @classmethod
    def of(cls, options: dict[str, Any], **fields: Any) -> Outputs:
        """Return the outputs named by a command's shared options."""
        if options.get("check") and not options.get("record"):
            raise UsageError("--check judges the recorded run: give --record too")
        if options.get("allow_missing") and not options.get("check"):
            raise UsageError("--allow-missing is --check's: give --record --check too")
        if options.get("db") is not None and not options.get("record"):  # else: ignored
            raise UsageError("--db names the history store --record writes: give --record "
                             "too")
        return cls(csv_path=options.get("csv_path"), progress=options.get("progress"),
                   record=bool(options.get("record")),
                   # the variable is read only where the store is: a bad one stops no run
                   db=options.get("db") or (default_store() if options.get("record")
                                            else DEFAULT_PATH),
                   check=bool(options.get("check")),
                   allow_missing=bool(options.get("allow_missing")), **fields)


def keep_from_env() -> float:
    """Return the seconds CUDABENCH_KEEP_WORKERS keeps workers (0 where it is unset or
    empty); a value that is not seconds from 0 to 86400 is a usage error naming it."""
    text = os.environ.get(KEEP_WORKERS_ENV, "").strip()
    if not text:
        return 0.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= 86400:  # NaN fails too
        raise UsageError(f"{KEEP_WORKERS_ENV}={text!r}: expected the seconds an idle worker "
                         "is kept, 0 to 86400 (or unset it)")
    return seconds


@dataclass(frozen=True)
class Placement:
    """Where a benchmark command runs: one GPU (--device), several (--devices), every
    benchmark on each (--replicate), or a Ray cluster (--cluster)."""

    devices: str | None = None
    replicate: bool = False
    cluster: str | None = None
    keep_workers_s: float = 0.0  # --keep-workers: workers (a cluster: actors) kept this long

    @classmethod
    def of(cls, options: dict[str, Any], device: int) -> Placement:
        """Return the placement named by a command's options, checked against each other."""
        keep = options.get("keep_workers")
        placement = cls(devices=options.get("devices"), replicate=bool(options.get("replicate")),
                        cluster=options.get("cluster"),
                        keep_workers_s=float(keep if keep is not None else keep_from_env()))
        if not math.isfinite(placement.keep_workers_s):
            raise UsageError(f"--keep-workers {placement.keep_workers_s}: expected the seconds "
                             "an idle worker is kept, 0 to 86400")
        if placement.devices is not None and device != 0:
            raise UsageError(f"--device {device} and --devices {placement.devices} both choose "
                             "GPUs; give one")
        if placement.cluster is not None:
            if placement.devices is not None:
                raise UsageError("--cluster and --devices both place the work; give one (Ray "
                                 "hands each benchmark to a free GPU of the cluster)")
            if device != 0:
                raise UsageError(f"--cluster and --device {device} both place the work; give "
                                 "one")
            if placement.replicate:
                raise UsageError("--replicate runs every benchmark on every GPU of this host: "
                                 "use it with --devices, not --cluster")
        if placement.replicate and placement.devices is None:
            raise UsageError("--replicate needs the GPUs to repeat the run on: add "
                             "--devices all (or e.g. --devices 0,1)")
        return placement


def placement_options(function: F) -> F:
    """Add --devices, --replicate and --cluster (benchmark commands and `run`)."""
    options = [
        click.option("--devices", default=None, metavar="all|I,J,...",
                     help="Spread the benchmarks over these GPUs (indices as nvidia-smi "
                     "counts them, or all): one worker per GPU, each benchmark with its "
                     "variants and reference rows on one GPU."),
        click.option("--replicate", is_flag=True,
                     help="With --devices (two GPUs or more): run every benchmark on every "
                     "chosen GPU and show the spread across them (is one card slower than "
                     "its siblings?)."),
        click.option("--cluster", default=None, metavar="ray|ray://HOST:PORT",
                     help="Spread the benchmarks over a Ray cluster's GPUs, one Ray actor "
                     "per GPU, each benchmark with its variants and reference rows on one "
                     "GPU: a local Ray (or RAY_ADDRESS's cluster), or the one at "
                     "ray://HOST:PORT (Ray: the `ray` extra, pip install ray)."),
        click.option("--keep-workers", "keep_workers", default=None, metavar="SECONDS",
                     type=click.FloatRange(min=0, max=86400),
                     help="Keep each GPU's worker (its process, CUDA context and CuPy) for "
                     "SECONDS after the run, for the next command to reuse instead of "
                     "starting one (about a second on one host, seconds on a Ray cluster); "
                     "each ends after SECONDS without work. With --cluster: one actor per "
                     f"GPU, worth it on a Ray that outlives the command. Default: "
                     f"${KEEP_WORKERS_ENV}, else 0 (not kept)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def parse_params(values: tuple[str, ...]) -> dict[str, list[int]]:
    """Parse repeated --param NAME=VALUES options (a value, a list 8,16,32 or 8..64:x2)."""
    params: dict[str, list[int]] = {}
    for text in values:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or not value.strip():
            raise UsageError(f"--param {text!r}: expected NAME=INTEGER, e.g. --param TILE=16 "
                             "(or a sweep: TILE=8,16,32)")
        if name in params:
            raise UsageError(f"--param {name} given twice; give each parameter once "
                             "(a list sweeps it: --param TILE=8,16,32)")
        params[name] = _values(value, f"--param {name}")
    return params


def _values(text: str, flag: str) -> list[int]:
    """Return the integers of a parameter value: `16`, `0x10`, `8,16,32` or `8..64:x2`."""
    longest = max(re.split(r"[^0-9A-Za-z_]+", text), key=len)
    if len(longest) > 40:  # no parameter is that long (and int() refuses 4300 digits)
        raise UsageError(f"{flag} {longest[:20]!r}...: a number of {len(longest)} "
                         "characters; parameters are integers such as 16")
    # not int(text, 0): it took 1_6, +16 and full-width digits for 16 without a word
    values = expand_values(text, flag)
    for value in values:  # a results file holds 64-bit integers: one beyond is unreadable
        if not -2**63 <= value < 2**63:
            raise UsageError(f"{flag} {value}: beyond a 64-bit integer; parameters are "
                             "integers such as 16")
    return values


values_of = _values  # the tuning path parses -p and its shortcuts the same way


l2_flush_option = click.option(
    "--l2-flush", type=click.Choice(L2_FLUSHES), default=DEFAULT_L2_FLUSH, show_default=True,
    help="How the L2 is flushed before each cold sample: clean (read twice its size, as "
         "Nsight Compute's cache control leaves it: no sample writes back another's dirty "
         "lines) or memset (overwrite it, as nvbench does: each sample also writes back "
         "the flush's dirty lines).")


# A suite's commands (run, calibrate): one flush for every entry, whatever the file says.
suite_flush_option = click.option(
    "--l2-flush", type=click.Choice(L2_FLUSHES), default=None,
    help="Flush the L2 this way before every cold sample of the suite (clean or memset, as "
         "the benchmark commands' --l2-flush), whatever its entries say.")


def with_flush(requests: list[Request], l2_flush: str | None) -> list[Request]:
    """Return the requests with their cold samples flushed by l2_flush (None: as they say);
    --hot entries flush nothing and keep theirs, and a suite of hot entries alone is
    refused the flag (it was ignored without a word)."""
    if l2_flush is None:
        return requests
    if requests and all(request.hot for request in requests):
        raise UsageError(f"--l2-flush {l2_flush} flushes cold samples only; every benchmark "
                         "of the suite is hot (hot = true), so it does nothing: leave it out")
    return [request if request.hot else dataclasses.replace(request, l2_flush=l2_flush)
            for request in requests]


def timing_options(function: F) -> F:
    """Add the measurement-policy options shared by every benchmark command."""
    defaults = TimingPolicy()
    options = [
        click.option("--hot", is_flag=True,
                     help="Do not flush the L2 cache before each sample (hot-cache numbers)."),
        l2_flush_option,
        click.option("--warmup", type=float, default=defaults.warmup_s, show_default=True,
                     help="Seconds of untimed warm-up launches per variant."),
        click.option("--min-samples", type=int, default=defaults.min_samples, show_default=True,
                     help="Samples to take at least."),
        click.option("--max-samples", type=int, default=defaults.max_samples, show_default=True,
                     help="Samples to take at most."),
        click.option("--precision", type=FRACTION, default=defaults.precision,
                     show_default=True,
                     help="Stop once the median is known to this relative precision (95%): "
                     "a fraction, 0.005, or a percentage, 0.5%."),
        click.option("--max-time", type=float, default=defaults.max_time_s, show_default=True,
                     help="Seconds of sampling per variant before stopping anyway."),
        click.option("--timeout", type=float, default=defaults.timeout_s, show_default=True,
                     help="Seconds a variant's GPU work may take (its compile aside) before "
                     "it is killed and reported TIMEOUT."),
        click.option("--compile-timeout", type=float, default=defaults.compile_timeout_s,
                     show_default=True, help="Seconds a variant's compile may take."),
        click.option("--rounds", type=int, default=defaults.rounds, show_default=True,
                     help="Measure each benchmark's rows N times in alternating order, on "
                     "buffers placed afresh each round, and pool each row's samples: ratios "
                     "between rows then hold to a few tenths of a percent."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _extent_range(extents: int) -> str:
    """Return --size's example of a range in one extent, for an op of that many extents."""
    if extents < 2:
        return ""
    example = "x".join(["4096", "256..4096:x2", *["4096"] * (extents - 2)])
    return f" (a range per extent too: {example})"


def benchmark_options(op: Op) -> Callable[[F], F]:
    """Add the options every kernel-family command shares, with the op's defaults."""
    examples = " or ".join(op.size_forms.values())
    types = ", ".join(op.type_set(name).describe() for name in op.dtypes)

    def decorate(function: F) -> F:
        options = [
            click.option("--size", "-s", default=op.default_size, show_default=True,
                         help=f"Problem size: {examples}; a sweep: 256,512 or 256..8192:x2"
                         f"{_extent_range(max(op.size_forms, default=1))}."),
            click.option("--dtype", default=op.default_dtype, show_default=True,
                         help=f"Input type: {types}."),
            click.option("--variant", "variants", multiple=True, metavar="NAME",
                         help="Variant to run (repeatable); default: every variant but those "
                         "marked `run: on request`; `all`: every variant. See `cudabench list`."),
            click.option("--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
                         help="Set a kernel parameter (repeatable), e.g. -p TILE=32; a list or "
                         "range sweeps it: -p TILE=8,16,32."),
            click.option("--seed", type=int, default=0, show_default=True,
                         help="Seed of the random inputs."),
            click.option("--kernels-dir", "kernels_dirs", multiple=True,
                         type=click.Path(path_type=Path),
                         help="Also load variants and ops (.py) from this folder (repeatable)."),
            click.option("--json", "json_path", type=click.Path(path_type=Path),
                         help="Write the results to this JSON file."),
            click.option("--markdown", "markdown_path",
                         type=click.Path(path_type=Path, dir_okay=False),
                         help="Also write the tables as markdown (a CI job summary)."),
            click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
                         help="CUDA device index."),
            *dry_run_options(),
            click.option("--best", is_flag=True,
                         help="Name the fastest passing configuration per variant and size "
                         "(an autotuner over the sweep); close calls are re-measured head to "
                         "head, and a tie is said to be one."),
            click.option("--best-out", type=click.Path(path_type=Path, dir_okay=False),
                         help="With --best: write the winners as a suite (cudabench.toml "
                         "entries)."),
            *tune_options(),
            click.option("--sanitize", type=click.Choice(SANITIZER_TOOLS),
                         is_flag=False, flag_value="memcheck", default=None,
                         help="Run each variant's checked launch again under "
                         "compute-sanitizer (default tool memcheck)."),
            full_check_option,
        ]
        for option in reversed(options):
            function = option(function)
        return placement_options(insight_options(timing_options(function)))

    return decorate


def tune_options() -> list[Callable[[F], F]]:
    """Return --strategy, --budget and --no-tune-cache (with --best: a search)."""
    return [
        click.option("--strategy", type=click.Choice(["brute", "random", "bayes"]),
                     default=None, help="With --best: search every allowed configuration "
                     "(parameters without -p range over their header's allowed values) by "
                     "brute force, random sampling, or Optuna's TPE (bayes: the `tune` extra, "
                     "pip install optuna); --seed seeds it. Default brute when --budget is "
                     "given."),
        click.option("--budget", default=None, metavar="N|TIME|N,TIME",
                     help="With --best: per variant and size (each search), evaluate at "
                     "most N configurations and/or start no new ones after TIME (90s, 10m, "
                     "1h)."),
        click.option("--no-tune-cache", is_flag=True,
                     help="With --strategy/--budget: neither read nor write the tuning cache "
                     "(CUDABENCH_CACHE_DIR/tune; delete that folder to clear it)."),
    ]


full_check_option = click.option(
    "--full-check", is_flag=True,
    help="Verify every element against the full float64 reference, also where a randomized "
    "check is used by default (of the built-in ops, only matmul beyond about 400^3 uses "
    "one; docs/verification.md).")


def insight_options(function: F) -> F:
    """Add the options that measure more than the samples: vendor rows, counters, energy."""
    options = [
        click.option("--no-vendor", is_flag=True,
                     help="Skip the vendor library's row (cuBLAS through CuPy)."),
        click.option("--no-batch", is_flag=True,
                     help="Skip the batch time (back-to-back launches, warm L2)."),
        click.option("--counters", is_flag=False, flag_value="default", default=None,
                     metavar="[METRICS]",
                     help="Profile each variant once more under Nsight Compute (ncu): a default "
                     "set, or the comma-separated ncu metric names given."),
        click.option("--energy", is_flag=False, flag_value=str(ENERGY_DEFAULT_S), default=None,
                     metavar="[SECONDS]",
                     help=f"Measure joules per launch over a pass of back-to-back launches "
                     f"(default {ENERGY_DEFAULT_S:g} s; NVML's energy counter)."),
        click.option("--writeback", is_flag=True,
                     help="Also time what each row leaves for the L2 to write back: a cold "
                     "sample ends with its last writes still in the L2, written back by the "
                     "next flush, off its clock. Shown behind the times, with each row's time "
                     "plus its own write-back."),
        click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False),
                     help="Also write one CSV row per benchmark to this file."),
        click.option("--progress/--quiet", "progress", default=None,
                     help="Force the progress display on stderr (a line per benchmark when "
                     "stderr is not a terminal), or silence it. Default: a live bar on a "
                     "terminal, nothing otherwise."),
        click.option("--record", is_flag=True,
                     help="Append the run to the history store (--db); without --json the "
                     "results are kept in .cudabench/runs/."),
        click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=None,
                     help=f"The history store (default {DEFAULT_HELP})."),
        click.option("--check", is_flag=True,
                     help="With --record: judge the run against the store's last runs "
                     "(exit 1 on a regression, like compare)."),
        click.option("--allow-missing", is_flag=True,
                     help="With --check: pass although kernels that the last runs of this "
                     "command measured are not in this run (removed on purpose)."),
        click.option("--transfers", is_flag=True,
                     help="Also time host-to-device and device-to-host copies of the inputs "
                     "and result, pageable and pinned, against the link's peak."),
        click.option("--profile-time", is_flag=True,
                     help="Say where the wall time went (start-up, compile, inputs, CPU "
                     "reference, samples, verification...): a table on stderr, kept in the "
                     "results file."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


MAX_ENERGY_S = 3600.0  # seconds of --energy a variant, at most


def build_insight(options: dict[str, Any]) -> Insight:
    """Return what to measure beyond the samples, from the insight options."""
    energy_text = options.get("energy")
    energy_s = 0.0
    if energy_text is not None:
        if energy_text.endswith((".toml", ".json")) or Path(energy_text).is_file():
            # `run --energy suite.toml`: the optional value took the suite's path
            raise UsageError(f"--energy {energy_text}: {energy_text!r} is a file, not "
                             "seconds; give the file before the option (cudabench run "
                             "SUITE --energy) or the seconds as --energy=SECONDS")
        try:
            energy_s = float(energy_text)
        except ValueError:
            energy_s = math.nan
        if not (math.isfinite(energy_s) and energy_s > 0):
            raise UsageError(f"--energy {energy_text}: expected seconds > 0, e.g. --energy 5")
        if energy_s > MAX_ENERGY_S:  # it extends the watchdog's deadline: 1e30 never ended
            raise UsageError(f"--energy {energy_text}: at most {MAX_ENERGY_S:g} s of energy "
                             "sampling a variant")
    metrics_text = options.get("counters")
    counters: tuple[str, ...] = ()
    if metrics_text is not None:  # ncu's module only where --counters asks for it
        from cudabench.observers.ncu import parse_metrics

        counters = parse_metrics(None if metrics_text == "default" else metrics_text)
    return Insight(
        vendor=not options.get("no_vendor", False),
        batch=not options.get("no_batch", False),
        counters=counters,
        energy_s=energy_s,
        writeback=bool(options.get("writeback", False)),
        transfers=bool(options.get("transfers", False)),
        profile_time=bool(options.get("profile_time", False)),
    )


DRY_RUN_ARCH = "sm_90"  # what --dry-run compiles for without --arch


def check_arch(arch: str | None, dry_run: bool) -> None:
    """Refuse --arch without --dry-run: taken, and silently unused."""
    if arch is not None and not dry_run:
        raise UsageError(f"--arch {arch}: is the architecture --dry-run compiles for; give "
                         "--dry-run too (a run compiles for the GPU it runs on)")


def dry_run_options() -> list[Callable[[F], F]]:
    """Return the --dry-run and --arch options (benchmark commands and `run`)."""
    return [
        click.option("--dry-run", is_flag=True,
                     help="Show the plan (variants, launches, bytes, FLOPs, memory) and "
                     "compile each kernel with nvcc; touch no GPU."),
        click.option("--arch", default=None,
                     help=f"The architecture --dry-run compiles for, e.g. sm_80 (default "
                     f"{DRY_RUN_ARCH})."),
    ]


def build_requests(op: str, shortcuts: dict[str, tuple[str, str | None]], **options: Any
                   ) -> list[Request]:
    """Build the Requests of a command: one, or one per point of a sweep (the product of
    every size and every parameter value given as a list or range)."""
    params = parse_params(options["params"])
    flags = {}
    for name, (flag, value) in shortcuts.items():
        if value is None:
            continue
        if name in params:
            raise UsageError(f"{flag} and --param {name} both set {name}; give one")
        params[name] = _values(value, flag)
        flags[name] = flag
    timing = TimingPolicy(
        warmup_s=options["warmup"], min_samples=options["min_samples"],
        max_samples=options["max_samples"], precision=options["precision"],
        max_time_s=options["max_time"], timeout_s=options["timeout"],
        compile_timeout_s=options["compile_timeout"], rounds=options.get("rounds", 1),
    )
    size = options["size"]
    sizes = expand_sizes(size) if size and ("," in size or ".." in size) else [size]
    names = list(params)
    count = len(sizes) * math.prod(len(params[name]) for name in names)  # before making them
    if count > MAX_SWEEP_POINTS:
        raise UsageError(f"the sweep has {count:,} points, more than {MAX_SWEEP_POINTS:,}; "
                         "use fewer sizes or parameter values")
    points = [dict(zip(names, combo)) for combo in itertools.product(
        *(params[name] for name in names))]
    sweep = len(sizes) * len(points) > 1
    insight = build_insight(options)
    return [Request(
        op=op, size=size_text, size_typed=size if size != size_text else "",
        dtype=options["dtype"], variants=options["variants"],
        params=point, param_flags=flags, seed=options["seed"], hot=options["hot"],
        l2_flush=options.get("l2_flush", DEFAULT_L2_FLUSH), sanitize=options.get("sanitize"),
        timing=timing,
        kernels_dirs=tuple(options["kernels_dirs"]), insight=insight, sweep=sweep,
        full_check=bool(options.get("full_check")),
    ) for size_text in sizes for point in points]
