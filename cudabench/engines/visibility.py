"""Which GPUs a process sees: CUDA_VISIBLE_DEVICES as the driver reads it."""

from __future__ import annotations

import os
from collections.abc import Mapping


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
