"""Parse the header of a kernel file (.cu) into a KernelVariant.

A kernel file starts with a block of `//` comment lines, for example:

    // cudabench: matmul
    // description: Shared-memory tiles of TILE x TILE.
    // dtypes: float32, int32
    // param TILE: default 16; allowed 8, 16, 32
    // shared_bytes: 2 * TILE * TILE * ELEM_SIZE
    // launch matmul_tiled: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE

and optionally what the kernel needs beyond the op's arguments (docs/writing-an-op.md):

    // arch: sm_90a
    // tensor_map A: box BM, BK; swizzle 128
    // run: on request

(`run: on request` leaves the variant out of the runs that name no --variant; --variant
NAME or --variant all runs it.)

and constraints between the parameters (repeatable; a configuration that breaks one is
never compiled: `--best` searches prune it, an explicit one is a usage error):

    // constraint: (BM // TM) * (BN // TN) <= 1024

The header ends at the first line that is not a `//` comment. Every non-blank header line
must be one of the keys above; errors name the file and line.
"""


from __future__ import annotations

import ast
import collections
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from cudabench.catalog import expressions
from cudabench.common.infiles import MAX_SOURCE_BYTES, TooLarge, read_capped
from cudabench.common.text import CONTROLS, decoded
from cudabench.catalog.variants import (
    ALL_VARIANTS,
    L2_PROMOTIONS,
    MAX_TENSOR_RANK,
    RUN_MODES,
    SWIZZLES,
    TENSOR_MAP_KEYS,
    Constraint,
    KernelVariant,
    Launch,
    ParamSpec,
    TensorMapSpec,
    parse_arch,
)
from cudabench.errors import KernelFileError
from cudabench.results.model import UNITS
from cudabench.ops import Op, builtin_ops
from cudabench.ops.base import BUILTIN_NAMES, TYPE_MACROS

# A header line, `key: value` or `key NAME: value` (NAME any identifier: a parameter's is
# then refused unless ASCII, by name); a parameter's `allowed A..B`.
_KEY_LINE = re.compile(r"^(?P<key>[A-Za-z_]+)(?:\s+(?P<name>[^\W\d]\w*))?\s*:\s*(?P<value>.*)$")
# ASCII digits after an optional minus: not int()'s 1_6, +16 or full-width digits for 16,
# which -p refuses too (cli/options.py)
_INTEGER = re.compile(r"-?[0-9]+")
_RANGE = re.compile(r"^(-?[0-9]+)\s*\.\.\s*(-?[0-9]+)$")

# A parameter is passed as `-DNAME=value`, a macro over the whole translation unit, CUDA's
# own headers included: a C++ keyword, a CUDA built-in variable, or T and U (template
# parameters in CUDA's headers) as a name breaks code that is not the kernel's. Names
# starting `__` or `_` and a capital letter are the compiler's (`__CUDA_ARCH__`).
_MACRO_CLASHES = frozenset((
    "alignas alignof asm auto bool break case catch char char8_t char16_t char32_t class "
    "const consteval constexpr constinit const_cast continue decltype default delete do "
    "double dynamic_cast else enum explicit export extern false float for friend goto if "
    "inline int long mutable namespace new noexcept nullptr operator private protected "
    "public register reinterpret_cast requires return short signed sizeof static "
    "static_assert static_cast struct switch template this thread_local throw true try "
    "typedef typeid typename union unsigned using virtual void volatile wchar_t while "
    "threadIdx blockIdx blockDim gridDim warpSize T U").split())
_COMPILER_NAME = re.compile(r"__|_[A-Z]")

# A line of the comments after the header that can only be meant as one of its lines: a
# later `// dtypes: float16` would otherwise be ignored, its kernel run in every type.
FIELD_KEYS = ("description", "dtypes", "shared_bytes", "unit", "arch", "run")  # once each
# A param or launch line is known by its keys in any order (`allowed 8, 16; default 8`).
_LATE_KEYED = (r"|param\s+[A-Za-z_]\w*\s*:\s*(?:default|allowed)\b"
               r"|launch\s+[A-Za-z_]\w*\s*:\s*(?:grid|block|dynamic_shared)\b")
_LATE_HEADER_LINE = re.compile(
    rf"^//\s*(?:(?:{'|'.join((*FIELD_KEYS, 'constraint'))})\s*:{_LATE_KEYED}"
    r"|tensor_map\s+[A-Za-z_]\w*\s*:)")


