"""calibrate: a suite run several times into the history store."""

from __future__ import annotations

import itertools

import pytest
from click.testing import CliRunner

from cudabench.cli import cli

QUICK = "[timing]\nmax_time = 0.05\nmin_samples = 8\nwarmup = 0\n\n"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_calibrate_stops_at_a_run_that_measured_nothing(use_fake, tmp_path, monkeypatch):
    # A variant for a newer GPU: each of 5 runs said "nothing was measured" and left an
    # unrecorded file in .cudabench/runs/, then "no history store here" ended it (exit 2
    # for the wrong cause)
    use_fake(compute_capability="8.0")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(
        QUICK + '[[benchmark]]\nop = "matmul"\nsize = "128"\ndtype = "float16"\n'
        'variants = ["wgmma_ws"]\n', encoding="utf-8")
    done = invoke("calibrate", "--runs", "5")
    assert done.exit_code == 2, done.output
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("cudabench: error: calibrate: run 1 of 5 measured nothing"), \
        done.stderr
    assert "run 2 of 5" not in done.stderr and "history store" not in done.stderr
    assert not (tmp_path / ".cudabench").exists()


def test_calibrate_s_runs_exit_as_one_run_would(use_fake, tmp_path, monkeypatch):
    # max() of the runs' codes: a row not run (2) in one run and a failed row (3) in the
    # others exited 3, where the README puts 2 first
    from cudabench.cli import calibrate
    from cudabench.engines.fake_engine import FakeSpec, Fault

    started = []
    runs = calibrate.run_and_render
    monkeypatch.setattr(calibrate, "run_and_render",
                        lambda *a, **k: started.append(1) or runs(*a, **k))
    seeds = itertools.count(1)
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: FakeSpec(
        device_index=device, seed=next(seeds),
        faults={"tiled": Fault.OUT_OF_MEMORY if len(started) == 1 else Fault.WRONG_ELEMENT}))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(
        QUICK + '[[benchmark]]\nop = "matmul"\nsize = "64"\nvariants = ["naive", "tiled"]\n',
        encoding="utf-8")
    done = invoke("calibrate", "--runs", "5", "--db", "h.db")
    assert "ERROR" in done.stdout and "FAIL" in done.stdout, done.output
    assert done.exit_code == 2, done.output
    from cudabench.errors import ranked_code as run_code

    assert run_code([0, 3, 2, 1]) == 2 and run_code([1, 3]) == 3 and run_code([0, 0]) == 0


@pytest.mark.parametrize("command", [("calibrate", "--runs", "5", "--db", "h.db"), ("run",)])
def test_calibrate_names_the_entry_that_asks_for_the_sanitizer(use_fake, tmp_path,
                                                                monkeypatch, command):
    # "calibrate: run 1 of 5", then "--sanitize needs compute-sanitizer ...; install the
    # toolkit or drop --sanitize": a flag calibrate (and run) has not, and no entry named
    monkeypatch.setattr("cudabench.observers.sanitizer.find_tool", lambda name: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(
        QUICK + '[[benchmark]]\nop = "dot"\nsize = "1000"\n\n'
        '[[benchmark]]\nop = "dot"\nsize = "2000"\nsanitize = "memcheck"\n', encoding="utf-8")
    done = invoke(*command)
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    suite = tmp_path / "cudabench.toml"
    assert len(lines) == 1 and lines[0].startswith(
        f"cudabench: error: {suite}: benchmark[1]: sanitize needs compute-sanitizer"), \
        done.stderr
    assert "--sanitize" not in lines[0] and lines[0].endswith("or drop sanitize"), lines[0]
    assert not (tmp_path / ".cudabench").exists()
