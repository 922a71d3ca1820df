"""The command line: each command parses its options, makes one library call and renders."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib.util
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cudabench.cli.options import (
    Outputs,
    Placement,
    build_insight,
    DRY_RUN_ARCH,
    check_arch,
    dry_run_options,
    full_check_option,
    insight_options,
    placement_options,
    suite_flush_option,
    with_flush,
)
from cudabench.catalog.discovery import Catalog, check_folders, refuse_empty_folders
from cudabench.cli.stopped import RowsSoFar, keep_reports
from cudabench.cli.suite import find_config, load_suite
from cudabench.common.flag_terms import RUN_SUITE_KEYS, live
from cudabench.common.outfiles import PARTIAL, EachWritten, check_outputs, write_text
from cudabench.common.cache_dir import cache_root
from cudabench.common.phases import PhaseClock, process_age_s
from cudabench.common.units import params_text, shape_text
from cudabench.engines.protocol import EngineSpec
from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.engines.visibility import refuse_launch_blocking
from cudabench.errors import (
    CudabenchError,
    ExitCode,
    ResultsNotWritten,
    UsageError,
    ranked_code,
)
from cudabench.measure import memory
from cudabench.planning.plan import Plan, Request, make_plan, shown_notes
from cudabench.render import terminal
from cudabench.results import BenchmarkResult, RunOutcome
from cudabench.results.loader import check_replaceable
from cudabench.results.rounds import pool_all, pooling
from cudabench.results.writer import ResultsWriter, new_run_file
from cudabench.runner.devices import Slot, choose, shown_entries
from cudabench.runner.gpus import Fleet
from cudabench.runner.pipeline import count_rows, run_plans
from cudabench.runner.starting import discard_prestarted, keep_across_commands, prestart
from cudabench.runner.workers import discard_kept, finish_closing

if TYPE_CHECKING:  # Ray's glue is imported by a --cluster run alone
    from cudabench.analysis.time_profile import TimeProfile
    from cudabench.runner.ray_cluster import RayCluster



def engine_spec(device: int) -> EngineSpec:
    """Return the engine the commands run on: PyCUDA on one GPU (tests swap in a fake)."""
    return PycudaSpec(device)


@dataclass(frozen=True)
class Measured:
    """What one checked run measured, for the CLI to show or the Python API to return."""

    outcome: RunOutcome
    plans: list[Plan]
    slots: list[Slot] | None  # the GPUs of --devices, or None
    json_path: Path | None  # the results file the rows went to (a kept one under --record)
    versions: Mapping[str, str]  # the engine's and its libraries' versions
    clock: PhaseClock = dataclasses.field(default_factory=PhaseClock)  # this process's phases
    writer: ResultsWriter | None = None  # the results file's, to add the time profile
    # Why the results file could not be written at the end (a full disk), and where its
    # rows are: the tables are shown first, then this, as the command's error.
    write_error: str | None = None
    # --devices with --best: the GPUs' warm workers and which GPUs the run gave up
    fleet: Fleet | None = None
    # --cluster with --best: the cluster, left connected for the head-to-head (show)
    cluster: RayCluster | None = None


def run_and_render(requests: list[Request], device: int, outputs: Outputs,
                   dry_run: bool = False, arch: str | None = None,
                   placement: Placement | None = None) -> int:
    """Check every request, run them with progress on stderr, print and save the tables
    (arch: what --dry-run compiles for, default sm_90; a run compiles for its GPU)."""
    placement = placement or Placement()
    check_arch(arch, dry_run)
    arch = arch or DRY_RUN_ARCH
    if dry_run:
        check_placement(placement)
        check_combinations(outputs, placement)
        plans = plans_of(requests)
        # the outputs a run would refuse (a folder, an input, no write access): refused now
        check_outputs(output_paths(outputs), run_inputs(outputs, plans, requests))
        check_results_output(outputs)
        code = show_plan(plans, arch, placement.cluster)
        unwritten = [flag for flag, given in (
            ("--json", outputs.json_path), ("--markdown", outputs.markdown_path),
            ("--csv", outputs.csv_path), ("--best-out", outputs.best_out),
            ("--record", outputs.record)) if given]
        if unwritten:
            note(f"--dry-run measures nothing, so {', '.join(unwritten)} wrote nothing")
        return code
    measured = measure(requests, device, outputs, placement)
    try:
        code = show(measured, device, outputs)
    except BaseException:  # a second error (another full file, Ctrl-C) keeps the first said
        if measured.write_error is not None:
            note(measured.write_error)
        raise
    finally:  # the file is written: the next command of this process may write it
        if measured.writer is not None:
            measured.writer.close()
        if measured.fleet is not None:  # the GPUs' workers kept for --best: ended
            measured.fleet.close()  # however show ended (a stop before the head-to-head)
            finish_closing()
        if measured.cluster is not None:  # kept connected for --best's head-to-head
            measured.cluster.close()
    if measured.write_error is not None:
        raise ResultsNotWritten(measured.write_error)
    return code


def output_paths(outputs: Outputs) -> dict[str, Path | None]:
    """Return the files a run writes, by the flag that names each."""
    return {"--json": outputs.json_path, "--markdown": outputs.markdown_path,
            "--csv": outputs.csv_path, "--best-out": outputs.best_out,
            _store_flag(outputs.db): outputs.db if outputs.record else None}


def _store_flag(db: Path) -> str:
    """Return what names --record's store in messages: --db where it was given, else
    --record (its default store, or $CUDABENCH_HISTORY_DB's: no --db the user gave)."""
    from cudabench.history import default_store

    try:
        given = db != default_store()
    except CudabenchError:  # the variable's own mistake, said where the store is opened
        given = True
    return "--db" if given else "--record"


def check_results_output(outputs: Outputs) -> None:
    """Refuse a --json that holds a file that is no results file (notes.txt, a store: not
    written over). (An output named as its PATH.partial, where the rows stream while PATH
    exists, check_outputs refuses with every name ending so.)"""
    if outputs.json_path is not None:
        check_replaceable(outputs.json_path, "--json")
    for flag, path in (("--markdown", outputs.markdown_path), ("--csv", outputs.csv_path)):
        refuse_stopped_partial(flag, path)


def refuse_stopped_partial(flag: str, path: Path | None) -> None:
    """Refuse a report whose PATH.partial holds a stopped run's rows (cli/stopped.py): this
    run, stopped too, could keep its own nowhere, and never writes over them."""
    kept = path.with_name(path.name + PARTIAL) if path is not None else None
    if path is not None and kept is not None and path.exists() and kept.exists():
        raise UsageError(f"{flag} {path}: {kept} holds the rows of a run that stopped; "
                         "move it away or delete it first")


def check_combinations(outputs: Outputs, placement: Placement) -> None:
    """Refuse the outputs a placement cannot give (a dry run too: its command would fail)."""
    if outputs.best and placement.replicate:
        raise UsageError("--best re-measures close calls head to head on one GPU: use it "
                         "without --replicate (with --devices it re-measures on the first "
                         "GPU given that the run did not give up)")
    if outputs.record and placement.replicate:
        raise UsageError("--record keeps one row per benchmark and GPU model in the history "
                         "store, and --replicate measures each on every GPU: record a run "
                         "without --replicate")


def check_placement(placement: Placement) -> None:
    """Refuse, without a GPU, the --devices or --cluster text a run would refuse (how many
    GPUs there are is for the run to check)."""
    if placement.devices is not None and placement.devices.strip().lower() != "all":
        # the indices' syntax (`all` needs no check), and --replicate on one of them
        check_replicate(placement, choose(placement.devices, 1 << 20))
    if placement.cluster is not None:
        from cudabench.runner.ray_cluster import check_address

        check_address(placement.cluster)


def check_replicate(placement: Placement, slots: list[Slot] | None) -> None:
    """Refuse --replicate where --devices chose one GPU: it would run the benchmarks once,
    with no other GPU to compare (the count of `all` is known once the GPUs are counted)."""
    if placement.replicate and slots is not None and len(slots) == 1:
        alone = (", the only one visible" if str(placement.devices).strip().lower() == "all"
                 else "")
        raise UsageError(f"--replicate runs every benchmark on each chosen GPU to compare "
                         f"them, and --devices {placement.devices} chooses one (GPU "
                         f"{slots[0].index}{alone}): it needs two GPUs or more (e.g. "
                         "--devices 0,1)")


# what a note adds to a results file's first failed write (a full disk)
GOES_ON = "; the run goes on, and writes the file again with the next rows"


def note(text: str) -> None:
    """Print a note on stderr (a dry run's)."""
    terminal.stderr_console().print(f"note: {live(text)}", markup=False, highlight=False)


# Who else hears each row as it arrives (the Python API and the pytest plugin: a run
# stopped by Ctrl-C keeps the rows it measured); a context variable, so that no command's
# signature carries it; nested blocks each hear every row.
_ROW_LISTENERS: contextvars.ContextVar[tuple[Callable[[BenchmarkResult], None], ...]] = (
    contextvars.ContextVar("cudabench_row_listeners", default=()))


@contextlib.contextmanager
def rows_heard_by(listener: Callable[[BenchmarkResult], None]) -> Iterator[None]:
    """Call listener with every row measure() streams while the block runs."""
    token = _ROW_LISTENERS.set((*_ROW_LISTENERS.get(), listener))
    try:
        yield
    finally:
        _ROW_LISTENERS.reset(token)


def measure(requests: list[Request], device: int, outputs: Outputs,
            placement: Placement | None = None) -> Measured:
    """Check every request, then run them, streaming rows to outputs.json_path: the one way
    into the pipeline, for the CLI and the Python API (cudabench.api) alike.

    Progress goes to stderr as outputs.progress says; nothing is printed to stdout.
    """
    placement = placement or Placement()
    refuse_launch_blocking()  # before a worker starts: it would hang, not fail
    cache_root()  # a CUDABENCH_CACHE_DIR that names a file is said here, once, not in workers
    clock = PhaseClock()
    clock.add("start-up", process_age_s() or 0.0)  # the interpreter, imports, options
    one_gpu = placement.devices is None and placement.cluster is None
    # A cluster's actors keep their own workers (ray_cluster.py); here, this host's.
    keep_across_commands(placement.keep_workers_s if placement.cluster is None else 0.0)
    try:
        if one_gpu:  # its imports and CUDA context overlap with the planning
            prestart(engine_spec(device))
        return _measure(requests, device, outputs, placement, clock)
    finally:
        discard_prestarted()  # a usage error came first: its worker is not needed
        finish_closing()
        keep_across_commands(0.0)  # the next call (the Python API) decides for itself


def _measure(requests: list[Request], device: int, outputs: Outputs,
             placement: Placement, clock: PhaseClock) -> Measured:
    """measure, once a worker may be starting."""
    with clock.phase("planning"):
        plans, spec, slots, json_path, writer = _prepare(requests, device, outputs, placement)
    # Last of the checks: a Ray started for nothing would cost its start-up.
    cluster = None
    so_far = RowsSoFar(any(plan.timing.rounds > 1 for plan in plans))
    # --best re-measures on a GPU of the run's, one not given up in it, in its warm worker
    fleet = Fleet(slots) if slots and outputs.best else None
    kept = None  # --best: the cluster, connected still for the head-to-head
    try:
        if placement.cluster is not None:
            from cudabench.runner.ray_cluster import connect

            cluster = connect(placement.cluster, placement.keep_workers_s)
        outcome, versions = _run(plans, spec, slots, cluster, placement, outputs, writer,
                                 clock, so_far, fleet)
        if writer is not None and outcome.notes:  # a GPU given up, variants left out:
            writer.metadata["notes"] = list(dict.fromkeys(outcome.notes))  # report's
        # a stop in the end's write says where the rows are too (below)
        write_error = writer.finish() if writer is not None else None
        kept = cluster if outputs.best else None
    except BaseException:  # an error or Ctrl-C: say where the rows measured so far went
        if fleet is not None:  # no head-to-head will take them (measure joins them)
            fleet.close()
        stopped = writer.stopped_note() if writer is not None else None
        if writer is not None:  # written for the last time: the next run here may write it
            writer.close()
        if stopped is not None:
            note(stopped)
        elif writer is None:  # no results file: the reports keep them
            keep_reports({"--markdown": outputs.markdown_path, "--csv": outputs.csv_path},
                         so_far.rows, note)
        raise
    finally:
        if cluster is not None and kept is None:
            cluster.close()
    if write_error is not None:  # a full disk: the tables are still shown, then this
        json_path = None  # nothing of this run there to record or judge
    if writer is not None and writer.kept_note is not None:
        # The file at json_path is an earlier run's: nothing of this one to record or judge.
        note(writer.kept_note + ("; nothing recorded" if outputs.record else ""))
        json_path = None
    return Measured(outcome, plans, slots, json_path, versions, clock, writer, write_error,
                    fleet, kept)


def _prepare(requests: list[Request], device: int, outputs: Outputs, placement: Placement
             ) -> tuple[list[Plan], EngineSpec, list[Slot] | None, Path | None,
                        ResultsWriter | None]:
    """Check every request and make its plan, the GPUs, and the results file's writer:
    every usage error is raised here, before anything runs."""
    plans = plans_of(requests)  # usage errors first
    # The tools' modules only where asked for: each import is the start-up of every command.
    # On a cluster the nodes run the tools, not this host (a laptop that drives it): a node
    # without them says so in its rows.
    here = placement.cluster is None
    if here and any(plan.sanitize for plan in plans):
        from cudabench.observers.sanitizer import find_sanitizer

        # missing: a usage error now, not a row per variant later; a suite's entry named
        find_sanitizer(next((plan.entry for plan in plans if plan.sanitize), ""))
    if here and any(plan.insight.counters for plan in plans):
        from cudabench.observers.ncu import find_ncu

        find_ncu()
    check_combinations(outputs, placement)
    spec = engine_spec(device)
    slots = (choose(placement.devices, spec.count_devices(), shown_entries())
             if placement.devices is not None else None)
    check_replicate(placement, slots)
    if placement.cluster is None:  # a cluster: its nodes, not this host, hold the memory
        check_memory(plans, slots or [one_slot(device)])
    # An unwritable path, or one that reaches an input, fails now, not after the run.
    check_outputs(output_paths(outputs), run_inputs(outputs, plans, requests))
    check_results_output(outputs)
    if outputs.record:
        check_store(outputs.db)
    json_path = outputs.json_path
    if outputs.record and json_path is None:  # the store records a file: keep one
        json_path = new_run_file()
        # checked as --json is, before the run: a file named .cudabench, or a read-only
        # folder, lost a whole measured run at its end
        check_outputs({"--record": json_path}, run_inputs(outputs, plans, requests))
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--record: cannot make {json_path.parent} for the run's results "
                             f"file: {exc.strerror or exc}; give --json FILE") from None
    # --record's own file (no --json) is named by --record in its messages
    flag = "--json" if outputs.json_path is not None else "--record"
    writer = ResultsWriter(json_path, outputs.argv, flag) if json_path is not None else None
    return plans, spec, slots, json_path, writer


