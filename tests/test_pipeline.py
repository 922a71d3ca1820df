"""The whole pipeline on the fake engine: plan, verify, time, results file, tables, compare.

Every op and dtype runs end to end without a GPU, and the fake engine's injected faults
(a wrong element, an unwritten element, a kernel fault, out of memory, a slowdown) must
each show up where a user would see them: the row, the exit code, the file, the verdict.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cudabench.catalog import discover
from cudabench.cli import cli
from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.measure.jobs import jobs_of
from cudabench.ops import OPS
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import Kind, Status, load_results
from cudabench.results.schema import validate
from cudabench.results.writer import ResultsWriter
from cudabench.runner.execute import run_jobs
from cudabench.runner.pipeline import run_plans

QUICK = TimingPolicy(warmup_s=0.0, min_samples=5, max_samples=60, max_time_s=0.05)
QUICK_FLAGS = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05", "--no-vendor",
               "--no-batch"]


def size_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def takes(op: str, dtype: str = "float32") -> list[str]:
    """Return the built-in variants of op that take dtype, sorted (the tensor-core matmul
    rungs take float16 only: at another type they are SKIP rows)."""
    return sorted(name for name, v in discover()[op].items() if dtype in v.dtypes)


# The matmul ladder rungs a float32 run that names no variant has beside naive, tiled and
# tiled_conflict (blocktile2d, vectorized and prefetch_splitk are `run: on request`), all
# passing.
LADDER = {"async_double_buffer": Status.PASS, "fragment_double_buffer": Status.PASS,
          "warptile": Status.PASS}


def ran(rows) -> dict:
    """Return {variant: status} of the rows, less the SKIP rows of variants left out."""
    return {r.variant: r.status for r in rows if r.status is not Status.SKIP}


def expected_skip(variant, dtype: str, shape: tuple[int, ...]) -> bool:
    """Return whether a variant is a SKIP row here: it does not take the type, or its TMA
    maps need rows 16 bytes apart (matmul's A is M x K, B is K x N)."""
    itemsize = {"float16": 2, "float64": 8}.get(dtype, 4)
    return dtype not in variant.dtypes or (bool(variant.tensor_maps)
                                           and any(e * itemsize % 16 for e in shape[1:]))


def plan_for(op: str, shape: tuple[int, ...], dtype: str = "float32", hot: bool = False,
             **fields):
    """Return a plan; without vendor rows and batches unless insight= says otherwise."""
    fields.setdefault("insight", Insight(vendor=False, batch=False))
    return make_plan(Request(op=op, size=size_text(shape), dtype=dtype, timing=QUICK, hot=hot,
                             **fields))


def command(op: str) -> list[str]:
    """Return the CLI words that run op."""
    return ["transpose", "--inplace"] if op == "transpose_inplace" else [op]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


# -- every op and dtype, end to end ------------------------------------------------------

CASES = [pytest.param(op, dtype, shape, id=f"{op}-{dtype}-{size_text(shape)}")
         for op in OPS for dtype in OPS[op].dtypes for shape in OPS[op].edge_shapes()]


@pytest.mark.parametrize(("op", "dtype", "shape"), CASES)
def test_every_variant_passes_on_the_fake_engine(op, dtype, shape):
    # --variant all: those run on request too
    outcome = run_plans([plan_for(op, shape, dtype, insight=Insight(), variants=("all",))],
                        FakeSpec(seed=1))
    by_name = {r.variant: r for r in outcome.results}
    catalog = discover()[op]
    takes = {name for name, variant in catalog.items() if dtype in variant.dtypes}
    assert {n for n, r in by_name.items() if r.kind is Kind.VARIANT} == takes
    assert {n for n, r in by_name.items() if r.kind is Kind.REFERENCE} == set(OPS[op].references)
    vendor = OPS[op].vendor(OPS[op].type_set(dtype))
    assert {n for n, r in by_name.items() if r.kind is Kind.VENDOR} == {"cuBLAS"}
    for result in outcome.results:
        expected = {Kind.VARIANT: Status.PASS, Kind.REFERENCE: Status.REF,
                    Kind.VENDOR: Status.SKIP if isinstance(vendor, str) else Status.PASS}
        if result.kind is Kind.VARIANT and expected_skip(catalog[result.variant], dtype, shape):
            assert result.status is Status.SKIP and result.skipped, result.variant
            continue
        assert result.status is expected[result.kind], (result.variant, result.verification,
                                                        result.error)
        if result.status is Status.SKIP:
            assert result.skipped == vendor and not result.samples_s
            continue
        assert len(result.samples_s) >= 5 and min(result.samples_s) > 0
        assert result.batch_samples_s and max(result.batch_samples_s) < result.median_s
        assert result.device is not None and result.device.uuid
    assert outcome.exit_code == 0


@pytest.mark.parametrize("op", list(OPS))
def test_the_command_writes_tables_and_a_valid_file(use_fake, tmp_path, op):
    json_path, markdown = tmp_path / "r.json", tmp_path / "r.md"
    done = invoke(*command(op), "--size", "40", "--json", str(json_path),
                  "--markdown", str(markdown), *QUICK_FLAGS)
    assert done.exit_code == 0, done.output
    validate(json.loads(json_path.read_text()))  # the shipped JSON Schema
    loaded = load_results(json_path)
    assert loaded.metadata["complete"] is True and loaded.metadata["tool"]["engine"] == "fake"
    assert [d.name for d in loaded.devices] == ["cudabench fake GPU"]
    names = [b.variant for b in loaded.benchmarks]
    for name in names:
        assert name in done.stdout and f"| {name} |" in markdown.read_text()
    if OPS[op].references:
        assert "% of memcpy_dtod" in done.stdout  # the column comes from the reference row


# -- injected faults ---------------------------------------------------------------------

@pytest.mark.parametrize("op", ["matmul", "transpose", "dot"])
@pytest.mark.parametrize("fault", [Fault.WRONG_ELEMENT, Fault.UNWRITTEN_ELEMENT])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_a_wrong_or_unwritten_element_fails_and_only_that_variant(op, fault, dtype):
    # UNWRITTEN_ELEMENT writes the element during warm-up and skips it later, so only the
    # poison put into the output before the checked launch can reveal it.
    bad = takes(op, dtype)[-1]
    plan = plan_for(op, OPS[op].edge_shapes()[1], dtype)
    outcome = run_plans([plan], FakeSpec(faults={bad: fault}))
    statuses = ran(outcome.results)
    assert statuses.pop(bad) is Status.FAIL
    assert set(statuses.values()) <= {Status.PASS, Status.REF}
    failed = next(r for r in outcome.results if r.variant == bad)
    assert failed.verification is not None and failed.verification.bad_elements == 1
    assert outcome.exit_code == 3


@pytest.mark.parametrize("op", ["matmul", "transpose", "dot"])
def test_a_kernel_that_writes_its_read_only_inputs_fails(op):
    name = takes(op)[0]
    plan = plan_for(op, OPS[op].edge_shapes()[1])
    outcome = run_plans([plan], FakeSpec(faults={name: Fault.CHANGES_INPUTS}))
    bad = next(r for r in outcome.results if r.variant == name)
    assert bad.status is Status.FAIL and "element(s) of its input" in (bad.error or "")
    assert {s for n, s in ran(outcome.results).items() if n != name} <= {Status.PASS,
                                                                         Status.REF}


@pytest.mark.parametrize("op", list(OPS))
def test_the_checked_launch_gets_fresh_inputs_after_the_warm_up(op):
    # An in-place kernel changes its input on every warm-up run: the checked launch must
    # start from the inputs again, so each input is uploaded between the two.
    plans = [plan_for(op, OPS[op].edge_shapes()[1])]
    engine = FakeEngine(FakeSpec())
    run_jobs(plans, jobs_of(plans)[:1], engine)
    events = [kind for kind, _ in engine.log if kind in ("upload", "run", "flush")]
    checked = events.index("flush") - 1  # the run just before the first timed sample
    assert events[checked] == "run"
    last_warm_up = max(i for i in range(checked) if events[i] == "run")
    inputs = OPS[op].inputs(plans[0].shape, plans[0].types, np.random.default_rng(0))
    assert events[last_warm_up + 1:checked].count("upload") == len(inputs)


@pytest.mark.parametrize(("fault", "says"), [
    (Fault.WRITES_PAST_END, "element(s) past the end of"),
    (Fault.WRITES_BEFORE_START, "1 element(s) before the start of"),
])
@pytest.mark.parametrize("op", ["matmul", "transpose", "transpose_inplace", "dot"])
def test_a_write_outside_the_output_fails_with_the_guard_message(op, fault, says):
    name = takes(op)[0]
    plan = plan_for(op, (33,) * len(OPS[op].dims))
    outcome = run_plans([plan], FakeSpec(faults={name: fault}))
    bad = next(r for r in outcome.results if r.variant == name)
    assert bad.status is Status.FAIL, bad
    assert f"{says} {OPS[op].result_buffer}" in (bad.error or "")
    if fault is Fault.WRITES_PAST_END and op == "matmul":
        assert "wrote 33 element(s) past the end of C" in bad.error  # one row of C


def test_a_faulting_kernel_is_fail_and_the_rest_run_in_a_fresh_process(use_fake, tmp_path):
    use_fake(faults={"naive": Fault.FAULT})
    json_path, summary = tmp_path / "r.json", tmp_path / "r.md"
    done = invoke("matmul", "--size", "33", "--json", str(json_path), "--markdown",
                  str(summary), *QUICK_FLAGS)
    assert done.exit_code == 3, done.output
    # a CI job summary says why the row failed, under the tables, as the HTML page does
    said = summary.read_text()
    assert "\n### Diagnostics\n" in said and "\n- FAIL: matmul/naive: " in said
    assert "faulted" in said[said.index("- FAIL: matmul/naive"):]
    assert "faulted" in done.stderr and "fresh process" in done.stderr
    # the README's way to name the access, not a bare compute-sanitizer line
    assert "--sanitize memcheck names the bad access" in " ".join(done.stderr.split())
    assert "seen in the warm-up" in done.stderr  # the step where the fault surfaced
    # FAIL, as its check column and exit 3 say, and the OOM row's `error:` does not
    assert "FAIL: matmul/naive: " in done.stderr and "error: matmul" not in done.stderr
    statuses = ran(load_results(json_path).benchmarks)
    assert statuses == {"naive": Status.FAIL, "tiled": Status.PASS,
                        "tiled_conflict": Status.PASS, **LADDER}


def test_out_of_memory_is_an_error_row_and_exit_2(use_fake, tmp_path):
    use_fake(faults={"shared": Fault.OUT_OF_MEMORY})
    done = invoke("transpose", "--size", "40", *QUICK_FLAGS)
    assert done.exit_code == 2, done.output
    assert "out of GPU memory" in done.stderr and "Traceback" not in done.output
    assert "shared_padded" in done.stdout and "ERROR" in done.stdout


def test_a_size_too_large_for_the_device_memory_is_an_error_row():
    outcome = run_plans([plan_for("matmul", (64, 64, 64))], FakeSpec(memory_bytes=1000))
    assert set(ran(outcome.results).values()) == {Status.ERROR}
    assert all("out of GPU memory" in (r.error or "") for r in outcome.results
               if r.status is Status.ERROR)


# -- what the measurement must do ---------------------------------------------------------

@pytest.mark.parametrize(("hot", "method"), [(False, "clean"), (False, "memset"), (True, "clean")])
def test_the_l2_is_flushed_before_every_cold_sample_and_never_when_hot(hot, method):
    plans = [plan_for("transpose", (40, 40), hot=hot, l2_flush=method)]
    engine = FakeEngine(FakeSpec())
    results = run_jobs(plans, jobs_of(plans), engine)
    events = [kind for kind, _ in engine.log if kind in ("flush", "sample")]
    # The method asked for, and each row says which it was ("" where none ran: --hot).
    assert {detail for kind, detail in engine.log if kind == "flush"} <= {method}
    assert {r.l2_flush for r in results} == {"" if hot else method}
    # Every stored sample, those on zeros, and each variant's timed recheck launch went
    # through time_once.
    rechecks = sum(r.kind is Kind.VARIANT for r in results)
    samples = sum(len(r.samples_s) + len(r.zero_input_samples_s) for r in results) + rechecks
    assert events.count("sample") == samples > rechecks
    if hot:
        assert "flush" not in events
    else:
        assert events == ["flush", "sample"] * samples  # each sample right after a flush


def test_every_sample_measured_is_in_the_results_file(tmp_path):
    plans = [plan_for("dot", (1000,)), plan_for("matmul", (17, 33, 5))]
    engine = FakeEngine(FakeSpec(seed=7))
    writer = ResultsWriter(tmp_path / "r.json", argv=[])
    writer.start(engine.versions)
    for result in run_jobs(plans, jobs_of(plans), engine, on_result=writer.add):
        assert result.samples_s
    writer.write(complete=True)
    measured = [value for kind, value in engine.log if kind == "sample"]
    loaded = load_results(tmp_path / "r.json").benchmarks
    # The log holds each row's samples in order, each variant's followed by its samples on
    # zeros and its timed recheck launch: every measured sample is in the file, in its row.
    at = 0
    for row in loaded:
        assert list(row.samples_s) == measured[at:at + len(row.samples_s)]
        at += len(row.samples_s)
        assert list(row.zero_input_samples_s) == measured[
            at:at + len(row.zero_input_samples_s)]
        at += len(row.zero_input_samples_s) + (row.kind is Kind.VARIANT)
    assert at == len(measured)
    raw = json.loads((tmp_path / "r.json").read_text())
    assert sum(b["stats"]["count"] for b in raw["benchmarks"]) == sum(
        len(row.samples_s) for row in loaded)


def test_synthetic_samples_are_noisy_and_seeded():
    # A fixed number of samples and a budget never reached: the same samples however
    # loaded the machine running the tests is (max_time would stop a slow run early).
    fixed = TimingPolicy(warmup_s=0.0, min_samples=20, max_samples=20, max_time_s=60)
    plan = dataclasses.replace(plan_for("matmul", (33, 33, 33)), timing=fixed)
    first = run_plans([plan], FakeSpec(seed=3)).results[0].samples_s
    again = run_plans([plan], FakeSpec(seed=3)).results[0].samples_s
    other = run_plans([plan], FakeSpec(seed=4)).results[0].samples_s
    assert first == again and first != other
    assert 0.002 < np.std(np.log(first)) < 0.1  # noisy like a GPU, not constant


# -- compare, fed by the pipeline ---------------------------------------------------------

def run_to_file(use_fake, path, seed: int, slowdown: dict | None = None) -> None:
    use_fake(seed=seed, slowdown=slowdown or {})
    # A fixed number of samples and a budget never reached: the same samples whatever the
    # load on the machine running the tests.
    done = invoke("matmul", "--size", "64", "--json", str(path), "--warmup", "0",
                  "--max-time", "30", "--min-samples", "30", "--max-samples", "30")
    assert done.exit_code == 0, done.output


def test_a_10_percent_slowdown_is_found_and_gates(use_fake, tmp_path):
    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    run_to_file(use_fake, base, seed=1)
    run_to_file(use_fake, slow, seed=2, slowdown={"tiled": 1.10})
    summary = tmp_path / "summary.md"
    done = invoke("compare", str(base), str(slow), "--markdown", str(summary))
    assert done.exit_code == 1, done.output
    rows = [line for line in summary.read_text().splitlines() if line.startswith("| matmul/")]
    verdicts = {line.split("|")[1].strip(): line.split("|")[9].strip() for line in rows}
    assert verdicts == {"matmul/naive": "same", "matmul/tiled": "**slower**",
                        "matmul/tiled_conflict": "same", "matmul/cuBLAS": "same",
                        **{f"matmul/{name}": "same" for name in LADDER}}
    change = next(line for line in rows if "matmul/tiled " in line).split("|")[7]
    assert 0.08 < float(change.strip(" +%")) / 100 < 0.12


@pytest.mark.parametrize("seeds", [(1, 2), (3, 4), (5, 6)])
def test_no_false_alarm_between_two_runs_of_the_same_code(use_fake, tmp_path, seeds):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    run_to_file(use_fake, first, seed=seeds[0])
    run_to_file(use_fake, second, seed=seeds[1])
    done = invoke("compare", str(first), str(second), "--threshold", "3%")
    assert done.exit_code == 0, done.output
    assert "regression" in done.stdout and "slower" not in done.stdout


# -- what survives a broken worker, a broken reference, a repeated entry -------------------

def test_a_worker_that_dies_costs_one_error_row_and_the_rest_still_run():
    # naive faults (the rest go to a worker); in the worker, tiled kills its process.
    plan = plan_for("matmul", (33, 33, 33))
    streamed = []
    outcome = run_plans([plan], FakeSpec(faults={"naive": Fault.FAULT,
                                                 "tiled": Fault.KILLS_WORKER}),
                        on_result=streamed.append)
    statuses = ran(outcome.results)
    assert statuses == {"naive": Status.FAIL, "tiled": Status.ERROR,
                        "tiled_conflict": Status.PASS, **LADDER}
    died = next(r for r in outcome.results if r.variant == "tiled")
    assert "worker process died" in (died.error or "") and died.device is not None
    assert streamed == list(outcome.results)  # every row reached the writer as it came


def test_results_from_a_worker_stream_in_order(use_fake, tmp_path):
    use_fake(faults={"naive": Fault.FAULT})
    json_path = tmp_path / "r.json"
    done = invoke("matmul", "--size", "20", "--json", str(json_path), "--progress",
                  *QUICK_FLAGS)
    assert done.exit_code == 3
    lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    names = [line.split()[1] for line in lines]
    assert names == ["matmul/async_double_buffer", "matmul/fragment_double_buffer",
                     "matmul/naive", "matmul/tiled", "matmul/tiled_conflict", "matmul/warptile"]


def test_a_reference_row_is_measured_once_per_shape_in_a_suite(use_fake, tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "transpose"\nsize = "40"\nvariants = ["naive"]\n\n'
                     '[[benchmark]]\nop = "transpose"\nsize = "40"\nvariants = ["shared"]\n')
    json_path = tmp_path / "r.json"
    done = invoke("run", str(suite), "--json", str(json_path))
    assert done.exit_code == 0, done.output
    names = [b.variant for b in load_results(json_path).benchmarks]
    assert sorted(names) == ["cuBLAS", "memcpy_dtod", "naive", "shared"]
    assert done.stdout.count("% of memcpy_dtod") == 1
    assert done.stdout.count("vs cuBLAS") == 1


def test_an_unwritable_markdown_path_fails_before_anything_runs(use_fake, tmp_path):
    (tmp_path / "file").write_text("")
    done = invoke("dot", "--size", "100", "--markdown", str(tmp_path / "file" / "r.md"))
    assert done.exit_code == 2 and "--markdown" in done.stderr
    assert "dot/" not in done.stderr  # nothing was measured


# -- dynamic shared memory --------------------------------------------------------------

BIG_TILE = Path(__file__).parent / "data" / "kernels"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dynamic_shared_memory_beyond_48_kib_is_asked_for_and_recorded(dtype):
    plan = plan_for("transpose", (130, 257), dtype, variants=("big_tile",),
                    kernels_dirs=(BIG_TILE,))
    outcome = run_plans([plan], FakeSpec())
    big = next(r for r in outcome.results if r.variant == "big_tile")
    assert big.status is Status.PASS, big.error
    size = OPS["transpose"].type_set(dtype).input.itemsize
    assert big.launches[0]["dynamic_shared_bytes"] == 128 * 129 * size


def test_dynamic_shared_memory_beyond_the_opt_in_limit_is_an_error_row():
    plan = plan_for("transpose", (300, 300), "float64", variants=("big_tile",),
                    kernels_dirs=(BIG_TILE,), params={"TILE": 256})
    (big, _copy) = run_plans([plan], FakeSpec()).results
    assert big.status is Status.ERROR
    assert f"asks for {256 * 257 * 8} bytes of dynamic shared memory" in (big.error or "")
    assert str(227 * 1024) in (big.error or "")


# -- the watchdog ------------------------------------------------------------------------

@pytest.mark.parametrize(("fault", "says"), [
    (Fault.HANGS, "did not finish within 1.5 s of GPU work (--timeout)"),
    (Fault.COMPILE_HANGS, "its compile did not finish within 1.5 s (--compile-timeout)"),
])
def test_a_kernel_that_never_finishes_is_a_timeout_row_and_the_rest_run(
        use_fake, tmp_path, fault, says):
    import time

    use_fake(faults={"tiled": fault})
    json_path = tmp_path / "r.json"
    started = time.monotonic()
    done = invoke("matmul", "--size", "20", "--json", str(json_path), "--timeout", "1.5",
                  "--compile-timeout", "1.5", *QUICK_FLAGS)
    assert time.monotonic() - started < 20  # the timeout plus a few seconds of worker starts
    assert done.exit_code == 3, done.output
    assert says in done.stderr and "TIMEOUT" in done.stdout
    loaded = load_results(json_path)
    statuses = ran(loaded.benchmarks)
    assert statuses == {"naive": Status.PASS, "tiled": Status.TIMEOUT,
                        "tiled_conflict": Status.PASS, **LADDER}
    raw = json.loads(json_path.read_text())
    validate(raw)
    assert [b["status"] for b in raw["benchmarks"] if b["status"] != "SKIP"] == [
        "PASS", "PASS", "PASS", "TIMEOUT", "PASS", "PASS"]  # async_double_buffer ... warptile
    base = tmp_path / "base.json"
    use_fake(seed=1)  # another run: samples of its own
    assert invoke("matmul", "--size", "20", "--json", str(base), *QUICK_FLAGS).exit_code == 0
    compared = invoke("compare", str(base), str(json_path))
    assert compared.exit_code == 1 and "now TIMEOUT" in compared.stdout


@pytest.mark.parametrize(("flag", "value"), [("--timeout", "0"), ("--timeout", "inf"),
                                             ("--warmup", "nan"), ("--max-time", "-1")])
def test_timing_flags_must_be_finite_and_positive(use_fake, flag, value):
    done = invoke("dot", flag, value)
    assert done.exit_code == 2 and flag in done.stderr


# -- memory checked before anything is allocated ------------------------------------------

def test_a_size_too_large_for_the_gpu_is_exit_2_before_anything_runs(use_fake, monkeypatch):
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: 2**30)
    monkeypatch.setattr("cudabench.measure.memory.host_available_bytes", lambda: 2**40)
    done = invoke("matmul", "--size", "30000")
    assert done.exit_code == 2, done.output
    line = done.stderr.strip()
    assert line.startswith("cudabench: error: --size 30000x30000x30000: matmul float32 needs")
    assert "on GPU 0 but 1 GiB is free; about --size" in line and len(line.splitlines()) == 1
    from cudabench.measure import memory

    fits = line.split("about --size ")[1].split()[0]
    fitted = memory.need(plan_for("matmul", tuple(map(int, fits.split("x")))))
    assert 0.9 * 2**30 < fitted.device_bytes <= 2**30  # the hint is right, and not timid


