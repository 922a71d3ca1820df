"""`cudabench ab OLD_DIR NEW_DIR`: each variant in both kernel folders, A against B, in one run.

Each side's catalog comes from its own folder alone (never the built-in kernels/), so a
variant missing from a folder is listed as added or removed, not stood in for by the
built-in one of that name. Each side's copy of a variant is a single-variant plan; the
rounds are its jobs, interleaved A, B, then B, A, through one run_plans call: one worker,
the same inputs (seed) and clocks for both. A copy that fails in a round (a wrong result,
a hang, a crash) is not run again in later rounds, as --rounds does. The statistics and
the verdicts are analysis/ab.py's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from cudabench.analysis.ab import (
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    ABResult,
    ABRun,
    added_failure,
    check_settings,
    judge,
    level_text,
)
from cudabench.analysis.verdicts import Verdict, parse_threshold
from cudabench.catalog import Catalog, parse_header
from cudabench.catalog.discovery import (
    check_folders,
    kernel_files,
    op_folders_below,
    refuse_empty_folders,
)
from cudabench.common.flag_terms import AB_FLAGS, rename_flags
from cudabench.common.infiles import not_a_folder
from cudabench.common.lazy import signals_held
from cudabench.engines.visibility import refuse_launch_blocking
from cudabench.cli.options import l2_flush_option, parse_params
from cudabench.errors import KernelFileError, ResultsNotWritten, UsageError
from cudabench.measure.jobs import NOT_REPEATED, Job
from cudabench.runner.pipeline import run_plans
from cudabench.planning.plan import Insight, Plan, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.runner.workers import finish_closing
from cudabench.ops import Op, load_ops
from cudabench.ops.base import default_dtype
from cudabench.common.outfiles import EachWritten, check_outputs, write_text
from cudabench.render import terminal
from cudabench.render.comparison import benchmark_name
from cudabench.render.markdown import markdown_cell
from cudabench.ops.sizes import expand_sizes
from cudabench.results.loader import check_replaceable
from cudabench.results.model import BenchmarkResult, RunOutcome
from cudabench.results.rounds import pooled as pooled_rounds
from cudabench.results.writer import ResultsWriter
from cudabench.common.units import (
    format_change,
    format_percent,
    format_seconds,
    params_text,
    shape_text,
)

SIDES = ("A", "B")
ADDED = "added B"  # a variant only in B: run once, verified, in the schedule's last jobs
COLUMNS = ("benchmark", "params", "shape", "dtype", "A", "B", "change", "interval", "verdict",
           "reason")
# More, shorter rounds for the same GPU time: the interval's ends are order statistics of the
# rounds' ratios, so 20 rounds put them 6 ratios in from each end where 10 put them 2 in, and
# a round or two disturbed by the machine no longer decide the verdict. On an H100 a ~1.5%
# plant gave interval floors of +0.78..+1.39% this way against +0.35..+0.95% with 10 x 15.
# Once the checks ran on the GPU and a warm GPU's warm-up was cut short (issue 29), a round
# of a 28 us dot at 1<<23 took ~70 ms on an H200 (20 rounds: 3.1 s, against ~60 s before),
# so the default takes twice the rounds: the interval narrows by about sqrt(2) for seconds.
DEFAULT_ROUNDS = 40
DEFAULT_SAMPLES = 8  # per side and round: enough for a round's median
# The timing checks' flags as ab has them: one --samples, and no --max-time (1 s a round)
_AB_TERMS = {**AB_FLAGS, "--max-time": "ab's 1 s a round"}


@dataclasses.dataclass(frozen=True)
class Side:
    """One folder: its label, the ops its .py files add, and its variants by op and name."""

    label: str
    folder: Path
    ops: Mapping[str, Op]
    catalog: Catalog
    op_dirs: tuple[Path, ...] = ()  # --kernels-dir: where ops the folder lacks are declared


def folder_side(label: str, folder: Path, argument: str,
                op_dirs: tuple[Path, ...] = ()) -> Side:
    """Read one folder's variants (FOLDER/*.cu and FOLDER/OP/*.cu) and ops, and nothing else
    but the ops of op_dirs (--kernels-dir: op files both sides share)."""
    problem = not_a_folder(folder)
    if problem:
        raise UsageError(f"{argument} {folder}: {problem}")
    # FOLDER/softmax/*.cu is found twice when softmax.py lies beside them: kept once
    paths = list({path.resolve(): path for place in [folder, *op_folders_below([folder])]
                  for path in kernel_files(place)}.values())
    if not paths:
        raise UsageError(f"{argument} {folder}: holds no .cu kernel files (looked in "
                         f"{argument}/*.cu and {argument}/OP/*.cu); give the kernels' folder, "
                         "e.g. checkout/kernels")
    ops = load_ops([*op_dirs, folder])
    catalog: Catalog = {op: {} for op in ops}
    for path in paths:  # discovery.discover's rules, without the built-in folder
        variant = parse_header(path, ops=ops)
        if path.parent != folder and path.parent.name in ops and path.parent.name != variant.op:
            raise KernelFileError(
                path, 1, f"file is in folder {path.parent.name}/ but declares op {variant.op}")
        existing = catalog[variant.op].get(variant.name)
        if existing is not None:
            raise KernelFileError(path, None, f"variant {variant.op}/{variant.name} is also "
                                  f"defined by {existing.path}; rename one of the files")
        catalog[variant.op][variant.name] = variant
    return Side(label, folder, ops, catalog, op_dirs)


@click.command("ab")
@click.argument("old_dir", type=click.Path(path_type=Path))
@click.argument("new_dir", type=click.Path(path_type=Path))
@click.option("--op", "ops", multiple=True, metavar="OP",
              help="Op to compare (repeatable); default every op with variants in both.")
@click.option("--size", "-s", default=None, help="Problem size (default: the op's).")
@click.option("--dtype", default=None,
              help="Input type (default float32, or the op's first where it has none).")
@click.option("--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
              help="Set a kernel parameter on both sides (repeatable).")
@click.option("--rounds", type=int, default=DEFAULT_ROUNDS, show_default=True,
              help="Interleaved rounds; each gives one B/A ratio.")
@click.option("--samples", type=int, default=DEFAULT_SAMPLES, show_default=True,
              help="Timed samples per side and round.")
@click.option("--warmup", type=float, default=0.02, show_default=True,
              help="Seconds of warm-up launches per side and round.")
@click.option("--timeout", type=float, default=TimingPolicy.timeout_s, show_default=True,
              help="Seconds a copy's GPU work may take in a round before its worker is "
              "killed (a hang); a copy that times out is not run again in later rounds.")
@click.option("--threshold", default=format_percent(DEFAULT_THRESHOLD), show_default=True,
              help="Smallest change that counts, e.g. 1% or 0.01.")
@click.option("--alpha", type=float, default=DEFAULT_ALPHA, show_default=True,
              help="The interval of the median ratio covers at least 1 - alpha.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the random inputs (the same for both sides).")
@click.option("--json", "json_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a results file: per variant a row NAME@A and a row NAME@B, each "
              "with its rounds' samples pooled.")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the verdicts as markdown (a CI job summary).")
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
              help="CUDA device index.")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Also load ops (.py op files) from this folder, for both sides "
              "(repeatable): for OLD_DIR and NEW_DIR that hold only kernels. Its kernels "
              "are not compared.")
@click.option("--allow-missing", is_flag=True,
              help="Pass although variants of OLD_DIR are not in NEW_DIR (removed on "
              "purpose); by default a missing one fails, as in compare.")
@click.option("--progress/--quiet", "progress", default=None,
              help="Force the progress display on stderr (a line per round's measurement "
              "when stderr is not a terminal: a CI log), or silence it. Default: a live bar "
              "on a terminal, nothing otherwise.")
@l2_flush_option
def ab_command(old_dir: Path, new_dir: Path, ops: tuple[str, ...], size: str | None,
               dtype: str | None, params: tuple[str, ...], rounds: int, samples: int,
               warmup: float, timeout: float, threshold: str, alpha: float,
               seed: int,
               json_path: Path | None, markdown_path: Path | None, device: int,
               kernels_dirs: tuple[Path, ...], allow_missing: bool, progress: bool | None,
               l2_flush: str) -> int:
    """Measure each variant in both OLD_DIR (A) and NEW_DIR (B), interleaved in one process;
    exit 1 when B is slower beyond the threshold or fails verification.

    Each round times A's copy and B's on the same inputs, the order alternating; the verdict
    rests on the median of the rounds' B/A ratios and its order-statistic interval
    (sign test, at least 1 - alpha): slower when the whole interval is above 1 + threshold.
    """
    # Imported here: commands imports this module to register it, and tests replace
    # commands.engine_spec, which must be looked up when the command runs.
    from cudabench.cli import commands

    limit = parse_threshold(threshold)
    check_settings(rounds, limit, alpha)
    if samples < 3:
        raise UsageError(f"--samples {samples}: at least 3, for a round's median to mean much")
    check_folders(kernels_dirs)
    refuse_empty_folders(kernels_dirs)  # one given by mistake: said, as every command does
    sides = (folder_side("A", old_dir, "OLD_DIR", kernels_dirs),
             folder_side("B", new_dir, "NEW_DIR", kernels_dirs))
    # A fixed count per round (min = max), so that each round weighs the same; a kernel too
    # slow for it within the 1 s budget stops at 5 samples (timing.collect's floor).
    try:  # its messages name run's --min-samples, --max-samples and --max-time
        timing = TimingPolicy(warmup_s=warmup, min_samples=samples, max_samples=samples,
                              max_time_s=1.0, timeout_s=timeout).validate()
    except UsageError as exc:
        raise UsageError(rename_flags(str(exc), _AB_TERMS)) from None
    if size is not None and len(expand_sizes(size)) > 1:  # the plan read "64,128" as one
        raise UsageError(f"--size {size}: ab measures one size; give a single one")
    base = Request(op="", size=size, params={}, seed=seed, timing=timing, l2_flush=l2_flush,
                   insight=Insight(vendor=False, batch=False))
    chosen, added, removed = _pairing(sides, ops)
    plans, skipped, dropped = (_plans(sides, chosen, base, dtype, parse_params(params))
                               if any(common for _, common in chosen) else ([], [], []))
    newcomers, unrun = _added_plans(sides[1], added, base, dtype, parse_params(params))
    skipped += unrun  # listed as not compared, with why
    # An unwritable path, or one that reaches a kernel file, fails now, not after the GPU work;
    # so do a size beyond the GPU's or the host's memory and a setting the timing cannot
    # run under.
    check_outputs({"--markdown": markdown_path, "--json": json_path},
                  [*commands.plan_files([*(plan for pair in plans for plan in pair),
                                         *newcomers]),
                   *commands.folder_sources({*kernels_dirs, *(side.folder for side in sides)})])
    check_replaceable(json_path, "--json")  # notes.txt, a store: not written over
    commands.refuse_stopped_partial("--markdown", markdown_path)
    schedule = _interleave(plans, rounds, newcomers)
    commands.check_memory(schedule.plans, [commands.one_slot(device)])  # the spacer too
    refuse_launch_blocking()
    if old_dir.resolve() == new_dir.resolve():  # meant (an A/A run), or a CI path mistake
        commands.note(f"OLD_DIR and NEW_DIR are the same folder ({old_dir}): an A/A run, "
                      "which measures the noise between two copies of one code and can "
                      "find no change")
    writer = ResultsWriter(json_path) if json_path is not None else None
    outcome = RunOutcome(())  # B dropped every compared variant's type: nothing to measure
    heard: list[BenchmarkResult] = []  # the rows so far, for a run that stops
    placed: dict[tuple[tuple[str, str], str], int] = {}  # (variant, side) -> its writer row
    by_key: dict[tuple[str, str], dict[str, list[BenchmarkResult]]] = {}  # as _rows_by_side

    def keep_what_stopped() -> None:
        """Keep the rounds so far, pooled, and their verdicts, and say where they are."""
        with signals_held():  # a second Ctrl-C: once both are saved, not between them
            if writer is not None:
                _keep_stopped(writer, placed, _rows_by_side(schedule, heard))
            if markdown_path is not None:  # and the verdicts on them, for the job summary
                listed = ABRun((), tuple(added), tuple(removed), tuple(skipped), limit,
                               alpha, rounds, allow_missing, tuple(dropped))
                _keep_stopped_markdown(markdown_path, schedule, heard, listed, old_dir,
                                       new_dir)
            if not (writer is not None and writer.benchmarks) and not any(
                    min(len(by_side[label]) for label in SIDES)
                    for by_side in _rows_by_side(schedule, heard).values()):
                _say_nothing_kept({"--json": json_path, "--markdown": markdown_path})

    try:
        if schedule.jobs:
            with terminal.progress(len(schedule.jobs), terminal.stderr_console(),
                                   progress) as advance:

                def on_result(row: BenchmarkResult) -> None:
                    side = schedule.sides[len(heard)]
                    heard.append(row)
                    if side == ADDED:  # a variant only in B: its one verified run
                        advance(dataclasses.replace(row, variant=f"{row.variant}@B (added)"))
                        if writer is not None:
                            key = (row.op, row.variant)
                            placed[(key, ADDED)] = len(writer.benchmarks)
                            writer.add(dataclasses.replace(row, variant=f"{row.variant}@B"),
                                       write=False)
                            writer.flush()
                        return
                    # a progress line names its side: NAME@A, NAME@B (warm-up)
                    label, warm = side.removeprefix("warm-up "), side.startswith("warm-up")
                    advance(dataclasses.replace(
                        row, variant=f"{row.variant}@{label}" + (" (warm-up)" if warm else "")))
                    if writer is not None:  # the rounds so far, pooled, on disk: a run
                        # killed (SIGKILL, the OOM killer) keeps them. Only this row's
                        # variant is pooled again: all of them, every row, was quadratic
                        job = schedule.jobs[len(heard) - 1]
                        key = (schedule.plans[job.plan_index].op.name, job.name)
                        by_key.setdefault(key, {"A": [], "B": []}).setdefault(
                            side, []).append(row)
                        failing = writer.stream_error is not None
                        _put_pooled(writer, placed, {key: by_key[key]})
                        if writer.benchmarks:  # none in the warm-up: an empty file, marked
                            writer.flush()  # incomplete, refused the next run to its path
                        if writer.stream_error is not None and not failing:
                            commands.note(writer.stream_error + commands.GOES_ON)

                outcome = run_plans(schedule.plans, commands.engine_spec(device), on_result,
                                    on_start=writer.start if writer else None,
                                    jobs=schedule.jobs)
    except BaseException:  # Ctrl-C, SIGTERM, an error: the rounds so far, pooled, are kept
        keep_what_stopped()
        raise
    finally:
        finish_closing()  # the worker releases its GPU: do not leave it behind
    rows = _rows_by_side(schedule, outcome.results)
    added_failed = [f"{row.op}/{row.variant}: {why}" for side, row in
                    zip(schedule.sides, outcome.results)
                    if side == ADDED and (why := added_failure(row)) is not None]
    run = ABRun(tuple(judge(rows[key]["A"], rows[key]["B"], limit, alpha) for key in rows),
                tuple(added), tuple(removed), tuple(skipped), limit, alpha, rounds,
                allow_missing, tuple(dropped), tuple(added_failed))
    write_error = None
    if writer is not None:
        try:  # a stop in the end's write keeps the rows and verdicts as one before it
            _put_pooled(writer, placed, rows, complete=True)
            # per variant, A then B, as the table: a copy that failed its warm-up was
            # placed as it failed, before the other side's first round
            order = [*(placed[(key, label)] for key in rows for label in SIDES),
                     *(at for (_, label), at in placed.items() if label == ADDED)]
            with signals_held():  # placed follows: a stop's save replaces rows by it
                writer.reorder(order)
                placed.update({where: order.index(at) for where, at in placed.items()})
            write_error = writer.finish()  # a full disk: the table is shown first
        except BaseException:
            keep_what_stopped()
            raise
        if writer.kept_note is not None:
            commands.note(writer.kept_note)
    gpu = next((r.device.name for r in outcome.results if r.device is not None), "")
    title = f"cudabench ab: A {old_dir} | B {new_dir}"
    writes, saved = EachWritten(), False
    try:
        if markdown_path is not None:  # before the table: a stop while it prints keeps it
            text = to_markdown(run, title, gpu)
            writes.attempt(lambda: write_text(markdown_path, text, "--markdown"))
            saved = not writes.errors
        _print_verdicts(run, title, gpu)
        writes.raise_any()  # a full disk: said once the verdicts are shown
    except BaseException as exc:
        if saved and isinstance(exc, KeyboardInterrupt):
            commands.note(f"the run stopped after measuring: its verdicts are in "
                          f"{markdown_path} (--markdown)")
        if write_error is not None:
            commands.note(write_error)
        raise
    if write_error is not None:
        raise ResultsNotWritten(write_error)
    return int(run.exit_code)


def _print_verdicts(run: ABRun, title: str, gpu: str) -> None:
    """Print the verdicts' table, the variants not judged, and the summary on stdout."""
    console = terminal.stdout_console()
    if run.results:  # none: B lacks every variant compared (the listing says so)
        # A narrow terminal's notes give the reasons of the rows that are not 'same'.
        cells = [row_cells(result, run.threshold) for result in run.results]
        terminal.render_rows(title, COLUMNS, cells, console,
                             noted_rows={index for index, result in enumerate(run.results)
                                         if result.verdict is not Verdict.SAME})
    else:
        console.print(title, markup=False, highlight=False)
    soft = not console.is_terminal  # on a terminal, wrapped at words (as compare's summary)
    for line in listing_lines(run):
        console.print(line, markup=False, soft_wrap=soft)
    console.print(summary_text(run, gpu), markup=False, soft_wrap=soft)


