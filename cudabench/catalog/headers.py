"""Parse the header of a kernel file (.cu) into a KernelVariant.

A kernel file starts with a block of `//` comment lines, for example:

    // cudabench: matmul
    // description: Shared-memory tiles of TILE x TILE.
    // dtypes: float32, int32
    // param TILE: default 16; allowed 8, 16, 32
    // shared_bytes: 2 * TILE * TILE * ELEM_SIZE
    // launch matmul_tiled: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE

The header ends at the first line that is not a `//` comment. Every non-blank header line
must be one of the keys above; errors name the file and line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import expressions
from cudabench.errors import KernelFileError
from cudabench.ops import Op, builtin_ops

# Names a header expression may use besides the op's dimensions and the variant's params.
BUILTIN_NAMES = ("ELEM_SIZE", "ACC_SIZE", "OUT_SIZE", "SM_COUNT")

_KEY_LINE = re.compile(r"^(?P<key>[A-Za-z_]+)(?:\s+(?P<name>[A-Za-z_]\w*))?\s*:\s*(?P<value>.*)$")
_RANGE = re.compile(r"^(-?\d+)\s*\.\.\s*(-?\d+)$")


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
        return _pad3(grid), _pad3(block)

    def dynamic_shared_bytes(self, variables: Mapping[str, int]) -> int:
        """Evaluate the dynamic shared memory the launch asks for (0 when it asks none)."""
        return expressions.evaluate(self.dynamic_shared, variables)[0] if self.dynamic_shared \
            else 0


UNITS = ("cuda", "tensor")


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


def _pad3(values: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(values) + (1,) * (3 - len(values))


def parse_header(path: Path, text: str | None = None,
                 ops: Mapping[str, Op] | None = None) -> KernelVariant:
    """Parse a kernel file's header; raise KernelFileError naming the file and line."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not code
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelFileError(path, None, f"cannot read kernel file: {exc}") from None
    lines = text.splitlines()
    header: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped.startswith("//"):
            break
        header.append((number, stripped[2:].strip()))

    ops = builtin_ops() if ops is None else ops
    if not header or not header[0][1].startswith("cudabench:"):
        raise KernelFileError(
            path, 1, "not a cudabench kernel: the first line must be `// cudabench: OP` "
            f"(OP one of {', '.join(ops)})",
        )
    op_name = header[0][1].split(":", 1)[1].strip()
    if op_name not in ops:
        raise KernelFileError(path, 1, f"unknown op {op_name!r} (known: {', '.join(ops)}; "
                                       "an op of your own is a .py file beside the kernels)")
    op = ops[op_name]

    reserved = {*op.dims, *BUILTIN_NAMES, "DTYPE", "ACC_TYPE", "OUT_TYPE"}
    fields: dict[str, tuple[int, str]] = {}
    params: list[ParamSpec] = []
    launch_lines: list[tuple[int, str, str]] = []
    for number, content in header[1:]:
        if not content:
            continue
        match = _KEY_LINE.match(content)
        if not match:
            raise KernelFileError(path, number, f"expected `key: value`, got {content!r}")
        key, name, value = match["key"], match["name"], match["value"].strip()
        if key == "param" and name:
            if any(p.name == name for p in params):
                raise KernelFileError(path, number, f"parameter {name} declared twice")
            if name in reserved:
                raise KernelFileError(
                    path, number, f"parameter {name} would hide the built-in name {name} "
                    f"(reserved: {', '.join(sorted(reserved))}); rename it",
                )
            params.append(_parse_param(path, number, name, value))
        elif key == "launch" and name:
            launch_lines.append((number, name, value))
        elif key in ("description", "dtypes", "shared_bytes", "unit") and not name:
            if key in fields:
                raise KernelFileError(path, number, f"`{key}` given twice")
            fields[key] = (number, value)
        else:
            raise KernelFileError(
                path, number,
                f"unknown header key {content.split(':', 1)[0]!r} (expected, in lower case: "
                "description, dtypes, param NAME, shared_bytes, unit or launch ENTRY)",
            )

    if not launch_lines:
        raise KernelFileError(
            path, None, "no `launch ENTRY: grid X, Y; block X, Y` line in the header"
        )
    known = set(op.dims) | {p.name for p in params} | set(BUILTIN_NAMES)
    launches = tuple(
        _parse_launch(path, n, entry, value, known) for n, entry, value in launch_lines
    )

    dtypes = op.dtypes
    if "dtypes" in fields:
        number, value = fields["dtypes"]
        dtypes = tuple(d.strip() for d in value.split(",") if d.strip())
        bad = [d for d in dtypes if d not in op.dtypes]
        if not dtypes or bad:
            raise KernelFileError(
                path, number, f"dtypes must be among {', '.join(op.dtypes)}; got {value!r}"
            )

    shared, shared_line = None, 0
    if "shared_bytes" in fields:
        number, value = fields["shared_bytes"]
        shared = _parse_exprs(path, number, value, known, "shared_bytes")
        if len(shared) != 1:
            raise KernelFileError(path, number, "shared_bytes takes one expression")
        shared_line = number

    unit = "cuda"
    if "unit" in fields:
        number, unit = fields["unit"]
        if unit not in UNITS:
            raise KernelFileError(path, number, f"unit must be one of {', '.join(UNITS)} (the "
                                                f"units whose roof the kernel is held to); got "
                                                f"{unit!r}")

    return KernelVariant(
        op=op_name,
        op_origin=op.origin,
        name=path.stem,
        path=path,
        description=fields.get("description", (0, ""))[1],
        dtypes=dtypes,
        params=tuple(params),
        launches=launches,
        shared_bytes=shared,
        source=text,
        shared_bytes_line=shared_line,
        unit=unit,
    )


