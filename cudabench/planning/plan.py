"""Turn a request into a checked plan: usage errors are found here, before any GPU work.

What only the GPU can tell (its grid limits, registers per thread, whether its compute
capability runs a variant's `arch`: unsupported_on) is checked per variant when it runs, so
that one bad variant never hides the others.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cudabench.catalog import ALL_VARIANTS, Catalog, KernelVariant, discover
from cudabench.catalog.variants import ParamSpec
from cudabench.catalog.expressions import names_in
from cudabench.common.flag_terms import SUITE_KEYS, rename_flags
from cudabench.errors import KernelFileError, OpFileError, UsageError
from cudabench.engines import tensormaps
from cudabench.planning.timing import TimingPolicy
from cudabench.ops import DType, Op, Shape, TypeSet, get_op
from cudabench.ops.base import int32_value, user_code
from cudabench.results.model import DEFAULT_L2_FLUSH, L2_FLUSHES

MAX_THREADS_PER_BLOCK = 1024  # every CUDA GPU since compute capability 2.0
MAX_STATIC_SHARED_BYTES = 48 * 1024  # static __shared__ limit on every CUDA GPU
MAX_BLOCK_DIMS = (1024, 1024, 64)
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
TENSOR_MAPS_FROM = (9, 0)  # TMA tensor maps exist from compute capability 9.0 (Hopper) on


class Unrunnable(UsageError):
    """A variant cannot run these parameters at this size; kind says why without them (a
    search counts its pruned configurations by kind, never by the message's text, which
    holds the user's file path)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Insight:
    """What is measured beside the timed samples: vendor rows, batches, counters, energy."""

    vendor: bool = True  # the vendor library's row (cuBLAS), where the op has one
    batch: bool = True  # back-to-back launch times beside the cold ones
    counters: tuple[str, ...] = ()  # Nsight Compute metrics (--counters); empty: none
    energy_s: float = 0.0  # seconds of the energy pass (--energy); 0: none
    writeback: bool = False  # time what each row leaves the L2 to write back (--writeback)
    transfers: bool = False  # host<->device phases (--transfers)
    profile_time: bool = False  # each row's seconds per phase (--profile-time)


@dataclass(frozen=True)
class Request:
    """What the user asked for, as typed (sizes and params not yet checked)."""

    op: str
    size: str | None = None  # None: the op's default
    size_typed: str = ""  # the --size text a sweep's size came from (`256..1024:x2x2`)
    dtype: str = "float32"
    variants: tuple[str, ...] = ()  # empty: every one not `run: on request`; "all": every one
    params: Mapping[str, int] = field(default_factory=dict)
    param_flags: Mapping[str, str] = field(default_factory=dict)  # TILE -> "--tile"
    seed: int = 0
    hot: bool = False
    l2_flush: str = DEFAULT_L2_FLUSH  # how the L2 is flushed before each cold sample
    sanitize: str | None = None  # a compute-sanitizer tool to run each checked launch under
    timing: TimingPolicy = TimingPolicy()
    kernels_dirs: tuple[Path, ...] = ()
    origin: str = ""  # where a suite file defined it, prefixed to its errors

    @property
    def entry(self) -> str:
        """The suite's file and entry of origin ("FILE: benchmark[i]"), without its size
        and type; "" on the command line. Not cut at " (": a folder's name may hold one."""
        head, sep, _ = self.origin.rpartition("] (")
        return head + "]" if sep else self.origin
    insight: Insight = field(default_factory=lambda: Insight())
    sweep: bool = False  # one point of a sweep: a combination a variant cannot run is a SKIP
    # A swept value no chosen variant allows is a typo, refused; False for the one-variant
    # points a search plans (tuning/space.py judges its values across the variants once).
    refuse_unknown_values: bool = True
    full_check: bool = False  # verify against the full reference even where a cheaper
    # check of the same strength exists (matmul's randomized check; --full-check)

    def flag(self, param: str) -> str:
        """Return the flag the user set param with, for error messages."""
        return self.param_flags.get(param, f"--param {param}")


@dataclass(frozen=True)
class PlannedVariant:
    """A variant with every parameter resolved and its block geometry checked."""

    variant: KernelVariant
    params: Mapping[str, int]


@dataclass(frozen=True)
class Plan:
    """A checked request: the op, shape, dtype and the variants to run."""

    op: Op
    shape: tuple[int, ...]
    types: TypeSet  # inputs, accumulator and outputs
    variants: tuple[PlannedVariant, ...]
    seed: int
    hot: bool
    timing: TimingPolicy
    notes: tuple[str, ...] = ()  # variants skipped and why, for stderr
    sanitize: str | None = None  # compute-sanitizer tool (--sanitize), or None
    # variants not run, why, and the point's parameters (the header's defaults, the values
    # asked): a sweep's SKIP rows of one variant are told apart, as its run rows are
    skipped: tuple[tuple[KernelVariant, str, Mapping[str, int]], ...] = ()
    skip_kinds: tuple[str, ...] = ()  # each skipped variant's Unrunnable.kind, in order
    insight: Insight = field(default_factory=lambda: Insight())
    sweep: bool = False  # part of a sweep: combinations a variant cannot run are skipped
    full_check: bool = False  # the full reference, never a randomized check (--full-check)
    tuning: bool = False  # one configuration of a --best search: a unit of work of its own
    # (any GPU may take it), with no vendor or reference rows beside it
    l2_flush: str = DEFAULT_L2_FLUSH  # the cold samples' flush method (L2_FLUSHES)
    # Where its buffers land (measure/placement.py's spacer for this round number): `ab`
    # moves each of its rounds, as --rounds moves each later round of a benchmark.
    placement: int = 0
    kernels_dirs: tuple[Path, ...] = ()  # the request's --kernels-dir folders, as given
    # Each note that variants written for other types were left out, with their names, and
    # the suite entry it came from (its origin's head; "" on the command line): shown_notes
    # drops it where another plan of the entry runs them (a suite's float16 row of them)
    left_for_type: tuple[tuple[str, tuple[str, ...]], ...] = ()
    entry: str = ""

    @property
    def flush(self) -> str | None:
        """Return the flush before each sample: the method, or None under --hot."""
        return None if self.hot else self.l2_flush

    @property
    def batch(self) -> bool:
        """Return whether rows get batch times beside their cold samples."""
        return self.insight.batch

    @property
    def dtype(self) -> DType:
        """Return the input type (the --dtype the user chose)."""
        return self.types.input


def make_plan(request: Request, catalog: Mapping[str, Mapping[str, KernelVariant]] | None = None,
              discovered: dict[tuple[Path, ...], Catalog] | None = None) -> Plan:
    """Validate a request against the op and the kernel catalog; raise UsageError if bad.
    Without a catalog, the one of the request's kernels folders: taken from discovered
    (the catalogs found so far, by folders, which it adds to) or found."""
    try:
        return _make_plan(request, catalog, discovered)
    except UsageError as exc:
        if not request.origin:
            raise
        # the entry's keys, not the flags they stand for (`--max-time must be > 0`)
        raise UsageError(f"{request.origin}: {rename_flags(str(exc), SUITE_KEYS)}") from None


def _make_plan(request: Request, catalog: Mapping[str, Mapping[str, KernelVariant]] | None,
               discovered: dict[tuple[Path, ...], Catalog] | None = None) -> Plan:
    op = get_op(request.op, request.kernels_dirs)
    try:
        with user_code(op, "parse_size"):
            shape = op.parse_size(request.size or op.default_size)
    except UsageError as exc:
        # `--size '256x2': expected...` quoted a size the user never typed: name the sweep
        said = f"--size {request.size!r}"
        if not request.size_typed or not str(exc).startswith(said):
            raise
        raise UsageError(f"--size {request.size_typed!r} gives {request.size}"
                         f"{str(exc)[len(said):]}") from None
    types = op.type_set(request.dtype)
    dtype = types.input
    with user_code(op, "check_shape"):
        op.check_shape(shape, types)
    _check_work(op, shape, types)
    _check_outputs(op, shape, types)
    timing = request.timing.validate()
    if not 0 <= request.seed < 2**63:
        raise UsageError(f"--seed {request.seed}: must be between 0 and 2^63-1")
    if catalog is None:  # found here, after the request's own checks: their errors first
        discovered = {} if discovered is None else discovered
        folders = tuple(request.kernels_dirs)
        if folders not in discovered:
            discovered[folders] = discover(folders)
        catalog = discovered[folders]
    available = catalog[op.name]
    if not available:
        raise UsageError(f"no {op.name} kernels found (looked in kernels/ and --kernels-dir)")

    notes: list[str] = []
    # Named variants run as asked; with none named, every variant but those whose header
    # says `run: on request` (one note names them); `--variant all`: every variant.
    every = ALL_VARIANTS in request.variants
    named = not every and bool(request.variants)
    names = list(dict.fromkeys(request.variants)) if named else sorted(available)
    unknown = [name for name in names if name not in available]
    if unknown and "," in unknown[0] and all(
            part.strip() in available for part in unknown[0].split(",")):
        parts = [part.strip() for part in unknown[0].split(",")]
        if request.origin:  # said in TOML: `variants naive variants tiled` is no suite's
            listed = ", ".join(f'"{part}"' for name in names
                               for part in (parts if name == unknown[0] else [name]))
            raise UsageError(f'variants = ["{unknown[0]}"]: each is one name (a comma list '
                             f"is not one); give each: variants = [{listed}]")
        raise UsageError(f"--variant {unknown[0]}: --variant takes one name (a comma list "
                         f"is not one); give each: {' '.join('--variant ' + p for p in parts)}")
    if unknown:
        near = difflib.get_close_matches(unknown[0].lower(), sorted(available), n=1)
        guess = f"; did you mean {near[0]}?" if near else ""
        raise UsageError(
            f"--variant {unknown[0]}: no such {op.name} variant{guess} "
            f"(known: {', '.join(sorted(available))}; or {ALL_VARIANTS}: every one)"
        )
    if not named and not every:
        on_request = [name for name in names if available[name].on_request]
        names = [name for name in names if name not in on_request]
        if on_request:
            where = request.entry  # the file and entry, not its size
            how = (f'variants = ["NAME"] or ["{ALL_VARIANTS}"] in {where} runs them'
                   if request.origin else
                   f"--variant NAME or --variant {ALL_VARIANTS} runs them")
            if not names:  # nothing left to run: not an empty table and exit 0
                raise UsageError(f"every {op.name} variant runs on request "
                                 f"({', '.join(on_request)}): {how}")
            notes.append(f"left out {', '.join(on_request)}: run on request ({how})")
    skipped: list[tuple[KernelVariant, str, Mapping[str, int]]] = []
    skip_kinds: list[str] = []
    chosen = []
    other_types: dict[str, list[str]] = {}  # unasked variants of other types, by their types
    for name in names:
        variant = available[name]
        if dtype.name not in variant.dtypes:
            if named:
                how = (f'dtype = "{variant.dtypes[0]}"' if request.origin
                       else f"--dtype {variant.dtypes[0]}")  # a suite's entry, or the flag
                raise UsageError(
                    f"--dtype {dtype.name}: variant {name} supports {', '.join(variant.dtypes)}"
                    f" ({how} runs it)"
                )
            other_types.setdefault(", ".join(variant.dtypes), []).append(name)
            continue
        chosen.append(variant)
    # Variants written for other types (the tensor-core rungs take float16 only) are left
    # out of the table, not a SKIP row each: one line says which, and how to run them.
    left_for_type = []
    for types_text, left_out in other_types.items():
        first = types_text.split(", ")[0]
        how = (f'dtypes = ["{first}"] in {request.entry}' if request.origin
               else f"--dtype {first}")  # a suite's entry, or the command line
        notes.append(f"left out {', '.join(left_out)}: written for {types_text} only "
                     f"({how} runs {'it' if len(left_out) == 1 else 'them'})")
        left_for_type.append((notes[-1], tuple(left_out)))
    if not chosen and other_types:
        raise UsageError(f"--dtype {dtype.name}: no {op.name} variant takes it; "
                         + "; ".join(f"{', '.join(n)} take {t}" for t, n in other_types.items()))

    for param, value in request.params.items():
        specs = [spec for spec in (v.param(param) for v in chosen) if spec is not None]
        if not specs:
            taken = sorted({spec.name for v in chosen for spec in v.params})
            near = ([name for name in taken if name.lower() == param.lower()]
                    or difflib.get_close_matches(param.upper(), taken, n=1, cutoff=0.75))
            guess = f"; did you mean {near[0]}?" if near else ""
            # variants left out (run on request, other types, not named) that take it: the
            # user asked for one of them without knowing it was left out
            others = sorted(name for name, variant in available.items()
                            if variant not in chosen and variant.param(param) is not None)
            also = ""
            if others:
                how = (f'variants = ["{others[0]}"]' if request.origin
                       else f"--variant {others[0]}")
                offered = available[others[0]].dtypes
                if dtype.name not in offered:  # of another type: named, it needs that type
                    how += (f' and dtype = "{offered[0]}"' if request.origin
                            else f" --dtype {offered[0]}")
                also = (f"; {', '.join(others)} {'takes' if len(others) == 1 else 'take'} "
                        f"it, not selected ({how} selects {'it' if len(others) == 1 else 'one'})")
            raise UsageError(
                f"{request.flag(param)}: no selected {op.name} variant takes {param}{guess}"
                + (f" (they take {', '.join(taken)})" if taken else " (they take none)")
                + also
            )
        if (request.sweep or not named) and request.refuse_unknown_values:
            refuse_unallowed(request.flag(param), op.name, param, value, specs)
    planned_list = []
    for variant in chosen:
        try:
            planned_list.append(PlannedVariant(variant, _resolve_params(request, op, shape,
                                                                        types, variant)))
        except UsageError as exc:
            if named and not request.sweep:  # the one point of a variant asked for by name
                raise
            # A sweep's point this variant cannot run (a value it does not allow, a block
            # too large, defaults a constraint refuses at this size), or a variant the run
            # chose itself: a row that says so, and the others go on.
            point = {spec.name: spec.default for spec in variant.params}
            point |= {name: value for name, value in request.params.items()
                      if variant.param(name) is not None}
            skipped.append((variant, str(exc), point))
            skip_kinds.append(exc.kind if isinstance(exc, Unrunnable) else str(exc))
            notes.append(f"skipped {variant.name}: {exc}")
    planned = tuple(planned_list)
    if request.sanitize is not None and request.sanitize not in SANITIZER_TOOLS:
        raise UsageError(f"--sanitize {request.sanitize}: expected one of "
                         f"{', '.join(SANITIZER_TOOLS)}")
    if request.l2_flush not in L2_FLUSHES:
        raise UsageError(f"--l2-flush {request.l2_flush}: expected one of {', '.join(L2_FLUSHES)}")
    if request.hot and request.l2_flush != DEFAULT_L2_FLUSH:
        # a suite's entry is named by the suite's loader, which says this in its keys
        raise UsageError(f"hot = true with l2_flush = \"{request.l2_flush}\": a hot run "
                         "flushes nothing; drop one" if request.origin else
                         f"--hot with --l2-flush {request.l2_flush}: a hot run flushes "
                         "nothing; drop one")
    if request.hot and request.insight.writeback:
        raise UsageError("--writeback with --hot: the write-back is what a cold sample leaves "
                         "for the next L2 flush, and a hot run flushes nothing; drop one")
    if not (math.isfinite(request.insight.energy_s) and request.insight.energy_s >= 0):
        raise UsageError(f"--energy {request.insight.energy_s}: expected seconds > 0")
    return Plan(op, shape, types, planned, request.seed, request.hot, timing, tuple(notes),
                request.sanitize, tuple(skipped), tuple(skip_kinds), request.insight,
                request.sweep,
                full_check=request.full_check, l2_flush=request.l2_flush,
                kernels_dirs=tuple(request.kernels_dirs), left_for_type=tuple(left_for_type),
                entry=request.entry)


def shown_notes(plans: Sequence[Plan]) -> list[str]:
    """Return the plans' notes, each once, but those saying that variants of another type
    were left out where another plan of the same entry runs them (a suite's float16 and
    int32 rows: the int32 ones said "left out mma_sync: written for float16 only", once
    per point, beside the float16 rows of mma_sync)."""
    runs = {(plan.op.name, plan.entry, planned.variant.name)
            for plan in plans for planned in plan.variants}
    notes = []
    for plan in plans:
        ran = {text for text, names in plan.left_for_type
               if all((plan.op.name, plan.entry, name) in runs for name in names)}
        notes += [text for text in plan.notes if text not in ran]
    return list(dict.fromkeys(notes))


def refuse_unallowed(flag: str, op: str, param: str, value: int,
                     specs: Sequence[ParamSpec]) -> None:
    """Raise UsageError for a value none of the chosen variants' specs of param allows: a
    typo, in a sweep too (a value some variants allow is theirs; the others skip it)."""
    if not any(spec.allows(value) for spec in specs):
        allowed = "; ".join(dict.fromkeys(spec.describe_allowed() for spec in specs))
        raise UsageError(f"{flag} {value}: no selected {op} variant allows it ({param} in "
                         f"{allowed})")


def check_geometry(where: str, grid: Sequence[int], block: Sequence[int]) -> None:
    """Raise UsageError for a grid extent below 1 or a block outside CUDA's limits."""
    if min(grid) < 1:
        raise Unrunnable(f"{where}: the grid {_extents(grid)} at this size has an extent "
                         "below 1; fix the header's launch arithmetic or the --size",
                         "a grid extent below 1")
    threads = 1
    for extent, limit in zip(block, MAX_BLOCK_DIMS):
        if not 1 <= extent <= limit:
            raise Unrunnable(f"{where}: block extent {extent} outside 1..{limit}; fix the "
                             "header's launch arithmetic or choose other parameters",
                             "a block extent outside CUDA's limits")
        threads *= extent
    if threads > MAX_THREADS_PER_BLOCK:
        raise Unrunnable(
            f"{where}: a block of {_extents(block)} = {threads} threads "
            f"exceeds the CUDA limit of {MAX_THREADS_PER_BLOCK}; choose smaller parameters",
            "too many threads per block")


def _resolve_params(request: Request, op: Op, shape: Shape, types: TypeSet,
                    variant: KernelVariant) -> dict[str, int]:
    params = {}
    for spec in variant.params:
        value = request.params.get(spec.name, spec.default)
        if not spec.allows(value):
            raise Unrunnable(
                f"{request.flag(spec.name)} {value}: {op.name}/{variant.name} allows "
                f"{spec.name} in {spec.describe_allowed()}",
                f"{op.name}/{variant.name} allows {spec.name} in {spec.describe_allowed()}")
        params[spec.name] = value
    where = f"{op.name}/{variant.name} with {_describe(params)}"
    variables = header_variables(op, shape, types, params, sm_count=1)
    broken = variant.violated(variables)
    if broken is not None:
        # the constraint's own parameters given: the caller's choice; else its defaults
        asked = any(name in request.params for name in names_in((broken.condition,)))
        raise Unrunnable(f"{variant.path}:{broken.line}: {where} breaks the header's constraint "
                         f"`{broken.text}`; " + ("choose other parameters" if asked else
                                                 "those are the header's defaults: fix them or "
                                                 "the constraint, or choose other parameters"),
                         f"breaks a header constraint `{broken.text}`")
    for launch, (grid, block) in zip(variant.launches, variant.geometry(variables)):
        # SM_COUNT is 1 here: a launch using it is judged on the GPU, with the GPU's count
        if "SM_COUNT" not in names_in((*launch.grid, *launch.block)):
            check_geometry(f"{variant.path}:{launch.line}: {where}, launch {launch.entry}",
                           grid, block)
    shared = variant.static_shared_bytes(variables)
    if shared is not None and shared < 0:
        raise Unrunnable(f"{where}: shared_bytes is {shared}, below 0; fix {variant.path}",
                         "shared_bytes below 0")
    variant.dynamic_shared_bytes(variables)  # KernelFileError if negative
    blocks = math.prod(variant.geometry(variables)[0][0])  # the first launch's grid
    _check_args(op, shape, blocks)
    if variant.tensor_maps:
        _check_tensor_maps(op, shape, types, variant, variables, blocks, where)
    if shared is not None and shared > MAX_STATIC_SHARED_BYTES:
        # a constant in the header no parameter changes: the file is what to fix
        fix = (f"choose smaller parameters, or fix shared_bytes in {variant.path}"
               if variant.params
               else f"fix shared_bytes in {variant.path}")
        raise Unrunnable(
            f"{where}: needs {shared} bytes of shared memory per block, more than the "
            f"{MAX_STATIC_SHARED_BYTES} a block may declare statically; {fix}",
            "too much static shared memory")
    return params


def _check_work(op: Op, shape: Shape, types: TypeSet) -> None:
    """Check what the op says one run does (its rates, roofs and memory check follow from
    it): a whole number of operations and of bytes, 0 or more, else OpFileError naming
    the op's file."""
    for what, count in (("flops", lambda: op.flops(shape)),
                        ("bytes_moved", lambda: op.bytes_moved(shape, types))):
        with user_code(op, what):
            value = count()
        # below 2**63: a results file holds 64-bit counts (10**400 was exit 4, and a file
        # that no command would read again)
        if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0
                or value >= 2**63):
            raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.{what} returned "
                              f"{value!r:.40} for {shape}: expected a whole number, 0 or "
                              "more and below 2**63")


