"""The tensor-core matmul ladder (kernels/matmul/mma_*.cu, wgmma_*.cu) without a GPU.

Each rung is built for its targets from the source the engine compiles (type headers, a
#line directive, -I the kernel's folder, the -D defines), as a cubin with ptxas's resource
report: it must build, spill nothing and keep its wgmmas unserialised. Where cuobjdump is
found, its SASS must hold the instructions the rung claims (HMMA and LDSM for mma.sync,
LDGSTS for cp.async, HGMMA and UTMALDG for wgmma with TMA, USETMAXREG for register
reallocation) and no local-memory access. --dry-run's plan builds them too, and on the
fake engine they are float16-only and the TMA rungs skip a shape a tensor map cannot
describe, saying why (wgmma_async, fed by cp.async, runs there). They run on an H100
through scripts/tensorcore/run.sh.

The files are copied under other names (copy_*.cu) into a folder of their own, so they
never clash with the built-in catalog, whether it holds them yet or not.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cudabench.catalog import parse_header
from cudabench.catalog.variants import Arch, parse_arch
from cudabench.engines.cubin import find_cuobjdump, sass
from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.nvcc import TIMEOUT_S, find_nvcc
from cudabench.measure.dryrun import plan_rows
from cudabench.measure.jobs import jobs_of
from cudabench.ops import OPS
from cudabench.planning.plan import Insight, Request, compile_defines, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import Status
from cudabench.runner.execute import run_jobs

KERNELS = Path(__file__).resolve().parents[1] / "kernels" / "matmul"
# rung -> (targets it is built for, SASS instructions it must hold)
RUNGS = {
    "mma_sync": (("sm_80", "sm_90"), ("HMMA", "LDSM")),
    "mma_async": (("sm_80", "sm_90"), ("HMMA", "LDSM", "LDGSTS")),
    "wgmma_async": (("sm_90a",), ("HGMMA", "LDGSTS")),
    "wgmma_tma": (("sm_90a",), ("HGMMA", "UTMALDG")),
    "wgmma_ws": (("sm_90a",), ("HGMMA", "UTMALDG", "USETMAXREG")),
}
# Non-default parameters worth a build of their own (the defaults are built for every rung).
OTHER_PARAMS = [
    ("mma_sync", {"BN": 256}),
    ("mma_async", {"BN": 256, "BK": 64, "STAGES": 3}),
    ("wgmma_async", {"BN": 128, "STAGES": 3}),
    ("wgmma_tma", {"BN": 128, "STAGES": 3}),
    ("wgmma_ws", {"BN": 128, "STAGES": 3}),
]
TMA_RUNGS = ("wgmma_tma", "wgmma_ws")  # the others run at every shape
NVCC = find_nvcc()
CUOBJDUMP = find_cuobjdump()
QUICK = TimingPolicy(warmup_s=0.0, min_samples=3, max_samples=3, max_time_s=0.01)

needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH, in $CUDA_ROOT/bin "
                                "or /usr/local/cuda/bin: install the CUDA toolkit")


@pytest.fixture(scope="module")
def ladder(tmp_path_factory) -> Path:
    """Return a kernels folder holding the rungs as matmul/copy_<rung>.cu."""
    root = tmp_path_factory.mktemp("tensor_core")
    (root / "matmul").mkdir()
    for rung in RUNGS:
        shutil.copy(KERNELS / f"{rung}.cu", root / "matmul" / f"copy_{rung}.cu")
    return root


def build(rung: str, arch: str, params: dict[str, int], folder: Path
          ) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """Build a rung as the engine does, for exactly arch, with ptxas -v; return nvcc's run
    and the cubin (empty when the build failed)."""
    variant = parse_header(KERNELS / f"{rung}.cu")
    types = OPS["matmul"].type_set("float16")
    values = {spec.name: spec.default for spec in variant.params} | params
    defines = compile_defines(values, types)
    target = parse_arch(arch)
    assert isinstance(target, Arch)
    source = folder / f"{rung}_{arch}.cu"
    source.write_text(variant.compile_source(types.headers), encoding="utf-8")
    cubin = source.with_suffix(".cubin")
    command = [str(NVCC), "-cubin", target.gencode, "-lineinfo", "-Xptxas=-v",
               f"-I{KERNELS}", *(f"-D{k}={v}" for k, v in sorted(defines.items())),
               str(source), "-o", str(cubin)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    return done, cubin.read_bytes() if done.returncode == 0 else b""


CASES = [pytest.param(rung, arch, {}, id=f"{rung}-{arch}")
         for rung, (archs, _) in RUNGS.items() for arch in archs]
CASES += [pytest.param(rung, RUNGS[rung][0][-1], params,
                       id=f"{rung}-{RUNGS[rung][0][-1]}-" + "-".join(
                           f"{k}={v}" for k, v in params.items()))
          for rung, params in OTHER_PARAMS]


@needs_nvcc
@pytest.mark.parametrize(("rung", "arch", "params"), CASES)
def test_a_rung_builds_without_spills_and_holds_its_instructions(rung, arch, params,
                                                                   tmp_path):
    done, cubin = build(rung, arch, params, tmp_path)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    # ptxas serialises wgmmas it cannot pipeline, or ignores setmaxnreg, with a warning
    assert "Performance Loss" not in report and "C7508" not in report, report
    if CUOBJDUMP is None:
        pytest.skip("cuobjdump (CUDA toolkit, or pip's nvidia-cuda-cuobjdump with "
                    "nvidia-cuda-nvdisasm) is not on PATH or beside nvcc: the SASS is unchecked")
    code = sass(cubin, CUOBJDUMP)
    opcodes = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", code)
    assert opcodes, code[:2000]
    for wanted in RUNGS[rung][1]:
        assert wanted in opcodes, f"no {wanted} in the SASS of {rung} for {arch}"
    assert "LDL" not in opcodes and "STL" not in opcodes, "local memory in the SASS"
    if rung.startswith("mma"):
        assert "HGMMA" not in opcodes


def test_the_mma_rungs_claim_sm_80_and_the_wgmma_rungs_sm_90a_and_tma_maps():
    for rung in RUNGS:
        variant = parse_header(KERNELS / f"{rung}.cu")
        assert variant.dtypes == ("float16",)
        assert variant.unit == "tensor"
        assert variant.arch == (Arch(9, 0, True) if rung.startswith("wgmma") else None)
        if rung in TMA_RUNGS:
            assert [spec.buffer for spec in variant.tensor_maps] == ["A", "B"]
            assert all(spec.swizzle == 128 for spec in variant.tensor_maps)
        else:
            assert not variant.tensor_maps


@needs_nvcc
@pytest.mark.parametrize("size", ["1000", "67x48x136", "129x131x127"])
def test_dry_run_builds_every_rung(ladder, size):
    plan = make_plan(Request(op="matmul", size=size, dtype="float16", kernels_dirs=(ladder,),
                             variants=tuple(f"copy_{rung}" for rung in RUNGS)))
    rows = {row.variant: row for row in plan_rows([plan], "sm_90", NVCC)}
    for rung in RUNGS:
        row = rows[f"copy_{rung}"]
        expected = "ok (sm_90a cubin)" if rung.startswith("wgmma") else "ok (sm_90)"
        assert row.compile_ok and row.compiled == expected, (rung, row.compiled)


def run_fake(ladder: Path, size: str) -> dict:
    request = Request(op="matmul", size=size, dtype="float16", kernels_dirs=(ladder,),
                      timing=QUICK, insight=Insight(vendor=False, batch=False),
                      variants=tuple(f"copy_{rung}" for rung in RUNGS))
    plans = [make_plan(request)]
    engine = FakeEngine(FakeSpec())
    return {r.variant: r for r in run_jobs(plans, jobs_of(plans), engine)}


def test_every_rung_runs_on_the_fake_where_k_and_n_are_multiples_of_8(ladder):
    # odd M, K and N that fill no tile; rows 16-byte aligned, so the tensor maps exist
    results = run_fake(ladder, "67x40x136")
    for rung in RUNGS:
        row = results[f"copy_{rung}"]
        assert row.status is Status.PASS, (rung, row.error, row.skipped)


@pytest.mark.parametrize(("size", "buffer"), [("67x45x136", "A"), ("67x48x131", "B")])
def test_the_tma_rungs_skip_rows_that_are_not_16_bytes_apart_saying_why(ladder, size, buffer):
    results = run_fake(ladder, size)
    for rung in RUNGS:
        row = results[f"copy_{rung}"]
        if rung in TMA_RUNGS:
            assert row.status is Status.SKIP
            assert row.skipped.startswith(f"tensor_map {buffer} (")
            assert "TMA needs a multiple of 16 bytes" in row.skipped
        else:
            assert row.status is Status.PASS, (rung, row.error, row.skipped)


def test_other_types_leave_the_rungs_out_saying_they_take_float16(ladder):
    # all variants of the folder at float32: the plan leaves the rungs out, one note
    plan = make_plan(Request(op="matmul", size="64", dtype="float32", kernels_dirs=(ladder,)))
    planned_names = {p.variant.name for p in plan.variants}
    note = next(n for n in plan.notes if "copy_" in n)
    for rung in RUNGS:
        assert f"copy_{rung}" not in planned_names and f"copy_{rung}" in note
    assert "written for float16 only" in note
