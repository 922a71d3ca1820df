"""`--best`: name each variant's fastest configuration per size, re-measuring close calls.

The sweep's rows give each group's candidates (analysis/best.py); where more than one is
within the noise of the fastest, those are measured again head to head, interleaved
(A, B, A, B...) in one worker so that drift and clocks hit them alike, and the pooled
samples decide. The winners can be written as suite entries (--best-out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from cudabench.analysis import best
from cudabench.analysis.best import Choice
from cudabench.runner.devices import Slot
from cudabench.engines.protocol import EngineSpec
from cudabench.runner.pipeline import run_plans
from cudabench.planning.plan import Insight, Plan
from cudabench.results.model import BenchmarkResult, Kind, RunOutcome
from cudabench.common.units import format_seconds, params_text, shape_text

ROUNDS = 3  # interleaved rounds of the head-to-head
COLUMNS = ("op", "size", "dtype", "variant", "best params", "median", "runner-up", "margin",
           "verdict")


Rerun = Callable[[Sequence[Plan]], RunOutcome]  # runs plans in order on one GPU


def choose(outcome: RunOutcome, plans: Sequence[Plan], spec: EngineSpec,
           devices: Sequence[Slot] | None = None, rerun: Rerun | None = None
           ) -> list[Choice]:
    """Return a Choice per (variant, size) group of passing rows, close calls re-measured
    head to head on spec's GPU (or on the one GPU devices names, or by rerun: a Ray
    task)."""
    choices = []
    for rows in best.groups(outcome.results).values():
        contenders = best.candidates(rows)
        rematch = None
        if len(contenders) > 1:
            # keep_worker: the next group's re-measure takes the same warm worker
            again = rerun or (lambda solo: run_plans(solo, spec, devices=devices,
                                                     keep_worker=True))
            rematch = _rematch(rows, contenders, plans, again)
        choices.append(best.decide(rows, rematch))
    return choices


def _rematch(rows: list[BenchmarkResult], contenders: list[BenchmarkResult],
             plans: Sequence[Plan], rerun: Rerun) -> dict[int, list[float]]:
    """Measure the contenders again, interleaved; return their samples by index in rows."""
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
    measured = [r for r in outcome.results if r.kind is Kind.VARIANT]
    for round_index, result in enumerate(measured):
        contender = contenders[round_index % len(contenders)]
        if result.samples_s:
            pooled.setdefault(rows.index(contender), []).extend(result.samples_s)
    return pooled


def row_cells(choice: Choice) -> list[str]:
    """Return the cells of one line of the --best table."""
    verdict = ("tie with " + "; ".join(params_text(r.params) for r in choice.tied)
               if choice.is_tie else "best")
    runner = params_text(choice.runner_up.params) if choice.runner_up else "-"
    margin = f"+{choice.margin:.1%}" if choice.margin is not None else "-"
    return [choice.op, shape_text(choice.shape), choice.dtype, choice.variant,
            params_text(choice.best.params), format_seconds(choice.best.median_s), runner,
            margin, verdict]


def suite_text(choices: Sequence[Choice]) -> str:
    """Return the winners as cudabench.toml [[benchmark]] entries (ties noted)."""
    lines = ["# Written by cudabench --best: the fastest passing configuration per variant",
             "# and size. Paste into cudabench.toml, or run it: cudabench run FILE", ""]
    for choice in choices:
        if choice.is_tie:
            lines.append("# a tie (no measurable difference) with: "
                         + "; ".join(params_text(r.params) for r in choice.tied))
        lines += ["[[benchmark]]", f'op = "{choice.op}"',
                  f'size = "{"x".join(str(e) for e in choice.shape)}"',
                  f'dtype = "{choice.dtype}"', f'variants = ["{choice.variant}"]']
        if choice.best.params:
            pairs = ", ".join(f"{k} = {v}" for k, v in sorted(choice.best.params.items()))
            lines.append(f"params = {{ {pairs} }}")
        if choice.best.hot:  # measured so: the suite runs it so
            lines.append("hot = true")
        elif choice.best.l2_flush == "memset":
            lines.append('l2_flush = "memset"')
        lines.append("")
    return "\n".join(lines)
