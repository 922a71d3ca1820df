"""Build one cubin with nvcc, through the on-disk cache: what the engine loads and
`--dry-run` builds, from the same request, so that a dry run warms the run's cache.

A request is the source text nvcc compiles (the type headers first, a #line directive
naming the kernel's file, then the file) and its flags: the target (`-arch=sm_90` for a
GPU of compute capability 9.0, or exactly a header's `arch` with -gencode), -lineinfo,
-I the kernel's folder, and the -D defines. Its cache key hashes those and the toolkit's
version (`nvcc --version`); compile_cache.py checks the included files.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import KernelVariant
from cudabench.catalog.variants import Arch
from cudabench.common.relocation import local_path
from cudabench.engines import compile_cache
from cudabench.engines import nvcc as nvcc_tools

TIMEOUT_S = nvcc_tools.TIMEOUT_S
FORMAT = 1  # bumped when what a key covers changes
NICENESS = 10  # nvcc's priority below the measuring process's (which is 0)
STOPPED = -1  # the returncode of a build its pool stopped (close) before it ran


@dataclass(frozen=True)
class CubinRequest:
    """What nvcc is given for one cubin: the source text, its file's stem, the flags."""

    source: str
    name: str
    flags: tuple[str, ...]  # the target, -lineinfo, -I, the -D defines: all but the files


@dataclass(frozen=True)
class CubinBuild:
    """What nvcc made of one request."""

    returncode: int
    cubin: bytes
    output: str  # nvcc's stdout and stderr, or why it could not run
    command: str
    cached: bool = False  # read from the cache, not compiled now


def target_flags(target: Arch | str) -> tuple[str, ...]:
    """Return the flags that build for target: a header's Arch exactly (-gencode), or a
    GPU's real architecture by name ("sm_90": -arch=sm_90, what PyCUDA passes)."""
    return (target.gencode,) if isinstance(target, Arch) else (f"-arch={target}",)


def request_for(variant: KernelVariant, defines: Mapping[str, object],
                headers: Sequence[str], target: Arch | str) -> CubinRequest:
    """Return the request that builds variant with defines and headers for target."""
    # nvcc runs in a temporary folder: the kernel's own folder is searched for its
    # includes (where this machine has it: a Ray node may hold it elsewhere)
    folder = local_path(variant.path).parent.resolve()
    flags = (*target_flags(target), "-lineinfo", f"-I{folder}",
             *(f"-D{name}={value}" for name, value in sorted(defines.items())))
    return CubinRequest(variant.compile_source(headers), variant.name, flags)


def source_request(source: str, target: str, name: str = "kernel") -> CubinRequest:
    """Return the request that builds a source of its own (no folder, no defines)."""
    return CubinRequest(source, name, (*target_flags(target), "-lineinfo"))


@functools.lru_cache(maxsize=8)
def toolkit_version(nvcc: str) -> str | None:
    """Return `nvcc --version`'s text (which toolkit builds: part of every key), or None
    when it does not run."""
    try:
        done = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                              timeout=nvcc_tools.PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None


def cache_key(request: CubinRequest, version: str) -> str:
    """Return the hash of what request's cubin depends on, but the included files."""
    digest = hashlib.sha256()
    for part in (str(FORMAT), version, request.name, *request.flags, request.source):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")  # any file name
    return digest.hexdigest()[:40]


Register = Callable[["subprocess.Popen[str] | None"], None]


