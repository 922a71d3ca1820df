"""Element types: how NumPy, the kernels and the user spell each, its poison, its roundoff.

An op computes in up to three types: the inputs' (`DTYPE` in a kernel), the accumulator's
(`ACC_TYPE`) and the output's (`OUT_TYPE`). `TypeSet` names the three; ops declare one per
input type they accept (for example float16 inputs with float32 accumulation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cudabench.common.cores import in_parallel

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
        """Return the size of one element in bytes: from the name (float32: 4) where it
        says, so that planning in the command's process never imports NumPy."""
        bits = self.name.lstrip("abcdefghijklmnopqrstuvwxyz")
        return int(bits) // 8 if bits.isdigit() else int(np.dtype(self.numpy).itemsize)

    @property
    def is_float(self) -> bool:
        """Return whether the type is floating point."""
        return self.name.startswith("float") or np.dtype(self.numpy).kind == "f"

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


CHUNK = 1 << 20  # elements per independent stream of a large draw


def _in_chunks(rng: np.random.Generator, count: int) -> bool:
    """Whether a draw of count values is made in chunks: more than two, from a NumPy
    generator (another object that draws, as tests plant, is asked as it is)."""
    return count > 2 * CHUNK and isinstance(rng, np.random.Generator)


def _fill_in_chunks(rng: np.random.Generator, count: int, dtype: type[np.generic],
                    fill: Callable[[np.random.Generator, np.ndarray], None]) -> np.ndarray:
    """Return `count` values of dtype, made by fill(generator, part) chunk by chunk on the
    CPU's cores (common/cores.py). Chunk i has its own generator, seeded from one draw of
    rng and i, so the values depend on the seed alone, not on how many cores there are."""
    base = int(rng.integers(2**63))
    values = np.empty(count, dtype)

    def one(index: int) -> None:
        fill(np.random.default_rng([base, index]),
             values[index * CHUNK:(index + 1) * CHUNK])

    in_parallel(one, -(-count // CHUNK))
    return values


def random_floats(rng: np.random.Generator, shape: tuple[int, ...], low: float,
                  high: float, dtype: DType) -> np.ndarray:
    """Return values of a float type drawn uniformly from [low, high] (high only by
    rounding), drawn in float32 where the type is no wider: four times faster than
    drawing float64 and converting, which at 1<<26 elements is seconds a run. More than
    two chunks are drawn on several cores (_fill_in_chunks)."""
    if not np.issubdtype(dtype.numpy, np.floating):  # a cast would truncate them silently
        raise ValueError(f"random_floats draws float types, not {dtype.name}: random_ints "
                         "draws int32, random_values either")
    draw_type = np.float64 if np.dtype(dtype.numpy).itemsize > 4 else np.float32
    scale, offset = draw_type(high - low), draw_type(low)

    def fill(generator: np.random.Generator, part: np.ndarray) -> None:
        generator.random(out=part, dtype=draw_type)
        part *= scale
        part += offset

    count = math.prod(shape)
    if _in_chunks(rng, count):
        values = _fill_in_chunks(rng, count, draw_type, fill).reshape(shape)
    else:
        values = rng.random(size=shape, dtype=draw_type)
        values *= scale
        values += offset
    return values.astype(dtype.numpy, copy=False)


def random_ints(rng: np.random.Generator, shape: tuple[int, ...], low: int,
                high: int, dtype: DType | None = None) -> np.ndarray:
    """Return int32 values drawn uniformly from [low, high] (high inclusive); more than two
    chunks on several cores. dtype, where given (as random_floats takes it), is int32."""
    if dtype is not None and dtype.name != "int32":
        raise ValueError(f"random_ints draws int32, not {dtype.name}: random_floats draws "
                         "floats, random_values either")
    def fill(generator: np.random.Generator, part: np.ndarray) -> None:
        part[...] = generator.integers(low, high, size=part.shape, endpoint=True,
                                       dtype=np.int32)

    count = math.prod(shape)
    if _in_chunks(rng, count):
        return _fill_in_chunks(rng, count, np.int32, fill).reshape(shape)
    return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int32)


def random_values(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float,
                  dtype: DType) -> np.ndarray:
    """Return values of dtype drawn uniformly from [low, high]: random_floats for a float
    type, random_ints (the bounds rounded inwards) for int32: one call for every type an
    op declares."""
    if np.issubdtype(dtype.numpy, np.integer):
        whole = (math.ceil(low), math.floor(high))
        if whole[0] > whole[1]:  # (0.1, 0.9) raised NumPy's bare "low > high"
            raise ValueError(f"random_values draws int32 between whole numbers: [{low}, "
                             f"{high}] holds none; widen the bounds")
        return random_ints(rng, shape, *whole, dtype)
    return random_floats(rng, shape, low, high, dtype)