def _pairing(sides: tuple[Side, Side], ops: Sequence[str]
             ) -> tuple[list[tuple[str, list[str]]], list[str], list[str]]:
    """Return [(op, names in both)] for the ops compared, and op/name only in B, only in A."""
    a, b = sides
    known = list(dict.fromkeys([*a.ops, *b.ops]))
    for name in ops:
        if name not in known:
            raise UsageError(f"--op {name}: no such op (known: {', '.join(known)})")
    # Every op either folder has variants of: an op whose every variant B dropped is as
    # missing as one variant B dropped (it passed unseen, its op not "in both").
    wanted = list(dict.fromkeys(ops)) or [op for op in known
                                          if a.catalog.get(op) or b.catalog.get(op)]
    chosen, added, removed = [], [], []
    for op in wanted:
        old, new = a.catalog.get(op, {}), b.catalog.get(op, {})
        common = sorted(set(old) & set(new))
        # asked for by name: A's copies gone from B are missing (B dropped or renamed
        # them); with none in A there is nothing to judge
        if ops and not common and not old:
            raise UsageError(f"--op {op}: no {op} variant is in both folders (A: "
                             f"{', '.join(sorted(old)) or 'none'}; B: "
                             f"{', '.join(sorted(new)) or 'none'})")
        chosen.append((op, common))
        added += [f"{op}/{name}" for name in sorted(set(new) - set(old))]
        removed += [f"{op}/{name}" for name in sorted(set(old) - set(new))]
    if not any(common for _, common in chosen) and not (ops and removed):  # the wrong
        # folders, most likely
        raise UsageError(f"no variant is in both {a.folder} and {b.folder} under the same op "
                         "and name: nothing to compare (a variant is its file's name)")
    return chosen, added, removed


