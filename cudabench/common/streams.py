"""Standard streams whose reader has gone."""

from __future__ import annotations

import contextlib
import os
from typing import IO, Any


def lead_nowhere(stream: IO[Any]) -> None:
    """Point stream's descriptor at /dev/null: what is left in its buffer would fail again
    at Python's exit flush ("Exception ignored ... BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
