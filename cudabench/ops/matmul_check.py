"""Matmul's checks: the full float64 reference, and a randomized check at a small part of
its cost that never fails what the full check passes and misses a wrong element with a
probability docs/verification.md bounds.

The full check computes C = A @ B and |A| @ |B| in float64: two O(MKN) products per set
of inputs. The randomized check (`make_witness` from the inputs, `verify_witness` against a
result) does O(MN + MK + KN) work plus MK k N/BLOCK multiply-adds:

1. every element of the result is finite (NaN poison, overflow);
2. projections: for VECTORS random vectors x (random signs, magnitudes uniform in [1, 2))
   and every row i and block b of BLOCK consecutive columns, sum_{j in b} C_ij x_j is
   compared with a_i . (B_b x_b) in float64. A block whose difference exceeds what the
   rounding of a correct kernel plausibly explains is *flagged*, not failed;
3. the elements of every flagged block, the borders (first and last row and column) and
   SAMPLE random elements are computed in float64 and judged by the full check's own
   bound, element by element.

A FAIL therefore always names elements the full check fails too, and a wrong element goes
unseen only if its block is not flagged and it is not sampled. int32 results are projected
exactly, modulo 2^64. docs/verification.md derives the probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.ops.checks import bounded_check, exact_check
from cudabench.ops.types import TypeSet
from cudabench.results.model import Verification

BLOCK = 128  # columns per projected block: the per-element noise grows as sqrt(BLOCK)
VECTORS = 8  # random vectors of the float check: a miss needs all of them to miss
INT_VECTORS = 2  # of the int32 check, exact modulo 2^64: each misses with p <= 2^-33
SAMPLE = 2100  # random elements computed exactly: (1 - 1%)^2100 < 1e-9
SCREEN = 4.0  # flag at SCREEN times a correct kernel's plausible rounding noise
# M*K*N up to which the full reference is used (406^3): its two float64 products take
# about 25 ms on one core there, no more than the randomized check's fixed costs (the
# sample, the borders, passes over C and B): below it the full check is as cheap.
FULL_MAX = 2**26
MIN_K = 64  # below this K the projections save little over the full product
PROJECTION_BAND = 2**17  # float64 elements of the result widened at a time (1 MB)
ESCALATE_SHARE = 1 / 64  # flagged blocks computed exactly before the full check instead
ESCALATE_MIN = 64
U64 = 2.0**-53


def gamma(k: int, u: float) -> float:
    """Return gamma_k = k u / (1 - k u): the relative error bound of a k-term sum."""
    return k * u / (1 - k * u) if k * u < 0.5 else 1.0


def randomized(shape: tuple[int, ...]) -> bool:
    """Return whether the randomized check replaces the full reference at this shape."""
    m, k, n = shape
    return m * k * n > FULL_MAX and k >= MIN_K


# -- the full check ----------------------------------------------------------------------


def element_bound(expected: np.ndarray, magnitude: np.ndarray, k: int, types: TypeSet
                  ) -> tuple[np.ndarray, str]:
    """Return the bound on |C - ref| element for element, and its criterion.

    Rounding-error bound of any K-term dot product, whatever the order:
    |fl(a.b) - a.b| <= gamma_K |a|.|b| + K eta in the accumulator's precision (eta: a
    product's underflow; float16 inputs multiply exactly in float32). A float16 output
    adds one rounding of the result, u |C| + eta (eta = 2^-25: a result in float16's
    subnormal range, which products of two inputs near zero reach at K = 1); a float64
    reference carries the same bound as the kernel, so it counts twice. A dropped or wrong
    term, an unwritten element (NaN poison) or a wrong index exceeds it.
    """
    acc = types.accumulate
    accumulated = gamma(k, acc.unit_roundoff) * magnitude + k * acc.underflow
    if acc.name == "float64":
        return 2 * accumulated, "|C-ref| <= 2 gamma_K(u64) |A||B| (kernel and reference)"
    if types.output != acc:
        out = types.output
        return (accumulated + out.unit_roundoff * (np.abs(expected) + accumulated)
                + out.underflow,
                f"|C-ref| <= gamma_K(u32) |A||B| + u_{out.name} |C| + eta_{out.name}")
    return accumulated, "|C-ref| <= gamma_K |A||B|"


def full_check(expected: np.ndarray, result: np.ndarray, magnitude: np.ndarray, k: int,
               types: TypeSet) -> Verification:
    """Verify every element against the float64 (int64) reference and |A| @ |B|."""
    if not types.accumulate.is_float:
        return exact_check(result, expected)
    bound, criterion = element_bound(expected, magnitude, k, types)
    return bounded_check(result, expected, bound, criterion)


def exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return A @ B in float64, or exactly in int64 for integer inputs.

    Integer products go through float64 BLAS when every partial sum stays below 2^53
    (exact there, and far faster than NumPy's int64 loop), else through int64.
    """
    if a.dtype.kind not in "iu":
        return a.astype(np.float64) @ b.astype(np.float64)
    largest = _largest(a) * _largest(b) * max(a.shape[-1], 1)
    if largest < 2**53:
        return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
    return a.astype(np.int64) @ b.astype(np.int64)


