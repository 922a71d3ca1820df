"""Kernel headers: the built-in catalog, strict parsing with file:line errors, discovery."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from helpers import MATMUL_HEADER, header_with, write_kernel

from cudabench.catalog import builtin_kernels_dir, discover, parse_header
from cudabench.errors import KernelFileError, UsageError
from cudabench.ops import OPS

ROOT = Path(__file__).parents[1]
BUILTIN_VARIANTS = {
    "matmul": {"naive", "tiled", "tiled_conflict", "mma_sync", "mma_async", "wgmma_async",
               "wgmma_tma", "wgmma_ws", "blocktile2d", "vectorized", "warptile",
               "async_double_buffer", "prefetch_splitk", "fragment_double_buffer"},
    "transpose": {"naive", "shared", "shared_padded", "vectorized", "evict_first"},
    "transpose_inplace": {"naive", "tiled", "tile_pairs"},
    "dot": {"shared_tree", "atomic", "vectorized_shuffle", "deterministic", "streaming",
            "bulk"},
}
# The built-in variants whose header says `run: on request` (docs/kernels.md says why).
# Rungs beaten at every goal size by one beside them (measured on an H100): named or
# --variant all.
ON_REQUEST = {("matmul", "blocktile2d"), ("matmul", "vectorized"), ("matmul", "prefetch_splitk"),
              ("dot", "streaming")}

# The CUDA-core SGEMM rungs, written for float32 alone.
FLOAT32_ONLY = {"prefetch_splitk", "fragment_double_buffer"}

# parse_header(path, text) does not read path: headers given as text are parsed "from" it.
VIRTUAL = Path("/virtual/kernels/matmul/test.cu")

BUILTIN_ENTRIES = {
    ("dot", "shared_tree"): ["dot_partials", "dot_finish"],
    ("dot", "atomic"): ["dot_zero", "dot_atomic"],
    ("matmul", "prefetch_splitk"): ["matmul_prefetch_splitk_zero", "matmul_prefetch_splitk"],
    ("matmul", "fragment_double_buffer"): ["matmul_fragment_double_buffer_zero",
                                           "matmul_fragment_double_buffer"],
}


def test_builtin_kernels_dir_holds_the_op_folders():
    folder = builtin_kernels_dir()
    assert folder.is_dir()
    assert (folder / "matmul").is_dir()
    assert sorted(folder.glob("matmul/*.cu"))


def test_a_checkout_run_by_pythonpath_reads_its_own_kernels(tmp_path):
    # with another checkout installed editable, its finder answered cudabench.kernels:
    # the package ran from this checkout, its kernels came from the other one
    import os
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    clone = tmp_path / "clone"
    shutil.copytree(root / "cudabench", clone / "cudabench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "kernels", clone / "kernels")
    shutil.copy(root / "pyproject.toml", clone)
    done = subprocess.run(
        [sys.executable, "-c", "from cudabench.common.own_files import builtin_kernels_dir;"
                               "print(builtin_kernels_dir())"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "PYTHONPATH": str(clone)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(clone / "kernels"), done.stdout


def test_discover_parses_every_builtin_kernel():
    catalog = discover()
    assert set(catalog) == set(OPS) == set(BUILTIN_VARIANTS)
    assert {op: set(variants) for op, variants in catalog.items()} == BUILTIN_VARIANTS
    for op, variants in catalog.items():
        for name, variant in variants.items():
            assert (variant.op, variant.name) == (op, name)
            assert variant.path == builtin_kernels_dir() / op / f"{name}.cu"
            assert variant.description
            # every type of its op, but the tensor-core rungs (float16, float32 accumulation)
            # and the CUDA-core SGEMM rungs (float32)
            assert variant.dtypes == (("float16",) if variant.unit == "tensor"
                                      else ("float32",) if name in FLOAT32_ONLY
                                      else OPS[op].dtypes)
            assert variant.launches
            expected = BUILTIN_ENTRIES.get((op, name), [f"{op}_{name}"])
            assert [launch.entry for launch in variant.launches] == expected
            for spec in variant.params:
                assert spec.allows(spec.default)
            assert variant.on_request == ((op, name) in ON_REQUEST)


@pytest.mark.parametrize(
    ("op", "variant", "params"),
    [
        ("matmul", "tiled", {"TILE": (16, "8, 16, 32")}),
        ("transpose", "shared_padded",
         {"TILE": (32, "8, 16, 32"), "BLOCK_ROWS": (8, "1, 2, 4, 8")}),
        ("dot", "atomic", {"BLOCK": (256, "32, 64, 128, 256, 512, 1024"),
                           "BLOCKS_PER_SM": (8, "1..64")}),
    ],
)
def test_builtin_params(op, variant, params):
    found = discover()[op][variant]
    assert {p.name: (p.default, p.describe_allowed()) for p in found.params} == params


def test_param_ranges_are_inclusive():
    spec = discover()["dot"]["atomic"].param("BLOCKS_PER_SM")
    assert [spec.allows(v) for v in (0, 1, 64, 65)] == [False, True, True, False]
    assert discover()["dot"]["atomic"].param("TILE") is None


def test_compile_source_starts_with_a_line_directive():
    variant = discover()["matmul"]["tiled"]
    first, rest = variant.compile_source().split("\n", 1)
    assert first == f'#line 1 "{variant.path}"'
    assert rest == variant.path.read_text(encoding="utf-8")


def test_launch_geometry_pads_to_three():
    variant = parse_header(VIRTUAL, "\n".join(MATMUL_HEADER))
    (launch,) = variant.launches
    grid, block = launch.geometry({"M": 100, "K": 5, "N": 40, "TILE": 16})
    assert (grid, block) == ((3, 7, 1), (16, 16, 1))


@pytest.mark.parametrize(
    ("grid", "block", "expected"),
    [
        ("7", "32", ((7, 1, 1), (32, 1, 1))),
        ("1, 2, 3", "4, 5, 6", ((1, 2, 3), (4, 5, 6))),
    ],
)
def test_launch_geometry_shapes(grid, block, expected):
    header = ["// cudabench: dot", f"// launch k: grid {grid}; block {block}"]
    (launch,) = parse_header(VIRTUAL, "\n".join(header)).launches
    assert launch.geometry({"N": 1}) == expected


def test_header_ends_at_the_first_non_comment_line(tmp_path):
    path = write_kernel(tmp_path, "v", [*MATMUL_HEADER], body="// colour: red\n")
    variant = parse_header(path)
    assert variant.name == "v" and variant.description == "a test variant"
    assert variant.shared_bytes is None


@pytest.mark.parametrize("late", ["// dtypes: float16", "// run: on request",
                                  "// param X: default 1; allowed 1, 2",
                                  "//   launch k2: grid 1; block 1", "// arch: sm_90a",
                                  # keys in another order were ignored, not refused
                                  "// param X: allowed 1, 2; default 1",
                                  "// launch k2: block 16; grid 1"])
def test_a_header_line_after_a_break_is_an_error(tmp_path, late):
    # a blank line ended the header: the lines after it were ignored, the kernel run in
    # every type, by default, as a CUDA-core kernel
    path = write_kernel(tmp_path, "v", [*MATMUL_HEADER, "", "// a note", late])
    with pytest.raises(KernelFileError, match="comes after the header's end") as error:
        parse_header(path)
    assert error.value.line == len(MATMUL_HEADER) + 3


@pytest.mark.parametrize("between", ["#include <cuda.h>", '#include "_common.cuh"',
                                     "#define WIDE 4"])
def test_a_header_line_after_an_include_is_an_error(tmp_path, between):
    # `// arch: sm_90a` and `// constraint:` under an #include were ignored: a dry run
    # said "ok" for a kernel its own constraint refuses
    path = write_kernel(tmp_path, "v", [*MATMUL_HEADER, between, "// arch: sm_90a"])
    with pytest.raises(KernelFileError, match="move the line up into it") as error:
        parse_header(path)
    assert error.value.line == len(MATMUL_HEADER) + 2


def test_a_comment_of_the_code_s_own_under_an_include_is_kept(tmp_path):
    # `#include <cuda_fp16.h>` then `// run: one block per SM slice`: refused as a late
    # header line, and moved up as told it was an invalid `run:` value
    path = write_kernel(tmp_path, "v", [*MATMUL_HEADER, "#include <cuda_fp16.h>",
                                        "// run: one block per SM slice, then an atomic",
                                        "// description of the trick below"])
    assert parse_header(path).name == "v"


def test_comments_after_the_header_and_in_the_code_are_the_kernel_s_own(tmp_path):
    lines = [*MATMUL_HEADER, "", "// Measured: 0.97 of the copy; launch order: row-major"]
    path = write_kernel(tmp_path, "v", lines, body="int x;\n// dtypes: the code's own comment\n")
    assert parse_header(path).name == "v"


# (header lines, line the error is on, text the message must contain)
HEADER_ERRORS = {
    "missing first line": (
        ["// description: x", "// launch k: grid 1; block 1"], 1, "the first line must be"),
    "blank first line": (["", *MATMUL_HEADER], 1, "not a cudabench kernel"),
    "code first": (["#include <cstdio>", *MATMUL_HEADER], 1, "not a cudabench kernel"),
    # common.cu, code the kernels include, named without the leading _ that skips it
    "an included file": (["__device__ float twice(float x) { return 2 * x; }"], 1,
                         "a file the kernels #include is named with a leading _"),
    "unknown op": (["// cudabench: conv2d", "// launch k: grid 1; block 1"], 1,
                   "unknown op 'conv2d' (known: matmul, transpose, transpose_inplace, dot; an op "
                   "of your own"),
    "unknown key": (header_with("// description: x", "// colour: red"), 3,
                    "unknown header key 'colour'"),
    "key with a name": (header_with("// dtypes float32: x"), 2,
                        "`dtypes` takes no name: `// dtypes: ...`, not `// dtypes float32: "),
    # "unknown header key 'launch'" read as if launch were no key
    "launch without entry": (header_with("// launch: grid 1; block 1"), 2,
                             "`launch` needs a name before its colon: `// launch ENTRY: grid"),
    "param without name": (header_with("// param: junk"), 2,
                           "`param` needs a name before its colon: `// param NAME: default"),
    "not key value": (header_with("// just some prose"), 2, "expected `key: value`"),
    "param without allowed": (header_with("// param TILE: default 16"), 2,
                              "param TILE: expected `default V; allowed A, B, C`"),
    "param unknown part": (header_with("// param TILE: default 16; allowed 8; step 2"), 2,
                           "param TILE: expected"),
    "param not integer": (header_with("// param TILE: default sixteen; allowed 8, 16"), 2,
                          "param TILE: default 'sixteen' is not an integer"),
    "param float": (header_with("// param TILE: default 16; allowed 8, 16.5"), 2,
                    "param TILE: allowed '8, 16.5' is neither integers `A, B, C` nor a range"),
    "param stepped range": (header_with("// param B: default 1; allowed 1..64:x2"), 2,
                            "param B: allowed '1..64:x2' is neither integers `A, B, C` nor a "
                            "range `LOW..HIGH`"),
    # beyond 64 bits: list and run took it, and wrote a results file report refused;
    # -p refuses it, and the grammar -p refuses (1_6, +16, full-width digits) too
    "param beyond 64 bits": (
        header_with("// param B: default 9; allowed 1..99999999999999999999999"), 2,
        "param B: 99999999999999999999999 is beyond a 64-bit integer"),
    "param default beyond 64 bits": (
        header_with("// param B: default 9223372036854775808; allowed 1, 2"), 2,
        "param B: 9223372036854775808 is beyond a 64-bit integer"),
    "param underscore": (header_with("// param B: default 16; allowed 1_6, 16"), 2,
                         "param B: allowed '1_6, 16' is neither integers"),
    "param plus": (header_with("// param B: default +16; allowed 16"), 2,
                   "param B: default '+16' is not an integer"),
    "param full-width digits": (header_with("// param B: default 16; allowed 8..\uff11\uff16"),
                                2, "param B: allowed '8..\uff11\uff16' is neither integers"),
    "param word missing": (header_with("// param TILE: default; allowed 8"), 2,
                           "cannot read 'default' in a param line"),
    "default not allowed": (header_with("// param TILE: default 12; allowed 8, 16, 32"), 2,
                            "param TILE: default 12 is not among the allowed values"),
    "default outside range": (header_with("// param B: default 0; allowed 1..64"), 2,
                              "param B: default 0 is not among the allowed values"),
    "duplicate param": (header_with("// param TILE: default 16; allowed 16",
                                    "// description: x",
                                    "// param TILE: default 8; allowed 8"), 4,
                        "parameter TILE declared twice"),
    "duplicate key": (header_with("// description: x", "// description: y"), 3,
                      "`description` given twice"),
    "launch without block": (["// cudabench: matmul", "// launch k: grid 1, 2"], 2,
                             "launch k: expected `grid X, Y[, Z]; block X, Y[, Z]`"),
    "launch without grid": (["// cudabench: matmul", "// launch k: block 16, 16"], 2,
                            "launch k: expected `grid"),
    "launch unknown part": (["// cudabench: matmul", "// launch k: grid 1; block 1; smem 4"],
                            2, "launch k: expected `grid"),
    "unknown name in grid": (["// cudabench: matmul", "// param TILE: default 8; allowed 8",
                              "// launch k: grid cdiv(ROWS, TILE); block TILE"], 3,
                             "launch k grid: unknown name(s) ROWS "
                             "(known: ACC_SIZE, ELEM_SIZE, K, M, N, OUT_SIZE, SM_COUNT, TILE)"),
    "unknown name in block": (["// cudabench: dot", "// launch k: grid 1; block TILE"], 2,
                              "launch k block: unknown name(s) TILE (known: ACC_SIZE, "
                              "ELEM_SIZE, N, OUT_SIZE, SM_COUNT)"),
    "unknown name in shared_bytes": (
        header_with("// shared_bytes: TILE * 4", op="transpose"), 2,
        "shared_bytes: unknown name(s) TILE (known: ACC_SIZE, COLS, ELEM_SIZE, OUT_SIZE, ROWS, "
        "SM_COUNT)"),
    "bad grid syntax": (["// cudabench: matmul", "// launch k: grid N ** 2; block 1"], 2,
                        "launch k grid: allowed operators are"),
    "four block values": (["// cudabench: matmul", "// launch k: grid 1; block 1, 1, 1, 1"],
                          2, "expected 1 to 3 comma-separated values, got 4"),
    "two shared_bytes values": (header_with("// shared_bytes: 4, 8"), 2,
                                "shared_bytes takes one expression"),
    "bad dtype": (header_with("// description: x", "// dtypes: float32, bfloat16"), 3,
                  "dtypes must be among float16, float32, float64, int32; got 'float32, "
                  "bfloat16'"),
    "empty dtypes": (header_with("// dtypes:"), 2, "dtypes must be among"),
    "bad run": (header_with("// run: sometimes"), 2,
                "run must be `default` (in the runs that name no --variant) or `on request`"),
    "duplicate run": (header_with("// run: on request", "// run: default"), 3,
                      "`run` given twice"),
    "dtypes typo": (header_with("// dtypes: float"), 2, "dtypes must be among"),
}


@pytest.mark.parametrize(("lines", "line", "message"), HEADER_ERRORS.values(),
                         ids=HEADER_ERRORS.keys())
def test_header_error_names_file_and_line(tmp_path, lines, line, message):
    path = write_kernel(tmp_path, "bad", lines)
    with pytest.raises(KernelFileError) as info:
        parse_header(path)
    assert f"{path}:{line}: " in str(info.value)
    assert message in str(info.value)
    assert (info.value.path, info.value.line) == (path, line)


def test_missing_launch_names_the_file(tmp_path):
    path = write_kernel(tmp_path, "bad", ["// cudabench: matmul", "// description: x"])
    with pytest.raises(KernelFileError) as info:
        parse_header(path)
    assert str(info.value).startswith(f"{path}: no `launch ENTRY")
    assert info.value.line is None


def test_unreadable_file_names_the_file(tmp_path):
    path = tmp_path / "latin1.cu"
    path.write_bytes(b"// cudabench: matmul\n// description: caf\xe9\n")
    with pytest.raises(KernelFileError, match="cannot read kernel file") as info:
        parse_header(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("name", ["N", "ELEM_SIZE", "SM_COUNT", "DTYPE"])
def test_param_may_not_shadow_a_builtin_name(tmp_path, name):
    path = write_kernel(tmp_path, "bad", header_with(f"// param {name}: default 4; allowed 4"))
    with pytest.raises(KernelFileError, match=re.escape(f"{path}:2: ")):
        parse_header(path)


@pytest.mark.parametrize(("name", "why"), [
    ("T", "a C++ keyword or a name CUDA's own headers use"), ("warpSize", "CUDA's own"),
    ("int", "a C++ keyword"), ("__CUDA_ARCH__", "a name the compiler reserves"),
    ("_T", "a name the compiler reserves")])
def test_param_may_not_be_a_macro_that_breaks_cuda_s_headers(tmp_path, name, why):
    # -DT=16 broke CUDA's own headers (their templates' T) with an nvcc error far from the
    # header; -D__CUDA_ARCH__=16 compiled, with a warning, for another architecture
    path = write_kernel(tmp_path, "bad", header_with(f"// param {name}: default 4; allowed 4"))
    with pytest.raises(KernelFileError, match=re.escape(f"{path}:2: parameter {name}: nvcc "
                                                        f"gets it as a macro")) as info:
        parse_header(path)
    assert why in str(info.value) and "rename it" in str(info.value)


@pytest.mark.parametrize("name", ["BLÖCK", "ÉTAGES", "TILE_Ω"])
def test_param_names_are_ascii(tmp_path, name):
    # \w took BLÖCK: it compiled, and --best-out wrote `params = { BLÖCK = 256 }`, which no
    # TOML reader takes
    path = write_kernel(tmp_path, "bad", header_with(f"// param {name}: default 4; allowed 4"))
    with pytest.raises(KernelFileError, match=re.escape(
            f"{path}:2: parameter {name}: nvcc gets it as a macro (-D{name}=...), whose name "
            "is ASCII letters, digits and _; rename it")):
        parse_header(path)


def test_launch_with_two_grids_is_rejected(tmp_path):
    path = write_kernel(tmp_path, "bad", ["// cudabench: dot",
                                          "// launch k: grid 1; grid 2; block 32"])
    with pytest.raises(KernelFileError, match=re.escape(f"{path}:2: ")):
        parse_header(path)


# -- discover() with --kernels-dir ----------------------------------------------------


def test_discover_flat_files_and_op_folders(tmp_path):
    write_kernel(tmp_path, "mine", MATMUL_HEADER)
    write_kernel(tmp_path / "dot", "fast", header_with(op="dot"))
    (tmp_path / "dot" / "helper.cuh").write_text("// not a variant\n")
    write_kernel(tmp_path / "notes", "other", header_with(op="transpose"))
    catalog = discover([tmp_path])
    assert catalog["matmul"]["mine"].path == tmp_path / "mine.cu"
    assert catalog["dot"]["fast"].path == tmp_path / "dot" / "fast.cu"
    assert catalog["transpose"]["other"].path == tmp_path / "notes" / "other.cu"
    assert set(catalog["matmul"]) == BUILTIN_VARIANTS["matmul"] | {"mine"}
    assert set(catalog["dot"]) == BUILTIN_VARIANTS["dot"] | {"fast"}


def test_files_and_folders_named_with_an_underscore_are_helper_code(tmp_path):
    # `_common.cu`, which the variants #include, was read as a variant: "not a cudabench
    # kernel", as op files named with `_` are not op files
    write_kernel(tmp_path / "dot", "fast", header_with(op="dot"))
    (tmp_path / "dot" / "_common.cu").write_text("__device__ float twice(float x);\n")
    (tmp_path / "_old").mkdir()
    write_kernel(tmp_path / "_old", "slow", header_with(op="dot"))
    catalog = discover([tmp_path])
    assert set(catalog["dot"]) == BUILTIN_VARIANTS["dot"] | {"fast"}


def test_a_folder_of_helper_and_hidden_files_alone_is_refused(tmp_path):
    # skipped by discovery, they counted as kernels: the folder was taken and added nothing
    (tmp_path / "_priv").mkdir()
    for name in ("_common.cu", "_x.py", ".x.cu", "_priv/a.cu"):
        (tmp_path / name).write_text("// helper\n")
    says = f"^--kernels-dir {re.escape(str(tmp_path))}: holds no kernel .* a name that " \
        "starts with _ or . is helper code or hidden"
    with pytest.raises(UsageError, match=says):
        discover([tmp_path])


def test_an_op_folder_one_level_down_has_its_kernels_beside_its_op_file(tmp_path):
    # --kernels-dir examples found examples/softmax/softmax.py but not its kernels in
    # examples/softmax/softmax/: "no softmax kernels found"
    from cudabench.ops.registry import forget_file_ops

    shutil.copytree(ROOT / "examples" / "softmax", tmp_path / "softmax")
    forget_file_ops()
    try:
        catalog = discover([tmp_path])
    finally:
        forget_file_ops()
    assert set(catalog["softmax"]) == {"naive", "block_per_row"}
    assert catalog["softmax"]["naive"].path == tmp_path / "softmax" / "softmax" / "naive.cu"


def test_discover_several_folders(tmp_path):
    write_kernel(tmp_path / "a", "one", MATMUL_HEADER)
    write_kernel(tmp_path / "b", "two", MATMUL_HEADER)
    catalog = discover([tmp_path / "a", tmp_path / "b"])
    assert {"one", "two"} <= set(catalog["matmul"])


def test_discover_rejects_a_file_in_another_ops_folder(tmp_path):
    path = write_kernel(tmp_path / "transpose", "wrong", MATMUL_HEADER)
    with pytest.raises(KernelFileError) as info:
        discover([tmp_path])
    assert f"{path}:1: " in str(info.value)
    assert "folder transpose/ but declares op matmul" in str(info.value)


def test_variant_clashing_with_builtin_names_both_files(tmp_path):
    path = write_kernel(tmp_path / "matmul", "naive", MATMUL_HEADER)
    with pytest.raises(KernelFileError) as info:
        discover([tmp_path])
    message = str(info.value)
    assert str(path) in message
    assert str(builtin_kernels_dir() / "matmul" / "naive.cu") in message
    assert "matmul/naive" in message


def test_variant_clash_between_user_folders(tmp_path):
    first = write_kernel(tmp_path / "a", "mine", MATMUL_HEADER)
    second = write_kernel(tmp_path / "b", "mine", MATMUL_HEADER)
    with pytest.raises(KernelFileError) as info:
        discover([tmp_path / "a", tmp_path / "b"])
    assert str(first) in str(info.value) and str(second) in str(info.value)


def test_same_name_for_different_ops_is_fine(tmp_path):
    write_kernel(tmp_path, "naive", header_with(op="dot"))
    assert discover([tmp_path])["dot"]["naive"].path == tmp_path / "naive.cu"


def test_malformed_user_kernel_fails_discovery(tmp_path):
    path = write_kernel(tmp_path, "bad", header_with("// colour: red"))
    with pytest.raises(KernelFileError, match=re.escape(f"{path}:2: unknown header key")):
        discover([tmp_path])


def test_missing_kernels_dir_is_a_usage_error(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(UsageError, match=re.escape(f"--kernels-dir {missing}: no such directory")):
        discover([missing])


def test_a_kernels_dir_with_no_kernel_is_a_usage_error(tmp_path):
    # an empty folder, or kernels two levels down, ran the built-in variants without a word
    deep = tmp_path / "a" / "b" / "c"
    write_kernel(deep, "mine", MATMUL_HEADER)
    for folder in (tmp_path / "a", deep.parent.parent):
        with pytest.raises(UsageError, match=re.escape(f"--kernels-dir {folder}: holds no "
                                                       "kernel")):
            discover([folder])
    assert "mine" in discover([deep.parent])["matmul"]  # one level down: found
    ops = tmp_path / "ops" / "softmax"  # an op file one level down, its kernels elsewhere
    ops.mkdir(parents=True)
    shutil.copy(Path(__file__).parents[1] / "examples" / "softmax" / "softmax.py", ops)
    assert "softmax" in discover([tmp_path / "ops"])


def test_kernels_dir_that_is_a_file_is_a_usage_error(tmp_path):
    path = write_kernel(tmp_path, "mine", MATMUL_HEADER)
    with pytest.raises(UsageError, match="--kernels-dir"):
        discover([path])


def test_a_launch_may_ask_for_dynamic_shared_memory(tmp_path):
    path = write_kernel(tmp_path, "k", header_with(op="matmul")[:1] + [
        "// param TILE: default 64; allowed 64",
        "// launch k: grid 1; block TILE; dynamic_shared 2 * TILE * TILE * ELEM_SIZE",
        "// launch k2: grid 1; block 1",
    ])
    variant = parse_header(path)
    variables = {"M": 1, "K": 1, "N": 1, "TILE": 64, "ELEM_SIZE": 4, "ACC_SIZE": 4,
                 "OUT_SIZE": 4, "SM_COUNT": 1}
    assert variant.dynamic_shared_bytes(variables) == [2 * 64 * 64 * 4, 0]


@pytest.mark.parametrize(("clause", "message"), [
    ("dynamic_shared 1; dynamic_shared 2", "optionally `; dynamic_shared BYTES`"),
    ("shared 100", "optionally `; dynamic_shared BYTES`"),
    ("dynamic_shared 1, 2", "dynamic_shared takes one expression"),
    ("dynamic_shared WIDTH", "dynamic_shared: unknown name(s) WIDTH"),
])
def test_a_bad_dynamic_shared_clause_names_the_line(tmp_path, clause, message):
    path = write_kernel(tmp_path, "k", ["// cudabench: matmul",
                                        f"// launch k: grid 1; block 1; {clause}"])
    with pytest.raises(KernelFileError, match=re.escape(message)) as error:
        parse_header(path)
    assert f"{path}:2:" in str(error.value)


@pytest.mark.parametrize(("line", "on_request"), [(None, False), ("// run: default", False),
                                                  ("// run: on request", True),
                                                  ("// run:  on   request", True)])
def test_run_on_request(tmp_path, line, on_request):
    path = write_kernel(tmp_path, "rung", header_with(*([line] if line else [])))
    assert parse_header(path).on_request is on_request


def test_a_variant_cannot_be_called_all(tmp_path):
    path = write_kernel(tmp_path, "all", header_with())
    with pytest.raises(KernelFileError, match="--variant all means every variant"):
        parse_header(path)


@pytest.mark.parametrize(("op", "name", "kind"), [("matmul", "cuBLAS", "vendor"),
                                                   ("dot", "memcpy_dtod", "reference")])
def test_a_variant_cannot_take_the_name_of_a_row_measured_beside_it(tmp_path, op, name, kind):
    # dot/cuBLAS.cu ran, and its file held two rows dot/cuBLAS that compare then refused
    path = write_kernel(tmp_path, name, header_with(op=op))
    with pytest.raises(KernelFileError, match=f"the {op} op's {kind} row"):
        parse_header(path)


@pytest.mark.parametrize("grid", ["+".join(["1"] * 1000), "-" * 1000 + "1"])
def test_a_header_expression_nested_too_deep_is_a_header_error(tmp_path, grid):
    # it exhausted Python's recursion: an internal error, exit 4
    path = write_kernel(tmp_path, "v", ["// cudabench: matmul",
                                        f"// launch k: grid {grid}; block 1"])
    with pytest.raises(KernelFileError, match="nested more than 64 deep"):
        parse_header(path)


def test_a_built_in_folder_given_as_kernels_dir_is_no_clash():
    # `--kernels-dir kernels/dot` reached kernels/dot/atomic.cu a second time: "also
    # defined by" itself
    folder = builtin_kernels_dir() / "dot"
    assert discover([folder])["dot"].keys() == discover()["dot"].keys()


def test_a_variant_whose_name_holds_a_terminal_control_is_refused(tmp_path):
    # a file named "\x1b]0;pwned\x07evil.cu" retitled the terminal of `cudabench list`
    path = write_kernel(tmp_path, "\x1b]0;pwned\x07evil", header_with())
    with pytest.raises(KernelFileError, match="holds a control character") as refused:
        parse_header(path)
    assert "\x1b" not in str(refused.value)


@pytest.mark.parametrize(("line", "message"), [
    ("// param TILE: default 256; default 64; allowed 64, 256", "param TILE: default given twice"),
    ("// param TILE: default 16; allowed 8, 16, 8",
     "param TILE: allowed '8, 16, 8' lists a value twice"),
    ("// param TILE: default 16; allowed 64..8",
     "param TILE: allowed '64..8' is an empty range (LOW is above HIGH); write `allowed 8..64`"),
    ("// dtypes: float32, float32", "dtypes: 'float32, float32' names a type twice"),
])
def test_a_header_line_that_says_one_thing_twice_is_refused_naming_it(tmp_path, line, message):
    # the last `default` won silently; `allowed 64..8` said the default was not allowed
    path = write_kernel(tmp_path, "bad", header_with(line))
    with pytest.raises(KernelFileError, match=re.escape(f"{path}:2: {message}")):
        parse_header(path)


def test_a_header_integer_s_leading_zeros_are_no_size(tmp_path):
    # 0000000000000000000032 is 32: it was refused as "beyond a 64-bit integer"
    path = write_kernel(tmp_path, "lead", header_with(
        "// param TILE: default 0000000000000000000032; allowed 8, 16, 32"))
    (spec,) = [p for p in parse_header(path).params if p.name == "TILE"]
    assert spec.default == 32
