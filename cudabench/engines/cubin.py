"""Build a variant for exactly one target as a cubin, and read its machine code (SASS).

A variant whose header names an `arch` is built this way by `--dry-run`, as the engine
builds it (-gencode=arch=compute_90a,code=sm_90a): ptxas runs, so an instruction its
target lacks (wgmma on sm_90, say) fails here as it would on the GPU. `sass` disassembles a
cubin with cuobjdump, to check which instructions a kernel really uses (HMMA for mma.sync,
HGMMA for wgmma, UTMALDG for a TMA load). No GPU is needed for either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from cudabench.catalog import KernelVariant
from cudabench.catalog.variants import Arch
from cudabench.engines import nvcc as nvcc_tools
from cudabench.engines.compiler import CubinBuild, build, request_for
from cudabench.errors import UsageError

__all__ = ["CubinBuild", "compile_cubin", "find_cuobjdump", "sass"]

TIMEOUT_S = nvcc_tools.TIMEOUT_S


def compile_cubin(variant: KernelVariant, defines: Mapping[str, object], arch: Arch,
                  headers: Sequence[str] = (), nvcc: str | None = None) -> CubinBuild:
    """Compile variant to a cubin for exactly arch, as the engine builds it (through the
    compile cache: compiler.py). A missing nvcc is returncode 127, one that cannot be run
    126, a timeout 124."""
    return build(request_for(variant, defines, headers, arch), nvcc)


def find_cuobjdump() -> str | None:
    """Return cuobjdump's path: on PATH, else beside the toolkit ($CUDA_ROOT/bin, then
    /usr/local/cuda/bin)."""
    found = shutil.which("cuobjdump")
    if found is not None:
        return found
    root = os.environ.get("CUDA_ROOT")
    for folder in [*([Path(root) / "bin"] if root else []), nvcc_tools.CUDA_HOME / "bin"]:
        candidate = folder / "cuobjdump"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def sass(cubin: bytes, cuobjdump: str | None = None) -> str:
    """Return the SASS of every kernel in a cubin (`cuobjdump -sass`); UsageError naming
    the cause when cuobjdump is missing or fails."""
    cuobjdump = cuobjdump or find_cuobjdump()
    if cuobjdump is None:
        raise UsageError("cuobjdump was not found (looked on PATH, in $CUDA_ROOT/bin and in "
                         f"{nvcc_tools.CUDA_HOME / 'bin'}): it is part of the CUDA toolkit")
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "kernel.cubin"
        path.write_bytes(cubin)
        try:
            done = subprocess.run([cuobjdump, "-sass", str(path)], capture_output=True,
                                  text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"cuobjdump at {cuobjdump} could not run: {exc}") from None
    if done.returncode != 0:
        raise UsageError(f"cuobjdump -sass failed (exit {done.returncode}): "
                         f"{nvcc_tools.first_error_line(done.stderr + done.stdout)}")
    return done.stdout