def _plans(sides: tuple[Side, Side], chosen: Sequence[tuple[str, Sequence[str]]],
           base: Request, dtype: str | None, params: Mapping[str, list[int]]
           ) -> tuple[list[tuple[Plan, Plan]], list[str], list[str]]:
    """Return a checked (A plan, B plan) per op, the variants not run and why, and those of
    them A's copy takes the dtype of and B's no longer does (missing from B's run)."""
    for name, values in params.items():
        if len(values) > 1:
            raise UsageError(f"--param {name}: ab measures one value; give a single one")
    single = {name: values[0] for name, values in params.items()}
    taken: set[str] = set()
    pairs: list[tuple[Plan, Plan]] = []
    skipped: list[str] = []
    dropped: list[str] = []
    for op, common in chosen:
        if not common:  # an op one folder lacks: its variants are added or missing
            continue
        if dtype is not None:  # a type the op has not (a typo): said as a run says it
            for side in sides:
                side.ops[op].type_set(dtype)
        op_dtype = dtype or sides[0].ops[op].default_dtype
        by_type: dict[str, list[str]] = {}
        for name in common:
            a_types, b_types = (s.catalog[op][name].dtypes for s in sides)
            shared = [t for t in sides[0].ops[op].dtypes if t in a_types and t in b_types]
            if dtype is None and op_dtype not in a_types and shared:
                # a float16-only kernel (the tensor cores') at its own type: at the op's
                # float32 it was "not compared", and a slower one passed
                by_type.setdefault(default_dtype(shared), []).append(name)
                continue
            lacking = [s for s in sides if op_dtype not in s.catalog[op][name].dtypes]
            if lacking:
                why = (f"{op}/{name}: {lacking[0].label} supports "
                       f"{', '.join(lacking[0].catalog[op][name].dtypes)} only")
                # B's copy narrowed its types: a slow kernel must not pass by opting out
                (dropped if [s.label for s in lacking] == ["B"] else skipped).append(why)
            else:
                by_type.setdefault(op_dtype, []).append(name)
        for op_type, names in by_type.items():
            plans = []
            for side in sides:
                variants = [side.catalog[op][name] for name in names]
                mine = {k: v for k, v in single.items() if any(v_.param(k) for v_ in variants)}
                taken |= set(mine)
                request = dataclasses.replace(base, op=op, dtype=op_type,
                                              variants=tuple(names), params=mine,
                                              kernels_dirs=(*side.op_dirs, side.folder))
                plans.append(make_plan(request, side.catalog))
            _refuse_different_work(op, plans[0], plans[1])
            pairs.append((plans[0], plans[1]))
    for name in single:
        if name not in taken:
            raise UsageError(f"--param {name}: no compared variant takes {name}")
    if not pairs and not dropped:  # with dropped: each one missing from B, judged so
        asked = f"--dtype {dtype}" if dtype else "the type compared (float32, else the first)"
        raise UsageError(f"no variant in both folders supports {asked}: " + "; ".join(skipped))
    return pairs, skipped, dropped


