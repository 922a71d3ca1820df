"""The GPU's count of differing elements (engines/utility_kernels.py) against NumPy's, on a
real GPU: every width, lengths around the grid's stride, differences at the first and last
elements, +0/-0 and NaN. (Wrong transposes large enough to be verified on the GPU are in
test_kernels.py: `copies` and `last_element_wrong` at 1024², `skips_last_row` at 3001².)"""

from __future__ import annotations

import numpy as np
import pytest

from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.engines.utility_kernels import DIFFER_BLOCK, DIFFER_BLOCKS_PER_SM
from cudabench.ops.checks import bits_differ, same_bits_check

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def engine():
    gpu = PycudaSpec(0).open()
    yield gpu
    gpu.close()


def lengths(engine) -> list[int]:
    stride = engine.info.sm_count * DIFFER_BLOCKS_PER_SM * DIFFER_BLOCK
    return [1, 31, 33, 1000, stride - 1, stride, stride + 1, 3 * stride + 17, (1 << 24) + 5]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_the_gpu_counts_what_numpy_counts(engine, dtype):
    rng = np.random.default_rng(7)
    for n in lengths(engine):
        expected = (rng.standard_normal(n) * 100).astype(dtype)
        result = expected.copy()
        wrong = sorted({0, n - 1, int(rng.integers(n))})
        result[wrong] += np.asarray(1, dtype=dtype)
        if expected.dtype.kind == "f" and n > 40:
            expected[20], result[20] = 0.0, -0.0
            result[40] = np.nan
        a, b = engine.allocate(result.nbytes), engine.allocate(expected.nbytes)
        try:
            engine.upload(a, result)
            engine.upload(b, expected)
            floating = expected.dtype.kind == "f"
            assert engine.count_differing(a, b, n, expected.itemsize, floating) == \
                same_bits_check(result, expected).bad_elements, (dtype, n)
            assert engine.count_differing(a, b, n, expected.itemsize, False) == \
                bits_differ(result, expected), (dtype, n)
            assert engine.count_differing(b, b, n, expected.itemsize, False) == 0
        finally:
            engine.free(a)
            engine.free(b)

