"""Variants that name their target (`arch: sm_90a`) and take TMA tensor maps, on a real GPU.

The kernels in tests/data/arch/transpose/ copy tiles of A into shared memory with one TMA
copy each, through a tensor map cudabench builds over A (cuTensorMapEncodeTiled, through
CUDA Python's bindings) and passes by value after the op's arguments. A map with the wrong
extents, strides, box, swizzle or parameter offset gives a wrong B, so PASS at these shapes
(partial tiles at the edges included) means the whole path holds. They need a Hopper GPU
(compute capability 9.0), PyCUDA and cuda-bindings (`pip install -e '.[gpu,tma,test]'`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.measure.jobs import jobs_of
from cudabench.runner.execute import run_jobs
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import Status

pytestmark = pytest.mark.gpu

ARCH_KERNELS = Path(__file__).parents[1] / "data" / "arch"
QUICK = TimingPolicy(warmup_s=0.0, min_samples=3, max_samples=3, max_time_s=0.01)
DTYPES = ["float16", "float32", "float64", "int32"]


@pytest.fixture(scope="module")
def engine():
    gpu = PycudaSpec(0).open()
    if gpu.info.compute_capability != "9.0":
        gpu.close()
        pytest.skip(f"the sm_90a kernels need a compute capability 9.0 GPU (Hopper); this "
                    f"one is {gpu.info.compute_capability}")
    pytest.importorskip("cuda.bindings.driver",
                        reason="tensor maps need cuda-bindings: pip install -e '.[tma]'")
    yield gpu
    gpu.close()


def run(engine, size, dtype, variants, params=None, kernels_dirs=(ARCH_KERNELS,)):
    """Plan transpose at size and run the variants on the GPU; return {variant: result}."""
    request = Request(op="transpose", size=size, dtype=dtype, variants=tuple(variants),
                      params=params or {}, timing=QUICK, kernels_dirs=tuple(kernels_dirs),
                      insight=Insight(vendor=False, batch=False))
    plans = [make_plan(request)]
    return {r.variant: r for r in run_jobs(plans, jobs_of(plans), engine)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ["1000x2000", "37x64", "2048x2048"])
def test_a_tma_loaded_tile_transposes_right(engine, dtype, size):
    result = run(engine, size, dtype, ["tma_tile"])["tma_tile"]
    assert result.status is Status.PASS, result.error or result.skipped or result.verification
    assert result.launches[0]["registers"] > 0


@pytest.mark.parametrize("tile", [16, 64])
def test_every_box_size(engine, tile):
    result = run(engine, "300x200", "float32", ["tma_tile"], params={"TILE": tile})["tma_tile"]
    assert result.status is Status.PASS, result.error or result.skipped or result.verification


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ["1000x2000", "77x96"])
def test_the_128_byte_swizzle_reaches_the_kernel(engine, dtype, size):
    # The kernel undoes the swizzle: a map made without it would scramble B.
    result = run(engine, size, dtype, ["tma_swizzled"])["tma_swizzled"]
    assert result.status is Status.PASS, result.error or result.skipped or result.verification


def test_a_kernel_that_ignores_the_swizzle_fails(engine, tmp_path):
    # The control for the test above: reading the tile as if unswizzled must fail.
    folder = tmp_path / "transpose"
    folder.mkdir()
    source = ARCH_KERNELS / "transpose"
    (folder / "tma_common.cuh").write_text((source / "tma_common.cuh").read_text())
    text = (source / "tma_swizzled.cu").read_text().replace("tma_swizzled", "unswizzled")
    ignoring = text.replace("(byte / 16) ^ (r % 8)", "byte / 16")
    assert ignoring != text
    (folder / "unswizzled.cu").write_text(ignoring)
    result = run(engine, "1000x2000", "float32", ["unswizzled"],
                 kernels_dirs=[tmp_path])["unswizzled"]
    assert result.status is Status.FAIL, result.error
    # Row r of a tile is right only where r % 8 == 0: the other 7 in 8 are scrambled.
    assert result.verification.bad_elements == 1000 * 2000 * 7 // 8


def test_a_shape_the_map_cannot_describe_is_a_skip_row(engine):
    # 1001 float32 columns: rows 4004 bytes apart, not a multiple of 16.
    result = run(engine, "100x1001", "float32", ["tma_tile"])["tma_tile"]
    assert result.status is Status.SKIP, result.error
    assert "4004 bytes" in result.skipped and "multiple of 16" in result.skipped


def write(folder: Path, name: str, text: str) -> Path:
    target = folder / "transpose"
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.cu"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


PLAIN_BODY = """
    extern "C" __global__ void {name}(const DTYPE* A, DTYPE* B, int ROWS, int COLS) {{
        int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
        if (r < ROWS && c < COLS) B[(size_t)c * ROWS + r] = A[(size_t)r * COLS + c];
    }}
"""


def test_an_arch_this_gpu_cannot_run_is_a_skip_row_and_its_own_runs(engine, tmp_path):
    for name, arch in (("for_ampere", "sm_80"), ("for_hopper", "sm_90")):
        write(tmp_path, name, f"""
            // cudabench: transpose
            // arch: {arch}
            // launch {name}: grid cdiv(COLS, 32), cdiv(ROWS, 32); block 32, 32
            """ + PLAIN_BODY.format(name=name))
    results = run(engine, "100x70", "float32", ["for_ampere", "for_hopper"],
                  kernels_dirs=[tmp_path])
    assert results["for_ampere"].status is Status.SKIP
    assert results["for_ampere"].skipped == ("built for sm_80, which runs on compute "
                                             "capability 8.0 to 8.9; this GPU is 9.0")
    assert results["for_hopper"].status is Status.PASS, results["for_hopper"].error


def test_a_kernel_without_the_tensor_map_parameter_is_an_error_that_says_so(engine, tmp_path):
    write(tmp_path, "no_map_param", """
        // cudabench: transpose
        // tensor_map A: box 32, 32
        // launch no_map_param: grid cdiv(COLS, 32), cdiv(ROWS, 32); block 32, 32
        """ + PLAIN_BODY.format(name="no_map_param"))
    result = run(engine, "64x64", "float32", ["no_map_param"],
                 kernels_dirs=[tmp_path])["no_map_param"]
    assert result.status is Status.ERROR
    assert "takes 4 parameter(s), but cudabench passes 5" in result.error
    assert "const __grid_constant__ CUtensorMap" in result.error
