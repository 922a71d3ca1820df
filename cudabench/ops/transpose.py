"""Matrix transpose, out-of-place (B = A^T) and in-place on a square matrix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.cores import in_parallel
from cudabench.errors import UsageError
from cudabench.ops import cublas
from cudabench.ops.base import LaunchShape, Op, Shape, typed
from cudabench.ops.checks import same_bits_check
from cudabench.ops.sizes import parse_dims
from cudabench.ops.types import TypeSet, random_floats, random_ints
from cudabench.ops.vendor import VendorCall
from cudabench.results.model import Verification

# Data movement: every type, exact.
TYPES = {name: (name, name, name) for name in ("float16", "float32", "float64", "int32")}


BAND, TILE = 256, 64  # A^T made in bands of 256 rows, each in 256 x 64 tiles


def transposed(a: np.ndarray) -> np.ndarray:
    """Return a contiguous A^T. NumPy's own copy of a.T reads A down its columns, a cache
    miss an element (1.7 s at 8192², one core); tiles that stay in cache take 0.13 s, and
    the bands of rows go to the CPU's cores."""
    rows, cols = a.shape
    if min(rows, cols) < TILE:  # a thin matrix: NumPy's copy is quick, tiles are not
        return np.ascontiguousarray(a.T)
    out = np.empty((cols, rows), a.dtype)

    def band(index: int) -> None:
        first = index * BAND
        for row in range(0, rows, TILE):
            out[first:first + BAND, row:row + TILE] = a[row:row + TILE, first:first + BAND].T

    in_parallel(band, -(-cols // BAND))
    return out


def _transpose_inputs(shape: Shape, types: TypeSet, rng: np.random.Generator) -> np.ndarray:
    if types.input.is_float:
        return random_floats(rng, shape, -1.0, 1.0, types.input)
    # Full int32 range except INT32_MIN, the poison value.
    return random_ints(rng, shape, -(2**31) + 1, 2**31 - 1)


class Transpose(Op):
    """B = A^T out of place."""

    name = "transpose"
    summary = "B = A^T out of place (A: ROWS x COLS)"
    dims = ("ROWS", "COLS")
    size_forms = {1: "3001", 2: "3000x2000 (ROWSxCOLS)"}
    default_size = "3001"
    signature = "(const DTYPE* A, DTYPE* B, int ROWS, int COLS)"
    result_buffer = "B"
    exact_result = True  # verify: same_bits_check
    types = TYPES
    references = ("memcpy_dtod",)
    shortcuts = {"tile": "TILE"}
    vendor_library = "cuBLAS"

    def vendor(self, types: TypeSet) -> VendorCall | str:
        return cublas.geam(types.input.name)

    def inputs(self, shape: Shape, types: TypeSet, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        return {"A": _transpose_inputs(shape, types, rng)}

    def outputs(self, shape: Shape, types: TypeSet, blocks: int) -> dict[str, Shape]:
        rows, cols = shape
        return {"B": (cols, rows)}

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        return ["A", "B", *shape]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return transposed(inputs["A"])

    def verify(self, inputs: dict[str, np.ndarray], expected: np.ndarray, result: np.ndarray,
               launches: Sequence[LaunchShape], types: TypeSet) -> Verification:
        return same_bits_check(result, expected)

    def bytes_moved(self, shape: Shape, types: TypeSet) -> int:
        rows, cols = shape
        return 2 * rows * cols * types.input.itemsize

    def large_shapes(self) -> tuple[Shape, ...]:
        return (3001, 3001), (1024, 1024), (1, 7), (7, 1)

    def emulate(self, args: Sequence[Any], types: TypeSet) -> np.ndarray:
        a, b, rows, cols = args
        result = typed(b, types.output, (cols, rows))
        result[...] = typed(a, types.input, (rows, cols)).T
        return result


class TransposeInplace(Op):
    """A = A^T in place, square."""

    command = "transpose"
    command_flag = "inplace"

    name = "transpose_inplace"
    summary = "A = A^T in place (square A: N x N)"
    dims = ("N",)
    size_forms = {1: "3001", 2: "3001x3001 (square)"}
    default_size = "3001"
    signature = "(DTYPE* A, int N)"
    result_buffer = "A"
    exact_result = True  # verify: same_bits_check
    types = TYPES
    references = ("memcpy_dtod",)
    shortcuts = {"tile": "TILE"}
    vendor_library = "cuBLAS"

    def vendor(self, types: TypeSet) -> VendorCall | str:
        return "no vendor routine: cuBLAS has no in-place transpose"

    def parse_size(self, text: str) -> Shape:
        dims = parse_dims(text, self.size_forms)
        if len(set(dims)) != 1:
            raise UsageError(
                f"--size {text!r}: --inplace transposes a square matrix; "
                "give one size (e.g. --size 3001) or drop --inplace"
            )
        return dims[:1]

    def inputs(self, shape: Shape, types: TypeSet, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        (n,) = shape
        return {"A": _transpose_inputs((n, n), types, rng)}

    def outputs(self, shape: Shape, types: TypeSet, blocks: int) -> dict[str, Shape]:
        return {}

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        return ["A", *shape]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return transposed(inputs["A"])

    def verify(self, inputs: dict[str, np.ndarray], expected: np.ndarray, result: np.ndarray,
               launches: Sequence[LaunchShape], types: TypeSet) -> Verification:
        return same_bits_check(result, expected)

    def bytes_moved(self, shape: Shape, types: TypeSet) -> int:
        (n,) = shape
        return 2 * n * n * types.input.itemsize

    def large_shapes(self) -> tuple[Shape, ...]:
        return (1024,), (3001,)

    def emulate(self, args: Sequence[Any], types: TypeSet) -> np.ndarray:
        a, n = args
        result = typed(a, types.input, (n, n))
        result[...] = result.T.copy()
        return result


OPS = [Transpose(), TransposeInplace()]
