"""Element types: how NumPy, the kernels and the user spell each, its poison, its roundoff.

An op computes in up to three types: the inputs' (`DTYPE` in a kernel), the accumulator's
(`ACC_TYPE`) and the output's (`OUT_TYPE`). `TypeSet` names the three; ops declare one per
input type they accept (for example float16 inputs with float32 accumulation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class DType:
    """An element type as NumPy, the kernels (-DDTYPE=...) and the user spell it."""

    name: str  # also NumPy's name for it: its type is looked up on first use
    ctype: str
    headers: tuple[str, ...] = ()  # CUDA headers a kernel of this type needs

    @property
    def numpy(self) -> type[np.generic]:
        """Return the NumPy scalar type."""
        kind: type[np.generic] = getattr(np, self.name)
        return kind

    @property
    def itemsize(self) -> int:
        """Return the size of one element in bytes."""
        return np.dtype(self.numpy).itemsize

    @property
    def is_float(self) -> bool:
        """Return whether the type is floating point."""
        return np.dtype(self.numpy).kind == "f"

    @property
    def unit_roundoff(self) -> float:
        """Return u, the bound |fl(x) - x| <= u |x| of one rounding (0 for integers)."""
        return float(np.finfo(np.dtype(self.numpy)).eps) / 2 if self.is_float else 0.0

    @property
    def underflow(self) -> float:
        """Return eta, the bound on one rounding's absolute error below the normal range
        (half the smallest subnormal; 0 for integers): |fl(x) - x| <= u |x| + eta."""
        if not self.is_float:
            return 0.0
        return float(np.finfo(np.dtype(self.numpy)).smallest_subnormal) / 2

    def poison(self) -> np.generic:
        """Return the value unwritten outputs keep: NaN, or INT32_MIN (inputs never hold it)."""
        kind = np.dtype(self.numpy)
        value = np.nan if self.is_float else np.iinfo(kind).min
        poison: np.generic = np.array(value).astype(kind).reshape(1)[0]
        return poison


DTYPES = {
    "float16": DType("float16", "__half", ("cuda_fp16.h",)),
    "float32": DType("float32", "float"),
    "float64": DType("float64", "double"),
    "int32": DType("int32", "int"),
}
U32 = 2.0**-24  # float32 unit roundoff (DTYPES["float32"].unit_roundoff, without NumPy)


@dataclass(frozen=True)
class TypeSet:
    """The types of one computation: inputs, accumulator and outputs."""

    input: DType
    accumulate: DType
    output: DType

    @classmethod
    def of(cls, input: str, accumulate: str | None = None, output: str | None = None
           ) -> TypeSet:
        """Return the set from type names (accumulate and output default to input)."""
        return cls(DTYPES[input], DTYPES[accumulate or input], DTYPES[output or input])

    @property
    def headers(self) -> tuple[str, ...]:
        """Return the CUDA headers the three types need, each once."""
        return tuple(dict.fromkeys(h for t in (self.input, self.accumulate, self.output)
                                   for h in t.headers))

    def describe(self) -> str:
        """Say the types as a user reads them: float16 (float32 accumulation)."""
        extra = [f"{self.accumulate.name} accumulation"] if self.accumulate != self.input else []
        extra += [f"{self.output.name} output"] if self.output != self.input else []
        return f"{self.input.name} ({', '.join(extra)})" if extra else self.input.name


def random_floats(rng: np.random.Generator, shape: tuple[int, ...], low: float,
                  high: float, dtype: DType) -> np.ndarray:
    """Return values of a float type drawn uniformly from [low, high] (high only by
    rounding), drawn in float32 where the type is no wider: four times faster than
    drawing float64 and converting, which at 1<<26 elements is seconds a run."""
    draw_type = np.float64 if np.dtype(dtype.numpy).itemsize > 4 else np.float32
    values = rng.random(size=shape, dtype=draw_type)
    values *= draw_type(high - low)
    values += draw_type(low)
    return values.astype(dtype.numpy, copy=False)


def random_ints(rng: np.random.Generator, shape: tuple[int, ...], low: int,
                high: int) -> np.ndarray:
    """Return int32 values drawn uniformly from [low, high] (high inclusive)."""
    return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int32)
