"""The Python API (cudabench.api) end to end on the fake engine: run, run_suite, Results,
compare with the command's verdicts, inline kernel sources, errors and display."""

from __future__ import annotations

import dataclasses

import io
import os
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import invoke, stopped_after
from pty_terminal import run_in_terminal
from rich.console import Console

import cudabench
import cudabench.api as cb
from cudabench.engines.fake_kernels import Fault
from cudabench.errors import (
    CudabenchError,
    ExitCode,
    GpuEnvironmentError,
    KernelFileError,
    ResultsFileError,
    UsageError,
)
from cudabench.history.store import Store
from cudabench.results import Status, load_results

# Enough samples for the rank test to resolve a change (at 5 per side it never can), quick.
FAST = cb.TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)
KERNELS = Path(__file__).resolve().parents[1] / "kernels"


def run_tiled(**options):
    """Run matmul's naive and tiled variants at a small size, no vendor row."""
    return cb.run("matmul", variants=["naive", "tiled"], size=64, vendor=False, timing=FAST,
                  **options)


def test_run_returns_every_row_and_writes_the_results_file(use_fake, tmp_path):
    results = run_tiled(json=tmp_path / "now.json")
    assert [r.variant for r in results] == ["naive", "tiled"]
    assert len(results) == 2 and results[1].variant == "tiled"
    assert results.ok and results.exit_code is ExitCode.OK and not results.failures
    tiled = results.row("tiled")
    assert tiled.status is Status.PASS and tiled.median_s > 0 and tiled.shape == (64, 64, 64)
    assert results.path == tmp_path / "now.json"
    saved = load_results(tmp_path / "now.json")
    assert saved.metadata["complete"] is True
    assert [r.key for r in saved.benchmarks] == [r.key for r in results]
    # The file records the command that runs the same thing.
    assert saved.metadata["command"] == [
        "cudabench", "matmul", "--size", "64", "--dtype", "float32", "--variant", "naive",
        "--variant", "tiled", "--warmup", "0.0", "--max-time", "0.2", "--no-vendor"]
    assert saved.metadata["tool"]["engine"] == "fake"


def test_the_api_and_the_command_run_the_same_benchmarks(use_fake, tmp_path):
    results = run_tiled()
    done = invoke("matmul", "--size", "64", "--variant", "naive", "--variant", "tiled",
                  "--no-vendor", "--warmup", "0", "--max-time", "0.2", "--json",
                  tmp_path / "cli.json")
    assert done.exit_code == 0, done.stderr
    cli_rows = load_results(tmp_path / "cli.json").benchmarks
    assert [(r.key, r.status, r.kind) for r in cli_rows] == [
        (r.key, r.status, r.kind) for r in results]


def test_the_l2_flush_is_chosen_and_recorded_per_row(use_fake):
    assert {r.l2_flush for r in run_tiled()} == {"clean"}
    memset = run_tiled(l2_flush="memset")
    assert {r.l2_flush for r in memset} == {"memset"}
    assert {record["l2_flush"] for record in memset.to_records()} == {"memset"}


def test_a_failed_verification_is_a_fail_row_not_an_exception(use_fake):
    use_fake(faults={"naive": Fault.WRONG_ELEMENT})
    results = run_tiled()
    assert results.row("naive").status is Status.FAIL
    assert results.failures == (results.row("naive"),)
    assert results.exit_code is ExitCode.VERIFICATION_FAILED and not results.ok


def test_a_tuple_of_sizes_is_refused_as_ambiguous(use_fake):
    # (64, 32, 16) ran three square sizes where an M x K x N shape was meant
    with pytest.raises(UsageError, match=r"size \(64, 32, 16\): a tuple is ambiguous; give "
                                         r"'64x32x16' for one shape, or a list, \[64, 32, "
                                         r"16\], to sweep"):
        cb.run("matmul", variants="naive", size=(64, 32, 16), timing=FAST)


def test_sweeps_over_sizes_and_parameters(use_fake):
    results = cb.run("matmul", variants="tiled", size=[32, "48"], params={"TILE": [8, 16]},
                     vendor=False, batch=False, timing=FAST)
    points = {(r.shape[0], r.params["TILE"]) for r in results if r.variant == "tiled"}
    assert points == {(32, 8), (32, 16), (48, 8), (48, 16)}
    with pytest.raises(UsageError, match="4 rows match, of other sizes, types or parameters"):
        results.row("tiled")
    both = cb.load(Path(__file__).parent / "data" / "compare" / "baseline.json")
    with pytest.raises(UsageError, match=r"of the ops matmul, transpose: name one, "
                                         r"row\('matmul/naive'\)"):
        both.row("naive")
    assert both.row("matmul/naive").op == "matmul" == both.row("naive", op="matmul").op


def test_writeback_is_asked_for_as_the_flag_is(use_fake, tmp_path):
    results = cb.run("transpose", variants="naive", size=256, vendor=False, batch=False,
                     writeback=True, timing=FAST, json=tmp_path / "r.json")
    assert results.row("naive").writeback_s is not None
    assert "--writeback" in results.command
    with pytest.raises(UsageError, match="writeback with hot"):
        cb.run("transpose", variants="naive", size=256, hot=True, writeback=True)