def _check_args(op: Op, shape: Shape, blocks: int) -> None:
    """Check the kernel arguments the op gives now, as a dry run does too: a list of
    buffer names and int32 scalars (a float there was found only when the variant ran)."""
    with user_code(op, "args"):
        given = op.args(shape, blocks)
    if not isinstance(given, (list, tuple)):
        raise OpFileError(f"{op.origin or type(op).__module__}: {op.name}.args returned "
                          f"{given!r:.60}: expected a list of buffer names and int scalars")
    for value in given:
        if not isinstance(value, str):
            int32_value(op, value)


def _check_outputs(op: Op, shape: Shape, types: TypeSet) -> None:
    """Check what the op says its kernels write: a dict of buffer name -> shape, each a
    sequence of whole extents, 0 or more, else OpFileError naming the op's file (an int
    for a shape was an internal error where the memory check read it)."""
    with user_code(op, "outputs"):
        outputs = op.outputs(shape, types, 1)
    where = f"{op.origin or type(op).__module__}: {op.name}.outputs returned"
    if not isinstance(outputs, Mapping):  # {} for an op that writes its input in place
        raise OpFileError(f"{where} {outputs!r} for {shape}: expected a dict of output "
                          "buffer name -> shape, e.g. {\"y\": shape}")
    for name, extents in outputs.items():
        if not isinstance(name, str) or not isinstance(extents, (tuple, list)) or any(
                isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0
                for n in extents):
            raise OpFileError(f"{where} {name!r}: {extents!r} for {shape}: expected a buffer "
                              "name and its shape, a tuple of whole extents, 0 or more, "
                              "e.g. (rows, cols)")


