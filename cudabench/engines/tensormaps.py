"""TMA tensor maps that a variant's header asks for (`tensor_map A: box 64, 64; swizzle 128`).

A tensor map (`CUtensorMap`, 128 opaque bytes) describes one of the op's buffers to the
Hopper TMA unit: its element type, extents and strides, the box one copy moves, the shared
memory swizzle and the L2 promotion. The engine builds one per `tensor_map` line over the
buffer the kernel gets among the op's arguments, and passes it by value after them, in
header order, to a kernel that declares `const __grid_constant__ CUtensorMap NAME`.

The driver's rules (cuTensorMapEncodeTiled) are checked here first, so that a shape a map
cannot describe (rows not a multiple of 16 bytes apart, say) is a SKIP row that says why:
the box at plan time (box_problem), the buffer's extents and strides when the variant runs
(resolve). This module imports no GPU library: the PyCUDA engine encodes the map through
CUDA Python's driver bindings (cuda_driver.py), the fake engine checks and records it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudabench.catalog import KernelVariant
from cudabench.catalog.variants import MAX_TENSOR_RANK
from cudabench.errors import CompileError, CudabenchError
from cudabench.ops import TypeSet

TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
MAX_BOX = 256  # elements along one dimension of a box
GLOBAL_ALIGN = 16  # bytes: the buffer's address and every stride
MAX_EXTENT = 2**32  # elements along one dimension of the tensor
MAX_STRIDE = 2**40  # bytes
# CUtensorMapDataType by cudabench's type names (CU_TENSOR_MAP_DATA_TYPE_<name>).
DATA_TYPES = {"float16": "FLOAT16", "float32": "FLOAT32", "float64": "FLOAT64", "int32": "INT32"}
# A kernel argument's letter in an engine signature, its size in bytes and what it is.
ARGUMENT_KINDS = {"P": (8, "a buffer's address"), "i": (4, "an int"),
                  "T": (TENSOR_MAP_BYTES, "a CUtensorMap")}


class TensorMapUnavailable(CudabenchError):
    """A tensor map cannot be made here: the shape breaks the driver's rules, the driver
    refused it, or CUDA Python's bindings are missing or too old. The variant's row is SKIP.
    The last is this host's software, not the source or the GPU: its message names "CUDA
    Python's driver bindings" or "CUDA Python bindings", by which the tuning cache knows
    not to keep it (tuning/cache.py)."""


@dataclass(frozen=True)
class TensorMapRequest:
    """One tensor map, resolved for a plan: over which argument, of what, with which box."""

    buffer: str  # the op's buffer it describes
    arg_index: int  # where that buffer is among the op's kernel arguments
    dtype: str  # the buffer's element type: float16, float32, float64 or int32
    itemsize: int
    shape: tuple[int, ...]  # the buffer's extents, outermost first (NumPy's order)
    box: tuple[int, ...]  # elements one copy moves along each extent, outermost first
    swizzle: int = 0  # bytes of the shared-memory swizzle span; 0: none
    l2: int = 0  # bytes of the L2 promotion; 0: none
    where: str = ""  # "file:line" of its header line, for messages

    @property
    def strides(self) -> tuple[int, ...]:
        """Return each extent's stride in bytes, outermost first (a row-major buffer)."""
        return tuple(math.prod(self.shape[index + 1:]) * self.itemsize
                     for index in range(len(self.shape)))

    @property
    def nbytes(self) -> int:
        """Return the bytes of the buffer the map covers."""
        return math.prod(self.shape) * self.itemsize

    def describe(self) -> str:
        """Return the map as a user reads it: A box 64x64 over 4096x4096 float16, swizzle
        128B."""
        extras = "".join(f", {name} {value}B" for name, value in
                         (("swizzle", self.swizzle), ("l2", self.l2)) if value)
        return (f"{self.buffer} box {'x'.join(map(str, self.box))} over "
                f"{'x'.join(map(str, self.shape))} {self.dtype}{extras}")


def box_problem(box: Sequence[int], itemsize: int, swizzle: int) -> str | None:
    """Return why the driver would refuse this box whatever the shape, or None."""
    if not 1 <= len(box) <= MAX_TENSOR_RANK:
        return f"a box has 1 to {MAX_TENSOR_RANK} extents, not {len(box)}"
    bad = [extent for extent in box if not 1 <= extent <= MAX_BOX]
    if bad:
        return f"box extent {bad[0]} is outside 1..{MAX_BOX}"
    inner = box[-1] * itemsize
    if inner % GLOBAL_ALIGN:
        return (f"the box's innermost extent is {box[-1]} x {itemsize} = {inner} bytes, not a "
                f"multiple of {GLOBAL_ALIGN}")
    if swizzle and inner > swizzle:
        return (f"the box's innermost extent is {box[-1]} x {itemsize} = {inner} bytes, more "
                f"than the {swizzle}-byte swizzle span")
    return None


