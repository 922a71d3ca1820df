"""--best searches (tuning/): strategies under a seed, budgets, pruning by header
constraints, failing configurations never chosen, and the resumable tuning cache. The
search runs against a synthetic runner (no processes) except for the CLI tests at the end,
which drive the whole pipeline on the fake engine."""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudabench.analysis import best
from cudabench.engines.fake_engine import FAKE_DEVICE, FakeEngine, FakeSpec
from cudabench.engines.protocol import Engine
from cudabench.errors import KernelFileError, UsageError
from cudabench.planning.plan import Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results.model import BenchmarkResult, RunOutcome, Verification
from cudabench.tuning.budget import Budget, parse_budget
from cudabench.tuning.search import Settings, search
from cudabench.tuning.space import build_spaces
from tests.helpers import full_disk_at_the_end, invoke

HEADER = """// cudabench: matmul
// description: a tuning fixture
// param BM: default 16; allowed 8, 16, 32
// param BN: default 16; allowed 8, 16, 32
// param SPLIT: default 1; allowed 1, 2, 3, 4
// constraint: BM * BN <= 512
// launch matmul_tune: grid cdiv(N, BN), cdiv(M, BM); block BN, BM
"""
BODY = "extern \"C\" __global__ void matmul_tune() {}\n"
VALID = 3 * 3 * 4 - 4  # BM = BN = 32 breaks the constraint, at every SPLIT


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "tune.cu").write_text(HEADER + BODY)
    return folder


def space_of(kernels: Path, size: str = "64", given: dict | None = None, **asked):
    request = Request("matmul", size=size, variants=("tune",), kernels_dirs=(kernels,),
                      **asked)
    (space,) = build_spaces([request], given or {}, explore=True)
    return space


def cost(params) -> float:
    """The synthetic time of a configuration: fastest at BM=16 BN=32 SPLIT=3."""
    return 1e-3 * (1 + abs(params["BM"] - 16) / 8 + abs(params["BN"] - 32) / 16
                   + abs(params["SPLIT"] - 3) / 4)


class Runner:
    """Measures plans synthetically; `failing` configurations fail verification; it can
    stop (as Ctrl-C would) after `stop_after` rows."""

    def __init__(self, failing=(), stop_after=None, pause_s=0.0, gpus=1):
        self.failing = [dict(f) for f in failing]
        self.stop_after = stop_after
        self.pause_s = pause_s
        self.gpus = gpus  # GPUs side by side: each pause measures this many at once
        self.measured: list[dict] = []

    def __call__(self, plans, on_result):
        rows = []
        for number, plan in enumerate(plans):
            if self.stop_after is not None and len(self.measured) >= self.stop_after:
                raise KeyboardInterrupt
            if number % self.gpus == 0:
                time.sleep(self.pause_s)
            params = dict(plan.variants[0].params)
            self.measured.append(params)
            ok = params not in self.failing
            seconds = cost(params)
            row = BenchmarkResult(
                "matmul", "tune", params, tuple(plan.shape), ("M", "K", "N"), "float32",
                False, samples_s=tuple(seconds * (1 + 0.001 * i) for i in range(5)),
                verification=Verification(ok, 0.0 if ok else 1.0, 0.0, 0 if ok else 3, 9,
                                          "test"),
                device=FAKE_DEVICE)
            rows.append(row)
            on_result(row)
        return RunOutcome(tuple(rows))


def settings(tmp_path, strategy="brute", budget=None, seed=0, cache=True) -> Settings:
    return Settings(strategy, parse_budget(budget), seed, cache, tmp_path / "cache")


def test_constraints_prune_the_space_before_anything_runs(kernels):
    space = space_of(kernels)
    assert len(space.plans) == VALID
    assert all(p.variants[0].params["BM"] * p.variants[0].params["BN"] <= 512
               for p in space.plans)
    (reason, count), = space.pruned.items()
    assert count == 4 and "BM * BN <= 512" in reason


@pytest.mark.parametrize("folder", ["constraint", "threads"])
def test_pruned_reasons_are_counted_by_kind_not_by_the_text_of_a_path(tmp_path, folder):
    # the reason's text holds the file's path: "constraint" in it was exit 4 (no backquote
    # to cut at), and "threads" in it called a shared memory excess too many threads
    kernels = tmp_path / folder
    kernels.mkdir()
    (kernels / "tune.cu").write_text(
        HEADER.replace("// constraint: BM * BN <= 512\n", "// shared_bytes: BM * 4096\n")
        + BODY)
    assert space_of(kernels).pruned == {"too much static shared memory": 2 * 3 * 4}  # BM>8


def test_an_explicit_configuration_that_breaks_a_constraint_is_a_usage_error(kernels):
    request = Request("matmul", size="64", variants=("tune",), kernels_dirs=(kernels,),
                      params={"BM": 32, "BN": 32})
    with pytest.raises(UsageError, match="constraint `BM \\* BN <= 512`"):
        make_plan(request)


def test_defaults_that_break_a_constraint_name_the_header_to_fix(kernels):
    # "breaks the header's constraint ...; choose other parameters": no file named, and
    # no --param given to choose otherwise
    path = kernels / "tune.cu"
    path.write_text(HEADER.replace("default 16; allowed 8, 16, 32", "default 32; allowed 8, "
                                   "16, 32") + BODY)
    with pytest.raises(UsageError) as error:
        make_plan(Request("matmul", size="64", variants=("tune",), kernels_dirs=(kernels,)))
    assert str(error.value).startswith(f"{path}:6: matmul/tune with BM=32 BN=32 SPLIT=1 "
                                       "breaks the header's constraint `BM * BN <= 512`; those "
                                       "are the header's defaults: fix them"), error.value
    with pytest.raises(UsageError, match="those are the header's defaults"):  # SPLIT is none
        make_plan(Request("matmul", size="64", variants=("tune",), kernels_dirs=(kernels,),
                          params={"SPLIT": 2}))


@pytest.mark.parametrize("line", ["// constraint: BM +", "// constraint: BM * 2",
                                  "// constraint: WHO < 4"])
def test_a_bad_constraint_names_its_file_and_line(tmp_path, line):
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "tune.cu").write_text(HEADER.replace("// constraint: BM * BN <= 512", line)
                                    + BODY)
    with pytest.raises(KernelFileError, match="tune.cu:6: constraint"):
        make_plan(Request("matmul", size="64", variants=("tune",), kernels_dirs=(folder,)))


