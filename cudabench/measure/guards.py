"""Guard zones: out-of-bounds writes caught without a sanitizer.

Every buffer of a variant is allocated with a zone before and after it, filled with a byte
pattern (the buffer itself keeps the allocation's 256-byte alignment). After the checked
launch the zones are read back: a kernel that wrote past the end of its output (or before
its start, or into an input it should only read) fails, and the message says how far.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.engines.protocol import Engine
from cudabench.errors import GpuEnvironmentError
from cudabench.measure.resident import RESIDENT

PATTERN = 0xA5  # a byte no kernel writes by chance as often as 0x00
ALIGN = 256
MIN_GUARD = 4096
MAX_GUARD = 1 << 20


def guard_bytes(nbytes: int) -> int:
    """Return a guard zone's size: an eighth of the buffer, 4 KiB to 1 MiB, 256-aligned."""
    size = min(MAX_GUARD, max(MIN_GUARD, nbytes // 8))
    return -(-size // ALIGN) * ALIGN


@dataclass
class Guarded:
    """A buffer with guard zones: `data` is what kernels get, `base` what is freed."""

    base: Any
    data: Any
    nbytes: int
    guard: int


def allocate(engine: Engine, nbytes: int) -> Guarded:
    """Allocate nbytes between two guard zones filled with the pattern. The benchmark's
    resident copies (resident.py) are a convenience, the rows' buffers are not: where the
    GPU is full, the copies are let go and the allocation tried once more."""
    guard = guard_bytes(nbytes)
    padded = -(-max(nbytes, 1) // ALIGN) * ALIGN
    try:
        base = engine.allocate(guard + padded + guard)
    except GpuEnvironmentError:
        if not RESIDENT.holds_any():
            raise
        RESIDENT.release(engine)
        base = engine.allocate(guard + padded + guard)
    engine.fill(base, np.uint8(PATTERN), guard + padded + guard)
    return Guarded(base, engine.offset(base, guard), nbytes, guard)


def check(engine: Engine, buffers: Mapping[str, Guarded], itemsizes: Mapping[str, int]
          ) -> list[str]:
    """Return what the kernel wrote outside its buffers, one sentence per buffer side."""
    problems = []
    for name, buffer in buffers.items():
        padded = -(-max(buffer.nbytes, 1) // ALIGN) * ALIGN
        # Only the zones come back: the buffer between them may be gigabytes.
        head = engine.download(buffer.base, (buffer.guard,), np.uint8)
        tail = engine.download(engine.offset(buffer.base, buffer.guard + buffer.nbytes),
                               (padded - buffer.nbytes + buffer.guard,), np.uint8)
        size = itemsizes[name]
        before = np.flatnonzero(head != PATTERN)
        if before.size:
            elements = -(-(buffer.guard - int(before[0])) // size)
            problems.append(f"wrote {elements} element(s) before the start of {name}")
        # The slack up to the next 256 bytes counts as past the end too.
        after = np.flatnonzero(tail != PATTERN)
        if after.size:
            elements = -(-(int(after[-1]) + 1) // size)
            problems.append(f"wrote {elements} element(s) past the end of {name}")
    return problems
