"""--dry-run tells the truth: a launch the GPU must refuse is an error row (exit 2), and a
variant left out for a type is a SKIP row with the reason, not silently dropped."""

from __future__ import annotations

import pytest
from helpers import MATMUL_BODY, invoke, write_kernel

from cudabench.catalog.variants import parse_arch
from cudabench.engines.nvcc import find_nvcc
from cudabench.measure.dryrun import launch_problems, plan_rows
from cudabench.planning.plan import Request, make_plan

SM90 = parse_arch("sm_90")


def rows_for(tmp_path, header, dtype="float32", body=MATMUL_BODY):
    write_kernel(tmp_path, "v", ["// cudabench: matmul", *header], body)
    plan = make_plan(Request(op="matmul", size="64", dtype=dtype, variants=("v",),
                             kernels_dirs=(tmp_path,)))
    return plan_rows([plan], "sm_90", None)  # no nvcc: the checks need none


@pytest.mark.parametrize(("launch", "says"), [
    ("// launch k: grid 1, 70000; block 1", "grid y extent 70,000 exceeds"),
    ("// launch k: grid 1, 1, 65536; block 1", "grid z extent"),
    ("// launch k: grid 1; block 32; dynamic_shared 300000", "dynamic shared memory exceed"),
    ("// launch missing: grid 1; block 1", "entry point missing is not defined"),
])
def test_a_launch_the_gpu_must_refuse_is_an_error_row(tmp_path, launch, says):
    (row,) = rows_for(tmp_path, [launch])
    assert not row.compile_ok
    assert row.compiled.startswith("ERROR: ") and says in row.compiled


def test_a_launch_within_limits_is_not_refused(tmp_path):
    (row,) = rows_for(tmp_path, ["// launch k: grid 1, 65535; block 1024; "
                                 "dynamic_shared 200000"])
    assert row.compile_ok, row.compiled


def test_the_opt_in_limit_follows_the_architecture():
    geometry = [((1, 1, 1), (32, 1, 1))]
    assert not [p for p in launch_problems("", ["k"], geometry, [150 * 1024], SM90)
                if "shared" in p]
    assert [p for p in launch_problems("", ["k"], geometry, [150 * 1024], parse_arch("sm_86"))
            if "shared" in p]


def test_a_variant_without_the_dtype_is_left_out_with_a_note(tmp_path):
    write_kernel(tmp_path, "only64", ["// cudabench: matmul", "// dtypes: float64",
                                      "// launch k: grid 1; block 1"])
    write_kernel(tmp_path, "any", ["// cudabench: matmul", "// launch k: grid 1; block 1"])
    plan = make_plan(Request(op="matmul", size="64", dtype="float32",
                             kernels_dirs=(tmp_path,)))  # every variant: a type may skip
    rows = {row.variant: row for row in plan_rows([plan], "sm_90", None)}
    assert "only64" not in rows and any("only64" in note and "float64" in note
                                        for note in plan.notes)
    assert rows["any"].compile_ok


def test_dry_run_exits_2_on_a_refused_launch(tmp_path):
    write_kernel(tmp_path, "v", ["// cudabench: matmul", "// launch k: grid 1, 70000; block 1"])
    result = invoke("matmul", "--size", "64", "--kernels-dir", tmp_path, "--variant", "v",
                    "--dry-run")
    assert result.exit_code == 2, result.output
    assert "ERROR" in result.stdout


def test_a_dry_run_whose_every_kernel_would_be_skipped_exits_2_as_the_run(tmp_path, use_fake):
    # every point breaks the constraint: the run exits 2 ("nothing was measured"), the dry
    # run said exit 0; and its SKIP rows showed `-` for their parameters, told apart by none
    write_kernel(tmp_path, "v", ["// cudabench: matmul", "// param TILE: default 16; allowed "
                                 "8, 16, 32", "// param R: default 1; allowed 1, 2, 4",
                                 "// constraint: TILE * R <= 32",
                                 "// launch k: grid 1; block TILE, TILE"])
    args = ("matmul", "--size", "128", "--kernels-dir", tmp_path, "--variant", "v", "--tile",
            "32", "-p", "R=2,4", "--wide")
    dry = invoke(*args, "--dry-run")
    assert dry.exit_code == 2 == invoke(*args, "--max-time", "0.05").exit_code, dry.output
    assert "error: nothing would be measured: every kernel would be skipped" in dry.stderr
    assert "TILE=32 R=2" in dry.stdout and "TILE=32 R=4" in dry.stdout
    assert invoke(*args[:-2], "R=1,2", "--dry-run").exit_code == 0  # one point runs