@pytest.mark.parametrize("strategy", ["brute", "random", "bayes"])
def test_a_strategy_is_deterministic_under_a_seed(kernels, tmp_path, strategy):
    pytest.importorskip("optuna") if strategy == "bayes" else None
    orders = []
    for seed in (7, 7, 8):
        runner = Runner()
        search(space_of(kernels), settings(tmp_path, strategy, "12", seed, cache=False),
               runner, FAKE_DEVICE.name)
        orders.append(runner.measured)
    assert orders[0] == orders[1] and len(orders[0]) == 12
    assert len({tuple(sorted(p.items())) for p in orders[0]}) == 12  # without replacement
    if strategy != "brute":
        assert orders[0] != orders[2]  # the seed matters


@pytest.mark.parametrize("strategy", ["random", "bayes"])
def test_every_seed_the_command_takes_seeds_a_search(kernels, tmp_path, strategy):
    # --seed takes 0..2^63-1; TPE's generator took 2^32 and up as an internal error
    pytest.importorskip("optuna") if strategy == "bayes" else None
    runner = Runner()
    search(space_of(kernels), settings(tmp_path, strategy, "4", 2**63 - 1, cache=False),
           runner, FAKE_DEVICE.name)
    assert len(runner.measured) == 4


def test_bayes_finds_the_best_within_half_the_space(kernels, tmp_path):
    pytest.importorskip("optuna")
    found = search(space_of(kernels), settings(tmp_path, "bayes", str(VALID // 2), 1, False),
                   Runner(), FAKE_DEVICE.name)
    assert found.best is not None
    assert found.best.median_s <= 1.05 * cost({"BM": 16, "BN": 32, "SPLIT": 3})


def test_the_configuration_budget_is_kept(kernels, tmp_path):
    runner = Runner()
    found = search(space_of(kernels), settings(tmp_path, "random", "5", cache=False), runner,
                   FAKE_DEVICE.name)
    assert found.done == found.measured == len(runner.measured) == 5
    everything = search(space_of(kernels), settings(tmp_path, "brute", cache=False), Runner(),
                        FAKE_DEVICE.name)
    assert everything.done == VALID and everything.stopped is None


def test_the_time_budget_stops_the_search(kernels, tmp_path):
    runner = Runner(pause_s=0.05)
    started = time.monotonic()
    found = search(space_of(kernels), settings(tmp_path, "brute", "0.3s", cache=False), runner,
                   FAKE_DEVICE.name)
    assert found.stopped and "time budget" in found.stopped
    assert 2 <= found.done < VALID and time.monotonic() - started < 1.5


def test_the_time_budget_holds_on_several_gpus(kernels, tmp_path):
    # the configurations that fit in the time left were handed out once more per GPU: a
    # 10 s budget on two GPUs ran 17 s
    runner = Runner(pause_s=0.25, gpus=4)
    started = time.monotonic()
    found = search(space_of(kernels), dataclasses.replace(
        settings(tmp_path, "brute", "1s", cache=False), gpus=4), runner, FAKE_DEVICE.name)
    took = time.monotonic() - started
    assert found.stopped and "time budget" in found.stopped
    assert took < 1 + 0.25 + 0.3, took  # at most one more round of the four GPUs


@pytest.mark.parametrize("text", ["0", "5,6", "1s,2m", "fast", "1.5", "-3", "10d", "",
                                  "\u0663", "\u0663s", "9" * 5000, "9" * 5000 + "s"])
def test_a_bad_budget_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--budget"):
        parse_budget(text)


@pytest.mark.parametrize(("text", "says"), [
    ("1180591620717411303424", "too many configurations (18 digits at most)"),
    ("200," + "9" * 5000 + "s", "too many seconds (18 digits at most)"),
])
def test_a_budget_too_large_is_said_so(text, says):
    # it read "expected configurations and/or a time": it was one, too large
    with pytest.raises(UsageError, match=re.escape(says)):
        parse_budget(text)


def test_budget_forms():
    assert parse_budget("200,10m") == Budget(200, 600.0)
    assert parse_budget("90s") == Budget(None, 90.0)
    assert parse_budget("1h").configs_for(50) == 50


def test_a_failing_configuration_is_never_the_winner(kernels, tmp_path):
    fastest = {"BM": 16, "BN": 32, "SPLIT": 3}
    found = search(space_of(kernels), settings(tmp_path, cache=False),
                   Runner(failing=[fastest]), FAKE_DEVICE.name)
    assert found.failed == 1
    choice = best.decide(best.groups(list(found.rows.values()))[
        ("matmul", "tune", (64, 64, 64), "float32", False)])
    assert choice.best.params != fastest and found.best.params != fastest


def test_an_interrupted_search_resumes_from_its_cache(kernels, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        search(space_of(kernels), settings(tmp_path, "random", "20", 3), Runner(stop_after=6),
               FAKE_DEVICE.name)
    again = Runner()
    found = search(space_of(kernels), settings(tmp_path, "random", "20", 3), again,
                   FAKE_DEVICE.name)
    assert (found.cached, found.measured, len(again.measured)) == (6, 14, 14)
    whole = Runner()
    search(space_of(kernels), settings(tmp_path, "random", "20", 3, cache=False), whole,
           FAKE_DEVICE.name)
    assert {tuple(sorted(p.items())) for p in whole.measured} == {
        tuple(sorted(r.params.items())) for r in found.rows.values()}
    repeat = Runner()
    search(space_of(kernels), settings(tmp_path, "random", "20", 3), repeat, FAKE_DEVICE.name)
    assert repeat.measured == []  # a repeated run measures nothing it has


def test_a_changed_source_shape_or_gpu_misses_the_cache(kernels, tmp_path):
    search(space_of(kernels), settings(tmp_path, budget="4"), Runner(), FAKE_DEVICE.name)
    for change in ("shape", "gpu", "source"):
        runner = Runner()
        if change == "source":
            (kernels / "tune.cu").write_text(HEADER + BODY + "// edited\n")
        size = "96" if change == "shape" else "64"
        model = "another GPU" if change == "gpu" else FAKE_DEVICE.name
        found = search(space_of(kernels, size), settings(tmp_path, budget="4"), runner, model)
        assert found.cached == 0 and len(runner.measured) == 4, change


def test_other_timing_settings_or_the_full_check_miss_the_cache(kernels, tmp_path):
    # a row measured with a few quick samples is not reused where more were asked for, nor
    # one timed after another L2 flush
    search(space_of(kernels), settings(tmp_path, budget="4"), Runner(), FAKE_DEVICE.name)
    for asked in ({"timing": TimingPolicy(min_samples=3, max_samples=3)},
                  {"full_check": True}, {"l2_flush": "memset"}):
        runner = Runner()
        found = search(space_of(kernels, **asked), settings(tmp_path, budget="4"), runner,
                       FAKE_DEVICE.name)
        assert found.cached == 0 and len(runner.measured) == 4, asked
    runner = Runner()
    found = search(space_of(kernels), settings(tmp_path, budget="4"), runner, FAKE_DEVICE.name)
    assert found.cached == 4 and runner.measured == []


def test_another_seed_misses_the_cache(kernels, tmp_path):
    # --seed 2 after --seed 1 took every row from the cache: a check meant for new inputs
    # got the old inputs' results, though the results file said seed 2
    search(space_of(kernels, seed=1), settings(tmp_path, budget="4", seed=1), Runner(),
           FAKE_DEVICE.name)
    for seed, cached in ((2, 0), (2, 4), (1, 4)):
        runner = Runner()
        found = search(space_of(kernels, seed=seed), settings(tmp_path, budget="4", seed=seed),
                       runner, FAKE_DEVICE.name)
        assert found.cached == cached and len(runner.measured) == 4 - cached, seed


def test_an_include_is_part_of_the_source_hash(kernels, tmp_path):
    (kernels / "tune.cu").write_text(HEADER + '#include "helper.cuh"\n' + BODY)
    (kernels / "helper.cuh").write_text("// v1\n")
    search(space_of(kernels), settings(tmp_path, budget="3"), Runner(), FAKE_DEVICE.name)
    (kernels / "helper.cuh").write_text("// v2\n")
    runner = Runner()
    search(space_of(kernels), settings(tmp_path, budget="3"), runner, FAKE_DEVICE.name)
    assert len(runner.measured) == 3


@pytest.mark.parametrize("include, header", [
    ("#include <helper.cuh>", "helper.cuh"),  # beside the kernel, through nvcc's -I
    ('#include "_sub/a.cuh"', "b.cuh"),  # a.cuh's "b.cuh": not beside a.cuh, beside the kernel
])
def test_a_header_nvcc_finds_is_part_of_the_source_hash(kernels, tmp_path, include, header):
    # an edit of such a header left the search's cached rows in use: "4 from the cache"
    (kernels / "tune.cu").write_text(HEADER + include + "\n" + BODY)
    (kernels / "_sub").mkdir()
    (kernels / "_sub" / "a.cuh").write_text('#include "b.cuh"\n')
    (kernels / header).write_text("// v1\n")
    search(space_of(kernels), settings(tmp_path, budget="3"), Runner(), FAKE_DEVICE.name)
    (kernels / header).write_text("// v2\n")
    runner = Runner()
    search(space_of(kernels), settings(tmp_path, budget="3"), runner, FAKE_DEVICE.name)
    assert len(runner.measured) == 3


def test_a_torn_line_in_the_cache_is_ignored(kernels, tmp_path):
    search(space_of(kernels), settings(tmp_path, budget="3"), Runner(), FAKE_DEVICE.name)
    (path,) = (tmp_path / "cache" / "tune" / "matmul").iterdir()
    path.write_text(path.read_text()[:-40] + "\n1\n[1]\nnull\n")  # cut short; not rows
    runner = Runner()
    found = search(space_of(kernels), settings(tmp_path, budget="3"), runner,
                   FAKE_DEVICE.name)
    assert (found.cached, len(runner.measured)) == (2, 1)


def test_rows_of_another_search_in_the_cache_are_not_reused(kernels, tmp_path):
    # an edited or copied file: rows of another dtype, shape or variant reached the
    # results file as PASS rows nobody asked for; a nested line was an internal error
    import json

    search(space_of(kernels), settings(tmp_path, budget="4"), Runner(), FAKE_DEVICE.name)
    (path,) = (tmp_path / "cache" / "tune" / "matmul").iterdir()
    lines = path.read_text().splitlines()
    edits = [("dtype", "float64"), ("shape", [1, 2, 3]), ("variant", "tiled")]
    for number, (field, value) in enumerate(edits):
        data = json.loads(lines[number])
        data["row"][field] = value
        lines[number] = json.dumps(data)
    path.write_text("\n".join(lines + ["[" * 100000 + "]" * 100000]) + "\n")
    runner = Runner()
    found = search(space_of(kernels), settings(tmp_path, budget="4"), runner,
                   FAKE_DEVICE.name)
    assert (found.cached, len(runner.measured)) == (1, 3)
    assert {(r.variant, r.dtype, tuple(r.shape)) for r in found.rows.values()} == {
        ("tune", "float32", (64, 64, 64))}


# The command line, on the fake engine (worker processes, the real pipeline).

QUICK = ["--warmup", "0", "--min-samples", "6", "--max-time", "0.03", "--quiet"]


def test_the_command_searches_resumes_and_writes_the_winners(use_fake, kernels, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    out, results = tmp_path / "best.toml", tmp_path / "r.json"
    args = ["matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
            "--best", "--strategy", "random", "--budget", "5", "--seed", "3", *QUICK]
    done = invoke(*args, "--best-out", str(out), "--json", str(results))
    assert done.exit_code == 0, done.stderr
    assert "5 evaluated (5 measured, 0 from the tuning cache)" in done.stderr
    assert "4 breaks a header constraint" in done.stderr
    assert 'variants = ["tune"]' in out.read_text()
    again = invoke(*args)
    assert again.exit_code == 0, again.stderr
    assert "5 evaluated (0 measured, 5 from the tuning cache)" in again.stderr
    fresh = invoke(*args, "--no-tune-cache")
    assert "5 evaluated (5 measured, 0 from the tuning cache)" in fresh.stderr


def test_a_toolkit_or_driver_upgrade_misses_the_cache(use_fake, kernels, tmp_path,
                                                      monkeypatch):
    # rows timed before an upgrade were taken as this setup's
    from cudabench.cli import tune

    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    args = ["matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
            "--best", "--strategy", "random", "--budget", "5", "--seed", "3", *QUICK]
    for toolkit, driver, measured in (("12.8", "570.1", 5), ("12.8", "570.1", 0),
                                      ("13.0", "570.1", 5), ("13.0", "580.2", 5),
                                      ("13.0", "580.2", 0)):
        monkeypatch.setattr(tune, "tuning_environment",
                            lambda toolkit=toolkit, driver=driver: (("toolkit", toolkit),
                                                                    ("driver", driver)))
        done = invoke(*args)
        assert done.exit_code == 0, done.stderr
        assert f"5 evaluated ({measured} measured, {5 - measured} from the tuning cache)" in (
            done.stderr), (toolkit, driver)


def test_this_hosts_toolkit_and_driver_are_asked_for(monkeypatch):
    from cudabench.cli import tune
    from cudabench.engines import compiler, nvcc, nvml

    monkeypatch.setattr(nvcc, "find_nvcc", lambda: "/opt/cuda/bin/nvcc")
    monkeypatch.setattr(compiler, "toolkit_version", lambda found: f"release 13.0 ({found})")
    monkeypatch.setattr(nvml, "driver_version", lambda: "580.95.05")
    assert tune.tuning_environment() == (("toolkit", "release 13.0 (/opt/cuda/bin/nvcc)"),
                                         ("driver", "580.95.05"))
    monkeypatch.setattr(nvcc, "find_nvcc", lambda: None)
    monkeypatch.setattr(nvml, "driver_version", lambda: None)
    assert tune.tuning_environment() == (("toolkit", None), ("driver", None))


def test_a_search_whose_results_file_cannot_be_written_still_chooses(use_fake, kernels,
                                                                     tmp_path, monkeypatch):
    # a full disk at the final write exited 2 with nothing shown and no --best-out
    full_disk_at_the_end(monkeypatch)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    out, results = tmp_path / "best.toml", tmp_path / "r.json"
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
                  "--best", "--strategy", "random", "--budget", "5", "--seed", "3", *QUICK,
                  "--best-out", str(out), "--json", str(results))
    assert done.exit_code == 2, done.output
    assert "5 evaluated" in done.stderr and 'variants = ["tune"]' in out.read_text()
    assert "No space left" in done.stderr and "rows are in" in done.stderr
    assert "Traceback" not in done.output


def search_args(kernels: Path, budget: int) -> list[str]:
    """The command of a small search of the tune kernel, budget configurations."""
    return ["matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
            "--best", "--budget", str(budget), *QUICK]


def test_running_out_of_gpu_memory_is_not_kept_in_the_cache(use_fake, kernels, tmp_path,
                                                             monkeypatch):
    # another process held the GPU's memory once: every later search read "out of GPU
    # memory" back from the cache, and failed
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    args = search_args(kernels, budget=3)
    use_fake(memory_bytes=1000)
    done = invoke(*args)
    assert done.exit_code == 2 and "out of GPU memory" in done.stderr, done.output
    use_fake()
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert "3 evaluated (3 measured, 0 from the tuning cache), 0 failed" in again.stderr


@dataclass(frozen=True)
class BindingsSpec(FakeSpec):
    """A fake engine whose tensor maps go through cuda_driver.load_bindings(), which finds
    CUDA Python's bindings only where `installed`."""

    installed: bool = False

    def open(self) -> Engine:
        """Return a fresh BindingsEngine."""
        return BindingsEngine(self)


class BindingsEngine(FakeEngine):
    """The fake, with CUDA Python's bindings asked for as the PyCUDA engine asks."""

    def _tensor_map(self, args, request) -> None:
        from cudabench.engines.cuda_driver import load_bindings

        if not self.spec.installed:  # as if not installed, here or not
            with pytest.MonkeyPatch.context() as here:
                here.setitem(sys.modules, "cuda.bindings.driver", None)
                load_bindings()
        super()._tensor_map(args, request)


def test_a_skip_for_want_of_cuda_python_is_not_kept_in_the_cache(tmp_path, monkeypatch):
    # every configuration SKIPped "CUDA Python's driver bindings cannot be imported": once
    # cuda-bindings was installed, the search read the SKIPs back and still chose nothing
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    args = ["matmul", "--size", "256", "--dtype", "float16", "--variant", "wgmma_tma",
            "--best", "--budget", "2", *QUICK]
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: BindingsSpec())
    done = invoke(*args)
    assert done.exit_code == 2 and "cannot be imported here" in done.stderr, done.output
    monkeypatch.setattr("cudabench.cli.commands.engine_spec",
                        lambda device: BindingsSpec(installed=True))
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert "2 evaluated (2 measured, 0 from the tuning cache), 0 failed" in again.stderr


@pytest.mark.parametrize(("skipped", "kept"), [
    ("tensor_map A (k.cu:4): the box's innermost extent is 24 bytes; TMA needs a multiple of "
     "16 bytes", True),
    ("tensor_map A (k.cu:4): the driver refused a 2-D map (CUDA_ERROR_INVALID_VALUE)", True),
    ("matmul/k needs sm_90a; this GPU is sm_80", True),
    ("tensor maps are built with CUDA Python's driver bindings, which cannot be imported here "
     "(No module named 'cuda'): pip install 'cuda-bindings>=12.4'", False),
    ("these CUDA Python bindings have no cuFuncGetParamInfo, which tensor maps need to place "
     "their argument: pip install 'cuda-bindings>=12.4'", False),
])
def test_only_a_skip_that_would_come_again_is_kept(skipped, kept):
    assert kept_in_cache(skipped=skipped) is kept


@pytest.mark.parametrize(("error", "code"), [
    ("tune.cu: nvcc failed with -lineinfo -DBM=8:\nptxas error   : too much shared data", 0),
    ("out of GPU memory allocating 1.2 MiB: use a smaller --size", 2),
])
def test_a_configuration_that_does_not_compile_costs_a_search_that_chose_no_exit_2(
        use_fake, kernels, tmp_path, monkeypatch, error, code):
    # one configuration of a space failing to compile is routine: exit 2 ("usage or
    # environment error") although a winner was named; out of GPU memory stays exit 2
    from cudabench.cli import tune

    real = tune.run_plans

    def run_plans(plans, spec, on_result, **how):
        def hear(row):
            if row.params.get("BM") == 8:
                row = dataclasses.replace(row, error=error, verification=None, samples_s=())
            on_result(row)
        return real(plans, spec, hear, **how)

    monkeypatch.setattr(tune, "run_plans", run_plans)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "best.toml"
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
                  "-p", "SPLIT=1", "-p", "BN=8", "--best", "--budget", "3", *QUICK,
                  "--best-out", str(out))
    assert done.exit_code == code, done.output
    assert "2 failed" not in done.stderr and "1 failed" in done.stderr
    assert error.splitlines()[0] in done.stderr
    assert "BM = 8" not in out.read_text() and "BM = " in out.read_text()


@pytest.mark.parametrize(("status", "code"), [("ERROR", 2), ("FAIL", 3)])
def test_the_head_to_head_exits_as_a_run_by_the_status_it_found(use_fake, kernels, tmp_path,
                                                                 monkeypatch, status, code):
    # a configuration out of GPU memory when measured again head to head exited 3, "failed
    # verification", not 2 as the same row of a run
    from cudabench.cli import best

    real = best.run_plans

    def run_plans(plans, spec, on_result=None, **how):
        outcome = real(plans, spec, on_result, **how)
        rows = [row if row.params.get("BM") != 8 else dataclasses.replace(
            row, samples_s=(), verification=None, error="out of GPU memory allocating 1.0 MiB")
            if status == "ERROR" else dataclasses.replace(
            row, verification=dataclasses.replace(row.verification, passed=False))
            for row in outcome.results]
        return dataclasses.replace(outcome, results=tuple(rows))

    monkeypatch.setattr(best, "run_plans", run_plans)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    use_fake(noise=0.0)  # all three alike: every one is measured again head to head
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
                  "-p", "SPLIT=1", "-p", "BN=8", "--best", "--budget", "3", *QUICK)
    said = f"BM=8 BN=8 SPLIT=1 48x48x48 float32: {status} when measured again head to head"
    assert said in done.stderr, done.output
    assert done.exit_code == code, done.output