# Under an #include or #define a comment is as likely the code's own (`// run: one block
# per slice`): only a line a header would take as it is is refused there.
_LATE_EXACT_LINE = re.compile(
    r"^//\s*(?:run\s*:\s*on\s+request\s*$|arch\s*:\s*sm_\d+[a-z]?\s*$|constraint\s*:"
    rf"{_LATE_KEYED}"
    r"|tensor_map\s+[A-Za-z_]\w*\s*:|dtypes\s*:\s*(?:float|int|bfloat)\w*\s*(?:,|$))")


def _refuse_header_lines_after(path: Path, lines: Sequence[str], header_end: int) -> None:
    """Raise KernelFileError for a header line in the comments that follow the header
    before the code (a blank line or an #include ends the header: what comes after it was
    ignored)."""
    preprocessed = False  # past an #include or #define
    for number, line in enumerate(lines[header_end:], start=header_end + 1):
        stripped = line.strip()
        if stripped and not stripped.startswith(("//", "#")):
            return  # the code: comments inside it are the kernel's own
        preprocessed = preprocessed or stripped.startswith("#")
        if (_LATE_EXACT_LINE if preprocessed else _LATE_HEADER_LINE).match(stripped):
            raise KernelFileError(
                path, number, f"{stripped!r} comes after the header's end (line "
                f"{header_end + 1}, the first line that is not a // comment): the header is "
                "one unbroken block of // lines at the file's top; move the line up into it")


