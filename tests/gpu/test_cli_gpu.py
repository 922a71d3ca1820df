"""The commands as a user runs them, on a real GPU."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from helpers import write_spinning_matmul

from cudabench.cli import cli
from cudabench.results import load_results

pytestmark = pytest.mark.gpu

QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05"]


@pytest.mark.parametrize("args", [
    ["matmul", "--size", "200", "--tile", "16"],
    ["matmul", "--size", "65x33x17", "--dtype", "int32"],
    ["transpose", "--size", "300x200"],
    ["transpose", "--inplace", "--size", "257", "--dtype", "int32"],
    ["dot", "--size", "100000", "--block", "128"],
])
def test_command_passes_and_writes_json(tmp_path, args):
    path = tmp_path / "out.json"
    result = CliRunner().invoke(cli, [*args, *QUICK, "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "FAIL" not in result.output
    loaded = load_results(path)
    assert loaded.metadata["complete"] is True and loaded.gpu_name
    assert all(b.samples_s or b.skipped for b in loaded.benchmarks)
    document = json.loads(path.read_text())
    assert document["schema_version"] == 2
    (device,) = loaded.devices  # one GPU, named by its PCI bus id (and UUID through NVML)
    assert device.pci_bus_id and all(b.device == device for b in loaded.benchmarks)
    if importlib.util.find_spec("jsonschema"):  # a test extra; CPU tests validate files too
        from cudabench.results.schema import validate

        validate(document)


def test_rounds_pool_each_row_on_the_gpu(tmp_path):
    path = tmp_path / "rounds.json"
    result = CliRunner().invoke(cli, ["transpose", "--size", "2048", "--variant", "vectorized",
                                      "--rounds", "4", *QUICK, "--json", str(path)])
    assert result.exit_code == 0, result.output
    loaded = load_results(path)
    assert [b.variant for b in loaded.benchmarks] == ["vectorized", "cuBLAS", "memcpy_dtod"]
    timed = [b for b in loaded.benchmarks if b.samples_s]  # cuBLAS: SKIP without CuPy
    assert timed[0].variant == "vectorized" and timed[-1].variant == "memcpy_dtod"
    for bench in timed:
        assert bench.rounds == 4 and len(bench.round_medians_s) == 4
        assert len(bench.samples_s) >= 4 * 5
    assert "rounds: each row pools 4 rounds" in result.output


def test_info_shows_the_gpu():
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == 0, result.output
    assert "compute capability" in result.output and "PCI bus id" in result.output
    assert "engine version" in result.output and "pycuda" in result.output


def test_verification_failure_exits_3(tmp_path):
    (tmp_path / "matmul").mkdir()
    (tmp_path / "matmul" / "off_by_one.cu").write_text(
        "// cudabench: matmul\n"
        "// launch off_by_one: grid cdiv(N, 16), cdiv(M, 16); block 16, 16\n"
        'extern "C" __global__ void off_by_one(const DTYPE* A, const DTYPE* B, DTYPE* C,\n'
        "                                      int M, int K, int N) {\n"
        "    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n"
        "    if (r < M && c < N) C[r * N + c] = A[r * K] * B[c] + 1;\n"
        "}\n")
    result = CliRunner().invoke(cli, ["matmul", "--size", "40", *QUICK,
                                      "--kernels-dir", str(tmp_path)])
    assert result.exit_code == 3, result.output
    assert "FAIL" in result.output and "tiled" in result.output  # the others still shown


# SIGTERM: a CI job cancelled, which stops the run as Ctrl-C does (exit 143)
@pytest.mark.parametrize(("stop", "code", "said"), [
    (signal.SIGINT, 130, "cudabench: interrupted"),
    (signal.SIGTERM, 143, "cudabench: terminated (SIGTERM)")])
def test_ctrl_c_midway_leaves_a_valid_partial_file(tmp_path, stop, code, said):
    suite = tmp_path / "cudabench.toml"
    suite.write_text("[timing]\nmax_time = 1.0\nmin_samples = 2000\n"
                     + "".join(f'[[benchmark]]\nop = "matmul"\nsize = "{n}"\n'
                               for n in (256, 512, 768, 1024)))
    path = tmp_path / "partial.json"
    process = subprocess.Popen([sys.executable, "-m", "cudabench", "run", str(suite),
                                "--json", str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until at least one benchmark is saved
        if path.exists() and load_results(path).benchmarks:
            break
        time.sleep(0.1)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert said in stderr and "Traceback" not in stderr
    partial = load_results(path)
    assert partial.metadata["complete"] is False
    # 4 sizes x (6 variants + cuBLAS) were asked for: naive, tiled, tiled_conflict,
    # warptile, async_double_buffer, fragment_double_buffer
    assert 1 <= len(partial.benchmarks) < 4 * 7
    assert all(b.status == "PASS" and b.samples_s for b in partial.benchmarks)


def test_run_suite_writes_every_benchmark(tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nmax_time = 0.05\n[[benchmark]]\nop = "transpose"\n'
                     'sizes = ["64", "33x17"]\ndtypes = ["float32", "int32"]\n'
                     '[[benchmark]]\nop = "dot"\nsize = "1000"\n')
    path = tmp_path / "suite.json"
    result = CliRunner().invoke(cli, ["run", str(suite), "--json", str(path), "--no-vendor",
                                      "--progress"])
    assert result.exit_code == 0, result.output
    loaded = load_results(path)
    # 4 transpose groups x (5 variants + copy) and dot's 5 variants + copy (streaming runs
    # on request).
    assert len(loaded.benchmarks) == 4 * 6 + 6 and loaded.metadata["complete"] is True
    assert "[30/30]" in result.output  # progress lines on stderr when not a terminal


def test_a_spinning_kernel_times_out_and_the_others_are_measured(tmp_path):
    write_spinning_matmul(tmp_path)
    json_path = tmp_path / "out.json"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cudabench", "matmul", "--size", "64", "--kernels-dir",
         str(tmp_path), "--json", str(json_path), "--timeout", "5", "--no-vendor", *QUICK],
        capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - started
    assert done.returncode == 3, done.stdout + done.stderr
    assert "did not finish within 5 s of GPU work" in done.stderr
    statuses = {b.variant: b.status for b in load_results(json_path).benchmarks}
    assert statuses == {"aaa_spins": "TIMEOUT", "naive": "PASS", "tiled": "PASS",
                        "tiled_conflict": "PASS", "warptile": "PASS",
                        "async_double_buffer": "PASS", "fragment_double_buffer": "PASS"}
    # the timeout, worker starts, six variants compiled and measured
    assert elapsed < 5 + 45, elapsed


def test_a_matrix_too_large_for_the_gpu_is_exit_2_before_anything_runs(tmp_path):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cudabench", "matmul", "--size", "200000",
                           "--json", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "needs" in done.stderr and "on GPU 0 but" in done.stderr and "would fit" in done.stderr
    assert "[1/" not in done.stderr and not (tmp_path / "r.json").exists()
    assert time.monotonic() - started < 30


RACY = """// cudabench: matmul
// launch racy: grid cdiv(N, 16), cdiv(M, 16); block 16, 16
extern "C" __global__ void racy(const DTYPE* A, const DTYPE* B, OUT_TYPE* C,
                                int M, int K, int N) {
    __shared__ DTYPE As[16][16];
    __shared__ DTYPE Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    ACC_TYPE sum = 0;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : DTYPE(0);
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : DTYPE(0);
        // the __syncthreads() that belongs here is missing: a read-after-write race
        for (int k = 0; k < 16; ++k) sum += (ACC_TYPE)As[ty][k] * (ACC_TYPE)Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = (OUT_TYPE)sum;
}
"""


def test_sanitize_racecheck_reports_a_planted_race_with_its_line(tmp_path):
    (tmp_path / "matmul").mkdir()
    (tmp_path / "matmul" / "racy.cu").write_text(RACY)
    json_path = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "cudabench", "matmul", "--size", "64", "--kernels-dir",
         str(tmp_path), "--variant", "racy", "--variant", "tiled", "--sanitize", "racecheck",
         "--json", str(json_path), *QUICK],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stdout + done.stderr
    rows = {b.variant: b for b in load_results(json_path).benchmarks}
    assert rows["racy"].status == "FAIL"
    assert "compute-sanitizer racecheck" in rows["racy"].error
    assert "racy.cu:1" in rows["racy"].error  # the finding names the source line
    assert rows["tiled"].status == "PASS"
    assert "compute-sanitizer racecheck: no error" in rows["tiled"].warnings


def test_sanitize_memcheck_passes_a_tensor_map_kernel(tmp_path):
    # Its tensor maps come through CUDA Python's bindings, whose probing API calls fail on
    # purpose: memcheck reports the kernel's accesses, not those calls.
    pytest.importorskip("cuda.bindings.driver",
                        reason="tensor maps need cuda-bindings: pip install -e '.[tma]'")
    from cudabench.engines.pycuda_engine import PycudaSpec

    gpu = PycudaSpec(0).open()
    capability = gpu.info.compute_capability
    gpu.close()
    if capability != "9.0":
        pytest.skip(f"wgmma_tma (sm_90a) needs a compute capability 9.0 GPU; this one is "
                    f"{capability}")
    json_path = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "cudabench", "matmul", "--size", "128", "--dtype", "float16",
         "--variant", "wgmma_tma", "--sanitize", "memcheck", "--no-vendor",
         "--json", str(json_path), *QUICK],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = load_results(json_path).benchmarks
    assert row.status == "PASS"
    assert "compute-sanitizer memcheck: no error" in row.warnings


@pytest.mark.parametrize("method", ["clean", "memset"])
def test_each_l2_flush_evicts_the_inputs(tmp_path, method):
    """Inputs that fit in the L2 (a dot of 2 x 8 MiB) are read from DRAM after either flush:
    the cold median stays clearly above the --hot one (L2 reads are several times faster)."""
    medians = {}
    for name, extra in (("cold", ["--l2-flush", method]), ("hot", ["--hot"])):
        path = tmp_path / f"{name}.json"
        done = CliRunner().invoke(cli, ["dot", "--size", str(2**21), "--variant", "deterministic",
                                        "--no-vendor", "--no-batch", "--min-samples", "30",
                                        *extra, "--json", str(path)])
        assert done.exit_code == 0, done.output
        (row,) = [b for b in load_results(path).benchmarks if b.variant == "deterministic"]
        assert row.l2_flush == ("" if name == "hot" else method)
        medians[name] = row.median_s
    # an H200's faster DRAM (4.8 TB/s) narrows the gap: cold 11.84 us against hot 9.44 us
    # (1.25) there; a flush that left the inputs in the L2 gives about 1.0
    assert medians["cold"] > 1.15 * medians["hot"], medians