@pytest.mark.parametrize(("error", "kept"), [
    ("k.cu: nvcc failed with -lineinfo -DBM=8:\nk.cu(3): error: identifier \"x\" is undefined",
     True),
    ("k.cu: nvcc failed with -lineinfo -DBM=8:\nptxas error   : Entry function uses too much "
     "shared data", True),
    ("out of GPU memory allocating 1.2 MiB: use a smaller --size", False),
    ("k.cu: nvcc failed with -lineinfo:\nnvcc error   : 'cicc' died due to signal 9 (Kill "
     "signal)", False),
    ("k.cu: nvcc failed with -lineinfo:\n\nnvcc was killed by signal 9 (the OOM killer, or a "
     "stop from outside)", False),
    ("k.cu: nvcc failed with -lineinfo:\nptxas fatal   : Memory allocation failure", False),
    ("k.cu: nvcc failed with -lineinfo:\nerror writing /tmp/x.ptx: No space left on device",
     False),
    ("k.cu: nvcc failed with -lineinfo:\nnvcc did not finish within 600 s", False),
    ("k.cu: nvcc failed with -lineinfo:\nnvcc was not found: looked on PATH", False),
    ("the worker running it was lost", False),
    ("matmul/t: its worker process died (exit code -9); the jobs after it ran in a fresh "
     "worker", False),
    ("its Ray worker was lost twice (retried once): x: y", False),
    # a kernel whose path says "worker": its compile error comes again
    ("/srv/workers/persistent_worker.cu: nvcc failed with -lineinfo -DBM=8:\n"
     "persistent_worker.cu(3): error: identifier \"x\" is undefined", True),
])
def test_only_an_error_that_would_come_again_is_kept(error, kept):
    assert kept_in_cache(error=error) is kept


