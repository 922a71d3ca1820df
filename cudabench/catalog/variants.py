"""What a kernel file's header declares, as records: its variant (op, types, parameters,
launches, shared memory, architecture, tensor maps) and how each is evaluated for a run.
catalog/headers.py parses a header into these."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import expressions
from cudabench.errors import KernelFileError

_ARCH = re.compile(r"^sm_(?P<digits>[1-9]\d{1,2})(?P<specific>a?)$")
ARCH_SPECIFIC_FROM = 9  # the `a` targets (arch-specific features) begin with sm_90a

# tensor_map NAME: box E[, E...][; swizzle none|32|64|128][; l2 none|64|128|256]
TENSOR_MAP_KEYS = ("box", "swizzle", "l2")
SWIZZLES = {"none": 0, "32": 32, "64": 64, "128": 128}  # bytes of the swizzle span
L2_PROMOTIONS = {"none": 0, "64": 64, "128": 128, "256": 256}  # bytes of an L2 fetch
MAX_TENSOR_RANK = 5  # the driver's limit for a tiled tensor map


@dataclass(frozen=True)
class Arch:
    """The one target a variant is built for: sm_NN, or sm_NNa with the arch-specific
    features (wgmma, setmaxnreg) of exactly that compute capability."""

    major: int
    minor: int
    specific: bool = False  # the `a` suffix

    @property
    def name(self) -> str:
        """Return the real architecture, as nvcc's code= names it: sm_90a."""
        return f"sm_{self.major}{self.minor}{'a' if self.specific else ''}"

    @property
    def virtual(self) -> str:
        """Return the virtual architecture, as nvcc's arch= names it: compute_90a."""
        return f"compute_{self.major}{self.minor}{'a' if self.specific else ''}"

    @property
    def gencode(self) -> str:
        """Return the nvcc flag that builds for exactly this target (a cubin, no PTX)."""
        return f"-gencode=arch={self.virtual},code={self.name}"

    def unsupported_on(self, compute_capability: str, gpu: str = "this GPU") -> str | None:
        """Return why a cubin for this target cannot run on a GPU of compute_capability
        ("9.0"), or None when it can: an `a` target needs exactly its own capability, a
        plain one the same major version and at least its minor (binary compatibility).
        gpu names the GPU in the reason (a dry run's is its --arch)."""
        major, minor = (int(part) for part in compute_capability.split("."))
        if self.specific and (major, minor) != (self.major, self.minor):
            return (f"built for {self.name}, which runs only on compute capability "
                    f"{self.major}.{self.minor}; {gpu} is {compute_capability}")
        if not self.specific and (major != self.major or minor < self.minor):
            return (f"built for {self.name}, which runs on compute capability "
                    f"{self.major}.{self.minor} to {self.major}.9; {gpu} is "
                    f"{compute_capability}")
        return None


def parse_arch(text: str) -> Arch | None:
    """Return the Arch an `sm_NN[a]` names, or None when the text is not one."""
    match = _ARCH.match(text)
    if match is None:
        return None
    digits = match["digits"]
    arch = Arch(int(digits[:-1]), int(digits[-1]), bool(match["specific"]))
    if arch.specific and arch.major < ARCH_SPECIFIC_FROM:
        return None
    return arch


@dataclass(frozen=True)
class TensorMapSpec:
    """A TMA tensor map the kernel takes after the op's arguments, over one of its buffers:
    the box (one expression per extent, outermost first, as the buffer's shape) and the
    swizzle and L2 promotion in bytes (0: none)."""

    buffer: str
    box: tuple[ast.expr, ...]
    line: int
    swizzle: int = 0
    l2: int = 0

    def describe(self, box: tuple[int, ...] | None = None) -> str:
        """Return the map as a user reads it: A box 64x64, swizzle 128B."""
        extents = "x".join(map(str, box)) if box is not None else "?"
        extras = "".join(f", {name} {value}B" for name, value in
                         (("swizzle", self.swizzle), ("l2", self.l2)) if value)
        return f"{self.buffer} box {extents}{extras}"


@dataclass(frozen=True)
class ParamSpec:
    """A compile-time parameter, passed to nvcc as -DNAME=value."""

    name: str
    default: int
    allowed: tuple[int, ...] = ()  # explicit values, or empty when `low..high` is used
    low: int | None = None
    high: int | None = None

    def allows(self, value: int) -> bool:
        """Return whether value is one this parameter accepts."""
        if self.allowed:
            return value in self.allowed
        assert self.low is not None and self.high is not None
        return self.low <= value <= self.high

    def describe_allowed(self) -> str:
        """Return the allowed values as a user would type them."""
        if self.allowed:
            return ", ".join(map(str, self.allowed))
        return f"{self.low}..{self.high}"


@dataclass(frozen=True)
class Constraint:
    """A `constraint:` header line: a comparison every configuration must satisfy."""

    text: str
    condition: ast.Compare
    line: int


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a variant: entry function and geometry expressions."""

    entry: str
    grid: tuple[ast.expr, ...]
    block: tuple[ast.expr, ...]
    line: int
    dynamic_shared: tuple[ast.expr, ...] = ()  # bytes of `extern __shared__` memory

    def geometry(self, variables: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Evaluate (grid, block) as 3-tuples."""
        grid = expressions.evaluate(self.grid, variables)
        block = expressions.evaluate(self.block, variables)
        return pad3(grid), pad3(block)

    def dynamic_shared_bytes(self, variables: Mapping[str, int]) -> int:
        """Evaluate the dynamic shared memory the launch asks for (0 when it asks none)."""
        return expressions.evaluate(self.dynamic_shared, variables)[0] if self.dynamic_shared \
            else 0