def parse_header(path: Path, text: str | None = None,
                 ops: Mapping[str, Op] | None = None) -> KernelVariant:
    """Parse a kernel file's header; raise KernelFileError naming the file and line."""
    if text is None:
        try:
            # a byte-order mark is not code; newlines as a text-mode read gives them
            text = decoded(read_capped(path, MAX_SOURCE_BYTES), "utf-8-sig")
        except TooLarge as exc:
            raise KernelFileError(path, None, f"cannot read kernel file: {exc}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelFileError(path, None, f"cannot read kernel file: {exc}") from None
    lines = text.splitlines()
    header: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped.startswith("//"):
            break
        header.append((number, stripped[2:].strip()))
    if header:  # none: not a kernel of ours, said below
        _refuse_header_lines_after(path, lines, len(header))

    ops = builtin_ops() if ops is None else ops
    if not header or not header[0][1].startswith("cudabench:"):
        raise KernelFileError(
            path, 1, "not a cudabench kernel: the first line must be `// cudabench: OP` "
            f"(OP one of {', '.join(ops)}); a file the kernels #include is named with a "
            "leading _ (_common.cu)",
        )
    op_name = header[0][1].split(":", 1)[1].strip()
    if op_name not in ops:
        raise KernelFileError(path, 1, f"unknown op {op_name!r} (known: {', '.join(ops)}; "
                                       "an op of your own is a .py file beside the kernels, "
                                       "or in a folder given with --kernels-dir)")
    op = ops[op_name]

    reserved = {*op.dims, *BUILTIN_NAMES, *TYPE_MACROS}
    fields: dict[str, tuple[int, str]] = {}
    params: list[ParamSpec] = []
    launch_lines: list[tuple[int, str, str]] = []
    tensor_map_lines: list[tuple[int, str, str]] = []
    constraint_lines: list[tuple[int, str]] = []
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
            if not name.isascii():  # \w took BLÖCK: --best-out wrote it as a bare TOML key
                raise KernelFileError(
                    path, number, f"parameter {name}: nvcc gets it as a macro (-D{name}=...), "
                    "whose name is ASCII letters, digits and _; rename it")
            if name in _MACRO_CLASHES or _COMPILER_NAME.match(name):
                raise KernelFileError(
                    path, number, f"parameter {name}: nvcc gets it as a macro (-D{name}=...), "
                    "which would replace " + ("a name the compiler reserves (those starting "
                                              "__ or _ and a capital)"
                                              if _COMPILER_NAME.match(name) else
                                              "a C++ keyword or a name CUDA's own headers "
                                              "use") + "; rename it")
            params.append(_parse_param(path, number, name, value))
        elif key == "launch" and name:
            launch_lines.append((number, name, value))
        elif key == "tensor_map" and name:
            if any(buffer == name for _, buffer, _ in tensor_map_lines):
                raise KernelFileError(path, number, f"tensor_map {name} declared twice")
            tensor_map_lines.append((number, name, value))
        elif key == "constraint" and not name:
            constraint_lines.append((number, value))
        elif key in FIELD_KEYS and not name:
            if key in fields:
                raise KernelFileError(path, number, f"`{key}` given twice")
            fields[key] = (number, value)
        elif key in ("param", "launch", "tensor_map") and not name:  # a name left out
            what = {"param": "NAME: default N; allowed ...", "launch": "ENTRY: grid X, Y; "
                    "block X, Y", "tensor_map": "BUFFER: ..."}[key]
            raise KernelFileError(path, number, f"`{key}` needs a name before its colon: "
                                                f"`// {key} {what}`")
        elif key in ("constraint", *FIELD_KEYS) and name:
            raise KernelFileError(path, number, f"`{key}` takes no name: `// {key}: ...`, "
                                                f"not `// {key} {name}: ...`")
        else:
            raise KernelFileError(
                path, number,
                f"unknown header key {content.split(':', 1)[0]!r} (expected, in lower case: "
                "description, dtypes, param NAME, constraint, shared_bytes, unit, arch, run, "
                "launch ENTRY or tensor_map BUFFER)",
            )

    if not launch_lines:
        raise KernelFileError(
            path, None, "no `launch ENTRY: grid X, Y; block X, Y` line in the header"
        )
    known = set(op.dims) | {p.name for p in params} | set(BUILTIN_NAMES)
    launches = tuple(
        _parse_launch(path, n, entry, value, known) for n, entry, value in launch_lines
    )
    tensor_maps = tuple(_parse_tensor_map(path, n, buffer, value, known)
                        for n, buffer, value in tensor_map_lines)
    constraints = tuple(_parse_constraint(path, n, value, known - {"SM_COUNT"})
                        for n, value in constraint_lines)

    dtypes = op.dtypes
    if "dtypes" in fields:
        number, value = fields["dtypes"]
        dtypes = tuple(d.strip() for d in value.split(",") if d.strip())
        bad = [d for d in dtypes if d not in op.dtypes]
        if not dtypes or bad:
            raise KernelFileError(
                path, number, f"dtypes must be among {', '.join(op.dtypes)}; got {value!r}"
            )
        if len(set(dtypes)) < len(dtypes):  # a slip (float32 meant float64?), not a type
            raise KernelFileError(path, number, f"dtypes: {value.strip()!r} names a type twice")

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

    arch = None
    if "arch" in fields:
        number, value = fields["arch"]
        arch = parse_arch(value)
        if arch is None:
            raise KernelFileError(
                path, number, f"arch must be sm_NN or sm_NNa (a compute capability's digits; "
                f"`a`, from sm_90a on, for the arch-specific features of exactly that GPU, "
                f"e.g. sm_90a for wgmma on an H100); got {value!r}")

    on_request = False
    if "run" in fields:
        number, value = fields["run"]
        if " ".join(value.split()) not in RUN_MODES:
            raise KernelFileError(path, number, f"run must be `default` (in the runs that name "
                                                f"no --variant) or `on request` (only when "
                                                f"--variant names it, or --variant "
                                                f"{ALL_VARIANTS}); got {value!r}")
        on_request = " ".join(value.split()) == "on request"
    if path.stem == ALL_VARIANTS:
        raise KernelFileError(path, None, f"a variant cannot be called {ALL_VARIANTS!r}: "
                                          f"--variant {ALL_VARIANTS} means every variant; "
                                          "rename the file")
    if CONTROLS.search(path.stem):  # printed in every table
        raise KernelFileError(path.with_name(ascii(path.name)), None,
                              "a variant's name holds a control character; rename the file")
    rows = {op.vendor_library, *op.references} - {""}
    if path.stem in rows:  # one benchmark twice in its results file, which compare refuses
        kind = "vendor" if path.stem == op.vendor_library else "reference"
        raise KernelFileError(path, None, f"a variant cannot be called {path.stem!r}: that is "
                                          f"the name of the {op_name} op's {kind} row, "
                                          "measured beside its variants; rename the file")

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
        arch=arch,
        tensor_maps=tensor_maps,
        constraints=constraints,
        on_request=on_request,
    )