def kept_in_cache(**fields: str) -> bool:
    """Return whether the tuning cache keeps a row of these fields (an error, a skip)."""
    from cudabench.tuning.cache import lasting

    return lasting(BenchmarkResult("matmul", "tune", {"BM": 8}, (48, 48, 48), ("M", "K", "N"),
                                   "float32", False, device=FAKE_DEVICE, **fields))


def test_a_budget_that_evaluates_nothing_is_a_usage_error(use_fake, kernels, tmp_path,
                                                          monkeypatch):
    # It exited 3, "no configuration passed", when nothing had run at all.
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir",
                  str(kernels), "--best", "--budget", "0.0001s", *QUICK)
    assert done.exit_code == 2, done.output
    assert "--budget ran out before any configuration was evaluated" in done.stderr


def test_a_search_pruned_whole_beside_one_that_chose_exits_2(use_fake, kernels, tmp_path,
                                                              monkeypatch):
    # tune2 does not allow BM=32: its search had no configuration, left the table and
    # --best-out unsaid, and the command exited 0 because tune's search chose one
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    (kernels / "tune2.cu").write_text(
        HEADER.replace("allowed 8, 16, 32\n", "allowed 8, 16\n", 1).replace("matmul_tune",
                                                                          "matmul_tune2")
        + BODY.replace("matmul_tune", "matmul_tune2"))
    out = tmp_path / "best.toml"
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--variant", "tune2",
                  "--kernels-dir", str(kernels), "--best", "--budget", "3", "-p", "BM=32", *QUICK,
                  "--best-out", str(out))
    assert done.exit_code == 2, done.output
    assert "matmul/tune2 at 48: every configuration was pruned before it ran" in done.stderr
    assert 'variants = ["tune"]' in out.read_text()