def _added_plans(side: Side, added: Sequence[str], base: Request, dtype: str | None,
                 params: Mapping[str, list[int]]) -> tuple[list[Plan], list[str]]:
    """Return a single-variant plan per variant only in B (op/name), at --dtype where it
    takes it, else at a type it does (float32, else its first); --param where it takes
    it. Each is run once and verified: a new kernel that is wrong fails the gate. Those
    that cannot run here (the size its constraint refuses) are returned with why."""
    plans, unrun = [], []
    for label in added:
        op, name = label.split("/", 1)
        variant = side.catalog[op][name]
        if dtype is not None and dtype not in variant.dtypes:
            continue  # listed as added: not of the type asked for
        shared = [t for t in side.ops[op].dtypes if t in variant.dtypes] or list(variant.dtypes)
        mine = {k: values[0] for k, values in params.items() if variant.param(k)}
        request = dataclasses.replace(base, op=op, dtype=dtype or default_dtype(shared),
                                      variants=(name,), params=mine,
                                      kernels_dirs=(*side.op_dirs, side.folder))
        try:
            plans.append(make_plan(request, side.catalog))
        except UsageError as exc:  # its own header's limits, not the user's flags
            unrun.append(f"{label}: only in B, not run: {exc}")
    return plans, unrun


def _refuse_different_work(op: str, a: Plan, b: Plan) -> None:
    """Refuse a pair whose two sides would not time the same problem: B's op file changed
    the op's default size or types, and A's time at one size beside B's at another read as
    B "67.8% faster". (A FLOP or byte formula changed moves rates, not the times ab
    judges.)"""
    a_work, b_work = (a.shape, a.types), (b.shape, b.types)
    if a_work == b_work:
        return
    what = [name for name, x, y in zip(("shape", "types"), a_work, b_work) if x != y]
    raise UsageError(
        f"{op}: A and B would not do the same work (their {op} op files differ in "
        f"{', '.join(what)}: A {shape_text(a.shape)} {a.types.input.name}, B "
        f"{shape_text(b.shape)} {b.types.input.name}); give --size and --dtype, or "
        "compare kernels of one op definition")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What ab runs: a single-variant plan per side and variant, and their rounds as jobs
    in run order, each job's side ("A", "B", or "warm-up A"/"warm-up B") beside it."""

    plans: list[Plan]
    jobs: list[Job]
    sides: list[str]


