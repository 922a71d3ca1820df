"""--rounds: each benchmark's rows measured in alternating rounds, on buffers placed afresh,
and pooled into one row per benchmark (jobs, the spacer, the pooling, the file, the CLI)."""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest
from helpers import invoke

from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.measure.jobs import jobs_of
from cudabench.measure.memory import need
from cudabench.measure.placement import MAX_BYTES, STEP, STEPS, Spacer, spacer_bytes
from cudabench.planning.plan import Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import load_results
from cudabench.results.model import BenchmarkResult, Kind, Status, Verification
from cudabench.results.rounds import pool_all, pooled
from cudabench.results.schema import validate
from cudabench.results.writer import ResultsWriter

QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05", "--no-batch"]


def plan_of(rounds: int, size: str = "64", **fields: object):
    return make_plan(Request(op="transpose", size=size, variants=("naive", "shared"),
                             timing=TimingPolicy(rounds=rounds), **fields))  # type: ignore


def names(jobs) -> list[tuple[int, str]]:
    return [(job.round, job.name) for job in jobs]


def test_one_round_is_the_plain_job_list():
    jobs = jobs_of([plan_of(1)])
    assert names(jobs) == [(0, "naive"), (0, "shared"), (0, "cuBLAS"), (0, "memcpy_dtod")]


def test_rounds_alternate_their_order_within_each_benchmark():
    jobs = jobs_of([plan_of(3), plan_of(2, size="32")])
    forward = ["naive", "shared", "cuBLAS", "memcpy_dtod"]
    assert names(jobs) == (
        [(0, n) for n in forward] + [(1, n) for n in forward[::-1]]
        + [(2, n) for n in forward]
        + [(0, n) for n in forward] + [(1, n) for n in forward[::-1]])
    assert [job.plan_index for job in jobs[-8:]] == [1] * 8


def test_a_search_configuration_is_measured_once():
    plan = dataclasses.replace(plan_of(4), tuning=True)
    assert names(jobs_of([plan])) == [(0, "naive"), (0, "shared")]


@pytest.mark.parametrize("rounds", [0, -1, 101])
def test_rounds_out_of_range_is_a_usage_error(rounds):
    result = invoke("transpose", "--size", "64", "--rounds", str(rounds))
    assert result.exit_code == 2
    assert "--rounds must be 1 to 100" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_rounds_with_best_is_a_usage_error():
    result = invoke("transpose", "--size", "64", "--best", "--rounds", "3")
    assert result.exit_code == 2
    assert "use it without --rounds" in result.stderr


@pytest.mark.parametrize("value, message", [("2.5", "expected a whole number"),
                                            ("0", "--rounds must be 1 to 100")])
def test_a_suite_s_rounds_are_checked(tmp_path, value, message):
    suite = tmp_path / "cudabench.toml"
    suite.write_text(f'[timing]\nrounds = {value}\n\n[[benchmark]]\nop = "dot"\nsize = "1024"\n')
    result = invoke("run", suite, "--dry-run")
    assert result.exit_code == 2
    assert message in result.stderr


def test_each_later_round_holds_a_spacer_of_its_own_size():
    engine = FakeEngine(FakeSpec())
    spacer = Spacer()
    spacer.move(engine, 0)
    assert engine.allocated_bytes == 0  # the first round runs where memory is
    spacer.move(engine, 1)
    first = engine.allocated_bytes
    assert first == spacer_bytes(1, engine.info.memory_bytes) > 0
    spacer.move(engine, 1)  # the same round: the same spacer
    assert engine.allocated_bytes == first
    spacer.move(engine, 2)
    assert engine.allocated_bytes == spacer_bytes(2, engine.info.memory_bytes) != first
    spacer.release(engine)
    assert engine.allocated_bytes == 0


def test_spacer_sizes_differ_for_8_rounds_in_a_row_and_stay_a_small_share_of_memory():
    h100 = 80 * 2**30
    for first in (1, 5, 9):
        sizes = [spacer_bytes(r, h100) for r in range(first, first + STEPS)]
        assert sorted(sizes) == [k * STEP for k in range(1, STEPS + 1)]
    assert spacer_bytes(0, h100) == 0
    assert max(spacer_bytes(r, h100) for r in range(1, 20)) == MAX_BYTES
    small = [spacer_bytes(r, 2**30) for r in range(1, STEPS + 1)]
    assert len(set(small)) == STEPS and max(small) <= 2**30 // 256


def test_the_memory_check_counts_the_spacer():
    plain, rounds = plan_of(1, size="1024"), plan_of(3, size="1024")
    assert need(rounds).device_bytes == need(plain).device_bytes + MAX_BYTES


def test_a_spacer_that_does_not_fit_is_left_out():
    engine = FakeEngine(FakeSpec(memory_bytes=2**20))
    spacer = Spacer()
    spacer.move(engine, 1)  # 4 KiB fits; ask for more than there is
    engine.allocated_bytes = engine.spec.memory_bytes
    spacer.move(engine, 2)  # no error: the round runs without it
    spacer.release(engine)