def check_store(db: Path) -> None:
    """Refuse the store a run would record in where it cannot: not a store, a newer one, one
    read-only; said now, not after the run (an empty file becomes one when recorded).
    Opened as its writer, which upgrades an older one."""
    if db.exists() and db.stat().st_size > 0:
        from cudabench.history.store import Store

        with Store.open(db, create=True):
            pass


def one_slot(device: int) -> Slot:
    """Return --device's GPU as a slot (its CUDA_VISIBLE_DEVICES entry, where set)."""
    entries = shown_entries() or []
    return Slot(device, entries[device] if device < len(entries) else str(device))


def check_memory(plans: list[Plan], slots: list[Slot]) -> None:
    """Raise UsageError, naming a size that fits, when a benchmark needs more memory than
    a GPU of slots or this host has free: before anything is allocated."""
    for slot in slots:
        memory.check(plans, memory.device_free_bytes(slot.visible),
                     memory.host_available_bytes(), f"GPU {slot.index}")


def _run(plans: list[Plan], spec: EngineSpec, slots: list[Slot] | None,
         cluster: RayCluster | None, placement: Placement, outputs: Outputs,
         writer: ResultsWriter | None, clock: PhaseClock, so_far: RowsSoFar | None = None,
         fleet: Fleet | None = None) -> tuple[RunOutcome, dict[str, str]]:
    """Run the plans where placement says, streaming rows to the writer (and so_far), the
    GPUs given up noted in fleet; return the outcome and the engine's versions."""
    copies = len(slots) if slots and placement.replicate else 1
    in_rounds = any(plan.timing.rounds > 1 for plan in plans)
    gpus = len(slots) if slots else 2 if cluster is not None else 1  # a cluster: several
    versions: dict[str, str] = {}
    with terminal.progress(count_rows(plans, copies), terminal.stderr_console(),
                           outputs.progress, gpus) as advance:

        started = time.perf_counter()
        listeners = _ROW_LISTENERS.get()

        def on_result(result: BenchmarkResult) -> None:
            with clock.phase("writing results"):
                if writer is not None:  # a row of a later round replaces its earlier one
                    failing = writer.stream_error is not None
                    writer.add(result, replace=in_rounds)
                    if writer.stream_error is not None and not failing:  # said as it starts
                        note(writer.stream_error + GOES_ON)
                elif so_far is not None:
                    so_far.add(result)
            for listener in listeners:
                listener(result)
            advance(result)

        def on_start(engine_versions: Mapping[str, str]) -> None:
            if not versions:  # the first GPU's worker: the run could not start before
                clock.add("worker start-up", time.perf_counter() - started)
            versions.update(engine_versions)
            if writer is not None:
                writer.start(engine_versions)

        # --rounds: each row reaches the writer and the tables pooled over its rounds
        listen = pooling(on_result) if in_rounds else on_result
        if cluster is not None:  # --best: its actors stay for the head-to-head
            outcome = cluster.run(plans, spec, listen, on_start, stay=outputs.best)
        else:
            # --best re-measures close calls after the run: in the same warm worker
            outcome = run_plans(plans, spec, listen, on_start=on_start, devices=slots,
                                replicate=placement.replicate, keep_worker=outputs.best,
                                fleet=fleet)
    if in_rounds:
        outcome = dataclasses.replace(outcome, results=tuple(pool_all(outcome.results)))
    if writer is not None:  # the file lists its rows as the run's tables do
        writer.follow(outcome.results)
    return outcome, versions