def _interleave(pairs: Sequence[tuple[Plan, Plan]], rounds: int,
                added: Sequence[Plan] = ()) -> Schedule:
    """Return the schedule: per round and variant A then B, and B then A on odd rounds, so
    that going first or second favours neither side; each round on buffers placed afresh
    (measure/placement.py, by the job's round), so that the rounds' ratios cover where
    buffers land as well as when the rounds ran. A copy's rounds are one plan's jobs: one
    that fails is not run again (runner/execute.py repeats its row)."""
    plans: list[Plan] = []
    order: list[tuple[int, int]] = []  # per variant, its A plan's and its B plan's index
    for plan_a, plan_b in pairs:
        for planned_a, planned_b in zip(plan_a.variants, plan_b.variants):
            order.append((len(plans), len(plans) + 1))
            # placement 1: its rounds land behind the spacer (the memory check counts it)
            plans += [dataclasses.replace(plan, variants=(planned,), skipped=(), notes=(),
                                          placement=1)
                      for plan, planned in ((plan_a, planned_a), (plan_b, planned_b))]
    jobs: list[Job] = []
    sides: list[str] = []
    # Round 0 is a warm-up, never judged: on an H100 the first rounds of a run gave
    # ratios 12% off the rest while the card's clocks and caches settled.
    for round_index in range(rounds + 1):
        for a_index, b_index in order:
            pair = [("A", a_index), ("B", b_index)]
            for label, index in pair if round_index % 2 == 1 else pair[::-1]:
                jobs.append(Job(index, variant=plans[index].variants[0], round=round_index))
                sides.append(label if round_index else f"warm-up {label}")
    for plan in added:  # after the rounds: B's new variants, once each, verified
        if plan.variants:  # none: skipped (an arch it lacks): listed as added
            jobs.append(Job(len(plans), variant=plan.variants[0], round=1))
            plans.append(dataclasses.replace(plan, skipped=(), notes=(), placement=1))
            sides.append(ADDED)
    return Schedule(plans, jobs, sides)