def test_a_variant_another_arch_would_skip_is_judged_by_its_own_arch_s_limits(tmp_path):
    # 200,000 bytes fit sm_90a's opt-in, not sm_80's: on --arch sm_80 the variant is a SKIP
    # (built for sm_90a), never a launch sm_80 refuses.
    header = ["// arch: sm_90a", "// launch k: grid 1; block 32; dynamic_shared 200000"]
    write_kernel(tmp_path, "v", ["// cudabench: matmul", *header], MATMUL_BODY)
    plan = make_plan(Request(op="matmul", size="64", variants=("v",), kernels_dirs=(tmp_path,)))
    (row,) = plan_rows([plan], "sm_80", None)
    assert row.compile_ok and "would SKIP on sm_80: built for sm_90a" in row.compiled
    (native,) = plan_rows([plan], "sm_90a", None)
    assert native.compile_ok and "SKIP" not in native.compiled


def test_a_launch_using_sm_count_is_judged_at_the_assumed_count(tmp_path):
    # the plan leaves such launches to the GPU; the dry run has none, and judged none
    write_kernel(tmp_path / "matmul", "neg", ["// cudabench: matmul",
                                              "// launch k: grid SM_COUNT - 132; block 256"])
    write_kernel(tmp_path / "matmul", "persist", ["// cudabench: matmul",
                                                  "// launch k: grid SM_COUNT // 2; block 256"])
    result = invoke("matmul", "--dry-run", "--kernels-dir", tmp_path, "--variant", "neg",
                    "--variant", "persist", "--wide")
    assert result.exit_code == 2, result.output
    text = " ".join(result.stdout.split())
    assert "ERROR: k (at 132 SMs): the grid 0 at this size has an extent below 1" in text
    assert "k <<<66, 256>>>" in text
    # said on stderr too: at 80 columns the reason is a numbered note under the table
    assert "error: 1 of 2 kernels would not run (matmul/neg)" in " ".join(
        result.stderr.split())


def test_an_entry_point_defined_in_an_included_file_or_by_a_macro_is_found(tmp_path):
    # the source's text alone was searched: `#include "_body.cuh"` (which the README
    # allows) was "entry point k is not defined", exit 2, for a kernel that runs
    (tmp_path / "_body.cuh").write_text(
        'extern "C" __global__ void k(const DTYPE* A, const DTYPE* B, OUT_TYPE* C, int M, '
        "int K, int N) {}\n")
    (row,) = rows_for(tmp_path, ["// launch k: grid 1; block 1"], body='#include "_body.cuh"\n')
    assert row.compile_ok, row.compiled
    macro = tmp_path / "macro"
    (row,) = rows_for(macro, ["// launch k: grid 1; block 1"],
                      body="#define KERNEL(name) extern \"C\" __global__ void name() {}\n"
                           "KERNEL(k)\n")
    assert row.compile_ok, row.compiled


def test_arch_without_dry_run_is_refused_not_ignored(use_fake):
    # `--arch sm_80` alone was taken and unused: the run compiled for its own GPU
    done = invoke("dot", "--size", "100", "--arch", "sm_80")
    assert done.exit_code == 2 and "give --dry-run too" in done.stderr, done.output


def test_arch_with_a_best_search_and_no_dry_run_is_refused_too(use_fake):
    # a --best search never reaches run_and_render, where the refusal was
    done = invoke("matmul", "--size", "64", "--best", "--strategy", "random", "--budget", "3",
                  "--arch", "sm_80")
    assert done.exit_code == 2 and "give --dry-run too" in done.stderr, done.output


def test_an_entry_point_in_a_header_nvcc_finds_by_angle_brackets_is_found(tmp_path):
    # only `#include "..."` was followed: `#include <_body.cuh>` (beside the kernel, found
    # through nvcc's -I) was "entry point k is not defined", exit 2, for a kernel that runs
    (tmp_path / "_body.cuh").write_text(MATMUL_BODY)
    (row,) = rows_for(tmp_path, ["// launch k: grid 1; block 1"], body="#include <_body.cuh>\n")
    assert row.compile_ok, row.compiled


NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH, in $CUDA_ROOT/bin "
                                "or /usr/local/cuda/bin: install the CUDA toolkit")


@needs_nvcc
def test_a_kernel_without_extern_c_is_an_error_row(tmp_path):
    # "ok (sm_90)", exit 0: the cubin held only the C++ name _Z1kPKfS0_Pfiii, and the run
    # on a GPU failed every row ("no kernel named 'k'")
    write_kernel(tmp_path, "v", ["// cudabench: matmul", "// launch k: grid 1; block 1"],
                 MATMUL_BODY.replace('extern "C" ', ""))
    plan = make_plan(Request(op="matmul", size="64", variants=("v",), kernels_dirs=(tmp_path,)))
    (row,) = plan_rows([plan], "sm_90", NVCC)
    assert not row.compile_ok
    assert row.compiled == ('ERROR: the built cubin has no kernel named k (only the C++ name '
                            '_Z1kPKfS0_Pfiii): declare it extern "C"'), row.compiled
    write_kernel(tmp_path, "v", ["// cudabench: matmul", "// launch k: grid 1; block 1"])
    plan = make_plan(Request(op="matmul", size="64", variants=("v",), kernels_dirs=(tmp_path,)))
    (row,) = plan_rows([plan], "sm_90", NVCC)
    assert row.compile_ok and row.compiled == "ok (sm_90)", row.compiled