def _parse_param(path: Path, number: int, name: str, value: str) -> ParamSpec:
    parts = dict(_split_param(path, number, part) for part in value.split(";") if part.strip())
    if set(parts) != {"default", "allowed"}:
        raise KernelFileError(
            path, number, f"param {name}: expected `default V; allowed A, B, C` or "
            "`default V; allowed LOW..HIGH`",
        )
    try:
        default = int(parts["default"])
        allowed_text = parts["allowed"]
        span = _RANGE.match(allowed_text)
        if span:
            spec = ParamSpec(name, default, low=int(span[1]), high=int(span[2]))
        else:
            values = tuple(int(v) for v in allowed_text.split(","))
            spec = ParamSpec(name, default, allowed=values)
    except ValueError:
        raise KernelFileError(path, number, f"param {name}: values must be integers") from None
    if not spec.allows(default):
        raise KernelFileError(
            path, number, f"param {name}: default {default} is not among the allowed values"
        )
    return spec


def _split_param(path: Path, number: int, part: str) -> tuple[str, str]:
    words = part.strip().split(None, 1)
    if len(words) != 2:
        raise KernelFileError(path, number, f"cannot read {part.strip()!r} in a param line")
    return words[0], words[1].strip()


def _parse_launch(
    path: Path, number: int, entry: str, value: str, known: set[str]
) -> Launch:
    items = [(piece.strip().split(None, 1) + [""])[:2]
             for piece in value.split(";") if piece.strip()]
    pieces = dict(items)
    keys = [key for key, _ in items]
    if len(set(keys)) != len(keys) or not {"grid", "block"} <= set(keys) \
            or not set(keys) <= {"grid", "block", "dynamic_shared"}:
        raise KernelFileError(
            path, number, f"launch {entry}: expected `grid X, Y[, Z]; block X, Y[, Z]` and "
            "optionally `; dynamic_shared BYTES`"
        )
    grid = _parse_exprs(path, number, pieces["grid"], known, f"launch {entry} grid")
    block = _parse_exprs(path, number, pieces["block"], known, f"launch {entry} block")
    dynamic: tuple[ast.expr, ...] = ()
    if "dynamic_shared" in pieces:
        dynamic = _parse_exprs(path, number, pieces["dynamic_shared"], known,
                               f"launch {entry} dynamic_shared")
        if len(dynamic) != 1:
            raise KernelFileError(path, number,
                                  f"launch {entry}: dynamic_shared takes one expression")
    return Launch(entry, grid, block, number, dynamic)


def _parse_exprs(
    path: Path, number: int, text: str, known: set[str], what: str
) -> tuple[ast.expr, ...]:
    try:
        nodes = expressions.parse_tuple(text)
    except expressions.ExpressionError as exc:
        raise KernelFileError(path, number, f"{what}: {exc}") from None
    unknown = expressions.names_in(nodes) - known
    if unknown:
        raise KernelFileError(
            path, number,
            f"{what}: unknown name(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known))})",
        )
    return nodes
