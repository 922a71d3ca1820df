"""Result records, the results file writer and its round trip."""

from __future__ import annotations

import json
import math
import stat

import pytest

from cudabench.results import BenchmarkResult, DeviceInfo, Verification, load_results
from cudabench.results_writer import ResultsWriter

DEVICE = DeviceInfo(
    name="NVIDIA H200", compute_capability="9.0", sm_count=132, memory_bytes=150 * 2**30,
    l2_bytes=60 * 2**20, sm_clock_khz=1980000, memory_clock_khz=3201000, memory_bus_bits=6016,
    max_threads_per_block=1024, max_shared_bytes_per_block=48 * 1024, driver_version="13.0",
    cuda_version="13.0.0", pycuda_version="2026.1",
)
PASSED = Verification(True, 1e-7, 1e-5, 0, 100, "exact")
FAILED = Verification(False, math.inf, math.nan, 3, 100, "exact")


def result(**fields) -> BenchmarkResult:
    base = dict(op="matmul", variant="tiled", params={"TILE": 16}, shape=(10, 10, 10),
                dims=("M", "K", "N"), dtype="float32", hot=False,
                samples_s=(1e-5, 1.1e-5, 0.9e-5), verification=PASSED, flops=2000,
                bytes_moved=1200, cpu_reference_s=1e-3)
    return BenchmarkResult(**{**base, **fields})


@pytest.mark.parametrize(("fields", "status"), [
    ({}, "PASS"),
    ({"verification": FAILED}, "FAIL"),
    ({"verification": FAILED, "error": "the kernel faulted"}, "FAIL"),  # faulted = failed
    ({"verification": None, "error": "nvcc failed"}, "ERROR"),
    ({"verification": None, "kind": "reference"}, "REF"),
    ({"verification": None}, "ERROR"),
])
def test_status(fields, status):
    assert result(**fields).status == status


def test_round_trip_keeps_everything_that_is_compared(tmp_path):
    path = tmp_path / "r.json"
    writer = ResultsWriter(path, argv=["matmul"])
    writer.set_device(DEVICE)
    original = [result(), result(variant="naive", verification=FAILED, error="faulted"),
                result(variant="memcpy_dtod", kind="reference", verification=None, params={})]
    for item in original:
        writer.add(item)
    writer.write(complete=True)
    loaded = load_results(path)
    assert loaded.gpu_name == "NVIDIA H200" and loaded.metadata["complete"] is True
    assert loaded.metadata["tool"]["pycuda_version"] == "2026.1"
    for before, after in zip(original, loaded.benchmarks, strict=True):
        assert after.key == before.key and after.samples_s == before.samples_s
        assert after.status == before.status
    # Non-finite errors are stored as null (strict JSON) and read back as infinite.
    assert math.isinf(loaded.benchmarks[1].verification.max_abs_error)
    data = json.loads(path.read_text())
    assert data["benchmarks"][0]["stats"]["median_s"] == pytest.approx(1e-5)
    assert data["benchmarks"][0]["throughput"]["gflops"] == pytest.approx(2000 / 1e-5 / 1e9)


def test_file_is_valid_after_every_benchmark(tmp_path):
    path = tmp_path / "r.json"
    writer = ResultsWriter(path, argv=[])
    writer.set_device(DEVICE)
    assert load_results(path).benchmarks == ()  # claimed and valid before the first result
    writer.add(result())
    partial = load_results(path)
    assert len(partial.benchmarks) == 1 and partial.metadata["complete"] is False
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind
    assert stat.S_IMODE(path.stat().st_mode) & 0o044  # readable by others, not 0600


def test_unwritable_path_names_the_flag(tmp_path):
    from cudabench.errors import UsageError

    (tmp_path / "file").write_text("")
    writer = ResultsWriter(tmp_path / "file" / "r.json", argv=[])
    with pytest.raises(UsageError, match="--json"):
        writer.set_device(DEVICE)