def test_a_stopped_search_keeps_the_rows_it_measured(use_fake, kernels, tmp_path,
                                                     monkeypatch):
    # The rows stream to the results file as they are measured: Ctrl-C after the first
    # search left no file (they reached it only at the end).
    from cudabench.cli import tune
    from cudabench.results import load_results

    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    real = tune.search

    def then_stopped(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(tune, "search", then_stopped)
    results = tmp_path / "r.json"
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir",
                  str(kernels), "--best", "--strategy", "random", "--budget", "5", "--seed",
                  "3", *QUICK, "--json", str(results))
    assert done.exit_code == 130, done.output
    kept = load_results(results)
    assert kept.metadata["complete"] is False and len(kept.benchmarks) == 5


def test_the_search_spreads_over_devices(use_fake, kernels, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
    use_fake(device_count=2)
    results = tmp_path / "r.json"
    # The two workers take configurations from one queue, and eight quick ones could all
    # go to the first worker while the second is still starting on a busy two-core machine
    # (seen once in a full run). A worker's first configuration warms up 1 s, each later
    # one a fifth of that (measure/sampling.py): one worker alone would take ~2.5 s.
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir",
                  str(kernels), "--best", "--budget", "8", "--devices", "all", *QUICK,
                  "--warmup", "1", "--json", str(results))
    assert done.exit_code == 0, done.stderr
    from cudabench.results import load_results

    rows = load_results(results).benchmarks
    assert len(rows) == 8 and {r.device.index for r in rows} == {0, 1}


