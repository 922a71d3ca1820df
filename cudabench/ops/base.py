"""What every op shares: dtypes, size parsing, poison values and verification checks."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudabench.errors import UsageError
from cudabench.results.model import Verification

# Unit roundoff of float32: the bound |fl(x) - x| <= U32 * |x| of one rounding.
U32 = 2.0**-24
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class DType:
    """An element type as NumPy, the kernels (-DDTYPE=...) and the user spell it."""

    name: str
    numpy: type[np.generic]
    ctype: str

    @property
    def itemsize(self) -> int:
        """Return the size of one element in bytes."""
        return np.dtype(self.numpy).itemsize

    def poison(self) -> np.generic:
        """Return the value unwritten outputs keep: NaN, or INT32_MIN (inputs never hold it)."""
        return POISON[self.name]


POISON: dict[str, np.generic] = {
    "float32": np.float32(np.nan),
    "int32": np.int32(np.iinfo(np.int32).min),
}


DTYPES = {
    "float32": DType("float32", np.float32, "float"),
    "int32": DType("int32", np.int32, "int"),
}

_NUMBER = re.compile(r"^\s*(\d+)\s*(?:<<\s*(\d+))?\s*$")


def parse_extent(text: str, flag: str = "--size") -> int:
    """Parse one positive extent, `1000` or `1<<24`, that fits the kernels' int arguments."""
    match = _NUMBER.match(text)
    shift = int(match[2] or 0) if match else 0
    value = int(match[1]) << shift if match and shift <= 62 else 0  # no 1<<10**9 integers
    if value <= 0:
        raise UsageError(
            f"{flag} {text!r}: sizes are positive integers such as 1000 or 1<<24"
        )
    if value > INT32_MAX:
        raise UsageError(f"{flag} {text!r}: each extent must be at most 2^31-1 "
                         "(kernels take int arguments)")
    return value