def _check_tensor_maps(op: Op, shape: Shape, types: TypeSet, variant: KernelVariant,
                       variables: Mapping[str, int], blocks: int, where: str) -> None:
    """Check what the header's tensor maps say before any GPU work: that each names a
    buffer the kernels get, and a box the driver accepts (the buffer's own extents and
    strides are checked when the variant runs: tensormaps.resolve)."""
    with user_code(op, "args"):
        buffers = [a for a in op.args(shape, blocks) if isinstance(a, str)]
    with user_code(op, "outputs"):
        outputs = op.outputs(shape, types, blocks)
    for spec, box in zip(variant.tensor_maps, variant.tensor_map_boxes(variables)):
        if spec.buffer not in buffers:
            raise KernelFileError(variant.path, spec.line,
                                  f"tensor_map {spec.buffer}: the {op.name} kernels get no "
                                  f"buffer {spec.buffer} (their buffers: {', '.join(buffers)})")
        kind = types.output if spec.buffer in outputs else types.input
        problem = tensormaps.box_problem(box, kind.itemsize, spec.swizzle)
        if problem is not None:
            raise Unrunnable(f"{where}: tensor_map {spec.buffer} in {kind.name}: {problem}; "
                             "choose other parameters",
                             f"a tensor_map {spec.buffer} box the driver refuses")