def _write_report(path: Path, text: str, flag: str, outcome: RunOutcome) -> None:
    """Write a report of the run, unless the run measured nothing and the file exists: a
    table of SKIP rows must not replace the last run's, as the results file is kept."""
    if _keeps_report(path, outcome):
        note(f"nothing was measured (no kernel's row has samples): {flag} {path} is as it was")
        return
    write_text(path, text, flag)


def _keeps_report(path: Path, outcome: RunOutcome) -> bool:
    """Return whether a report at path is kept as it was: it exists, and the run measured
    nothing (no kernel's row has samples)."""
    return path.exists() and not outcome.measured_something


def show(measured: Measured, device: int, outputs: Outputs) -> int:
    """Print a run's tables and diagnostics, save its reports, record it; return its exit
    code. Stopped before its run is recorded (Ctrl-C, SIGTERM while the tables print, a
    full disk), it says where the run's results are and how to record them."""
    # [False] once --record began to put the run in its store, [True] once it has
    recorded: list[bool] = []
    reported: dict[str, bool] = {}  # by flag, each report tried: whether it was written
    try:
        return _show(measured, device, outputs, recorded, reported)
    except BaseException as exc:
        if measured.writer is None:  # no results file: the reports keep the rows
            _keep_shown(measured.outcome, outputs, reported, isinstance(exc, KeyboardInterrupt))
        if outputs.record and measured.json_path is not None \
                and not _recorded(recorded, measured.json_path, outputs.db):
            note(f"the run's results are in {measured.json_path}, not recorded: record "
                 f"them with `cudabench history import {measured.json_path} --db "
                 f"{outputs.db}`")
        raise


