"""`cudabench ab` on a real GPU: an A/A comparison passes, a B copy that computes a wrong
result fails and is measured once, and a run stopped by SIGTERM keeps its rounds."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.results import load_results

pytestmark = pytest.mark.gpu

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
FAST = ["--op", "dot", "--size", "1048576", "--samples", "5", "--warmup", "0.01"]


def dot_folder(root: Path, wrong: bool = False) -> Path:
    """Copy dot's `atomic` variant (and its headers) into root/dot/; wrong: the copy adds
    one to each block's sum, a result the check must reject."""
    (root / "dot").mkdir(parents=True)
    for source in (KERNELS / "dot").glob("*.cuh"):
        (root / "dot" / source.name).write_text(source.read_text(encoding="utf-8"),
                                                encoding="utf-8")
    text = (KERNELS / "dot" / "atomic.cu").read_text(encoding="utf-8")
    if wrong:
        planted = text.replace("atomicAdd(out, (OUT_TYPE)cache[0])",
                               "atomicAdd(out, (OUT_TYPE)(cache[0] + 1))")
        assert planted != text, "the planted error did not land: atomic.cu changed"
        text = planted
    (root / "dot" / "atomic.cu").write_text(text, encoding="utf-8")
    return root


def test_ab_of_a_folder_against_itself_passes(tmp_path):
    a = dot_folder(tmp_path / "a")
    path = tmp_path / "ab.json"
    # a 2% threshold: an A/A's six rounds can all land above +0.5% by chance (one run of
    # three on two H200s exited non-zero), hardly above +2%
    done = CliRunner().invoke(cli, ["ab", str(a), str(a), *FAST, "--rounds", "6",
                                    "--threshold", "2%", "--json", str(path)])
    assert done.exit_code == 0, done.output
    rows = {row.variant: row for row in load_results(path).benchmarks}
    assert sorted(rows) == ["atomic@A", "atomic@B"]
    assert rows["atomic@A"].rounds == 6 and rows["atomic@B"].status.value == "PASS"


def test_ab_fails_a_wrong_b_copy_and_measures_it_once(tmp_path):
    a, b = dot_folder(tmp_path / "a"), dot_folder(tmp_path / "b", wrong=True)
    path = tmp_path / "ab.json"
    done = CliRunner().invoke(cli, ["ab", str(a), str(b), *FAST, "--rounds", "6", "--json",
                                    str(path)])
    assert done.exit_code == 1, done.output
    assert "failed" in done.output and "B FAIL" in done.output
    row = {r.variant: r for r in load_results(path).benchmarks}["atomic@B"]
    assert row.status.value == "FAIL" and row.rounds == 6
    assert "the warm-up round is the one shown (FAIL)" in " ".join(row.warnings)


def test_a_stopped_ab_keeps_its_rounds(tmp_path):
    a = dot_folder(tmp_path / "a")
    path = tmp_path / "ab.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "cudabench", "ab", str(a), str(a), *FAST, "--rounds", "1000",
         "--samples", "100", "--json", str(path), "--progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(10)  # start-up, the warm-up round and a few rounds
    assert process.poll() is None, "the run ended before it could be stopped"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    said = " ".join(stderr.split())  # the note wraps at the console's width
    assert f"rows are in {path}, marked incomplete" in said and "Traceback" not in said, said
    saved = load_results(path)
    assert saved.metadata["complete"] is False
    assert {row.variant for row in saved.benchmarks} <= {"atomic@A", "atomic@B"}
    assert saved.benchmarks and all(row.samples_s for row in saved.benchmarks)