def _rows_by_side(schedule: Schedule, results: Sequence[BenchmarkResult]
                  ) -> dict[tuple[str, str], dict[str, list[BenchmarkResult]]]:
    """Return each variant's rows per side, in round order, its warm-up row apart (under
    "warm-up A", "warm-up B"); results are the rows of the schedule's first jobs (all of
    them, or a stopped run's)."""
    rows: dict[tuple[str, str], dict[str, list[BenchmarkResult]]] = {}
    # run_plans gives one row per job, in job order, even for a job whose worker died.
    for job, side, result in zip(schedule.jobs, schedule.sides, results):
        if side == ADDED:  # a variant only in B: not judged against A
            continue
        key = (schedule.plans[job.plan_index].op.name, job.name)
        rows.setdefault(key, {"A": [], "B": []}).setdefault(side, []).append(result)
    return rows


def _failed_warmup(by_side: Mapping[str, Sequence[BenchmarkResult]], label: str
                   ) -> BenchmarkResult | None:
    """Return a side's warm-up row where it failed (the rounds after it repeat it)."""
    warmup = by_side.get(f"warm-up {label}", ())
    return next((row for row in warmup if row.status in NOT_REPEATED), None)


def _put_pooled(writer: ResultsWriter,
                placed: dict[tuple[tuple[str, str], str], int],
                rows: Mapping[tuple[str, str], Mapping[str, list[BenchmarkResult]]],
                complete: bool = False) -> None:
    """Give the writer each side's row pooled over the rounds both sides ran (as a complete
    run pairs them: a stop mid-round leaves one side a round ahead; complete: every round),
    each in the place of its earlier one (placed keeps where). Nothing is written."""
    for key, by_side in rows.items():
        both = min(len(by_side[label]) for label in SIDES)
        for label in SIDES:
            # a copy that failed its warm-up is a result, however early the run stopped
            if not (complete or both or _failed_warmup(by_side, label) is not None):
                continue
            row = pooled(by_side, label, None if complete else both)
            at = placed.get((key, label))
            # a place past the rows: a stop came inside the add that was to fill it
            if at is not None and at < len(writer.benchmarks):
                writer.replace(at, row)
            else:
                placed[(key, label)] = len(writer.benchmarks)
                writer.add(row, write=False)


