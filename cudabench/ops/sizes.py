"""The `--size` syntax: `1000`, `1<<24`, `512x256x128`."""

from __future__ import annotations

import re
from collections.abc import Mapping

from cudabench.errors import UsageError
from cudabench.ops.types import INT32_MAX

_NUMBER = re.compile(r"^\s*(\d+)\s*(?:<<\s*(\d+))?\s*$")


def parse_extent(text: str, flag: str = "--size") -> int:
    """Parse one positive extent, `1000` or `1<<24`, that fits the kernels' int arguments."""
    match = _NUMBER.match(text)
    shift = int(match[2] or 0) if match else 0
    value = int(match[1]) << shift if match and shift <= 62 else 0  # no 1<<10**9 integers
    if value <= 0:
        raise UsageError(
            f"{flag} {text!r}: sizes are positive integers such as 1000 or 1<<24"
        )
    if value > INT32_MAX:
        raise UsageError(f"{flag} {text!r}: each extent must be at most 2^31-1 "
                         "(kernels take int arguments)")
    return value


def parse_dims(text: str, counts: Mapping[int, str], flag: str = "--size") -> tuple[int, ...]:
    """Split `AxBxC` into extents; counts maps an accepted count to an example."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) not in counts:
        examples = " or ".join(f"{flag} {example}" for example in counts.values())
        raise UsageError(f"{flag} {text!r}: expected {examples}")
    return tuple(parse_extent(part, flag) for part in parts)
