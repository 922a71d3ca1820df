"""Where a round's buffers land (--rounds): a spacer allocation moves them.

A memory-bound kernel's time depends on where its buffers sit in memory: on an H100 the
same transpose beside the same copy gave ratios of 0.966 to 0.974 over ten placements of
its buffers (docs/kernels.md, alloc_spread.py), while each row's own spread said ±0.1-0.5%.
Freed buffers are handed out again at the same addresses, so rounds alone would measure one
placement N times. Before each later round a spacer of a size of its own is allocated and
held through the round: the round's buffers are allocated after it, elsewhere, and every
row of the round shares that placement, as the rows of one round share its moment.
"""

from __future__ import annotations

from typing import Any

from cudabench.engines.protocol import Engine
from cudabench.errors import CudabenchError

UNIT = 2 << 20  # 2 MiB: the granularity large allocations are placed at
PAGE = 4096
SIZES = 61  # spacer sizes cycle through 1..61 units, a prime: no two nearby rounds alike
MEMORY_SHARE = 256  # a spacer takes at most this share of the GPU's memory


def spacer_bytes(round_index: int, memory_bytes: int) -> int:
    """Return the spacer held through a round: none for the first, then 1 to 61 units, a
    different size for each of the next 61 rounds. A unit is 2 MiB (2-122 MiB on any GPU of
    16 GiB or more), smaller on a smaller GPU, so that a spacer takes at most 1/256 of its
    memory."""
    if round_index <= 0:
        return 0
    unit = min(UNIT, max(PAGE, memory_bytes // (MEMORY_SHARE * SIZES) // PAGE * PAGE))
    return (1 + (round_index * 37) % SIZES) * unit  # 37 is coprime to 61: a permutation


class Spacer:
    """The spacer of the round being run, if any (one per worker process)."""

    def __init__(self) -> None:
        self._buffer: Any = None
        self._round = 0

    def move(self, engine: Engine, round_index: int) -> None:
        """Hold round_index's spacer (none for round 0), freeing the last round's first. A
        spacer that does not fit is left out: the round runs where memory allows."""
        if round_index == self._round:
            return
        self.release(engine)
        self._round = round_index
        size = spacer_bytes(round_index, engine.info.memory_bytes)
        if size:
            try:
                self._buffer = engine.allocate(size)
            except CudabenchError:  # out of memory: the rows need it more
                self._buffer = None

    def release(self, engine: Engine) -> None:
        """Free the spacer (the jobs are done, or the next round has its own)."""
        if self._buffer is not None:
            engine.free(self._buffer)
        self._buffer = None
        self._round = 0