def _keep_stopped(writer: ResultsWriter, placed: dict[tuple[tuple[str, str], str], int],
                  rows: Mapping[tuple[str, str], Mapping[str, list[BenchmarkResult]]]
                  ) -> None:
    """Write the rounds a stopped run measured, each side's pooled, to the results file
    (marked incomplete) and say where they are."""
    from cudabench.cli import commands

    if not writer.complete_written:  # else every row is in the file (stopped as it ended)
        _put_pooled(writer, placed, rows)
        if writer.benchmarks:  # none: no file (an empty one, incomplete, refused the next run)
            writer.flush()  # a row replaced since the last write (stopped inside on_result)
    stopped = writer.stopped_note()
    if stopped is not None:
        commands.note(stopped)


def _say_nothing_kept(outputs: Mapping[str, Path | None]) -> None:
    """Say that a run stopped before any round was measured (in the warm-up) left its
    outputs as they were: it has no rows to keep."""
    from cudabench.cli import commands

    named = [f"{path} ({flag}) is as it was" if path.exists() else
             f"{path} ({flag}) was not written" for flag, path in outputs.items()
             if path is not None]
    if named:
        commands.note("the run stopped before any round was measured (A and B both): no "
                      f"rows to keep; {', '.join(named)}")


def _keep_stopped_markdown(path: Path, schedule: Schedule, heard: Sequence[BenchmarkResult],
                           listed: ABRun, old_dir: Path, new_dir: Path) -> None:
    """Write the verdicts on the rounds a stopped run measured, both sides of each (a
    round one side had not reached yet is left out), to --markdown, marked incomplete,
    with the variants listed (listed: added, missing, not compared) as the run's are."""
    from cudabench.cli import commands
    from cudabench.cli.stopped import STOPPED_MARKDOWN, keep_stopped_text

    with signals_held():  # a second Ctrl-C (in NumPy's import, say): once they are saved
        rows = _rows_by_side(schedule, heard)
        judged, rounds = [], []
        for by_side in rows.values():
            both = min(len(by_side[label]) for label in SIDES)
            if both:
                judged.append(judge(by_side["A"][:both], by_side["B"][:both],
                                    listed.threshold, listed.alpha))
                rounds.append(both)
        if not judged:
            return
        run = dataclasses.replace(listed, results=tuple(judged), rounds=min(rounds))
        gpu = next((r.device.name for r in heard if r.device is not None), "")
        title = f"cudabench ab: A {old_dir} | B {new_dir} (stopped)"
        keep_stopped_text("--markdown", path, lambda: to_markdown(run, title, gpu)
                          + STOPPED_MARKDOWN, f"the verdicts on the rounds so far "
                          f"({len(judged)} variant{'s' if len(judged) != 1 else ''})",
                          commands.note)


