"""Matrix multiplication C = A @ B, with A of M x K and B of K x N, row-major."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cudabench.errors import UsageError
from cudabench.ops.base import (
    INT32_MAX,
    U32,
    DType,
    LaunchShape,
    Op,
    Shape,
    bounded_check,
    exact_check,
    random_floats,
    random_ints,
    typed,
)
from cudabench.results.model import Verification


def int_bound(k: int) -> int:
    """Return the largest |value| for int32 inputs whose exact K-term products fit in int32."""
    return min(100, math.isqrt(INT32_MAX // k))


class Matmul(Op):
    """C = A @ B in float32 or exact int32."""

    name = "matmul"
    summary = "C = A @ B (A: MxK, B: KxN), row-major"
    dims = ("M", "K", "N")
    size_forms = {1: "1000", 3: "512x256x128 (MxKxN)"}
    default_size = "1000"
    signature = "(const DTYPE* A, const DTYPE* B, DTYPE* C, int M, int K, int N)"
    result_buffer = "C"

    def check_shape(self, shape: Shape, dtype: DType) -> None:
        m, k, n = shape
        if dtype.name == "int32" and int_bound(k) < 1:
            raise UsageError(f"--size: K={k} is too long for an exact int32 product")

    def inputs(self, shape: Shape, dtype: DType, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        m, k, n = shape
        if dtype.name == "float32":
            return {
                "A": random_floats(rng, (m, k), -1.0, 1.0),
                "B": random_floats(rng, (k, n), -1.0, 1.0),
            }
        bound = int_bound(k)
        return {
            "A": random_ints(rng, (m, k), -bound, bound),
            "B": random_ints(rng, (k, n), -bound, bound),
        }

    def outputs(self, shape: Shape, dtype: DType, blocks: int) -> dict[str, Shape]:
        m, k, n = shape
        return {"C": (m, n)}

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        return ["A", "B", "C", *shape]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        a, b = inputs["A"], inputs["B"]
        if a.dtype.kind == "i":
            return a.astype(np.int64) @ b.astype(np.int64)
        return a.astype(np.float64) @ b.astype(np.float64)

    def verify(self, inputs: dict[str, np.ndarray], expected: np.ndarray, result: np.ndarray,
               launches: Sequence[LaunchShape] = ()) -> Verification:
        if result.dtype.kind == "i":
            return exact_check(result, expected)
        # Rounding-error bound of any K-term dot product in float32, whatever the order:
        # |fl(a.b) - a.b| <= gamma_K |a|.|b|, gamma_K = K u / (1 - K u). A dropped or
        # wrong term, an unwritten element (NaN poison) or a wrong index exceeds it.
        k = inputs["A"].shape[1]
        gamma = k * U32 / (1 - k * U32) if k * U32 < 0.5 else 1.0
        magnitude = np.abs(inputs["A"].astype(np.float64)) @ np.abs(inputs["B"].astype(np.float64))
        return bounded_check(result, expected, gamma * magnitude, "|C-ref| <= gamma_K |A||B|")

    def flops(self, shape: Shape) -> int:
        m, k, n = shape
        return 2 * m * n * k

    def bytes_moved(self, shape: Shape, itemsize: int) -> int:
        m, k, n = shape
        return (m * k + k * n + m * n) * itemsize

    def large_shapes(self) -> tuple[Shape, ...]:
        return (1000, 1000, 1000), (1024, 1024, 1024), (5, 1000, 3)

    def emulate(self, args: Sequence[Any], dtype: DType) -> np.ndarray:
        a, b, c, m, k, n = args
        result = typed(c, dtype, (m, n))
        inputs = {"A": typed(a, dtype, (m, k)), "B": typed(b, dtype, (k, n))}
        result[...] = self.reference(inputs).astype(dtype.numpy)
        return result