def test_a_size_too_large_for_the_host_is_exit_2(use_fake, monkeypatch):
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
    monkeypatch.setattr("cudabench.measure.memory.host_available_bytes", lambda: 2**28)
    done = invoke("transpose", "--size", "20000")
    assert done.exit_code == 2 and "in host memory but 256 MiB is free" in done.stderr


def test_the_memory_need_counts_every_buffer():
    from cudabench.measure import memory

    plan = plan_for("matmul", (1000, 1000, 1000))
    need = memory.need(plan)
    buffers = 3 * 4 * 10**6  # A, B, C in float32, twice (the recheck at new addresses)
    assert 2 * buffers + memory.FLUSH_BYTES < need.device_bytes < 3 * buffers + memory.FLUSH_BYTES
    assert need.host_bytes > 2 * 8 * 10**6  # float64 inputs and reference at least


# -- cheats: right where cudabench used to look, wrong elsewhere ---------------------------

@pytest.mark.parametrize(("fault", "says"), [
    (Fault.REPLAYS, "wrong on fresh inputs in the same buffers"),
    (Fault.FIRST_LAUNCHES_ONLY, "a timed launch is wrong"),
])
@pytest.mark.parametrize("op", ["matmul", "transpose", "transpose_inplace", "dot"])
def test_a_kernel_that_cheats_after_the_checked_launch_fails(op, fault, says):
    name = takes(op)[-1]
    plan = plan_for(op, OPS[op].edge_shapes()[1])
    outcome = run_plans([plan], FakeSpec(faults={name: fault}))
    cheat = next(r for r in outcome.results if r.variant == name)
    assert cheat.status is Status.FAIL and says in (cheat.error or ""), cheat.error
    assert cheat.samples_s  # it was timed: the numbers are kept, marked failed
    # its verification is the wrong launch's: "0 of N elements wrong, rel error 0" sat
    # beside an error saying every element was wrong
    v = cheat.verification
    assert v is not None and not v.passed and v.bad_elements >= 1, v
    assert f"({v.bad_elements} of {v.total_elements} elements wrong)" in cheat.error
    honest = [s for n, s in ran(outcome.results).items() if n != name]
    assert all(s in (Status.PASS, Status.REF) for s in honest)


