"""The compile cache and compiling ahead (issue 29, item 3).

A fake nvcc (a small script that writes a "cubin" hashing what it was given and the files
the source includes, with a -MD dependency list, and logs each call) makes the cache's
rules quick to check anywhere; the real nvcc, where there is one, checks what only it
can: the dependency list of a real include, the same cubins built many at once as one by
one, and a dry run that fills the cache the engine reads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import threading
import time
import types
from pathlib import Path

import pytest
from helpers import MATMUL_BODY, MATMUL_HEADER, invoke, write_kernel

from cudabench.catalog import parse_header
from cudabench.engines import compile_cache, compile_pool, compiler
from cudabench.engines.compile_pool import CompilePool
from cudabench.engines.compiler import CubinBuild, build, request_for
from cudabench.engines.protocol import CompileRequest
from cudabench.engines.pycuda_compile import PycudaCompiler
from cudabench.errors import CompileError
from cudabench.measure.ahead import compile_requests
from cudabench.measure.jobs import jobs_of
from cudabench.ops import OPS
from cudabench.planning.plan import compile_defines

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")

FAKE_NVCC = r'''#!{python}
"""A stand-in for nvcc: --version; -cubin ... SOURCE -o OUT -MD -MF DEPS."""
import hashlib, os, re, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print(os.environ.get("FAKE_NVCC_VERSION", "fake nvcc, release 13.0"))
    sys.exit(0)
with open(os.environ["FAKE_NVCC_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
time.sleep(float(os.environ.get("FAKE_NVCC_SLEEP", "0")))
out = args[args.index("-o") + 1]
deps = args[args.index("-MF") + 1]
source = next(a for a in args if a.endswith(".cu"))
folders = [a[2:] for a in args if a.startswith("-I")]
text = open(source).read()
if "#error" in text:
    sys.stderr.write(source + "(1): error: the kernel says #error\n")
    sys.exit(2)
if "#kill" in text:  # as the OOM killer stops it
    os.kill(os.getpid(), 9)
included = []
for name in re.findall(r'#include "([^"]+)"', text):
    for folder in folders:
        if os.path.exists(os.path.join(folder, name)):
            included.append(os.path.join(folder, name))
digest = hashlib.sha256(" ".join(a for a in args if a not in (out, deps, source)).encode()
                        + text.encode())
for path in included:
    digest.update(open(path, "rb").read())
open(out, "wb").write(b"CUBIN" + digest.digest())
open(deps, "w").write(out + " : " + source + " \\\n    " + " \\\n    ".join(included) + "\n")
'''


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """Give the test a compile cache of its own; return its cubins folder."""
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "cubins"


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch) -> types.SimpleNamespace:
    """Return the fake nvcc's path and a function counting the compiles it ran."""
    path = tmp_path / "bin" / "nvcc"
    path.parent.mkdir()
    path.write_text(FAKE_NVCC.replace("{python}", sys.executable))
    path.chmod(0o755)
    log = tmp_path / "nvcc.log"
    log.touch()
    monkeypatch.setenv("FAKE_NVCC_LOG", str(log))
    compiler.toolkit_version.cache_clear()

    def calls() -> int:
        return len(log.read_text().splitlines())

    return types.SimpleNamespace(path=str(path), calls=calls, log=log)


def a_kernel(folder: Path, body: str = MATMUL_BODY, name: str = "probe") -> Path:
    """Write a matmul variant that includes helper.cuh from its folder."""
    (folder / "helper.cuh").parent.mkdir(parents=True, exist_ok=True)
    if not (folder / "helper.cuh").exists():
        (folder / "helper.cuh").write_text("#define HELPER 1\n")
    return write_kernel(folder, name, MATMUL_HEADER, '#include "helper.cuh"\n' + body)


def request(path: Path, tile: int = 16, dtype: str = "float32", target: str = "sm_90"):
    types_ = OPS["matmul"].type_set(dtype)
    return request_for(parse_header(path), compile_defines({"TILE": tile}, types_),
                       types_.headers, target)


# -- what a key covers ----------------------------------------------------------------------

