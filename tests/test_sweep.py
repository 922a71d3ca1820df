"""Sweeps over sizes and parameters, --best with its head-to-head, CSV and progress output."""

from __future__ import annotations

import csv
import io
import os
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.analysis.best import decide
from cudabench.cli import cli
from cudabench.errors import UsageError
from cudabench.ops.sizes import expand_sizes, expand_values
from cudabench.results import load_results
from cudabench.results.model import BenchmarkResult, Status

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

QUICK = ["--warmup", "0", "--min-samples", "8", "--max-time", "0.05", "--no-vendor",
         "--no-batch"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(("text", "sizes"), [
    ("512,1024,2048", ["512", "1024", "2048"]),
    ("256..2048:x2", ["256", "512", "1024", "2048"]),
    ("1000..4000:+1000", ["1000", "2000", "3000", "4000"]),
    ("4096x256..1024:x2x4096", ["4096x256x4096", "4096x512x4096", "4096x1024x4096"]),
    ("45x70x33", ["45x70x33"]),  # an `x` outside a range's step separates extents
    ("8..8:x2", ["8"]),
    ("100..250:+100,64", ["100", "200", "64"]),
    ("1<<10..1<<12:x2", ["1024", "2048", "4096"]),
])
def test_the_sweep_grammar(text, sizes):
    assert expand_sizes(text) == sizes


@pytest.mark.parametrize("text", ["8..4:x2", "1..10:x1", "1..10:+0", "45xx3", "4096x", "a..b:x2",
                                  "1..1000000000:+1"])
def test_a_bad_sweep_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--size"):
        expand_sizes(text)


def test_a_product_of_ranges_is_counted_before_it_is_built():
    # 9000 x 9000 steps were built (7 GB, 70 s) before "more than 10000 sizes"
    started = time.perf_counter()
    for text in ("1..9000:+1x1..9000:+1", "1..9000:+1x1..9000:+1x1..9000:+1"):
        with pytest.raises(UsageError, match="more than 10000 sizes"):
            expand_sizes(text)
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize("text", ["1..10", "10..1", "256..8192x64"])
def test_a_range_without_its_step_says_so(text):
    with pytest.raises(UsageError, match="a range needs a step after a colon"):
        expand_sizes(text)


@pytest.mark.parametrize(("text", "message"), [
    ("256..1024:x2x2", "--size '256..1024:x2x2' gives 256x2: expected --size 1000 or "
                       "--size 512x256x128 (MxKxN)"),
    ("64,32x32", "--size '64,32x32' gives 32x32: expected"),
    ("32x32", "--size '32x32': expected"),  # as typed: nothing to add
])
def test_a_sweeps_size_the_op_refuses_is_quoted_as_typed(no_gpu_work, text, message):
    # it said `--size '256x2'`, a text the user never typed
    done = invoke("matmul", "--size", text)
    assert done.exit_code == 2 and done.stderr.startswith(f"cudabench: error: {message}"), (
        done.stderr)


def test_parameter_lists_and_ranges():
    assert expand_values("8,16,32", "--tile") == [8, 16, 32]
    assert expand_values("8..64:x2", "--tile") == [8, 16, 32, 64]
    with pytest.raises(UsageError, match="--tile"):
        expand_values("8,big", "--tile")
    # parameters may be negative, in lists and ranges too (sizes may not)
    assert expand_values("-2,2", "--param OFF") == [-2, 2]
    assert expand_values("-4..4:+4", "--param OFF") == [-4, 0, 4]
    assert expand_values("1<<14,0x10", "--param CHUNK") == [16384, 16]
    assert expand_values("08,016", "--tile") == [8, 16]  # decimal, as `-p TILE=08` is
    for bad in ("-4..4:x2", "1<<99999"):
        with pytest.raises(UsageError, match="--param OFF"):
            expand_values(bad, "--param OFF")


def test_a_sweep_runs_every_point_and_skips_what_a_variant_cannot_run(use_fake, tmp_path):
    path = tmp_path / "s.json"
    done = invoke("transpose", "--size", "32,48", "--tile", "8,128", "--variant", "shared",
                  "--variant", "evict_first", *QUICK, "--json", str(path))
    assert done.exit_code == 0, done.output
    rows = load_results(path).benchmarks
    ran = {(r.variant, r.shape[0], r.params.get("TILE")) for r in rows
           if r.status is Status.PASS}
    assert ran == {(v, size, tile) for v in ("shared", "evict_first") for size in (32, 48)
                   for tile in (8, 128) if (v, tile) != ("shared", 128)}
    skipped = [r for r in rows if r.status is Status.SKIP]
    assert len(skipped) == 2 and all("TILE" in (r.skipped or "") for r in skipped)


def test_a_sweep_s_skipped_points_say_which_and_can_be_recorded(use_fake, tmp_path):
    # every SKIP row of a variant had empty params: two skipped points read as one
    # benchmark twice, which --record, history import and calibrate refused
    path, db = tmp_path / "s.json", tmp_path / "h.db"
    done = invoke("transpose", "--size", "64", "--variant", "naive", "--variant", "evict_first",
                  "-p", "TILE=16,64,128",
                  *QUICK, "--json", str(path), "--record", "--db", str(db))
    assert done.exit_code == 0, done.output
    rows = load_results(path).benchmarks
    skipped = [r for r in rows if r.status is Status.SKIP]
    assert sorted(r.params["TILE"] for r in skipped) == [64, 128]
    ran = next(r for r in rows if r.variant == "naive" and r.status is Status.PASS)
    assert all(r.params.keys() == ran.params.keys() for r in skipped)  # as a run row's
    assert "recorded as run 1" in done.output


def test_a_search_prunes_a_value_one_variant_allows_and_refuses_one_none_allows(use_fake):
    # each configuration of a search is planned for one variant: the typo check must
    # judge the values across the variants chosen, once
    args = ("transpose", "--size", "256", "--variant", "naive", "--variant", "vectorized",
            *QUICK, "--best", "--strategy", "brute", "--no-tune-cache")
    done = invoke(*args, "-p", "TILE=16,64")
    assert done.exit_code == 0, done.output
    assert "transpose/vectorized at 256: " in done.stderr and "TILE in 8, 16, 32)" in done.stderr
    refused = invoke(*args, "-p", "TILE=16,17")
    assert refused.exit_code == 2 and "--param TILE 17: no selected transpose variant " \
        "allows it" in refused.stderr


def test_a_swept_value_no_selected_variant_allows_is_a_usage_error(use_fake):
    # a typo (--tile 17) gave SKIP rows, exit 0
    done = invoke("matmul", "--size", "32,48", "--tile", "8,17", *QUICK)
    assert done.exit_code == 2, done.output
    assert "--tile 17: no selected matmul variant allows it (TILE in 8, 16, 32)" in done.stderr


def test_a_variant_without_the_swept_parameter_runs_once_per_size(use_fake, tmp_path):
    path = tmp_path / "s.json"
    done = invoke("transpose", "--size", "40", "--param", "BLOCK_ROWS=4,8", *QUICK,
                  "--json", str(path))
    assert done.exit_code == 0, done.output
    names = [r.variant for r in load_results(path).benchmarks]
    assert names.count("naive") == 1 and names.count("shared") == 2


def test_a_skip_row_is_not_repeated_for_a_parameter_its_variant_does_not_take(use_fake,
                                                                             tmp_path):
    # shared cannot run BLOCK_ROWS=16 and takes no GROUP: its SKIP row came once per GROUP
    path = tmp_path / "s.json"
    done = invoke("transpose", "--size", "40", "--param", "BLOCK_ROWS=8,16", "--param",
                  "GROUP=1,2", *QUICK, "--json", str(path))
    assert done.exit_code == 0, done.output
    skips = [(r.variant, r.params["BLOCK_ROWS"]) for r in load_results(path).benchmarks
             if r.status is Status.SKIP]
    assert sorted(skips) == [("shared", 16), ("shared_padded", 16)]
    assert done.stderr.count("SKIP: transpose/shared ") == 1


def test_best_names_a_winner_and_writes_a_suite(use_fake, tmp_path):
    # TILE changes nothing in the fake's cost: the close call is re-measured head to head,
    # and whatever it decides (a winner or a tie), the suite names one configuration.
    out = tmp_path / "best.toml"
    done = invoke("matmul", "--size", "32..64:x2", "--tile", "8,16", "--variant", "naive",
                  *QUICK, "--best", "--best-out", str(out))
    assert done.exit_code == 0, done.output
    assert "best configuration per variant and size: matmul" in done.stdout  # one op
    table = done.stdout.split("best configuration per variant and size")[1]
    verdicts = [line.rstrip(" │").split("│")[-2].strip()
                for line in table.splitlines() if line.startswith("│ ")]
    assert len(verdicts) == 2 and all(v in ("best", "tie") for v in verdicts), verdicts
    suite = tomllib.loads(out.read_text())
    assert [b["size"] for b in suite["benchmark"]] == ["32x32x32", "64x64x64"]
    assert all(b["variants"] == ["naive"] and "TILE" in b["params"] for b in suite["benchmark"])
    rerun = invoke("run", str(out), "--no-vendor")  # the written suite runs as it is
    assert rerun.exit_code == 0, rerun.output
    # the flags a suite has no key for are said: run without them, it measured cuBLAS too
    assert "# Measured with --no-vendor --no-batch, which a suite has no key for: cudabench " \
        "run FILE --no-vendor --no-batch" in out.read_text()
    assert "seed" not in suite["benchmark"][0] and "full_check" not in suite["benchmark"][0]


def test_best_out_keeps_the_seed_check_and_timing_the_search_measured_with(use_fake,
                                                                          tmp_path):
    # the suite held no seed, full_check or [timing]: run back, it measured other inputs,
    # with the randomized check and the default timing
    out = tmp_path / "best.toml"
    done = invoke("matmul", "--size", "32", "--tile", "8,16", "--variant", "naive", *QUICK,
                  "--precision", "0.02", "--seed", "7", "--full-check", "--best",
                  "--best-out", str(out))
    assert done.exit_code == 0, done.output
    suite = tomllib.loads(out.read_text())
    assert suite["timing"] == {"warmup": 0.0, "min_samples": 8, "precision": 0.02,
                               "max_time": 0.05}
    (entry,) = suite["benchmark"]
    assert entry["seed"] == 7 and entry["full_check"] is True
    rerun = invoke("run", str(out), "--no-vendor", "--dry-run")
    assert "until the median is known to ±2.00% or after 0.05 s" in rerun.stdout, rerun.output


def test_best_re_measures_in_the_runs_warm_worker(use_fake, monkeypatch):
    # Two sizes, each a close call re-measured head to head: one worker process for the
    # sweep and both re-measures (a fresh one each cost a spawn and a CUDA context).
    from cudabench.runner import workers

    started = []
    spawn = workers.Worker._start
    monkeypatch.setattr(workers.Worker, "_start",
                        lambda self: (started.append(self), spawn(self))[1])
    done = invoke("matmul", "--size", "32..64:x2", "--tile", "8,16", "--variant", "naive",
                  *QUICK, "--best")
    assert done.exit_code == 0, done.output
    assert "best configuration per variant and size" in done.stdout
    assert len(started) == 1
    assert not workers._KEPT  # ended with the command


def test_best_out_names_the_kernels_dirs_its_winners_came_from(use_fake, tmp_path,
                                                                monkeypatch):
    examples = Path(__file__).parents[1] / "examples" / "softmax"
    out = tmp_path / "best.toml"
    done = invoke("softmax", "--kernels-dir", str(examples), "--size", "64x64", *QUICK,
                  "--best", "--best-out", str(out))
    assert done.exit_code == 0, done.output
    # relative to the suite's folder, as a suite reads it (here climbing out of tmp_path)
    assert tomllib.loads(out.read_text())["kernels_dirs"] == [
        Path(os.path.relpath(examples.resolve(), tmp_path.resolve())).as_posix()]
    monkeypatch.chdir(tmp_path)  # run from elsewhere: the suite finds its op by itself
    rerun = invoke("run", str(out), "--no-vendor")
    assert rerun.exit_code == 0, rerun.output


def test_best_out_suite_runs_its_own_kernels_once_the_checkout_moves(use_fake, tmp_path,
                                                                       monkeypatch):
    # kernels_dirs was absolute: the committed suite of a moved checkout failed (no such
    # directory), and a second copy silently ran the first one's kernels
    import shutil

    from helpers import MATMUL_HEADER, write_kernel

    write_kernel(tmp_path / "projA" / "my_kernels" / "matmul", "mine", MATMUL_HEADER)
    monkeypatch.chdir(tmp_path / "projA")
    done = invoke("matmul", "--kernels-dir", "my_kernels", "--variant", "mine", "--size", "32",
                  "--tile", "8,16", *QUICK, "--best", "--best-out", "cudabench.toml")
    assert done.exit_code == 0, done.output
    assert tomllib.loads(Path("cudabench.toml").read_text())["kernels_dirs"] == ["my_kernels"]
    monkeypatch.chdir(tmp_path)
    shutil.move(tmp_path / "projA", tmp_path / "projB")
    monkeypatch.chdir(tmp_path / "projB")
    rerun = invoke("run", "--no-vendor")
    assert rerun.exit_code == 0, rerun.output


def test_best_out_names_the_folder_given_for_a_kernel_directly_in_it(use_fake, tmp_path,
                                                                      monkeypatch):
    # FOLDER/NAME.cu, not FOLDER/OP/NAME.cu: the suite must not name the folder above,
    # whose every .py it would import; a winner from the tuning cache names it too.
    from helpers import MATMUL_HEADER, write_kernel

    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    write_kernel(tmp_path / "kd", "mine", MATMUL_HEADER)
    (tmp_path / "evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w')\n")
    for attempt in ("measured", "from the tuning cache"):
        out = tmp_path / f"best-{attempt}.toml"
        done = invoke("matmul", "--kernels-dir", str(tmp_path / "kd"), "--variant", "mine",
                      "--size", "64", "--tile", "8,16", *QUICK, "--best", "--strategy",
                      "brute", "--best-out", str(out))
        assert done.exit_code == 0, done.output
        assert tomllib.loads(out.read_text())["kernels_dirs"] == ["kd"], attempt
        assert invoke("run", str(out), "--no-vendor").exit_code == 0
    assert "1 from the tuning cache" in done.stderr or "2 from the tuning cache" in done.stderr
    assert not (tmp_path / "ran").exists()


def spoil_head_to_head(monkeypatch, tiles):
    """Make the --best re-measure of these TILE values come back wrong (FAIL)."""
    import dataclasses

    from cudabench.cli import best as best_cli
    from cudabench.results.model import Kind, Verification

    real = best_cli.run_plans

    def spoiled(solo, spec, **placement):
        outcome = real(solo, spec, **placement)
        wrong = Verification(False, 1.0, 1.0, 1, 4096, "exact")
        return dataclasses.replace(outcome, results=tuple(
            dataclasses.replace(r, verification=wrong)
            if r.kind is Kind.VARIANT and r.params.get("TILE") in tiles else r
            for r in outcome.results))

    monkeypatch.setattr(best_cli, "run_plans", spoiled)


def test_best_drops_a_contender_that_fails_its_head_to_head(use_fake, monkeypatch, tmp_path):
    # It passed the sweep, then computed a wrong result when measured again: no winner.
    spoil_head_to_head(monkeypatch, {16})
    out = tmp_path / "best.toml"
    done = invoke("matmul", "--size", "64", "--tile", "8,16", "--variant", "naive", *QUICK,
                  "--best", "--best-out", str(out))
    assert done.exit_code == 3, done.output
    assert "TILE=16" in done.stderr and "FAIL when measured again head to head" in done.stderr
    (entry,) = tomllib.loads(out.read_text())["benchmark"]
    assert entry["params"] == {"TILE": 8}


def test_best_adds_its_winners_and_failures_to_the_markdown(use_fake, monkeypatch, tmp_path):
    # a CI job summary of a --best run shows what it decided, not only what it measured
    spoil_head_to_head(monkeypatch, {16})
    out = tmp_path / "summary.md"
    done = invoke("matmul", "--size", "32..64:x2", "--tile", "8,16", "--variant", "naive",
                  *QUICK, "--best", "--markdown", str(out))
    assert done.exit_code == 3, done.output
    text = out.read_text(encoding="utf-8")
    run_tables, best = text.split("### best configuration per variant and size\n")
    assert "### matmul 32x32x32" in run_tables and "### matmul 64x64x64" in run_tables
    winners = [line for line in best.splitlines() if line.startswith("| matmul |")]
    assert len(winners) == 2 and all("| TILE=8 |" in line for line in winners), best
    assert best.count("TILE=16 ") == 2 and "FAIL when measured again head to head" in best


def test_a_best_run_stopped_head_to_head_says_so_in_the_markdown(use_fake, monkeypatch,
                                                                 tmp_path):
    # Ctrl-C during the re-measure left the run's tables and no word of the winners
    from cudabench.cli import best as best_cli

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(best_cli, "run_plans", stopped)
    out, suite, rows = tmp_path / "summary.md", tmp_path / "best.toml", tmp_path / "r.json"
    suite.write_text("# Written by cudabench --best: the last good suite\n", encoding="utf-8")
    done = invoke("matmul", "--size", "64", "--tile", "8,16", "--variant", "naive", *QUICK,
                  "--best", "--markdown", str(out), "--best-out", str(suite), "--json", str(rows))
    assert done.exit_code == 130, done.output
    text = out.read_text(encoding="utf-8")
    assert "### matmul 64x64x64" in text
    assert "stopped during the head-to-head re-measure, so no configuration was chosen" in text
    assert suite.read_text(encoding="utf-8") == \
        "# Written by cudabench --best: the last good suite\n"
    assert load_results(rows).metadata["complete"] is True  # the sweep itself completed
    # said on the terminal too (stderr said only "interrupted")
    assert f"stopped during --best's head-to-head re-measure: the run's rows are in {rows}; " \
        f"no configuration was chosen, and {suite} is as it was" in " ".join(done.stderr.split())


def test_best_out_is_kept_when_no_configuration_passes(use_fake, monkeypatch, tmp_path):
    spoil_head_to_head(monkeypatch, {8, 16})
    out = tmp_path / "best.toml"
    out.write_text("# Written by cudabench --best: the last good suite\n", encoding="utf-8")
    done = invoke("matmul", "--size", "64", "--tile", "8,16", "--variant", "naive", *QUICK,
                  "--best", "--best-out", str(out))
    assert done.exit_code == 3, done.output
    assert f"{out} not written" in " ".join(done.stderr.split())
    assert out.read_text(encoding="utf-8") == "# Written by cudabench --best: the last good suite\n"


def test_best_names_a_variant_and_size_where_no_configuration_passed(use_fake, tmp_path):
    # the winners' table, --markdown and --best-out simply lacked `atomic`: it read as if
    # that variant had not been asked for
    from cudabench.engines.fake_kernels import Fault

    use_fake(faults={"atomic": Fault.WRONG_ELEMENT})
    out, summary = tmp_path / "best.toml", tmp_path / "summary.md"
    done = invoke("dot", "--size", "1000,2000", "--variant", "atomic", "--variant",
                  "shared_tree", "-p", "BLOCK=128,256", *QUICK, "--best", "--best-out", str(out),
                  "--markdown", str(summary))
    assert done.exit_code == 3, done.output
    for size in ("1000", "2000"):
        line = (f"--best: dot/atomic {size} float32: no configuration passed (2 FAIL): "
                "none chosen")
        assert line in done.stderr.splitlines(), done.stderr
        assert f"- {line}" in summary.read_text(encoding="utf-8").splitlines()
    assert "shared_tree" in done.stderr + done.stdout and "--best: dot/shared_tree" not in (
        done.stderr)
    entries = tomllib.loads(out.read_text())["benchmark"]
    assert {e["variants"][0] for e in entries} == {"shared_tree"}
    # none chosen at all: the markdown's table was its headers alone
    alone = invoke("dot", "--size", "1000", "--variant", "atomic", "-p", "BLOCK=128,256",
                   *QUICK, "--best", "--markdown", str(summary))
    assert alone.exit_code == 3, alone.output
    text = summary.read_text(encoding="utf-8")
    assert "best configuration per variant and size: none chosen" in text
    assert "| best params" not in text and "best params" not in text.split("none chosen")[1]


def sample_row(params, median, noise=0.001, n=40):
    samples = tuple(median * (1 + noise * ((i % 7) - 3) / 3) for i in range(n))
    return BenchmarkResult(op="matmul", variant="tiled", params=params, shape=(64, 64, 64),
                           dims=("M", "K", "N"), dtype="float32", hot=False, samples_s=samples)


def test_rows_from_several_gpus_are_re_measured_on_one_before_a_winner_is_named():
    # A search over --devices: TILE=16 ran on a GPU 5% slower than TILE=8's, and looks 3%
    # slower though it is the faster; beyond the noise, so it used not to be re-measured.
    import dataclasses

    from cudabench.cli.best import choose
    from cudabench.engines.fake_engine import FAKE_DEVICE, FakeSpec
    from cudabench.planning.plan import Request, make_plan
    from cudabench.results.model import RunOutcome

    plans = [make_plan(Request(op="matmul", size="64", variants=("tiled",),
                               params={"TILE": tile})) for tile in (8, 16)]
    from cudabench.results.model import Verification

    right = Verification(True, 0.0, 0.0, 0, 4096, "exact")
    gpus = [dataclasses.replace(FAKE_DEVICE, index=i, uuid=f"GPU-{i}") for i in (0, 1)]
    rows = [dataclasses.replace(sample_row({"TILE": 8}, 1.00e-3), verification=right,
                                device=gpus[0]),
            dataclasses.replace(sample_row({"TILE": 16}, 1.03e-3), verification=right,
                                device=gpus[1])]
    measured = []

    def rerun(solo):  # the head-to-head, on one GPU: TILE=16 is 2% faster there
        measured.append(len(solo))
        return RunOutcome(tuple(dataclasses.replace(
            sample_row(dict(plan.variants[0].params),
                       1.0e-3 if plan.variants[0].params["TILE"] == 8 else 0.98e-3),
            verification=right) for plan in solo))

    choices, failed = choose(RunOutcome(tuple(rows)), plans, FakeSpec(), rerun=rerun)
    assert measured and not failed
    assert choices[0].best.params == {"TILE": 16}
    # a GPU 30% slower (throttled, shared): its fastest, TILE=16, was beyond 15% of the
    # other GPU's and never a contender; TILE=32 was named "best" by a margin, though
    # TILE=16 is 3% faster on one GPU
    plans.append(make_plan(Request(op="matmul", size="64", variants=("tiled",),
                                   params={"TILE": 32})))
    slow_gpu = [dataclasses.replace(sample_row({"TILE": 8}, 1.05e-3), verification=right,
                                    device=gpus[0]),
                dataclasses.replace(sample_row({"TILE": 32}, 1.03e-3), verification=right,
                                    device=gpus[0]),
                dataclasses.replace(sample_row({"TILE": 16}, 1.30e-3), verification=right,
                                    device=gpus[1])]

    def rerun_one_gpu(solo):
        speed = {8: 1.05e-3, 16: 1.0e-3, 32: 1.03e-3}
        return RunOutcome(tuple(dataclasses.replace(
            sample_row(dict(plan.variants[0].params),
                       speed[plan.variants[0].params["TILE"]]), verification=right)
            for plan in solo))

    choices, failed = choose(RunOutcome(tuple(slow_gpu)), plans, FakeSpec(),
                             rerun=rerun_one_gpu)
    assert not failed and choices[0].best.params == {"TILE": 16}
    # two Ray nodes' GPUs: both index 0, told apart by their UUIDs
    nodes = [dataclasses.replace(r, device=dataclasses.replace(r.device, index=0))
             for r in slow_gpu]
    choices, failed = choose(RunOutcome(tuple(nodes)), plans, FakeSpec(), rerun=rerun_one_gpu)
    assert not failed and choices[0].best.params == {"TILE": 16}


def test_the_head_to_head_goes_to_the_first_gpu_not_given_up(monkeypatch):
    import dataclasses

    from cudabench.cli import best as best_cli
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.results.model import RunOutcome, Verification
    from cudabench.runner.devices import Slot
    from cudabench.runner.gpus import Fleet

    slots = [Slot(2, "2"), Slot(0, "0"), Slot(1, "1")]
    said: list[str] = []
    assert best_cli.head_to_head_gpus(None, said.append) is None
    every = {0, 1, 2}
    assert best_cli.head_to_head_gpus(Fleet(slots, opened=every), said.append) == slots[:1]
    # one that found no work in the run is untried: one that opened first
    assert best_cli.head_to_head_gpus(Fleet(slots, opened={1}), said.append) == slots[2:]
    assert not said
    assert best_cli.head_to_head_gpus(Fleet(slots, opened=every, lost={2, 0}),
                                      said.append) == slots[2:]
    assert said == ["--best re-measures its close calls head to head on GPU 1: GPU 2, GPU 0 "
                    "were given up in the run"]
    assert best_cli.head_to_head_gpus(Fleet(slots, opened=every, lost=every),
                                      said.append) == []
    assert "every GPU was given up in the run (GPU 2, GPU 0, GPU 1)" in said[-1]

    # none left: the run's own samples decide its close call, nothing is re-measured
    def nowhere(*args, **kwargs):
        raise AssertionError("re-measured with every GPU given up")

    monkeypatch.setattr(best_cli, "run_plans", nowhere)
    right = Verification(True, 0.0, 0.0, 0, 4096, "exact")
    rows = tuple(dataclasses.replace(sample_row({"TILE": tile}, 1.0e-3), verification=right)
                 for tile in (8, 16))
    choices, failed = best_cli.choose(RunOutcome(rows), [], FakeSpec(), devices=[])
    assert len(choices) == 1 and choices[0].is_tie and not failed


def test_a_clear_winner_is_named_and_a_close_call_is_a_tie():
    clear = decide([sample_row({"TILE": 8}, 1.2e-3), sample_row({"TILE": 16}, 1.0e-3)])
    assert clear.best.params == {"TILE": 16} and not clear.is_tie
    assert clear.margin == pytest.approx(0.2, rel=0.01)
    close = decide([sample_row({"TILE": 8}, 1.000e-3), sample_row({"TILE": 16}, 1.001e-3)])
    assert close.is_tie


def test_the_rematch_overrules_a_lucky_first_run():
    rows = [sample_row({"TILE": 8}, 0.99e-3), sample_row({"TILE": 16}, 1.0e-3)]
    rematch = {0: [1.05e-3 + i * 1e-7 for i in range(30)],
               1: [1.0e-3 + i * 1e-7 for i in range(30)]}
    assert decide(rows, rematch).best.params == {"TILE": 16}


def test_the_runner_up_and_margin_come_from_the_samples_that_decided():
    # the clocks fell between the sweep and the head-to-head: everything 10% slower there.
    # The runner-up was taken with its sweep samples beside the winner's head-to-head ones:
    # a configuration 5% slower read as "+-4.2%", faster than the winner
    rows = [sample_row({"TILE": 8}, 1.00e-3), sample_row({"TILE": 16}, 1.002e-3),
            sample_row({"TILE": 32}, 1.05e-3)]
    rematch = {0: [1.10e-3 + i * 1e-8 for i in range(30)],
               1: [1.16e-3 + i * 1e-8 for i in range(30)]}
    choice = decide(rows, rematch)
    assert choice.best.params == {"TILE": 8}
    assert choice.runner_up is not None and choice.runner_up.params == {"TILE": 16}
    assert choice.margin == pytest.approx(1.16 / 1.10 - 1, rel=0.01)
    assert choice.median_s == pytest.approx(1.10e-3 + 14.5e-8)  # the head-to-head's median


def test_a_search_takes_one_shape_once_however_it_is_spelt(use_fake, tmp_path):
    # "--size 64,64x64" searched transpose's 64x64 twice: the winner was listed among its
    # own ties, and the margin read "+-0.2%"
    done = invoke("transpose", "--size", "64,64x64", "--variant", "naive", "--best",
                  "--strategy", "brute", *QUICK, "--no-tune-cache")
    assert done.exit_code == 0, done.output
    winners = [line for line in done.stdout.splitlines() if line.startswith("│ 64x64")]
    assert len(winners) == 1, done.stdout
    assert done.stderr.count("transpose/naive at ") == 1, done.stderr  # one search


def test_best_out_needs_best(use_fake, tmp_path):
    done = invoke("matmul", "--best-out", str(tmp_path / "b.toml"))
    assert done.exit_code == 2 and "--best-out needs --best" in done.stderr


def test_csv_has_a_row_per_benchmark(use_fake, tmp_path):
    path = tmp_path / "r.csv"
    done = invoke("dot", "--size", "1000", *QUICK, "--csv", str(path))
    assert done.exit_code == 0, done.output
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [r["variant"] for r in rows] == ["atomic", "bulk", "deterministic", "shared_tree",
                                            "vectorized_shuffle", "memcpy_dtod"]
    assert all(float(r["median_s"]) > 0 for r in rows)


def test_progress_is_quiet_off_a_terminal_unless_forced(use_fake):
    quiet = invoke("dot", "--size", "1000", *QUICK)
    assert "[1/" not in quiet.stderr
    loud = invoke("dot", "--size", "1000", *QUICK, "--progress")
    assert "[1/6] dot/atomic" in loud.stderr and "left" in loud.stderr
    assert "[1/" not in invoke("dot", "--size", "1000", *QUICK, "--quiet").stderr


def test_a_suite_sweeps_too(use_fake, tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\nsize = "32..64:x2"\nvariants = ["tiled"]\n'
                     'params = { TILE = [8, 16] }\n')
    path = tmp_path / "r.json"
    done = invoke("run", str(suite), "--json", str(path), "--no-vendor", "--no-batch")
    assert done.exit_code == 0, done.output
    points = {(r.shape[0], r.params["TILE"]) for r in load_results(path).benchmarks}
    assert points == {(32, 8), (32, 16), (64, 8), (64, 16)}


@pytest.mark.parametrize(("flags", "keys"), [([], {}), (["--l2-flush", "memset"],
                                                          {"l2_flush": "memset"}),
                                             (["--hot"], {"hot": True})])
def test_the_written_suite_measures_as_the_search_did(use_fake, tmp_path, flags, keys):
    out = tmp_path / "best.toml"
    done = invoke("matmul", "--size", "32", "--tile", "8,16", "--variant", "naive", *QUICK,
                  *flags, "--best", "--best-out", str(out))
    assert done.exit_code == 0, done.output
    (entry,) = tomllib.loads(out.read_text())["benchmark"]
    assert {key: entry[key] for key in ("hot", "l2_flush") if key in entry} == keys


def _dot_atomic_with(folder, name: str, edit) -> None:
    """Write folder/dot/NAME.cu: dot's atomic kernel, its header edited."""
    from pathlib import Path

    kernels = Path(__file__).parents[1] / "kernels" / "dot"
    (folder / "dot").mkdir(parents=True, exist_ok=True)
    for header in kernels.glob("*.cuh"):
        (folder / "dot" / header.name).write_text(header.read_text(encoding="utf-8"),
                                                  encoding="utf-8")
    source = (kernels / "atomic.cu").read_text(encoding="utf-8")
    (folder / "dot" / f"{name}.cu").write_text(edit(source), encoding="utf-8")


def test_a_search_whose_every_configuration_is_pruned_says_so_not_the_budget(use_fake,
                                                                             tmp_path):
    # "--budget ran out before any configuration was evaluated" with no --budget given
    _dot_atomic_with(tmp_path, "prodatomic", lambda text: text.replace(
        "// param BLOCKS_PER_SM: default 8; allowed 1..64\n",
        "// param BLOCKS_PER_SM: default 8; allowed 1..64\n"
        "// constraint: BLOCK * BLOCKS_PER_SM <= N\n"))
    done = invoke("dot", "--kernels-dir", str(tmp_path), "--variant", "prodatomic",
                  "--size", "4096", "-p", "BLOCKS_PER_SM=64", "-p", "BLOCK=128,256", *QUICK,
                  "--best", "--strategy", "brute", "--no-tune-cache")
    assert done.exit_code == 2, done.output
    assert "every configuration was pruned before it ran (breaks a header constraint " \
        "`BLOCK * BLOCKS_PER_SM <= N`)" in done.stderr
    assert "--budget" not in done.stderr


@pytest.mark.parametrize("search", [(), ("--best", "--strategy", "brute", "--no-tune-cache")])
def test_a_sweep_or_search_that_could_run_no_configuration_exits_2(use_fake, tmp_path,
                                                                   search):
    # every point needs more shared memory than a block may have: the sweep exited 0 (the
    # copy row counted as measured), the search 3 (as if a kernel computed wrong)
    _dot_atomic_with(tmp_path, "dynatomic", lambda text: text.replace(
        "block BLOCK\n", "block BLOCK; dynamic_shared BLOCK * 1000\n", 1))
    quick = [arg for arg in QUICK if arg != "--no-vendor"]  # the copy row measured too
    done = invoke("dot", "--kernels-dir", str(tmp_path), "--variant", "dynatomic",
                  "-p", "BLOCK=512,1024", "--size", "4096", *quick, *search)
    assert done.exit_code == 2, done.output
    assert "dynamic shared memory" in done.stderr


def test_a_search_at_a_size_the_defaults_cannot_run_searches_the_rest(use_fake, tmp_path):
    # `constraint: BLOCK <= N` at N=128 broke the default BLOCK=256: the search was refused
    # over a value nobody asked for, and a sweep of sizes dropped that size without a word
    _dot_atomic_with(tmp_path, "myatomic", lambda text: text.replace(
        "// param BLOCKS_PER_SM: default 8; allowed 1..64\n",
        "// param BLOCKS_PER_SM: default 8; allowed 1..64\n// constraint: BLOCK <= N\n"))
    base = ("dot", "--kernels-dir", str(tmp_path), "--variant", "myatomic", *QUICK, "--best",
            "--strategy", "brute", "--no-tune-cache", "-p", "BLOCKS_PER_SM=8")
    done = invoke(*base, "--size", "128", "-p", "BLOCK=32,64")
    assert done.exit_code == 0, done.output
    assert "dot/myatomic at 128: 2 configurations; 2 evaluated" in done.stderr
    both = invoke(*base, "--size", "128,4096", "-p", "BLOCK=32,64")
    assert both.exit_code == 0, both.output
    assert "dot/myatomic at 128: " in both.stderr and "dot/myatomic at 4096: " in both.stderr


def test_best_re_measures_the_fastest_few_of_a_flat_landscape(use_fake, monkeypatch):
    # every one of 32 configurations within the noise went to the head-to-head, three
    # rounds each, and the "tied with" cell listed them all
    from cudabench.cli import best as best_command

    measured = []
    real = best_command._rematch

    def counted(rows, contenders, plans, rerun):
        measured.append(len(contenders))
        return real(rows, contenders, plans, rerun)

    monkeypatch.setattr(best_command, "_rematch", counted)
    done = invoke("dot", "--variant", "atomic", "--size", "4096", "-p", "BLOCK=32,64",
                  "-p", "BLOCKS_PER_SM=1..16:+1", *QUICK, "--best")
    assert done.exit_code == 0, done.output
    assert measured and max(measured) <= best_command.MOST_CONTENDERS


SMALL_ONLY = ('// cudabench: transpose\n// param TT: default 16; allowed 8, 16\n'
              '// constraint: TT <= COLS\n'
              '// launch my_t: grid cdiv(COLS, TT), cdiv(ROWS, TT); block TT, TT\n\n'
              'extern "C" __global__ void my_t(const DTYPE* A, DTYPE* B, int R, int C) {}\n')


def test_a_variant_no_one_named_that_cannot_run_one_size_is_a_skip_row(use_fake, tmp_path):
    # its defaults break a constraint at --size 8: as at a sweep's point, a SKIP row; it
    # stopped the run, and no built-in variant ran (a suite's entry too)
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "small.cu").write_text(SMALL_ONLY)
    suite = tmp_path / "cudabench.toml"
    suite.write_text('kernels_dirs = ["k"]\n[timing]\nmin_samples = 8\nmax_time = 0.05\n'
                     '[[benchmark]]\nop = "transpose"\nsize = "8"\n')
    for run in (["transpose", "--size", "8", "--kernels-dir", str(tmp_path / "k"), *QUICK],
                ["run", str(suite), "--no-vendor", "--no-batch"]):
        path = tmp_path / "r.json"
        done = invoke(*run, "--json", str(path))
        assert done.exit_code == 0, done.output
        rows = {r.variant: r for r in load_results(path).benchmarks}
        assert rows["naive"].status is Status.PASS
        assert "breaks the header's constraint `TT <= COLS`" in rows["small"].skipped
    named = invoke("transpose", "--size", "8", "--kernels-dir", str(tmp_path / "k"),
                   "--variant", "small", "--variant", "naive", *QUICK)
    assert named.exit_code == 2 and "small.cu:3: transpose/small with TT=16 breaks" \
        in named.output  # asked for by name: the error it was