@pytest.mark.parametrize("op", ["matmul", "transpose", "dot"])
def test_a_kernel_that_computes_only_on_a_poisoned_output_fails(op):
    # Right on every poisoned launch, idle on every timed one (they find the last result in
    # the output): the recheck on fresh inputs re-poisoned the output, and it passed.
    name = takes(op)[-1]
    outcome = run_plans([plan_for(op, OPS[op].edge_shapes()[1])],
                        FakeSpec(faults={name: Fault.SKIPS_WHEN_WRITTEN}))
    cheat = next(r for r in outcome.results if r.variant == name)
    assert cheat.status is Status.FAIL, cheat
    assert "wrong on fresh inputs in the same buffers" in (cheat.error or ""), cheat.error
    assert "work skipped where the output held the last one?" in cheat.error
    honest = [s for n, s in ran(outcome.results).items() if n != name]
    assert all(s in (Status.PASS, Status.REF) for s in honest)


def test_a_kernel_wrong_at_its_checked_launch_is_told_so_not_called_a_cheat():
    # Wrong on every launch: the checked launch's failed verification says it; the recheck,
    # which asks whether timed launches differ from the checked one, would only blame them.
    name = takes("matmul")[-1]
    outcome = run_plans([plan_for("matmul", (33, 17, 65))],
                        FakeSpec(faults={name: Fault.WRONG_ELEMENT}))
    wrong = next(r for r in outcome.results if r.variant == name)
    assert wrong.status is Status.FAIL and not wrong.verification.passed
    assert wrong.verification.bad_elements >= 1
    assert "timed launch" not in (wrong.error or "") and "cheat" not in (wrong.error or "")


