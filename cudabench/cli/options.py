"""Options every benchmark command shares, and turning them into a Request."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cudabench.errors import UsageError
from cudabench.measure.counters import parse_metrics
from cudabench.measure.plan import Insight, Request
from cudabench.measure.timing import TimingPolicy
from cudabench.ops import Op

F = TypeVar("F", bound=Callable[..., Any])
ENERGY_DEFAULT_S = 5.0  # NVML's energy counter moves in ~100 ms steps: seconds, not ms


def parse_params(values: tuple[str, ...]) -> dict[str, int]:
    """Parse repeated --param NAME=VALUE options."""
    params: dict[str, int] = {}
    for text in values:
        name, sep, value = text.partition("=")
        name = name.strip()
        try:
            number = int(value, 0)
        except ValueError:
            number = None
        if not sep or not name.isidentifier() or number is None:
            raise UsageError(f"--param {text!r}: expected NAME=INTEGER, e.g. --param TILE=16")
        if name in params:
            raise UsageError(f"--param {name} given twice ({params[name]} and {number}); "
                             "give each parameter once")
        params[name] = number
    return params


def timing_options(function: F) -> F:
    """Add the measurement-policy options shared by every benchmark command."""
    defaults = TimingPolicy()
    options = [
        click.option("--hot", is_flag=True,
                     help="Do not flush the L2 cache before each sample (hot-cache numbers)."),
        click.option("--warmup", type=float, default=defaults.warmup_s, show_default=True,
                     help="Seconds of untimed warm-up launches per variant."),
        click.option("--min-samples", type=int, default=defaults.min_samples, show_default=True,
                     help="Samples to take at least."),
        click.option("--max-samples", type=int, default=defaults.max_samples, show_default=True,
                     help="Samples to take at most."),
        click.option("--precision", type=float, default=defaults.precision, show_default=True,
                     help="Stop once the median is known to this relative precision (95%)."),
        click.option("--max-time", type=float, default=defaults.max_time_s, show_default=True,
                     help="Seconds of sampling per variant before stopping anyway."),
        click.option("--timeout", type=float, default=defaults.timeout_s, show_default=True,
                     help="Seconds a variant's GPU work may take (its compile aside) before "
                     "it is killed and reported TIMEOUT."),
        click.option("--compile-timeout", type=float, default=defaults.compile_timeout_s,
                     show_default=True, help="Seconds a variant's compile may take."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def benchmark_options(op: Op) -> Callable[[F], F]:
    """Add the options every kernel-family command shares, with the op's defaults."""
    examples = " or ".join(op.size_forms.values())
    types = ", ".join(op.type_set(name).describe() for name in op.dtypes)

    def decorate(function: F) -> F:
        options = [
            click.option("--size", "-s", default=op.default_size, show_default=True,
                         help=f"Problem size: {examples}."),
            click.option("--dtype", default="float32" if "float32" in op.dtypes
                         else op.dtypes[0], show_default=True, help=f"Input type: {types}."),
            click.option("--variant", "variants", multiple=True, metavar="NAME",
                         help="Variant to run (repeatable); default all. See `cudabench list`."),
            click.option("--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
                         help="Set a kernel parameter (repeatable), e.g. -p TILE=32."),
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
            click.option("--device", type=int, default=0, show_default=True,
                         help="CUDA device index."),
            *dry_run_options(),
            click.option("--sanitize", type=click.Choice(["memcheck", "racecheck", "synccheck",
                                                          "initcheck"]),
                         is_flag=False, flag_value="memcheck", default=None,
                         help="Run each variant's checked launch again under "
                         "compute-sanitizer (default tool memcheck)."),
        ]
        for option in reversed(options):
            function = option(function)
        return insight_options(timing_options(function))

    return decorate


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
        click.option("--transfers", is_flag=True,
                     help="Also time host-to-device and device-to-host copies of the inputs "
                     "and result, pageable and pinned, against the link's peak."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def build_insight(options: dict[str, Any]) -> Insight:
    """Return what to measure beyond the samples, from the insight options."""
    energy_text = options.get("energy")
    energy_s = 0.0
    if energy_text is not None:
        try:
            energy_s = float(energy_text)
        except ValueError:
            energy_s = math.nan
        if not (math.isfinite(energy_s) and energy_s > 0):
            raise UsageError(f"--energy {energy_text}: expected seconds > 0, e.g. --energy 5")
    metrics_text = options.get("counters")
    return Insight(
        vendor=not options.get("no_vendor", False),
        batch=not options.get("no_batch", False),
        counters=parse_metrics(None if metrics_text == "default" else metrics_text)
        if metrics_text is not None else (),
        energy_s=energy_s,
        transfers=bool(options.get("transfers", False)),
    )


def dry_run_options() -> list[Callable[[F], F]]:
    """Return the --dry-run and --arch options (benchmark commands and `run`)."""
    return [
        click.option("--dry-run", is_flag=True,
                     help="Show the plan (variants, launches, bytes, FLOPs, memory) and "
                     "compile each kernel with nvcc; touch no GPU."),
        click.option("--arch", default="sm_90", show_default=True,
                     help="The architecture --dry-run compiles for, e.g. sm_80."),
    ]


def build_request(op: str, shortcuts: dict[str, tuple[str, int | None]], **options: Any
                  ) -> Request:
    """Build a Request from a command's options; shortcuts map --tile etc. to params."""

    params = parse_params(options["params"])
    flags = {}
    for name, (flag, value) in shortcuts.items():
        if value is None:
            continue
        if name in params:
            raise UsageError(f"{flag} and --param {name} both set {name}; give one")
        params[name] = value
        flags[name] = flag
    timing = TimingPolicy(
        warmup_s=options["warmup"], min_samples=options["min_samples"],
        max_samples=options["max_samples"], precision=options["precision"],
        max_time_s=options["max_time"], timeout_s=options["timeout"],
        compile_timeout_s=options["compile_timeout"],
    )
    return Request(
        op=op, size=options["size"], dtype=options["dtype"], variants=options["variants"],
        params=params, param_flags=flags, seed=options["seed"], hot=options["hot"],
        sanitize=options.get("sanitize"),
        timing=timing, kernels_dirs=tuple(options["kernels_dirs"]),
        insight=build_insight(options),
    )