def shape_problem(request: TensorMapRequest) -> str | None:
    """Return why the driver would refuse a map over this buffer's shape, or None."""
    shape, box = request.shape, request.box
    described = f"{request.buffer} ({'x'.join(map(str, shape))} {request.dtype})"
    if len(box) != len(shape):
        return (f"the box has {len(box)} extent(s) but {described} has {len(shape)}: give "
                "one box extent per dimension of the buffer")
    problem = box_problem(box, request.itemsize, request.swizzle)
    if problem is not None:
        return problem
    if any(not 1 <= extent <= MAX_EXTENT for extent in shape):
        return f"{described} has an extent outside 1..2^32"
    for axis, stride in enumerate(request.strides[:-1]):
        if stride % GLOBAL_ALIGN or stride >= MAX_STRIDE:
            return (f"{described}: consecutive indices of dimension {axis} are {stride} bytes "
                    f"apart; TMA needs a multiple of {GLOBAL_ALIGN} bytes (below 2^40), so this "
                    "variant runs only at sizes where that holds")
    return None


def resolve(variant: KernelVariant, boxes: Sequence[tuple[int, ...]], types: TypeSet,
            arg_spec: Sequence[str | int], shapes: Mapping[str, tuple[int, ...]],
            outputs: Mapping[str, tuple[int, ...]]) -> tuple[TensorMapRequest, ...]:
    """Return the variant's tensor maps over this plan's buffers (shapes: every buffer's
    extents; outputs: those of the output type); TensorMapUnavailable when the driver's rules
    rule one out at this shape."""
    requests = []
    for spec, box in zip(variant.tensor_maps, boxes):
        where = f"{variant.path}:{spec.line}"
        kind = types.output if spec.buffer in outputs else types.input
        if spec.buffer not in arg_spec:
            names = ", ".join(a for a in arg_spec if isinstance(a, str))
            raise CompileError(f"{where}: tensor_map {spec.buffer}: the {variant.op} kernels "
                               f"get no buffer {spec.buffer} (their buffers: {names})")
        if spec.buffer not in shapes:
            raise CompileError(f"{where}: tensor_map {spec.buffer}: the extents of "
                               f"{spec.buffer} are not known here")
        if kind.name not in DATA_TYPES:
            raise TensorMapUnavailable(f"tensor_map {spec.buffer}: TMA has no {kind.name} "
                                       "element type")
        request = TensorMapRequest(spec.buffer, list(arg_spec).index(spec.buffer), kind.name,
                                   kind.itemsize, tuple(shapes[spec.buffer]), tuple(box),
                                   spec.swizzle, spec.l2, where)
        problem = shape_problem(request)
        if problem is not None:
            raise TensorMapUnavailable(f"tensor_map {spec.buffer} ({where}): {problem}")
        requests.append(request)
    return tuple(requests)


def signature_of(arg_spec: Sequence[str | int], tensor_maps: int) -> str:
    """Return an engine signature: P per buffer, i per int, then T per tensor map."""
    return "".join("P" if isinstance(a, str) else "i" for a in arg_spec) + "T" * tensor_maps


def param_format(signature: str, layout: Sequence[tuple[int, int]], where: str) -> str:
    """Return the struct format (native mode, PyCUDA's prepare()) that puts every argument
    of signature at the offset the compiled kernel has it, from layout, the driver's
    (offset, size) of each kernel parameter; CompileError when the kernel's parameters are
    not the ones cudabench passes."""
    maps = signature.count("T")
    if len(layout) != len(signature):
        raise CompileError(
            f"{where}: the kernel takes {len(layout)} parameter(s), but cudabench passes "
            f"{len(signature)}: the op's {len(signature) - maps} argument(s), then "
            f"{maps} tensor map(s) in header order, each declared "
            "`const __grid_constant__ CUtensorMap NAME`")
    codes = {"P": "P", "i": "i", "T": f"{TENSOR_MAP_BYTES}s"}
    fmt, cursor = "", 0
    for index, (kind, (offset, size)) in enumerate(zip(signature, layout)):
        expected, what = ARGUMENT_KINDS[kind]
        if size != expected:
            raise CompileError(
                f"{where}: the kernel's parameter {index + 1} is {size} bytes where cudabench "
                f"passes {what} ({expected} bytes)"
                + ("; declare it `const __grid_constant__ CUtensorMap NAME`" if kind == "T"
                   else ""))
        if offset < cursor:
            raise CompileError(f"{where}: the kernel's parameter {index + 1} lies at byte "
                               f"{offset}, inside the one before it")
        fmt += (f"{offset - cursor}x" if offset > cursor else "") + codes[kind]
        cursor = offset + size
        if struct.calcsize(fmt) != cursor:  # native alignment would have moved it
            raise CompileError(f"{where}: the kernel's parameter {index + 1} at byte {offset} "
                               "is not aligned as its type needs")
    return fmt