@pytest.mark.parametrize(("op", "shape"), [
    ("matmul", (512, 512, 512)),  # a 1 MiB result: held to the same-buffer one on the GPU
    ("matmul", (33, 17, 65)),  # too small for that: the CPU's check
    ("dot", (10**6,))])
def test_a_result_keyed_by_address_fails_in_new_buffers(op, shape):
    name = takes(op)[-1]
    engine_spec = FakeSpec(faults={name: Fault.WRONG_ELSEWHERE})
    outcome = run_plans([plan_for(op, shape)], engine_spec)
    cheat = next(r for r in outcome.results if r.variant == name)
    assert cheat.status is Status.FAIL, cheat
    assert "wrong on fresh inputs in new buffers" in (cheat.error or ""), cheat.error
    assert "1 of" in cheat.error  # the CPU's check names the one wrong element
    honest = [s for n, s in ran(outcome.results).items() if n != name]
    # (SUSPECT: verified, but the fake's synthetic times beat its roofs at 512^3)
    assert all(s in (Status.PASS, Status.REF, Status.SUSPECT) for s in honest)


# -- faster than the device allows ------------------------------------------------------------

def test_a_result_beyond_the_devices_roof_is_suspect(use_fake, tmp_path):
    use_fake(slowdown={"tiled": 1e-3})  # a matmul at a thousand times the speed (a few ns)
    json_path = tmp_path / "r.json"
    done = invoke("matmul", "--size", "64", "--json", str(json_path), *QUICK_FLAGS)
    assert done.exit_code == 3, done.output
    assert "SUSPECT: matmul/tiled:" in done.stderr and "FP32" not in done.stderr
    assert "TFLOP/s float32 roof on CUDA cores" in done.stderr
    raw = json.loads(json_path.read_text())
    validate(raw)
    statuses = {b["variant"]: b["status"] for b in raw["benchmarks"] if b["status"] != "SKIP"}
    assert statuses == {"naive": "PASS", "tiled": "SUSPECT", "tiled_conflict": "PASS",
                        **{name: "PASS" for name in LADDER}}
    loaded = {b.variant: b for b in load_results(json_path).benchmarks}
    assert loaded["tiled"].status is Status.SUSPECT and loaded["tiled"].suspect


