"""`--best --strategy/--budget`: a search over each variant's configurations at each size
(tuning/), then --best's head-to-head among the finalists, whatever the strategy.

Parameters not given with -p range over their header's allowed values; constraints and
launch limits prune the space before anything compiles; every evaluated configuration is
kept in the tuning cache, so a repeated or interrupted run measures only what is new.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cudabench.cli import best, commands
from cudabench.cli.options import Outputs, Placement, build_requests, parse_params, values_of
from cudabench.common.outfiles import check_outputs
from cudabench.common.units import params_text
from cudabench.engines import nvml
from cudabench.engines.protocol import EngineSpec
from cudabench.engines.visibility import refuse_launch_blocking
from cudabench.errors import ExitCode, ResultsNotWritten, UsageError
from cudabench.planning.plan import Plan
from cudabench.render import terminal
from cudabench.render.tune_progress import tune_progress
from cudabench.results.model import BenchmarkResult, RunOutcome, Status
from cudabench.results.rounds import identity
from cudabench.results.writer import ResultsWriter
from cudabench.runner.devices import Slot, choose, shown_entries
from cudabench.runner.gpus import Fleet
from cudabench.runner.pipeline import run_plans
from cudabench.runner.ray_cluster import RayCluster, connect
from cudabench.runner.starting import keep_across_commands
from cudabench.runner.workers import discard_kept, finish_closing
from cudabench.tuning.cache import lasting
from cudabench.tuning.search import Found, Settings, remember, search
from cudabench.tuning.space import Space, build_spaces


def run_tuning(op: str, shortcuts: dict[str, tuple[str, str | None]], options: dict[str, Any],
               device: int, outputs: Outputs, placement: Placement, settings: Settings) -> int:
    """Search every (size, variant) space, choose the winners head to head, print them."""
    if placement.replicate:
        raise UsageError("--replicate measures every benchmark on every GPU; a search spreads "
                         "its configurations over them instead: drop --replicate")
    # What a search does not do: refused, not silently left out.
    unsupported = [flag for flag, given in (
        ("--markdown", outputs.markdown_path is not None), ("--csv", outputs.csv_path is not None),
        ("--record", outputs.record), ("--counters", options.get("counters") is not None),
        ("--energy", options.get("energy") is not None),
        ("--writeback", bool(options.get("writeback"))),
        ("--transfers", bool(options.get("transfers"))),
        ("--profile-time", bool(options.get("profile_time"))),
        ("--sanitize", options.get("sanitize") is not None)) if given]
    if unsupported:
        raise UsageError(f"{', '.join(unsupported)}: not with a search (--strategy, --budget), "
                         "which measures configurations only; run --best without them, or "
                         "the chosen configuration with them (--best-out, then cudabench run)")
    given = parse_params(options["params"])
    for name, (flag, value) in shortcuts.items():
        if value is not None:
            if name in given:
                raise UsageError(f"{flag} and --param {name} both set {name}; give one")
            given[name] = values_of(value, flag)
    requests = build_requests(op, {}, **{**options, "params": ()})
    spaces = build_spaces(requests, given, explore=True,
                          announce=None if outputs.progress is False else commands.note,
                          note=commands.note)
    check_outputs({"--json": outputs.json_path, "--best-out": outputs.best_out,
                   "--markdown": outputs.markdown_path, "--csv": outputs.csv_path},
                  commands.run_inputs(outputs, [s.plans[0] for s in spaces if s.plans],
                                      requests))
    commands.check_results_output(outputs)
    spec = commands.engine_spec(device)
    slots = (choose(placement.devices, spec.count_devices(), shown_entries())
             if placement.devices is not None else None)
    if placement.cluster is None:  # a size beyond memory: refused now, as a run refuses it
        commands.check_memory([plan for space in spaces for plan in space.plans],
                              slots or [commands.one_slot(device)])
    refuse_launch_blocking()
    if settings.strategy == "bayes":
        from cudabench.tuning.strategies import load_optuna

        load_optuna()  # missing: the one-line usage error before anything runs
    cluster = (connect(placement.cluster, placement.keep_workers_s)
               if placement.cluster is not None else None)
    keep_across_commands(placement.keep_workers_s if cluster is None else 0.0)
    # the GPUs' warm workers and those given up, from one hand-out to the next
    fleet = Fleet(slots) if slots and cluster is None else None
    try:
        return _tune(spaces, spec, fleet, cluster, device, outputs, settings)
    finally:  # the warm workers end with the command, whichever way it ends
        discard_kept()
        if fleet is not None:
            fleet.close()
        finish_closing()
        keep_across_commands(0.0)
        if cluster is not None:
            cluster.close()


def _tune(spaces: Sequence[Space], spec: EngineSpec, fleet: Fleet | None,
          cluster: RayCluster | None, device: int, outputs: Outputs, settings: Settings
          ) -> int:
    """Run the searches, the head-to-head and the reports."""
    slots = fleet.slots if fleet is not None else None
    gpus = len(slots) if slots else 1
    # a cluster's nodes have toolkits and drivers of their own: its rows key on the model
    environment = tuning_environment() if cluster is None and settings.use_cache else ()
    settings = dataclasses.replace(settings, gpus=gpus, environment=environment)
    writer = (ResultsWriter(outputs.json_path, outputs.argv)
              if outputs.json_path is not None else None)
    started: list[bool] = []

    def on_start(versions: Mapping[str, str]) -> None:
        if writer is not None and not started:
            writer.start(versions)
        started.append(True)

    streamed: set[tuple[object, ...]] = set()  # the rows already in the results file

    def run(plans: Sequence[Plan], on_result: Callable[[BenchmarkResult], None]
            ) -> RunOutcome:
        def keep(row: BenchmarkResult) -> None:
            on_result(row)
            if writer is not None and identity(row) not in streamed:
                writer.add(row)  # streamed as measured: a stopped search keeps its rows
                streamed.add(identity(row))

        if cluster is not None:  # its actors stay warm for the next hand-out, as the
            # fleet's workers do (a Ray worker and a GPU worker each: seconds)
            return cluster.run(plans, spec, keep, on_start, stay=True)
        # Each hand-out in the workers of the last (one GPU: workers.keep; several: the
        # fleet's), not fresh ones: a worker's start (imports, CUDA context) is about a
        # second, paid by each hand-out of 8 or 32 configurations per GPU.
        return run_plans(plans, spec, keep, on_start=on_start, devices=slots,
                         keep_worker=True, fleet=fleet)

    model = None if cluster is not None else expected_model(spec, slots, device)
    stderr = terminal.stderr_console()
    found_all: list[Found] = []
    try:
        with tune_progress(stderr, outputs.progress) as update:
            for space in spaces:
                found = search(space, settings, run, model,
                               _reporter(update, space, settings))
                found_all.append(found)
        rows = [row for found in found_all for _, row in sorted(found.rows.items())]
        write_error = None
        # the GPUs given up over the hand-outs: said as a run says them
        notes = (fleet.notes if fleet is not None
                 else cluster.notes if cluster is not None else [])
        for text in notes:
            commands.note(text)
        if writer is not None:
            if notes:
                writer.metadata["notes"] = list(notes)
            for row in rows:  # the tuning cache's rows: in the file too, after the measured
                if identity(row) not in streamed:
                    writer.add(row, write=False)
            write_error = writer.finish()  # a full disk: the summaries and choices first
    except BaseException:  # Ctrl-C, an error, in the end's write too: say where the rows
        # measured so far are
        stopped = writer.stopped_note() if writer is not None else None
        if stopped is not None:
            commands.note(stopped)
        raise
    if writer is not None and writer.kept_note is not None:
        commands.note(writer.kept_note)
    for found in found_all:
        stderr.print(summary(found), markup=False, highlight=False)
    plans = [plan for found in found_all for plan in found.plans()]
    rerun = ((lambda solo: cluster.run(solo, spec, lambda row: None, stay=True))
             if cluster is not None else None)
    if cluster is not None:  # the head-to-head re-measures on one actor: the others go
        cluster.end_idle(keep=1)
    try:
        choices, failed = best.choose(RunOutcome(tuple(rows)), plans, spec,
                                      best.head_to_head_gpus(fleet, commands.note), rerun,
                                      fleet)
    except KeyboardInterrupt:  # the search's rows are written (and cached): say where
        commands.note(best.stopped_note(
            outputs.json_path if write_error is None else None, outputs.best_out,
            "the configurations measured are in the tuning cache (the search run again "
            "takes them)" if settings.use_cache else "the configurations measured are lost "
            "(no --json, and --no-tune-cache)"))
        raise
    for row in failed:  # wrong when measured again: FAIL in the file and the cache too
        remember([found.space for found in found_all], settings, row)
    if failed and writer is not None and write_error is None:
        try:
            best.keep_failures(writer, failed)
        except UsageError as exc:
            write_error = str(exc)
    rows = list(best.with_failures(RunOutcome(tuple(rows)), failed).results)
    # A search that chose nothing: none passed, every configuration pruned (the header's
    # constraints, the GPU's limits), or a budget spent before the first. Exit 2 whether or
    # not another search beside it chose one.
    pruned = [f.space for f in found_all if not f.space.plans]
    unseen = [f.space.label for f in found_all if f.space.plans and not f.done]
    lost = [f.space.label for f in found_all if f.best is None and f.done]
    if not rows:  # nothing measured at all: the one-line error
        if pruned:
            reasons = sorted({reason for space in pruned for reason in space.pruned})
            raise UsageError(f"{', '.join(space.label for space in pruned)}: every "
                             "configuration was pruned before it ran ("
                             + "; ".join(reasons) + "): choose other --param values")
        if unseen:
            raise UsageError(f"{', '.join(unseen)}: --budget ran out before any "
                             "configuration was evaluated; give a larger one")
    lines = ([f"{label}: no configuration passed; nothing chosen" for label in lost]
             + [f"{space.label}: every configuration was pruned before it ran ("
                + "; ".join(sorted(space.pruned)) + "); nothing chosen" for space in pruned]
             + [f"{label}: --budget ran out before any configuration was evaluated; nothing "
                "chosen" for label in unseen])
    for line in lines:
        stderr.print(line, markup=False, highlight=False)
    # A configuration that failed verification is a failed kernel, in a search as in a
    # sweep: its line, and exit 3 (a search used to say only "1 failed"). One that does not
    # compile (an error that would come again: the tuning cache keeps it) is routine in a
    # search that chose another: its line, no exit 2. Out of GPU memory, nvcc killed: the
    # environment's, exit 2 as in a run.
    searched = RunOutcome(tuple(rows))
    terminal.render_diagnostics(searched, stderr)
    routine = {row.key for f in found_all if f.best is not None for row in f.rows.values()
               if row.status is Status.ERROR and lasting(row)}
    judged = RunOutcome(tuple(row for row in rows if row.key not in routine))
    code = max(int(judged.exit_code), best.show_choices(choices, failed, outputs.best_out, plans),
               # a search chose nothing: exit 3 where one failed verification (searched
               # says so), else 2, as a run that could not run a kernel
               int(ExitCode.USAGE if lines else ExitCode.OK))
    if write_error is not None:
        raise ResultsNotWritten(write_error)
    return code


def _reporter(update: Callable[..., None], space: Space, settings: Settings
              ) -> Callable[[Found], None]:
    """Return the search's progress callback: done / total, best so far, ETA."""
    def report(found: Found) -> None:
        elapsed = time.monotonic() - found.started
        left = None
        if found.measured:
            left = elapsed / found.measured * (found.total - found.done)
        if settings.budget.seconds is not None:
            budget_left = max(0.0, settings.budget.seconds - elapsed)
            left = budget_left if left is None else min(left, budget_left)
        best_row = found.best
        update(space.label, found.done, found.total,
               best_row.median_s if best_row else None,
               params_text(best_row.params) if best_row else "", left)
    return report