def _parse_param(path: Path, number: int, name: str, value: str) -> ParamSpec:
    items = [_split_param(path, number, part) for part in value.split(";") if part.strip()]
    parts = dict(items)
    if len(items) != len(parts):  # `default 256; default 64`: which one was meant?
        twice = sorted(key for key, n in collections.Counter(k for k, _ in items).items()
                       if n > 1)
        raise KernelFileError(path, number, f"param {name}: {', '.join(twice)} given twice")
    if set(parts) != {"default", "allowed"}:
        raise KernelFileError(
            path, number, f"param {name}: expected `default V; allowed A, B, C` or "
            "`default V; allowed LOW..HIGH`",
        )
    try:
        default = _integer(path, number, name, parts["default"])
    except ValueError:
        raise KernelFileError(
            path, number,
            f"param {name}: default {parts['default']!r} is not an integer such as 16 or -2"
        ) from None
    allowed_text = parts["allowed"]
    span = _RANGE.match(allowed_text)
    try:
        if span:
            spec = ParamSpec(name, default, low=_integer(path, number, name, span[1]),
                             high=_integer(path, number, name, span[2]))
        else:
            values = tuple(_integer(path, number, name, v) for v in allowed_text.split(","))
            spec = ParamSpec(name, default, allowed=values)
    except ValueError:
        # Name what was written: a --size style step (`1..64:x2`) reads as neither form.
        raise KernelFileError(
            path, number, f"param {name}: allowed {allowed_text!r} is neither integers "
            "`A, B, C` nor a range `LOW..HIGH`",
        ) from None
    if span and int(span[1]) > int(span[2]):
        raise KernelFileError(
            path, number, f"param {name}: allowed {allowed_text!r} is an empty range (LOW is "
            f"above HIGH); write `allowed {span[2]}..{span[1]}`")
    if len(set(spec.allowed)) < len(spec.allowed):  # a sweep would run one value twice
        raise KernelFileError(
            path, number, f"param {name}: allowed {allowed_text!r} lists a value twice")
    if not spec.allows(default):
        raise KernelFileError(
            path, number, f"param {name}: default {default} is not among the allowed values"
        )
    return spec


def _integer(path: Path, number: int, name: str, text: str) -> int:
    """Return a header integer, `16` or `-2`; ValueError for anything else. One beyond 64
    bits is a KernelFileError: a results file holds 64-bit integers (-p refuses it too),
    and a run that wrote one wrote a file no command would read."""
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        raise ValueError(text)
    digits = text.lstrip("-").lstrip("0")  # leading zeros are no size: 0000...032 is 32
    if len(digits) > 19 or not -2**63 <= int(text) < 2**63:
        raise KernelFileError(path, number, f"param {name}: {text[:24]}"
                                            f"{'...' if len(text) > 24 else ''} is beyond a "
                                            "64-bit integer; parameters are integers such as 16")
    return int(text)


def _parse_constraint(path: Path, number: int, value: str, known: set[str]) -> Constraint:
    """Parse `constraint: A <= B`: names are the shape's, the parameters', the built-ins."""
    try:
        condition = expressions.parse_condition(value)
    except expressions.ExpressionError as exc:
        raise KernelFileError(path, number, f"constraint: {exc}") from None
    unknown = expressions.names_in((condition,)) - known
    if unknown:
        raise KernelFileError(path, number, f"constraint: unknown name(s) "
                                            f"{', '.join(sorted(unknown))} (known: "
                                            f"{', '.join(sorted(known))})")
    return Constraint(value, condition, number)


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


def _parse_tensor_map(path: Path, number: int, buffer: str, value: str, known: set[str]
                      ) -> TensorMapSpec:
    """Parse `box E[, E...][; swizzle none|32|64|128][; l2 none|64|128|256]`."""
    usage = (f"tensor_map {buffer}: expected `box E[, E...]` (one extent per dimension of "
             f"{buffer}, outermost first) and optionally `; swizzle none|32|64|128` and "
             "`; l2 none|64|128|256`")
    pieces: dict[str, str] = {}
    for piece in value.split(";"):
        words = piece.strip().split(None, 1)
        if len(words) != 2 or words[0] not in TENSOR_MAP_KEYS or words[0] in pieces:
            raise KernelFileError(path, number, f"{usage}; got {piece.strip()!r}")
        pieces[words[0]] = words[1].strip()
    if "box" not in pieces:
        raise KernelFileError(path, number, usage)
    box = tuple(node for part in _top_level_parts(pieces["box"]) for node in _parse_exprs(
        path, number, part, known, f"tensor_map {buffer} box"))
    if not 1 <= len(box) <= MAX_TENSOR_RANK:
        raise KernelFileError(path, number, f"tensor_map {buffer}: box has {len(box)} "
                                            f"extents; a tensor map has 1 to {MAX_TENSOR_RANK}")
    choices = {"swizzle": SWIZZLES, "l2": L2_PROMOTIONS}
    values = {}
    for key, allowed in choices.items():
        text = pieces.get(key, "none")
        if text not in allowed:
            raise KernelFileError(path, number, f"tensor_map {buffer}: {key} must be one of "
                                                f"{', '.join(allowed)} (bytes); got {text!r}")
        values[key] = allowed[text]
    return TensorMapSpec(buffer, box, number, values["swizzle"], values["l2"])


def _top_level_parts(text: str) -> list[str]:
    """Split `a, cdiv(b, c), d` at the commas outside parentheses (a box may have up to
    five extents, more than a launch's three)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


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