@pytest.mark.parametrize(("options", "message"), [
    ({"variants": ["nope"]}, "nope"),
    ({"params": {"TILE": "16"}}, r"params\['TILE'\]"),
    ({"params": {"TILE": [8, True]}}, r"params\['TILE'\]"),
    ({"size": 1.5}, "size 1.5"),
    ({"size": []}, "empty list"),
    ({"size": "12q"}, "12q"),
    ({"timing": {"warmup_s": 0}}, "TimingPolicy"),
    ({"l2_flush": "zero"}, "^l2_flush zero: expected one of clean, memset"),
    ({"timing": cb.TimingPolicy(min_samples=0)}, "^TimingPolicy.min_samples"),
    ({"timing": cb.TimingPolicy(rounds=0)}, "^TimingPolicy.rounds must be a whole number"),
    ({"kernels_dir": "/no/such/folder"}, "^kernels_dir /no/such/folder: no such directory"),
    ({"kernels_dir": __file__}, "^kernels_dir .*: is a file, not a folder"),
    ({"size": -5}, "^size '-5': sizes are positive"),
    ({"dtype": "float8"}, "^dtype float8: matmul supports"),
    ({"variants": ["nope"]}, "^variants nope: no such matmul variant"),
    ({"params": {"TILE": 7}}, "^params TILE 7: no selected matmul variant allows it"),
    ({"device": "0"}, "device '0'"),
    ({"sources": {"../up": "x"}}, "variant name '../up'"),
    ({"sources": {"mine": ""}}, r"sources\['mine'\]"),
    ({"device": -1}, "^device -1: a CUDA device index is 0 or more"),
    ({"variants": 5}, "^variants 5: expected a variant name or a list"),
    ({"kernels_dir": 5}, "^kernels_dir 5: expected a folder, or a list"),
    ({"json": 5}, "^json 5: expected a path"),
    ({"json": ""}, "^json '': give a file name"),
    ({"timing": cb.TimingPolicy(max_time_s="0.2")}, "^TimingPolicy.max_time_s '0.2': expected "
                                                    "a number"),
    ({"timing": cb.TimingPolicy(min_samples=2.5)}, "^TimingPolicy.min_samples 2.5: expected "
                                                   "a whole number"),
    ({"hot": True, "l2_flush": "memset"}, "hot.*l2_flush"),
    ({"counters": 5}, "^counters 5: expected True, or ncu metric names"),
    ({"counters": "sm__throughput;rm -rf /"}, "^counters"),
    ({"energy": 0}, "^energy 0.0: expected seconds > 0"),
    ({"energy": "5"}, "^energy '5': expected True, or seconds"),
    ({"sanitize": "leakcheck"}, "^sanitize leakcheck: expected one of memcheck, racecheck"),
    ({"sanitize": 3}, "^sanitize 3: expected True \\(memcheck\\) or a compute-sanitizer tool"),
    ({"full_check": "yes"}, "^full_check 'yes': expected True or False"),
    ({"transfers": 1}, "^transfers 1: expected True or False"),
    # an empty size ran the default size (the command refuses --size ""), and a switch
    # given as "no" was taken as True
    ({"size": ""}, "^size '': expected an integer or text"),
    ({"size": [64, " "]}, "^size ' ': expected an integer or text"),
    ({"size": "64,"}, r"^size '64,': cannot read ''; sizes look like .*256..8192:x2$"),
    ({"hot": "no"}, "^hot 'no': expected True or False"),
    ({"vendor": 0}, "^vendor 0: expected True or False"),
    ({"batch": "no"}, "^batch 'no': expected True or False"),
    ({"progress": None}, "^progress None: expected True or False"),
    ({"writeback": 1}, "^writeback 1: expected True or False"),
    # a list of types was a TypeError (unhashable), a dict's keys or a bytes' numbers
    # were taken for variant names
    ({"dtype": ["float32"]}, r"^dtype \['float32'\]: expected one type's name"),
    ({"variants": {"naive": 1}}, "^variants {'naive': 1}: expected a variant name"),
    ({"variants": b"naive"}, "^variants b'naive': expected a variant name"),
    ({"variants": "naive,tiled"}, r"^variants 'naive,tiled': one name a string \(a comma list "
                                  r"is not one\); give a list: variants=\['naive', 'tiled'\]"),
    ({"params": {1: 16}}, r"^params: key 1 is not a parameter name"),
])
def test_bad_input_raises_a_usage_error_naming_it(use_fake, options, message):
    with pytest.raises(UsageError, match=message) as caught:
        cb.run("matmul", **{"size": 64, **options})
    assert caught.value.exit_code is ExitCode.USAGE


def test_numpy_integers_are_integers(use_fake):
    # a notebook's sizes and parameters are often NumPy's: they were "expected an integer"
    import numpy as np

    results = cb.run("matmul", variants="naive", size=np.int64(32), params={"TILE": np.int32(8)},
                     seed=np.int64(3), vendor=False, timing=FAST)
    (row,) = results
    assert row.shape == (32, 32, 32) and row.params["TILE"] == 8
    assert "--size 32" in " ".join(results.command)
    swept = cb.run("matmul", variants="naive", size=np.array([32, 48]), dtype=np.float64,
                   vendor=False, timing=FAST)
    assert [(r.shape[0], r.dtype) for r in swept] == [(32, "float64"), (48, "float64")]


def test_numpy_numbers_are_numbers_in_timing_and_run_too(use_fake, tmp_path):
    # size, params and seed took NumPy's numbers; TimingPolicy, keep_workers and energy
    # refused them ("expected a whole number"), np.float32 seconds too
    import json

    import numpy as np

    timing = cb.TimingPolicy(warmup_s=np.float32(0.0), min_samples=np.int64(10),
                             max_time_s=np.float32(0.1), precision=np.float32(0.01),
                             rounds=np.int64(2))
    assert type(timing.min_samples) is int and type(timing.max_time_s) is float
    results = cb.run("matmul", variants="naive", size=32, vendor=False, timing=timing,
                     keep_workers=np.int64(5), energy=np.int64(1), json=tmp_path / "r.json")
    assert results.row("naive").rounds == 2
    assert "--min-samples 10" in " ".join(results.command)
    json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    with pytest.raises(UsageError, match=r"min_samples .*2\.5.*: expected a whole number"):
        cb.run("matmul", size=32, timing=cb.TimingPolicy(min_samples=np.float64(2.5)))


def test_records_of_a_row_that_wrote_nothing_are_json(use_fake):
    # rel_error inf (no element written) made to_records() no JSON (Infinity)
    import json

    use_fake(faults={"naive": Fault.UNWRITTEN_ELEMENT})
    results = run_tiled()
    records = results.to_records()
    json.dumps(records, allow_nan=False)
    assert records[0]["status"] == "FAIL" and records[0]["rel_error"] is None


def test_run_takes_the_commands_checks_and_measurements_beyond_the_samples(use_fake,
                                                                          monkeypatch,
                                                                          tmp_path):
    # docs/python.md said everything the commands do is reachable from Python; run() had
    # no full_check, counters, energy, transfers or sanitize
    results = cb.run("transpose", variants="naive", size=256, vendor=False, timing=FAST,
                     energy=0.2, transfers=True, full_check=True)
    row = results.row("naive")
    assert row.energy["launches"] > 0 and row.transfers["pinned"]["h2d_gbps"] > 0
    assert row.status is Status.PASS
    assert {"--full-check", "--transfers", "--energy=0.2"} <= set(results.command)
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu, no compute-sanitizer anywhere
    monkeypatch.setenv("CUDA_ROOT", str(tmp_path))
    monkeypatch.setattr("cudabench.observers.toolkit.CUDA_HOME", tmp_path)
    monkeypatch.setattr("cudabench.observers.ncu.NSIGHT_ROOTS", ())
    with pytest.raises(UsageError, match="^counters.*ncu"):
        cb.run("transpose", variants="naive", size=64, counters=True)


def test_a_gpu_the_host_lacks_is_named_as_the_argument():
    # "--device 5: there are 1 GPU(s)" (the PyCUDA engine's words) reached a Python caller,
    # who gave device=5: only a UsageError's flags were put in the API's terms
    from cudabench.api.terms import RUN_ARGUMENTS, python_terms

    with pytest.raises(GpuEnvironmentError, match=r"^device 5: there are 1 GPU\(s\)$"), \
            python_terms(RUN_ARGUMENTS):
        raise GpuEnvironmentError("--device 5: there are 1 GPU(s)")


def test_an_unknown_op_is_a_usage_error(use_fake):
    with pytest.raises(UsageError, match="nope"):
        cb.run("nope")


