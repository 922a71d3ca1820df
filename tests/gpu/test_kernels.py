"""Every catalog variant x dtype x shape against the reference, on a real GPU.

Also kernels written wrong on purpose, which must be reported FAIL (or ERROR), without
hiding the results of the variants that run after them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudabench import catalog
from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.measure.jobs import jobs_of
from cudabench.runner.execute import run_jobs
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.ops import OPS
from cudabench.results import Kind, Status, load_results

pytestmark = pytest.mark.gpu

# Correctness tests need a few samples, not precise ones.
QUICK = TimingPolicy(warmup_s=0.0, min_samples=3, max_samples=3, max_time_s=0.01)


def size_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def catalog_cases() -> list:
    """Return (op, variant, dtype, size) for every built-in variant at its op's test shapes.

    The shapes come from the op (edge shapes and large ones), the variants from the
    catalog: no test is hand-listed.
    """
    return [
        pytest.param(op, name, dtype, size_text(shape),
                     id=f"{op}-{name}-{dtype}-{size_text(shape)}")
        for op, variants in catalog.discover().items()
        for name, variant in sorted(variants.items())
        for dtype in variant.dtypes
        for shape in dict.fromkeys((*OPS[op].edge_shapes(), *OPS[op].large_shapes(),
                                    OPS[op].parse_size(OPS[op].default_size)))
    ]


@pytest.fixture(scope="session")
def engine():
    gpu = PycudaSpec(0).open()
    yield gpu
    gpu.close()


def run(engine, op, size, dtype="float32", variants=(), params=None, kernels_dirs=()):
    """Plan and run on the GPU; return {variant: result}."""
    request = Request(op=op, size=size, dtype=dtype, variants=tuple(variants),
                      params=params or {}, timing=QUICK, kernels_dirs=tuple(kernels_dirs),
                      insight=Insight(vendor=False, batch=False))  # test_insight_gpu has them
    plans = [make_plan(request)]
    return {r.variant: r for r in run_jobs(plans, jobs_of(plans), engine)}


@pytest.mark.parametrize(("op", "variant", "dtype", "size"), catalog_cases())
def test_variant_matches_reference(engine, op, variant, dtype, size):
    result = run(engine, op, size, dtype, [variant])[variant]
    assert result.error is None, result.error
    if result.status is Status.SKIP:  # only a TMA tensor map this shape's strides cannot take
        assert result.skipped and result.skipped.startswith("tensor_map "), result.skipped
        assert "TMA needs a multiple of 16 bytes" in result.skipped, result.skipped
        return
    assert result.status is Status.PASS, result.verification
    assert result.device is not None and result.device.pci_bus_id
    assert len(result.samples_s) == 3 and min(result.samples_s) > 0


@pytest.mark.parametrize("tile", [8, 16, 32])
@pytest.mark.parametrize("op,size", [("matmul", "45x70x33"), ("transpose", "45x70"),
                                     ("transpose_inplace", "45")])
def test_every_tile_size(engine, op, size, tile):
    results = run(engine, op, size, "float32", params={"TILE": tile})
    variants = [r for r in results.values() if r.kind is Kind.VARIANT]
    # the float16-only rungs are left out, and so are those run on request (blocktile2d,
    # vectorized, prefetch_splitk); matmul's warptile, async_double_buffer and
    # fragment_double_buffer take no TILE: their defaults
    takes = [v for v in catalog.discover()[op].values()
             if "float32" in v.dtypes and not v.on_request]
    assert len(variants) == len(takes), results
    assert all(r.status is Status.PASS for r in variants), results


@pytest.mark.parametrize("block", [32, 1024])
def test_dot_block_sizes(engine, block):
    # every dot variant whose BLOCK takes the value (bulk's starts at 64), on request too
    takes = sorted(name for name, v in catalog.discover()["dot"].items()
                   if v.param("BLOCK").allows(block))
    results = run(engine, "dot", "100003", "float32", variants=tuple(takes),
                  params={"BLOCK": block})
    variants = {name for name, r in results.items() if r.kind is Kind.VARIANT}
    assert variants == set(takes) and len(takes) >= 5
    assert all(results[name].status is Status.PASS for name in variants), results
    assert all(results[name].params["BLOCK"] == block for name in variants)


def test_copy_reference_row(engine):
    results = run(engine, "transpose", "256x128")
    copy = results["memcpy_dtod"]
    assert copy.kind is Kind.REFERENCE and copy.status is Status.REF
    assert copy.bytes_moved == 2 * 256 * 128 * 4 and min(copy.samples_s) > 0


# -- kernels written wrong on purpose ----------------------------------------------------

WRONG_KERNELS = {
    # The K loop stops one short: every element misses a product.
    ("matmul", "short_k"): """
        // cudabench: matmul
        // param TILE: default 16; allowed 16
        // launch short_k: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE
        extern "C" __global__ void short_k(const DTYPE* A, const DTYPE* B, OUT_TYPE* C,
                                           int M, int K, int N) {
            int row = blockIdx.y * blockDim.y + threadIdx.y;
            int col = blockIdx.x * blockDim.x + threadIdx.x;
            if (row >= M || col >= N) return;
            ACC_TYPE sum = 0;
            for (int k = 0; k < K - 1; ++k)
                sum += (ACC_TYPE)A[row * K + k] * (ACC_TYPE)B[k * N + col];
            C[row * N + col] = (OUT_TYPE)sum;
        }""",
    # The last row of C is never written: only the poisoned output can reveal it.
    ("matmul", "skips_last_row"): """
        // cudabench: matmul
        // param TILE: default 16; allowed 16
        // launch skips_last_row: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE
        extern "C" __global__ void skips_last_row(const DTYPE* A, const DTYPE* B, OUT_TYPE* C,
                                                  int M, int K, int N) {
            int row = blockIdx.y * blockDim.y + threadIdx.y;
            int col = blockIdx.x * blockDim.x + threadIdx.x;
            if (row >= M - 1 || col >= N) return;
            ACC_TYPE sum = 0;
            for (int k = 0; k < K; ++k)
                sum += (ACC_TYPE)A[row * K + k] * (ACC_TYPE)B[k * N + col];
            C[row * N + col] = (OUT_TYPE)sum;
        }""",
    # Copies instead of transposing: right only for symmetric input.
    ("transpose", "copies"): """
        // cudabench: transpose
        // launch copies: grid cdiv(COLS, 16), cdiv(ROWS, 16); block 16, 16
        extern "C" __global__ void copies(const DTYPE* A, DTYPE* B, int ROWS, int COLS) {
            int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
            if (row < ROWS && col < COLS) B[row * COLS + col] = A[row * COLS + col];
        }""",
    # Right but for the very last element (at 1024², verified on the GPU: the count's tail).
    ("transpose", "last_element_wrong"): """
        // cudabench: transpose
        // launch last_element_wrong: grid cdiv(COLS, 16), cdiv(ROWS, 16); block 16, 16
        extern "C" __global__ void last_element_wrong(const DTYPE* A, DTYPE* B, int ROWS,
                                                      int COLS) {
            int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
            if (row < ROWS && col < COLS)
                B[col * ROWS + row] = (row == ROWS - 1 && col == COLS - 1 && ROWS * COLS > 1)
                                      ? A[0] : A[row * COLS + col];
        }""",
    # Forgets the edge: pairs in the last row are never swapped. (A kernel in which both
    # threads of a pair swap is wrong too, but racy: in one warp both read before either
    # writes and the pair ends up swapped once, so it can pass. A test kernel must not.)
    ("transpose_inplace", "skips_last_row"): """
        // cudabench: transpose_inplace
        // launch skips_last_row: grid cdiv(N, 16), cdiv(N, 16); block 16, 16
        extern "C" __global__ void skips_last_row(DTYPE* A, int N) {
            int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
            if (row < N - 1 && col < row) {
                DTYPE t = A[row * N + col]; A[row * N + col] = A[col * N + row];
                A[col * N + row] = t;
            }
        }""",
    # The last block of the grid-stride loop contributes nothing.
    ("dot", "skips_last_block"): """
        // cudabench: dot
        // param BLOCK: default 256; allowed 256
        // launch skips_last_block: grid min(cdiv(N, BLOCK), SM_COUNT * 8); block BLOCK
        // launch finish: grid 1; block 1
        extern "C" __global__ void skips_last_block(const DTYPE* a, const DTYPE* b, OUT_TYPE* out,
                                                    OUT_TYPE* partials, int N, int num_partials) {
            __shared__ ACC_TYPE cache[BLOCK];
            ACC_TYPE sum = 0;
            if (blockIdx.x + 1 < gridDim.x || gridDim.x == 1)
                for (int i = blockIdx.x * BLOCK + threadIdx.x; i < N; i += BLOCK * gridDim.x)
                    sum += (ACC_TYPE)a[i] * (ACC_TYPE)b[i];
            if (gridDim.x == 1 && threadIdx.x == 0)
                sum -= (ACC_TYPE)a[0] * (ACC_TYPE)b[0];  // still wrong at N=1
            cache[threadIdx.x] = sum;
            __syncthreads();
            for (int s = BLOCK / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
                __syncthreads();
            }
            if (threadIdx.x == 0) partials[blockIdx.x] = (OUT_TYPE)cache[0];
        }
        extern "C" __global__ void finish(const DTYPE* a, const DTYPE* b, OUT_TYPE* out,
                                          OUT_TYPE* partials, int N, int num_partials) {
            ACC_TYPE sum = 0;
            for (int i = 0; i < num_partials; ++i) sum += (ACC_TYPE)partials[i];
            out[0] = (OUT_TYPE)sum;
        }""",
}


def write_kernel(folder, op, name, source):
    (folder / op).mkdir(exist_ok=True)
    path = folder / op / f"{name}.cu"
    path.write_text(textwrap.dedent(source).lstrip())
    return path


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
@pytest.mark.parametrize(("op", "name", "size"), [
    ("matmul", "short_k", "17x33x5"), ("matmul", "short_k", "1000"),
    ("matmul", "skips_last_row", "17x33x5"), ("matmul", "skips_last_row", "1024"),
    ("transpose", "copies", "33x17"), ("transpose", "copies", "64x64"),
    ("transpose", "copies", "1024"), ("transpose", "last_element_wrong", "1024"),
    ("transpose", "last_element_wrong", "1000x1037"),
    ("transpose_inplace", "skips_last_row", "31"),
    ("transpose_inplace", "skips_last_row", "3001"),
    ("dot", "skips_last_block", "1"), ("dot", "skips_last_block", "1000"),
    ("dot", "skips_last_block", str((1 << 20) + 3)),
])
def test_wrong_kernel_is_reported_fail(engine, tmp_path, op, name, size, dtype):
    write_kernel(tmp_path, op, name, WRONG_KERNELS[(op, name)])
    result = run(engine, op, size, dtype, [name], kernels_dirs=[tmp_path])[name]
    assert result.status == "FAIL", result.verification
    assert result.verification.bad_elements > 0
    if name == "last_element_wrong":
        assert result.verification.bad_elements == 1


def test_faulting_kernel_does_not_hide_the_others(tmp_path):
    # A fault leaves CUDA unusable in its process, so this runs the command as a user does,
    # in a process of its own, rather than in the test session's.
    write_kernel(tmp_path, "matmul", "aaa_faults", """
        // cudabench: matmul
        // launch aaa_faults: grid 1; block 32
        extern "C" __global__ void aaa_faults(const DTYPE* A, const DTYPE* B, DTYPE* C,
                                              int M, int K, int N) {
            C[(size_t)1 << 40] = A[0];  // far outside any allocation
        }""")
    json_path = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "cudabench", "matmul", "--size", "64", "--kernels-dir",
         str(tmp_path), "--json", str(json_path), "--warmup", "0", "--max-time", "0.05",
         "--no-vendor"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "faulted" in done.stderr and "Traceback" not in done.stderr
    assert "cuMemFree failed" not in done.stderr  # the dead context's memory is left alone
    statuses = {b.variant: b.status for b in load_results(json_path).benchmarks}
    # The variants after the fault ran in a fresh process and still pass.
    assert statuses == {"aaa_faults": "FAIL", "naive": "PASS", "tiled": "PASS",
                        "tiled_conflict": "PASS", "warptile": "PASS",
                        "async_double_buffer": "PASS", "fragment_double_buffer": "PASS"}


def test_compile_error_names_file_and_line(engine, tmp_path):
    path = write_kernel(tmp_path, "matmul", "aaa_broken", """
        // cudabench: matmul
        // launch aaa_broken: grid 1; block 1
        extern "C" __global__ void aaa_broken(const DTYPE* A, const DTYPE* B, DTYPE* C,
                                              int M, int K, int N) {
            C[0] = undeclared_name;
        }""")
    results = run(engine, "matmul", "16", kernels_dirs=[tmp_path])
    assert results["aaa_broken"].status == "ERROR"
    assert f"{path}(5)" in results["aaa_broken"].error  # nvcc's file(line) form, line 5
    assert results["tiled"].status == "PASS"


def test_missing_entry_is_explained(engine, tmp_path):
    write_kernel(tmp_path, "dot", "mangled", """
        // cudabench: dot
        // launch mangled: grid 1; block 1
        __global__ void mangled(const DTYPE* a, const DTYPE* b, DTYPE* out, DTYPE* p,
                                int N, int num_partials) { out[0] = 0; }""")
    result = run(engine, "dot", "10", kernels_dirs=[tmp_path], variants=["mangled"])["mangled"]
    assert result.status == "ERROR" and 'extern "C"' in result.error


# -- dynamic shared memory beyond 48 KiB ---------------------------------------------------

BIG_TILE = Path(__file__).parents[1] / "data" / "kernels"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
@pytest.mark.parametrize("size", ["130x257", "1000x1000"])
def test_a_kernel_with_more_than_48_kib_of_dynamic_shared_memory_runs(engine, dtype, size):
    result = run(engine, "transpose", size, dtype, ["big_tile"], params={"TILE": 128},
                 kernels_dirs=[BIG_TILE])["big_tile"]
    assert result.status is Status.PASS, result.error or result.verification
    nbytes = result.launches[0]["dynamic_shared_bytes"]
    assert nbytes == 128 * 129 * {"float16": 2, "float64": 8}.get(dtype, 4)
    assert nbytes > 48 * 1024 or dtype == "float16"  # float16 stays under: TILE 128 x 2 B


def test_48_kib_of_dynamic_shared_memory_beside_static_opts_in(engine):
    """dot/bulk keeps its mbarriers in static shared memory: 48 KiB of dynamic beside them
    was refused before the engine counted both (a --best sweep's ERROR row)."""
    result = run(engine, "dot", "100003", "float32", ["bulk"],
                 params={"CHUNK": 8192, "STAGES": 3})["bulk"]
    assert result.status is Status.PASS, result.error or result.verification
    launch = result.launches[0]
    assert launch["dynamic_shared_bytes"] == 48 * 1024 and launch["shared_bytes"] > 0


def test_dynamic_shared_memory_beyond_what_the_gpu_allows_is_an_error_row(engine):
    result = run(engine, "transpose", "300x300", "float64", ["big_tile"], params={"TILE": 256},
                 kernels_dirs=[BIG_TILE])["big_tile"]
    assert result.status is Status.ERROR
    limit = engine.info.max_shared_bytes_per_block_optin
    assert limit and f"more than the {limit} a block may have" in result.error


# -- an op of the user's own: examples/softmax -------------------------------------------

EXAMPLE = Path(__file__).parents[2] / "examples" / "softmax"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("size", ["1x1", "17x33", "3x1025", "4096x1024"])
def test_the_example_user_op_runs_and_verifies(engine, dtype, size):
    results = run(engine, "softmax", size, dtype, kernels_dirs=[EXAMPLE])
    assert set(results) == {"naive", "block_per_row"}
    for result in results.values():
        assert result.status is Status.PASS, (result.variant, result.error, result.verification)


# -- writes outside the output, caught by the guard zones ------------------------------------

TRESPASSERS = {
    "one_row_past": """
        // cudabench: matmul
        // launch one_row_past: grid cdiv(N, 16), cdiv(M, 16); block 16, 16
        extern "C" __global__ void one_row_past(const DTYPE* A, const DTYPE* B, OUT_TYPE* C,
                                                int M, int K, int N) {
            int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
            if (row >= M || col >= N) return;
            ACC_TYPE sum = 0;
            for (int k = 0; k < K; ++k) sum += (ACC_TYPE)A[row * K + k] * (ACC_TYPE)B[k * N + col];
            C[row * N + col] = (OUT_TYPE)sum;
            if (row == M - 1) C[(row + 1) * N + col] = (OUT_TYPE)sum;  // one row too many
        }""",
    "scribbles_on_a": """
        // cudabench: matmul
        // launch scribbles_on_a: grid cdiv(N, 16), cdiv(M, 16); block 16, 16
        extern "C" __global__ void scribbles_on_a(const DTYPE* A, const DTYPE* B, OUT_TYPE* C,
                                                  int M, int K, int N) {
            int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
            if (row >= M || col >= N) return;
            ACC_TYPE sum = 0;
            for (int k = 0; k < K; ++k) sum += (ACC_TYPE)A[row * K + k] * (ACC_TYPE)B[k * N + col];
            C[row * N + col] = (OUT_TYPE)sum;
            __syncthreads();
            if (row == 0 && col == 0) ((DTYPE*)A)[0] = (DTYPE)0;  // an input it must only read
        }""",
}


@pytest.mark.parametrize(("name", "says"), [
    ("one_row_past", "wrote 40 element(s) past the end of C"),
    ("scribbles_on_a", "changed 1 element(s) of its input A"),
])
def test_a_kernel_writing_outside_its_output_fails_with_the_guard_message(
        engine, tmp_path, name, says):
    write_kernel(tmp_path, "matmul", name, TRESPASSERS[name])
    result = run(engine, "matmul", "24x30x40", "float32", [name],
                 kernels_dirs=[tmp_path])[name]
    assert result.status == "FAIL" and says in result.error, result.error


# -- the cheat corpus: right where cudabench used to look, wrong elsewhere ------------------

_CHEAT_HEAD = """
        // cudabench: matmul
        // launch {name}: grid cdiv(N, 16), cdiv(M, 16); block 16, 16
        // launch bump: grid 1; block 1
        __device__ int launches = 0;
        __device__ const void* seen = 0;
        __device__ OUT_TYPE stash[1 << 16];
        __device__ OUT_TYPE dot_row(const DTYPE* A, const DTYPE* B, int row, int col, int K,
                                    int N) {{
            ACC_TYPE sum = 0;
            for (int k = 0; k < K; ++k) sum += (ACC_TYPE)A[row * K + k] * (ACC_TYPE)B[k * N + col];
            return (OUT_TYPE)sum;
        }}
        extern "C" __global__ void bump(const DTYPE* A, const DTYPE* B, OUT_TYPE* C, int M,
                                        int K, int N) {{ launches += 1; seen = C; }}
        extern "C" __global__ void {name}(const DTYPE* A, const DTYPE* B, OUT_TYPE* C, int M,
                                          int K, int N) {{
            int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
            if (row >= M || col >= N) return;
            size_t i = (size_t)row * N + col;
"""
CHEATS = {
    # Keeps its first result and copies it out ever after.
    "replays_a_stash": "if (launches == 0) stash[i] = dot_row(A, B, row, col, K, N);\n"
                       "C[i] = stash[i]; }",
    # Computes on its first three launches (two warm-ups and the checked one) only.
    "first_launches_only": "if (launches < 3) C[i] = dot_row(A, B, row, col, K, N); }",
    # Computes every other row of blocks once the checked launch is past.
    "partial_grid_when_timed": "if (launches < 3 || blockIdx.y % 2 == 0)\n"
                               "C[i] = dot_row(A, B, row, col, K, N); }",
    # Computes only where its output holds the NaN poison: a timed launch finds the last
    # result there and does nothing.
    "skips_when_written": "if (!isnan((float)C[i])) return;\n"
                          "C[i] = dot_row(A, B, row, col, K, N); }",
    # Skips the work when it sees the output address it wrote last time.
    "address_keyed_cache": "if (C != seen) C[i] = dot_row(A, B, row, col, K, N); }",
    # Reads one element past its row of A (past A's end on the last row).
    "reads_outside_inputs": "ACC_TYPE sum = 0;\n"
                            "for (int k = 0; k < K; ++k) sum += (ACC_TYPE)A[row * K + k + 1]"
                            " * (ACC_TYPE)B[k * N + col];\nC[i] = (OUT_TYPE)sum; }",
}


@pytest.mark.parametrize(("name", "reason"), [
    ("replays_a_stash", "wrong on fresh inputs in the same buffers"),
    ("first_launches_only", "a timed launch is wrong"),
    ("partial_grid_when_timed", "a timed launch is wrong"),
    ("skips_when_written", "wrong on fresh inputs in the same buffers"),
    ("address_keyed_cache", None),  # caught by the poisoned checked launch itself
    ("reads_outside_inputs", None),
])
def test_every_cheat_of_the_corpus_is_caught_with_its_reason(engine, tmp_path, name, reason):
    source = _CHEAT_HEAD.format(name=name) + "            " + CHEATS[name]
    write_kernel(tmp_path, "matmul", name, source)
    result = run(engine, "matmul", "64", "float32", [name], kernels_dirs=[tmp_path])[name]
    assert result.status == "FAIL", (result.error, result.verification)
    if reason is not None:
        assert reason in result.error
    else:
        assert result.verification.bad_elements > 0