def row(samples, variant="v", status=Status.PASS, warnings=(), **fields) -> BenchmarkResult:
    passed = status is Status.PASS
    verification = Verification(passed, 0.0 if passed else 1.0, 0.0, 0 if passed else 3, 64,
                                "test")
    return BenchmarkResult(op="dot", variant=variant, params={}, shape=(64,), dims=("N",),
                           dtype="float32", hot=False, samples_s=tuple(samples),
                           verification=verification, warnings=tuple(warnings), **fields)


def test_pooling_keeps_every_round_s_samples_and_each_round_s_median():
    rounds = [row([1.0, 2.0, 3.0]), row([4.0, 5.0]), row([6.0])]
    result = pooled(rounds)
    assert result.samples_s == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert result.round_medians_s == (2.0, 4.5, 6.0)
    assert result.rounds == 3
    assert result.median_s == statistics.median(result.samples_s)
    assert result.status is Status.PASS


def test_a_round_that_failed_is_the_row_shown():
    rounds = [row([1.0]), row([1.1], status=Status.FAIL), row([1.2])]
    result = pooled(rounds)
    assert result.status is Status.FAIL
    assert result.rounds == 3
    assert any("round 2 of 3" in w for w in result.warnings)


def test_a_warning_repeated_with_other_numbers_is_kept_once():
    rounds = [row([1.0], warnings=("median 6.8 us is close", "other")),
              row([1.0], warnings=("median 6.9 us is close", "new"))]
    assert pooled(rounds).warnings == ("median 6.8 us is close", "other", "new")


def test_clocks_are_kept_only_when_every_round_has_them():
    with_clocks = row([1.0, 2.0], sample_clocks_mhz=(1980.0, 1980.0))
    assert pooled([with_clocks, with_clocks]).sample_clocks_mhz == (1980.0,) * 4
    assert pooled([with_clocks, row([3.0])]).sample_clocks_mhz == ()


def test_rows_pool_by_benchmark_kind_and_flush_in_first_seen_order():
    copy = dataclasses.replace(row([9.0], variant="copy"), kind=Kind.REFERENCE,
                               verification=None)
    rows = [row([1.0]), copy, copy, row([2.0]), row([5.0], variant="w")]
    pooled_rows = pool_all(rows)
    assert [(r.variant, r.rounds) for r in pooled_rows] == [("v", 2), ("copy", 2), ("w", 1)]
    assert pooled_rows[1].status is Status.REF


def test_the_writer_replaces_a_row_with_the_row_of_one_more_round(tmp_path):
    writer = ResultsWriter(tmp_path / "r.json", ["dot"])
    a, b = row([1.0]), row([2.0], variant="w")
    for arrived in (a, b, pooled([a, a]), pooled([b, b]), pooled([a, a, a])):
        writer.add(arrived)
    document = json.loads((tmp_path / "r.json").read_text())
    assert [(r["variant"], r["rounds"]) for r in document["benchmarks"]] == [("v", 3), ("w", 2)]
    validate(document)


def test_the_command_pools_each_row_over_its_rounds(use_fake, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("transpose", "--size", "64", "--variant", "naive", "--variant", "shared",
                    "--rounds", "3", "--json", out, "--csv", tmp_path / "r.csv", *QUICK)
    assert result.exit_code == 0, result.stderr
    loaded = load_results(out)
    assert [r.variant for r in loaded.benchmarks] == ["naive", "shared", "cuBLAS",
                                                      "memcpy_dtod"]
    for bench in loaded.benchmarks:
        assert bench.rounds == 3 and len(bench.round_medians_s) == 3
        assert len(bench.samples_s) >= 3 * 5
    validate(json.loads(out.read_text()))
    assert "rounds: each row pools 3 rounds" in result.stdout
    assert "3: ±" in result.stdout  # the rounds column behind the times
    header = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert "rounds" in header


def test_a_wrong_kernel_fails_in_rounds_too(use_fake, tmp_path):
    use_fake(faults={"shared": Fault.WRONG_ELEMENT})
    out = tmp_path / "r.json"
    result = invoke("transpose", "--size", "64", "--variant", "naive", "--variant", "shared",
                    "--rounds", "2", "--json", out, *QUICK)
    assert result.exit_code == 3
    rows = {r.variant: r for r in load_results(out).benchmarks}
    assert rows["shared"].status is Status.FAIL and rows["shared"].rounds == 2
    assert rows["naive"].status is Status.PASS and rows["naive"].rounds == 2


def test_the_python_api_takes_rounds_from_the_timing_policy(use_fake):
    from cudabench.api import run

    results = run("dot", size=4096, variants=None,
                  timing=TimingPolicy(warmup_s=0, min_samples=5, max_time_s=0.05, rounds=2),
                  batch=False)
    assert results.rows and all(r.rounds == 2 for r in results.rows if r.samples_s)
    assert "--rounds" in results.command
