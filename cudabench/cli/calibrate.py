"""`cudabench calibrate`: run a suite several times into the history store, then show the
gate `compare --threshold auto` will use for each benchmark."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import click

from cudabench.catalog.discovery import check_folders, refuse_empty_folders
from cudabench.cli import commands
from cudabench.cli.commands import run_and_render
from cudabench.results.writer import RUNS_DIR, new_run_file
from cudabench.cli.options import Outputs, suite_flush_option, with_flush
from cudabench.cli.suite import find_config, load_suite
from cudabench.common.outfiles import check_outputs
from cudabench.common.units import params_text, shape_text
from cudabench.errors import UsageError, ranked_code
from cudabench.history import DEFAULT_HELP, default_store
from cudabench.history.store import Store
from cudabench.history.threshold import DEFAULT_MIN_RUNS, auto_threshold
from cudabench.planning.plan import Insight
from cudabench.render import terminal
from cudabench.results import Kind, RunOutcome, Status, load_results


@click.command("calibrate")
@click.argument("config", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--runs", type=click.IntRange(min=DEFAULT_MIN_RUNS, max=100), default=5,
              show_default=True,
              help="How many times to run the suite (--threshold auto needs "
              f"{DEFAULT_MIN_RUNS} runs of history).")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help=f"The history store the runs go to (default {DEFAULT_HELP}).")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Also load variants and ops (.py) from this folder (repeatable).")
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
              help="CUDA device index.")
@suite_flush_option
def calibrate_command(config: Path | None, runs: int, db: Path | None,
                      kernels_dirs: tuple[Path, ...], device: int, l2_flush: str | None) -> int:
    """Run a suite several times into the history store, then show each benchmark's
    between-run spread and the gate `compare --threshold auto` will use."""
    check_folders(kernels_dirs)  # named as the flag, not as the suite's kernels_dirs
    refuse_empty_folders(kernels_dirs)
    path = config or find_config(Path.cwd())
    store_path = db or default_store()
    requests = [dataclasses.replace(request, insight=Insight(vendor=True, batch=False))
                for request in with_flush(load_suite(path, tuple(kernels_dirs)), l2_flush)]
    # one stamp (to the microsecond, with the process) for the calibration's runs
    stamp = new_run_file("calibrate-").stem
    # The store (a folder, the suite itself, no store): said before "run 1 of 5" and
    # before any folder is made; a kernel file as the store is no store either.
    inputs = [path, *commands.folder_sources({folder for request in requests
                                              for folder in request.kernels_dirs})]
    check_outputs({"--db" if db is not None else "the history store": store_path}, inputs)
    commands.check_store(store_path)
    # compute-sanitizer missing, for an entry's sanitize: said so, naming the entry (each
    # run's check names --sanitize, which calibrate has not), before "run 1 of 5"
    sanitized = next((request for request in requests if request.sanitize), None)
    if sanitized is not None:
        from cudabench.observers.sanitizer import find_sanitizer

        find_sanitizer(sanitized.entry)
    # No GPU (no driver, none visible): said before "run 1 of 5" and before any folder
    commands.engine_spec(device).count_devices()
    made = [folder for folder in (RUNS_DIR, *RUNS_DIR.parents) if not folder.exists()]
    try:
        RUNS_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file named .cudabench, a read-only folder
        raise UsageError(f"calibrate: cannot make {RUNS_DIR} for the runs' results files: "
                         f"{exc.strerror or exc}; run it from a folder you can write to"
                         ) from None
    codes = []
    kept: Path | None = None
    argv = run_argv(config, kernels_dirs, device, l2_flush)
    try:
        for index in range(runs):
            terminal.stderr_console().print(f"calibrate: run {index + 1} of {runs}",
                                            markup=False)
            kept = RUNS_DIR / f"{stamp}-{index + 1}.json"
            outputs = Outputs(json_path=kept, record=True, db=store_path, progress=None,
                              inputs=(path,), argv=argv)
            codes.append(run_and_render(requests, device, outputs))
            # A run that measured nothing (every kernel skipped: a GPU too old for them)
            # is no history, and the next runs would measure nothing again.
            if kept.exists() and not RunOutcome(load_results(kept).benchmarks) \
                    .measured_something:
                kept.unlink()  # not recorded: no file of the run's to import later
                raise UsageError(f"calibrate: run {index + 1} of {runs} measured nothing (no "
                                 "kernel's row has samples: the lines above say why), no "
                                 "history to calibrate; stopped, its results file removed")
    except BaseException:  # refused before it wrote anything (a kernel's error), or
        for folder in made:  # measured nothing: no empty folders left behind
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    assert kept is not None  # runs >= 3
    last = load_results(kept)
    rows = []
    with Store.open(store_path) as store:
        for result in last.benchmarks:
            if not result.samples_s or result.kind is not Kind.VARIANT:
                continue  # compare gates kernels: a cuBLAS or copy row is no gate's
            if result.status is not Status.PASS:  # its runs are no history: say so, not
                # "floor 2%: only 0 runs in history" under "after 5 runs"
                gate, source = None, (f"none: {result.status} in the last run (a verified "
                                      "run is history)")
            else:
                gate, source = auto_threshold(store, result, result.device.name
                                              if result.device is not None else last.gpu_name)
            # a suite may time one benchmark hot and cold: their rows must differ
            rows.append((f"{result.op}/{result.variant}" + (" (hot)" if result.hot else ""),
                         params_text(result.params), shape_text(result.shape), result.dtype,
                         "-" if gate is None else f"{gate:.2%}", source))
    terminal.render_rows(f"compare --threshold auto after {runs} runs ({store_path})",
                         ("benchmark", "params", "shape", "dtype", "gate", "from"), rows,
                         terminal.stdout_console())
    return ranked_code(codes)


def run_argv(config: Path | None, kernels_dirs: tuple[Path, ...], device: int,
             l2_flush: str | None) -> list[str]:
    """Return the `cudabench run` command calibrate's runs are recorded as: the history
    gate's command key, under which `run --record --check` of the suite finds them (as
    `calibrate --runs 5` they were another command, and a kernel dropped since was not
    missing). Its --no-batch is left out: the batch time is not what the gate compares."""
    return ["run", *([str(config)] if config is not None else []),
            *(word for folder in kernels_dirs for word in ("--kernels-dir", str(folder))),
            *(["--device", str(device)] if device else []),
            *(["--l2-flush", l2_flush] if l2_flush is not None else [])]