def unsupported_on(variant: KernelVariant, compute_capability: str, gpu: str = "this GPU"
                   ) -> str | None:
    """Return why variant cannot run on a GPU of compute_capability ("9.0"), or None: its
    `arch` builds for another one, or it asks for tensor maps before Hopper. The row is
    SKIP with this reason, which calls the GPU gpu (a dry run's is its --arch)."""
    if variant.arch is not None:
        reason = variant.arch.unsupported_on(compute_capability, gpu)
        if reason is not None:
            return reason
    capability = tuple(int(part) for part in compute_capability.split("."))
    if variant.tensor_maps and capability < TENSOR_MAPS_FROM:
        return (f"its tensor maps need compute capability "
                f"{'.'.join(map(str, TENSOR_MAPS_FROM))} or higher (TMA); {gpu} is "
                f"{compute_capability}")
    return None


def type_sizes(types: TypeSet) -> dict[str, int]:
    """Return the element sizes headers and kernels may use: ELEM_SIZE, ACC_SIZE, OUT_SIZE."""
    return {"ELEM_SIZE": types.input.itemsize, "ACC_SIZE": types.accumulate.itemsize,
            "OUT_SIZE": types.output.itemsize}


def header_variables(op: Op, shape: Shape, types: TypeSet, params: Mapping[str, int],
                     sm_count: int) -> dict[str, int]:
    """Return the names header arithmetic may use: the shape, params, sizes, SM_COUNT."""
    return {**op.variables(shape), **params, **type_sizes(types), "SM_COUNT": sm_count}


def compile_defines(params: Mapping[str, int], types: TypeSet) -> dict[str, object]:
    """Return the -D defines a variant is compiled with: params, the three types, sizes."""
    return {**params, "DTYPE": types.input.ctype, "ACC_TYPE": types.accumulate.ctype,
            "OUT_TYPE": types.output.ctype, **type_sizes(types)}


def _extents(extent: Sequence[int]) -> str:
    """Format a 3-D extent as written in headers: 64 x 64, not 64 x 64 x 1."""
    values = list(extent)
    while len(values) > 1 and values[-1] == 1:
        values.pop()
    return " x ".join(map(str, values))


def _describe(params: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
