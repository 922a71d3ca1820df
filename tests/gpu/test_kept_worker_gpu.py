"""--keep-workers on a real GPU: commands as a user runs them, the worker kept between."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import write_spinning_matmul

from cudabench.results import Status, load_results

pytestmark = pytest.mark.gpu

QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05"]


@pytest.fixture
def runtime(monkeypatch):
    from cudabench.runner import kept_worker

    folder = Path(tempfile.mkdtemp(prefix="cbk-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    kept_worker.stop_all()
    shutil.rmtree(folder, ignore_errors=True)


def cudabench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudabench", *args], capture_output=True,
                          text=True, timeout=300)


def test_a_kept_worker_serves_the_next_commands_with_the_same_verdicts(runtime, tmp_path):
    first = cudabench("dot", "--size", "100000", "--keep-workers", "60", *QUICK,
                      "--json", str(tmp_path / "a.json"))
    assert first.returncode == 0, first.stderr
    sockets = list((runtime / "cudabench").glob("worker-*.sock"))
    assert len(sockets) == 1, "no worker was kept"
    second = cudabench("matmul", "--size", "200", "--tile", "16", "--keep-workers", "60",
                       *QUICK, "--json", str(tmp_path / "b.json"))
    assert second.returncode == 0, second.stderr
    assert list((runtime / "cudabench").glob("worker-*.sock")) == sockets  # the same one
    rows = load_results(tmp_path / "b.json").benchmarks
    assert {r.op for r in rows} == {"matmul"}
    assert all(r.status in (Status.PASS, Status.REF, Status.SKIP) for r in rows), rows
    assert any(r.variant == "cuBLAS" and r.status is Status.PASS for r in rows)


def test_a_kernel_that_hangs_kills_the_kept_worker_and_the_next_command_is_fresh(
        runtime, tmp_path):
    write_spinning_matmul(tmp_path)
    out = tmp_path / "r.json"
    done = cudabench("matmul", "--size", "64", "--kernels-dir", str(tmp_path), "--variant",
                     "aaa_spins", "--variant", "tiled", "--timeout", "5", "--no-vendor",
                     "--keep-workers", "60", *QUICK, "--json", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    statuses = {b.variant: b.status for b in load_results(out).benchmarks}
    assert statuses == {"aaa_spins": Status.TIMEOUT, "tiled": Status.PASS}
    again = cudabench("dot", "--size", "1000", "--keep-workers", "60", *QUICK)
    assert again.returncode == 0, again.stderr


def test_a_refused_command_leaves_no_kept_worker_holding_the_gpu(runtime):
    # the worker starts before the plans are made: a usage error left it holding a CUDA
    # context for the whole --keep-workers time
    import time

    from cudabench.runner import kept_worker

    refused = cudabench("matmul", "--size", "33", "--tile", "7", "--keep-workers", "600")
    assert refused.returncode == 2 and "TILE in 8, 16, 32" in refused.stderr, refused.stderr
    deadline = time.monotonic() + 20
    while kept_worker.describe() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not kept_worker.describe()


def test_a_gpu_listed_twice_in_cuda_visible_devices_is_refused(monkeypatch):
    # the driver refuses it at cuInit (CUDA_ERROR_INVALID_DEVICE); `--devices all` ran two
    # workers timing the one GPU at once
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,0")
    done = cudabench("dot", "--size", "100000", "--devices", "all", *QUICK)
    assert done.returncode == 2 and "GPU 0 is listed twice" in done.stderr, done.stderr
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,-1,1")  # the driver shows GPU 0 alone
    shown = cudabench("dot", "--size", "100000", "--variant", "atomic", "--no-vendor",
                      "--devices", "all", *QUICK)
    assert shown.returncode == 0, shown.stderr