def pooled(by_side: Mapping[str, Sequence[BenchmarkResult]], label: str,
           rounds: int | None = None) -> BenchmarkResult:
    """Return one side's rows (its first `rounds`, or all) as one results-file row
    NAME@label, pooled as --rounds pools a run's rows (every round's samples in round
    order, each round's median; a failed round is the row shown, a failed warm-up too)."""
    rows = by_side[label][:rounds]
    failed = _failed_warmup(by_side, label)
    if failed is not None:  # the rounds repeat it: none was measured
        row = dataclasses.replace(
            failed, rounds=max(len(rows), 1), round_medians_s=(),
            warnings=(*failed.warnings, f"the warm-up round is the one shown "
                                        f"({failed.status.value}); a failed row is not "
                                        "measured again in later rounds"))
    else:
        row = pooled_rounds(rows)
    return dataclasses.replace(row, variant=f"{row.variant}@{label}")


def row_cells(result: ABResult, threshold: float | None = None) -> list[str]:
    """Return a verdict's cells, in COLUMNS order (changes near the threshold to the digits
    that set them on its side)."""
    params = params_text(result.params_a)
    if result.params_b != result.params_a:
        params = f"{params} -> {params_text(result.params_b)}"
    interval = result.interval
    span = (f"{format_change(interval.low - 1, threshold)} .. "
            f"{format_change(interval.high - 1, threshold)}"
            if interval is not None else "-")
    return [benchmark_name(result.op, result.variant, False), params, shape_text(result.shape),
            result.dtype, format_seconds(result.a_median_s), format_seconds(result.b_median_s),
            format_change(result.change, threshold), span, result.verdict.value, result.reason]


def listing_lines(run: ABRun) -> list[str]:
    """Return the lines naming the variants not judged: in one folder only, or not run."""
    lines = []
    removed = ("missing (only in A; fails the gate, --allow-missing passes it)"
               if run.missing else "removed (only in A)")
    dropped = ("missing (B's copy does not take the type compared; fails the gate, "
               "--allow-missing passes it)" if run.missing else "not compared (B's copy "
               "does not take the type compared)")
    failing = {line.split(": ", 1)[0] for line in run.added_failed}
    added = [name for name in run.added if name not in failing]
    for title, names in (("added (only in B), failing verification (fails the gate)",
                          run.added_failed), ("added (only in B)", added),
                         (removed, run.removed),
                         (dropped, run.dropped), ("not compared", run.not_compared)):
        if names:
            lines += [f"{title}:", *(f"  {name}" for name in names)]
    return lines


def summary_text(run: ABRun, gpu: str) -> str:
    """Return the one-line summary: regressions, counts per verdict, settings, GPU."""
    counts = {verdict: 0 for verdict in Verdict}
    for result in run.results:
        counts[result.verdict] += 1
    parts = [f"{count} {verdict.value}" for verdict, count in counts.items() if count]
    failing = f" ({len(run.added_failed)} failing)" if run.added_failed else ""
    parts += [f"{len(run.added)} added{failing}"] if run.added else []
    # a variant only in A fails the gate as "missing" (compare's word), unless allowed
    gone = "missing" if run.missing else "removed"
    parts += [f"{len(run.removed)} {gone}"] if run.removed else []
    parts += [f"{len(run.dropped)} not run by B"] if run.dropped else []
    regressed = len(run.regressions) + len(run.missing) + len(run.added_failed)
    head = (f"{regressed} regression{'s' if regressed != 1 else ''}" if regressed
            else "no regression")
    return (f"{head}: {', '.join(parts)}; {run.rounds} rounds, threshold "
            f"{format_percent(run.threshold)}; change: the median of the rounds' B/A ratios, "
            f"its interval >= {level_text(run.alpha)} (sign test); "
            f"GPU {gpu or '(none)'}")


def to_markdown(run: ABRun, title: str, gpu: str) -> str:
    """Return the verdicts as GitHub-flavoured markdown (for a CI job summary)."""
    lines = [f"## {markdown_cell(title)}", "", markdown_cell(summary_text(run, gpu)), "",
             "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---:" if name in ("A", "B", "change", "interval") else "---"
                            for name in COLUMNS) + "|"]
    for result in run.results:
        cells = [markdown_cell(cell) for cell in row_cells(result, run.threshold)]
        if result.regressed:
            cells[COLUMNS.index("verdict")] = f"**{cells[COLUMNS.index('verdict')]}**"
        lines.append("| " + " | ".join(cells) + " |")
    for line in listing_lines(run):  # a title, then its names as a list
        lines += ([f"- {markdown_cell(line)}"] if line.startswith("  ")
                  else ["", f"**{markdown_cell(line)}**", ""])
    return "\n".join(lines) + "\n"