def test_the_roofs_of_an_h100():
    from cudabench.insight import roofs
    from cudabench.results import DeviceInfo

    h100 = DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                      memory_bytes=85017493504, l2_bytes=52428800, sm_clock_khz=1980000,
                      memory_clock_khz=2619000, memory_bus_bits=5120,
                      max_threads_per_block=1024, max_shared_bytes_per_block=49152,
                      driver_version="13.0", cuda_version="13.0.0")
    assert roofs.dram_bandwidth(h100) == pytest.approx(3.35e12, rel=0.01)  # the datasheet
    assert roofs.flop_rate(h100, "float32") == pytest.approx(66.9e12, rel=0.01)
    assert roofs.flop_rate(h100, "float64") == pytest.approx(33.5e12, rel=0.01)


def test_a_kernel_faster_on_all_zero_inputs_gets_a_note_and_others_do_not(use_fake):
    fixed = TimingPolicy(warmup_s=0.0, min_samples=20, max_samples=20, max_time_s=30)
    plan = dataclasses.replace(plan_for("matmul", (64, 64, 64)), timing=fixed)
    outcome = run_plans([plan], FakeSpec(faults={"tiled": Fault.FASTER_ON_ZEROS}, noise=0.005))
    notes = {r.variant: [w for w in r.warnings if "all-zero inputs" in w]
             for r in outcome.results}
    assert notes["naive"] == [] and notes["tiled_conflict"] == []
    (note,) = notes["tiled"]
    assert "runs 50% faster on all-zero inputs" in note
    assert set(ran(outcome.results).values()) == {Status.PASS}


