"""User input never ends in exit 4: each class that once did is a one-line usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import invoke

DATA = Path(__file__).parent / "data" / "compare"
HUGE = "9" * 5000  # beyond Python's int-to-str limit (4300 digits)


def one_line(result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output[-500:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cudabench: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(("args", "flag"), [
    (["matmul", "--size", HUGE], "--size"),
    (["matmul", "--size", f"64..{HUGE}:x2"], "--size"),
    (["matmul", "--size", f"64..128:x{HUGE}"], "--size"),
    (["matmul", "--size", "64", "--tile", HUGE], "--tile"),
    (["matmul", "--size", "64", "-p", f"TILE={HUGE}"], "--param TILE"),
    (["matmul", "--size", "64", "--device", "-1"], "--device"),
    (["info", "--device", "-1"], "--device"),
    (["matmul", "--size", ""], "--size"),
    (["matmul", "--size", "64", "--kernels-dir", ""], "--kernels-dir"),
    (["matmul", "--size", "64", "--dtype", " "], "--dtype"),
    (["matmul", "--size", "64", "--json", ""], "--json"),
    (["compare", "", str(DATA / "baseline.json")], "BASELINE"),
    (["history", "show", "--db", ""], "--db"),
])
def test_bad_values_are_usage_errors(no_gpu_work, args, flag):
    one_line(invoke(*args), flag)


def test_deeply_nested_toml_is_a_usage_error(tmp_path):
    suite = tmp_path / "deep.toml"
    suite.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    one_line(invoke("run", suite), str(suite))


def test_a_pyproject_whose_tool_is_not_a_table_is_no_suite(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("tool = 3\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    one_line(invoke("run"), "no suite")


@pytest.mark.parametrize(("field", "value"), [
    ("telemetry", {"sm_clock_mhz": "fast"}),
    ("telemetry", {"power_w": [1, 2]}),
    ("telemetry", {"throttle_reasons": [3]}),
    ("energy", {"joules": "abc"}),
    ("energy", {"launches": -1}),
])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_malformed_telemetry_and_energy_are_refused(tmp_path, field, value, command):
    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    document["benchmarks"][0][field] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    args = [bad] if command == "report" else [DATA / "baseline.json", bad]
    one_line(invoke(command, *args), str(bad), field)


def test_a_suite_whose_parameters_multiply_past_the_cap_is_refused_at_once(tmp_path):
    values = "[" + ", ".join(str(v) for v in range(1, 101)) + "]"
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\n'
                     f"params = {{ A = {values}, B = {values}, C = {values}, D = {values} }}\n",
                     encoding="utf-8")
    one_line(invoke("run", suite, "--dry-run"), "100,000,000 combinations")


def test_a_suite_of_many_sweeps_is_capped_as_a_whole(tmp_path):
    entry = '[[benchmark]]\nop = "matmul"\nsizes = ["16..16384:+16"]\n'
    suite = tmp_path / "cudabench.toml"
    suite.write_text(entry * 12, encoding="utf-8")
    one_line(invoke("run", suite, "--dry-run"), "more than 10,000")


def test_a_cli_sweep_past_the_cap_is_refused_before_it_is_made(no_gpu_work):
    values = ",".join(str(v) for v in range(1, 200))
    one_line(invoke("matmul", "--size", "64", "-p", f"A={values}", "-p", f"B={values}",
                    "-p", f"C={values}"), "points, more than")


GONE = "the current folder no longer exists (deleted or moved): "


def _in_a_removed_folder(tmp_path: Path, *command: str):
    """Run command in a folder deleted under it (a shell left in it): os.getcwd() fails."""
    import subprocess

    gone = tmp_path / "gone"
    gone.mkdir()
    return subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh",
                           str(gone), *command], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [
    ["compare", str(DATA / "baseline.json"), str(DATA / "slower20.json")],
    ["dot", "--size", "1024", "--json", "{tmp}/g.json"],  # a worker's spawn needs the folder
    ["run"],  # the suite file is looked for there
])
def test_a_deleted_current_folder_is_a_usage_error(tmp_path, args):
    # exit 4, "internal error: FileNotFoundError", a bug to report
    import sys

    fake = str(Path(__file__).parent / "fake_cli.py")
    done = _in_a_removed_folder(tmp_path, sys.executable, fake,
                                *(arg.format(tmp=tmp_path) for arg in args))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"cudabench: error: {GONE}cd to an " \
        "existing folder", done.stderr


def test_a_deleted_current_folder_is_a_usage_error_in_python(tmp_path):
    import sys

    script = ("import cudabench.api as cb\n"
              "from cudabench.cli import commands\n"
              "from cudabench.engines.fake_engine import FakeSpec\n"
              "commands.engine_spec = lambda device: FakeSpec(device_index=device)\n"
              "for call in (lambda: cb.run('dot', size=1024), cb.run_suite):\n"
              "    try:\n"
              "        call()\n"
              "    except cb.UsageError as exc:\n"
              "        print(exc)\n")
    done = _in_a_removed_folder(tmp_path, sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{GONE}os.chdir() to an existing folder"] * 2, \
        done.stdout
