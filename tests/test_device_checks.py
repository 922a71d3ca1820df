"""Checks compared on the GPU (measure/device_checks.py): the count kernel's rule, and that a
run verified there gives every verdict, error and figure the CPU's check gives, planted
bugs included, without downloading a passing result."""

from __future__ import annotations

import numpy as np
import pytest

from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.engines.utility_kernels import differ_mask
from cudabench.measure import resident
from cudabench.measure.jobs import jobs_of
from cudabench.ops.checks import bits_differ, same_bits_check
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import Status
from cudabench.results.model import Verification
from cudabench.runner.execute import run_jobs

QUICK = TimingPolicy(warmup_s=0.0, min_samples=5, max_samples=5, max_time_s=0.05)
# Above resident.MIN_BYTES (1 MiB) in float32, so results and inputs are compared on the GPU.
LARGE = {"transpose": "600x520", "transpose_inplace": "600"}


class CountingEngine(FakeEngine):
    """A fake engine that records the size of every download."""

    def __init__(self, spec: FakeSpec) -> None:
        super().__init__(spec)
        self.downloaded: list[int] = []

    def download(self, buffer, shape, dtype):  # type: ignore[no-untyped-def]
        array = super().download(buffer, shape, dtype)
        self.downloaded.append(array.nbytes)
        return array


def run(op: str, faults: dict[str, Fault] | None = None, dtype: str = "float32"):
    plan = make_plan(Request(op=op, size=LARGE[op], dtype=dtype, timing=QUICK,
                             insight=Insight(vendor=False, batch=False)))
    engine = CountingEngine(FakeSpec(seed=3, faults=faults or {}))
    results = run_jobs([plan], jobs_of([plan]), engine)
    return {r.variant: r for r in results}, engine


# -- the count kernel's rule -------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_the_count_is_the_cpu_checks_count(dtype):
    rng = np.random.default_rng(0)
    expected = (rng.standard_normal(5000) * 100).astype(dtype)
    result = expected.copy()
    result[[0, 17, 4999]] += np.asarray(1, dtype=dtype)  # three wrong elements
    if expected.dtype.kind == "f":
        expected[100], result[100] = 0.0, -0.0  # equal as floats, not in their bits
        result[200] = np.nan  # the poison, never equal
    engine = FakeEngine(FakeSpec())
    a = engine.allocate(expected.nbytes)
    b = engine.allocate(expected.nbytes)
    engine.upload(a, result)
    engine.upload(b, expected)
    floating = expected.dtype.kind == "f"
    # Floats: 3 wrong and the NaN as values; the -0 too in the bits alone.
    as_values = engine.count_differing(a, b, expected.size, expected.itemsize, floating)
    assert as_values == same_bits_check(result, expected).bad_elements == (4 if floating else 3)
    in_bits = engine.count_differing(a, b, expected.size, expected.itemsize, False)
    assert in_bits == bits_differ(result, expected) == (5 if floating else 3)


def test_widths_without_a_kernel_are_left_to_the_cpu():
    engine = FakeEngine(FakeSpec())
    a = engine.allocate(64)
    assert engine.count_differing(a, a, 64, 1, False) is None
    assert engine.count_differing(a, a, 4, 16, False) is None


@pytest.mark.parametrize(("itemsize", "mask"), [(2, 0x7FFF), (4, 0x7FFFFFFF),
                                                (8, 0x7FFFFFFFFFFFFFFF)])
def test_the_mask_leaves_out_the_sign_bit_only_for_floats(itemsize, mask):
    assert differ_mask(itemsize, True) == mask
    assert differ_mask(itemsize, False) == 2 * mask + 1


# -- a run compared on the GPU -----------------------------------------------------------

@pytest.mark.parametrize("op", ["transpose", "transpose_inplace"])
def test_a_passing_result_is_never_downloaded(op):
    rows, engine = run(op)
    # (SUSPECT: the fake's synthetic times may beat its roofs; the row is verified)
    assert all(r.verification.passed for r in rows.values() if r.kind.value == "variant")
    assert not any(r.status is Status.FAIL or r.error for r in rows.values())
    result_bytes = 600 * (520 if op == "transpose" else 600) * 4
    assert max(engine.downloaded) < result_bytes  # guard zones and clock stamps only
    # checked launch, 3 rechecks (and for transpose its read-only input) per variant
    compares = [count for kind, count in engine.log if kind == "compare"]
    assert len(compares) == sum(r.kind.value == "variant" for r in rows.values()) * (
        5 if op == "transpose" else 4)


CHEATS = [Fault.WRONG_ELEMENT, Fault.UNWRITTEN_ELEMENT, Fault.REPLAYS,
          Fault.FIRST_LAUNCHES_ONLY]


# (an in-place op's input is its result: it has no read-only input to change)
@pytest.mark.parametrize(("op", "fault"), [
    *((op, fault) for op in ("transpose", "transpose_inplace") for fault in CHEATS),
    ("transpose", Fault.CHANGES_INPUTS)])
def test_planted_bugs_give_the_cpu_checks_verdict_and_report(op, fault, monkeypatch):
    bad = "shared" if op == "transpose" else "tiled"
    on_gpu, engine = run(op, {bad: fault})
    assert any(kind == "compare" for kind, _ in engine.log)
    monkeypatch.setattr(resident, "MIN_BYTES", 1 << 62)  # nothing kept: the CPU checks all
    on_cpu, cpu_engine = run(op, {bad: fault})
    assert not any(kind == "compare" for kind, _ in cpu_engine.log)
    assert on_gpu[bad].status is Status.FAIL
    for name, row in on_gpu.items():
        other = on_cpu[name]
        # repr: a poisoned element's error figures are NaN, which equal nothing
        assert (row.status, row.error, repr(row.verification)) == (
            other.status, other.error, repr(other.verification)), name
    if fault is Fault.WRONG_ELEMENT:
        assert on_gpu[bad].verification.bad_elements == 1


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_every_type_passes_on_the_gpu_and_fails_there_too(dtype):
    rows, _ = run("transpose", {"shared": Fault.WRONG_ELEMENT}, dtype=dtype)
    assert rows["shared"].status is Status.FAIL
    assert rows["naive"].status is Status.PASS
    assert rows["naive"].verification == Verification(True, 0.0, 0.0, 0, 600 * 520, "exact")


def test_a_full_gpu_lets_the_resident_copies_go_before_a_row_fails():
    # 600x520 float32: 1.25 MB an array. The copies kept for refills and the GPU's
    # comparisons (the inputs and the expected results of both input sets: 5 MB) would
    # leave too little of 8 MB for a variant's buffers and the recheck's second set.
    plan = make_plan(Request(op="transpose", size=LARGE["transpose"], timing=QUICK,
                             variants=("naive", "shared"),
                             insight=Insight(vendor=False, batch=False)))
    engine = CountingEngine(FakeSpec(seed=3, memory_bytes=8 << 20))
    rows = {r.variant: r for r in run_jobs([plan], jobs_of([plan]), engine)}
    for name in ("naive", "shared"):
        assert rows[name].error is None and rows[name].verification.passed, rows[name].error