def test_a_variant_that_does_not_take_the_type_is_left_out_with_a_note(use_fake, tmp_path):
    folder = tmp_path / "mine" / "matmul"
    folder.mkdir(parents=True)
    (folder / "only_float.cu").write_text(
        "// cudabench: matmul\n// dtypes: float32\n// launch k: grid 1; block 1\n"
        'extern "C" __global__ void k() {}\n')
    json_path = tmp_path / "r.json"
    done = invoke("matmul", "--size", "20", "--dtype", "int32", "--kernels-dir",
                  str(tmp_path / "mine"), "--json", str(json_path), *QUICK_FLAGS)
    assert done.exit_code == 0, done.output
    assert "only_float" not in done.stdout  # no row: the table shows what ran
    assert "left out fragment_double_buffer, only_float: written for float32 only" in " ".join(
        done.stderr.split())
    raw = json.loads(json_path.read_text())
    validate(raw)
    rows = {b.variant: b for b in load_results(json_path).benchmarks}
    assert "only_float" not in rows
    rerun = tmp_path / "rerun.json"
    use_fake(seed=1)  # another run: the fake's samples of one seed repeat to the bit
    assert invoke("matmul", "--size", "20", "--dtype", "int32", "--kernels-dir",
                  str(tmp_path / "mine"), "--json", str(rerun), *QUICK_FLAGS).exit_code == 0
    compared = invoke("compare", str(json_path), str(rerun))
    # The same run again: its rows pair (a row whose median is known only roughly, on a
    # loaded machine, is "noisy", never slower).
    assert compared.exit_code == 0 and "slower" not in compared.stdout, compared.stdout