def parse_dims(text: str, counts: Mapping[int, str], flag: str = "--size") -> tuple[int, ...]:
    """Split `AxBxC` into extents; counts maps an accepted count to an example."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) not in counts:
        examples = " or ".join(f"{flag} {example}" for example in counts.values())
        raise UsageError(f"{flag} {text!r}: expected {examples}")
    return tuple(parse_extent(part, flag) for part in parts)


def random_floats(rng: np.random.Generator, shape: tuple[int, ...], low: float,
                  high: float) -> np.ndarray:
    """Return float32 values drawn uniformly from [low, high)."""
    return rng.uniform(low, high, size=shape).astype(np.float32)


def random_ints(rng: np.random.Generator, shape: tuple[int, ...], low: int,
                high: int) -> np.ndarray:
    """Return int32 values drawn uniformly from [low, high] (high inclusive)."""
    return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int64).astype(np.int32)


def exact_check(result: np.ndarray, expected: np.ndarray, criterion: str = "exact") -> Verification:
    """Verify element for element equality (transposes, integer arithmetic)."""
    result = np.asarray(result)
    expected = np.asarray(expected)
    same = result.astype(np.float64) == expected.astype(np.float64)
    bad = int(same.size - np.count_nonzero(same))
    return Verification(
        passed=bad == 0,
        rel_error=_rel_error(result, expected),
        max_abs_error=_max_abs_error(result, expected),
        bad_elements=bad,
        total_elements=int(same.size),
        criterion=criterion,
    )


def bounded_check(
    result: np.ndarray, expected: np.ndarray, bound: np.ndarray | float, criterion: str
) -> Verification:
    """Verify |result - expected| <= bound element for element; NaN and inf always fail."""
    result = np.asarray(result, dtype=np.float64)
    diff = np.abs(result - np.asarray(expected, dtype=np.float64))
    ok = np.isfinite(result) & (diff <= bound)
    bad = int(ok.size - np.count_nonzero(ok))
    return Verification(
        passed=bad == 0,
        rel_error=_rel_error(result, expected),
        max_abs_error=_max_abs_error(result, expected),
        bad_elements=bad,
        total_elements=int(ok.size),
        criterion=criterion,
    )


def _rel_error(result: np.ndarray, expected: np.ndarray) -> float:
    diff = np.asarray(result, np.float64) - np.asarray(expected, np.float64)
    norm = float(np.linalg.norm(np.asarray(expected, np.float64).ravel()))
    err = float(np.linalg.norm(diff.ravel()))
    if not np.isfinite(err):
        return float("inf")
    return err / norm if norm else err


def _max_abs_error(result: np.ndarray, expected: np.ndarray) -> float:
    diff = np.abs(np.asarray(result, np.float64) - np.asarray(expected, np.float64))
    if diff.size == 0:
        return 0.0
    return float(np.max(diff)) if not np.isnan(diff).any() else float("nan")


Shape = tuple[int, ...]


def typed(buffer: np.ndarray, dtype: DType, shape: Shape) -> np.ndarray:
    """View the start of a byte buffer as an array of dtype and shape (fake engine helper)."""
    count = math.prod(shape)
    return buffer.view(dtype.numpy)[:count].reshape(shape)


@dataclass(frozen=True)
class LaunchShape:
    """The grid and block of one launch, for checks that depend on how a kernel splits work."""

    grid: tuple[int, ...]
    block: tuple[int, ...]

    @property
    def blocks(self) -> int:
        """Return the number of blocks."""
        return math.prod(self.grid)

    @property
    def threads_per_block(self) -> int:
        """Return the number of threads in a block."""
        return math.prod(self.block)


class Op:
    """A kernel family: its shape, inputs, kernel arguments, reference and accounting.

    Every kernel of an op takes the arguments listed by `args`, in that order; buffers
    are named, scalars are passed as int32.
    """

    name: str = ""
    summary: str = ""
    dims: tuple[str, ...] = ()  # names of the shape's extents, usable in header arithmetic
    size_forms: Mapping[int, str] = {}  # accepted --size forms: number of extents -> example
    default_size: str = ""
    dtypes: tuple[str, ...] = ("float32", "int32")
    signature: str = ""  # the C signature every kernel of the op has
    result_buffer: str = ""  # the buffer downloaded and verified after the checked launch
    # Reference rows measured beside the variants (cudabench.measure.references names them).
    references: tuple[str, ...] = ()

    def parse_size(self, text: str) -> tuple[int, ...]:
        """Return the shape for a --size value (one extent means a square/cube)."""
        dims = parse_dims(text, self.size_forms)
        return dims * len(self.dims) if len(dims) == 1 else dims

    def check_shape(self, shape: Shape, dtype: DType) -> None:
        """Raise UsageError if the shape cannot be run exactly (for example int32 overflow)."""

    def variables(self, shape: Shape) -> dict[str, int]:
        """Return the shape as header-arithmetic variables."""
        return dict(zip(self.dims, shape))

    def inputs(self, shape: Shape, dtype: DType, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        """Return random host inputs by buffer name (never zeros or ones)."""
        raise NotImplementedError

    def outputs(self, shape: Shape, dtype: DType, blocks: int) -> dict[str, tuple[int, ...]]:
        """Return output and scratch buffers (poisoned before the checked launch) by name."""
        raise NotImplementedError

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        """Return kernel arguments: buffer names and int32 scalars, in signature order."""
        raise NotImplementedError

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Return the expected result, computed on the CPU in float64 (int64 for ints)."""
        raise NotImplementedError

    def verify(
        self, inputs: dict[str, np.ndarray], expected: np.ndarray, result: np.ndarray,
        launches: Sequence[LaunchShape] = (),
    ) -> Verification:
        """Compare a kernel's result with the reference (launches: the kernel's geometry)."""
        raise NotImplementedError

    def flops(self, shape: Shape) -> int:
        """Return the arithmetic operations of one run (0 for data movement)."""
        return 0

    def bytes_moved(self, shape: Shape, itemsize: int) -> int:
        """Return the fewest bytes one run must move: inputs read once, outputs written once."""
        raise NotImplementedError

    def emulate(self, args: Sequence[Any], dtype: DType) -> np.ndarray:
        """Do on the host what a correct kernel does to its arguments (for the fake engine).

        args are the kernel's arguments in `args` order, buffers as 1-D byte arrays; return
        a view of the result buffer as written, so that a fake can spoil one element.
        """
        raise NotImplementedError

    def edge_shapes(self) -> tuple[Shape, ...]:
        """Return shapes that catch edge bugs: all ones, odd primes, a tile plus one."""
        count = len(self.dims)
        primes = (17, 33, 5)
        return ((1,) * count, tuple(primes[i % 3] for i in range(count)), (33,) * count)

    def large_shapes(self) -> tuple[Shape, ...]:
        """Return shapes that fill a GPU with blocks, for tests on one (not on a CPU)."""
        return ((1024,) * len(self.dims), (1000,) * len(self.dims))
