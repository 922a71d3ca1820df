"""Compile a variant to PTX by calling nvcc directly: no GPU, no driver library needed.

PyCUDA's compiler module loads the CUDA driver library, which a machine without a GPU may
lack; `--dry-run` and the CPU tests compile with this instead, from the same source the
engine compiles (headers first, a #line directive, -I the kernel's folder, the -D defines).

When nvcc is missing or broken, the message names the cause: not found (and where it was
looked for), or found but failing to run (a wrapper script that errors, say), with its
first error line and the fix.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.catalog import KernelVariant

DEFAULT_ARCH = "sm_90"
TIMEOUT_S = 600
PROBE_TIMEOUT_S = 60  # `nvcc --version` answers in well under a second
CUDA_HOME = Path("/usr/local/cuda")  # where the toolkit usually is (tests point it elsewhere)
# Errors of starting a process that pass when tried again: a busy machine out of processes or
# memory for a moment, a script another thread of this process had open for writing while
# it forked (ETXTBSY), or a sandboxed kernel's fork failing with EFAULT ("Bad address") under
# load. CI lost a build to such an error twice among ~500 parallel compiles; the path and
# arguments are this process's own, never the bad address.
TRANSIENT_START_ERRORS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.ETXTBSY, errno.EINTR,
                                    errno.EFAULT})
START_TRIES = 4


def start_retrying(start: Callable[[], subprocess.Popen[str]], tries: int = START_TRIES,
                   pause_s: float = 0.2) -> subprocess.Popen[str]:
    """Return start()'s process, trying again (with a growing pause) while starting it
    fails for a transient reason; the last OSError, or any other, is raised."""
    for attempt in range(tries):
        try:
            return start()
        except OSError as exc:
            if exc.errno not in TRANSIENT_START_ERRORS or attempt == tries - 1:
                raise
            time.sleep(pause_s * 2 ** attempt)
    raise AssertionError("unreachable")  # the loop returns or raises


def cannot_run_message(nvcc: str, exc: OSError) -> str:
    """Why nvcc could not be started: nvcc_problem's answer, else the OS's own error."""
    return nvcc_problem(nvcc) or f"nvcc at {nvcc} cannot be run ({exc.strerror or exc})"


@dataclass(frozen=True)
class Build:
    """What nvcc made of one variant with one set of defines."""

    returncode: int
    ptx: str
    output: str  # nvcc's stdout and stderr
    command: str


def _fallback_folders() -> list[Path]:
    """The folders searched after PATH: $CUDA_ROOT/bin (if set), then /usr/local/cuda/bin."""
    root = os.environ.get("CUDA_ROOT")
    return [*([Path(root) / "bin"] if root else []), CUDA_HOME / "bin"]


def find_nvcc() -> str | None:
    """Return nvcc's path: on PATH, else in $CUDA_ROOT/bin, else in /usr/local/cuda/bin."""
    found = shutil.which("nvcc")
    if found is not None:
        return found
    for folder in _fallback_folders():
        candidate = folder / "nvcc"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def not_found_message() -> str:
    """Say that nvcc was not found, where it was looked for, and how to fix that."""
    root = os.environ.get("CUDA_ROOT")
    where = f"$CUDA_ROOT/bin ({Path(root) / 'bin'})" if root else "$CUDA_ROOT/bin (not set)"
    return (f"nvcc was not found: looked on PATH, in {where} and in {CUDA_HOME / 'bin'}; "
            "install the CUDA toolkit, then put its bin folder on PATH "
            "(export PATH=/path/to/cuda/bin:$PATH) or set CUDA_ROOT=/path/to/cuda")


def nvcc_problem(nvcc: str | None = None) -> str | None:
    """Return why nvcc cannot be used (not found, or found but `nvcc --version` fails), or
    None when it runs. nvcc defaults to find_nvcc()."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        return not_found_message()
    from cudabench.common.extras import install_hint

    # the gpu extra's own packages: `pip install -e '.[gpu]'` is a clone's, not a wheel's
    fix = ("if it is a wrapper script, fix it or put the toolkit's own bin folder first on "
           "PATH; to build PyCUDA against that toolkit: CUDA_ROOT=/path/to/cuda "
           f"{install_hint('gpu')}")
    try:
        done = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except OSError as exc:
        return f"nvcc was found at {nvcc} but cannot be run ({exc.strerror or exc}); {fix}"
    except subprocess.TimeoutExpired:
        return (f"nvcc was found at {nvcc} but `nvcc --version` did not finish within "
                f"{PROBE_TIMEOUT_S} s; {fix}")
    if done.returncode != 0:
        return (f"nvcc was found at {nvcc} but fails to run (`nvcc --version` exited "
                f"{done.returncode}: {first_error_line(done.stderr + done.stdout)}); {fix}")
    return None


def first_error_line(output: str) -> str:
    """Return the first line of output that mentions an error, else its first line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    line = (errors or lines or ["no output"])[0]
    return line if len(line) <= 300 else line[:297] + "..."


def pycuda_install_hint() -> str:
    """How to install PyCUDA (one line), with what is wrong with nvcc now, if anything."""
    from cudabench.common.extras import install_hint

    hint = (f"install it with `{install_hint('gpu')}` (PyCUDA builds against the CUDA "
            "toolkit of the nvcc on PATH; where nvcc is a wrapper or the toolkit is not in "
            "/usr/local/cuda: `CUDA_ROOT=/path/to/cuda pip install pycuda`)")
    problem = nvcc_problem()
    return hint if problem is None else f"{hint}; and now {problem}"


def compile_ptx(variant: KernelVariant, defines: Mapping[str, object],
                headers: Sequence[str] = (), arch: str = DEFAULT_ARCH,
                nvcc: str | None = None) -> Build:
    """Compile variant to PTX for arch. A missing nvcc is a Build with returncode 127, one
    that cannot be run 126; when nvcc itself is broken (`nvcc --version` fails too), the
    output is one line saying so, with its first error line."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        return Build(127, "", not_found_message(), "nvcc")
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / f"{variant.name}.cu"
        source.write_text(variant.compile_source(headers), encoding="utf-8")
        target = Path(work) / f"{variant.name}.ptx"
        command = [nvcc, f"-arch={arch}", "-ptx", "-lineinfo", f"-I{variant.path.parent}",
                   *(f"-D{name}={value}" for name, value in sorted(defines.items())),
                   str(source), "-o", str(target)]
        try:
            process = start_retrying(lambda: subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        except OSError as exc:
            return Build(126, "", cannot_run_message(nvcc, exc), " ".join(command))
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return Build(124, "", f"nvcc did not finish within {TIMEOUT_S} s", " ".join(command))
        ptx = target.read_text() if process.returncode == 0 else ""
    output = stdout + stderr
    problem = nvcc_problem(nvcc) if process.returncode != 0 else None
    return Build(process.returncode, ptx, problem or output, " ".join(command))
