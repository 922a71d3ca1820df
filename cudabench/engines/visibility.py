"""Which GPUs a process sees (CUDA_VISIBLE_DEVICES as the driver reads it), and a CUDA setting
the timing cannot run under (CUDA_LAUNCH_BLOCKING)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from cudabench.errors import UsageError


def visible_entries(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """Return the entries of CUDA_VISIBLE_DEVICES as CUDA reads them (up to the first empty
    one), or None when it is not set."""
    text = (environ if environ is not None else os.environ).get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return None
    entries = []
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            break
        entries.append(entry)
    return entries


def refuse_launch_blocking(environ: Mapping[str, str] | None = None) -> None:
    """Raise UsageError (a setting to undo, not a missing GPU) when CUDA_LAUNCH_BLOCKING is
    on: every timed run is queued behind a kernel that waits for the host to release it
    (engines/pycuda_engine.py's time_once and batches), and a launch that blocks until the
    GPU is done would wait for it forever."""
    value = (environ if environ is not None else os.environ).get("CUDA_LAUNCH_BLOCKING", "")
    # off: unset, empty or a zero ("00"); anything else is taken as on (a word such as
    # "false" too: a hang is worse than a refusal that says what to unset)
    if value.strip() and not re.fullmatch(r"\s*[+-]?0+\s*", value):
        raise UsageError(
            f"CUDA_LAUNCH_BLOCKING={value.strip()}: cudabench queues each timed launch behind "
            "a kernel that waits for the host, which blocking launches would never release; "
            "unset it (to find a launch that faults, add --sanitize memcheck)")
