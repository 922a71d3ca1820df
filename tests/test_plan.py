"""Planning: every usage error is found before the GPU, with the flag to fix."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import header_with, write_kernel

from cudabench.catalog import discover
from cudabench.errors import CudabenchError, UsageError
from cudabench.planning.plan import (
    MAX_STATIC_SHARED_BYTES,
    Request,
    header_variables,
    make_plan,
)
from cudabench.planning.timing import TimingPolicy

ROOT = Path(__file__).resolve().parent.parent
TILE_FLAG = {"TILE": "--tile"}


@pytest.fixture(scope="module")
def catalog():
    return discover()


# The float16-only tensor-core matmul rungs, left out at any other type with one note.
ON_REQUEST_NOTE = ("left out blocktile2d, prefetch_splitk, vectorized: run on request "
                   "(--variant NAME or --variant all runs them)")
DOT_ON_REQUEST_NOTE = ("left out streaming: run on request (--variant NAME or --variant all "
                       "runs them)")
TENSOR_CORE_NOTES = (ON_REQUEST_NOTE,
                     "left out mma_async, mma_sync, wgmma_async, wgmma_tma, wgmma_ws: written "
                     "for float16 only (--dtype float16 runs them)",)
MATMUL_LADDER = {"warptile": {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64,
                              "MIN_BLOCKS": 2},
                 "async_double_buffer": {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64,
                                         "STAGES": 2, "MIN_BLOCKS": 2},
                 "fragment_double_buffer": {"BK": 16, "GROUP_M": 16, "MIN_BLOCKS": 2,
                                            "SPLIT_MAX": 8}}


def planned(plan) -> dict[str, dict[str, int]]:
    """Return {variant: params} of a plan."""
    return {p.variant.name: dict(p.params) for p in plan.variants}


@pytest.mark.parametrize(
    ("op", "shape", "params"),
    [
        ("matmul", (1000, 1000, 1000),
         {"naive": {"TILE": 16}, "tiled": {"TILE": 16}, "tiled_conflict": {"TILE": 16},
          **MATMUL_LADDER}),
        ("transpose", (3001, 3001),
         {"naive": {"TILE": 32}, "shared": {"TILE": 32, "BLOCK_ROWS": 8},
          "shared_padded": {"TILE": 32, "BLOCK_ROWS": 8},
          "vectorized": {"TILE": 64, "BLOCK_ROWS": 8},
          "evict_first": {"TILE": 64, "BLOCK_ROWS": 8, "GROUP": 1, "LOAD_CACHE": 1,
                          "STORE_CACHE": 2}}),
        ("transpose_inplace", (3001,),
         {"naive": {"TILE": 32}, "tiled": {"TILE": 32, "BLOCK_ROWS": 8},
          "tile_pairs": {"TILE": 32, "BLOCK_ROWS": 8}}),
        ("dot", (1 << 24,),
         {"atomic": {"BLOCK": 256, "BLOCKS_PER_SM": 8},
          "shared_tree": {"BLOCK": 256, "BLOCKS_PER_SM": 8},
          "vectorized_shuffle": {"BLOCK": 256, "BLOCKS_PER_SM": 4, "UNROLL": 4},
          "deterministic": {"BLOCK": 256, "BLOCKS_PER_SM": 4, "UNROLL": 4},
          "bulk": {"BLOCK": 256, "BLOCKS_PER_SM": 1, "CHUNK": 16384, "STAGES": 4,
                   "LOAD_CACHE": 1}}),
    ],
)
def test_defaults(catalog, op, shape, params):
    plan = make_plan(Request(op=op), catalog)
    assert plan.op.name == op
    assert plan.shape == shape
    assert plan.dtype.name == "float32"
    assert planned(plan) == params
    assert [p.variant.name for p in plan.variants] == sorted(params)
    assert plan.notes == {"matmul": TENSOR_CORE_NOTES, "dot": (DOT_ON_REQUEST_NOTE,)}.get(op, ())
    assert (plan.seed, plan.hot, plan.timing) == (0, False, TimingPolicy())


def test_request_is_carried_into_the_plan(catalog):
    timing = TimingPolicy(min_samples=3, precision=0.01)
    plan = make_plan(Request(op="dot", size="1000", dtype="int32", seed=7, hot=True,
                             timing=timing), catalog)
    assert (plan.shape, plan.dtype.name, plan.seed, plan.hot, plan.timing) == (
        (1000,), "int32", 7, True, timing)


def test_chosen_variants_keep_their_order_once(catalog):
    plan = make_plan(Request(op="matmul", variants=("tiled", "naive", "tiled")), catalog)
    assert [p.variant.name for p in plan.variants] == ["tiled", "naive"]


@pytest.mark.parametrize(("op", "value"), [("matmul", 32), ("transpose", 8)])
def test_tile_applies_to_every_variant(catalog, op, value):
    plan = make_plan(Request(op=op, params={"TILE": value}, param_flags=TILE_FLAG), catalog)
    tiled = {name: params for name, params in planned(plan).items() if "TILE" in params}
    assert all(params["TILE"] == value for params in tiled.values())
    # every variant that declares TILE (matmul's register-tiled rungs have BM, BN, BK)
    assert set(tiled) == {name for name, variant in catalog[op].items()
                          if variant.param("TILE") and not variant.on_request
                          and "float32" in variant.dtypes}
    if op == "transpose":
        assert planned(plan)["shared"]["BLOCK_ROWS"] == 8  # the others keep their defaults


def test_tile_applies_only_to_variants_that_declare_it(tmp_path):
    write_kernel(tmp_path, "fixed", header_with())  # a matmul variant without parameters
    catalog = discover([tmp_path])
    plan = make_plan(Request(op="matmul", params={"TILE": 8}, param_flags=TILE_FLAG), catalog)
    assert planned(plan) == {"fixed": {}, "naive": {"TILE": 8}, "tiled": {"TILE": 8},
                             "tiled_conflict": {"TILE": 8}, **MATMUL_LADDER}


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (Request(op="dot", params={"TILE": 16}, param_flags=TILE_FLAG),
         "--tile: no selected dot variant takes TILE"),
        (Request(op="dot", params={"TILE": 16}),
         "--param TILE: no selected dot variant takes TILE"),
        (Request(op="transpose", variants=("naive",), params={"BLOCK_ROWS": 4}),
         "--param BLOCK_ROWS: no selected transpose variant takes BLOCK_ROWS (they take TILE)"),
        # variants left out that take it are named, with how to select one (TM: the
        # on-request rungs only)
        (Request(op="matmul", params={"TM": 8}),
         "--param TM: no selected matmul variant takes TM (they take BK, BM, BN, GROUP_M, "
         "MIN_BLOCKS, SPLIT_MAX, STAGES, TILE, WM, WN); blocktile2d, vectorized take it, not "
         "selected (--variant blocktile2d selects one)"),
        (Request(op="matmul", variants=("naive", "tiled"), params={"tile": 8}),
         "--param tile: no selected matmul variant takes tile; did you mean TILE? (they take "
         "TILE)"),
        (Request(op="dot", variants=("atomic",), params={"BLOCKZ": 8}),
         "--param BLOCKZ: no selected dot variant takes BLOCKZ; did you mean BLOCK? (they take "
         "BLOCK, BLOCKS_PER_SM)"),
        (Request(op="matmul", params={"TILE": 12}, param_flags=TILE_FLAG),
         "--tile 12: no selected matmul variant allows it (TILE in 8, 16, 32)"),
        (Request(op="matmul", variants=("tiled",), params={"TILE": 64}),
         "--param TILE 64: matmul/tiled allows TILE in 8, 16, 32"),
        (Request(op="dot", params={"BLOCKS_PER_SM": 65},
                 param_flags={"BLOCKS_PER_SM": "--blocks-per-sm"}),
         "--blocks-per-sm 65: no selected dot variant allows it (BLOCKS_PER_SM in 1..64"),
        (Request(op="dot", params={"BLOCK": 100}, param_flags={"BLOCK": "--block"}),
         "--block 100: no selected dot variant allows it (BLOCK in 32, 64, 128, 256, 512, 1024"),
        (Request(op="matmul", variants=("naive", "fast", "slow")),
         "--variant fast: no such matmul variant (known: async_double_buffer, blocktile2d, "
         "fragment_double_buffer, mma_async, mma_sync, naive, prefetch_splitk, tiled, "
         "tiled_conflict, vectorized, warptile, wgmma_async, wgmma_tma, wgmma_ws; or all: "
         "every one)"),
        (Request(op="matmul", variants=("Naive",)),
         "--variant Naive: no such matmul variant; did you mean naive? (known: "),
        # --size and -p take comma lists, --variant one name: it said "no such variant"
        (Request(op="matmul", variants=("tiled,naive",)),
         "--variant tiled,naive: --variant takes one name (a comma list is not one); give "
         "each: --variant tiled --variant naive"),
        (Request(op="matmul", variants=("mma_sync",)),
         "--dtype float32: variant mma_sync supports float16 (--dtype float16 runs it)"),
        (Request(op="matmul", size="0"), "--size '0': sizes are positive integers"),
        (Request(op="transpose_inplace", size="3x5"), "--inplace transposes a square matrix"),
        (Request(op="dot", dtype="bfloat16"),
         "--dtype bfloat16: dot supports float16, float32, float64, int32"),
        (Request(op="dot", size="1<<31"), "--size '1<<31': each extent must be at most 2^31-1"),
        (Request(op="matmul", timing=TimingPolicy(precision=0)), "--precision must be > 0"),
        (Request(op="matmul", timing=TimingPolicy(min_samples=0)), "--min-samples"),
        (Request(op="conv"), "unknown op 'conv'"),
    ],
)
def test_usage_errors_name_the_flag(catalog, request_, message):
    with pytest.raises(UsageError) as info:
        make_plan(request_, catalog)
    assert message in str(info.value)


def test_a_suite_s_comma_list_of_variants_is_told_in_toml(catalog):
    # it read "give each: variants naive variants tiled", the flags' advice renamed
    request = Request(op="matmul", variants=("naive,tiled", "warptile"),
                      origin="s.toml: benchmark[0]")
    with pytest.raises(UsageError) as info:
        make_plan(request, catalog)
    assert str(info.value) == (
        's.toml: benchmark[0]: variants = ["naive,tiled"]: each is one name (a comma list is '
        'not one); give each: variants = ["naive", "tiled", "warptile"]')


def test_variant_of_a_user_folder(tmp_path):
    write_kernel(tmp_path, "mine", header_with())
    plan = make_plan(Request(op="matmul", variants=("mine",), kernels_dirs=(tmp_path,)))
    assert [p.variant.path for p in plan.variants] == [tmp_path / "mine.cu"]


def test_missing_kernels_dir(tmp_path):
    with pytest.raises(UsageError, match="--kernels-dir"):
        make_plan(Request(op="matmul", kernels_dirs=(tmp_path / "nope",)))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["// param TILE: default 64; allowed 16, 64",
          "// launch k: grid cdiv(N, TILE); block TILE, TILE"],
         "a block of 64 x 64 = 4096 threads exceeds the CUDA limit of 1024"),
        (["// launch k: grid 1; block 33, 32"], "1056 threads exceeds the CUDA limit of 1024"),
        (["// launch k: grid 1; block 2048"], "block extent 2048 outside 1..1024"),
        (["// launch k: grid 1; block 1, 1, 65"], "block extent 65 outside 1..64"),
        (["// param TILE: default 16; allowed 16", "// launch k: grid 1; block TILE - 16"],
         "block extent 0 outside 1..1024"),
        (["// launch first: grid 1; block 32", "// launch second: grid 1; block 32, 64"],
         "2048 threads exceeds"),
        (["// param TILE: default 64; allowed 64", "// shared_bytes: 4 * TILE * TILE * ELEM_SIZE",
          "// launch k: grid 1; block 16, 16"],
         f"needs 65536 bytes of shared memory per block, more than the "
         f"{MAX_STATIC_SHARED_BYTES}"),
        # no parameter changes a constant: the file is what to fix
        (["// shared_bytes: 48 * 1024 + 1", "// launch k: grid 1; block 1"],
         "needs 49153 bytes of shared memory per block, more than the 49152 a block may "
         "declare statically; fix shared_bytes in "),
        (["// shared_bytes: 12289 * ELEM_SIZE", "// launch k: grid 1; block 1"],
         "needs 49156 bytes of shared memory"),
    ],
)
def test_user_kernel_beyond_cuda_limits(tmp_path, lines, message):
    path = write_kernel(tmp_path, "big", ["// cudabench: matmul", *lines])
    request = Request(op="matmul", variants=("big",), kernels_dirs=(tmp_path,))
    with pytest.raises(UsageError) as info:
        make_plan(request)
    assert message in str(info.value)
    assert "matmul/big with " in str(info.value)
    if "shared memory" not in message:  # a launch's: its header line, where to fix it
        assert str(info.value).startswith(f"{path}:"), info.value
        line = int(str(info.value)[len(f"{path}:"):].split(":")[0])
        assert lines[line - 2].startswith("// launch "), (line, lines)
        assert f", launch {lines[line - 2].split()[2].rstrip(':')}: " in str(info.value)


@pytest.mark.parametrize("launch", ["grid SM_COUNT // 2; block 256",
                                    "grid SM_COUNT - 1; block 256"])
def test_a_launch_using_sm_count_is_judged_on_the_gpu(use_fake, tmp_path, launch):
    # the plan knows no GPU (SM_COUNT 1 there): a persistent grid of half the SMs is fine
    from helpers import invoke

    write_kernel(tmp_path / "matmul", "persist", ["// cudabench: matmul", f"// launch k: {launch}"])
    write_kernel(tmp_path / "matmul", "huge", ["// cudabench: matmul",
                                               "// launch k: grid 1; block SM_COUNT * 300"])
    done = invoke("matmul", "--kernels-dir", tmp_path, "--variant", "persist", "--variant",
                  "huge", "--size", "64", "--no-vendor", "--max-time", "0.05")
    assert "error: matmul/persist" not in done.stderr and "PASS" in done.stdout, done.output
    assert "huge.cu:2: k: block extent 1200 outside 1..1024" in " ".join(done.stderr.split())


@pytest.mark.parametrize(
    "lines",
    [
        ["// launch k: grid 1; block 32, 32"],
        ["// launch k: grid 1; block 1024, 1, 1"],
        ["// shared_bytes: 48 * 1024", "// launch k: grid 1; block 1"],
        ["// shared_bytes: 12288 * ELEM_SIZE", "// launch k: grid 1; block 1"],
        ["// launch k: grid 100000; block 8, 8, 16"],
    ],
)
def test_user_kernel_at_cuda_limits_is_fine(tmp_path, lines):
    write_kernel(tmp_path, "edge", ["// cudabench: matmul", *lines])
    plan = make_plan(Request(op="matmul", variants=("edge",), kernels_dirs=(tmp_path,)))
    assert [p.variant.name for p in plan.variants] == ["edge"]


@pytest.mark.parametrize("block", ["32 // (TILE - 16)", "cdiv(32, TILE - 16)"])
def test_header_arithmetic_failing_at_evaluation_names_file_and_line(tmp_path, block):
    path = write_kernel(tmp_path, "bad", ["// cudabench: matmul",
                                          "// param TILE: default 16; allowed 16",
                                          f"// launch k: grid 1; block {block}"])
    request = Request(op="matmul", variants=("bad",), kernels_dirs=(tmp_path,))
    with pytest.raises(CudabenchError, match=re.escape(f"{path}:3")):
        make_plan(request)


FLOAT_ONLY = header_with("// dtypes: float32")


def test_dtype_unsupported_by_a_chosen_variant_is_an_error(tmp_path):
    write_kernel(tmp_path, "floaty", FLOAT_ONLY)
    request = Request(op="matmul", dtype="int32", variants=("naive", "floaty"),
                      kernels_dirs=(tmp_path,))
    with pytest.raises(UsageError, match="--dtype int32: variant floaty supports float32"):
        make_plan(request)


def test_dtype_unsupported_by_a_default_variant_leaves_it_out(tmp_path):
    write_kernel(tmp_path, "floaty", FLOAT_ONLY)
    plan = make_plan(Request(op="matmul", dtype="int32", kernels_dirs=(tmp_path,)))
    assert [p.variant.name for p in plan.variants] == ["async_double_buffer", "naive", "tiled",
                                                       "tiled_conflict", "warptile"]
    assert plan.notes == (ON_REQUEST_NOTE, "left out floaty, fragment_double_buffer: written "
                          "for float32 only (--dtype float32 runs them)", *TENSOR_CORE_NOTES[1:])
    assert not plan.skipped  # no SKIP row each: the table shows what ran
    plan = make_plan(Request(op="matmul", dtype="float32", kernels_dirs=(tmp_path,)))
    assert "floaty" in planned(plan) and plan.notes == TENSOR_CORE_NOTES


def test_a_param_only_a_skipped_variant_takes_is_an_error(tmp_path):
    write_kernel(tmp_path, "floaty", header_with("// dtypes: float32",
                                                 "// param SPLIT: default 2; allowed 2, 4"))
    request = Request(op="matmul", dtype="int32", params={"SPLIT": 4},
                      kernels_dirs=(tmp_path,))
    with pytest.raises(UsageError, match="--param SPLIT: no selected matmul variant takes SPLIT"):
        make_plan(request)


def test_header_variables():
    from cudabench.ops import OPS

    types = OPS["dot"].type_set("float16")
    variables = header_variables(OPS["matmul"], (2, 3, 5), types, {"TILE": 8}, 132)
    assert variables == {"M": 2, "K": 3, "N": 5, "TILE": 8, "ELEM_SIZE": 2, "ACC_SIZE": 4,
                         "OUT_SIZE": 4, "SM_COUNT": 132}


def test_planning_never_imports_pycuda_or_the_engine():
    code = (
        "import sys\n"
        "from cudabench.planning.plan import Request, make_plan\n"
        "make_plan(Request(op='matmul', size='64'))\n"
        "bad = [m for m in ('cudabench.engine', 'pycuda') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_variants_run_on_request_only_when_named_or_all(catalog):
    plan = make_plan(Request(op="matmul"), catalog)
    assert not {"blocktile2d", "vectorized"} & set(planned(plan))
    assert plan.notes[0] == ON_REQUEST_NOTE
    named = make_plan(Request(op="matmul", variants=("vectorized", "tiled")), catalog)
    assert [p.variant.name for p in named.variants] == ["vectorized", "tiled"]
    assert named.notes == ()
    every = make_plan(Request(op="matmul", variants=("all",)), catalog)
    assert [p.variant.name for p in every.variants] == [
        "async_double_buffer", "blocktile2d", "fragment_double_buffer", "naive",
        "prefetch_splitk", "tiled", "tiled_conflict", "vectorized", "warptile"]
    # in float32: the tensor-core rungs are left out by their type, as ever
    assert every.notes == TENSOR_CORE_NOTES[1:]
    half = make_plan(Request(op="matmul", dtype="float16", variants=("all", "naive")), catalog)
    assert len(half.variants) == len(catalog["matmul"]) - 2  # the two float32-only SGEMMs
    assert half.notes == ("left out fragment_double_buffer, prefetch_splitk: written for "
                          "float32 only (--dtype float32 runs them)",)


def test_a_run_parses_each_set_of_kernels_folders_once(tmp_path, monkeypatch):
    # every point of a sweep parsed the whole catalogue again (288 points: 288 discover()s)
    from cudabench.cli.commands import plans_of
    from cudabench.planning import plan as plan_module

    found = []
    monkeypatch.setattr(plan_module, "discover", lambda folders=(): (
        found.append(tuple(folders)) or discover(folders)))
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    write_kernel(mine, "mine", header_with())
    write_kernel(theirs, "theirs", header_with())
    requests = [*(Request(op="matmul", size=str(size), variants=("tiled",)) for size in (64, 96)),
                *(Request(op="matmul", size=str(size), variants=("mine",), kernels_dirs=(mine,))
                  for size in (64, 96, 128)),
                Request(op="matmul", variants=("theirs",), kernels_dirs=(theirs,))]
    plans = plans_of(requests)
    assert found == [(), (mine,), (theirs,)]  # a suite's entries may name other folders
    assert [p.variant.path.parent for plan in plans for p in plan.variants] == [
        ROOT / "kernels" / "matmul", ROOT / "kernels" / "matmul", mine, mine, mine, theirs]


def test_a_parameter_of_a_variant_of_another_type_says_the_type_too(tmp_path):
    # "h16 takes it, not selected (--variant h16 selects it)": followed, it failed on
    # "--dtype float32: variant h16 supports float16"
    write_kernel(tmp_path, "h16", header_with("// dtypes: float16",
                                              "// param HTILE: default 16; allowed 8, 16"))
    catalog = discover([tmp_path])
    with pytest.raises(UsageError, match=r"h16 takes it, not selected \(--variant h16 "
                                         r"--dtype float16 selects it\)"):
        make_plan(Request(op="matmul", params={"HTILE": 8}), catalog)


def test_a_suite_entry_is_named_whole_though_its_folder_holds_a_parenthesis():
    # cut at " (": "/tmp/par: size 40000 ..." for "/tmp/par (x)/s.toml: benchmark[0]"
    request = Request(op="dot", origin="/tmp/par (x)/s (1).toml: benchmark[3] (dot, size "
                                       "default, float32)")
    assert request.entry == "/tmp/par (x)/s (1).toml: benchmark[3]"
    assert Request(op="dot").entry == ""