def test_the_recheck_inputs_belong_to_their_plan_even_when_plans_come_and_go():
    from cudabench.measure.recheck import fresh_inputs

    for size in ("33", "40", "33", "17x9x5"):
        plan = plan_for("matmul", tuple(int(x) for x in size.split("x")) * (
            3 if "x" not in size else 1))
        fresh, expected = fresh_inputs(plan)
        assert fresh["A"].shape == (plan.shape[0], plan.shape[1])
        assert expected.shape == (plan.shape[0], plan.shape[2])
        assert fresh_inputs(plan)[0] is fresh  # made once per plan
        del plan, fresh, expected  # a freed plan's id may come back for the next one


def test_the_worker_starts_before_planning_and_no_process_outlives_the_command(
        use_fake, worker_starts):
    import multiprocessing

    starts = worker_starts
    done = invoke("dot", "--size", "1000", *QUICK_FLAGS)
    assert done.exit_code == 0, done.stderr
    assert len(starts) == 1  # the prestarted worker ran the jobs: one spawn
    assert multiprocessing.active_children() == []
    bad = invoke("dot", "--size", "-5", *QUICK_FLAGS)
    assert bad.exit_code == 2
    assert multiprocessing.active_children() == []  # the unused worker was ended


def test_the_default_flush_is_clean_and_the_flag_and_a_suite_choose_another(use_fake, tmp_path):
    default, memset = tmp_path / "default.json", tmp_path / "memset.json"
    assert invoke("dot", "--size", "1000", "--no-vendor", "--json", str(default)).exit_code == 0
    assert invoke("dot", "--size", "1000", "--no-vendor", "--l2-flush", "memset",
                  "--json", str(memset)).exit_code == 0
    assert {r.l2_flush for r in load_results(default).benchmarks} == {"clean"}
    assert {r.l2_flush for r in load_results(memset).benchmarks} == {"memset"}
    validate(json.loads(memset.read_text()))
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nmax_time = 0.05\n[[benchmark]]\nop = "dot"\nsize = "1000"\n'
                     'l2_flush = "memset"\n')
    from_suite, overridden = tmp_path / "suite.json", tmp_path / "overridden.json"
    assert invoke("run", str(suite), "--no-vendor", "--json", str(from_suite)).exit_code == 0
    assert invoke("run", str(suite), "--no-vendor", "--l2-flush", "clean",
                  "--json", str(overridden)).exit_code == 0
    assert {r.l2_flush for r in load_results(from_suite).benchmarks} == {"memset"}
    assert {r.l2_flush for r in load_results(overridden).benchmarks} == {"clean"}


def test_a_bad_flush_is_a_one_line_usage_error(use_fake, tmp_path):
    done = invoke("dot", "--size", "1000", "--l2-flush", "zero")
    assert done.exit_code == 2 and "--l2-flush" in done.output and "Traceback" not in done.output
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nl2_flush = "zero"\n')
    done = invoke("run", str(suite))
    assert done.exit_code == 2 and "benchmark[0].l2_flush: expected" in done.output


