"""Ops: inputs, references, verification tolerances, sizes and accounting."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from cudabench.errors import UsageError
from cudabench.ops import DTYPES, OPS, TypeSet
from cudabench.ops import dot as dot_module
from cudabench.ops import matmul as matmul_module
from cudabench.ops.base import LaunchShape
from cudabench.ops.types import INT32_MAX

INT32_MIN = -(2**31)
FLOAT32, INT32 = TypeSet.of("float32"), TypeSet.of("int32")

# Small odd shapes from the ops' own edge shapes, used wherever the size does not matter.
SHAPES = {name: op.edge_shapes()[1] for name, op in OPS.items()}
OP_DTYPES = [(op, dtype) for op in OPS for dtype in OPS[op].dtypes]


def make_inputs(op_name: str, dtype_name: str, shape=None, seed: int = 0):
    """Return (op, inputs, exact reference) for op_name at shape (default SHAPES)."""
    op = OPS[op_name]
    inputs = op.inputs(shape or SHAPES[op_name], op.type_set(dtype_name),
                       np.random.default_rng(seed))
    return op, inputs, op.reference(inputs)


class ExtremeRng:
    """Stands in for a numpy Generator: every draw returns its lowest or highest value.

    ends gives "low" or "high" for successive draws, so the worst cases of the bounds the
    ops pick can be built exactly.
    """

    def __init__(self, ends):
        self.ends = iter(ends)

    def integers(self, low, high, size, endpoint=False, dtype=np.int64):
        value = low if next(self.ends) == "low" else (high if endpoint else high - 1)
        return np.full(size, value, dtype=dtype)

    def uniform(self, low, high, size):
        value = low if next(self.ends) == "low" else np.nextafter(high, low)
        return np.full(size, value, dtype=np.float64)

    def random(self, size, dtype=np.float64):
        """[0, 1): its ends, 0 or the largest value below 1 in dtype."""
        one = dtype(1)
        value = dtype(0) if next(self.ends) == "low" else np.nextafter(one, dtype(0))
        return np.full(size, value, dtype=dtype)


# -- inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(("op_name", "dtype_name"), OP_DTYPES)
def test_inputs_are_seeded_and_deterministic(op_name, dtype_name):
    _, first, _ = make_inputs(op_name, dtype_name, seed=3)
    _, again, _ = make_inputs(op_name, dtype_name, seed=3)
    _, other, _ = make_inputs(op_name, dtype_name, seed=4)
    assert first.keys() == again.keys() == other.keys()
    for name in first:
        assert first[name].dtype == DTYPES[dtype_name].numpy
        np.testing.assert_array_equal(first[name], again[name])
        assert not np.array_equal(first[name], other[name])


@pytest.mark.parametrize(("op_name", "dtype_name"), OP_DTYPES)
def test_inputs_are_never_trivial(op_name, dtype_name):
    _, inputs, _ = make_inputs(op_name, dtype_name)
    for name, array in inputs.items():
        assert array.size > 1, name
        assert len(np.unique(array)) > 2, f"{name} has too few distinct values"
        assert not np.all(np.isin(array, (0, 1))), name
        assert np.all(np.isfinite(array)), name
        if array.dtype.kind == "i":
            assert array.min() > INT32_MIN, f"{name} holds the poison value"


@pytest.mark.parametrize(
    ("op_name", "shape"),
    [("matmul", (2, 1, 2)), ("matmul", (2, 1000, 2)), ("matmul", (1, 1 << 20, 1)),
     ("matmul", (1, 3 << 21, 1)), ("transpose", (3, 4)), ("transpose_inplace", (3,)),
     ("dot", (1,)), ("dot", (1000,)), ("dot", ((1 << 20) + 3,)), ("dot", (1 << 22,))],
)
@pytest.mark.parametrize("ends", list(itertools.product(("low", "high"), repeat=2)))
def test_int_inputs_at_their_bounds_give_an_exact_int32_result(op_name, shape, ends):
    op = OPS[op_name]
    inputs = op.inputs(shape, INT32, ExtremeRng(ends))
    for name, array in inputs.items():
        assert array.dtype == np.int32
        assert array.min() > INT32_MIN, f"{name} holds the poison value"
    reference = op.reference(inputs)
    assert reference.dtype == (np.int32 if op_name.startswith("transpose") else np.int64)
    assert np.abs(reference.astype(np.int64)).max() < 2**31


@pytest.mark.parametrize(("op_name", "shape"),
                         [("matmul", (40, 1 << 14, 3)), ("dot", ((1 << 20) + 3,))])
def test_random_int_inputs_use_their_range_and_fit(op_name, shape):
    _, inputs, reference = make_inputs(op_name, "int32", shape)
    assert np.abs(reference).max() < 2**31
    module = matmul_module if op_name == "matmul" else dot_module
    bound = module.int_bound(shape[1] if op_name == "matmul" else shape[0])
    assert max(int(np.abs(a).max()) for a in inputs.values()) == bound


@pytest.mark.parametrize("module", [matmul_module, dot_module], ids=["matmul", "dot"])
def test_int_bound_keeps_every_sum_in_int32(module):
    lengths = [1, 2, 3, 1000, 4096, 1 << 20, (1 << 20) + 3, 1 << 24, 10**8, 1 << 29,
               INT32_MAX]
    for n in lengths:
        bound = module.int_bound(n)
        assert bound >= 1
        assert n * bound * bound <= INT32_MAX, n


def test_dot_int_inputs_vary_at_every_accepted_length():
    longest = INT32_MAX // 4
    for n in (1 << 26, longest):
        OPS["dot"].check_shape((n,), INT32)  # accepted, with inputs of at least +-1, +-2
        assert dot_module.int_bound(n) >= 2, n
    for n in (longest + 1, 1 << 29, INT32_MAX):
        with pytest.raises(UsageError, match="float32"):
            OPS["dot"].check_shape((n,), INT32)


@pytest.mark.parametrize(("op_name", "shape"), [(op, SHAPES[op]) for op in OPS])
@pytest.mark.parametrize("ends", list(itertools.product(("low", "high"), repeat=2)))
def test_float_inputs_stay_in_their_range(op_name, shape, ends):
    inputs = OPS[op_name].inputs(shape, FLOAT32, ExtremeRng(ends))
    for array in inputs.values():
        assert array.dtype == np.float32
        assert 0.5 <= np.abs(array).max() <= 1.5


def test_dot_products_all_have_the_same_sign():
    for dtype_name in ("float32", "int32"):
        _, inputs, _ = make_inputs("dot", dtype_name)
        assert np.all(inputs["a"] > 0) and np.all(inputs["b"] < 0)


# -- references -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
def test_matmul_reference(dtype_name):
    _, inputs, reference = make_inputs("matmul", dtype_name, (5, 7, 3))
    a, b = inputs["A"], inputs["B"]
    assert reference.shape == (5, 3)
    assert reference.dtype == (np.float64 if dtype_name == "float32" else np.int64)
    for i, j in itertools.product(range(5), range(3)):
        terms = [float(a[i, k]) * float(b[k, j]) for k in range(7)]
        assert reference[i, j] == pytest.approx(math.fsum(terms), rel=1e-15, abs=1e-15)


@pytest.mark.parametrize("op_name", ["transpose", "transpose_inplace"])
@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
def test_transpose_reference(op_name, dtype_name):
    _, inputs, reference = make_inputs(op_name, dtype_name)
    a = inputs["A"]
    rows, cols = a.shape
    assert reference.shape == (cols, rows) and reference.dtype == a.dtype
    assert reference.flags["C_CONTIGUOUS"]
    for i, j in [(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1), (3, 5)]:
        assert reference[j, i] == a[i, j]


def test_transpose_inplace_input_is_square():
    _, inputs, _ = make_inputs("transpose_inplace", "float32", (11,))
    assert inputs["A"].shape == (11, 11)


@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
def test_dot_reference(dtype_name):
    _, inputs, reference = make_inputs("dot", dtype_name)
    a, b = inputs["a"], inputs["b"]
    exact = (sum(int(x) * int(y) for x, y in zip(a, b)) if dtype_name == "int32"
             else math.fsum(float(x) * float(y) for x, y in zip(a, b)))
    assert reference.shape == (1,)
    assert reference[0] == pytest.approx(exact, rel=1e-14)


# -- verification ---------------------------------------------------------------------


def verify(op, inputs, expected, result, launches=()):
    """Verify as the pipeline does, with the op's type set for the inputs' type."""
    types = op.type_set(np.dtype(next(iter(inputs.values())).dtype).name)
    return op.verify(inputs, expected, result, launches, types)


def as_result(expected: np.ndarray, dtype_name: str, op_name: str = "transpose") -> np.ndarray:
    """Return the exact reference as a kernel would store it (in the op's output type)."""
    return expected.astype(OPS[op_name].type_set(dtype_name).output.numpy)


@pytest.mark.parametrize(("op_name", "dtype_name"), OP_DTYPES)
def test_exact_reference_passes(op_name, dtype_name):
    op, inputs, expected = make_inputs(op_name, dtype_name)
    verification = verify(op, inputs, expected, as_result(expected, dtype_name, op_name))
    assert verification.passed, verification
    assert verification.bad_elements == 0
    assert verification.total_elements == expected.size


def changed(value, dtype_name, op_name):
    """Return value changed by the least amount the op's check must catch."""
    if dtype_name == "int32":
        return value + 1
    if op_name.startswith("transpose"):
        return np.nextafter(value, type(value)(np.inf))  # exact check: one ulp of its type
    if op_name == "matmul":
        return value + np.float32(0.01)  # gamma_K |A||B| is below 1e-4 at SHAPES
    return value * np.float32(1.001)  # the dot tolerance at SHAPES is below 1e-5 relative


@pytest.mark.parametrize(("op_name", "dtype_name"), OP_DTYPES)
@pytest.mark.parametrize("where", ["first", "last", "middle"])
def test_one_changed_element_fails(op_name, dtype_name, where):
    op, inputs, expected = make_inputs(op_name, dtype_name)
    result = as_result(expected, dtype_name, op_name)
    index = {"first": 0, "last": result.size - 1, "middle": result.size // 2}[where]
    flat = result.reshape(-1)
    flat[index] = changed(flat[index], dtype_name, op_name)
    verification = verify(op, inputs, expected, result)
    assert not verification.passed
    assert verification.bad_elements == 1


@pytest.mark.parametrize(("op_name", "dtype_name"), OP_DTYPES)
def test_poisoned_element_fails(op_name, dtype_name):
    op, inputs, expected = make_inputs(op_name, dtype_name)
    result = as_result(expected, dtype_name, op_name)
    result.reshape(-1)[-1] = op.type_set(dtype_name).output.poison()
    verification = verify(op, inputs, expected, result)
    assert not verification.passed
    assert verification.bad_elements == 1


@pytest.mark.parametrize(("op_name", "dtype_name"), OP_DTYPES)
def test_all_poisoned_fails(op_name, dtype_name):
    op, inputs, expected = make_inputs(op_name, dtype_name)
    result = np.full(expected.shape, op.type_set(dtype_name).output.poison())
    verification = verify(op, inputs, expected, result)
    assert not verification.passed
    assert verification.bad_elements == expected.size


def test_poison_values():
    for name in ("float16", "float32", "float64"):
        poison = DTYPES[name].poison()
        assert np.isnan(poison) and poison.dtype == DTYPES[name].numpy
    assert DTYPES["int32"].poison() == INT32_MIN and DTYPES["int32"].poison().dtype == np.int32


@pytest.mark.parametrize("op_name", ["transpose", "transpose_inplace"])
@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
def test_untransposed_result_fails(op_name, dtype_name):
    op, inputs, expected = make_inputs(op_name, dtype_name)
    wrong = inputs["A"].reshape(expected.shape)  # the right shape, not transposed
    verification = verify(op, inputs, expected, wrong)
    assert not verification.passed
    assert verification.bad_elements > expected.size // 2


@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
def test_transposed_matmul_result_fails(dtype_name):
    op, inputs, expected = make_inputs("matmul", dtype_name, (40, 40, 40))
    verification = verify(op, inputs, expected, as_result(expected.T, dtype_name))
    assert not verification.passed


@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
@pytest.mark.parametrize(("k", "tile"), [(1000, 16), (1000, 32), (1024, 16), (70, 8)])
def test_matmul_missing_last_k_tile_fails(dtype_name, k, tile):
    op, inputs, expected = make_inputs("matmul", dtype_name, (24, k, 20))
    kept = (k - 1) // tile * tile
    partial = op.reference({"A": inputs["A"][:, :kept], "B": inputs["B"][:kept]})
    verification = verify(op, inputs, expected, as_result(partial, dtype_name))
    assert not verification.passed
    assert verification.bad_elements > expected.size * 0.9


def matmul_float32_orders(a: np.ndarray, b: np.ndarray, tile: int = 16):
    """Yield float32 products computed in orders a correct kernel may use."""
    yield "sgemm", a @ b
    sequential = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):  # the naive kernel: one k at a time, in float32
        sequential += np.outer(a[:, k], b[k])
    yield "sequential", sequential
    tiled = np.zeros_like(sequential)
    for k0 in range(0, a.shape[1], tile):  # per-tile partial products, then accumulated
        tiled += a[:, k0:k0 + tile] @ b[k0:k0 + tile]
    yield "tiled", tiled


@pytest.mark.parametrize("shape", [(16, 4096, 16), (9, 1000, 13), (1, 1, 1)])
def test_matmul_float32_in_any_correct_order_passes(shape):
    op, inputs, expected = make_inputs("matmul", "float32", shape)
    for name, result in matmul_float32_orders(inputs["A"], inputs["B"]):
        assert result.dtype == np.float32
        verification = verify(op, inputs, expected, result)
        assert verification.passed, (name, verification)


DEFAULT_BLOCK, H100_SMS = 256, 132


def dot_blocks(n: int, block: int = DEFAULT_BLOCK, blocks_per_sm: int = 8) -> int:
    """Return the dot kernels' grid: min(cdiv(N, BLOCK), SM_COUNT * BLOCKS_PER_SM)."""
    return min(-(-n // block), H100_SMS * blocks_per_sm)


def tree(values: np.ndarray) -> np.ndarray:
    """Reduce the last axis by halving, as tree_reduce.cuh does (length a power of two)."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = values[..., :half] + values[..., half:]
    return values[..., 0]


def grid_stride_partials(products: np.ndarray, blocks: int, block: int) -> np.ndarray:
    """Return each block's partial sum in a grid-stride kernel's order and dtype."""
    threads = blocks * block
    rounds = -(-products.size // threads)
    padded = np.zeros(rounds * threads, products.dtype)
    padded[: products.size] = products
    sums = np.zeros(threads, products.dtype)
    for row in padded.reshape(rounds, threads):  # sum += a[i] * b[i], i += threads
        sums += row
    return tree(sums.reshape(blocks, block))


def launch(blocks: int, block: int) -> LaunchShape:
    """Return a 1-D launch of blocks x block threads."""
    return LaunchShape((blocks, 1, 1), (block, 1, 1))


def dot_float32_orders(a: np.ndarray, b: np.ndarray):
    """Yield (name, float32 sum, launch) in orders a correct GPU reduction may use."""
    products = a * b  # float32
    for block, per_sm in ((256, 8), (1024, 1), (32, 64)):
        blocks = dot_blocks(a.size, block, per_sm)
        geometry = launch(blocks, block)
        partials = grid_stride_partials(products, blocks, block)
        yield f"atomic {block}x{blocks}", np.cumsum(partials, dtype=np.float32)[-1], geometry
        yield (f"atomic reversed {block}x{blocks}",
               np.cumsum(partials[::-1], dtype=np.float32)[-1], geometry)
        # shared_tree's dot_finish: one block strides over the partials, then a tree.
        yield f"finish {block}x{blocks}", grid_stride_partials(partials, 1, block)[0], geometry
    blocks = dot_blocks(a.size)
    yield "pairwise", np.sum(products, dtype=np.float32), launch(blocks, 256)
    chunks = np.array_split(products, blocks)  # each block one contiguous chunk, in sequence
    totals = np.array([np.cumsum(c, dtype=np.float32)[-1] for c in chunks], np.float32)
    yield "chunked sequential", np.cumsum(totals, dtype=np.float32)[-1], launch(blocks, 256)


@pytest.mark.parametrize("n", [1, 1000, (1 << 20) + 3, 1 << 24])
def test_dot_float32_in_any_correct_order_passes(n):
    op, inputs, expected = make_inputs("dot", "float32", (n,))
    for name, total, geometry in dot_float32_orders(inputs["a"], inputs["b"]):
        result = np.array([total], dtype=np.float32)
        verification = verify(op, inputs, expected, result, [geometry])
        assert verification.passed, (n, name, verification)


def dot_without_block(op, inputs, dtype_name: str, skipped: int, blocks_per_sm: int = 8,
                      block: int = DEFAULT_BLOCK):
    """Return a grid-stride dot whose block `skipped` never adds its share, and its launch."""
    a, b = inputs["a"], inputs["b"]
    wide = np.float64 if dtype_name == "float32" else np.int64
    blocks = dot_blocks(a.size, block, blocks_per_sm)
    partials = grid_stride_partials(a.astype(wide) * b.astype(wide), blocks, block)
    partials[skipped % blocks] = 0
    return np.array([partials.sum()]).astype(DTYPES[dtype_name].numpy), [launch(blocks, block)]


@pytest.mark.parametrize("dtype_name", ["float32", "int32"])
@pytest.mark.parametrize("n", [1000, (1 << 20) + 3])
@pytest.mark.parametrize("skipped", [0, -1], ids=["first-block", "last-block"])
def test_dot_missing_one_block_fails(dtype_name, n, skipped):
    op, inputs, expected = make_inputs("dot", dtype_name, (n,))
    result, launches = dot_without_block(op, inputs, dtype_name, skipped)
    verification = verify(op, inputs, expected, result, launches)
    assert not verification.passed, verification


@pytest.mark.parametrize(("block", "blocks_per_sm"), [(256, 64), (32, 64), (1024, 1)])
def test_dot_missing_one_block_fails_at_every_allowed_grid(block, blocks_per_sm):
    op, inputs, expected = make_inputs("dot", "float32", (1 << 24,))
    result, launches = dot_without_block(op, inputs, "float32", 0, blocks_per_sm, block)
    assert not verify(op, inputs, expected, result, launches).passed


def test_dot_missing_one_block_fails_behind_a_one_thread_launch():
    # atomic.cu zeroes its result with dot_zero <<<1, 1>>> first: the bound is the
    # reduction's launch's, not that one thread's (then 120 times looser on an H100 grid)
    op, inputs, expected = make_inputs("dot", "float32", (1 << 24,))
    result, launches = dot_without_block(op, inputs, "float32", 0)
    assert not verify(op, inputs, expected, result, [launch(1, 1), *launches]).passed


def test_dot_tolerance_below_one_block_share_at_every_length():
    for n in (1 << 20, 1 << 24, 1 << 26, 1 << 30):
        for per_sm in (1, 8, 64):  # BLOCKS_PER_SM's range
            blocks = dot_blocks(n, DEFAULT_BLOCK, per_sm)
            tolerance = dot_module.float_tolerance(n, 1.0, launch(blocks, DEFAULT_BLOCK))
            assert tolerance < 1.0 / blocks / 2, (n, per_sm)


def test_dot_float_tolerance_formula():
    geometry = launch(10, 100)  # 1000 threads: 10 products each, 7 tree levels, 10 blocks
    assert dot_module.addition_chain(10000, geometry) == 10 + 7 + 10
    assert dot_module.float_tolerance(10000, 3.0, geometry) == pytest.approx(
        8 * math.sqrt(27) * 2.0**-24 * 3.0)
    assert dot_module.addition_chain(10000, None) == 10000  # no geometry: any order


def test_matmul_tolerance_catches_a_small_error():
    op, inputs, expected = make_inputs("matmul", "float32", (8, 64, 8))
    magnitude = np.abs(inputs["A"].astype(np.float64)) @ np.abs(inputs["B"].astype(np.float64))
    gamma = 64 * 2.0**-24 / (1 - 64 * 2.0**-24)
    inside = (expected + 0.9 * gamma * magnitude).astype(np.float32)
    outside = expected + 1.5 * gamma * magnitude  # float64: no rounding back inside
    assert verify(op, inputs, expected, inside).passed
    assert verify(op, inputs, expected, outside).bad_elements == expected.size


# -- sizes and accounting -------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_name", "text", "shape"),
    [
        ("matmul", "1000", (1000, 1000, 1000)),
        ("matmul", "512x256x128", (512, 256, 128)),
        ("matmul", "512X256×128", (512, 256, 128)),
        ("matmul", " 7 ", (7, 7, 7)),
        ("transpose", "3001", (3001, 3001)),
        ("transpose", "3000x2000", (3000, 2000)),
        ("transpose", "1x7", (1, 7)),
        ("transpose_inplace", "3001", (3001,)),
        ("transpose_inplace", "64x64", (64,)),
        ("dot", "1<<24", (1 << 24,)),
        ("dot", "1 << 20", (1 << 20,)),
        ("dot", "3<<2", (12,)),
        ("dot", "1000", (1000,)),
    ],
)
def test_parse_size(op_name, text, shape):
    assert OPS[op_name].parse_size(text) == shape


@pytest.mark.parametrize(
    ("op_name", "text", "message"),
    [
        ("matmul", "0", "sizes are positive integers"),
        ("matmul", "-5", "sizes are positive integers"),
        ("matmul", "abc", "sizes are positive integers"),
        ("matmul", "1.5", "sizes are positive integers"),
        ("matmul", "0<<4", "sizes are positive integers"),
        ("matmul", "", "sizes are positive integers"),
        ("matmul", "3x", "expected --size 1000 or --size 512x256x128 (MxKxN)"),
        ("matmul", "3x4", "expected --size 1000 or --size 512x256x128"),
        ("matmul", "3x0x4", "sizes are positive integers"),
        ("transpose", "3x", "sizes are positive integers"),
        ("transpose", "2x3x4", "expected --size 3001 or --size 3000x2000"),
        ("transpose_inplace", "3x5", "--inplace transposes a square matrix"),
        ("dot", "10x10", "expected --size 1<<24"),
        ("dot", "1<<", "sizes are positive integers"),
    ],
)
def test_parse_size_errors(op_name, text, message):
    with pytest.raises(UsageError) as info:
        OPS[op_name].parse_size(text)
    assert str(info.value).startswith("--size ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("op_name", "shape", "dtype_name"),
    [("dot", (1 << 31,), "float32"), ("dot", (1 << 31,), "int32"),
     ("matmul", (2, 1 << 31, 2), "int32")],
)
def test_check_shape_rejects_what_cannot_run_exactly(op_name, shape, dtype_name):
    with pytest.raises(UsageError, match="--size"):
        OPS[op_name].check_shape(shape, OPS[op_name].type_set(dtype_name))


@pytest.mark.parametrize(("op_name", "text"), [
    ("dot", "1<<31"), ("matmul", "2x2147483648x2"), ("transpose", "1x2147483648"),
    ("transpose_inplace", "2147483648"), ("dot", "1<<100000000"),
])
def test_sizes_beyond_int32_are_refused(op_name, text):
    with pytest.raises(UsageError, match="--size"):
        OPS[op_name].parse_size(text)


def test_type_matrix():
    for op in OPS.values():
        assert set(op.dtypes) == {"float16", "float32", "float64", "int32"}
    dot16, matmul16 = OPS["dot"].type_set("float16"), OPS["matmul"].type_set("float16")
    assert (dot16.accumulate.name, dot16.output.name) == ("float32", "float32")
    assert (matmul16.accumulate.name, matmul16.output.name) == ("float32", "float16")
    assert OPS["transpose"].type_set("float64") == TypeSet.of("float64")
    with pytest.raises(UsageError, match="--dtype bfloat16: dot supports float16, float32"):
        OPS["dot"].type_set("bfloat16")


@pytest.mark.parametrize(
    ("op_name", "shape", "itemsize", "flops", "bytes_moved"),
    [
        ("matmul", (2, 3, 5), 4, 2 * 2 * 3 * 5, (2 * 3 + 3 * 5 + 2 * 5) * 4),
        ("matmul", (1000, 1000, 1000), 4, 2 * 10**9, 3 * 10**6 * 4),
        ("transpose", (3, 7), 4, 0, 2 * 21 * 4),
        ("transpose_inplace", (9,), 4, 0, 2 * 81 * 4),
        ("dot", (1 << 24,), 4, 2 << 24, 2 * (1 << 24) * 4 + 4),
        ("dot", (10,), 8, 20, 168),  # two inputs of 8 bytes a element, one result
    ],
)
def test_flops_and_bytes_moved(op_name, shape, itemsize, flops, bytes_moved):
    op = OPS[op_name]
    assert op.flops(shape) == flops
    name = {2: "float16", 4: "float32", 8: "float64"}[itemsize]
    assert op.bytes_moved(shape, TypeSet.of(name)) == bytes_moved


@pytest.mark.parametrize(
    ("op_name", "shape", "blocks", "args", "outputs"),
    [
        ("matmul", (2, 3, 5), 9, ["A", "B", "C", 2, 3, 5], {"C": (2, 5)}),
        ("transpose", (3, 7), 9, ["A", "B", 3, 7], {"B": (7, 3)}),
        ("transpose_inplace", (9,), 4, ["A", 9], {}),
        ("dot", (100,), 4, ["a", "b", "out", "partials", 100, 4],
         {"out": (1,), "partials": (4,)}),
    ],
)
def test_args_and_outputs(op_name, shape, blocks, args, outputs):
    op = OPS[op_name]
    assert op.args(shape, blocks) == args
    assert op.outputs(shape, FLOAT32, blocks) == outputs
    buffers = [a for a in args if isinstance(a, str)]
    assert op.result_buffer in buffers
    assert op.signature.count("DTYPE*") + op.signature.count("OUT_TYPE*") == len(buffers)


def correct_in_its_types(op_name: str, inputs: dict, types) -> np.ndarray:
    """Compute the op as a correct kernel does: in the accumulator's type, term by term
    (not the reference's order), then stored in the output type."""
    acc = types.accumulate.numpy
    if op_name == "matmul":
        a, b = inputs["A"].astype(acc), inputs["B"].astype(acc)
        total = np.zeros((a.shape[0], b.shape[1]), dtype=acc)
        for k in reversed(range(a.shape[1])):
            total += a[:, k:k + 1] * b[k:k + 1, :]
        return total.astype(types.output.numpy)
    products = inputs["a"].astype(acc) * inputs["b"].astype(acc)
    total = acc(0)
    for value in products[::-1]:
        total += value
    return np.array([total]).astype(types.output.numpy)


@pytest.mark.parametrize("dtype_name", ["float16", "float32", "float64"])
@pytest.mark.parametrize(("op_name", "shape"), [("matmul", (9, 700, 11)), ("dot", (3001,))])
def test_a_correct_computation_in_the_declared_types_passes_and_a_slip_fails(
        op_name, shape, dtype_name):
    op, inputs, expected = make_inputs(op_name, dtype_name, shape)
    types = op.type_set(dtype_name)
    result = correct_in_its_types(op_name, inputs, types)
    assert verify(op, inputs, expected, result).passed
    # One element off by three times the bound's leading term (k u sum|terms|, k the
    # length of the sum) plus a few roundings of the output is wrong in every type.
    flat = result.reshape(-1)
    if op_name == "matmul":
        terms = float(np.abs(inputs["A"][0].astype(np.float64))
                      @ np.abs(inputs["B"][:, 0].astype(np.float64)))
        length = shape[1]
    else:
        terms = float(np.abs(inputs["a"].astype(np.float64))
                      @ np.abs(inputs["b"].astype(np.float64)))
        length = np.sqrt(shape[0]) * 8  # the dot's probabilistic bound: 8 sqrt(N)
    slip = (3 * length * types.accumulate.unit_roundoff * terms
            + 4 * abs(float(flat[0])) * types.output.unit_roundoff)
    flat[0] = types.output.numpy(float(flat[0]) + slip)
    assert not verify(op, inputs, expected, result).passed


def test_matmul_bound_is_computed_once_per_input_arrays_and_still_catches_errors():
    import numpy as np

    from cudabench.ops import matmul as module

    op = OPS["matmul"]
    types = op.type_set("float32")
    rng = np.random.default_rng(3)
    inputs = op.inputs((40, 30, 20), types, rng)
    expected = op.reference(inputs)
    module._MAGNITUDES.clear()
    good = expected.astype(np.float32)
    assert op.verify(inputs, expected, good, [], types).passed
    assert len(module._MAGNITUDES) == 1
    bad = good.copy()
    bad[3, 4] += 1e-3 * abs(bad[3, 4]) + 1e-3
    assert not op.verify(inputs, expected, bad, [], types).passed
    assert len(module._MAGNITUDES) == 1  # the same arrays: the bound was reused
    other = {name: array.copy() for name, array in inputs.items()}
    assert op.verify(other, expected, good, [], types).passed
    assert len(module._MAGNITUDES) == 2  # new arrays: computed for them


def test_a_large_draw_depends_on_the_seed_alone_not_on_the_cores(monkeypatch):
    """Large inputs are drawn in chunks on several threads: the same seed gives the same
    values with one thread or three, a new seed other values, and they stay in range."""
    from concurrent.futures import ThreadPoolExecutor

    from cudabench.common import cores
    from cudabench.ops import types

    shape = (3 * types.CHUNK + 17,)
    drawn = []
    for workers in (1, 3):
        monkeypatch.setattr(cores, "_pool", ThreadPoolExecutor(max_workers=workers))
        drawn.append(types.random_floats(np.random.default_rng(5), shape, -1.0, 1.0, FLOAT32.input))
        drawn.append(types.random_ints(np.random.default_rng(5), shape, -7, 7))
    assert np.array_equal(drawn[0], drawn[2]) and np.array_equal(drawn[1], drawn[3])
    other = types.random_floats(np.random.default_rng(6), shape, -1.0, 1.0, FLOAT32.input)
    assert not np.array_equal(drawn[0], other)
    floats, ints = drawn[0], drawn[1]
    assert floats.dtype == np.float32 and -1.0 <= floats.min() and floats.max() <= 1.0
    assert abs(float(floats.mean())) < 0.01 and len(np.unique(floats[:1000])) == 1000
    assert ints.dtype == np.int32 and set(np.unique(ints)) == set(range(-7, 8))
    # Chunks are independent streams, not one stream repeated.
    chunk = types.CHUNK
    assert not np.array_equal(floats[:chunk], floats[chunk:2 * chunk])


def test_random_values_draws_every_type_an_op_declares():
    # the docs showed random_floats(rng, shape, low, high, types.input) alone: an op that
    # took int32 (the default types) raised TypeError from random_ints' other signature
    from cudabench.ops import types

    for name in ("float16", "float32", "float64", "int32"):
        drawn = types.random_values(np.random.default_rng(1), (1000,), -3.5, 3.5,
                                    types.DTYPES[name])
        assert drawn.dtype == np.dtype(name) and drawn.min() >= -3.5 and drawn.max() <= 3.5
        assert len(np.unique(drawn)) > 5  # never all zeros
    ints = types.random_ints(np.random.default_rng(1), (9,), -2, 2, types.DTYPES["int32"])
    assert ints.dtype == np.int32
    with pytest.raises(ValueError, match=r"\[0.1, 0.9\] holds none; widen the bounds"):
        types.random_values(np.random.default_rng(1), (9,), 0.1, 0.9, types.DTYPES["int32"])
    with pytest.raises(ValueError, match="random_floats draws float types, not int32"):
        types.random_floats(np.random.default_rng(1), (9,), -2, 2, types.DTYPES["int32"])
    with pytest.raises(ValueError, match="random_ints draws int32, not float32"):
        types.random_ints(np.random.default_rng(1), (9,), -2, 2, types.DTYPES["float32"])


@pytest.mark.parametrize("shape", [(1, 7), (7, 1), (0, 5), (257, 65), (65, 600), (600, 257)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_the_tiled_transposed_reference_is_a_transposed(shape, dtype):
    from cudabench.ops.transpose import transposed

    a = (np.random.default_rng(2).random(shape) * 1000).astype(dtype)
    out = transposed(a)
    assert out.dtype == a.dtype and out.flags["C_CONTIGUOUS"]
    assert np.array_equal(out, a.T)


def test_a_large_bit_for_bit_check_counts_every_wrong_element_in_any_chunk():
    """Results past one chunk are compared in chunks on several threads: a wrong element
    in the last chunk, NaN poison and a signed zero (equal) are each counted as before."""
    from cudabench.ops.checks import COMPARE_CHUNK, same_bits_check

    expected = np.random.default_rng(3).random(2 * COMPARE_CHUNK + 5).astype(np.float32)
    expected[10] = 0.0
    assert same_bits_check(expected.copy(), expected).passed
    result = expected.copy()
    result[-1] = np.nextafter(result[-1], np.float32(2))  # one ulp, in the last chunk
    result[COMPARE_CHUNK] = np.nan  # an unwritten element
    result[10] = -0.0  # the same value in other bits
    checked = same_bits_check(result, expected)
    assert not checked.passed and checked.bad_elements == 2
    assert checked.total_elements == expected.size


def test_work_handed_to_the_cores_from_the_cores_runs_in_place():
    """A chunked helper called inside another's chunk (a check inside a threaded op) runs
    serially there instead of waiting on the pool it occupies."""
    from cudabench.common.cores import in_parallel, threads

    outer = max(4, 2 * threads())  # more outer chunks than threads: every thread busy
    assert in_parallel(lambda i: sum(in_parallel(lambda j: i * 10 + j, 3)), outer) == [
        30 * i + 3 for i in range(outer)]


def test_a_size_with_an_empty_extent_quotes_the_size():
    # `--size 64x` said "--size '': sizes are positive integers"
    with pytest.raises(UsageError, match=r"--size '64x64x': extent '': sizes are positive "):
        OPS["matmul"].parse_size("64x64x")


def test_the_reference_rows_an_op_may_name_are_those_measure_runs():
    from cudabench.measure.references import REFERENCES
    from cudabench.ops.base import REFERENCE_NAMES

    assert set(REFERENCE_NAMES) == set(REFERENCES)
