"""Compile a variant to PTX by calling nvcc directly: no GPU, no driver library needed.

PyCUDA's compiler module loads the CUDA driver library, which a machine without a GPU may
lack; `--dry-run` and the CPU tests compile with this instead, from the same source the
engine compiles (headers first, a #line directive, -I the kernel's folder, the -D defines).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import KernelVariant

DEFAULT_ARCH = "sm_90"
TIMEOUT_S = 600


@dataclass(frozen=True)
class Build:
    """What nvcc made of one variant with one set of defines."""

    returncode: int
    ptx: str
    output: str  # nvcc's stdout and stderr
    command: str


def find_nvcc() -> str | None:
    """Return the nvcc on PATH, if any."""
    return shutil.which("nvcc")


def compile_ptx(variant: KernelVariant, defines: Mapping[str, object],
                headers: Sequence[str] = (), arch: str = DEFAULT_ARCH,
                nvcc: str | None = None) -> Build:
    """Compile variant to PTX for arch; a missing nvcc is a Build with returncode 127."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        return Build(127, "", "nvcc is not on PATH: install the CUDA toolkit", "nvcc")
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / f"{variant.name}.cu"
        source.write_text(variant.compile_source(headers), encoding="utf-8")
        target = Path(work) / f"{variant.name}.ptx"
        command = [nvcc, f"-arch={arch}", "-ptx", "-lineinfo", f"-I{variant.path.parent}",
                   *(f"-D{name}={value}" for name, value in sorted(defines.items())),
                   str(source), "-o", str(target)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Build(124, "", f"nvcc did not finish within {TIMEOUT_S} s", " ".join(command))
        ptx = target.read_text() if done.returncode == 0 else ""
    return Build(done.returncode, ptx, done.stdout + done.stderr, " ".join(command))