@pytest.mark.parametrize("broken", [{"lost_devices": (0,)}, {"crashing_devices": (0,)}])
def test_a_search_re_measures_on_a_gpu_it_did_not_give_up(use_fake, tmp_path, monkeypatch,
                                                          broken):
    # GPU 0 could not be opened (or its workers kept dying) and the search went on on
    # GPU 1; the head-to-head went back to GPU 0: the command failed (could not be
    # opened), or every contender was an ERROR "when measured again head to head".
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
    use_fake(device_count=2, **broken)
    out = tmp_path / "best.toml"
    done = invoke("dot", "--size", "4096", "--variant", "atomic", "-p", "BLOCK=64,128,256",
                  "--best", "--budget", "10", "--devices", "all", *QUICK, "--best-out",
                  str(out), "--json", str(tmp_path / "r.json"))
    said = " ".join(done.stderr.split())
    assert "note: GPU 0 was given up (" in said  # said, as a run says it
    assert ("note: --best re-measures its close calls head to head on GPU 1: GPU 0 was "
            "given up in the run") in said
    assert "when measured again head to head" not in said and "Traceback" not in said
    assert out.exists(), done.stderr
    # a worker that died before it opened GPU 0 ran none of its configurations: GPU 1
    # measured them, as it measures those of a GPU that cannot be opened
    assert done.exit_code == 0, done.stderr


@pytest.mark.parametrize("devices, workers", [((), 1), (("--devices", "all"), 2)])
def test_a_search_keeps_its_workers_warm_across_hand_outs(use_fake, kernels, tmp_path,
                                                          monkeypatch, devices, workers,
                                                          worker_starts):
    # Each hand-out of configurations (8 a GPU for bayes, 32 for brute and random) started
    # fresh workers, each a second on a GPU: 24 configurations took 4 starts on one GPU.
    import multiprocessing

    pytest.importorskip("optuna")
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
    use_fake(device_count=2)
    starts = worker_starts
    args = ["matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels),
            "--best", "--strategy", "bayes", "--budget", "24", *devices, *QUICK]
    done = invoke(*args)
    assert done.exit_code == 0, done.stderr
    assert "24 evaluated (24 measured" in done.stderr
    assert len(starts) == workers  # the head-to-head's too
    assert multiprocessing.active_children() == []  # ended with the command

    # stopped with the workers kept (in the head-to-head): they end with the command too
    from cudabench.cli import best

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(best, "choose", stopped)
    assert invoke(*args, "--no-tune-cache").exit_code == 130
    assert multiprocessing.active_children() == []


def test_tuning_flags_are_checked(use_fake, kernels, monkeypatch):
    base = ["matmul", "--size", "48", "--variant", "tune", "--kernels-dir", str(kernels)]
    done = invoke(*base, "--strategy", "random")
    assert done.exit_code == 2 and "add --best" in done.stderr
    done = invoke(*base, "--best", "--budget", "soon")
    assert done.exit_code == 2 and "--budget 'soon'" in done.stderr
    done = invoke(*base, "--no-tune-cache")
    assert done.exit_code == 2 and "--no-tune-cache" in done.stderr
    done = invoke(*base, "--best", "--strategy", "random", "--writeback")
    assert done.exit_code == 2 and "--writeback: not with a search" in done.stderr
    import builtins

    real_import = builtins.__import__

    def no_optuna(name, *args, **kwargs):
        if name == "optuna":
            raise ImportError("no optuna")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("importlib.import_module",
                        lambda name: no_optuna(name) if name == "optuna" else real_import(name))
    done = invoke(*base, "--best", "--strategy", "bayes")
    assert done.exit_code == 2
    assert "pip install 'optuna>=3' (cudabench's `tune` extra)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_search_beyond_the_host_s_memory_is_refused_before_anything_runs(use_fake,
                                                                           monkeypatch):
    monkeypatch.setattr("cudabench.measure.memory.host_available_bytes", lambda: 2**30)
    done = invoke("matmul", "--size", "20000", "--best", "--budget", "5")
    assert done.exit_code == 2
    assert "needs" in done.stderr and "would fit" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_line_cut_short_in_the_cache_costs_no_later_row(tmp_path):
    # A full disk or a power cut can leave half a line: the next row starts a line of its own.
    from cudabench.tuning.cache import TuneCache

    def passed(tile: int) -> BenchmarkResult:
        return BenchmarkResult(op="matmul", variant="tiled", params={"TILE": tile},
                               shape=(64, 64, 64), dims=("M", "K", "N"), dtype="float32",
                               hot=False, samples_s=(1e-3, 1.1e-3),
                               verification=Verification(True, 0.0, 0.0, 0, 10, "exact"),
                               device=FAKE_DEVICE)

    cache = TuneCache(tmp_path / "search.jsonl")
    cache.add(passed(8))
    with open(cache.path, "a", encoding="utf-8") as handle:
        handle.write('{"device": {"na')  # cut short
    cache.add(passed(16))
    cache.add(passed(32))
    assert sorted(row.params["TILE"] for row in cache.load().values()) == [8, 16, 32]


