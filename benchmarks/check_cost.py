"""CPU time of verification, full reference against the default checks (no GPU needed).

    python benchmarks/check_cost.py [--sizes 1000,4096] [--dtypes float32] [--repeat 1]

For each matmul size: the full check (float64 reference, then |A| @ |B| and the element
bound) against the randomized check (its witness, then the verification of a correct
result); for each transpose size: the float64 comparison against the bit comparison.
One set of inputs: a benchmark has two (its own and the recheck's fresh ones), so the
time a run spends is about twice each figure, its verifications once per launch checked.
Set OPENBLAS_NUM_THREADS (or the like) to compare at a given number of cores.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.ops import OPS
from cudabench.ops import matmul_check
from cudabench.ops.base import check_rng
from cudabench.ops.checks import exact_check


def timed(function: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    """Return function's value and its fastest time over repeat calls."""
    best, value = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - started)
    return value, best


def matmul_row(n: int, dtype: str, repeat: int) -> str:
    op = OPS["matmul"]
    types = op.type_set(dtype)
    inputs = op.inputs((n, n, n), types, np.random.default_rng(0))
    a, b = inputs["A"], inputs["B"]
    result = matmul_check.exact_product(a, b).astype(types.output.numpy)
    reference, t_reference = timed(lambda: op.expected(inputs, types, check_rng(0), True),
                                   repeat)

    def full_verify() -> Any:
        matmul_check_magnitude = (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
                                  if types.accumulate.is_float else reference)
        return matmul_check.full_check(reference, result, matmul_check_magnitude, n, types)

    full, t_full = timed(full_verify, repeat)
    witness, t_witness = timed(lambda: op.expected(inputs, types, check_rng(0)), repeat)
    fast, t_fast = timed(lambda: op.verify(inputs, witness, result, [], types), repeat)
    assert full.passed and fast.passed, (full, fast)
    before, after = t_reference + t_full, t_witness + t_fast
    return (f"| matmul {n}^3 {dtype} | {t_reference:.3f} + {t_full:.3f} = {before:.3f} s "
            f"| {t_witness:.3f} + {t_fast:.3f} = {after:.3f} s | {before / after:.1f}x |")


def transpose_row(n: int, dtype: str, repeat: int) -> str:
    op = OPS["transpose"]
    types = op.type_set(dtype)
    inputs = op.inputs((n, n), types, np.random.default_rng(0))
    reference, t_reference = timed(lambda: op.reference(inputs), repeat)
    result = reference.copy()
    old, t_old = timed(lambda: exact_check(result, reference), repeat)
    new, t_new = timed(lambda: op.verify(inputs, reference, result, [], types), repeat)
    assert old.passed and new.passed
    return (f"| transpose {n}^2 {dtype} (reference {t_reference:.3f} s) | {t_old:.3f} s "
            f"| {t_new:.3f} s | {t_old / t_new:.0f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4096", help="matmul sizes (n for n^3)")
    parser.add_argument("--transpose-sizes", default="8192", help="transpose sizes")
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print("| one set of inputs | before: reference + verify | after: witness + verify "
          "| saved |")
    print("|---|---|---|---|")
    for dtype in args.dtypes.split(","):
        for size in args.sizes.split(","):
            print(matmul_row(int(size), dtype, args.repeat), flush=True)
        for size in filter(None, args.transpose_sizes.split(",")):
            print(transpose_row(int(size), dtype, args.repeat), flush=True)


if __name__ == "__main__":
    main()
