"""Every kernel compiles with nvcc for sm_90, for every dtype and parameter value.

The source is what the engine compiles (KernelVariant.compile_source(), -I the kernel's
folder, -DNAME=value for the params, DTYPE and ELEM_SIZE); only PTX is generated, so no GPU
is needed. The compilations run in parallel threads, started once for the module.

Every allowed value of every param the code uses is built in every dtype, but not every
combination: a variant with up to FULL_PRODUCT combinations gets all of them, one with more
(the CUDA-core matmul ladder's BM x BN x BK x TM x TN x ... is 48 to 288 per dtype) gets its
defaults and each param varied alone over its values, the others at their defaults. (The
full product took hundreds of builds per dtype, too slow for CI's two cores; every
combination is meant to be valid, and `scripts/ladder/sass.py --all-params` builds them all.)
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import write_kernel

from cudabench.catalog import KernelVariant, ParamSpec, discover, parse_header
from cudabench.engines.nvcc import Build
from cudabench.engines.nvcc import compile_ptx as nvcc_compile
from cudabench.planning.plan import compile_defines
from cudabench.ops import OPS, load_ops

NVCC = shutil.which("nvcc")
ARCH = "sm_90"

pytestmark = pytest.mark.skipif(
    NVCC is None, reason="nvcc is not on PATH: install the CUDA toolkit to compile the kernels"
)


def compile_ptx(variant: KernelVariant, build: tuple[dict[str, object], tuple[str, ...]]
                ) -> Build:
    """Compile variant to PTX as the engine would compile it to a cubin (cudabench's own)."""
    defines, headers = build
    return nvcc_compile(variant, defines, headers, ARCH, NVCC)


def values_to_try(spec: ParamSpec) -> list[int]:
    """Return every allowed value, or low, default and high of a range."""
    if spec.allowed:
        return list(spec.allowed)
    return sorted({spec.low, spec.default, spec.high})


def reaches_the_compiler(variant: KernelVariant, spec: ParamSpec) -> bool:
    """Return whether a param's name appears in the code (comments aside) or a .cuh beside it.

    A param only used by the header's launch arithmetic (dot's BLOCKS_PER_SM) cannot change
    what nvcc compiles; it is compiled at its default only, which keeps this module fast.
    """
    texts = [variant.source, *(p.read_text() for p in variant.path.parent.glob("*.cuh"))]
    word = re.compile(rf"\b{re.escape(spec.name)}\b")
    return any(word.search(strip_comments(text)) for text in texts)


def strip_comments(code: str) -> str:
    """Return C++ code without its // and /* */ comments."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.DOTALL)


# The most combinations a variant is built in all of (per dtype): the largest product of the
# kernels before the CUDA-core ladder (transpose's shared: TILE x BLOCK_ROWS, mma_async); beyond,
# one param at a time (the ladder's transposes 16 -> 7, async_double_buffer 288 -> 10).
FULL_PRODUCT = 12


def combinations(axes: list[list[int]], defaults: list[int]) -> list[tuple[int, ...]]:
    """Return every combination of the axes' values when there are at most FULL_PRODUCT,
    else the defaults and, for each axis, each of its other values with the rest at their
    defaults (every value of every axis still built once, in a sum, not a product)."""
    if math.prod(len(axis) for axis in axes) <= FULL_PRODUCT:
        return list(itertools.product(*axes))
    chosen = [tuple(defaults)]
    for index, axis in enumerate(axes):
        for value in axis:
            point = (*defaults[:index], value, *defaults[index + 1:])
            if point not in chosen:
                chosen.append(point)
    return chosen


def build_cases():
    """Yield (variant, dtype, params) for every built-in kernel."""
    for op, variants in discover().items():
        for name, variant in sorted(variants.items()):
            axes = [values_to_try(spec) if reaches_the_compiler(variant, spec) else [spec.default]
                    for spec in variant.params]
            points = combinations(axes, [spec.default for spec in variant.params])
            for dtype in variant.dtypes:
                for values in points:
                    params = dict(zip((spec.name for spec in variant.params), values))
                    label = "-".join([op, name, dtype, *(f"{k}={v}" for k, v in params.items())])
                    yield pytest.param(op, name, dtype, params, id=label)


CASES = list(build_cases())


def defines_for(dtype_name: str, params: dict[str, int], op: str = "dot"
                ) -> tuple[dict[str, object], tuple[str, ...]]:
    """Return the -D defines and headers the engine compiles with (the pipeline's own)."""
    types = OPS[op].type_set(dtype_name)
    return compile_defines(params, types), types.headers


@pytest.fixture(scope="module")
def builds():
    """Start every compilation at once; return {(op, variant, dtype, params): Future}."""
    catalog = discover()
    futures: dict[tuple, Future] = {}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for case in CASES:
            op, name, dtype, params = case.values
            key = (op, name, dtype, tuple(params.items()))
            futures[key] = pool.submit(compile_ptx, catalog[op][name],
                                       defines_for(dtype, params, op))
        yield futures
        for future in futures.values():
            future.cancel()


def test_every_allowed_value_of_a_compiled_param_is_built():
    # A param the code names changes what nvcc builds: each allowed value gets a build.
    catalog = discover()
    for op, variants in catalog.items():
        for name, variant in variants.items():
            for spec in variant.params:
                built = {case.values[3][spec.name] for case in CASES
                         if case.values[:2] == (op, name)}
                if reaches_the_compiler(variant, spec) and spec.allowed:
                    assert built == set(spec.allowed), (op, name, spec.name)
                elif not reaches_the_compiler(variant, spec):
                    assert built == {spec.default}, (op, name, spec.name)


def test_only_params_the_code_never_names_are_pruned():
    catalog = discover()
    pruned = {(op, name, spec.name) for op, variants in catalog.items()
              for name, variant in variants.items() for spec in variant.params
              if not reaches_the_compiler(variant, spec)}
    # the naive kernels read their block edge from blockDim; dot's grid size is header-only
    assert pruned == {("dot", "atomic", "BLOCKS_PER_SM"), ("dot", "shared_tree", "BLOCKS_PER_SM"),
                      ("dot", "deterministic", "BLOCKS_PER_SM"),
                      ("dot", "vectorized_shuffle", "BLOCKS_PER_SM"),
                      ("dot", "streaming", "BLOCKS_PER_SM"), ("dot", "bulk", "BLOCKS_PER_SM"),
                      ("matmul", "prefetch_splitk", "SPLIT_MAX"),  # the grid's K slices
                      ("matmul", "fragment_double_buffer", "SPLIT_MAX"),  # likewise
                      ("matmul", "naive", "TILE"), ("transpose", "naive", "TILE"),
                      ("transpose_inplace", "naive", "TILE")}
    assert not strip_comments("// BLOCK\n/* BLOCK\n */ int x;").count("BLOCK")


@pytest.mark.parametrize(("op", "variant", "dtype", "params"), CASES)
def test_kernel_compiles_for_sm90(builds, op, variant, dtype, params):
    build = builds[(op, variant, dtype, tuple(params.items()))].result()
    assert build.returncode == 0, f"{build.command}\n{build.output}"
    for launch in discover()[op][variant].launches:
        assert re.search(rf"\.entry\s+{re.escape(launch.entry)}\s*\(", build.ptx), (
            f"no .entry {launch.entry} in the PTX: is it extern \"C\" __global__?")


BROKEN_HEADER = ["// cudabench: dot", "// launch dot_broken: grid 1; block 32"]
BROKEN_BODY = (
    'extern "C" __global__ void dot_broken(const DTYPE* a, const DTYPE* b, DTYPE* out,\n'
    "                                      DTYPE* partials, int N, int num_partials)\n"
    "{\n"
    "    out[0] = undeclared_variable;\n"
    "}\n"
)
# The header, a blank line, then the body: the bad statement is on the body's 4th line.
BROKEN_LINE = len(BROKEN_HEADER) + 1 + 4


def test_compile_error_cites_the_kernel_file_and_line(tmp_path):
    path = write_kernel(tmp_path, "broken", BROKEN_HEADER, BROKEN_BODY)
    assert path.read_text().splitlines()[BROKEN_LINE - 1].strip() == "out[0] = undeclared_variable;"
    build = compile_ptx(parse_header(path), defines_for("float32", {}))
    assert build.returncode != 0
    assert f"{path}({BROKEN_LINE}): error" in build.output, build.output
    assert "undeclared_variable" in build.output


# (A double quote cannot be tested: nvcc itself refuses one in an -I path.)
@pytest.mark.parametrize("folder", ["back\\tslash", "back\\\\double"])
def test_compile_error_cites_paths_with_special_characters(tmp_path, folder):
    path = write_kernel(tmp_path / folder, "broken", BROKEN_HEADER, BROKEN_BODY)
    build = compile_ptx(parse_header(path), defines_for("float32", {}))
    assert f"{path}({BROKEN_LINE}): error" in build.output, build.output


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_the_dynamic_shared_memory_test_kernel_compiles(dtype):
    path = Path(__file__).parent / "data" / "kernels" / "transpose" / "big_tile.cu"
    build = compile_ptx(parse_header(path), defines_for(dtype, {"TILE": 128}, "transpose"))
    assert build.returncode == 0, build.output
    assert ".extern .shared" in build.ptx


def example_cases():
    """Yield (folder, op, variant, dtype) for every kernel of the shipped examples."""
    examples = Path(__file__).parents[1] / "examples"
    for folder in sorted(p for p in examples.iterdir() if p.is_dir()):
        if (folder / "kernels").is_dir():  # a project (examples/pytest): its kernels folder
            folder = folder / "kernels"
        catalog, ops = discover([folder]), load_ops([folder])
        for op_name, variants in catalog.items():
            if ops[op_name].origin.startswith("cudabench."):
                continue
            for name, variant in sorted(variants.items()):
                for dtype in variant.dtypes:
                    yield pytest.param(folder, op_name, name, dtype,
                                       id=f"{folder.name}-{name}-{dtype}")


@pytest.mark.parametrize(("folder", "op", "variant", "dtype"), list(example_cases()))
def test_example_kernels_compile_for_sm90(folder, op, variant, dtype):
    kernel = discover([folder])[op][variant]
    types = load_ops([folder])[op].type_set(dtype)
    params = {spec.name: spec.default for spec in kernel.params}
    build = compile_ptx(kernel, (compile_defines(params, types), types.headers))
    assert build.returncode == 0, f"{build.command}\n{build.output}"
