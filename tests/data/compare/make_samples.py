"""Regenerate the results files that tests/test_compare.py compares.

Run from anywhere: python tests/data/compare/make_samples.py. Deterministic: every file
draws from numpy's default_rng with a fixed seed, and the writer's clock, host and git
fields are pinned, so re-running rewrites the same bytes (for a given cudabench version).

Files are written by the real ResultsWriter, so they have exactly the format `cudabench
matmul --json` writes. Timings model an NVIDIA H200: log-normal noise of 0.5-1% around each
median, and occasional slow outliers (another process, a clock dip) as on a real GPU.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the checkout, when cudabench is not installed

from cudabench.results_writer import ResultsWriter  # noqa: E402

from cudabench import results_writer  # noqa: E402
from cudabench.results import BenchmarkResult, DeviceInfo, Verification  # noqa: E402

SEED = 20240611
CREATED = "2024-06-11T09:30:00+00:00"

H200 = DeviceInfo(
    name="NVIDIA H200", compute_capability="9.0", sm_count=132, memory_bytes=150_754_820_096,
    l2_bytes=52_428_800, sm_clock_khz=1_980_000, memory_clock_khz=3_201_000,
    memory_bus_bits=6144, max_threads_per_block=1024, max_shared_bytes_per_block=49_152,
    driver_version="12.4", cuda_version="12.4.0", pycuda_version="2024.1.2",
)
H100 = dataclasses.replace(
    H200, name="NVIDIA H100 80GB HBM3", memory_bytes=85_029_158_912,
    memory_clock_khz=2_619_000, memory_bus_bits=5120,
)


@dataclasses.dataclass(frozen=True)
class Spec:
    """A benchmark and the distribution its samples come from."""

    op: str
    variant: str
    params: dict
    median_s: float
    sigma: float  # log-normal sigma: the relative spread of the samples
    n: int
    kind: str = "kernel"
    passed: bool = True


MATMUL = dict(shape=(1000, 1000, 1000), dims=("M", "K", "N"), flops=2 * 1000**3,
              bytes_moved=3 * 1000 * 1000 * 4, cpu_reference_s=0.0213)
TRANSPOSE = dict(shape=(3001, 3001), dims=("ROWS", "COLS"), flops=0,
                 bytes_moved=2 * 3001 * 3001 * 4, cpu_reference_s=0.0318)

BASELINE = (
    Spec("matmul", "naive", {"TILE": 16}, 612.4e-6, 0.006, 60),
    Spec("matmul", "tiled", {"TILE": 16}, 267.3e-6, 0.007, 80),
    Spec("matmul", "tiled_conflict", {"TILE": 16}, 498.1e-6, 0.008, 60),
    Spec("transpose", "naive", {"TILE": 32}, 48.61e-6, 0.009, 150),
    Spec("transpose", "shared", {"TILE": 32, "BLOCK_ROWS": 8}, 27.95e-6, 0.008, 200),
    Spec("transpose", "shared_padded", {"TILE": 32, "BLOCK_ROWS": 8}, 21.37e-6, 0.007, 200),
    Spec("transpose", "memcpy_dtod", {}, 17.82e-6, 0.005, 200, kind="reference"),
)


def samples(rng: np.random.Generator, spec: Spec) -> tuple[float, ...]:
    """Draw a run's samples: log-normal noise and about 2% slow outliers."""
    values = spec.median_s * np.exp(spec.sigma * rng.standard_normal(spec.n))
    outliers = rng.random(spec.n) < 0.02
    values[outliers] *= rng.uniform(1.05, 1.6, int(outliers.sum()))
    # CUDA events report float32 milliseconds: keep that resolution.
    return tuple(float(np.float32(v * 1e3)) / 1e3 for v in values)