def test_a_kernel_given_as_source_text_runs_like_a_file(use_fake):
    source = (KERNELS / "matmul" / "tiled.cu").read_text(encoding="utf-8")
    results = cb.run("matmul", variants=["mine"], sources={"mine": source}, size=64,
                     vendor=False, timing=FAST)
    mine = results.row("mine")
    assert mine.status is Status.PASS
    assert Path(mine.source).read_text(encoding="utf-8") == source  # the file stays


def test_a_mistaken_op_leaves_no_file_that_later_runs_of_the_sources_read(use_fake):
    source = (KERNELS / "matmul" / "tiled.cu").read_text(encoding="utf-8")
    with pytest.raises(UsageError, match="matmull"):  # refused before a folder is made
        cb.run("matmull", sources={"mine": source}, size=64)
    # said in the sources' terms: "<cache file>: file is in folder transpose/ but ..."
    with pytest.raises(UsageError, match=r"^sources\['mine'\]: its header declares op "
                       r"matmul, and run\(\) was asked for 'transpose': run it as op "
                       r"'matmul'$"):
        cb.run("transpose", sources={"mine": source}, size=64)
    with pytest.raises(UsageError, match=r"^sources\['tiled'\]: matmul has a variant tiled "
                       r"already \(.*tiled\.cu\): give the source another name$"):
        cb.run("matmul", sources={"tiled": source}, size=64)
    results = cb.run("matmul", variants=["mine"], sources={"mine": source}, size=64,
                     vendor=False, timing=FAST)
    assert results.row("mine").status is Status.PASS
    with pytest.raises(UsageError, match="op 5"):
        cb.run(5)  # type: ignore[arg-type]


def test_a_source_with_a_bad_header_names_its_file_and_line(use_fake):
    source = "// cudabench: matmul\n// param TILE: default sixteen\n"
    # the source's name, not the cache file written for it that the caller never chose
    with pytest.raises(KernelFileError, match=r"^sources\['bad'\]:2: "):
        cb.run("matmul", sources={"bad": source}, size=64)
    other = (KERNELS / "dot" / "atomic.cu").read_text(encoding="utf-8")
    with pytest.raises(UsageError, match="declares op dot"):
        cb.run("matmul", sources={"wrong": other}, size=64)


def test_compare_gives_the_verdicts_and_exit_code_of_the_command(use_fake, tmp_path):
    base = run_tiled(json=tmp_path / "base.json")
    use_fake(seed=1, slowdown={"tiled": 1.3})
    slow = run_tiled(json=tmp_path / "slow.json")
    comparison = cb.compare(base, slow)
    verdicts = {row.variant: row.verdict.value for row in comparison.rows}
    assert verdicts["tiled"] == "slower" and verdicts["naive"] == "same"
    assert comparison.exit_code is ExitCode.REGRESSION and not comparison.ok
    assert [row.variant for row in comparison.regressions] == ["tiled"]
    done = invoke("compare", tmp_path / "base.json", tmp_path / "slow.json")
    assert done.exit_code == int(comparison.exit_code)
    # the command's last line: "1 regression: 1 slower, ..." (the head was left out)
    assert comparison.summary.startswith("1 regression: ")
    assert comparison.summary in " ".join(done.stdout.split())
    use_fake(seed=2)
    stopped = cb.Results(run_tiled().rows, metadata={"complete": False})
    assert cb.compare(base, stopped).summary.startswith(
        "gate failed, the current run is incomplete: ")
    by_path = cb.compare(tmp_path / "base.json", str(tmp_path / "slow.json"))
    assert [(r.variant, r.verdict) for r in by_path.rows] == [
        (r.variant, r.verdict) for r in comparison.rows]
    # saved with to_json: its table names the file, not "(current run, not saved)"
    later = run_tiled()
    assert "(current run, not saved)" in str(cb.compare(base, later))
    later.to_json(tmp_path / "later.json")
    shown = " ".join(str(cb.compare(base, later)).split())
    assert "not saved" not in shown and "later.json" in shown, shown
    # A threshold above the change: the same pair is no regression.
    assert cb.compare(base, slow, threshold="50%").ok
    # NumPy's numbers are numbers (np.float32 was refused where np.float64 was taken)
    import numpy as np

    assert cb.compare(base, slow, threshold=np.float32(0.5), alpha=np.float32(0.01)).ok
    assert not cb.compare(base, slow, threshold=np.float32(0.05)).ok
    # A run against itself, or against the file it wrote, is refused as the command does.
    for same in ((base, base), (tmp_path / "base.json", base), (base, str(tmp_path / "base.json"))):
        with pytest.raises(UsageError, match="the same run"):
            cb.compare(*same)
    # so is a reordered copy beside Results (the rows' order let it through)
    reordered = cb.Results(tuple(reversed(base.rows)), base.notes, base.command,
                           base.versions)
    with pytest.raises(UsageError, match="the same run"):
        cb.compare(tmp_path / "base.json", reordered)


@pytest.mark.parametrize(("threshold", "message"), [
    ("5", "bare number"), ("fast", "expected a percentage"), (True, "threshold True"),
    (5, "threshold 5: a bare number"),  # named as given: it was '5.0'
])
def test_compare_refuses_a_bad_threshold(use_fake, threshold, message):
    results = run_tiled()
    with pytest.raises(UsageError, match=message):  # named before the runs are looked at
        cb.compare(results, results, threshold=threshold)


@pytest.mark.parametrize(("threshold", "cap"), [("5%", "10%"), (0.05, 0.1), ("5%", "25%")])
def test_compare_refuses_a_cap_beside_a_fixed_threshold_as_the_command_does(
        use_fake, threshold, cap):
    # `compare --threshold 5% --max-threshold 10%` is refused; compare() took it and
    # ignored the cap
    results = run_tiled()
    with pytest.raises(UsageError, match=rf"^max_threshold caps threshold auto only; with "
                       rf"threshold {threshold} it does nothing"):
        cb.compare(results, results, threshold=threshold, max_threshold=cap)


@pytest.mark.parametrize("threshold", ["5%", 0.05])
def test_compare_refuses_a_db_beside_a_fixed_threshold_as_the_command_does(
        use_fake, tmp_path, threshold):
    # `compare --threshold 5% --db STORE` is refused; compare() took the db and ignored it
    base = run_tiled(json=tmp_path / "base.json")
    use_fake(seed=1)
    now = run_tiled(json=tmp_path / "now.json")
    done = invoke("compare", tmp_path / "base.json", tmp_path / "now.json", "--threshold",
                  str(threshold), "--db", tmp_path / "h.db")
    assert done.exit_code == 2 and "--db names the history store" in done.stderr
    with pytest.raises(UsageError, match=rf"^the db argument names the history store of "
                       rf"threshold auto only; with threshold {threshold} it does nothing"):
        cb.compare(base, now, threshold=threshold, db=tmp_path / "h.db")
    assert cb.compare(base, now, db=tmp_path / "h.db").rows  # auto reads it


