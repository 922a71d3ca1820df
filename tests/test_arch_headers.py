"""Headers that say what a kernel needs: `arch: sm_90a` and `tensor_map BUFFER: box ...`.

Parsing and its errors; the plan's checks of a map's box; the SKIP rows on a GPU of another
compute capability and at a shape a map cannot describe (the fake engine); the parameter
layout a map is passed in; --dry-run building an sm_90a kernel with a CUtensorMap parameter
through the real nvcc (skipped without it), and its machine code read back with cuobjdump
(skipped without it). The same kernels run on an H100 in tests/gpu/test_arch_gpu.py.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import header_with, refuse_engines, write_kernel

from cudabench.catalog import discover, parse_header
from cudabench.catalog.variants import Arch, parse_arch
from cudabench.cli import cli
from cudabench.errors import CompileError, KernelFileError, UsageError
from cudabench.engines import cuda_driver, tensormaps
from cudabench.engines.cubin import compile_cubin, find_cuobjdump, sass
from cudabench.measure.dryrun import plan_rows
from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.measure.jobs import jobs_of
from cudabench.engines.nvcc import find_nvcc
from cudabench.runner.execute import run_jobs
from cudabench.planning.plan import Insight, Request, compile_defines, make_plan, unsupported_on
from cudabench.engines.tensormaps import TensorMapRequest, TensorMapUnavailable, param_format
from cudabench.planning.timing import TimingPolicy
from cudabench.ops import TypeSet
from cudabench.results import Status

ARCH_KERNELS = Path(__file__).parent / "data" / "arch"
QUICK = TimingPolicy(warmup_s=0.0, min_samples=3, max_samples=3, max_time_s=0.01)
NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH, in $CUDA_ROOT/bin "
                                "or /usr/local/cuda/bin: install the CUDA toolkit")
needs_cuobjdump = pytest.mark.skipif(find_cuobjdump() is None, reason="cuobjdump (CUDA "
                                     "toolkit) is not on PATH or beside nvcc")


def parse(tmp_path: Path, *lines: str, op: str = "matmul"):
    return parse_header(write_kernel(tmp_path, "k", header_with(*lines, op=op)))


def error_of(tmp_path: Path, *lines: str, op: str = "matmul") -> str:
    with pytest.raises(KernelFileError) as caught:
        parse(tmp_path, *lines, op=op)
    return str(caught.value)


# -- arch -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "arch", "gencode"), [
    ("sm_90a", Arch(9, 0, True), "-gencode=arch=compute_90a,code=sm_90a"),
    ("sm_90", Arch(9, 0), "-gencode=arch=compute_90,code=sm_90"),
    ("sm_80", Arch(8, 0), "-gencode=arch=compute_80,code=sm_80"),
    ("sm_86", Arch(8, 6), "-gencode=arch=compute_86,code=sm_86"),
    ("sm_100a", Arch(10, 0, True), "-gencode=arch=compute_100a,code=sm_100a"),
    ("sm_120", Arch(12, 0), "-gencode=arch=compute_120,code=sm_120"),
])
def test_arch_names_exactly_one_target(tmp_path, text, arch, gencode):
    variant = parse(tmp_path, f"// arch: {text}")
    assert variant.arch == arch and variant.arch.name == text
    assert variant.arch.gencode == gencode


def test_without_arch_a_variant_is_built_for_the_gpu_it_runs_on(tmp_path):
    assert parse(tmp_path).arch is None


@pytest.mark.parametrize("text", ["sm90a", "sm_90A", "sm_80a", "compute_90a", "sm_9",
                                  "sm_090", "90a", "sm_90a sm_80", "sm_90b", ""])
def test_a_bad_arch_is_an_error_naming_file_and_line(tmp_path, text):
    message = error_of(tmp_path, f"// arch: {text}")
    assert re.search(r"k\.cu:2: arch must be sm_NN or sm_NNa", message), message
    assert repr(text) in message


def test_arch_given_twice_is_an_error(tmp_path):
    assert "k.cu:3: `arch` given twice" in error_of(tmp_path, "// arch: sm_90a",
                                                    "// arch: sm_90")


@pytest.mark.parametrize(("arch", "capability", "reason"), [
    ("sm_90a", "9.0", None),
    ("sm_90a", "8.0", "built for sm_90a, which runs only on compute capability 9.0; this GPU "
                      "is 8.0"),
    ("sm_90a", "10.0", "built for sm_90a, which runs only on compute capability 9.0; this GPU "
                       "is 10.0"),
    ("sm_80", "8.0", None),
    ("sm_80", "8.9", None),
    ("sm_86", "8.0", "built for sm_86, which runs on compute capability 8.6 to 8.9; this GPU is "
                     "8.0"),
    ("sm_80", "9.0", "built for sm_80, which runs on compute capability 8.0 to 8.9; this GPU is "
                     "9.0"),
])
def test_which_gpus_run_a_target(arch, capability, reason):
    target = parse_arch(arch)
    assert target is not None and target.unsupported_on(capability) == reason


# -- tensor_map ---------------------------------------------------------------------------------

def test_a_tensor_map_line_parses_in_header_order(tmp_path):
    variant = parse(tmp_path, "// param TILE: default 16; allowed 8, 16",
                    "// tensor_map B: box TILE, 2 * TILE; swizzle 64; l2 256",
                    "// tensor_map A: box 64, 8")
    assert [spec.buffer for spec in variant.tensor_maps] == ["B", "A"]
    b, a = variant.tensor_maps
    assert (b.swizzle, b.l2, b.line, a.swizzle, a.l2) == (64, 256, 3, 0, 0)
    assert variant.tensor_map_boxes({"TILE": 16}) == [(16, 32), (64, 8)]
    assert b.describe((16, 32)) == "B box 16x32, swizzle 64B, l2 256B"


@pytest.mark.parametrize(("line", "expected"), [
    ("// tensor_map A: swizzle 128", "tensor_map A: expected `box E[, E...]`"),
    ("// tensor_map A: box 64, 64; swizle 128", "got 'swizle 128'"),
    ("// tensor_map A: box 64; box 32", "got 'box 32'"),
    ("// tensor_map A: box 64, 64;", "got ''"),
    ("// tensor_map A: box 64, 64; swizzle 96",
     "tensor_map A: swizzle must be one of none, 32, 64, 128 (bytes); got '96'"),
    ("// tensor_map A: box 64, 64; l2 32",
     "tensor_map A: l2 must be one of none, 64, 128, 256 (bytes); got '32'"),
    ("// tensor_map A: box BM, 64", "tensor_map A box: unknown name(s) BM"),
    ("// tensor_map A: box 1, 1, 1, 1, 1, 1", "box has 6 extents; a tensor map has 1 to 5"),
    ("// tensor_map: box 64", "`tensor_map` needs a name before its colon"),
    ("// Tensor_map A: box 64", "unknown header key 'Tensor_map A'"),
])
def test_a_bad_tensor_map_line_is_an_error_naming_file_and_line(tmp_path, line, expected):
    message = error_of(tmp_path, line)
    assert "k.cu:2: " in message and expected in message, message


def test_a_tensor_map_declared_twice_is_an_error(tmp_path):
    message = error_of(tmp_path, "// tensor_map A: box 64", "// tensor_map A: box 32")
    assert "k.cu:3: tensor_map A declared twice" in message


def transpose_request(size: str, dtype: str = "float32", variants=("tma_tile",), **fields):
    return Request(op="transpose", size=size, dtype=dtype, variants=tuple(variants),
                   timing=QUICK, kernels_dirs=(ARCH_KERNELS,),
                   insight=Insight(vendor=False, batch=False), **fields)


def test_a_tensor_map_over_a_buffer_the_op_lacks_fails_the_plan(tmp_path):
    write_kernel(tmp_path / "transpose", "wrong_buffer",
                 header_with("// tensor_map C: box 32, 32", op="transpose"))
    with pytest.raises(KernelFileError) as caught:
        make_plan(Request(op="transpose", size="64", kernels_dirs=(tmp_path,),
                          variants=("wrong_buffer",)))
    assert ("wrong_buffer.cu:2: tensor_map C: the transpose kernels get no buffer C (their "
            "buffers: A, B)") in str(caught.value)


@pytest.mark.parametrize(("box", "dtype", "expected"), [
    ("300, 32", "float32", "box extent 300 is outside 1..256"),
    ("32, 3", "float32", "innermost extent is 3 x 4 = 12 bytes, not a multiple of 16"),
    ("32, 64; swizzle 128", "float32",
     "innermost extent is 64 x 4 = 256 bytes, more than the 128-byte swizzle span"),
    ("32, 16; swizzle 32", "float16", None),
])
def test_the_plan_checks_a_box_against_the_drivers_rules(tmp_path, box, dtype, expected):
    write_kernel(tmp_path / "transpose", "boxed",
                 header_with(f"// tensor_map A: box {box}", op="transpose"))
    request = Request(op="transpose", size="64", dtype=dtype, kernels_dirs=(tmp_path,),
                      variants=("boxed",))
    if expected is None:
        assert make_plan(request).variants[0].variant.name == "boxed"
        return
    with pytest.raises(UsageError) as caught:
        make_plan(request)
    message = str(caught.value)
    assert message.startswith(f"transpose/boxed with defaults: tensor_map A in {dtype}: ")
    assert expected in message and message.endswith("; choose other parameters")
    swept = make_plan(Request(op="transpose", size="64", dtype=dtype, kernels_dirs=(tmp_path,),
                              variants=("boxed",), sweep=True))
    assert not swept.variants and expected in swept.skipped[0][1]


def test_tensor_maps_need_hopper_even_without_arch(tmp_path):
    variant = parse(tmp_path, "// tensor_map A: box 8, 8")
    assert unsupported_on(variant, "9.0") is None
    assert unsupported_on(variant, "8.9") == ("its tensor maps need compute capability 9.0 or "
                                              "higher (TMA); this GPU is 8.9")


# -- the checks of a map at a shape, and the parameter layout ------------------------------------

def request(shape=(1000, 2000), box=(32, 32), dtype="float32", itemsize=4, swizzle=0):
    return TensorMapRequest("A", 0, dtype, itemsize, shape, box, swizzle, 0, "k.cu:5")


def test_a_request_knows_its_strides_and_bytes():
    made = request(shape=(3, 1000, 2000), box=(1, 32, 32))
    assert made.strides == (8_000_000, 8000, 4) and made.nbytes == 24_000_000
    assert made.describe() == "A box 1x32x32 over 3x1000x2000 float32"
    assert tensormaps.shape_problem(made) is None


@pytest.mark.parametrize(("made", "expected"), [
    (request(shape=(100, 1001)),
     "A (100x1001 float32): consecutive indices of dimension 0 are 4004 bytes apart; TMA "
     "needs a multiple of 16 bytes"),
    (request(shape=(4096,)), "the box has 2 extent(s) but A (4096 float32) has 1"),
    (request(shape=(2**33, 4)), "has an extent outside 1..2^32"),
    (request(box=(32, 2)), "innermost extent is 2 x 4 = 8 bytes, not a multiple of 16"),
])
def test_a_shape_the_driver_would_refuse_says_why(made, expected):
    problem = tensormaps.shape_problem(made)
    assert problem is not None and expected in problem


# The layout an H100's driver reported for tma_tile (cuFuncGetParamInfo): the map sits at
# byte 112, where the 128-byte alignment of the constant bank puts it, not at 128.
H100_LAYOUT = [(0, 8), (8, 8), (16, 4), (20, 4), (112, 128)]


def test_the_argument_buffer_puts_the_map_where_the_kernel_reads_it():
    fmt = param_format("PPiiT", H100_LAYOUT, "k.cu:6: k")
    assert fmt == "PPii88x128s"
    packed = struct.pack(fmt, 0x1000, 0x2000, 7, 9, bytes(range(128)))
    assert len(packed) == 240 and packed[112:] == bytes(range(128))
    assert struct.unpack_from("ii", packed, 16) == (7, 9)


def test_a_kernel_without_its_map_parameter_is_a_compile_error():
    with pytest.raises(CompileError) as caught:
        param_format("PPiiT", H100_LAYOUT[:4], "k.cu:6: k")
    assert str(caught.value) == (
        "k.cu:6: k: the kernel takes 4 parameter(s), but cudabench passes 5: the op's 4 "
        "argument(s), then 1 tensor map(s) in header order, each declared "
        "`const __grid_constant__ CUtensorMap NAME`")


def test_a_map_declared_as_a_pointer_is_a_compile_error():
    with pytest.raises(CompileError) as caught:
        param_format("PPiiT", [*H100_LAYOUT[:4], (24, 8)], "k.cu:6: k")
    assert "parameter 5 is 8 bytes where cudabench passes a CUtensorMap (128 bytes); declare " \
           "it `const __grid_constant__ CUtensorMap NAME`" in str(caught.value)


def test_a_layout_native_alignment_would_move_is_refused():
    with pytest.raises(CompileError) as caught:
        param_format("iP", [(0, 4), (4, 8)], "k.cu:6: k")
    assert "parameter 2 at byte 4 is not aligned" in str(caught.value)


def test_missing_cuda_bindings_say_how_to_install_them(monkeypatch):
    real = cuda_driver.importlib.import_module

    def without_bindings(name, *args):
        if name.startswith("cuda.bindings"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(cuda_driver.importlib, "import_module", without_bindings)
    with pytest.raises(TensorMapUnavailable) as caught:
        cuda_driver.load_bindings()
    assert "pip install 'cuda-bindings>=12.4' (cudabench's `tma` extra)" in str(caught.value)
    assert "No module named 'cuda.bindings.driver'" in str(caught.value)


def test_the_driver_gets_dimensions_innermost_first():
    driver = pytest.importorskip("cuda.bindings.driver",
                                 reason="cuda-bindings is not installed (the `tma` extra)")
    made = request(shape=(3, 1000, 2000), box=(1, 16, 32), swizzle=128)
    arguments = cuda_driver.encode_arguments(driver, 0x7F0000000000, made)
    assert arguments[1:3] == (3, 0x7F0000000000)
    assert [int(x) for x in arguments[3]] == [2000, 1000, 3]
    assert [int(x) for x in arguments[4]] == [8000, 8_000_000]
    assert [int(x) for x in arguments[5]] == [32, 16, 1]
    assert arguments[8] == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    try:  # the bindings accept the types; without a driver the call itself cannot go on
        driver.cuTensorMapEncodeTiled(*arguments)
    except TypeError:
        raise
    except Exception as exc:  # no libcuda here
        assert "cuda" in str(exc).lower()


# -- the fake engine: skips, maps checked and recorded -----------------------------------------

def run_fake(plan_request: Request, **spec):
    engine = FakeEngine(FakeSpec(**spec))
    plans = [make_plan(plan_request)]
    results = {r.variant: r for r in run_jobs(plans, jobs_of(plans), engine)}
    return results, engine


def logged(engine: FakeEngine, kind: str) -> list:
    return [detail for what, detail in engine.log if what == kind]


def test_a_tensor_map_variant_runs_on_the_fake_with_its_maps_built_per_buffer():
    results, engine = run_fake(transpose_request("1000x2000", variants=("tma_tile", "naive")))
    assert results["tma_tile"].status is Status.PASS, results["tma_tile"].error
    assert results["naive"].status is Status.PASS
    assert ("tma_tile", "PPiiT") in logged(engine, "compile")
    assert ("naive", "PPii") in logged(engine, "compile")
    maps = logged(engine, "tensor_map")
    made = {request for request, _ in maps}
    assert len(made) == 1
    (only,) = made
    assert (only.buffer, only.arg_index, only.shape, only.box, only.dtype) == (
        "A", 0, (1000, 2000), (32, 32), "float32")
    assert only.where.endswith("tma_tile.cu:5")
    # The recheck at new addresses got a map of its own over the new A.
    assert len({address for _, address in maps}) == 2


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_the_swizzled_map_follows_the_type(dtype):
    results, engine = run_fake(transpose_request("77x96", dtype, variants=("tma_swizzled",)))
    assert results["tma_swizzled"].status is Status.PASS
    request_made, _ = logged(engine, "tensor_map")[0]
    itemsize = {"float16": 2, "float64": 8, "int32": 4}[dtype]
    assert request_made.box == (32, 128 // itemsize)
    assert (request_made.swizzle, request_made.l2) == (128, 256)


def test_a_shape_the_map_cannot_describe_is_a_skip_row_and_nothing_is_compiled():
    results, engine = run_fake(transpose_request("100x1001", variants=("tma_tile", "naive")))
    row = results["tma_tile"]
    assert row.status is Status.SKIP
    assert row.skipped.startswith("tensor_map A (")
    assert "tma_tile.cu:5): A (100x1001 float32): consecutive indices of dimension 0 are 4004 " \
           "bytes apart" in row.skipped
    assert results["naive"].status is Status.PASS
    assert [name for name, _ in logged(engine, "compile")] == ["naive"]


@pytest.mark.parametrize("capability", ["8.0", "10.0"])
def test_a_gpu_of_another_capability_skips_the_sm_90a_variant(capability):
    results, engine = run_fake(transpose_request("64x64", variants=("tma_tile", "naive")),
                               compute_capability=capability)
    row = results["tma_tile"]
    assert row.status is Status.SKIP
    assert row.skipped == ("built for sm_90a, which runs only on compute capability 9.0; this "
                           f"GPU is {capability}")
    assert row.device is not None and row.device.compute_capability == capability
    assert results["naive"].status is Status.PASS
    assert [name for name, _ in logged(engine, "compile")] == ["naive"]


def test_the_fake_refuses_to_load_a_kernel_built_for_another_gpu():
    variant = discover([ARCH_KERNELS])["transpose"]["tma_tile"]
    engine = FakeEngine(FakeSpec(compute_capability="8.0"))
    with pytest.raises(CompileError) as caught:
        engine.compile(variant, compile_defines({"TILE": 32}, TypeSet.of("float32", "float32",
                                                                         "float32")), "PPiiT")
    assert "cannot load the kernel on this GPU (fake): built for sm_90a" in str(caught.value)
    with pytest.raises(CompileError) as caught:  # the header's one map, not two
        FakeEngine(FakeSpec()).compile(variant, compile_defines(
            {"TILE": 32}, TypeSet.of("float32", "float32", "float32")), "PPiiTT")
    assert "passes 2 tensor map(s); the header asks for 1" in str(caught.value)


def test_the_fake_checks_a_map_against_its_buffer():
    engine = FakeEngine(FakeSpec())
    buffer = engine.allocate(64 * 64 * 4 + 16)
    small = request(shape=(64, 64), box=(8, 8))
    engine._tensor_map([buffer], small)  # fits
    with pytest.raises(TensorMapUnavailable) as caught:
        engine._tensor_map([buffer], request(shape=(128, 64), box=(8, 8)))
    assert "A holds 16400 bytes, fewer than the 32768 its map covers (fake)" in str(caught.value)
    with pytest.raises(TensorMapUnavailable) as caught:
        engine._tensor_map([buffer[4:]], small)
    assert "A is not 16-byte aligned (fake)" in str(caught.value)


def test_a_tensor_map_variant_without_arch_skips_before_hopper(tmp_path):
    folder = tmp_path / "transpose"
    folder.mkdir()
    for name in ("tma_common.cuh", "tma_tile.cu"):
        text = (ARCH_KERNELS / "transpose" / name).read_text()
        (folder / name).write_text(text.replace("// arch: sm_90a\n", ""))
    results, _ = run_fake(Request(op="transpose", size="64", variants=("tma_tile",),
                                  timing=QUICK, kernels_dirs=(tmp_path,),
                                  insight=Insight(vendor=False, batch=False)),
                          compute_capability="8.6")
    assert results["tma_tile"].skipped == ("its tensor maps need compute capability 9.0 or "
                                           "higher (TMA); this GPU is 8.6")


def test_the_skip_reaches_the_table_and_the_results_file(use_fake, tmp_path):
    use_fake(compute_capability="8.0")
    out = tmp_path / "results.json"
    result = CliRunner().invoke(cli, ["transpose", "--kernels-dir", str(ARCH_KERNELS),
                                      "--variant", "tma_tile", "--variant", "naive",
                                      "--size", "64", "--json", str(out), "--warmup", "0",
                                      "--min-samples", "3", "--max-time", "0.01",
                                      "--no-vendor", "--no-batch"])
    assert result.exit_code == 0, result.output
    assert "SKIP" in result.stdout
    saved = out.read_text()
    assert "built for sm_90a, which runs only on compute capability 9.0; this GPU is 8.0" in saved


# -- --dry-run and the real nvcc ------------------------------------------------------------

def dry_rows(size: str, arch: str, dtype: str = "float32", kernels=ARCH_KERNELS,
             variants=("tma_tile", "tma_swizzled")):
    plan = make_plan(Request(op="transpose", size=size, dtype=dtype, variants=tuple(variants),
                             kernels_dirs=(kernels,)))
    return {row.variant: row for row in plan_rows([plan], arch, NVCC)}


@needs_nvcc
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_dry_run_builds_the_sm_90a_kernels_for_their_own_target(dtype):
    rows = dry_rows("1000x2000", "sm_90", dtype)
    for name, row in rows.items():
        assert row.compile_ok and row.compiled == "ok (sm_90a cubin)", (name, row.compiled)
    assert "tensor_map A box 32x32" in rows["tma_tile"].launches
    assert "swizzle 128B, l2 256B" in rows["tma_swizzled"].launches


@needs_nvcc
def test_dry_run_says_which_gpus_would_skip_a_variant():
    rows = dry_rows("1000x2000", "sm_80")
    assert rows["tma_tile"].compile_ok
    assert rows["tma_tile"].compiled == (
        "ok (sm_90a cubin); would SKIP on sm_80: built for sm_90a, which runs only on compute "
        "capability 9.0; --arch sm_80 is 8.0")
    assert "would SKIP" not in dry_rows("1000x2000", "sm_90a")["tma_tile"].compiled


def copy_with_arch(tmp_path: Path, arch: str) -> Path:
    folder = tmp_path / "transpose"
    folder.mkdir(parents=True)
    shutil.copy(ARCH_KERNELS / "transpose" / "tma_common.cuh", folder)
    text = (ARCH_KERNELS / "transpose" / "tma_tile.cu").read_text()
    (folder / "tma_tile.cu").write_text(text.replace("// arch: sm_90a", f"// arch: {arch}"))
    return tmp_path


@needs_nvcc
def test_the_sm_90a_instructions_fail_to_build_for_plain_sm_90(tmp_path):
    # The control: the same kernel for sm_90 (no `a`) must not build, or the test above
    # would prove nothing about building for the right target.
    rows = dry_rows("64", "sm_90", kernels=copy_with_arch(tmp_path, "sm_90"),
                    variants=("tma_tile",))
    assert not rows["tma_tile"].compile_ok
    assert "wgmma.fence" in rows["tma_tile"].compiled
    assert "not supported on .target 'sm_90'" in rows["tma_tile"].compiled


@needs_nvcc
def test_the_dry_run_command_exits_2_when_an_arch_variant_does_not_build(tmp_path, monkeypatch):
    refuse_engines(monkeypatch)
    good = CliRunner().invoke(cli, ["transpose", "--dry-run", "--kernels-dir",
                                    str(ARCH_KERNELS), "--size", "256x128"])
    assert good.exit_code == 0, good.output
    bad = CliRunner().invoke(cli, ["transpose", "--dry-run", "--kernels-dir",
                                   str(copy_with_arch(tmp_path, "sm_90")), "--size", "256x128"])
    assert bad.exit_code == 2, bad.output


def kparam_layout(cubin: bytes, tmp_path: Path) -> list[tuple[int, int]]:
    """Return (offset, size) of each kernel parameter from the cubin's EIATTR_KPARAM_INFO
    (cuobjdump -elf), in parameter order: what the driver reads the layout from."""
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    text = subprocess.run([find_cuobjdump(), "-elf", str(path)], capture_output=True,
                          text=True, check=True).stdout
    found = re.findall(r"Ordinal\s*:\s*(0x[0-9a-f]+)\s+Offset\s*:\s*(0x[0-9a-f]+)\s+"
                       r"Size\s*:\s*(0x[0-9a-f]+)", text)
    return [(int(offset, 16), int(size, 16)) for _, offset, size in
            sorted(found, key=lambda entry: int(entry[0], 16))]


@needs_nvcc
@needs_cuobjdump
def test_the_cubin_holds_the_tma_load_and_the_wgmma_fence(tmp_path):
    variant = discover([ARCH_KERNELS])["transpose"]["tma_tile"]
    types = TypeSet.of("float32", "float32", "float32")
    build = compile_cubin(variant, compile_defines({"TILE": 32}, types), variant.arch,
                          types.headers, NVCC)
    assert build.returncode == 0, build.output
    assert "-gencode=arch=compute_90a,code=sm_90a" in build.command
    code = sass(build.cubin)
    assert "code for sm_90a" in code
    assert "UTMALDG" in code  # cp.async.bulk.tensor: the TMA load
    assert "WARPGROUP.ARRIVE" in code  # wgmma.fence
    # The layout in the cubin is the one H100's driver reported: the map at byte 112.
    layout = kparam_layout(build.cubin, tmp_path)
    assert layout == H100_LAYOUT
    assert param_format("PPiiT", layout, "tma_tile") == "PPii88x128s"