def build(request: CubinRequest, nvcc: str | None = None, register: Register | None = None,
          give_up: Callable[[], bool] = lambda: False) -> CubinBuild:
    """Return request's cubin: from the cache when an intact entry of unchanged files is
    there, else compiled (and kept). A missing nvcc is returncode 127, one that cannot be
    run 126, a timeout 124; a compile error is nvcc's own code and output. register hears
    each nvcc process started (and None once it ended), so that a pool can stop it;
    give_up() stops waiting for another process's compile of the same key."""
    nvcc = nvcc or nvcc_tools.find_nvcc()
    if nvcc is None:
        return CubinBuild(127, b"", nvcc_tools.not_found_message(), "nvcc")
    where, version = compile_cache.folder(), toolkit_version(nvcc)
    if where is None or version is None:  # no cache, or nvcc is broken: nvcc says so
        return _compile(request, nvcc, register)[0]
    key = cache_key(request, version)
    cubin = compile_cache.read(where, key)
    if cubin is not None:
        return CubinBuild(0, cubin, "", "", cached=True)
    with compile_cache.locked(where, key, give_up) as held:
        if not held and give_up():  # the pool is closing: nothing more is wanted
            return CubinBuild(STOPPED, b"", "the compile was stopped before it started", "")
        cubin = compile_cache.read(where, key)  # made by whoever held the lock before
        if cubin is not None:
            return CubinBuild(0, cubin, "", "", cached=True)
        built, dependencies = _compile(request, nvcc, register)
        if built.returncode == 0 and dependencies is not None:
            compile_cache.write(where, key, built.cubin, dependencies)
        return built


def _compile(request: CubinRequest, nvcc: str, register: Register | None
             ) -> tuple[CubinBuild, list[compile_cache.Dependency] | None]:
    """Run nvcc on request; return the build and, if it succeeded, the files it read."""
    with tempfile.TemporaryDirectory(prefix="cudabench-nvcc-") as work:
        source = Path(work) / f"{request.name}.cu"
        # a folder named in bytes that are no UTF-8 (its #line, its includes' -I) as it is
        source.write_text(request.source, encoding="utf-8", errors="surrogateescape")
        target, depfile = Path(work) / f"{request.name}.cubin", Path(work) / "deps.d"
        command = [nvcc, "-cubin", *request.flags, str(source), "-o", str(target)]
        shown = " ".join(command)
        started_ns = time.time_ns()
        try:
            # its own process group: a pool that stops it stops cicc and ptxas too
            process = nvcc_tools.start_retrying(lambda: subprocess.Popen(
                [*command, "-MD", "-MF", str(depfile)], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, errors="surrogateescape",
                start_new_session=True))  # its messages name files in any bytes
        except OSError as exc:
            return CubinBuild(126, b"", nvcc_tools.cannot_run_message(nvcc, exc), shown), None
        with contextlib.suppress(OSError, AttributeError):
            # below the measuring process: compiling ahead takes what the CPU has left
            os.setpriority(os.PRIO_PGRP, process.pid, NICENESS)
        if register is not None:
            register(process)
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop(process)
            return CubinBuild(124, b"", f"nvcc did not finish within {TIMEOUT_S} s",
                              shown), None
        finally:
            if register is not None:
                register(None)
        if process.returncode != 0:
            problem = nvcc_tools.nvcc_problem(nvcc)  # nvcc itself broken, not the kernel
            if process.returncode < 0 and problem is None:  # not the kernel either
                problem = (stdout + stderr + f"\nnvcc was killed by signal "
                           f"{-process.returncode} (the OOM killer, or a stop from outside)")
            return CubinBuild(process.returncode, b"", problem or stdout + stderr,
                              shown), None
        try:
            cubin = target.read_bytes()
            listed = compile_cache.dependencies(depfile.read_text(errors="surrogateescape"),
                                                Path(work))
        except OSError as exc:
            return CubinBuild(1, b"", f"nvcc wrote no cubin: {exc}", shown), None
        files = compile_cache.fingerprint(listed, started_ns)
    return CubinBuild(0, cubin, stdout + stderr, shown), files


def kill(process: subprocess.Popen[str]) -> None:
    """Kill an nvcc process still running and what it started (cicc, ptxas): its group."""
    if process.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)


def stop(process: subprocess.Popen[str]) -> None:
    """Kill an nvcc process (kill) and reap it."""
    kill(process)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        process.communicate(timeout=10)