def _recorded(recorded: list[bool], path: Path, db: Path) -> bool:
    """Return whether the run's results file at path is in the store at db, as show's
    recorded says; asked of the store where a stop came while it was recorded (record_files
    commits, then prints what it added: the run may be in)."""
    if not recorded or recorded[-1]:
        return bool(recorded)
    from cudabench.history.store import Store
    from cudabench.results.loader import load_results, read_text

    try:
        results = load_results(path)
        with Store.open(db, timeout_s=1.0) as store:
            return store.run_for(results, read_text(path)) is not None
    except Exception:  # a store that cannot say (locked, gone): said as not recorded
        return False


def _keep_shown(outcome: RunOutcome, outputs: Outputs, reported: dict[str, bool],
                stopped: bool) -> None:
    """Keep the rows of a run stopped (or failed) while shown, with no results file: in
    the reports not tried yet, as a stopped run's; and, stopped, say which hold them."""
    reports = {"--markdown": outputs.markdown_path, "--csv": outputs.csv_path}
    keep_reports({flag: path for flag, path in reports.items() if flag not in reported},
                 outcome.results, note)
    written = [f"{reports[flag]} ({flag})" for flag, done in reported.items() if done]
    if stopped and written:
        note(f"the run stopped after measuring: its {len(outcome.results)} rows are in "
             + ", ".join(written))