def result(rng: np.random.Generator, spec: Spec) -> BenchmarkResult:
    """Build the BenchmarkResult bench.py would record for spec."""
    geometry = MATMUL if spec.op == "matmul" else TRANSPOSE
    verification = None
    source = "cuMemcpyDtoDAsync"
    launches: tuple = ()
    if spec.kind == "kernel":
        source = f"kernels/{spec.op}/{spec.variant}.cu"
        if spec.op == "matmul":
            criterion, total = "|C-ref| <= gamma_K |A||B|", 1000 * 1000
            errors = (1.9e-7, 4.6e-5) if spec.passed else (0.71, 38.5)
        else:
            criterion, total = "exact", 3001 * 3001
            errors = (0.0, 0.0) if spec.passed else (0.35, 1.99)
        bad = 0 if spec.passed else total // 4
        verification = Verification(spec.passed, *errors, bad, total, criterion)
        tile = spec.params["TILE"]
        block_y = spec.params.get("BLOCK_ROWS", tile)
        extent = geometry["shape"][-1]
        launches = ({
            "entry": f"{spec.op}_{spec.variant}", "grid": [math.ceil(extent / tile)] * 2 + [1],
            "block": [tile, block_y, 1], "registers": 32, "shared_bytes": 0, "local_bytes": 0,
            "max_threads_per_block": 1024,
        },)
    return BenchmarkResult(
        op=spec.op, variant=spec.variant, params=dict(spec.params), shape=geometry["shape"],
        dims=geometry["dims"], dtype="float32", hot=False, samples_s=samples(rng, spec),
        verification=verification, flops=geometry["flops"] if spec.kind == "kernel" else 0,
        bytes_moved=geometry["bytes_moved"], kind=spec.kind, source=source,
        cpu_reference_s=geometry["cpu_reference_s"], launches=launches,
    )


def write(name: str, seed: int, specs: tuple[Spec, ...], device: DeviceInfo = H200) -> Path:
    """Write one results file with the real writer; return its path."""
    rng = np.random.default_rng([SEED, seed])
    path = HERE / name
    writer = ResultsWriter(path, argv=["matmul", "--json", name])
    # Pin what would differ between machines and runs, so the output is reproducible.
    writer.metadata.update(created=CREATED, host="gpu-runner-07", python="3.11.9",
                           git_commit="3f9c2d41a7e5b0c86d1f2e3a4b5c6d7e8f901234", git_dirty=False)
    writer.set_device(device)
    for spec in specs:
        writer.add(result(rng, spec))
    writer.write(complete=True)
    return path


def changed(specs: tuple[Spec, ...], variant: str, **fields) -> tuple[Spec, ...]:
    """Return specs with the one of this variant changed."""
    assert any(spec.variant == variant for spec in specs), variant
    return tuple(dataclasses.replace(spec, **fields) if spec.variant == variant else spec
                 for spec in specs)


def base(variant: str) -> Spec:
    """Return the baseline spec of a variant."""
    return next(spec for spec in BASELINE if spec.variant == variant)


def main() -> None:
    """Write every sample file."""
    results_writer._now = lambda: CREATED  # pin the "updated" stamp too
    tiled = base("tiled")
    files: dict[str, Callable[[], Path]] = {
        "baseline.json": lambda: write("baseline.json", 1, BASELINE),
        # A/A: a fresh run of the same code, new samples from the same distributions.
        "identical.json": lambda: write("identical.json", 2, BASELINE),
        "slower20.json": lambda: write("slower20.json", 3, changed(
            BASELINE, "tiled", median_s=tiled.median_s * 1.20)),
        # 2% slower with the usual noise: real, but inside the 5% threshold.
        "noise2.json": lambda: write("noise2.json", 4, changed(
            BASELINE, "tiled", median_s=tiled.median_s * 1.02)),
        # A broken tiled kernel (say, a lost __syncthreads): wrong, and 8% faster.
        "failing.json": lambda: write("failing.json", 5, changed(
            BASELINE, "tiled", passed=False, median_s=tiled.median_s * 0.92)),
        "added_removed.json": lambda: write("added_removed.json", 6, tuple(
            spec for spec in BASELINE if spec.variant != "naive" or spec.op != "transpose"
        ) + (Spec("matmul", "tiled", {"TILE": 32}, 231.8e-6, 0.007, 80),)),
        "other_gpu.json": lambda: write("other_gpu.json", 7, BASELINE, H100),
        # Another process shared the GPU: 15% spread over 60 samples.
        "noisy.json": lambda: write("noisy.json", 8, changed(
            BASELINE, "tiled_conflict", sigma=0.15)),
        "schema99.json": lambda: write("schema99.json", 9, BASELINE),
        "truncated.json": lambda: write("truncated.json", 10, BASELINE),
    }
    for make in files.values():
        make()
    schema = HERE / "schema99.json"
    document = json.loads(schema.read_text(encoding="utf-8"))
    document["schema_version"] = 99
    schema.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    truncated = HERE / "truncated.json"
    text = truncated.read_text(encoding="utf-8")
    truncated.write_text(text[: len(text) // 2], encoding="utf-8")  # a copy cut short
    print(f"wrote {len(files)} files to {HERE}")


if __name__ == "__main__":
    main()
