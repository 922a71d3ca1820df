"""The configurations a search may measure: each variant's parameter values, pruned.

A parameter ranges over the values `-p` gives, else (in a tuning run) over its header's
allowed values (a `low..high` range only up to RANGE_LIMIT values: a wider one is held at
its default, and the search says so), else stays at its default. A configuration that
breaks a header `constraint`, or the launch limits make_plan checks (threads per block,
static shared memory), is dropped here, before anything compiles, and counted with its
reason.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cudabench.catalog import KernelVariant, discover
from cudabench.errors import UsageError
from cudabench.ops.registry import loaded_once
from cudabench.planning.plan import (
    Insight,
    Plan,
    Request,
    make_plan,
    refuse_unallowed,
    shown_notes,
)

MAX_SPACE = 200_000  # configurations of one variant: more is a typo, not a search
MAX_TOTAL = 200_000  # of every search together: each is planned before anything runs
ANNOUNCED = 10_000  # configurations planned with a note first: seconds of planning
RANGE_LIMIT = 64  # a `low..high` parameter is enumerated only when this small


@dataclass(frozen=True)
class Space:
    """One search: a variant at one size, with the plan of each configuration it may run."""

    op: str
    variant: str
    size: str | None
    names: tuple[str, ...]  # the parameters that vary, in header order
    values: Mapping[str, tuple[int, ...]]  # each varying parameter's candidate values
    plans: tuple[Plan, ...]  # one per valid configuration, in enumeration order
    pruned: Mapping[str, int] = field(default_factory=dict)  # reason -> configurations
    held: tuple[str, ...] = ()  # parameters whose allowed range is too wide to enumerate

    def params(self, index: int) -> dict[str, int]:
        """Return configuration index's parameters (every one the variant takes)."""
        return dict(self.plans[index].variants[0].params)

    @property
    def label(self) -> str:
        """Return `op/variant at size`, for progress and messages."""
        return f"{self.op}/{self.variant}" + (f" at {self.size}" if self.size else "")


def candidate_values(variant: KernelVariant, given: Mapping[str, Sequence[int]],
                     explore: bool) -> dict[str, tuple[int, ...]]:
    """Return each parameter's values: given, else allowed (explore), else its default."""
    values = {}
    for spec in variant.params:
        if spec.name in given:
            values[spec.name] = tuple(dict.fromkeys(given[spec.name]))
        elif explore and spec.allowed:
            values[spec.name] = spec.allowed
        elif explore and spec.low is not None and spec.high is not None \
                and spec.high - spec.low < RANGE_LIMIT:
            values[spec.name] = tuple(range(spec.low, spec.high + 1))
        else:
            values[spec.name] = (spec.default,)
    return values


def build_spaces(requests: Sequence[Request], given: Mapping[str, Sequence[int]],
                 explore: bool, announce: Callable[[str], None] | None = None,
                 note: Callable[[str], None] | None = None) -> list[Space]:
    """Return a Space per (size, variant) of the requests (one per size, no params);
    announce(text), where given, hears that a large search is being planned, and note(text)
    which variants the search leaves out (`run: on request`, written for another type)."""
    searches: list[tuple[Request, KernelVariant]] = []
    bases: list[Plan] = []
    catalog = discover(requests[0].kernels_dirs) if requests else {}
    shapes: set[tuple[object, ...]] = set()
    for request in requests:
        # The request's own usage errors first. A variant whose defaults cannot run at
        # this size (`constraint: BLOCK <= N` at a small N) is searched all the same: the
        # defaults are one configuration of many, each judged in _space.
        base = make_plan(dataclasses.replace(request, sweep=True), catalog)
        shape = (base.op.name, tuple(base.shape), base.dtype.name, base.hot)
        if shape in shapes:  # "64" and "64x64", or a range reaching a size given too: once
            continue
        shapes.add(shape)
        variants = [*(planned.variant for planned in base.variants),
                    *(variant for variant, _, _ in base.skipped)]
        # what the sweep's notes say is left out; not its skipped variants: searched here
        searched = {f"skipped {variant.name}: {reason}" for variant, reason, _ in base.skipped}
        bases.append(dataclasses.replace(
            base, notes=tuple(text for text in base.notes if text not in searched)))
        for name, values in given.items():
            specs = [spec for spec in (v.param(name) for v in variants) if spec]
            if not specs:
                raise UsageError(f"--param {name}: no selected {base.op.name} variant "
                                 f"takes {name}")
            for value in values:  # judged across the variants (each point plans one)
                refuse_unallowed(f"--param {name}", base.op.name, name, value, specs)
        searches.extend((request, variant) for variant in variants)
    # planned up front, before anything runs: about two thousand a second
    counts = [_count(variant, given, explore) for _, variant in searches]
    if sum(counts) > MAX_TOTAL:
        raise UsageError(f"the search has {sum(counts):,} configurations in {len(counts):,} "
                         f"searches (variants x sizes), more than {MAX_TOTAL:,}; narrow it "
                         "with -p NAME=V1,V2, fewer --size values or --variant")
    if note is not None:
        for text in shown_notes(bases):
            note(text)
    if announce is not None and sum(counts) >= ANNOUNCED:  # not seconds of silence
        announce(f"checking {sum(counts):,} configurations against the kernels' headers "
                 "before the search starts (about two thousand a second)")
    with loaded_once():
        return [_space(request, variant, given, explore, catalog)
                for request, variant in searches]


def _count(variant: KernelVariant, given: Mapping[str, Sequence[int]], explore: bool) -> int:
    """Return how many configurations a variant's space holds before pruning; more than
    MAX_SPACE is a usage error."""
    count = 1
    for options in candidate_values(variant, given, explore).values():
        count *= len(options)
    if count > MAX_SPACE:
        raise UsageError(f"{variant.op}/{variant.name}: {count:,} configurations, more than "
                         f"{MAX_SPACE:,}; narrow the space with -p NAME=V1,V2")
    return count


def _space(request: Request, variant: KernelVariant, given: Mapping[str, Sequence[int]],
           explore: bool, catalog: Mapping[str, Mapping[str, KernelVariant]]) -> Space:
    """Return one variant's space at one size, invalid configurations pruned."""
    values = candidate_values(variant, given, explore)
    plans: list[Plan] = []
    pruned: dict[str, int] = {}
    insight = Insight(vendor=False, batch=False)
    for combo in itertools.product(*values.values()):
        point = dict(zip(values, combo))
        one = dataclasses.replace(request, variants=(variant.name,), params=point,
                                  sweep=True, insight=insight, refuse_unknown_values=False)
        plan = make_plan(one, catalog)
        if not plan.variants:  # the sweep's rule: why it cannot run, counted by its kind
            reason = plan.skip_kinds[0] if plan.skip_kinds else "cannot run"
            pruned[reason] = pruned.get(reason, 0) + 1
            continue
        plans.append(dataclasses.replace(plan, tuning=True, notes=()))
    varying = tuple(name for name, options in values.items() if len(options) > 1)
    held = tuple(f"{spec.name} at its default {spec.default} (allowed {spec.low}..{spec.high}: "
                 f"more than {RANGE_LIMIT} values; -p {spec.name}=... searches it)"
                 for spec in variant.params if spec.name not in given and explore
                 and not spec.allowed and spec.low is not None and spec.high is not None
                 and spec.high - spec.low >= RANGE_LIMIT)
    return Space(variant.op, variant.name, request.size, varying,
                 {name: values[name] for name in varying}, tuple(plans), pruned, held)