def _show(measured: Measured, device: int, outputs: Outputs, recorded: list[bool],
          reported: dict[str, bool]) -> int:
    """show, noting in recorded when the run is in its store, and in reported each report
    written."""
    outcome, clock = measured.outcome, measured.clock
    markdown = ""
    # a suite's run (`run`, calibrate): its advice names the suite's keys
    terms = RUN_SUITE_KEYS if outputs.inputs else None
    # A report that cannot be written (a full disk) costs neither the next one nor --best
    # nor --record: its error comes at the end.
    writes = EachWritten()
    with clock.phase("tables and reports"):
        # The reports before the tables: a stop while they print (Ctrl-C, a reader that
        # stalls) keeps every row in them.
        if outputs.markdown_path is not None:
            from cudabench.render.markdown import run_to_markdown

            markdown = run_to_markdown(outcome, terms)
            path = outputs.markdown_path
            kept = _keeps_report(path, outcome)
            writes.attempt(lambda: _write_report(path, markdown, "--markdown", outcome))
            if writes.errors or kept:  # not written: nothing for --best's winners to join
                markdown = ""
            reported["--markdown"] = bool(markdown)
        if outputs.csv_path is not None:
            from cudabench.render.csv_out import run_to_csv

            table = outputs.csv_path
            kept, before = _keeps_report(table, outcome), len(writes.errors)
            writes.attempt(lambda: _write_report(table, run_to_csv(outcome), "--csv", outcome))
            reported["--csv"] = len(writes.errors) == before and not kept
        terminal.render_run(outcome, terminal.stdout_console())
        terminal.render_diagnostics(outcome, terminal.stderr_console(), terms=terms)
        if outcome.nothing_measured:
            # exit 2 (exit_code): said, not left to the SKIP lines above
            terminal.stderr_console().print(
                "error: nothing was measured: every kernel was skipped (the SKIP lines say "
                "why)",
                style="bold red", markup=False, highlight=False, soft_wrap=True)
    code = int(outcome.exit_code)
    if outputs.best:
        with clock.phase("--best: head to head"):
            try:
                from cudabench.cli import best  # --best alone needs it

                spec, cluster = engine_spec(device), measured.cluster
                # a cluster's head-to-head is one benchmark: one actor, on one of its GPUs
                # (the run's, warm; the others end)
                rerun = ((lambda solo: cluster.run(solo, spec, lambda row: None, stay=True))
                         if cluster is not None else None)
                if cluster is not None:
                    cluster.end_idle(keep=1)
                choices, failed = best.choose(outcome, measured.plans, spec,
                                              best.head_to_head_gpus(measured.fleet, note),
                                              rerun, fleet=measured.fleet)
            except KeyboardInterrupt:
                note(best.stopped_note(measured.json_path, outputs.best_out))
                # the report has the rows: say why it has no winners
                if markdown and outputs.markdown_path is not None:
                    _write_report(outputs.markdown_path, markdown + best.STOPPED_MARKDOWN,
                                  "--markdown", outcome)
                raise  # (--record comes after the head-to-head: show says where the run is)
            finally:
                discard_kept()  # the run's worker, kept for the re-measure
                if measured.fleet is not None:  # --devices: each GPU's
                    measured.fleet.close()
                finish_closing()
            unchosen = best.without_winner(outcome.results)
            code = ranked_code([code, best.show_choices(choices, failed, outputs.best_out,
                                                        measured.plans, unchosen, writes)])
            if failed:  # a configuration wrong when measured again: FAIL in the files too
                outcome = best.with_failures(outcome, failed)
                if markdown:  # the run's tables say so too, above the winners
                    from cudabench.render.markdown import run_to_markdown

                    markdown = run_to_markdown(outcome, terms)
                if measured.json_path is not None:
                    writes.attempt(lambda: best.keep_failures(measured.writer, failed))
                if outputs.csv_path is not None:
                    from cudabench.render.csv_out import run_to_csv

                    table = outputs.csv_path
                    again = outcome
                    writes.attempt(lambda: _write_report(table, run_to_csv(again), "--csv",
                                                         again))
            if outputs.markdown_path is not None and markdown:  # the winners join the
                # run's tables
                path = outputs.markdown_path
                winners = best.choices_markdown(choices, failed, unchosen)
                writes.attempt(lambda: write_text(path, markdown + winners, "--markdown"))
    if any(plan.insight.profile_time for plan in measured.plans):
        show_time_profile(measured)
    if outputs.record and measured.json_path is not None \
            and not outcome.measured_something:  # a new file of SKIP rows: no run to keep
        note(f"nothing was measured: {measured.json_path} is not recorded")
    elif outputs.record and measured.json_path is not None:
        from cudabench.cli.history import RECORD_CHECK_CAP, check_file, record_files

        recorded.append(False)  # a locked or full store: show says where the rows are
        record_files([measured.json_path], outputs.db)
        recorded[-1] = True
        if outputs.check:
            code = max(code, check_file(measured.json_path, outputs.db,
                                        allow_missing=outputs.allow_missing,
                                        cap_from=RECORD_CHECK_CAP))
    writes.raise_any()
    return code


