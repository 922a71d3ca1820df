"""`--best`: name each variant's fastest configuration per size, re-measuring close calls.

The sweep's rows give each group's candidates (analysis/best.py); where more than one is
within the noise of the fastest, those are measured again head to head, interleaved
(A, B, A, B...) in one worker so that drift and clocks hit them alike, and the pooled
samples decide. The winners can be written as suite entries (--best-out).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from cudabench.analysis import best
from cudabench.analysis.best import Choice
from cudabench.analysis.compare import failure_text
from cudabench.runner.devices import Slot
from cudabench.engines.protocol import EngineSpec
from cudabench.runner.gpus import Fleet
from cudabench.runner.pipeline import run_plans
from cudabench.planning.plan import Insight, Plan
from cudabench.results.model import FAILING_STATUSES, BenchmarkResult, Kind, RunOutcome
from cudabench.common.outfiles import WRITTEN_BY, EachWritten
from cudabench.common.units import format_change, format_seconds, params_text, shape_text
from cudabench.errors import ExitCode, UsageError
from cudabench.results.rounds import identity, remeasured
from cudabench.results.writer import ResultsWriter

ROUNDS = 3  # interleaved rounds of the head-to-head
# "tied with" lists every configuration of a tie: a long text, a note under a narrow
# table (render/fit.py NOTED), where the verdict's "tie" stays beside the winner.
COLUMNS = ("op", "size", "dtype", "variant", "best params", "median", "runner-up", "margin",
           "verdict", "tied with")


Rerun = Callable[[Sequence[Plan]], RunOutcome]  # runs plans in order on one GPU


def choose(outcome: RunOutcome, plans: Sequence[Plan], spec: EngineSpec,
           devices: Sequence[Slot] | None = None, rerun: Rerun | None = None,
           fleet: Fleet | None = None) -> tuple[list[Choice], list[BenchmarkResult]]:
    """Return a Choice per (variant, size) group of passing rows, close calls re-measured
    head to head on spec's GPU (or on the one GPU devices names, of fleet's GPUs, or by
    rerun: a Ray task; devices empty: none, the run's samples decide), and the
    head-to-head's rows that failed (FAIL, ERROR...): a contender that fails its
    re-measure is no candidate, and the next are re-measured without it. Fleet's warm
    workers but that GPU's are ended. A GPU of fleet's given up during a re-measure hands
    it, and the later ones, to the next GPU still in the run; none left, the run's samples
    decide, and those choices say so (unsettled)."""
    choices, failed = [], []
    rematches = rerun is not None or devices is None or bool(devices)
    unsettled = ""  # why the close calls left are not re-measured: every GPU given up
    if fleet is not None and devices:  # one GPU re-measures: the others' CUDA contexts go
        fleet.close(keep=devices[0].index)
    for group in best.groups(outcome.results).values():
        rows = list(group)
        while rows:
            # the fastest few: a flat landscape put all 128 configurations of a search
            # within the noise, and re-measured each three times
            contenders = best.candidates(rows)[:MOST_CONTENDERS]
            if len({r.device.identity for r in rows if r.device is not None}) > 1:
                contenders = _across_gpus(rows)
            rematch = None
            if len(contenders) > 1 and rematches:
                # keep_worker: the next group's re-measure takes the same warm worker
                again = rerun or (lambda solo: run_plans(solo, spec, devices=devices,
                                                         keep_worker=True, fleet=fleet))
                rematch, wrong = _rematch(rows, contenders, plans, again)
                if fleet is not None and devices and devices[0].index in fleet.lost:
                    # its rows are the GPU's errors, none a contender's: measured again
                    devices, unsettled = _after_loss(fleet, devices[0])
                    rematches = bool(devices)
                    continue
                if wrong:
                    failed += wrong
                    dropped = {(r.variant, tuple(sorted(r.params.items()))) for r in wrong}
                    rows = [r for r in rows
                            if (r.variant, tuple(sorted(r.params.items()))) not in dropped]
                    continue
            choice = best.decide(rows, rematch)
            if unsettled and len(contenders) > 1:  # a close call the run's samples decided
                choice = dataclasses.replace(choice, unsettled=unsettled)
            choices.append(choice)
            break
    return choices, failed


def head_to_head_gpus(fleet: Fleet | None, note: Callable[[str], None]
                      ) -> list[Slot] | None:
    """Return the GPU that --devices' head-to-head re-measures on: the first given that the
    run did not give up (one that could not be opened, or whose workers kept dying, failed
    the whole command there, or would fail each contender as if it were wrong) and that
    opened in it (one that found no work is untried), said in a note where GPUs before it
    were given up; [] where every one was given up. None: no --devices."""
    if fleet is None:
        return None
    chosen = _first_usable(fleet)
    before = fleet.slots[:fleet.slots.index(chosen[0])] if chosen else fleet.slots
    lost = [f"GPU {slot.index}" for slot in before if slot.index in fleet.lost]
    if lost and chosen:
        note(f"--best re-measures its close calls head to head on GPU {chosen[0].index}: "
             f"{', '.join(lost)} {'was' if len(lost) == 1 else 'were'} given up in the run")
    elif lost:
        note(f"--best: every GPU was given up in the run ({', '.join(lost)}): its close calls "
             "are decided on the run's own samples, not re-measured head to head")
    return chosen


def _first_usable(fleet: Fleet) -> list[Slot]:
    """Return the first of fleet's GPUs not given up, one that opened first; [] if none."""
    usable = fleet.usable()
    return ([slot for slot in usable if slot.index in fleet.opened] or usable)[:1]