def test_an_unchanged_request_hits_and_each_input_of_the_key_misses(
        cache, fake_nvcc, tmp_path, monkeypatch):
    path = a_kernel(tmp_path / "kernels")
    first = build(request(path), fake_nvcc.path)
    assert first.returncode == 0 and not first.cached and fake_nvcc.calls() == 1
    again = build(request(path), fake_nvcc.path)
    assert again.cached and again.cubin == first.cubin and fake_nvcc.calls() == 1

    changed = {
        "a define": request(path, tile=32),
        "the type (its defines and headers)": request(path, dtype="float16"),
        "the architecture": request(path, target="sm_80"),
    }
    for what, other in changed.items():
        calls = fake_nvcc.calls()
        built = build(other, fake_nvcc.path)
        assert not built.cached and fake_nvcc.calls() == calls + 1, what
        assert build(other, fake_nvcc.path).cached, what

    path.write_text(path.read_text().replace("{}", "{ /* edited */ }"))
    assert not build(request(path), fake_nvcc.path).cached  # the source

    (path.parent / "helper.cuh").write_text("#define HELPER 2  // edited\n")
    rebuilt = build(request(path), fake_nvcc.path)
    assert not rebuilt.cached  # an included header
    assert build(request(path), fake_nvcc.path).cached

    monkeypatch.setenv("FAKE_NVCC_VERSION", "fake nvcc, release 13.1")
    compiler.toolkit_version.cache_clear()
    assert not build(request(path), fake_nvcc.path).cached  # the toolkit
    assert build(request(path), fake_nvcc.path).cached


def test_an_arch_variant_is_keyed_by_its_own_target(cache, fake_nvcc, tmp_path):
    path = write_kernel(tmp_path, "wgmma", [*MATMUL_HEADER[:3], "// arch: sm_90a",
                                            MATMUL_HEADER[3]])
    variant = parse_header(path)
    assert variant.arch is not None
    types_ = OPS["matmul"].type_set("float32")
    defines = compile_defines({"TILE": 16}, types_)
    built = build(request_for(variant, defines, (), variant.arch), fake_nvcc.path)
    assert "-gencode=arch=compute_90a,code=sm_90a" in built.command
    assert not build(request_for(variant, defines, (), "sm_90"), fake_nvcc.path).cached
    assert build(request_for(variant, defines, (), variant.arch), fake_nvcc.path).cached


@pytest.mark.parametrize("damage", ["truncated", "a flipped byte", "garbage", "empty",
                                    "another key's entry", "a header that is no object",
                                    "a header nested too deep"])
def test_a_damaged_entry_is_compiled_again_never_trusted(cache, fake_nvcc, tmp_path, damage):
    path = a_kernel(tmp_path / "kernels")
    good = build(request(path), fake_nvcc.path)
    other = build(request(path, tile=8), fake_nvcc.path)
    entries = sorted(cache.glob("*/*.cubin"), key=lambda p: p.stat().st_mtime_ns)
    entry = entries[0]
    data = entry.read_bytes()
    entry.write_bytes({"truncated": data[:-3], "a flipped byte": data[:-1] + bytes([data[-1] ^ 1]),
                       "garbage": b"\x00not an entry\n" * 5, "empty": b"",
                       "another key's entry": entries[1].read_bytes(),
                       "a header that is no object": compile_cache.MAGIC + b"[1]\n" + data[-8:],
                       # RecursionError: "internal error", exit 4
                       "a header nested too deep": compile_cache.MAGIC + b"[" * 100000 + b"\n",
                       }[damage])
    calls = fake_nvcc.calls()
    again = build(request(path), fake_nvcc.path)
    assert not again.cached and again.cubin == good.cubin != other.cubin
    assert fake_nvcc.calls() == calls + 1
    assert build(request(path), fake_nvcc.path).cached  # written whole again


def test_a_compile_error_is_not_kept_and_says_what_nvcc_said(cache, fake_nvcc, tmp_path):
    path = a_kernel(tmp_path / "kernels", body=MATMUL_BODY + "#error broken\n")
    for _ in range(2):
        failed = build(request(path), fake_nvcc.path)
        assert failed.returncode == 2 and not failed.cached
        assert "error: the kernel says #error" in failed.output
    assert fake_nvcc.calls() == 2
    assert not list(cache.glob("*/*.cubin"))


def test_nvcc_killed_says_so(cache, fake_nvcc, tmp_path):
    # it was an empty compile error, kept in the tuning cache as the kernel's fault
    from cudabench.results.model import BenchmarkResult
    from cudabench.tuning.cache import lasting

    path = a_kernel(tmp_path / "kernels", body=MATMUL_BODY + "#kill\n")
    failed = build(request(path), fake_nvcc.path)
    assert failed.returncode == -9 and "nvcc was killed by signal 9" in failed.output
    row = BenchmarkResult("matmul", "probe", {"TILE": 16}, (8, 8, 8), ("M", "K", "N"),
                          "float32", False, error=f"{path}: nvcc failed:\n{failed.output}")
    assert not lasting(row)