def test_one_run_measures_after_one_flush(use_fake, tmp_path):
    # Two flushes in one run would share one copy row, one table footer and one file: the
    # suite that asks for both is refused, naming both entries.
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n'
                     '[[benchmark]]\nop = "dot"\nsize = "1000"\nl2_flush = "memset"\n')
    done = invoke("run", str(suite), "--no-vendor")
    assert done.exit_code == 2 and "two L2 flushes" in done.output
    assert "benchmark[0]" in done.output and "benchmark[1]" in done.output
    # --l2-flush makes them one (and leaves a hot entry alone); so does a run of each.
    suite.write_text(suite.read_text() + '[[benchmark]]\nop = "dot"\nsize = "1000"\nhot = true\n')
    path = tmp_path / "one.json"
    done = invoke("run", str(suite), "--no-vendor", "--l2-flush", "memset", "--json", str(path))
    assert done.exit_code == 0, done.output
    assert {(r.hot, r.l2_flush) for r in load_results(path).benchmarks} == {
        (False, "memset"), (True, "")}


@pytest.mark.parametrize("command", ["run", "calibrate"])
def test_a_flush_that_reaches_no_entry_of_a_suite_is_refused(use_fake, tmp_path, command):
    # every entry hot: --l2-flush memset was ignored without a word
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\nhot = true\n')
    done = invoke(command, str(suite), "--l2-flush", "memset", "--db", str(tmp_path / "h.db"))
    assert done.exit_code == 2 and "--l2-flush memset flushes cold samples only; every " \
        "benchmark of the suite is hot (hot = true), so it does nothing" in done.output


def test_hot_with_the_memset_flush_is_a_usage_error(use_fake):
    done = invoke("dot", "--size", "1000", "--hot", "--l2-flush", "memset")
    assert done.exit_code == 2 and "a hot run flushes nothing" in done.output


@pytest.mark.parametrize("command", [["ab"], ["calibrate"], ["run"], ["dot"]])
def test_every_measuring_command_takes_the_flush(command):
    assert "--l2-flush" in invoke(*command, "--help").output


def test_a_worker_whose_command_is_gone_ends_quietly():
    # the command killed (kill -9, a CI runner's end): each send of its worker raised
    # BrokenPipeError, a traceback twice over in the terminal or CI log
    import subprocess
    import sys

    script = ("import multiprocessing\n"
              "from cudabench.runner.workers import _Sender\n"
              "reader, writer = multiprocessing.Pipe(duplex=False)\n"
              "reader.close()\n"
              "_Sender(writer).put(('start', 1))\n"
              "print('not reached')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_sampling_ends_within_the_timeout_whatever_max_time_says(use_fake):
    # a noisy, healthy kernel sampled to a --max-time near (or past) --timeout was killed
    # as a hang: TIMEOUT, exit 3
    from cudabench.planning.timing import TimingPolicy

    assert TimingPolicy().sampling_budget_s == 1.0  # the default: --max-time itself
    assert TimingPolicy(max_time_s=30, timeout_s=2).sampling_budget_s == pytest.approx(1.36)
    done = invoke("dot", "--size", "1000", "--variant", "atomic", "--no-vendor", "--max-time",
                  "30", "--timeout", "2", "--precision", "0.00001", "--max-samples", "100000000")
    assert done.exit_code == 0, done.output
    said = " ".join(done.stderr.split())
    assert "samples in the 1.36 s budget" in said and "raise --timeout, which holds " \
        "--max-time under it" in said, said
    planned = invoke("dot", "--dry-run", "--max-time", "30", "--timeout", "2")
    assert "or after 1.36 s (--max-time, held under --timeout)" in planned.stdout


def test_a_suite_s_dry_run_names_its_timing_keys(tmp_path):
    # the line named --max-time and --timeout, flags `run` does not have
    suite = tmp_path / "s.toml"
    suite.write_text('[timing]\nmax_time = 30\ntimeout = 2\n\n[[benchmark]]\nop = "dot"\n')
    planned = invoke("run", str(suite), "--dry-run")
    said = " ".join(planned.stdout.split())
    assert "or after 1.36 s (timing.max_time, held under timing.timeout)" in said, said


def test_the_zero_input_pass_takes_what_the_readme_says(use_fake):
    # the README said "10 samples or more"; --min-samples 3 gave 3
    counts = {}
    for minimum in (3, 20):
        loose = TimingPolicy(warmup_s=0.0, min_samples=minimum, max_samples=1000,
                             max_time_s=30, precision=0.25)
        plan = dataclasses.replace(plan_for("dot", (100000,)), timing=loose)
        outcome = run_plans([plan], FakeSpec(noise=0.001))
        counts[minimum] = {len(r.zero_input_samples_s) for r in outcome.results
                           if r.kind is Kind.VARIANT}
    assert counts == {3: {3}, 20: {10}}  # min(--min-samples, 10) where precise enough
    # a budget that runs out at once: min(--min-samples, 5)
    spent = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=1e-9, precision=1e-9)
    plan = dataclasses.replace(plan_for("dot", (100000,)), timing=spent)
    outcome = run_plans([plan], FakeSpec(noise=0.001))
    assert {len(r.zero_input_samples_s) for r in outcome.results
            if r.kind is Kind.VARIANT} == {5}
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text(
        encoding="utf-8").split())
    said = readme[readme.index("timed again on all-zero inputs"):][:300]
    assert "from min(`--min-samples`, 10) samples up" in said, said
    assert "stops at min(`--min-samples`, 5)" in said, said
