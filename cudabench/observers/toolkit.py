"""Where the CUDA toolkit's command-line tools are found (ncu, compute-sanitizer): on PATH,
in $CUDA_ROOT/bin, in /usr/local/cuda/bin, then in a tool's own install folders (Nsight
Compute's /opt/nvidia/nsight-compute/VERSION/, newest first). One search and one message
for every tool, so that the error says where it looked. `run_tool` runs one over a child
process and, stopped early, ends both."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

CUDA_HOME = Path("/usr/local/cuda")


def find_tool(name: str, own_roots: Sequence[Path] = ()) -> Path | None:
    """Return the path of the executable name, or None where none of the places has it."""
    found = shutil.which(name)
    if found is not None:
        return Path(found)
    homes = [Path(os.environ["CUDA_ROOT"])] if os.environ.get("CUDA_ROOT") else []
    candidates = [home / "bin" / name for home in (*homes, CUDA_HOME)]
    for root in own_roots:  # newest version first: 2025.2.1 before 2025.1.0
        candidates += sorted(root.glob(f"*/{name}"), key=lambda p: _version(p.parent.name),
                             reverse=True)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def places(own_roots: Sequence[Path] = ()) -> str:
    """Return where find_tool looks, for a message: "on PATH, in $CUDA_ROOT/bin, ..."."""
    where = ["on PATH", "in $CUDA_ROOT/bin", f"in {CUDA_HOME / 'bin'}",
             *(f"in {root}/*/" for root in own_roots)]
    return ", ".join(where[:-1]) + " or " + where[-1]


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name))


def run_tool(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run a tool that wraps a child process (ncu, compute-sanitizer), its output kept.

    A session of its own: on a timeout (subprocess.TimeoutExpired, raised again) or an
    interrupt the whole session is killed, the child too, which holds a CUDA context and
    maybe a spinning kernel; killing the tool alone would leave it running.
    """
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):  # all of it ended already
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return subprocess.CompletedProcess(list(argv), process.returncode, stdout, stderr)