def test_caching_off_compiles_every_time(tmp_path, fake_nvcc, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", "off")
    path = a_kernel(tmp_path / "kernels")
    assert not build(request(path), fake_nvcc.path).cached
    assert not build(request(path), fake_nvcc.path).cached
    assert fake_nvcc.calls() == 2


def test_the_least_recently_used_entries_go_beyond_the_size_kept(cache, fake_nvcc, tmp_path):
    path = a_kernel(tmp_path / "kernels")
    for tile in (8, 16, 32):
        build(request(path, tile), fake_nvcc.path)
    entries = sorted(cache.glob("*/*.cubin"), key=lambda p: p.stat().st_mtime_ns)
    old = time.time() - 3600
    for age, entry in enumerate(entries):  # 8 oldest, then 16, then 32
        os.utime(entry, (old + age, old + age))
    assert build(request(path, 8), fake_nvcc.path).cached  # a hit: now the newest
    size = entries[0].stat().st_size
    compile_cache.prune(cache, keep_bytes=2 * size)
    assert sorted(cache.glob("*/*.cubin")) == sorted([entries[0], entries[2]])
    assert not entries[1].with_suffix(".lock").exists()
    assert not build(request(path, 16), fake_nvcc.path).cached


def test_a_header_changed_while_compiling_is_not_kept(cache, fake_nvcc, tmp_path,
                                                      monkeypatch):
    path = a_kernel(tmp_path / "kernels")
    real = compile_cache.fingerprint

    def touched_meanwhile(paths, built_after_ns):
        (path.parent / "helper.cuh").write_text("#define HELPER 3\n")
        return real(paths, built_after_ns)

    monkeypatch.setattr(compile_cache, "fingerprint", touched_meanwhile)
    assert build(request(path), fake_nvcc.path).returncode == 0
    assert not list(cache.glob("*/*.cubin"))


def test_two_compiles_of_one_key_at_once_run_nvcc_once(cache, fake_nvcc, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_SLEEP", "0.5")
    path = a_kernel(tmp_path / "kernels")
    results: list[CubinBuild] = []
    threads = [threading.Thread(target=lambda: results.append(build(request(path),
                                                                    fake_nvcc.path)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake_nvcc.calls() == 1  # the second waited on the lock and read the entry
    assert sorted(r.cached for r in results) == [False, True]
    assert results[0].cubin == results[1].cubin


# -- the pool -------------------------------------------------------------------------------

def test_a_job_never_waits_behind_another_jobs_queued_compile(monkeypatch):
    release = threading.Event()
    built = []

    def slow_for_a(request, nvcc=None, register=None, give_up=None):
        if request.name == "a":
            release.wait(10)
        built.append(request.name)
        return CubinBuild(0, request.name.encode(), "", "")

    monkeypatch.setattr(compile_pool, "build", slow_for_a)
    pool = CompilePool(workers=1)
    a, b = (compiler.CubinRequest("", name, ()) for name in "ab")
    pool.ahead([a, b])
    started = time.monotonic()
    assert pool.result(b).cubin == b"b"  # queued behind a: built at once, here
    assert time.monotonic() - started < 5
    release.set()
    assert pool.result(a).cubin == b"a"
    pool.close()
    assert sorted(built) == ["a", "b"]


def test_closing_the_pool_kills_a_running_nvcc(cache, fake_nvcc, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_SLEEP", "60")
    path = a_kernel(tmp_path / "kernels")
    pool = CompilePool(fake_nvcc.path, workers=2)
    pool.ahead([request(path), request(path, tile=8), request(path, tile=32)])
    deadline = time.monotonic() + 30
    while fake_nvcc.calls() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    running = list(pool._running)
    assert len(running) == 2
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 10
    assert all(process.poll() is not None for process in running)
    assert fake_nvcc.calls() == 2  # the third never started
    assert not list(cache.glob("*/*.cubin"))


# -- the engine's compile path ------------------------------------------------------------

class FakeFunction:
    num_regs, shared_size_bytes, local_size_bytes, max_threads_per_block = 32, 0, 0, 1024

    def __init__(self) -> None:
        self.prepared = ""

    def prepare(self, signature: str) -> None:
        self.prepared = signature


def fake_cuda(loaded: list[bytes]) -> types.SimpleNamespace:
    """A PyCUDA driver module that loads any cubin and has every function."""
    class Error(Exception):
        pass

    def module_from_buffer(cubin: bytes):
        loaded.append(cubin)
        return types.SimpleNamespace(get_function=lambda name: FakeFunction())

    return types.SimpleNamespace(module_from_buffer=module_from_buffer, Error=Error,
                                 LogicError=Error)


def test_the_engine_loads_the_cubin_built_ahead_and_compiles_nothing_again(
        cache, fake_nvcc, tmp_path, monkeypatch):
    monkeypatch.setattr(compiler.nvcc_tools, "find_nvcc", lambda: fake_nvcc.path)
    path = a_kernel(tmp_path / "kernels")
    variant = parse_header(path)
    types_ = OPS["matmul"].type_set("float32")
    loaded: list[bytes] = []
    engine = PycudaCompiler(fake_cuda(loaded), "9.0", driver=lambda: None)
    defines = [compile_defines({"TILE": tile}, types_) for tile in (8, 16, 32)]
    engine.ahead([CompileRequest(variant, d, types_.headers) for d in defines])
    compiled = engine.compile(variant, defines[1], "PPPiii", types_.headers)
    assert compiled.functions[0].prepared == "PPPiii"
    assert compiled.attributes[0]["registers"] == 32
    assert loaded == [build(request(path), fake_nvcc.path).cubin]  # cached: the same bytes
    for other in defines:
        engine.compile(variant, other, "PPPiii", types_.headers)
    engine.close()
    assert fake_nvcc.calls() == 3 and len(loaded) == 3  # each built once, ahead


def test_a_compile_error_is_the_rows_error_as_before(cache, fake_nvcc, tmp_path,
                                                      monkeypatch):
    monkeypatch.setattr(compiler.nvcc_tools, "find_nvcc", lambda: fake_nvcc.path)
    path = a_kernel(tmp_path / "kernels", body=MATMUL_BODY + "#error broken\n")
    types_ = OPS["matmul"].type_set("float32")
    engine = PycudaCompiler(fake_cuda([]), "9.0", driver=lambda: None)
    with pytest.raises(CompileError) as error:
        engine.compile(parse_header(path), compile_defines({"TILE": 16}, types_), "PPPiii")
    engine.close()
    message = str(error.value)
    assert message.startswith(f"{path}: nvcc failed with -lineinfo -DACC_SIZE=4 "
                              "-DACC_TYPE=float -DDTYPE=float")
    assert "error: the kernel says #error" in message


@needs_nvcc
def test_a_real_compile_error_names_the_kernels_own_line(cache, tmp_path):
    path = write_kernel(tmp_path, "broken", MATMUL_HEADER,
                        MATMUL_BODY.replace("{}", "{ C[0] = undeclared; }"))
    engine = PycudaCompiler(fake_cuda([]), "9.0", driver=lambda: None)
    types_ = OPS["matmul"].type_set("float32")
    with pytest.raises(CompileError) as error:
        engine.compile(parse_header(path), compile_defines({"TILE": 16}, types_), "PPPiii")
    engine.close()
    assert f"{path}(7): error" in str(error.value) and "undeclared" in str(error.value)


# -- what a run compiles ahead ------------------------------------------------------------

def test_a_run_compiles_ahead_what_its_jobs_compile(tmp_path):
    from test_pipeline import plan_for

    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner.execute import run_jobs

    plan = plan_for("matmul", (64, 64, 64))
    jobs = jobs_of([plan])
    engine = FakeSpec().open()
    run_jobs([plan], jobs, engine)
    ahead = [entry for kind, entry in engine.log if kind == "compile_ahead"]
    assert len(ahead) == 1 and engine.log[0][0] == "compile_ahead"  # before anything else
    compiled = [entry[0] for kind, entry in engine.log if kind == "compile"]
    assert [name for name, _, _ in ahead[0]] == compiled
    assert [defines for _, defines, _ in ahead[0]] == [
        compile_defines(p.params, plan.types) for p in plan.variants]


def test_a_variant_this_gpu_would_skip_is_not_compiled_ahead(tmp_path):
    from test_pipeline import plan_for

    write_kernel(tmp_path / "matmul", "only90a",
                 [*MATMUL_HEADER[:3], "// arch: sm_90a", MATMUL_HEADER[3]])
    write_kernel(tmp_path / "matmul", "plain", MATMUL_HEADER)
    plan = plan_for("matmul", (64, 64, 64), kernels_dirs=(tmp_path,),
                    variants=("only90a", "plain"))
    requests = compile_requests([plan], jobs_of([plan]), "8.0")
    assert [r.variant.name for r in requests] == ["plain"]
    assert [r.variant.name for r in compile_requests([plan], jobs_of([plan]), "9.0")] == [
        "only90a", "plain"]


# -- with the real nvcc -------------------------------------------------------------------

@needs_nvcc
def test_a_real_include_is_tracked(cache, tmp_path):
    path = a_kernel(tmp_path / "kernels", body=MATMUL_BODY.replace(
        "{}", "{ if (HELPER == 2) C[0] = 1; }"))
    first = build(request(path))
    assert first.returncode == 0, first.output
    assert build(request(path)).cached
    (path.parent / "helper.cuh").write_text("#define HELPER 2\n")
    again = build(request(path))
    assert not again.cached and again.cubin != first.cubin


@needs_nvcc
def test_many_at_once_give_the_cubins_of_one_by_one(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", "off")  # every one compiled, both ways
    path = write_kernel(tmp_path, "tiled", MATMUL_HEADER, MATMUL_BODY.replace(
        "{}", "{ __shared__ DTYPE t[TILE][TILE]; t[threadIdx.y][threadIdx.x] = A[threadIdx.x];"
              " __syncthreads(); C[threadIdx.x] = t[threadIdx.x][threadIdx.y]; }"))
    requests = [request(path, tile, dtype) for tile in (8, 16, 32)
                for dtype in ("float32", "float16", "float64")]
    one_by_one = [build(r) for r in requests]
    pool = CompilePool(workers=4)
    pool.ahead(requests)
    at_once = [pool.result(r) for r in requests]
    pool.close()
    assert all(b.returncode == 0 for b in one_by_one), one_by_one[0].output
    assert [b.cubin for b in at_once] == [b.cubin for b in one_by_one]
    assert len({hashlib.sha256(b.cubin).hexdigest() for b in at_once}) == len(requests)


@needs_nvcc
def test_a_dry_run_fills_the_cache_the_engine_reads(cache, tmp_path):
    path = write_kernel(tmp_path / "matmul", "probe", MATMUL_HEADER)
    result = invoke("matmul", "--dry-run", "--arch", "sm_90", "--kernels-dir", tmp_path,
                    "--variant", "probe", "-p", "TILE=8,32", "--size", "64")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("ok (sm_90)") == 2
    assert len(list(cache.glob("*/*.cubin"))) == 2
    # what the engine on a GPU of compute capability 9.0 asks for is there
    engine = PycudaCompiler(fake_cuda([]), "9.0", driver=lambda: None)
    types_ = OPS["matmul"].type_set("float32")
    for tile in (8, 32):
        wanted = engine.request(parse_header(path), compile_defines({"TILE": tile}, types_),
                                types_.headers)
        assert build(wanted).cached
    engine.close()
    assert os.environ["CUDABENCH_CACHE_DIR"] == str(cache.parent)


def test_a_cache_folder_given_with_a_tilde_is_the_home_s(monkeypatch, tmp_path):
    # CUDABENCH_CACHE_DIR="~/cb" from a CI file (no shell to expand it) made ./~/cb
    from cudabench.common.cache_dir import cache_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", "~/cb")
    assert cache_root() == tmp_path / "cb"


def test_a_cache_dir_that_names_a_file_is_said_once_and_the_run_goes_on(use_fake, monkeypatch,
                                                                        tmp_path):
    # every cache failed to make its folder there, and kept nothing, without a word
    from helpers import invoke

    from cudabench.common import cache_dir

    monkeypatch.setattr(cache_dir, "_SAID", set())
    (tmp_path / "cb").write_text("", encoding="utf-8")
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cb"))
    done = invoke("dot", "--size", "1000", "--variant", "atomic", "--no-vendor",
                  "--warmup", "0", "--max-time", "0.02")
    assert done.exit_code == 0, done.output
    said = [line for line in done.stderr.splitlines() if "CUDABENCH_CACHE_DIR" in line]
    assert said == [f"note: CUDABENCH_CACHE_DIR={tmp_path / 'cb'} is a file, not a folder: "
                    "nothing is cached (compiled kernels, references, tuning); name a "
                    "folder, or off"], done.stderr
