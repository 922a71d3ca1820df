"""The command line: each command parses its options, makes one library call and renders.

BoundaryGroup is the one error boundary: a CudabenchError becomes a one-line message and its exit
code; a traceback is shown only with --traceback.
"""

from __future__ import annotations

import sys
import traceback as traceback_module
from pathlib import Path

import click
from rich.text import Text

from cudabench import __version__
from cudabench.errors import CudabenchError, ExitCode, UsageError
from cudabench.timing import TimingPolicy


class BoundaryGroup(click.Group):
    """The one error boundary: errors become a one-line message and a typed exit code."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Run the CLI; Click's own usage errors also become one line and exit code 2."""
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Abort:
            _print_error("cudabench: interrupted")
            code = ExitCode.INTERRUPTED
        except click.ClickException as exc:
            where = f" (see `{exc.ctx.command_path} --help`)" if getattr(exc, "ctx", None) else ""
            _print_error(f"cudabench: error: {exc.format_message()}{where}")
            code = ExitCode.USAGE
        if not standalone_mode:
            return code
        sys.exit(int(code or 0))

    def invoke(self, ctx: click.Context):
        try:
            code = super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            _print_error("cudabench: interrupted")
            code = ExitCode.INTERRUPTED
        except CudabenchError as exc:
            if ctx.params.get("traceback"):
                traceback_module.print_exc()
            _print_error(f"cudabench: error: {exc}")
            code = exc.exit_code
        except Exception as exc:  # a bug: say so, and how to report it
            if ctx.params.get("traceback"):
                traceback_module.print_exc()
            _print_error(
                f"cudabench: internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in cudabench: re-run with --traceback and report the output."
            )
            code = ExitCode.INTERNAL
        ctx.exit(int(code or 0))


@click.group(cls=BoundaryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cudabench")
@click.option("--traceback", is_flag=True, help="Show the Python traceback of an error.")
def cli(traceback: bool) -> None:
    """Benchmark CUDA kernels: verified against NumPy, timed with CUDA events.

    Exit codes: 0 all verified; 1 regression (compare); 2 usage, environment or compile
    error; 3 a variant failed verification.
    """


def parse_params(values: tuple[str, ...]) -> dict[str, int]:
    """Parse repeated --param NAME=VALUE options."""
    params = {}
    for text in values:
        name, sep, value = text.partition("=")
        name = name.strip()
        try:
            number = int(value, 0)
        except ValueError:
            number = None
        if not sep or not name.isidentifier() or number is None:
            raise UsageError(f"--param {text!r}: expected NAME=INTEGER, e.g. --param TILE=16")
        params[name] = number
    return params


def timing_options(function):
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
    ]
    for option in reversed(options):
        function = option(function)
    return function


def benchmark_options(op_name: str, size_help: str):
    """Add the options every kernel-family command shares, with the op's defaults."""
    from cudabench.ops import OPS

    op = OPS[op_name]

    def decorate(function):
        options = [
            click.option("--size", "-s", default=op.default_size, show_default=True,
                         help=size_help),
            click.option("--dtype", default="float32", show_default=True,
                         help=" or ".join(op.dtypes) + "."),
            click.option("--variant", "variants", multiple=True, metavar="NAME",
                         help="Variant to run (repeatable); default all. See `cudabench list`."),
            click.option("--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
                         help="Set a kernel parameter (repeatable), e.g. -p TILE=32."),
            click.option("--seed", type=int, default=0, show_default=True,
                         help="Seed of the random inputs."),
            click.option("--kernels-dir", "kernels_dirs", multiple=True,
                         type=click.Path(path_type=Path),
                         help="Also load variants from this folder (repeatable)."),
            click.option("--json", "json_path", type=click.Path(path_type=Path),
                         help="Write the results to this JSON file."),
            click.option("--device", type=int, default=0, show_default=True,
                         help="CUDA device index."),
        ]
        for option in reversed(options):
            function = option(function)
        return timing_options(function)

    return decorate


def build_request(op: str, shortcuts: dict[str, tuple[str, int | None]], **options):
    """Build a plan.Request from a command's options; shortcuts map --tile etc. to params."""
    from cudabench.plan import Request

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
        max_time_s=options["max_time"],
    )
    return Request(
        op=op, size=options["size"], dtype=options["dtype"], variants=options["variants"],
        params=params, param_flags=flags, seed=options["seed"], hot=options["hot"],
        timing=timing, kernels_dirs=tuple(options["kernels_dirs"]),
    )


def run_and_render(requests, device: int, json_path: Path | None) -> int:
    """Check every request, run them on the GPU with progress on stderr, print the tables."""
    from cudabench import bench, report
    from cudabench.plan import make_plan

    plans = [make_plan(request) for request in requests]  # every usage error before the GPU
    writer = None
    if json_path is not None:
        from cudabench.results_writer import ResultsWriter

        writer = ResultsWriter(json_path)
    total = sum(len(plan.variants) + plan.op.copy_reference for plan in plans)
    with report.progress(total, report.stderr_console()) as advance:

        def on_result(result) -> None:
            if writer is not None:
                writer.add(result)
            advance(result)

        outcome = bench.run_plans(plans, device, on_result,
                                  on_device=writer.set_device if writer else None)
    if writer is not None:
        writer.write(complete=True)
    report.render_run(outcome, report.stdout_console())
    report.render_diagnostics(outcome, report.stderr_console())
    return int(outcome.exit_code)


