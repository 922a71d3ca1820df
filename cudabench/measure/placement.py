"""Where a round's buffers land (--rounds, and ab's rounds): a spacer allocation moves them.

A memory-bound kernel's time depends on where its buffers sit in memory: on an H100 the
same transpose beside the same copy gave ratios of 0.966 to 0.974 over ten placements of
its buffers (docs/kernels.md, alloc_spread.py), while each row's own spread said ±0.1-0.5%.
The spacer moves the buffers' addresses; whether their physical pages move too the driver
does not say, but rounds placed so gave per-round ratios as spread as those placements.
Freed buffers are handed out again at the same addresses, so rounds alone would measure one
placement N times. Before each later round a spacer of a size of its own is allocated and
held through the round: the round's buffers are allocated after it, elsewhere, and every
row of the round shares that placement, as the rows of one round share its moment.
"""

from __future__ import annotations

from typing import Any

from cudabench.engines.protocol import Engine
from cudabench.errors import CudabenchError

STEP = 32 << 20  # on an H100 a 256 MiB buffer moved by whole 32 MiB steps (below)
PAGE = 4096
STEPS = 8  # spacers of 1..8 steps, a different size for each of 8 rounds in a row
MAX_BYTES = STEPS * STEP  # the most a spacer holds (memory.need counts it)
MEMORY_SHARE = 2048  # a step is at most this share of the GPU's memory (a smaller GPU)


def spacer_bytes(round_index: int, memory_bytes: int) -> int:
    """Return the spacer held through a round: none for the first, then 1 to 8 steps of
    32 MiB (less on a GPU under 64 GiB, so that a spacer stays within 1/256 of its memory),
    a different size for each of any 8 rounds in a row.

    Steps, not a finer size: on an H100 (2026-11-27, scripts/gpu-checks/rounds.sh) two
    8192² float32 buffers allocated after spacers of 6 to 102 MiB moved down by the spacer
    rounded up to 32 MiB, and a 6 MiB spacer, which fitted a gap, moved nothing."""
    if round_index <= 0:
        return 0
    step = min(STEP, max(PAGE, memory_bytes // MEMORY_SHARE // PAGE * PAGE))
    return (1 + (round_index * 3) % STEPS) * step  # 3 is coprime to 8: a permutation


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