def show_time_profile(measured: Measured) -> TimeProfile:
    """Print where the run's wall time went on stderr and keep it in the results file."""
    from cudabench.analysis.time_profile import time_profile
    from cudabench.render.time_profile import COLUMNS as PROFILE_COLUMNS
    from cudabench.render.time_profile import profile_rows, profile_title

    # --devices: the GPUs chosen; a cluster's (its actors are Ray's to place): those whose
    # rows came back; one GPU: its own
    gpus = len(measured.slots) if measured.slots else max(1, len({
        row.device.identity for row in measured.outcome.results if row.device is not None}))
    profile = time_profile(process_age_s() or sum(measured.clock.totals.values()),
                           measured.clock.totals, measured.outcome.results, gpus)
    terminal.render_rows(profile_title(profile), PROFILE_COLUMNS, profile_rows(profile),
                         terminal.stderr_console())
    if measured.writer is not None and measured.write_error is None:
        measured.writer.metadata["profile"] = profile.to_dict()
        measured.writer.write(complete=True)
    return profile


def plans_of(requests: list[Request]) -> list[Plan]:
    """Check every request and make its plan (unique_points), all after one L2 flush."""
    # each set of kernels folders parsed once (a sweep's points, a suite's entries share it)
    discovered: dict[tuple[Path, ...], Catalog] = {}
    plans = unique_points([make_plan(request, discovered=discovered) for request in requests])
    # The first cold request of each flush, to name it: a suite's entry, else its op.
    firsts: dict[str, Request] = {}
    for request in requests:
        if not request.hot:
            firsts.setdefault(request.l2_flush, request)
    if len(firsts) > 1:
        first, second = (f"{flush} ({r.origin or r.op})" for flush, r in firsts.items())
        raise UsageError(f"one run asks for two L2 flushes, {first} and {second}: its copy "
                         "and cuBLAS rows, ratios and results file follow one; run the "
                         "benchmarks of each flush separately (--l2-flush, or the suite's "
                         "l2_flush)")
    return plans