def _largest(array: np.ndarray) -> int:
    return int(np.abs(array.astype(np.int64)).max()) if array.size else 0


# -- the randomized check ----------------------------------------------------------------


@dataclass(frozen=True)
class Witness:
    """What the randomized check keeps of one set of inputs, in place of C = A @ B.

    vectors: (k, blocks * block) random vectors, zero past column N (float64; uint64 for
    int32 inputs, whose block is all N columns); projected: A @ (B x) per row, block and
    vector, (M, blocks, k) float64 (int32: (M, k) uint64, modulo 2^64); row_norms,
    col_norms: ||a_i|| and ||b_j|| (float only); rows, cols: the elements computed exactly,
    values: their float64 (int64) value, magnitudes: |a_i| . |b_j| for their bound.
    """

    shape: tuple[int, int, int]
    block: int
    vectors: np.ndarray
    projected: np.ndarray
    row_norms: np.ndarray
    col_norms: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    magnitudes: np.ndarray

    @property
    def exact(self) -> bool:
        """Return whether the projections are exact integers (int32 inputs)."""
        return bool(self.vectors.dtype == np.uint64)

    @property
    def blocks(self) -> int:
        """Return the number of column blocks of a row."""
        return int(self.vectors.shape[1]) // self.block


def make_witness(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> Witness:
    """Return the witness of C = A @ B: random projections and exactly computed samples.

    rng must be a generator of the check's own (base.check_rng), not the inputs'.
    """
    (m, k), n = a.shape, b.shape[1]
    wide = np.int64 if a.dtype.kind in "iu" else np.float64
    a_wide, b_wide = a.astype(wide), b.astype(wide)
    rows, cols, values, magnitudes = _sample(a_wide, b_wide, rng)
    if a.dtype.kind in "iu":
        words = rng.integers(0, 2**64, size=(INT_VECTORS, n), dtype=np.uint64,
                             endpoint=False)
        # Modulo 2^64: unsigned arithmetic wraps, so every product and sum is exact there.
        projected = _wrapped(a) @ (_wrapped(b) @ words.T)
        empty = np.zeros(0)
        return Witness((m, k, n), n, words, projected, empty, empty, rows, cols, values,
                       magnitudes)
    a64, b64 = a_wide, b_wide
    block = min(BLOCK, n)
    blocks = -(-n // block)
    signs = rng.integers(0, 2, size=(VECTORS, n)) * 2 - 1
    vectors = np.zeros((VECTORS, blocks * block))
    vectors[:, :n] = signs * (1.0 + rng.random((VECTORS, n)))
    # B_b x_b for every block and vector (K x blocks x k), then A @ that: one GEMM.
    reduced = np.einsum("kbw,vbw->kbv", _padded(b64, blocks * block).reshape(k, blocks, block),
                        vectors.reshape(VECTORS, blocks, block))
    projected = (a64 @ reduced.reshape(k, blocks * VECTORS)).reshape(m, blocks, VECTORS)
    return Witness((m, k, n), block, vectors, projected,
                   np.sqrt(np.einsum("ik,ik->i", a64, a64)),
                   np.sqrt(np.einsum("kj,kj->j", b64, b64)),
                   rows, cols, values, magnitudes)


def _sample(a: np.ndarray, b: np.ndarray, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the elements checked exactly, each once: the first and last row and column
    (corners included) and SAMPLE drawn uniformly; as rows, columns, values of A @ B and
    of |A| @ |B| (zeros for integers, which need no bound). a and b: float64 or int64."""
    m, n = a.shape[0], b.shape[1]
    edge_rows, edge_cols = np.unique([0, m - 1]), np.unique([0, n - 1])
    picked = np.unique(rng.integers(0, m, SAMPLE) * n + rng.integers(0, n, SAMPLE))
    picked = picked[np.argsort(picked % n, kind="stable")]  # by column: see _elements
    rows = np.concatenate([np.repeat(edge_rows, n), np.tile(np.arange(m), len(edge_cols)),
                           picked // n])
    cols = np.concatenate([np.tile(np.arange(n), len(edge_rows)), np.repeat(edge_cols, m),
                           picked % n])
    exact = a.dtype.kind in "iu"
    parts, bound_parts = [], []
    # The edges as two small products, column edges transposed to run column by column.
    for first, second, flip in ((a[edge_rows], b, False), (a, b[:, edge_cols], True)):
        product = first @ second
        scale = np.zeros(product.shape) if exact else np.abs(first) @ np.abs(second)
        parts.append((product.T if flip else product).ravel())
        bound_parts.append((scale.T if flip else scale).ravel())
    picked_values, picked_bounds = _elements(a, b, picked // n, picked % n)
    values = np.concatenate([*parts, picked_values])
    magnitudes = np.concatenate([*bound_parts, picked_bounds])
    _, first_seen = np.unique(rows * n + cols, return_index=True)
    return rows[first_seen], cols[first_seen], values[first_seen], magnitudes[first_seen]


def verify_witness(a: np.ndarray, b: np.ndarray, result: np.ndarray, witness: Witness,
                   types: TypeSet) -> Verification:
    """Verify a kernel's result against a witness of its inputs (see the module doc)."""
    result = np.asarray(result)
    m, k, n = witness.shape
    if result.shape != (m, n):
        return Verification(False, math.inf, math.inf, m * n, m * n,
                            f"the result has shape {result.shape}, not {(m, n)}")
    suspects = _suspects(result, witness, types)
    budget = max(ESCALATE_MIN, int(ESCALATE_SHARE * m * witness.blocks))
    rows, cols, values, magnitudes = _computed(a, b, witness, suspects[:budget])
    checked = result[rows, cols]
    if witness.exact:
        bad = checked.astype(np.int64) != values
        criterion, nonfinite = "exact", np.zeros(0, np.int64)
    else:
        bound, criterion = element_bound(values, magnitudes, k, types)
        bad = ~(np.isfinite(checked) & (np.abs(checked.astype(np.float64) - values) <= bound))
        nonfinite = np.flatnonzero(~np.isfinite(result))
    wrong = np.union1d(nonfinite, rows[bad].astype(np.int64) * n + cols[bad])
    if len(suspects) > budget and not wrong.size:
        # More blocks flagged than are worth computing one by one, and none of those
        # computed is wrong: a correct kernel noisier than the model. The full check decides.
        expected = exact_product(a, b)
        magnitude = (expected if witness.exact
                     else np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
        return full_check(expected, result, magnitude, k, types)
    what = "row" if witness.exact else f"row and {witness.block} columns"
    return Verification(
        passed=not wrong.size,
        rel_error=_rel_error(checked, values, bool(nonfinite.size)),
        max_abs_error=_max_abs_error(checked, values, bool(nonfinite.size)),
        bad_elements=int(wrong.size),
        total_elements=m * n,
        criterion=f"{criterion}; randomized: {witness.vectors.shape[0]} projections per "
                  f"{what}, {len(suspects)} flagged, {len(rows)} elements computed "
                  "(the errors are over these)",
    )


def thresholds(result: np.ndarray, witness: Witness, types: TypeSet
               ) -> tuple[np.ndarray, np.ndarray]:
    """Return, per row and column block, the screen and the float64 evaluation bound:
    a projection difference above their sum flags the block.

    screen: 2 SCREEN sqrt(sum_j s_ij^2), with s_ij = sqrt(K) u_acc ||a_i|| ||b_j|| (the
    Higham-Mary scale of a correct K-term sum's rounding error) plus u_out |C_ij| / (1 -
    u_out) for an output rounded to a narrower type; the 2 is |x_j|'s largest value.
    evaluation: a rigorous bound on the float64 rounding of the two projections. Both
    depend on the inputs and the result, never on the vectors.
    """
    _, result_norms = _projections(result, witness)
    return _thresholds(result_norms, witness, types)


def detection_floor(result: np.ndarray, witness: Witness, types: TypeSet) -> np.ndarray:
    """Return tau per row and column block: an element off by d > tau from the exact
    product is missed by all the projections with probability at most (tau / d)^VECTORS
    (docs/verification.md)."""
    screen, evaluation = thresholds(result, witness, types)
    floor: np.ndarray = screen + 2 * evaluation
    return floor


def _thresholds(result_norms: np.ndarray, witness: Witness, types: TypeSet
                ) -> tuple[np.ndarray, np.ndarray]:
    _, k, _ = witness.shape
    block, blocks = witness.block, witness.blocks
    col = _padded(witness.col_norms[None, :], blocks * block).reshape(blocks, block)
    noise = math.sqrt(k) * types.accumulate.unit_roundoff * np.outer(
        witness.row_norms, np.sqrt(np.einsum("bw,bw->b", col, col)))
    if types.output != types.accumulate:
        u_out, eta = types.output.unit_roundoff, types.output.underflow
        noise = noise + u_out / (1 - u_out) * result_norms + eta * np.sqrt(
            np.einsum("bw->b", (col > 0).astype(np.float64)))[None, :]
    # C_ij x_j summed over a block, in any order (BLAS's included):
    # gamma_{w+1} sum|C_ij x_j| <= 2 gamma sqrt(w) ||C_ib||;
    # a_i . (B_b x_b): gamma_{K+w+2} |a_i| |B_b| |x_b| <= 2 gamma ||a_i|| sum_b ||b_j||.
    evaluation = (2 * gamma(block + 1, U64) * math.sqrt(block) * result_norms
                  + 2 * gamma(k + block + 2, U64) * np.outer(witness.row_norms,
                                                             col.sum(axis=1)))
    return 2 * SCREEN * noise, evaluation


def _projections(result: np.ndarray, witness: Witness) -> tuple[np.ndarray, np.ndarray]:
    """Return, per row and column block, the float64 projections sum_j C_ij x_j of every
    vector (M x blocks x k) and the norms ||C_ib|| (M x blocks), non-finite elements
    (counted apart) as 0.

    A band of rows at a time, widened to float64 in a buffer that stays in the CPU's cache,
    the projections by BLAS: one pass over the result where a float64 copy of it, a
    padded copy and einsum's loops took several (4x the time at 3001x2000 on one core)."""
    m, _, n = witness.shape
    block, blocks = witness.block, witness.blocks
    count = witness.vectors.shape[0]
    vectors = witness.vectors.reshape(count, blocks, block).transpose(1, 2, 0)  # b, w, v
    left, norms = np.empty((m, blocks, count)), np.empty((m, blocks))
    rows = max(1, PROJECTION_BAND // (blocks * block))
    band = np.zeros((min(rows, m), blocks * block))  # the columns past N stay 0
    for start in range(0, m, rows):
        part = np.asarray(result[start:start + rows])
        wide = band[:len(part)]
        wide[:, :n] = part
        finite = np.isfinite(wide[:, :n])
        if not finite.all():
            wide[:, :n][~finite] = 0.0
        blocked = wide.reshape(len(part), blocks, block)
        left[start:start + len(part)] = np.matmul(blocked.transpose(1, 0, 2),
                                                  vectors).transpose(1, 0, 2)
        norms[start:start + len(part)] = np.sqrt(np.einsum("ibw,ibw->ib", blocked, blocked))
    return left, norms


def _suspects(result: np.ndarray, witness: Witness, types: TypeSet) -> np.ndarray:
    """Return the flagged (row, column block) pairs, most suspect first (int32: the rows
    whose exact projections differ, block 0)."""
    if witness.exact:
        left = _wrapped(result) @ witness.vectors.T
        rows = np.flatnonzero(np.any(left != witness.projected, axis=1))
        return np.stack([rows, np.zeros_like(rows)], axis=1)
    left, result_norms = _projections(result, witness)
    screen, evaluation = _thresholds(result_norms, witness, types)
    excess = np.abs(left - witness.projected).max(axis=2) / (screen + evaluation)
    flagged = np.argwhere(excess > 1)
    suspects: np.ndarray = flagged[np.argsort(-excess[flagged[:, 0], flagged[:, 1]],
                                              kind="stable")]
    return suspects


def _computed(a: np.ndarray, b: np.ndarray, witness: Witness, suspects: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the witness's sampled elements and those of the suspect blocks, each once:
    rows, columns, exact values and |a_i| . |b_j|."""
    _, _, n = witness.shape
    width = witness.block
    rows, cols = [witness.rows], [witness.cols]
    values, magnitudes = [witness.values], [witness.magnitudes]
    for col_block in np.unique(suspects[:, 1]):
        chosen = suspects[suspects[:, 1] == col_block, 0]
        span = slice(col_block * width, min(n, (col_block + 1) * width))
        columns = np.arange(span.start, span.stop)
        rows.append(np.repeat(chosen, len(columns)))
        cols.append(np.tile(columns, len(chosen)))
        values.append(exact_product(a[chosen], b[:, span]).reshape(-1))
        magnitudes.append(np.zeros(values[-1].shape) if witness.exact else
                          (np.abs(a[chosen].astype(np.float64))
                           @ np.abs(b[:, span].astype(np.float64))).reshape(-1))
    every_row, every_col = np.concatenate(rows), np.concatenate(cols)
    _, first = np.unique(every_row.astype(np.int64) * n + every_col, return_index=True)
    return (every_row[first], every_col[first], np.concatenate(values)[first],
            np.concatenate(magnitudes)[first])


def _elements(a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray,
              chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Return (A @ B)[rows, cols] and (|A| @ |B|)[rows, cols] (zeros for integers), a and
    b float64 (int64), a chunk at a time. NumPy gathers columns of a row-major B quickly
    when they come sorted, as _sample gives them."""
    exact = a.dtype.kind in "iu"
    values, magnitudes = [np.zeros(0, a.dtype)], [np.zeros(0)]
    for start in range(0, len(rows), chunk):
        left = np.take(a, rows[start:start + chunk], axis=0)
        right = np.take(b, cols[start:start + chunk], axis=1)
        values.append(np.einsum("sk,ks->s", left, right))
        magnitudes.append(np.zeros(len(left)) if exact
                          else np.einsum("sk,ks->s", np.abs(left), np.abs(right)))
    return np.concatenate(values), np.concatenate(magnitudes)


def _wrapped(array: np.ndarray) -> np.ndarray:
    """Return an integer array as uint64, two's complement: arithmetic modulo 2^64."""
    return np.asarray(array).astype(np.int64).astype(np.uint64)


def _padded(array: np.ndarray, width: int) -> np.ndarray:
    """Return a 2-D array widened with zero columns to width columns (itself if as wide)."""
    if array.shape[1] == width:
        return array
    out = np.zeros((array.shape[0], width), array.dtype)
    out[:, : array.shape[1]] = array
    return out


def _rel_error(checked: np.ndarray, values: np.ndarray, nonfinite: bool) -> float:
    """Return ||result - ref|| / ||ref|| over the elements computed exactly."""
    if nonfinite:
        return math.inf
    diff = checked.astype(np.float64) - values
    norm = float(np.linalg.norm(values.astype(np.float64)))
    err = float(np.linalg.norm(diff))
    if not math.isfinite(err):
        return math.inf
    return err / norm if norm else err


def _max_abs_error(checked: np.ndarray, values: np.ndarray, nonfinite: bool) -> float:
    """Return the largest |result - ref| over the elements computed exactly (inf when the
    result holds a NaN or inf, as a results file reads its null back)."""
    if nonfinite:
        return math.inf
    if not checked.size:
        return 0.0
    return float(np.max(np.abs(checked.astype(np.float64) - values)))