def _after_loss(fleet: Fleet, slot: Slot) -> tuple[list[Slot], str]:
    """Return the GPU that re-measures after slot's was given up during the head-to-head,
    said in a note; or none, and why the close calls left are decided on the run's own
    samples (every GPU given up)."""
    lost = (f"GPU {slot.index} was given up during --best's head-to-head re-measure "
            f"({fleet.why.get(slot.index, 'see the notes')})")
    chosen = _first_usable(fleet)
    if chosen:
        _note(f"{lost}: its close calls are re-measured on GPU {chosen[0].index}")
        return chosen, ""
    _note(f"{lost}, and no GPU is left: the close calls not yet re-measured are decided on "
          "the run's own samples")
    every = ", ".join(f"GPU {s.index}" for s in fleet.slots if s.index in fleet.lost)
    return [], f"not re-measured head to head: every GPU was given up ({every})"


def _note(text: str) -> None:
    """Print a note on stderr, as the commands' notes are."""
    from cudabench.common.flag_terms import live
    from cudabench.render import terminal

    terminal.stderr_console().print(f"note: {live(text)}", markup=False, highlight=False)


ACROSS_GPUS = 0.15  # GPUs of one model differ by a few percent: re-measure this close
MOST_CONTENDERS = 8  # and at most this many, head to head on one GPU