def test_an_edited_op_file_misses_the_cache(tmp_path):
    # the op's check decides a cached row's PASS as much as the kernel: a stricter check
    # must not be answered with the rows the old one passed
    import shutil

    import pytest

    from cudabench.errors import OpFileError
    from cudabench.ops.fingerprint import op_fingerprint as op_hash
    from cudabench.ops.registry import forget_file_ops, load_ops

    folder = tmp_path / "softmax"
    shutil.copytree(Path(__file__).parents[1] / "examples" / "softmax", folder)
    before = op_hash(load_ops([folder])["softmax"])
    assert op_hash(load_ops([folder])["softmax"]) == before
    with open(folder / "softmax.py", "a", encoding="utf-8") as handle:
        handle.write("# a stricter check\n")
    # the op loaded before the edit runs the old code: refused, not keyed on the new bytes
    with pytest.raises(OpFileError, match="changed since this process loaded it"):
        op_hash(load_ops([folder])["softmax"])
    forget_file_ops()  # as each command (and run()) does: loaded afresh
    assert op_hash(load_ops([folder])["softmax"]) != before


def test_an_edited_module_the_op_file_imports_from_its_folder_misses_the_cache(
        tmp_path, monkeypatch):
    # a reference moved into a `_ref.py` beside the op file was read from the cache after
    # _ref.py was edited: the rows were checked against the old reference
    import shutil

    from cudabench.ops.fingerprint import op_fingerprint as op_hash
    from cudabench.ops.registry import forget_file_ops, load_ops

    forget_file_ops()  # another test's _ref
    folder = tmp_path / "softmax"
    shutil.copytree(Path(__file__).parents[1] / "examples" / "softmax", folder)
    (folder / "_ref.py").write_text("import numpy as np\n\n\ndef reference(x):\n"
                                    "    return np.exp(x)\n")
    (folder / "_helpers").mkdir()  # `_`: helper code, not an op file
    (folder / "_helpers" / "__init__.py").write_text("")
    (folder / "_helpers" / "late.py").write_text("SCALE = 1.0\n")
    source = (folder / "softmax.py").read_text()
    source = source.replace("import numpy as np\n", "import numpy as np\n\n"
                            "import _ref\n", 1)
    source = source.replace("        x = inputs[\"x\"].astype(np.float64)\n",
                            "        from _helpers.late import SCALE  # imported when run\n"
                            "        _ref.reference(SCALE)\n"
                            "        x = inputs[\"x\"].astype(np.float64)\n", 1)
    (folder / "softmax.py").write_text(source)
    try:
        before = op_hash(load_ops([folder])["softmax"])
        assert op_hash(load_ops([folder])["softmax"]) == before
        with open(folder / "_ref.py", "a", encoding="utf-8") as handle:
            handle.write("# a corrected reference\n")
        edited = op_hash(load_ops([folder])["softmax"])
        assert edited != before
        (folder / "_helpers" / "late.py").write_text("SCALE = 2.0\n")
        assert op_hash(load_ops([folder])["softmax"]) != edited
    finally:
        forget_file_ops()


def test_a_range_too_wide_to_enumerate_is_held_and_said_so(tmp_path):
    # `allowed 1..1000000000` was held at its default with no word of it
    from cudabench.cli.tune import summary

    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "tune.cu").write_text(HEADER.replace(
        "// param SPLIT: default 1; allowed 1, 2, 3, 4",
        "// param SPLIT: default 1; allowed 1..1000000000") + BODY)
    space = space_of(folder)
    assert "SPLIT" not in space.names and len(space.plans) == VALID // 4
    found = search(space, settings(tmp_path, budget="2"), Runner(), FAKE_DEVICE.name)
    assert ("held SPLIT at its default 1 (allowed 1..1000000000: more than 64 values; "
            "-p SPLIT=... searches it)") in summary(found)
    assert space_of(folder, given={"SPLIT": [2, 5]}).held == ()  # given: searched


def test_the_op_fingerprint_covers_the_files_its_check_lives_in(tmp_path):
    # matmul's check is in ops/matmul_check.py, not ops/matmul.py; a user op may take its
    # class from another file
    from cudabench.ops import OPS
    from cudabench.ops.fingerprint import _FILES, op_fingerprint

    before = op_fingerprint(OPS["matmul"])
    check = Path(__file__).parents[1] / "cudabench" / "ops" / "matmul_check.py"
    real = str(check.resolve())
    stamp, _ = _FILES[real]
    _FILES[real] = (stamp, "edited")  # as if its bytes changed
    try:
        assert op_fingerprint(OPS["matmul"]) != before
    finally:
        del _FILES[real]
    assert op_fingerprint(OPS["matmul"]) == before


@pytest.mark.parametrize("search", [(), ("--budget", "3"), ("--devices", "all")])
def test_a_configuration_wrong_in_the_head_to_head_is_a_fail_in_every_file(tmp_path, search):
    # exit 3 and "FAIL when measured again head to head", but the results file, the CSV,
    # the history and the tuning cache kept it as a PASS (a later search took it again)
    import json
    import os
    import subprocess
    import sys

    # on two GPUs the head-to-head runs on the first: a row of the second was kept PASS
    env = {**os.environ, "FLAKY_COUNT": str(tmp_path / "builds"),
           "CUDABENCH_CACHE_DIR": str(tmp_path / "cache"), "FAKE_GPUS": "2",
           "FLAKY_AFTER": "2" if "--devices" in search else "1"}
    flaky = [sys.executable, str(Path(__file__).parent / "flaky_cli.py"), "transpose",
             "--size", "512", "--variant", "naive", "-p", "TILE=8,16,32", "--max-time", "0.02",
             "--no-vendor", "--best", *search]

    def statuses(name: str) -> dict[int, str]:
        out = tmp_path / f"{name}.json"
        searching = "--budget" in search
        csv = () if searching else ("--csv", str(tmp_path / "r.csv"),  # a search takes none
                                    "--markdown", str(tmp_path / "r.md"))
        done = subprocess.run([*flaky, "--json", str(out), *csv], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 3, done.stderr
        assert "TILE=8 512x512 float32: FAIL when measured again head to head" in done.stderr \
            or "3 from the tuning cache), 1 failed" in done.stderr, done.stderr
        rows = json.loads(out.read_text())["benchmarks"]
        found = [(row["params"]["TILE"], row["status"]) for row in rows if row["params"]]
        assert len(found) == 3, found  # one row each: no PASS of another GPU kept beside
        return dict(found)

    assert statuses("first") == {8: "FAIL", 16: "PASS", 32: "PASS"}
    if "--budget" not in search:
        assert "FAIL" in (tmp_path / "r.csv").read_text()
        assert "| TILE=8 | FAIL |" in (tmp_path / "r.md").read_text()  # the run's table too
    else:  # the cache's row for TILE=8 is the FAIL: a new search gives it no chance
        assert statuses("again") == {8: "FAIL", 16: "PASS", 32: "PASS"}


def test_searches_too_many_together_are_refused_before_planning(tmp_path, monkeypatch):
    # each space under the limit, their sum not: minutes planning, silently
    from cudabench.tuning import space

    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "tune.cu").write_text(HEADER.replace(
        "// param SPLIT: default 1; allowed 1, 2, 3, 4",
        "// param SPLIT: default 1; allowed 1..1000000000") + BODY)
    planned = []

    def make_plan(*args, **kwargs):
        planned.append(1)
        assert len(planned) < 1000, "planned before refused"
        return real(*args, **kwargs)

    real = space.make_plan
    monkeypatch.setattr(space, "make_plan", make_plan)
    requests = [Request("matmul", size=size, variants=("tune",), kernels_dirs=(folder,))
                for size in ("64", "128")]
    with pytest.raises(UsageError, match=r"360,000 configurations in 2 searches .* more than "
                       r"200,000; narrow it with -p"):
        build_spaces(requests, {"SPLIT": list(range(1, 20_001))}, explore=True)


