"""Where cudabench keeps what it can make again but would rather not: compiled kernels,
CPU references. CUDABENCH_CACHE_DIR moves it (set it to `off` to keep nothing); otherwise
$XDG_CACHE_HOME/cudabench, else ~/.cache/cudabench."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

from cudabench.common.infiles import refuse_unreachable

OFF = {"off", "0", "none", "false"}
_SAID: set[str] = set()


def cache_root() -> Path | None:
    """Return the cache folder (not created yet), or None when caching is off (or
    CUDABENCH_CACHE_DIR names a file: said once, as nothing could be kept there)."""
    chosen = os.environ.get("CUDABENCH_CACHE_DIR")
    if chosen is not None:
        if chosen.strip().lower() in OFF or not chosen.strip():
            return None
        # "~/cb" from a CI file's env (no shell expanded it) is the home's, not ./~/cb
        folder = Path(chosen).expanduser()
        refuse_unreachable(folder, f"CUDABENCH_CACHE_DIR={chosen}")
        if folder.exists() and not folder.is_dir():  # every cache failed to make its folder
            _say_once(f"note: CUDABENCH_CACHE_DIR={chosen} is a file, not a folder: nothing "
                      "is cached (compiled kernels, references, tuning); name a folder, or "
                      "off")
            return None
        return folder
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cudabench"


def _say_once(text: str) -> None:
    """Print a note once per command (a GPU worker, a child process, leaves it to it)."""
    if text not in _SAID and multiprocessing.parent_process() is None:
        _SAID.add(text)
        print(text, file=sys.stderr)
