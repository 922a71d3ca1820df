"""Where cudabench keeps what it can make again but would rather not: compiled kernels,
CPU references. CUDABENCH_CACHE_DIR moves it (set it to `off` to keep nothing); otherwise
$XDG_CACHE_HOME/cudabench, else ~/.cache/cudabench."""

from __future__ import annotations

import os
from pathlib import Path

OFF = {"off", "0", "none", "false"}


def cache_root() -> Path | None:
    """Return the cache folder (not created yet), or None when caching is off."""
    chosen = os.environ.get("CUDABENCH_CACHE_DIR")
    if chosen is not None:
        # "~/cb" from a CI file's env (no shell expanded it) is the home's, not ./~/cb
        return (None if chosen.strip().lower() in OFF or not chosen.strip()
                else Path(chosen).expanduser())
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cudabench"
