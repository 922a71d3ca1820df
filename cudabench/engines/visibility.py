"""Which GPUs a process sees (CUDA_VISIBLE_DEVICES as the driver reads it), and a CUDA setting
the timing cannot run under (CUDA_LAUNCH_BLOCKING)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from cudabench.errors import UsageError


def visible_entries(environ: Mapping[str, str] | None = None,
                    physical: int | None = None) -> list[str] | None:
    """Return the GPUs CUDA_VISIBLE_DEVICES shows, as the driver reads it, or None when it
    is not set. The driver (measured on an H200: docs/measurements.md) reads entries up to
    the first that is empty, not a number (a leading `+` and trailing junk allowed, as
    strtoul does: "1a" is GPU 1) nor a `GPU-`/`MIG-` UUID, or negative, or (given the
    host's `physical` count) a GPU the host lacks: "0,-1,1" shows GPU 0 alone. A numbered
    GPU shown twice ("0,0") makes CUDA fail to start: a UsageError here, not two workers
    timing one GPU at once. Numbered entries are returned as plain indices ("+1" is "1").
    A UUID is taken as given: not matched to an index, nor checked to exist (the driver
    shows "UUID,0" of GPU 0 as one GPU; callers count at most the host's GPUs)."""
    text = (environ if environ is not None else os.environ).get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return None
    entries: list[str] = []
    for entry in (part.strip() for part in text.split(",")):
        if entry.startswith(("GPU-", "MIG-")):
            entries.append(entry)
            continue
        number = re.match(r"\+?([0-9]+)", entry)
        if number is None or (physical is not None and int(number[1]) >= physical):
            break
        index = str(int(number[1]))
        if index in entries:
            raise UsageError(f"CUDA_VISIBLE_DEVICES={text.strip()}: GPU {index} is listed "
                             "twice, which CUDA refuses (CUDA_ERROR_INVALID_DEVICE); list "
                             "each GPU once")
        entries.append(index)
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
            "unset it (to find a launch that faults: --sanitize memcheck, or in a suite "
            "entry sanitize = \"memcheck\")")