# `run: default` (the default) puts a variant in the runs that name no --variant;
# `run: on request` leaves it out of them: --variant NAME or --variant all runs it.
RUN_MODES = ("default", "on request")
ALL_VARIANTS = "all"  # --variant all: every variant, those run on request too


# `#include "name"` (group 1) or `#include <name>` (group 2)
_INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', re.MULTILINE)


@dataclass(frozen=True)
class KernelVariant:
    """One .cu file: a variant of an op, with its parameters and launches."""

    op: str
    name: str
    path: Path
    description: str
    dtypes: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    launches: tuple[Launch, ...]
    shared_bytes: tuple[ast.expr, ...] | None
    source: str
    shared_bytes_line: int = 0
    op_origin: str = ""  # where the op is declared (the registry finds it again there)
    unit: str = "cuda"  # the units it computes on, whose roof holds it: cuda or tensor
    arch: Arch | None = None  # the one target it is built for; None: the GPU's own
    tensor_maps: tuple[TensorMapSpec, ...] = ()  # extra arguments after the op's, in order
    constraints: tuple[Constraint, ...] = ()  # what every configuration must satisfy
    on_request: bool = False  # `run: on request`: left out of runs that name no variant

    def included_files(self) -> list[tuple[str, Path, str]]:
        """Return every local file the source includes, followed through the files
        included, wherever it lies: (the name as included, the path, its text), each once.
        Found where nvcc finds it: `"name"` beside the file that includes it, then in the
        variant's folder (nvcc's -I); `<name>` in the variant's folder (else a system
        header, not the user's)."""
        found: list[tuple[str, Path, str]] = []
        seen: set[Path] = set()
        home = self.path.parent
        pending = [(home, self.source)]
        while pending:
            folder, text = pending.pop()
            for quoted, angled in _INCLUDE.findall(text):
                places = [folder / quoted, home / quoted] if quoted else [home / angled]
                path = next((p.resolve() for p in places if p.is_file()), None)
                name = quoted or angled
                if path is None or path in seen:
                    continue
                seen.add(path)
                content = path.read_text(errors="replace")
                found.append((name, path, content))
                pending.append((path.parent, content))
        return found

    def violated(self, variables: Mapping[str, int]) -> Constraint | None:
        """Return the first constraint variables break, or None; KernelFileError if one
        cannot be evaluated."""
        for constraint in self.constraints:
            try:
                if not expressions.holds(constraint.condition, variables):
                    return constraint
            except expressions.ExpressionError as exc:
                raise KernelFileError(self.path, constraint.line,
                                      f"constraint: {exc}") from None
        return None

    def param(self, name: str) -> ParamSpec | None:
        """Return the parameter called name, if the variant declares it."""
        return next((p for p in self.params if p.name == name), None)

    def geometry(self, variables: Mapping[str, int]
                 ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Return (grid, block) of every launch; KernelFileError if the arithmetic fails."""
        result = []
        for launch in self.launches:
            try:
                result.append(launch.geometry(variables))
            except expressions.ExpressionError as exc:
                raise KernelFileError(self.path, launch.line, f"launch {launch.entry}: {exc}"
                                      ) from None
        return result

    def dynamic_shared_bytes(self, variables: Mapping[str, int]) -> list[int]:
        """Return each launch's dynamic shared memory in bytes; KernelFileError if bad."""
        result = []
        for launch in self.launches:
            try:
                value = launch.dynamic_shared_bytes(variables)
            except expressions.ExpressionError as exc:
                raise KernelFileError(self.path, launch.line,
                                      f"launch {launch.entry} dynamic_shared: {exc}") from None
            if value < 0:
                raise KernelFileError(self.path, launch.line, f"launch {launch.entry} "
                                      f"dynamic_shared: {value} bytes is negative")
            result.append(value)
        return result

    def tensor_map_boxes(self, variables: Mapping[str, int]) -> list[tuple[int, ...]]:
        """Return each tensor map's box, outermost extent first; KernelFileError if the
        arithmetic fails."""
        result = []
        for spec in self.tensor_maps:
            try:
                result.append(tuple(expressions.evaluate(spec.box, variables)))
            except expressions.ExpressionError as exc:
                raise KernelFileError(self.path, spec.line,
                                      f"tensor_map {spec.buffer} box: {exc}") from None
        return result

    def static_shared_bytes(self, variables: Mapping[str, int]) -> int | None:
        """Return the declared shared memory per block, if the header gives it."""
        if self.shared_bytes is None:
            return None
        try:
            return expressions.evaluate(self.shared_bytes, variables)[0]
        except expressions.ExpressionError as exc:
            raise KernelFileError(self.path, self.shared_bytes_line, f"shared_bytes: {exc}"
                                  ) from None

    def compile_source(self, headers: Sequence[str] = ()) -> str:
        """Return the source for nvcc: headers first, then a #line directive so that errors
        cite this file's own lines."""
        quoted = str(self.path).replace("\\", "\\\\").replace('"', '\\"')
        includes = "".join(f"#include <{header}>\n" for header in headers)
        return f'{includes}#line 1 "{quoted}"\n{self.source}'


def pad3(values: tuple[int, ...]) -> tuple[int, ...]:
    """Return a grid or block as three extents (missing ones are 1)."""
    return tuple(values) + (1,) * (3 - len(values))
