"""Build a variant for exactly one target as a cubin, and read its machine code (SASS).

A variant whose header names an `arch` is built this way by `--dry-run`, as the engine
builds it (-gencode=arch=compute_90a,code=sm_90a): ptxas runs, so an instruction its
target lacks (wgmma on sm_90, say) fails here as it would on the GPU. `sass` disassembles a
cubin with cuobjdump, to check which instructions a kernel really uses (HMMA for mma.sync,
HGMMA for wgmma, UTMALDG for a TMA load). No GPU is needed for either.
"""

from __future__ import annotations

import os
import struct
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


def entry_points(cubin: bytes) -> set[str] | None:
    """Return the names of the global functions a cubin (an ELF64 file) defines: what the
    driver's cuModuleGetFunction finds by name; None for what is no ELF64 file."""
    if len(cubin) < 64 or cubin[:5] != b"\x7fELF\x02":
        return None
    order = "<" if cubin[5] == 1 else ">"
    try:
        shoff, = struct.unpack_from(order + "Q", cubin, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", cubin, 0x3A)
        sections = [struct.unpack_from(order + "IIQQQQIIQQ", cubin, shoff + i * shentsize)
                    for i in range(shnum)]
        names: set[str] = set()
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 2 or not entsize:  # SHT_SYMTAB
                continue
            strings = sections[link][4]
            for at in range(offset, offset + size, entsize):
                name_at, info = struct.unpack_from(order + "IB", cubin, at)
                if info & 0xF == 2 and info >> 4 == 1:  # STT_FUNC, STB_GLOBAL
                    end = cubin.index(b"\0", strings + name_at)
                    names.add(cubin[strings + name_at:end].decode(errors="replace"))
    except (struct.error, ValueError, IndexError):
        return None  # a file cut short or not laid out as ELF says: not judged
    return names