def _across_gpus(rows: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the contenders of rows measured on several GPUs (a search over --devices):
    on each GPU, every row within ACROSS_GPUS of that GPU's fastest, not only those within
    the noise, since one GPU's medians are not another's (a throttled or shared one can be
    far slower: its fastest, held to the others' fastest, was never a contender, and the
    winner was named among the others); the head-to-head on one GPU then decides."""
    by_gpu: dict[tuple[object, ...], list[BenchmarkResult]] = {}
    for row in rows:  # by identity: every Ray node's GPU is its index 0
        by_gpu.setdefault(row.device.identity if row.device is not None else (), []
                          ).append(row)
    close: list[tuple[float, BenchmarkResult]] = []
    for group in by_gpu.values():
        fastest = min((r.median_s for r in group if r.median_s), default=0.0)
        close += [((r.median_s or 0.0) / fastest if fastest else 1.0, r) for r in group
                  if (r.median_s or 0.0) <= fastest * (1 + ACROSS_GPUS)]
    close.sort(key=lambda pair: pair[0])  # each GPU's own best first
    return [row for _, row in close[:MOST_CONTENDERS]]


def _rematch(rows: list[BenchmarkResult], contenders: list[BenchmarkResult],
             plans: Sequence[Plan], rerun: Rerun
             ) -> tuple[dict[int, list[float]], list[BenchmarkResult]]:
    """Measure the contenders again, interleaved; return their samples by index in rows,
    and the re-measured rows that did not pass (a result wrong this time: no winner)."""
    solo = []
    for row in contenders:
        plan = next(p for p in plans if p.op.name == row.op and tuple(p.shape) == row.shape
                    and p.dtype.name == row.dtype and p.hot == row.hot
                    and any(v.variant.name == row.variant and dict(v.params) == row.params
                            for v in p.variants))
        planned = next(v for v in plan.variants if v.variant.name == row.variant
                       and dict(v.params) == row.params)
        solo.append(dataclasses.replace(plan, variants=(planned,), skipped=(), notes=(),
                                        insight=Insight(vendor=False, batch=False),
                                        sanitize=None, tuning=False))
    # tuning=False: one benchmark, so one GPU (or Ray task) runs the rounds interleaved;
    # its reference rows are not the contenders'
    outcome = rerun(solo * ROUNDS)
    pooled: dict[int, list[float]] = {}
    wrong: dict[int, BenchmarkResult] = {}  # each failing contender once: its first failure
    measured = [r for r in outcome.results if r.kind is Kind.VARIANT]
    for round_index, result in enumerate(measured):
        contender = contenders[round_index % len(contenders)]
        if result.status in FAILING_STATUSES:
            wrong.setdefault(rows.index(contender), result)
        elif result.samples_s:
            pooled.setdefault(rows.index(contender), []).extend(result.samples_s)
    return pooled, list(wrong.values())


def with_failures(outcome: RunOutcome, failed: Sequence[BenchmarkResult]) -> RunOutcome:
    """Return the run's rows with each configuration that failed its head-to-head as it
    failed there: a kernel seen giving a wrong result is FAIL in every output that keeps
    the run (results file, CSV, history), not only in the winners' table."""
    again = {remeasured(identity(row)): row for row in failed}  # on whichever GPU
    kept = tuple(again.pop(remeasured(identity(row)), row) for row in outcome.results)
    return dataclasses.replace(outcome, results=kept + tuple(again.values()))


def keep_failures(writer: ResultsWriter | None, failed: Sequence[BenchmarkResult]) -> None:
    """Write the head-to-head's failures into the run's results file (put in the place of
    the rows they measured again); UsageError where it cannot be written."""
    if writer is None or not failed:
        return
    for row in failed:
        writer.put(row)
    error = writer.finish()
    if error is not None:
        raise UsageError(error)


def without_winner(results: Sequence[BenchmarkResult]) -> list[str]:
    """Say which variant and size had no passing configuration in the sweep: it has no
    line in the winners' table nor in --best-out, and a table without it read as if that
    variant had not been asked for."""
    statuses: dict[tuple[str, str, tuple[int, ...], str, bool], list[str]] = {}
    for r in results:
        if r.kind is Kind.VARIANT:
            key = (r.op, r.variant, tuple(r.shape), r.dtype, r.hot)
            statuses.setdefault(key, []).append(r.status.value)
    lines = []
    for (op, variant, shape, dtype, hot), found in statuses.items():
        if "PASS" not in found:
            counted = ", ".join(f"{found.count(s)} {s}" for s in dict.fromkeys(found))
            lines.append(f"--best: {op}/{variant} {shape_text(shape)} {dtype}"
                         f"{' hot' if hot else ''}: no configuration passed ({counted}): "
                         "none chosen")
    return lines


def row_cells(choice: Choice) -> list[str]:
    """Return the cells of one line of the --best table."""
    tied = "; ".join(params_text(r.params) for r in choice.tied) if choice.is_tie else "-"
    runner = params_text(choice.runner_up.params) if choice.runner_up else "-"
    margin = format_change(choice.margin) if choice.margin is not None else "-"
    median = choice.median_s if choice.median_s is not None else choice.best.median_s
    return [choice.op, shape_text(choice.shape), choice.dtype, choice.variant,
            params_text(choice.best.params), format_seconds(median), runner,
            margin, "tie" if choice.is_tie else "best", tied]


def choices_markdown(choices: Sequence[Choice], failed: Sequence[BenchmarkResult],
                     unchosen: Sequence[str] = ()) -> str:
    """Return the winners' table (and the head-to-head's failures, and the groups without
    a winner) as markdown, the section --markdown adds after the run's tables."""
    from cudabench.render.markdown import table_lines

    title = "best configuration per variant and size"
    lines = (table_lines(title, COLUMNS, [row_cells(choice) for choice in choices],
                         lambda name: name in ("median", "margin")) if choices
             else [f"{title}: none chosen", ""])  # a line, as on the terminal, not headers
    lines += [f"- {failed_text(row)}" for row in failed]
    lines += [f"- {unsettled_text(choice)}" for choice in choices if choice.unsettled]
    lines += [f"- {text}" for text in unchosen]
    return "\n" + "\n".join(lines).rstrip() + "\n"


STOPPED_MARKDOWN = ("\n- --best: stopped during the head-to-head re-measure, so no "
                    "configuration was chosen; the rows above are as measured\n")


def stopped_note(json_path: Path | None, best_out: Path | None,
                 elsewhere: str = "the rows are as the tables showed them") -> str:
    """Return what a Ctrl-C during the head-to-head leaves: the run's rows where they are
    (its results file is complete; else elsewhere says), no winner chosen, --best-out as
    it was."""
    kept = f"the run's rows are in {json_path}" if json_path is not None else elsewhere
    return (f"stopped during --best's head-to-head re-measure: {kept}; no configuration was "
            "chosen" + (f", and {best_out} is as it was" if best_out is not None else ""))


def unsettled_text(choice: Choice) -> str:
    """Say that a close call was decided on the run's own samples, and why."""
    return (f"--best: {choice.op}/{choice.variant} {shape_text(choice.shape)} {choice.dtype}: "
            f"{choice.unsettled}: chosen on the run's own samples")


def failed_text(row: BenchmarkResult) -> str:
    """Say that a contender failed its head-to-head re-measure."""
    return (f"--best: {row.op}/{row.variant} {params_text(row.params)} {shape_text(row.shape)} "
            f"{row.dtype}: {row.status.value} when measured again head to head "
            f"({failure_text(row)}): not a candidate")


def suite_text(choices: Sequence[Choice], plans: Sequence[Plan], out: Path | None = None) -> str:
    """Return the winners as cudabench.toml [[benchmark]] entries (ties noted), for the file
    out (its kernels_dirs are written relative to out's folder)."""
    # WRITTEN_BY heads it: a later --best-out may replace such a file, never a user's suite
    lines = [f"{WRITTEN_BY} --best: the fastest passing configuration per variant",
             "# and size. Paste into cudabench.toml, or run it: cudabench run FILE", ""]
    # what a suite holds no key for, which the search ran with: said, to run it so
    flags = [flag for flag, off in (("--no-vendor", lambda plan: not plan.insight.vendor),
                                    ("--no-batch", lambda plan: not plan.insight.batch))
             if plans and all(off(plan) for plan in plans)]
    if flags:  # a search sets them itself, given or not
        how = ("Searched as with" if all(plan.tuning for plan in plans) else "Measured with")
        lines[2:2] = [f"# {how} {' '.join(flags)}, which a suite has no key for: "
                      f"cudabench run FILE {' '.join(flags)}"]
    folders = kernel_folders(choices, plans)
    if folders:  # the --kernels-dir folders the winners came from: the suite runs as it is
        names = ", ".join(_toml_string(_relative(f, out)) for f in folders)
        lines += [f"kernels_dirs = [{names}]  # relative to this file's folder", ""]
    lines += _timing_table(plans)
    # the inputs and the check the search measured with (one command: one of each)
    seeds = {plan.seed for plan in plans}
    seed = seeds.pop() if len(seeds) == 1 else 0
    full_check = bool(plans) and all(plan.full_check for plan in plans)
    for choice in choices:
        if choice.is_tie:
            lines.append("# a tie (no measurable difference) with: "
                         + "; ".join(params_text(r.params) for r in choice.tied))
        if choice.unsettled:
            lines.append(f"# {choice.unsettled}: chosen on the run's own samples")
        lines += ["[[benchmark]]", f"op = {_toml_string(choice.op)}",
                  f'size = "{"x".join(str(e) for e in choice.shape)}"',
                  f'dtype = "{choice.dtype}"', f"variants = [{_toml_string(choice.variant)}]"]
        if choice.best.params:
            pairs = ", ".join(f"{k} = {v}" for k, v in sorted(choice.best.params.items()))
            lines.append(f"params = {{ {pairs} }}")
        if choice.best.hot:  # measured so: the suite runs it so
            lines.append("hot = true")
        elif choice.best.l2_flush == "memset":
            lines.append('l2_flush = "memset"')
        if seed:
            lines.append(f"seed = {seed}")
        if full_check:
            lines.append("full_check = true")
        lines.append("")
    return "\n".join(lines)


def _timing_table(plans: Sequence[Plan]) -> list[str]:
    """Return a suite's [timing] table of the settings the search measured with that are
    not the defaults (none where the plans differ: a suite has one [timing])."""
    from cudabench.cli.suite import TIMING_KEYS
    from cudabench.planning.timing import TimingPolicy

    policies = {plan.timing for plan in plans}
    if len(policies) != 1:
        return []
    policy, default = policies.pop(), TimingPolicy()
    changed = [f"{key} = {getattr(policy, field)!r}" for key, field in TIMING_KEYS.items()
               if getattr(policy, field) != getattr(default, field)]
    return ["[timing]", *changed, ""] if changed else []


def kernel_folders(choices: Sequence[Choice], plans: Sequence[Plan]) -> list[Path]:
    """Return the --kernels-dir folders of the runs the winners came from, absolute (the
    suite names them relative to itself: _relative), so that the suite finds its kernels
    and ops as the run did: the folders given, never one guessed from a kernel's path (a
    kernel directly in its folder named the folder above, whose every .py the suite then
    imported). None for the built-in kernels alone."""
    won = {(choice.op, choice.variant) for choice in choices}
    return sorted({folder.resolve() for plan in plans for folder in plan.kernels_dirs
                   if any((plan.op.name, planned.variant.name) in won
                          for planned in plan.variants)})


def _relative(folder: Path, out: Path | None) -> str:
    """Return folder as a suite at out names it: relative to out's folder, as a suite reads
    kernels_dirs, with / (the suite is committed and read on any system)."""
    if out is None:
        return str(folder)
    # relative always, even for a folder outside the project (../../shared): a checkout
    # moved or copied with its kernels still runs its own; an absolute path ran the first
    # checkout's kernels from a copy and passed, or failed once that one moved
    try:
        return Path(os.path.relpath(folder, out.resolve().parent)).as_posix()
    except ValueError:  # another drive on Windows: no relative path exists
        return str(folder)


def _toml_string(text: str) -> str:
    """Return text as a TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def show_choices(choices: Sequence[Choice], failed: Sequence[BenchmarkResult],
                 best_out: Path | None, plans: Sequence[Plan],
                 unchosen: Sequence[str] = (), writes: EachWritten | None = None) -> int:
    """Print the winners (and the head-to-head's failures, and the groups without a
    winner: without_winner), write --best-out where there are winners; return the exit
    code they give (3 where a contender failed verification, 2 where it could not run).
    With writes, a --best-out that cannot be written (a full disk) is kept there for the
    end, not raised: the run is still recorded."""
    from cudabench.common.outfiles import write_text
    from cudabench.render import terminal

    stderr = terminal.stderr_console()
    title = "best configuration per variant and size"
    columns: Sequence[str] = COLUMNS
    rows = [row_cells(choice) for choice in choices]
    ops = {choice.op for choice in choices}
    if len(ops) == 1:  # one op: it goes in the title, and size leads (an 80-column table
        # kept "transpose" on every row and left out size and best params)
        title, columns, rows = f"{title}: {ops.pop()}", COLUMNS[1:], [row[1:] for row in rows]
    if rows:
        terminal.render_rows(title, columns, rows, terminal.stdout_console())
    else:  # a line, not a table of headers alone
        terminal.stdout_console().print(f"{title}: none chosen", markup=False,
                                        highlight=False)
    for row in failed:
        stderr.print(failed_text(row), markup=False, highlight=False, style="red")
    unsettled = [choice for choice in choices if choice.unsettled]
    for choice in unsettled:
        stderr.print(unsettled_text(choice), markup=False, highlight=False, style="red")
    for text in unchosen:
        stderr.print(text, markup=False, highlight=False, style="red")
    if best_out is not None:
        if choices:
            path, text = best_out, suite_text(choices, plans, out=best_out)
            if writes is not None:
                writes.attempt(lambda: write_text(path, text, "--best-out"))
            else:
                write_text(path, text, "--best-out")
        else:  # an empty suite over the last good one would lose it
            stderr.print(f"note: no configuration passed: {best_out} not written",
                         markup=False, highlight=False)
    # ranked as a run's rows are: an ERROR (out of GPU memory) exits 2, a FAIL 3; a close
    # call left unsettled, every GPU given up, is the environment's error: 2
    code = RunOutcome(tuple(failed)).exit_code
    return int(ExitCode.USAGE if unsettled else code)