def test_a_large_search_says_it_is_planning_first(use_fake, kernels, tmp_path, monkeypatch):
    # a search of 180,000 configurations was silent for minutes while each was planned
    from cudabench.tuning import space

    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(space, "ANNOUNCED", 30)
    args = [arg for arg in search_args(kernels, budget=2) if arg != "--quiet"]
    done = invoke(*args)
    assert done.exit_code == 0, done.output
    assert "note: checking 36 configurations against the kernels' headers" in done.stderr
    assert "checking" not in invoke(*args, "--quiet").stderr
    monkeypatch.setattr(space, "ANNOUNCED", 37)
    assert "checking" not in invoke(*args).stderr


def test_planning_a_search_loads_the_ops_once(kernels, monkeypatch):
    # each configuration loaded every op again (globbing and resolving the folders' files):
    # 1.5 ms a configuration, minutes for a large search
    from cudabench.ops import registry

    loads = []
    real = registry._load_ops
    monkeypatch.setattr(registry, "_load_ops", lambda dirs: loads.append(dirs) or real(dirs))
    space_of(kernels)
    assert len(loads) <= 3, loads  # the catalog, the request and the search: not 36


def test_loading_ops_once_ends_with_its_block_whatever_another_thread_does(monkeypatch):
    # a module global: a block entered in one thread and left after another's ended kept
    # the cache on for the rest of the process (later op-file edits unseen)
    import threading

    from cudabench.ops import registry

    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with registry.loaded_once():
            entered.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(10)
    with registry.loaded_once():
        leave.set()
        thread.join(10)
    loads = []
    real = registry._load_ops
    monkeypatch.setattr(registry, "_load_ops", lambda dirs: loads.append(dirs) or real(dirs))
    registry.load_ops(())
    registry.load_ops(())
    assert len(loads) == 2  # outside every block: loaded afresh each time


def test_a_search_says_what_it_chose_and_how_it_measured(use_fake, kernels, tmp_path,
                                                         monkeypatch):
    # nothing chosen printed a table of headers alone; --best-out said "Measured with
    # --no-vendor --no-batch" of flags never given (a search sets them itself)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    args = search_args(kernels, budget=2)
    use_fake(memory_bytes=1000)
    none = invoke(*args)
    assert none.exit_code == 2, none.output
    assert "best configuration per variant and size: none chosen" in none.stdout
    assert "┃" not in none.stdout and "│" not in none.stdout
    use_fake()
    out = tmp_path / "best.toml"
    done = invoke(*args, "--best-out", str(out))
    assert done.exit_code == 0, done.output
    assert "# Searched as with --no-vendor --no-batch, which a suite has no key for" in (
        out.read_text())


def test_a_search_says_which_variants_it_leaves_out(use_fake, kernels, tmp_path,
                                                    monkeypatch):
    # as a sweep's note says: `streaming` (run: on request) was dropped without a word
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    done = invoke("dot", "--size", "4096", "--best", "--strategy", "random", "--budget", "1",
                  *QUICK)
    assert done.exit_code == 0, done.output
    assert "note: left out streaming: run on request" in done.stderr
    # a variant whose defaults break a constraint is searched, not said to be skipped
    (kernels / "tune.cu").write_text(HEADER.replace("default 16", "default 32") + BODY)
    done = invoke("matmul", "--size", "48", "--kernels-dir", str(kernels), "--best",
                  "--strategy", "random", "--budget", "1", *QUICK)
    assert done.exit_code == 0, done.output
    assert "left out" in done.stderr and "skipped tune" not in done.stderr


@pytest.mark.parametrize("old", [True, False])
def test_a_search_stopped_in_the_final_write_says_where_its_rows_are(
        use_fake, kernels, tmp_path, monkeypatch, old):
    # the end's write ran outside the stop's handling: its rows were left in the .partial
    # beside an existing file, or a new file incomplete, without a word
    import shutil

    from cudabench.results import load_results
    from tests.helpers import stop_in_the_final_write

    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    results = tmp_path / "r.json"
    if old:
        shutil.copy(Path(__file__).parent / "data" / "compare" / "baseline.json", results)
    stop_in_the_final_write(monkeypatch, results, renamed=False)
    done = invoke("matmul", "--size", "48", "--variant", "tune", "--kernels-dir",
                  str(kernels), "--best", "--strategy", "random", "--budget", "5", "--seed",
                  "3", *QUICK, "--json", str(results))
    assert done.exit_code == 130, done.output
    said = " ".join(done.stderr.split())
    where = tmp_path / "r.json.partial" if old else results
    assert f"the run stopped: 5 of its rows are in {where}" in said, said
    assert load_results(where).metadata["complete"] is False