@cli.command()
@benchmark_options("matmul", "N (square) or MxKxN.")
@click.option("--tile", type=int, help="TILE parameter: tile (and block) edge, e.g. 8, 16, 32.")
def matmul(tile, device, json_path, **options) -> int:
    """Matrix multiplication C = A @ B: naive, shared-memory tiles, bank conflicts."""
    request = build_request("matmul", {"TILE": ("--tile", tile)}, **options)
    return run_and_render([request], device, json_path)


@cli.command()
@benchmark_options("transpose", "N (square) or ROWSxCOLS; --inplace: N.")
@click.option("--tile", type=int, help="TILE parameter: tile edge, e.g. 8, 16, 32.")
@click.option("--inplace", is_flag=True, help="Transpose a square matrix in place.")
def transpose(tile, inplace, device, json_path, **options) -> int:
    """Matrix transpose, out of place or (--inplace) in place."""
    op = "transpose_inplace" if inplace else "transpose"
    request = build_request(op, {"TILE": ("--tile", tile)}, **options)
    return run_and_render([request], device, json_path)


@cli.command()
@benchmark_options("dot", "Vector length N (e.g. 1000000 or 1<<24).")
@click.option("--block", type=int, help="BLOCK parameter: threads per block (power of two).")
@click.option("--blocks-per-sm", type=int, help="BLOCKS_PER_SM: grid size = SMs x this.")
def dot(block, blocks_per_sm, device, json_path, **options) -> int:
    """Dot product of two vectors: shared-memory tree reduction, atomics."""
    shortcuts = {"BLOCK": ("--block", block), "BLOCKS_PER_SM": ("--blocks-per-sm", blocks_per_sm)}
    request = build_request("dot", shortcuts, **options)
    return run_and_render([request], device, json_path)


@cli.command("run")
@click.argument("config", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="Write the results here; rewritten after every benchmark.")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Also load variants from this folder (repeatable).")
@click.option("--device", type=int, default=0, show_default=True, help="CUDA device index.")
def run_command(config, json_path, kernels_dirs, device) -> int:
    """Run the suite in CONFIG (default: ./cudabench.toml or [tool.cudabench] in pyproject.toml)."""
    from cudabench.config import find_config, load_suite

    path = config or find_config(Path.cwd())
    return run_and_render(load_suite(path, tuple(kernels_dirs)), device, json_path)


@cli.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("current", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--threshold", default="5%", show_default=True,
              help="Smallest change that counts, e.g. 5% or 0.05.")
@click.option("--alpha", type=float, default=0.001, show_default=True,
              help="Significance level of the Mann-Whitney U test on the raw samples.")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the comparison as GitHub-flavoured markdown (CI job summary).")
@click.option("--allow-different-gpu", is_flag=True,
              help="Compare files measured on different GPU models.")
def compare_command(baseline, current, threshold, alpha, markdown_path,
                    allow_different_gpu) -> int:
    """Compare two results files; exit 1 on a significant slowdown or a new failure."""
    from cudabench import report
    from cudabench.compare import compare, parse_threshold, to_markdown
    from cudabench.results import load_results

    limit = parse_threshold(threshold)
    before, after = load_results(baseline), load_results(current)
    comparison = compare(before, after, limit, alpha, allow_different_gpu)
    if markdown_path is not None:
        try:
            markdown_path.write_text(to_markdown(comparison), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--markdown {markdown_path}: cannot write: {exc}") from None
    report.render_comparison(comparison, report.stdout_console())
    err = report.stderr_console()
    for loaded in (before, after):
        if loaded.metadata.get("complete") is False:
            err.print(Text(f"warning: {loaded.path} is incomplete (its run stopped early): the "
                           "benchmarks it lacks show as added or removed", style="yellow"),
                      soft_wrap=True)
    return int(comparison.exit_code)


@cli.command("list")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Also list variants from this folder (repeatable).")
def list_command(kernels_dirs) -> int:
    """List ops, their variants, parameters and files (no GPU needed)."""
    from cudabench import catalog, report
    from cudabench.ops import OPS

    report.render_catalog(catalog.discover(kernels_dirs), OPS, report.stdout_console())
    return 0


@cli.command()
@click.option("--device", type=int, default=0, show_default=True, help="CUDA device index.")
def info(device: int) -> int:
    """Show the GPU, its limits and clocks, and the driver, CUDA and PyCUDA versions."""
    from cudabench import report
    from cudabench.engine import Engine

    with Engine(device) as engine:
        report.render_device(engine.info, report.stdout_console())
    return 0


def main(argv: list[str] | None = None) -> None:
    """Run the command line (console script and `python -m cudabench`)."""
    cli.main(args=argv, prog_name="cudabench")


def _print_error(message: str) -> None:
    from cudabench.report import stderr_console

    stderr_console().print(Text(message, style="red"), soft_wrap=True)
