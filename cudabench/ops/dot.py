"""Dot product out = sum(a[i] * b[i]) of two vectors of length N."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.cores import in_parallel
from cudabench.errors import UsageError
from cudabench.ops import cublas
from cudabench.ops.base import LaunchShape, Op, Shape, typed
from cudabench.ops.checks import bounded_check, exact_check
from cudabench.ops.types import INT32_MAX, U32, TypeSet, random_floats, random_ints
from cudabench.ops.vendor import VendorCall
from cudabench.results.model import Verification

# Probabilistic rounding-error bounds hold with probability about 1 - 2 exp(-LAMBDA^2 / 2).
LAMBDA = 8.0


def int_bound(n: int) -> int:
    """Return the largest |value| for int32 inputs whose exact N-term sum fits in int32."""
    return min(8, math.isqrt(INT32_MAX // n))


def addition_chain(n: int, launch: LaunchShape | None) -> int:
    """Return the longest chain of float additions one product can pass through.

    A blocked reduction with this geometry adds N/threads products per thread, then
    log2(block) tree levels, then at most one addition per block to finish; with no
    geometry, any order (a chain of N).
    """
    if launch is None:
        return n
    threads = launch.blocks * launch.threads_per_block
    return -(-n // threads) + math.ceil(math.log2(launch.threads_per_block)) + launch.blocks


def reduction_launch(launches: Sequence[LaunchShape]) -> LaunchShape | None:
    """Return the launch that spreads the products over the most threads: the reduction's
    own, not a one-thread launch zeroing the result first (atomic.cu's dot_zero), whose
    geometry would make the bound that of one thread adding all N, loose enough to pass a
    dropped block."""
    return max(launches, key=lambda launch: launch.blocks * launch.threads_per_block,
               default=None)


def float_tolerance(n: int, abs_sum: float, launch: LaunchShape | None = None,
                    u: float = U32) -> float:
    """Return the tolerance of an N-term dot with sum |a_i b_i| = abs_sum, accumulated with
    unit roundoff u (float32 by default).

    LAMBDA sqrt(k) u sum|a_i b_i|, with k the longest addition chain of the kernel's launch
    geometry: the probabilistic bound of a k-deep sum (Higham and Mary), so a correct
    blocked order never fails. The inputs make every product the same sign, so one dropped
    block removes about sum|a_i b_i| / blocks: 2.7 times this bound or more at any grid
    the built-in variants allow, 59 times at the default one (N = 1<<24).
    """
    return LAMBDA * math.sqrt(addition_chain(n, launch)) * u * abs_sum


@dataclass(frozen=True)
class DotExpected:
    """A float dot product's reference and the scale of its error bound."""

    value: np.ndarray  # the float64 sum, shape (1,)
    abs_sum: float  # sum |a b|


SUM_CHUNK = 1 << 20  # elements per partial sum of the reference


def wide_sums(a: np.ndarray, b: np.ndarray, with_abs: bool) -> tuple[np.ndarray, float]:
    """Return (the sum of a b in float64, or int64 for ints, as a 1-element array; and,
    if asked, the sum of |a b| in float64), each made of partial sums of fixed chunks on
    the CPU's cores, added in order: a whole 1<<26 vector widened at once is a GB of
    temporaries and seconds of one core. int64 sums are exact in any order; the float64
    one differs from a single pass by float64 roundings only, far below any kernel's bound."""
    wide = np.int64 if a.dtype.kind == "i" else np.float64

    def part(index: int) -> tuple[Any, float]:
        chunk = slice(index * SUM_CHUNK, (index + 1) * SUM_CHUNK)
        left, right = a[chunk].astype(wide), b[chunk].astype(wide)
        value = np.dot(left, right)
        if not with_abs:
            return value, 0.0
        np.abs(left, out=left)
        np.abs(right, out=right)
        return value, float(left @ right)

    parts = in_parallel(part, max(1, -(-a.size // SUM_CHUNK)))
    total = parts[0][0]
    for value, _ in parts[1:]:
        total = total + value
    return np.array([total], dtype=wide), float(sum(scale for _, scale in parts))


class Dot(Op):
    """A dot product: float16 (float32 accumulation and result), float32, float64, int32."""

    name = "dot"
    summary = "out = sum(a * b) over two vectors of length N"
    dims = ("N",)
    size_forms = {1: "1<<24"}
    default_size = "1<<24"
    # A float16 sum of 2^24 same-sign products would overflow 65504: float16 inputs
    # accumulate into, and return, float32.
    types = {
        "float16": ("float16", "float32", "float32"),
        "float32": ("float32", "float32", "float32"),
        "float64": ("float64", "float64", "float64"),
        "int32": ("int32", "int32", "int32"),
    }
    signature = ("(const DTYPE* a, const DTYPE* b, OUT_TYPE* out, OUT_TYPE* partials, int N, "
                 "int num_partials)")
    result_buffer = "out"
    shortcuts = {"block": "BLOCK", "blocks_per_sm": "BLOCKS_PER_SM"}
    references = ("memcpy_dtod",)
    vendor_library = "cuBLAS"

    def vendor(self, types: TypeSet) -> VendorCall | str:
        if types.input != types.output:
            return f"no vendor routine: cuBLAS has no {types.input.name} dot through CuPy"
        return cublas.dot(types.input.name)

    def check_shape(self, shape: Shape, types: TypeSet) -> None:
        (n,) = shape
        if n > INT32_MAX:
            raise UsageError(f"--size {n}: vectors longer than 2^31-1 are not supported")
        if types.input.name == "int32" and int_bound(n) < 2:
            # Inputs would be all 1 and -1: too uniform to reveal a wrong index.
            raise UsageError(f"--size {n}: too long for an exact int32 dot of varied inputs "
                             f"(at most {INT32_MAX // 4}); use --dtype float32")

    def inputs(self, shape: Shape, types: TypeSet, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        (n,) = shape
        # a > 0 and b < 0: every product has the same sign, so nothing cancels and a
        # dropped block moves the sum by its full share.
        if types.input.is_float:
            return {
                "a": random_floats(rng, (n,), 0.5, 1.5, types.input),
                "b": random_floats(rng, (n,), -1.5, -0.5, types.input),
            }
        bound = int_bound(n)
        return {"a": random_ints(rng, (n,), 1, bound), "b": random_ints(rng, (n,), -bound, -1)}

    def outputs(self, shape: Shape, types: TypeSet, blocks: int) -> dict[str, Shape]:
        return {"out": (1,), "partials": (max(blocks, 1),)}

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        return ["a", "b", "out", "partials", shape[0], blocks]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return wide_sums(inputs["a"], inputs["b"], False)[0]

    def expected(self, inputs: dict[str, np.ndarray], types: TypeSet,
                 rng: np.random.Generator, full: bool = False) -> Any:
        """Return the float64 (int64) sum and, for float types, sum |a b|: the bound's
        scale, computed once per benchmark rather than at each of its verifications (at
        1<<26 elements each took a second)."""
        if not types.accumulate.is_float:
            return self.reference(inputs)
        reference, abs_sum = wide_sums(inputs["a"], inputs["b"], True)
        return DotExpected(reference, abs_sum)

    def verify(self, inputs: dict[str, np.ndarray], expected: Any, result: np.ndarray,
               launches: Sequence[LaunchShape], types: TypeSet) -> Verification:
        if not types.accumulate.is_float:
            return exact_check(result, expected)
        if not isinstance(expected, DotExpected):  # the plain reference: make the scale
            expected = self.expected(inputs, types, np.random.default_rng(0))
        size = inputs["a"].size
        abs_sum = expected.abs_sum
        launch = reduction_launch(launches)
        u = types.accumulate.unit_roundoff  # float16 products are exact in float32
        tol = float_tolerance(size, abs_sum, launch, u)
        k = addition_chain(size, launch)
        criterion = f"|out-ref| <= {LAMBDA:g} sqrt({k}) u sum|a b|"
        if types.accumulate.name == "float64":  # the reference rounds as much as the kernel
            tol += float_tolerance(size, abs_sum, None, u)
            criterion += f" + {LAMBDA:g} sqrt({size}) u sum|a b| (the reference's)"
        return bounded_check(result, expected.value, tol, criterion)

    def flops(self, shape: Shape) -> int:
        return 2 * shape[0]

    def bytes_moved(self, shape: Shape, types: TypeSet) -> int:
        return 2 * shape[0] * types.input.itemsize + types.output.itemsize

    def large_shapes(self) -> tuple[Shape, ...]:
        return (1000,), ((1 << 20) + 3,)

    def emulate(self, args: Sequence[Any], types: TypeSet) -> np.ndarray:
        a, b, out, _partials, n, _num_partials = args
        result = typed(out, types.output, (1,))
        inputs = {"a": typed(a, types.input, (n,)), "b": typed(b, types.input, (n,))}
        result[...] = self.reference(inputs).astype(types.output.numpy)
        return result


OP = Dot()