def unique_points(plans: list[Plan]) -> list[Plan]:
    """Drop a variant (or its SKIP row) from a sweep's later points when an earlier point
    already runs (or skips) it the same way (a variant that does not take the swept
    parameter). One asked for twice with other settings (suite entries with their own seed,
    sanitizer, check, timing or insight) is a usage error: it was dropped unsaid, and both
    rows would have one name in the results file."""
    seen: dict[tuple[object, ...], dict[str, object]] = {}
    seen_skipped: set[tuple[object, ...]] = set()
    kept = []
    for plan in plans:
        variants = []
        for planned in plan.variants:
            key = (plan.op.name, planned.variant.name, tuple(sorted(planned.params.items())),
                   tuple(plan.shape), plan.dtype.name, plan.hot, plan.l2_flush)
            how: dict[str, object] = {
                "seed": plan.seed, "sanitize": plan.sanitize, "full_check": plan.full_check,
                "timing": plan.timing, "insight": plan.insight,
                "kernels_dirs": plan.kernels_dirs}
            if key not in seen:
                seen[key] = how
                variants.append(planned)
            elif seen[key] != how:
                differ = [name for name in how if how[name] != seen[key][name]]
                raise UsageError(
                    f"{plan.op.name}/{planned.variant.name} {params_text(planned.params)} at "
                    f"{shape_text(plan.shape)} {plan.dtype.name} is asked for twice, with "
                    f"another {', '.join(differ)}: its rows would share one name in the "
                    "results file; measure it once, or give each entry a size of its own")
        # its SKIP rows likewise: a point it cannot run is one row, not one per value of
        # a parameter it does not take
        skipped = []
        for variant, reason, point in plan.skipped:
            key = (plan.op.name, variant.name, tuple(sorted(point.items())), tuple(plan.shape),
                   plan.dtype.name, plan.hot, plan.l2_flush)
            if key not in seen_skipped:
                seen_skipped.add(key)
                skipped.append((variant, reason, point))
        kept.append(dataclasses.replace(plan, variants=tuple(variants), skipped=tuple(skipped)))
    return kept


def show_plan(plans: list[Plan], arch: str, cluster: str | None = None) -> int:
    """Print the plan and compile every kernel (no GPU); exit 2 if one does not compile or
    its launch would be refused, or every one would be skipped (as the run would exit 2).
    cluster: where a real run would go (--cluster)."""
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise UsageError(f"--arch {arch!r}: expected an architecture such as sm_90 or sm_90a")
    from cudabench.engines.nvcc import find_nvcc
    from cudabench.measure.dryrun import plan_rows, timing_lines

    rows = plan_rows(plans, arch, find_nvcc())
    # "parameters", not the run tables' "params": a long text that a narrow terminal shows
    # as a note (render/fit.py NOTED), since the plan is what is asked of a dry run
    columns = ("benchmark", "variant", "parameters", "launches (grid, block, dynamic shared)",
               "moves", "memory", "compiled")
    terminal.render_rows("cudabench --dry-run: nothing touches a GPU", columns,
                         [(r.benchmark, r.variant, r.params, r.launches, r.work, r.memory,
                           r.compiled) for r in rows], terminal.stdout_console())
    for line in timing_lines(plans):
        terminal.stdout_console().print(line, markup=False, highlight=False)
    notes = [*shown_notes(plans), *would_stop_here(plans, cluster)]
    for text in dict.fromkeys(notes):
        note(text)
    failed = [f"{r.benchmark.split()[0]}/{r.variant}" for r in rows if not r.compile_ok]
    if failed:  # said on stderr too: a narrow table keeps the reason in a numbered note
        terminal.stderr_console().print(
            f"error: {len(failed)} of {len(rows)} kernels would not run "
            f"({', '.join(dict.fromkeys(failed))}): the compiled column, or its note, says why",
            style="bold red", markup=False, highlight=False, soft_wrap=True)
    elif rows and all(r.skipped for r in rows):  # the run's "nothing was measured", exit 2
        terminal.stderr_console().print(
            "error: nothing would be measured: every kernel would be skipped (the compiled "
            "column, or its note, says why)",
            style="bold red", markup=False, highlight=False, soft_wrap=True)
        return int(ExitCode.USAGE)
    return int(ExitCode.OK if all(r.compile_ok for r in rows) else ExitCode.USAGE)