def test_compare_refuses_a_file_against_itself_as_the_command_does(use_fake, tmp_path):
    path = run_tiled().to_json(tmp_path / "r.json")
    with pytest.raises(UsageError, match="are the same file"):
        cb.compare(path, str(path))


def test_compare_refuses_a_file_that_is_not_a_results_file(tmp_path):
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ResultsFileError):
        cb.compare(tmp_path / "x.json", tmp_path / "x.json")
    with pytest.raises(UsageError, match="expected Results"):
        cb.compare(42, tmp_path / "x.json")  # type: ignore[arg-type]


def test_a_slice_is_results_of_its_own_without_the_run_s_file(use_fake, tmp_path):
    # a slice was a plain tuple: no to_records(), table() or record() on part of a run
    results = run_tiled(json=tmp_path / "now.json")
    first = results[0:1]
    assert isinstance(first, cb.Results) and [r.variant for r in first] == ["naive"]
    assert first.path is None and first.command == results.command
    assert [r["variant"] for r in first.to_records()] == ["naive"]
    assert "naive" in str(first) and "tiled" not in str(first)
    assert len(results[::-1]) == 2 and results[::-1][0].variant == "tiled"


def test_to_json_and_load_round_trip(use_fake, tmp_path):
    results = run_tiled()
    path = results.to_json(tmp_path / "out.json")
    loaded = cb.load(path)
    assert [r.key for r in loaded] == [r.key for r in results]
    assert [r.samples_s for r in loaded] == [r.samples_s for r in results]
    assert loaded.path == path and loaded.versions["engine"] == "fake"
    assert load_results(path).metadata["complete"] is True


def test_to_json_refuses_two_runs_rows_joined(use_fake, tmp_path):
    # the file was written and loaded, then compare refused it: "appears twice on one GPU"
    first, second = run_tiled(), run_tiled()
    joined = cb.Results(first.rows + second.rows)
    with pytest.raises(UsageError, match=r"rows\[2\], matmul/naive TILE=16 64x64x64 float32, "
                                         "repeats a row measured on the same GPU"):
        joined.to_json(tmp_path / "dup.json")
    assert not (tmp_path / "dup.json").exists()
    with pytest.raises(UsageError, match="2 rows of this one benchmark match"):
        joined.row("tiled")


def test_to_json_refuses_a_folder_or_an_empty_path_clearly(use_fake, tmp_path):
    results = run_tiled()
    with pytest.raises(UsageError, match=r"^to_json\(path\) .*: is a folder; give a file name"):
        results.to_json(tmp_path)
    with pytest.raises(UsageError, match=r"^to_json\(path\) .*give a file name"):
        results.to_json("")  # Path("") is the current folder
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    for call, name in ((lambda: results.to_json(5), "to_json"), (lambda: cb.load(5), "load"),
                       (lambda: results.record(5), "record"),
                       (lambda: cb.compare(results, results, alpha="x"), "alpha")):
        with pytest.raises(UsageError, match=f"^{name}"):
            call()
    with pytest.raises(UsageError, match="^threshold '5'"):  # compare()'s names, not flags
        cb.compare(results, results, threshold="5")
    with pytest.raises(UsageError, match="^allow_missing 'no': expected True or False"):
        cb.compare(results, results, allow_missing="no")
    # An explicit export writes what it is given, even rows without samples, over a file.
    skipped = cb.Results(tuple(dataclasses.replace(r, samples_s=(), skipped="not run",
                                                   verification=None) for r in results))
    old = tmp_path / "old.json"
    results.to_json(old)  # an earlier export: a results file, which an export replaces
    assert skipped.to_json(old) == old and cb.load(old).rows
    # ...and never notes or a history store (it wrote over both)
    notes, store = tmp_path / "notes.txt", tmp_path / "h.db"
    notes.write_text("{}", encoding="utf-8")
    results.record(store)
    kept = notes.read_bytes(), store.read_bytes()
    for path in (notes, store):
        with pytest.raises(UsageError, match=r"^to_json\(path\) .*is not a cudabench results"):
            results.to_json(path)
    assert (notes.read_bytes(), store.read_bytes()) == kept


def test_records_are_plain_json_ready_dicts(use_fake):
    records = run_tiled().to_records()
    tiled = next(r for r in records if r["variant"] == "tiled")
    assert tiled["status"] == "PASS" and tiled["params"] == {"TILE": 16}
    assert tiled["median_s"] > 0 and tiled["samples"] == len(tiled["samples_s"]) >= 20
    assert tiled["min_s"] <= tiled["median_s"] <= tiled["max_s"]
    json.dumps(records)  # nothing a JSON encoder refuses


def test_records_hold_what_the_table_computes(use_fake):
    # "% of peak", "bound" and "vs cuBLAS" were the tables' alone: a test asserting "at
    # least 70% of the DRAM roof" had to reach into the renderers
    results = cb.run("transpose", variants=["naive", "shared"], size=256, timing=FAST)
    records = {r["variant"]: r for r in results.to_records()}
    shared = records["shared"]
    assert shared["bound"] == "memory" and 0 < shared["pct_of_peak"] <= 100
    copy = records["memcpy_dtod"]
    assert copy["compared"]["% of memcpy_dtod"] == 100.0 and copy["pct_of_peak"] is None
    ratio = shared["compared"]["% of memcpy_dtod"]
    assert ratio == pytest.approx(100 * copy["median_s"] / shared["median_s"])
    assert results.to_records()[0].keys() == records["naive"].keys()


def test_to_pandas_needs_pandas(use_fake):
    results = run_tiled()
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="pip install pandas"):
            results.to_pandas()
    else:
        frame = results.to_pandas()
        assert list(frame["variant"]) == ["naive", "tiled"]


def test_run_suite_runs_a_suite_file(use_fake, tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nmax_time = 0.1\nwarmup = 0\n\n[[benchmark]]\nop = "dot"\n'
                     'size = "4096"\nvariants = ["atomic"]\n', encoding="utf-8")
    results = cb.run_suite(suite, vendor=False)
    assert {r.variant for r in results} == {"atomic", "memcpy_dtod"}
    assert results.row("atomic").status is Status.PASS
    with pytest.raises(UsageError, match="no suite"):
        cb.run_suite(None) if not Path("cudabench.toml").exists() else None
        raise UsageError("no suite")  # a checkout with a cudabench.toml: nothing to test
    kept = suite.read_bytes()
    with pytest.raises(UsageError, match="^json .*cudabench.toml: that is one of the files"):
        cb.run_suite(suite, json=suite)  # as `cudabench run S --json S` refuses
    assert suite.read_bytes() == kept
    for bad, message in ((5, "^path 5: expected a path"), (suite, "^device -2")):
        with pytest.raises(UsageError, match=message):
            cb.run_suite(bad, device=-2 if bad == suite else 0)
    with pytest.raises(UsageError, match="^vendor 'no': expected True or False"):
        cb.run_suite(suite, vendor="no")
    (tmp_path / "empty").mkdir()  # blamed on the suite's entry: "benchmark[0] ..."
    with pytest.raises(UsageError, match="^kernels_dir .*empty: holds no kernel"):
        cb.run_suite(suite, kernels_dir=tmp_path / "empty")
    # named as the arguments they are, not as the suite's first entry
    with pytest.raises(UsageError, match="^l2_flush 'bogus': expected one of clean, memset"):
        cb.run_suite(suite, l2_flush="bogus")
    with pytest.raises(UsageError, match="^kernels_dir /nope: no such directory"):
        cb.run_suite(suite, kernels_dir="/nope")


