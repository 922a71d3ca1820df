"""Where the CUDA toolkit's command-line tools are found (ncu, compute-sanitizer): on PATH,
in $CUDA_ROOT/bin, in /usr/local/cuda/bin, then in a tool's own install folders (Nsight
Compute's /opt/nvidia/nsight-compute/VERSION/, newest first). One search and one message
for every tool, so that the error says where it looked."""

from __future__ import annotations

import os
import re
import shutil
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
