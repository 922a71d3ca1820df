"""Verification checks: exact equality (in float64, or bit for bit in the result's own type),
and a bound element for element."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.cores import in_parallel
from cudabench.results.model import Verification


def same_shape(result: np.ndarray, expected: np.ndarray) -> None:
    """Refuse an expected array of another shape than the result (a single value aside):
    compared element for element it would broadcast, and a wrong reference pass. Which
    side is wrong is not known here: the message names the method behind each shape."""
    if expected.ndim and expected.shape != result.shape:
        raise ValueError(f"the expected array has shape {expected.shape} (the op's reference) "
                         f"and the result {result.shape} (the result buffer, as the op's "
                         "outputs sizes it): fix whichever of reference and outputs is wrong")


def exact_check(result: np.ndarray, expected: np.ndarray, criterion: str = "exact") -> Verification:
    """Verify element for element equality (transposes, integer arithmetic)."""
    result = np.asarray(result)
    expected = np.asarray(expected)
    same_shape(result, expected)
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


def same_bits_pass(total: int, criterion: str = "exact") -> Verification:
    """Return what same_bits_check says of a result of `total` elements that holds every
    expected element (also when the elements were compared on the GPU)."""
    return Verification(True, 0.0, 0.0, 0, total, criterion)


def same_bits_check(result: np.ndarray, expected: np.ndarray, criterion: str = "exact"
                    ) -> Verification:
    """Verify that a result holds the expected elements in its own type (data movement).

    Compares bit patterns as unsigned integers of the element's width: no float64 copy of
    either array. +0 and -0 count as equal (as they compare), NaN poison never equals a
    value; the error figures are computed only over a failing result.
    """
    result = np.asarray(result)
    expected = np.asarray(expected)
    if result.dtype != expected.dtype or result.shape != expected.shape:
        return exact_check(result, expected, criterion)
    bad = bits_differ(result, expected)
    if bad and result.dtype.kind == "f":  # signed zeros: other bits, the same value
        bits = np.dtype(f"u{result.dtype.itemsize}")
        differ = result.view(bits) != expected.view(bits)
        bad -= int(np.count_nonzero(result[differ] == expected[differ]))
    if not bad:
        return same_bits_pass(int(result.size), criterion)
    return Verification(
        passed=False,
        rel_error=_rel_error(result, expected),
        max_abs_error=_max_abs_error(result, expected),
        bad_elements=bad,
        total_elements=int(result.size),
        criterion=criterion,
    )


COMPARE_CHUNK = 1 << 22  # elements per thread's share of a large comparison


def bits_differ(old: np.ndarray, new: np.ndarray) -> int:
    """Return how many elements of two arrays of one type and size differ in their bits
    (NaNs compare too), compared as unsigned integers of the element's width, large
    arrays in chunks on the CPU's cores (common/cores.py)."""
    width = old.dtype.itemsize
    flat_old = np.ascontiguousarray(old).reshape(-1)
    flat_new = np.ascontiguousarray(new).reshape(-1)
    left: np.ndarray
    right: np.ndarray
    if width in (1, 2, 4, 8):
        kind = np.dtype(f"u{width}")
        left, right = flat_old.view(kind), flat_new.view(kind)
    else:  # one row of bytes an element
        left = flat_old.view(np.uint8).reshape(-1, width)
        right = flat_new.view(np.uint8).reshape(-1, width)

    def count(index: int) -> int:
        part = slice(index * COMPARE_CHUNK, (index + 1) * COMPARE_CHUNK)
        differ = left[part] != right[part]
        return int(np.count_nonzero(differ if differ.ndim == 1 else differ.any(axis=1)))

    return sum(in_parallel(count, -(-len(left) // COMPARE_CHUNK)))


def bounded_check(
    result: np.ndarray, expected: np.ndarray, bound: np.ndarray | float, criterion: str
) -> Verification:
    """Verify |result - expected| <= bound element for element; NaN and inf always fail."""
    result = np.asarray(result, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    same_shape(result, expected)
    diff = np.abs(result - expected)
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
    """Return the largest |result - expected|, inf where one is NaN (as _rel_error says,
    and as a results file reads its null back: a run's CSV said nan, its file's inf)."""
    diff = np.abs(np.asarray(result, np.float64) - np.asarray(expected, np.float64))
    if diff.size == 0:
        return 0.0
    return float(np.max(diff)) if not np.isnan(diff).any() else float("inf")
