"""The cheaper checks: matmul's randomized check, transposes bit for bit, planted bugs.

Every planted bug must FAIL under the check the pipeline uses at its shape, and under the
full reference too (so that it is a bug, not noise); every correct result must PASS.
docs/verification.md derives the probabilities the bound tests below compute.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cudabench.engines.fake_engine import FakeSpec, Fault
from cudabench.ops import OPS
from cudabench.ops import matmul_check as check
from cudabench.ops.base import check_rng
from cudabench.ops.checks import same_bits_check
from cudabench.ops.matmul_check import Witness
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import Status
from cudabench.runner.pipeline import run_plans

MATMUL = OPS["matmul"]
DTYPES = ("float16", "float32", "float64", "int32")
# Odd shapes (one column block, a ragged second block, K = 1, a row or a column) and one
# above FULL_MAX, where the pipeline itself picks the randomized check.
ODD = [(33, 1, 65), (17, 33, 5), (1, 70, 130), (130, 70, 1), (64, 64, 64), (40, 200, 259)]
RANDOMIZED = (420, 410, 400)
QUICK = TimingPolicy(warmup_s=0.0, min_samples=5, max_samples=20, max_time_s=0.02)


def matmul_case(shape, dtype, seed=0):
    """Return (inputs, types, the exact product in the output type, the witness)."""
    types = MATMUL.type_set(dtype)
    inputs = MATMUL.inputs(shape, types, np.random.default_rng(seed))
    exact = check.exact_product(inputs["A"], inputs["B"])
    witness = check.make_witness(inputs["A"], inputs["B"], check_rng(seed))
    return inputs, types, exact.astype(types.output.numpy), witness


def verdicts(inputs, types, result, witness):
    """Return (randomized, full) verifications of result."""
    randomized = MATMUL.verify(inputs, witness, result, [], types)
    full = MATMUL.verify(inputs, MATMUL.reference(inputs), result, [], types)
    return randomized, full


def correct_results(inputs, types):
    """Yield results a correct kernel may return, in the orders kernels sum in."""
    a, b = inputs["A"], inputs["B"]
    acc, out = types.accumulate.numpy, types.output.numpy
    if not types.accumulate.is_float:
        yield "exact", check.exact_product(a, b).astype(out)
        return
    yield "blas", (a.astype(acc) @ b.astype(acc)).astype(out)
    if a.shape[1] * a.shape[0] * b.shape[1] <= 2**22:
        running = np.zeros((a.shape[0], b.shape[1]), acc)
        for k in range(a.shape[1]):  # the naive kernel's order, one k at a time
            running += np.outer(a[:, k].astype(acc), b[k].astype(acc))
        yield "sequential", running.astype(out)


def planted(exact, other, rng):
    """Yield (name, result) for each planted bug: a copy of exact, spoiled."""
    m, n = exact.shape
    i, j = m // 2, n // 2

    def spoiled(spoil):
        result = exact.copy()
        spoil(result)
        return result

    def wrong_index(result):
        # One element holds another's value (a wrong index), one that differs by a typical
        # element's size at least (a close value is below what the projections promise to
        # see alone: docs/verification.md): the first such in its row or column.
        wide = exact.astype(np.float64)
        typical = np.sqrt(np.mean(wide**2))
        source = [(i, jj) for jj in range(n)] + [(ii, j) for ii in range(m)]
        far = [p for p in source if abs(wide[p] - wide[i, j]) >= typical]
        result[i, j] = exact[far[0] if far else max(
            source, key=lambda p: abs(wide[p] - wide[i, j]))]

    def wrong_row(result):
        result[i] = other[i] if m == 1 else exact[i - 1]

    def last_row(result):
        result[m - 1] = other[m - 1]

    def last_col(result):
        result[:, n - 1] = other[:, n - 1]

    def transposed_tile(result):
        t = min(16, m, n)
        r, c = (m - t) // 2, (n - t) // 2
        result[r:r + t, c:c + t] = exact[r:r + t, c:c + t].T

    def poisoned(result):
        result[i, j] = np.nan if result.dtype.kind == "f" else -(2**31)

    yield "wrong element", spoiled(wrong_index)
    yield "wrong row", spoiled(wrong_row)
    yield "wrong last row", spoiled(last_row)
    yield "wrong last column", spoiled(last_col)
    if min(m, n) > 1:
        yield "transposed tile", spoiled(transposed_tile)
    yield "stale output", other.copy()
    yield "unwritten element", spoiled(poisoned)


# -- matmul: correct results pass --------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [*ODD, RANDOMIZED], ids=lambda s: "x".join(map(str, s)))
def test_correct_matmul_results_pass_the_randomized_check(shape, dtype):
    inputs, types, _, witness = matmul_case(shape, dtype)
    for name, result in correct_results(inputs, types):
        verification = MATMUL.verify(inputs, witness, result, [], types)
        assert verification.passed, (name, verification)
        assert "randomized" in verification.criterion
        assert "elements computed (the errors are over these)" in verification.criterion
        assert verification.total_elements == result.size


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ODD, ids=lambda s: "x".join(map(str, s)))
def test_correct_matmul_results_pass_the_full_check(shape, dtype):
    # float16 at 33x1x65: products near zero round into float16's subnormals, where the
    # output's rounding error is absolute (eta), not relative: the bound must say so.
    inputs, types, _, _ = matmul_case(shape, dtype)
    expected = MATMUL.expected(inputs, types, check_rng(0))
    assert isinstance(expected, np.ndarray)  # small: the pipeline uses the full reference
    for name, result in correct_results(inputs, types):
        verification = MATMUL.verify(inputs, expected, result, [], types)
        assert verification.passed, (name, verification)


@pytest.mark.parametrize("dtype", DTYPES)
def test_correct_matmul_results_pass_at_the_default_size(dtype):
    shape = MATMUL.parse_size(MATMUL.default_size)
    types = MATMUL.type_set(dtype)
    inputs = MATMUL.inputs(shape, types, np.random.default_rng(0))
    expected = MATMUL.expected(inputs, types, check_rng(0))
    assert isinstance(expected, Witness)  # the pipeline's choice at 1000^3
    for name, result in correct_results(inputs, types):
        verification = MATMUL.verify(inputs, expected, result, [], types)
        assert verification.passed, (name, verification)


def test_the_pipeline_picks_the_check_by_size_and_full_check():
    types = MATMUL.type_set("float32")
    for shape, randomized in (((400, 400, 400), False), (RANDOMIZED, True),
                              ((2000, 16, 2100), False), ((8, 4096, 2100), True)):
        inputs = MATMUL.inputs(shape, types, np.random.default_rng(0))
        assert isinstance(MATMUL.expected(inputs, types, check_rng(0)), Witness) is randomized
        full = MATMUL.expected(inputs, types, check_rng(0), full=True)
        assert isinstance(full, np.ndarray) and full.shape == (shape[0], shape[2])


# -- matmul: planted bugs fail -----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [*ODD, RANDOMIZED], ids=lambda s: "x".join(map(str, s)))
def test_planted_matmul_bugs_fail_the_randomized_check(shape, dtype):
    inputs, types, exact, witness = matmul_case(shape, dtype)
    other = matmul_case(shape, dtype, seed=1)[2]  # the previous run's result
    for name, result in planted(exact, other, np.random.default_rng(2)):
        randomized, full = verdicts(inputs, types, result, witness)
        assert not full.passed, (name, "not a bug: the full check passes it")
        assert not randomized.passed, (name, randomized)
        assert 1 <= randomized.bad_elements <= full.bad_elements, name
        if name == "unwritten element" and result.dtype.kind == "f":  # NaN poison
            # inf, as the results file reads it back: the run's CSV said nan, its file's inf
            assert randomized.max_abs_error == full.max_abs_error == math.inf, name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [*ODD, RANDOMIZED], ids=lambda s: "x".join(map(str, s)))
def test_a_k_loop_one_short_fails(shape, dtype):
    # tests/gpu's short_k kernel: every element misses its last product.
    inputs, types, _, witness = matmul_case(shape, dtype)
    a, b = inputs["A"], inputs["B"]
    short = check.exact_product(a[:, :-1], b[:-1]) if shape[1] > 1 else np.zeros(
        (shape[0], shape[2]))
    randomized, full = verdicts(inputs, types, short.astype(types.output.numpy), witness)
    assert not full.passed and not randomized.passed, randomized


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(40, 200, 259), RANDOMIZED],
                         ids=lambda s: "x".join(map(str, s)))
def test_an_element_off_by_the_guaranteed_margin_fails_anywhere(shape, dtype):
    # Off by rho tau with rho^-VECTORS <= 1e-9: missed with probability below 1e-9, at a
    # position no sample covers (the positions the witness computes are avoided).
    inputs, types, exact, witness = matmul_case(shape, dtype)
    floor = check.detection_floor(exact, witness, types)
    rho = 1e9 ** (1 / check.VECTORS)
    sampled = set(zip(witness.rows.tolist(), witness.cols.tolist()))
    rng = np.random.default_rng(7)
    tried = 0
    while tried < 12:
        i, j = int(rng.integers(exact.shape[0])), int(rng.integers(exact.shape[1]))
        if (i, j) in sampled:
            continue
        tried += 1
        result = exact.astype(np.float64)
        result[i, j] += rho * floor[i, j // witness.block] * (1 if tried % 2 else -1)
        result = result.astype(types.output.numpy)
        randomized, full = verdicts(inputs, types, result, witness)
        assert not full.passed
        assert not randomized.passed and randomized.bad_elements == 1, (i, j)


@pytest.mark.parametrize("bits", [0, 17, 30])
def test_an_int32_error_of_any_size_fails(bits):
    # The int32 projections are exact modulo 2^64: a difference of 2^30 misses one vector
    # with probability 2^-34 at most, and both with 2^-68.
    inputs, types, exact, witness = matmul_case((90, 70, 300), "int32")
    result = exact.copy()
    result[45, 150] += np.int32(1 << bits)
    sampled = set(zip(witness.rows.tolist(), witness.cols.tolist()))
    assert (45, 150) not in sampled
    verification = MATMUL.verify(inputs, witness, result, [], types)
    assert not verification.passed and verification.bad_elements == 1


def test_the_sampled_check_catches_a_small_error_on_a_border():
    # Far below what the projections see, but a border element is always computed.
    inputs, types, exact, witness = matmul_case((200, 300, 256), "float16")
    floor = check.detection_floor(exact, witness, types)
    a, b = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    bound, _ = check.element_bound(a[-1] @ b[:, -1], np.abs(a[-1]) @ np.abs(b[:, -1]), 300,
                                   types)
    result = exact.copy()
    result[-1, -1] = np.float16(float(result[-1, -1]) + 3 * bound + 3 * abs(result[-1, -1])
                                * types.output.unit_roundoff)
    assert abs(float(result[-1, -1]) - float(exact[-1, -1])) < floor[-1, -1] / 4
    randomized, full = verdicts(inputs, types, result, witness)
    assert not full.passed and not randomized.passed and randomized.bad_elements == 1


def test_a_noisy_correct_result_never_fails_more_than_the_full_check():
    # Every element within the full check's bound, but far noisier than any real kernel:
    # many blocks are flagged, their elements (and then all) are computed, and it passes.
    inputs, types, exact, witness = matmul_case((260, 260, 260), "float32")
    a, b = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    bound, _ = check.element_bound(a @ b, np.abs(a) @ np.abs(b), 260, types)
    signs = np.random.default_rng(3).choice([-1.0, 1.0], size=exact.shape)
    result = (a @ b + 0.9 * bound * signs).astype(np.float32)
    randomized, full = verdicts(inputs, types, result, witness)
    assert full.passed and randomized.passed, randomized
    assert "randomized" not in randomized.criterion  # the full check decided
    few = (a @ b).astype(np.float32)
    few[::37, ::41] = (a @ b + 0.5 * bound * signs)[::37, ::41]
    randomized = MATMUL.verify(inputs, witness, few, [], types)
    assert randomized.passed and "randomized" in randomized.criterion


def test_the_witness_draws_from_its_own_stream():
    inputs, _, _, witness = matmul_case((300, 300, 300), "float32")
    again = check.make_witness(inputs["A"], inputs["B"], check_rng(0))
    np.testing.assert_array_equal(witness.vectors, again.vectors)
    assert not np.array_equal(witness.vectors,
                              check.make_witness(inputs["A"], inputs["B"],
                                                 check_rng(1)).vectors)
    first = np.random.default_rng(0).random(8)
    assert not np.isin(first, check_rng(0).random(64)).any()


# -- the probability at the shapes of tests/ ---------------------------------------------

# Every matmul shape tests/ verifies (edge and large shapes, those of test_ops.py, the
# pipeline's and this file's), and the default.
TEST_SHAPES = sorted({*MATMUL.edge_shapes(), *MATMUL.large_shapes(), *ODD, RANDOMIZED,
                      (40, 40, 40), (24, 1000, 20), (24, 1024, 20), (24, 70, 20),
                      (16, 4096, 16), (9, 1000, 13), (8, 64, 8), (40, 30, 20),
                      (5, 7, 3), (40, 1 << 14, 3), (2, 1, 2), (2, 1000, 2)})


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_wrong_element_escapes_with_probability_below_1e9_at_the_test_shapes(dtype):
    # A wrong element: off by at least the root mean square of the product's elements
    # (a wrong index, a stale value, garbage). It escapes the projections with probability
    # at most (tau / d)^VECTORS for its block's tau, whatever else the result holds.
    worst = 0.0
    for shape in TEST_SHAPES:
        if math.prod(shape) > 2**31:
            continue  # 1024^3 and above: measured by benchmarks, not in CPU tests
        inputs, types, exact, witness = matmul_case(shape, dtype)
        typical = float(np.sqrt(np.mean(exact.astype(np.float64) ** 2)))
        escape = float(np.max(check.detection_floor(exact, witness, types)) / typical)
        worst = max(worst, escape ** check.VECTORS)
        assert escape ** check.VECTORS < 1e-9, (shape, escape)
    assert worst > 0


def test_an_int32_difference_of_the_largest_power_of_two_fails():
    # Exact modulo 2^64: a difference d (|d| < 2^32, so 2^31 at most divides it) escapes
    # one uniform 64-bit vector with probability 2^(31 - 64) at most.
    inputs, types, exact, witness = matmul_case((90, 70, 300), "int32")
    value = int(exact[45, 150])
    result = exact.copy()
    result[45, 150] = value - 2**31 if value >= 0 else value + 2**31
    verification = MATMUL.verify(inputs, witness, result, [], types)
    assert not verification.passed and verification.bad_elements == 1
    assert 2.0 ** ((31 - 64) * check.INT_VECTORS) < 1e-9


def test_the_sample_alone_catches_a_spread_error_with_probability_1e9():
    assert (1 - 0.01) ** check.SAMPLE < 1e-9


# -- transposes: bit for bit in their own type -------------------------------------------


TRANSPOSES = [("transpose", (33, 65)), ("transpose", (1, 7)), ("transpose_inplace", (33,)),
              ("transpose", (200, 130))]


def transpose_case(op_name, shape, dtype, seed=0):
    op = OPS[op_name]
    types = op.type_set(dtype)
    inputs = op.inputs(shape, types, np.random.default_rng(seed))
    return op, inputs, types, op.reference(inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("op_name", "shape"), TRANSPOSES)
def test_planted_transpose_bugs_fail(op_name, shape, dtype):
    op, inputs, types, expected = transpose_case(op_name, shape, dtype)
    other = transpose_case(op_name, shape, dtype, seed=1)[3]
    correct = op.verify(inputs, expected, expected.copy(), [], types)
    assert correct.passed and correct.max_abs_error == 0 and correct.rel_error == 0
    bugs = dict(planted(expected, other, np.random.default_rng(2)))
    one_ulp = expected.copy()
    flat = one_ulp.reshape(-1)
    middle = flat.size // 2
    flat[middle] = (flat[middle] + 1 if flat.dtype.kind == "i"
                    else np.nextafter(flat[middle], flat.dtype.type(np.inf)))
    bugs["one ulp"] = one_ulp
    if expected.shape[0] == expected.shape[1]:
        bugs["not transposed"] = inputs["A"].copy()
    for name, result in bugs.items():
        verification = op.verify(inputs, expected, result, [], types)
        assert not verification.passed, name
        assert verification.bad_elements == int(np.count_nonzero(
            ~((result == expected) | (result.view(f"u{result.itemsize}")
                                      == expected.view(f"u{expected.itemsize}"))))), name


def test_the_bit_check_counts_signed_zeros_as_equal_and_nan_as_wrong():
    expected = np.array([[0.0, 1.5], [-2.0, 3.0]], np.float32)
    result = expected.copy()
    result[0, 0] = -0.0
    assert same_bits_check(result, expected).passed
    result[1, 1] = np.nan
    verification = same_bits_check(result, expected)
    assert not verification.passed and verification.bad_elements == 1
    # inf, as its results file reads it back (null): a run's CSV said nan, the file's inf
    assert verification.max_abs_error == math.inf


# -- dot: the float64 sum and its bound, as before ---------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_stale_dot_result_fails(dtype):
    op = OPS["dot"]
    types = op.type_set(dtype)
    inputs = op.inputs((1000,), types, np.random.default_rng(0))
    previous = op.reference(op.inputs((1000,), types, np.random.default_rng(1)))
    assert op.verify(inputs, op.reference(inputs),
                     op.reference(inputs).astype(types.output.numpy), [], types).passed
    assert not op.verify(inputs, op.reference(inputs),
                         previous.astype(types.output.numpy), [], types).passed


# -- the pipeline: the recheck's replay trap and --full-check ----------------------------


def plan(op, size, dtype="float32", **fields):
    return make_plan(Request(op=op, size=size, dtype=dtype, timing=QUICK,
                             insight=Insight(vendor=False, batch=False), **fields))


@pytest.mark.parametrize(("op", "size", "dtype"), [
    ("matmul", "410", "float32"), ("matmul", "410", "int32"), ("matmul", "410", "float16"),
    ("transpose", "300x200", "float32"), ("transpose_inplace", "129", "int32"),
    ("dot", "100000", "float32")])
@pytest.mark.parametrize("fault", [Fault.REPLAYS, Fault.WRONG_ELEMENT])
def test_a_replayed_or_wrong_result_fails_in_the_pipeline(op, size, dtype, fault):
    chosen = plan(op, size, dtype)
    # the last variant the fake engine runs (the TMA rungs are SKIP there: no tensor maps)
    name = [v.variant.name for v in chosen.variants if not v.variant.tensor_maps][-1]
    outcome = run_plans([chosen], FakeSpec(faults={name: fault}))
    rows = {r.variant: r for r in outcome.results}
    assert rows[name].status is Status.FAIL, rows[name]
    if fault is Fault.REPLAYS:
        assert "a replayed result" in (rows[name].error or "")
    others = [r for r in outcome.results if r.variant != name]
    assert others and all(r.status in (Status.PASS, Status.REF, Status.SUSPECT)  # fake times
                          or (r.status is Status.SKIP and "tensor" in (r.skipped or ""))
                          for r in others)
    if op == "matmul":
        assert "randomized" in rows[name].verification.criterion


def test_full_check_uses_the_full_reference_in_the_pipeline():
    plain, full = plan("matmul", "410"), plan("matmul", "410", full_check=True)
    assert not plain.full_check and full.full_check
    for chosen, randomized in ((plain, True), (full, False)):
        outcome = run_plans([chosen], FakeSpec())
        for row in outcome.results:
            assert row.status in (Status.PASS, Status.REF, Status.SUSPECT), row  # fake times
            if row.verification is not None and row.verification.total_elements:
                assert ("randomized" in row.verification.criterion) is randomized


def test_transfers_time_the_full_reference_against_the_gpus_trip():
    from cudabench.measure.jobs import prepare

    assert isinstance(prepare(plan("matmul", "410")).expected, Witness)
    timed = make_plan(Request(op="matmul", size="410", timing=QUICK,
                              insight=Insight(vendor=False, batch=False, transfers=True)))
    assert isinstance(prepare(timed).expected, np.ndarray)


def test_full_check_is_a_flag_of_the_commands_and_a_suite_key(tmp_path):
    from cudabench.cli.options import build_requests
    from cudabench.cli.suite import load_suite
    from helpers import invoke

    for words in (["matmul"], ["transpose"], ["dot"], ["run"]):
        assert "--full-check" in invoke(*words, "--help").stdout, words

    options = dict(size="260", dtype="float32", variants=(), params=(), seed=0, hot=False,
                   warmup=0.0, min_samples=5, max_samples=10, precision=0.005, max_time=0.1,
                   timeout=10.0, compile_timeout=10.0, kernels_dirs=())
    assert not build_requests("matmul", {}, **options)[0].full_check
    assert build_requests("matmul", {}, **options, full_check=True)[0].full_check
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\nsize = "260"\nfull_check = true\n'
                     '[[benchmark]]\nop = "dot"\n')
    assert [r.full_check for r in load_suite(suite, ())] == [True, False]
    suite.write_text('[[benchmark]]\nop = "matmul"\nfull_check = "yes"\n')
    with pytest.raises(Exception, match="full_check: expected true or false"):
        load_suite(suite, ())