def summary(found: Found) -> str:
    """Return one line on what a search did: its space, pruning, measuring, cache."""
    space = found.space
    pruned = sum(space.pruned.values())
    why = "; ".join(f"{count} {reason}" for reason, count in space.pruned.items())
    text = (f"{space.label}: {len(space.plans)} configurations"
            + (f" ({pruned} pruned before compiling: {why})" if pruned else "")
            + f"; {found.done} evaluated ({found.measured} measured, {found.cached} from the "
            f"tuning cache), {found.failed} failed")
    text += "".join(f"; held {held}" for held in space.held)
    return text + (f"; stopped: {found.stopped}" if found.stopped else "")


def tuning_environment() -> tuple[tuple[str, str | None], ...]:
    """Return the toolkit (`nvcc --version`) and driver versions of this host, part of the
    tuning cache's key: after an upgrade the cache's rows are measured again."""
    from cudabench.engines.compiler import toolkit_version
    from cudabench.engines.nvcc import find_nvcc

    found = find_nvcc()
    return (("toolkit", toolkit_version(found) if found else None),
            ("driver", nvml.driver_version()))


def expected_model(spec: EngineSpec, slots: list[Slot] | None, device: int) -> str | None:
    """Return the model of the GPU the search runs on, for its cache file (None: learnt
    from the first row)."""
    model = getattr(spec, "model", None)
    if callable(model):
        return str(model())
    entries = shown_entries()
    gpu = slots[0].visible if slots else (entries[device] if entries and device < len(entries)
                                          else device)
    return nvml.device_name(gpu)