def would_stop_here(plans: list[Plan], cluster: str | None = None) -> list[str]:
    """Return, for a dry run, what a real run of the plans on this machine would refuse
    before measuring: CUDA_LAUNCH_BLOCKING set, no GPU visible (or no driver), a tool
    missing (ncu for --counters, compute-sanitizer for --sanitize) or more host memory
    than it has (the GPU's is not known here); with a cluster, Ray missing here (its
    nodes hold the GPUs, the tools and the memory). Notes, not errors."""
    if cluster is not None:
        from cudabench.runner.ray_cluster import ray_install_hint

        if importlib.util.find_spec("ray") is None:
            return [f"on this machine a run would stop here: --cluster {cluster}: Ray is not "
                    f"installed ({ray_install_hint(cluster)})"]
        return []
    from cudabench.observers.ncu import find_ncu
    from cudabench.observers.sanitizer import find_sanitizer

    def host_memory() -> None:
        memory.check(plans, None, memory.host_available_bytes())

    def a_gpu() -> None:  # counted without a CUDA context (NVML, CUDA_VISIBLE_DEVICES)
        if engine_spec(0).count_devices() < 1:
            raise UsageError("no CUDA GPU is visible (nvidia-smi; CUDA_VISIBLE_DEVICES)")

    notes = []
    for wanted, check in ((True, refuse_launch_blocking), (True, a_gpu),
                          (any(p.insight.counters for p in plans), find_ncu),
                          (any(p.sanitize for p in plans),
                           lambda: find_sanitizer(next((p.entry for p in plans if p.sanitize),
                                                       ""))),
                          (True, host_memory)):
        if wanted:
            try:
                check()
            except CudabenchError as exc:
                notes.append(f"on this machine a run would stop here: {exc}")
    return notes


def run_inputs(outputs: Outputs, plans: list[Plan], requests: list[Request]) -> list[Path]:
    """Return every file a run reads, which no output may be written over: its suite, its
    plans' kernels, headers and op files, and every source of its --kernels-dir folders."""
    return [*outputs.inputs, *plan_files(plans),
            *folder_sources({folder for request in requests for folder in request.kernels_dirs})]


def folder_sources(folders: set[Path]) -> list[Path]:
    """Return every source and op file in the --kernels-dir folders and their op folders
    (the two levels the catalog reads, and two beside an op file one level down): it
    reads each one's header, chosen or not, so an output written over one would break
    it."""
    from cudabench.catalog.discovery import op_folders_below
    from cudabench.runner.sources import SOURCE_SUFFIXES

    folders = {*folders, *op_folders_below(sorted(folder for folder in folders
                                                  if folder.is_dir()))}
    return [path for folder in sorted(folders) if folder.is_dir()
            for pattern in ("*", "*/*") for path in sorted(folder.glob(pattern))
            if path.suffix in SOURCE_SUFFIXES and path.is_file()]


def plan_files(plans: list[Plan]) -> list[Path]:
    """Return the files the plans read, no output may be written over one: the kernel
    files, the headers beside them, the files they include wherever those lie, and the
    op files."""
    from cudabench.runner.sources import source_paths

    variants = {variant.path: variant for plan in plans for variant in (
        *(p.variant for p in plan.variants), *(v for v, _, _ in plan.skipped))}  # once each
    return [*(Path(path) for path in variants), *source_paths(plans),
            *(path for variant in variants.values() for _, path, _ in variant.included_files())]


@click.command("run")
@click.argument("config", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="Write the results here; rewritten as benchmarks are measured (an existing "
              "file only once the run completes: PATH.partial until then).")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the tables as markdown (a CI job summary).")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Also load variants and ops (.py) from this folder (repeatable).")
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
              help="CUDA device index.")
@suite_flush_option
@dry_run_options()[0]
@dry_run_options()[1]
@full_check_option
@insight_options
@placement_options
def run_command(config: Path | None, json_path: Path | None, markdown_path: Path | None,
                kernels_dirs: tuple[Path, ...], device: int, l2_flush: str | None,
                dry_run: bool, arch: str | None, full_check: bool, **insight: Any) -> int:
    """Run the suite in CONFIG (default: ./cudabench.toml or [tool.cudabench] in pyproject.toml)."""
    # the flags first: `run --energy SUITE` took the suite for --energy's seconds, and a
    # --kernels-dir that is no folder was blamed on the suite's kernels_dirs
    check_folders(kernels_dirs)
    refuse_empty_folders(kernels_dirs)
    chosen = build_insight(insight)
    path = config or find_config(Path.cwd())
    # --writeback times what a cold sample leaves for the next flush: a hot entry has none
    hot = dataclasses.replace(chosen, writeback=False)
    requests = [dataclasses.replace(request, insight=hot if request.hot else chosen,
                                    full_check=request.full_check or full_check)
                for request in with_flush(load_suite(path, tuple(kernels_dirs)), l2_flush)]
    outputs = Outputs.of(insight, json_path=json_path, markdown_path=markdown_path,
                         inputs=(path,))
    return run_and_render(requests, device, outputs, dry_run=dry_run, arch=arch,
                          placement=Placement.of(insight, device))


@click.command("info")
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
              help="CUDA device index.")
def info(device: int) -> int:
    """Show the GPU, its limits and clocks, and the driver, CUDA and PyCUDA versions."""
    engine = engine_spec(device).open()
    try:
        terminal.render_device(engine.info, engine.versions, terminal.stdout_console())
    finally:
        engine.close()
    return 0