def test_run_suite_of_the_folder_is_the_command_bare_run(use_fake, tmp_path, monkeypatch):
    """run_suite() without a path records the command `cudabench run` is: the history
    store keys the folder's suite by it (an absolute path was another command, whose
    runs neither the missing-kernel vote nor the auto threshold read)."""
    from cudabench.history.records import command_key

    monkeypatch.chdir(tmp_path)
    Path("cudabench.toml").write_text('[timing]\nmax_time = 0.1\nwarmup = 0\n\n[[benchmark]]\n'
                                      'op = "dot"\nsize = "4096"\nvariants = ["atomic"]\n',
                                      encoding="utf-8")
    cb.run_suite(vendor=False, json="api.json")
    command = json.loads(Path("api.json").read_text(encoding="utf-8"))["command"]
    assert command == ["cudabench", "run", "--no-vendor"]
    assert command_key(command) == command_key(["cudabench", "run", "--no-vendor", "--json",
                                                "cli.json"])


def test_record_feeds_the_history_store(use_fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = run_tiled()
    kept = results.record(tmp_path / "h.db")
    assert kept.parent == Path(".cudabench/runs")
    with Store.open(tmp_path / "h.db") as store:
        assert len(store.runs()) == 1
    # recorded again: the same run and its one file (a second call wrote a second file)
    assert results.record(tmp_path / "h.db") == kept
    assert list(Path(".cudabench/runs").iterdir()) == [kept]
    with Store.open(tmp_path / "h.db") as store:
        assert len(store.runs()) == 1
    # another store records the same file (it wrote a second one)
    assert results.record(tmp_path / "other.db") == kept == results.path
    assert list(Path(".cudabench/runs").iterdir()) == [kept]


def test_record_checks_everything_before_it_writes_a_file_and_prints_nothing(
        use_fake, tmp_path, monkeypatch, capsys):
    # each refusal left a .cudabench/runs/ file behind, and record() printed on stdout
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("not a store\n", encoding="utf-8")
    with pytest.raises(UsageError, match="results hold no rows"):
        cb.Results(()).record(tmp_path / "e.db")
    results = run_tiled()
    capsys.readouterr()
    with pytest.raises(CudabenchError,
                       match="is a folder, not a history store; pass the db argument "):
        results.record(tmp_path / "folder")
    with pytest.raises(CudabenchError, match="not a cudabench history store"):
        results.record(tmp_path / "notes.txt")
    assert not Path(".cudabench/runs").exists()
    results.record(tmp_path / "h.db")
    assert capsys.readouterr().out == ""


def test_display_in_a_terminal_and_a_notebook(use_fake, tmp_path):
    use_fake(faults={"naive": Fault.WRONG_ELEMENT})
    results = run_tiled()
    text = str(results)
    assert "matmul 64x64x64" in text and "FAIL" in text and "naive" in text
    assert repr(results) == "<Results: 2 rows (1 FAIL, 1 PASS)>"
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(results)
    assert "tiled" in console.file.getvalue()
    page = results._repr_html_()
    assert page.startswith("<style>") and '<div class="cudabench-output">' in page
    assert 'class="bad">FAIL</td>' in page and "<script" not in page and "http" not in page
    # The report's stylesheet is scoped: no rule reaches the notebook's own page.
    style = page[len("<style>"):page.index("</style>")]
    rules = [line for line in style.splitlines() if "{" in line and "@media" not in line]
    assert rules and all(line.startswith(".cudabench-output") for line in rules)
    use_fake(faults={"naive": Fault.WRONG_ELEMENT}, seed=1)  # another run (samples differ)
    comparison = cb.compare(run_tiled(), results)
    # A run that fails verification fails the gate even against one that failed before.
    assert "1 regression" in comparison._repr_html_() and "cudabench compare" in str(comparison)


def test_top_level_names_are_the_api():
    assert cudabench.run is cb.run and cudabench.compare is cb.compare
    with pytest.raises(AttributeError):
        cudabench.nope  # noqa: B018


def docs_source() -> str:
    """Return the inline kernel of docs/python.md (its SOURCE = r'''...''')."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "python.md").read_text("utf-8")
    start = text.index("SOURCE = r'''") + len("SOURCE = r'''")
    return text[start:text.index("'''", start)]


def test_a_cache_folder_that_cannot_hold_inline_sources_is_not_a_crash(use_fake, tmp_path,
                                                                         monkeypatch):
    # CUDABENCH_CACHE_DIR naming a file: a FileExistsError traceback; now the temporary
    # folder holds them
    (tmp_path / "a.json").write_text("{}", encoding="utf-8")
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "a.json"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    results = cb.run("matmul", variants="mine", sources={"mine": docs_source()}, size=64,
                     vendor=False, timing=FAST)
    assert results.row("mine").status is Status.PASS
    assert (tmp_path / f"cudabench-inline-{os.getuid()}").is_dir()


def test_the_docs_inline_kernel_runs(use_fake):
    results = cb.run("matmul", variants=["mine", "tiled"], sources={"mine": docs_source()},
                     size=64, vendor=False, timing=FAST)
    assert results.row("mine").status is Status.PASS


@pytest.mark.parametrize("cache", ["cache", "off"])
def test_inline_sources_go_to_a_folder_no_other_user_can_write(use_fake, tmp_path,
                                                                monkeypatch, cache):
    # They went to /tmp/cudabench-inline-$USER/<hash of the sources>, made by whoever came
    # first: another user could plant a .py there, which the catalog imported
    import stat

    from cudabench.api.running import inline_dir

    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "c") if cache == "cache" else "off")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    folder = inline_dir("matmul", {"mine": docs_source()})
    root = folder.parent
    assert root == (tmp_path / "c" / f"inline-{os.getuid()}" if cache == "cache"
                    else tmp_path / "t" / f"cudabench-inline-{os.getuid()}")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    root.chmod(0o777)  # as a folder someone else made would be
    with pytest.raises(UsageError, match="not private to this user"):
        cb.run("matmul", variants="mine", sources={"mine": docs_source()}, size=64,
               vendor=False, timing=FAST)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_docs_inline_kernel_compiles(tmp_path):
    from cudabench.api.running import inline_dir

    folder = inline_dir("matmul", {"mine": docs_source()})
    done = invoke("matmul", "--dry-run", "--variant", "mine", "--size", "1024",
                  "--kernels-dir", folder)
    assert done.exit_code == 0, done.stdout + done.stderr


def test_a_script_that_calls_run_unguarded_is_told_how_to_fix_it(tmp_path):
    # The GPU worker is spawned: it imports the script, which would run cudabench again
    # there (multiprocessing's three tracebacks, a row "worker process died").
    import subprocess
    import sys

    script = tmp_path / "ex1.py"
    script.write_text(
        "import cudabench.api as cb\n"
        "from cudabench.cli import commands\n"
        "from cudabench.engines.fake_engine import FakeSpec\n"
        "commands.engine_spec = lambda device: FakeSpec(device_index=device)\n"
        "results = cb.run('matmul', variants=['naive'], size=64, vendor=False)\n"
        "print(results.rows[0].error)\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    hint = 'under `if __name__ == "__main__":`'
    assert "RuntimeError" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count(hint) == 1 and hint in done.stdout, (done.stdout, done.stderr)


def test_an_exit_code_prints_as_its_number():
    # print(results.exit_code) printed "ExitCode.OK" on Python 3.10 (3.11 made it the number)
    from cudabench.errors import ExitCode

    assert str(ExitCode.OK) == "0" and f"{ExitCode.USAGE}" == "2" and "%s" % ExitCode.USAGE == "2"
    assert f"{ExitCode.INTERRUPTED:>4d}" == " 130" and repr(ExitCode.OK) == "<ExitCode.OK: 0>"


def test_a_script_piped_to_python_runs(tmp_path):
    # `python - <<EOF`: __main__.__file__ is "<stdin>", which the spawned worker tried to
    # run (FileNotFoundError tracebacks), every row an ERROR told to guard __main__
    import subprocess
    import sys

    script = ("import cudabench.api as cb\n"
              "from cudabench.cli import commands\n"
              "from cudabench.engines.fake_engine import FakeSpec\n"
              "if __name__ == '__main__':\n"
              "    commands.engine_spec = lambda device: FakeSpec(device_index=device)\n"
              "    results = cb.run('matmul', variants=['naive'], size=64, vendor=False)\n"
              "    print(results, results.exit_code)\n")
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    naive = [line for line in done.stdout.splitlines() if line.startswith("│ naive ")]
    assert naive and "│ PASS " in naive[0], done.stdout  # a params column or not, by width
    assert done.stdout.rstrip().endswith(" 0"), done.stdout


def test_a_worker_that_dies_measuring_is_not_blamed_on_an_unguarded_script(tmp_path):
    # run as a file (the installed `cudabench` script is one), a kernel killing its worker
    # was told to guard __main__: only a worker that dies before it says anything is
    import subprocess
    import sys

    script = tmp_path / "guarded.py"
    script.write_text(
        "from cudabench.cli import commands, main\n"
        "from cudabench.engines.fake_engine import FakeSpec\n"
        "from cudabench.engines.fake_kernels import Fault\n"
        "if __name__ == '__main__':\n"
        "    commands.engine_spec = lambda device: FakeSpec(\n"
        "        device_index=device, faults={'tiled': Fault.KILLS_WORKER})\n"
        "    main()\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), "matmul", "--size", "64", "--variant",
                           "tiled", "--variant", "naive", "--no-vendor", "--max-time", "0.02"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "its worker process died" in done.stderr, (done.stdout, done.stderr)
    assert "__main__" not in done.stderr


def test_an_empty_list_of_variants_is_refused_not_taken_for_every_variant(use_fake):
    # a list filtered down to nothing ran all six default variants
    with pytest.raises(UsageError, match=r"^variants \[\]: an empty list names no variant"):
        cb.run("matmul", variants=[], size=32)
    with pytest.raises(UsageError, match=r"^variants \[\]"):
        cb.run("matmul", variants=(), size=32)


def test_record_records_the_rows_it_holds_not_what_replaced_their_file(use_fake, tmp_path,
                                                                       monkeypatch):
    # record() read the file at results.path again: another run's rows written there since
    # were recorded as these
    monkeypatch.chdir(tmp_path)
    first = run_tiled(json="x.json")
    cb.run("transpose", variants=["naive"], size=128, vendor=False, timing=FAST, json="x.json")
    kept = first.record("h.db")
    assert kept != Path("x.json") and kept.parent == Path(".cudabench/runs")
    assert load_results(kept).benchmarks == first.rows
    with Store.open(tmp_path / "h.db") as store:
        assert {t.benchmark.op for t in store.benchmarks()} == {"matmul"}
    # recorded from x.json first, then another run written over it: record() again found
    # the run in the store and returned its file, now the other run's, whose rows it
    # recorded as these
    second = run_tiled(json="y.json")
    second.record("h2.db")
    cb.run("transpose", variants=["naive"], size=128, vendor=False, timing=FAST, json="y.json")
    again = second.record("h2.db")
    assert load_results(again).benchmarks == second.rows
    with Store.open(tmp_path / "h2.db") as store:
        assert {t.benchmark.op for t in store.benchmarks()} == {"matmul"}
        assert store.counts()["runs"] == 1


def test_loaded_rows_keep_their_provenance_and_an_incomplete_run_stays_incomplete(
        use_fake, tmp_path):
    # a loaded partial file compared as complete (ok, exit 0) and was saved as complete,
    # and a re-saved file named this machine, this folder's commit and now
    base = run_tiled(json=tmp_path / "base.json")
    use_fake(seed=1)  # another run's samples
    run_tiled(json=tmp_path / "now.json")
    document = json.loads((tmp_path / "now.json").read_text(encoding="utf-8"))
    document.update(complete=False, created="2020-01-01T00:00:00+00:00", host="gpu-box-7",
                    git_commit="a" * 40, git_dirty=False)
    (tmp_path / "stopped.json").write_text(json.dumps(document), encoding="utf-8")
    stopped = cb.load(tmp_path / "stopped.json")
    assert not stopped.complete and base.complete and cb.load(tmp_path / "base.json").complete
    judged = cb.compare(cb.load(tmp_path / "base.json"), stopped)
    assert not judged.ok and judged.exit_code == 1
    saved = load_results(stopped[:1].to_json(tmp_path / "again.json")).metadata
    assert saved["complete"] is False
    assert (saved["created"], saved["host"], saved["git_commit"]) == (
        "2020-01-01T00:00:00+00:00", "gpu-box-7", "a" * 40)
    assert not cb.compare(tmp_path / "base.json", tmp_path / "again.json",
                          allow_missing=True).ok


def test_no_rows_are_not_ok_and_not_written_over_a_file(use_fake, tmp_path):
    # results[5:] replaced a results file with one of no rows, and said ok
    results = run_tiled(json=tmp_path / "now.json")
    empty = results[5:]
    assert len(empty) == 0 and not empty.ok and empty.exit_code is ExitCode.USAGE
    with pytest.raises(UsageError, match="the results hold no rows: nothing to write"):
        empty.to_json(tmp_path / "now.json")
    assert len(load_results(tmp_path / "now.json").benchmarks) == 2


def test_rows_are_found_by_name_and_a_wrong_key_is_a_usage_error(use_fake, tmp_path,
                                                                  monkeypatch):
    results = run_tiled()
    import numpy as np

    assert results["tiled"] is results.row("tiled") is results[1] is results[np.int64(1)]
    for bad in (None, 5):
        with pytest.raises(UsageError, match="expected a variant name"):
            results.row(bad)  # type: ignore[arg-type]
    # "no such row 'matmul/matmul/tiled'"
    assert results.row("matmul/tiled", op="matmul") is results.row("tiled")
    with pytest.raises(UsageError, match=r"two ops named; give row\('matmul/tiled'\)"):
        results.row("matmul/tiled", op="dot")
    with pytest.raises(UsageError, match=r"results\[1.5\]: expected a position"):
        results[1.5]  # type: ignore[call-overload]
    monkeypatch.setenv("HOME", str(tmp_path))  # "~/now.json" made a folder named ~
    assert results.to_json("~/now.json") == tmp_path / "now.json"
    assert not Path("~").exists()


def test_a_run_stopped_by_ctrl_c_hands_its_rows_on_the_exception(use_fake, monkeypatch,
                                                                  tmp_path):
    # a notebook's interrupted sweep lost every row it had measured (without json=)
    from cudabench.cli import commands

    def interrupt():
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "run_plans", stopped_after(commands.run_plans, 3, interrupt))
    with pytest.raises(KeyboardInterrupt) as stopped:
        cb.run("matmul", variants=["naive", "tiled"], size=[32, 48], vendor=False,
               batch=False, timing=FAST)
    kept = stopped.value.results
    assert isinstance(kept, cb.Results) and len(kept) == 3 and kept.path is None
    assert cb.stopped_results(stopped.value) is kept  # typed (stop.results is not, for mypy)
    assert cb.stopped_results(KeyboardInterrupt()) is None
    assert all(row.status is Status.PASS for row in kept)
    # marked incomplete, as the file of a stopped run is: its passing rows are not a pass
    # (they read complete and ok, compare() passed them and to_json() wrote complete: true)
    assert not kept.complete and not kept.ok and kept.exit_code == 130
    assert not kept[:2].complete
    saved = kept.to_json(tmp_path / "kept.json")
    assert load_results(saved).metadata["complete"] is False
    baseline = cb.Results(tuple(dataclasses.replace(row, samples_s=tuple(
        s * 1.001 for s in row.samples_s)) for row in kept))  # as another run measured them
    assert not cb.compare(baseline, kept, allow_missing=True).ok


def test_a_run_stopped_before_its_first_row_is_stopped_not_empty(use_fake, monkeypatch,
                                                                 tmp_path):
    # exit_code read 2 (measured nothing), compare() refused it as holding no benchmarks
    # and to_json() as no rows, where a stopped run exits 130 and fails the gate
    from cudabench.cli import commands

    def at_once(*args, **kwargs):
        raise KeyboardInterrupt

    baseline = run_tiled()
    monkeypatch.setattr(commands, "run_plans", at_once)
    with pytest.raises(KeyboardInterrupt) as stopped:
        run_tiled()
    kept = cb.stopped_results(stopped.value)
    assert kept is not None and len(kept) == 0 and not kept.complete
    assert kept.exit_code == 130 and not kept.ok
    comparison = cb.compare(baseline, kept)
    assert not comparison.ok and comparison.exit_code == 1
    assert "incomplete" in comparison.summary
    assert not cb.compare(baseline, kept, allow_missing=True).ok
    saved = kept.to_json(tmp_path / "kept.json")
    assert load_results(saved).metadata["complete"] is False
    assert cb.load(saved).exit_code == 130
    assert not cb.compare(baseline, saved).ok
    with pytest.raises(UsageError, match="no rows"):  # an empty slice of a whole run
        baseline[:0].to_json(tmp_path / "none.json")


def test_a_file_stopped_before_its_first_row_fails_the_gate_in_the_command_and_the_api(
        use_fake, monkeypatch, tmp_path):
    # `cudabench compare` refused it as holding no benchmarks (exit 2, a usage mistake)
    # where compare() failed the gate (exit 1): a stopped run fails it in both
    from cudabench.cli import commands

    def at_once(*args, **kwargs):
        raise KeyboardInterrupt

    base = run_tiled(json=tmp_path / "base.json")
    monkeypatch.setattr(commands, "run_plans", at_once)
    with pytest.raises(KeyboardInterrupt) as stopped:
        run_tiled()
    kept = cb.stopped_results(stopped.value)
    assert kept is not None and len(kept) == 0
    saved = kept.to_json(tmp_path / "kept.json")
    for allow in ((), ("--allow-missing",)):
        done = invoke("compare", tmp_path / "base.json", saved, *allow)
        assert done.exit_code == 1, done.stderr
        assert "kept.json is incomplete" in " ".join(done.stderr.split())
        for baseline in (base, tmp_path / "base.json"):
            comparison = cb.compare(baseline, saved, allow_missing=bool(allow))
            assert comparison.exit_code == done.exit_code and not comparison.ok
    # a file of no rows whose run completed measured nothing: refused by both (exit 2)
    (tmp_path / "empty.json").write_text(saved.read_text().replace(
        '"complete": false', '"complete": true'), encoding="utf-8")
    assert invoke("compare", tmp_path / "base.json", tmp_path / "empty.json").exit_code == 2
    with pytest.raises(UsageError, match="holds no benchmarks"):
        cb.compare(base, tmp_path / "empty.json")


def test_a_suite_s_rows_are_shown_in_the_suite_file_s_keys(use_fake, tmp_path, monkeypatch):
    # run_suite()'s warnings said "drop hot=True" and "TimingPolicy.max_time_s": arguments
    # it has none of; the suite file sets them
    monkeypatch.setenv("COLUMNS", "200")
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nmax_time = 0.1\nwarmup = 0\n\n[[benchmark]]\n'
                     'op = "matmul"\nsize = "64"\nvariants = ["naive", "tiled"]\n'
                     'hot = true\n', encoding="utf-8")
    results = cb.run_suite(suite, vendor=False)
    for text in (str(results), results._repr_html_(),
                 str(cb.Results.load(results.to_json(tmp_path / "suite.json")))):
        assert "drop hot = true for cold-cache numbers" in text
        assert "hot=True" not in text and "TimingPolicy" not in text
    assert "drop hot=True for cold-cache numbers" in str(run_tiled(hot=True))  # run()'s


def test_what_a_python_caller_is_shown_names_arguments_not_flags(use_fake, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("CUDABENCH_WIDE", raising=False)
    results = run_tiled(hot=True)
    text = str(results)
    # A warning's hint names run()'s argument, and the footer the way to every column here.
    assert "drop hot=True for cold-cache numbers" in text
    assert "a larger size measures it cold" in text  # run(size=...), not --size
    assert "(table(wide=True) shows every column)" in text
    assert "--" not in text.replace("-" * 8, "")  # no flag (the tables' rules aside)
    # The rows and their file keep the commands' texts: one file, whichever wrote it.
    assert any("drop --hot" in warning for warning in results["tiled"].warnings)
    every = str(results.table(wide=True))
    assert "max abs err" in every and "left out to fit" not in every
    assert str(results).count("┃") < every.count("┃")  # one table asked wide: the next fits
    with pytest.raises(UsageError, match="wide 'yes': expected True or False"):
        results.table(wide="yes")
    use_fake(seed=1)  # another run (samples differ)
    comparison = cb.compare(run_tiled(hot=True), results, threshold="5%")
    shown = str(comparison.table(wide=True))
    assert "5% (threshold)" in shown and "--threshold" not in shown
    assert "threshold 5%," in shown  # the summary still reads the source: not "auto"
    assert "(threshold)" in comparison._repr_html_()
    assert "--threshold" not in comparison._repr_html_() + results._repr_html_()
    assert "--threshold" in comparison.to_markdown()  # a CI summary: the command's terms


def test_a_note_printed_during_a_run_names_run_s_arguments(use_fake, tmp_path, monkeypatch,
                                                           capsys):
    # "note: --json full.json: cannot write ..." to a caller who gave json=
    from helpers import first_write_fails

    first_write_fails(monkeypatch)
    out = tmp_path / "r.json"
    cb.run("matmul", variants=["naive"], size=64, vendor=False, timing=FAST, json=out)
    said = " ".join(capsys.readouterr().err.split())
    assert f"note: json {out}: cannot write: No space left on device" in said, said


def test_on_request_variants_are_asked_for_in_python_terms(use_fake, tmp_path, capsys):
    # the note said "--variant NAME or --variant all" renamed flag for flag: "variants NAME
    # or variants all", no Python a caller could write
    results = cb.run("dot", size=4096)
    note = next(n for n in str(results).splitlines() if "run on request" in n)
    assert 'variants="NAME" or variants="all"' in note, note
    assert "--variant" not in note
    assert "--variant NAME" in results.notes[0]  # the results file's text: the command's
    matmul = str(cb.run("matmul", size=64, variants=["naive"], vendor=False))
    if "written for float16 only" in matmul:  # a note of the other-type rungs, if any
        assert 'dtype="float16" runs' in matmul, matmul
    from cudabench.api.terms import said

    assert said("left out x: written for float16 only (--dtype float16 runs it)") == \
        'left out x: written for float16 only (dtype="float16" runs it)'
    everything = cb.run("dot", size=4096, variants="all")
    assert {row.variant for row in everything} > {row.variant for row in results}


def test_a_store_variable_naming_a_folder_names_the_db_argument(tmp_path, monkeypatch,
                                                                 use_fake):
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", str(tmp_path))
    with pytest.raises(UsageError, match=r"\(or pass the db argument\)"):
        run_tiled().record()


def test_saved_rows_keep_the_commit_and_time_they_were_measured_at(use_fake, tmp_path,
                                                                    monkeypatch):
    # to_json() and record() stamped the commit of the moment they wrote: a slow run
    # measured before a fix was committed was recorded as the fix's
    import subprocess

    monkeypatch.chdir(tmp_path)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("a")
    git("add", "a.txt")
    git("commit", "-qm", "a")
    measured_at = git("rev-parse", "HEAD")
    results = run_tiled()
    (tmp_path / "a.txt").write_text("b")
    git("commit", "-qam", "b")
    saved = json.loads(results.to_json(tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["git_commit"] == measured_at
    results.record(tmp_path / "h.db")
    with Store.open(tmp_path / "h.db") as store:
        assert [run.commit for run in store.runs()] == [measured_at]


def test_the_api_is_typed_as_docs_python_md_promises(monkeypatch):
    # mypy --strict on a user's script refused size=np.int64(1024), TimingPolicy(max_time_s=
    # np.float32(0.1)) ("expected float") and len(error.results) of ResultsNotWritten
    # ("object" is not Sized). The project's own mypy checks tests/typing too, but for
    # Python 3.10, where NumPy 2.3+ has no types: this checks it for 3.11, as users see it.
    mypy = pytest.importorskip("mypy.api")
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("MYPYPATH", str(root))  # this checkout's cudabench, installed or not
    out, err, status = mypy.run([
        "--strict", "--python-version", "3.11", "--follow-imports", "silent",
        "--config-file", "", "--cache-dir", str(root / ".mypy_cache"),
        str(root / "tests" / "typing" / "api_types.py")])
    assert status == 0, out + err


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _rows_whole(text: str) -> bool:
    """Return whether every line of a table's body is one whole row: its box edges at both
    ends (a row wrapped again ended in a cell, and went on on the next line)."""
    body = [line for line in text.splitlines() if line[:1] in ("┃", "│")]
    return bool(body) and all(line.rstrip()[-1] in ("┃", "│") for line in body)


@pytest.mark.parametrize("terminal", [True, False])
def test_a_console_s_tables_keep_the_columns_that_fit_its_width(use_fake, terminal):
    # rich.print(results) drew every column and the console wrapped each row at words
    results = run_tiled()
    assert _widest(str(results.table(wide=True))) > 120  # too wide for any console below
    use_fake(seed=1)
    comparison = cb.compare(run_tiled(), results)
    for what, width in ((results, 120), (results, 80), (comparison, 80)):
        console = Console(file=io.StringIO(), width=width, force_terminal=terminal,
                          color_system=None)
        console.print(what)
        text = console.file.getvalue()
        assert _widest(text) <= width and _rows_whole(text), text
        assert "left out to fit" in text
    # wide: every column, narrowed to the console's width rather than broken mid-row
    console = Console(file=io.StringIO(), width=100, force_terminal=terminal,
                      color_system=None)
    console.print(results.table(wide=True))
    text = console.file.getvalue()
    assert _widest(text) <= 100 and _rows_whole(text) and "left out to fit" not in text


def test_print_in_a_terminal_keeps_the_columns_that_fit_its_width(use_fake, tmp_path):
    # print(results) drew every column on a 120-column terminal (172 characters a line)
    # unless COLUMNS was exported, and the terminal wrapped each line
    saved = run_tiled().to_json(tmp_path / "now.json")
    code = "import sys, cudabench.api as cb; print(cb.load(sys.argv[1]))"
    shown = run_in_terminal(code, 100, tmp_path, str(saved))
    assert _widest(shown) <= 100 and _rows_whole(shown), shown
    assert "left out to fit" in shown
    # a pipe: every column, whole (env given: readline's COLUMNS=80, set beside os.environ
    # when pytest imported it, reaches a child that inherits the environment)
    piped = subprocess.run([sys.executable, "-c", code, str(saved)], capture_output=True,
                           text=True, check=True, env=dict(os.environ)).stdout
    assert _widest(piped) > 100 and "left out to fit" not in piped
