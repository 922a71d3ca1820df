"""Where a kernel folder or op file lives on this machine when the run was planned on
another (a Ray task on a cluster node where the planning host's paths do not exist).

The planning host sends the files; the task writes them to a temporary folder and names
the move in CUDABENCH_RELOCATED (a JSON map of folder to folder) before any op is loaded,
so that the processes it starts inherit it. Results keep the original paths: they name
the user's files, not the copies.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ENVIRONMENT_VARIABLE = "CUDABENCH_RELOCATED"


def local_path(path: Path) -> Path:
    """Return where path's file is on this machine (path itself unless it was moved)."""
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    if not text:
        return path
    moved = json.loads(text)
    for folder in path.parents:  # the nearest: a subfolder moves with its folder
        if str(folder) in moved:
            return Path(moved[str(folder)]) / path.relative_to(folder)
    return path
