"""A benchmark's inputs kept on the GPU: each launch's buffers are refilled by a device copy.
(The same copies, and those of exact expected results, are what checks compare on the GPU.)

Every variant, vendor row and recheck of a benchmark starts from the same inputs (the
seed's, and the recheck's second set). Uploading them again for each launch moves the same
bytes over the host link again and again: at 8192² float32 that is 268 MB a time, several
times a variant. Instead each input array is uploaded once into a buffer of its own and
copied from there on the GPU (terabytes per second). Each launch still gets fresh inputs
and poisoned outputs; small arrays are uploaded directly (no gain), and the copies kept are
capped at a share of the GPU's memory, beyond which inputs are uploaded as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from cudabench.engines.protocol import Engine
from cudabench.errors import CudabenchError

MIN_BYTES = 1 << 20  # below this an upload costs no more than a copy
MEMORY_SHARE = 8  # keep at most 1/8 of the GPU's memory in resident inputs


class ResidentInputs:
    """Device copies of host input arrays, by array (the array is held, so its id stays
    its own while the copy lives)."""

    def __init__(self) -> None:
        self._copies: dict[int, tuple[np.ndarray, Any]] = {}
        self._bytes = 0

    def put(self, engine: Engine, buffer: Any, array: np.ndarray) -> None:
        """Fill buffer with array's bytes: a device copy of the resident copy, made on
        first use, or an upload."""
        resident = self.device_copy(engine, array)
        if resident is None:
            engine.upload(buffer, array)
        else:
            engine.copy(buffer, resident, array.nbytes)

    def device_copy(self, engine: Engine, array: np.ndarray) -> Any | None:
        """Return the device buffer holding array's bytes, uploaded on first use; None for
        an array too small to be worth it or beyond the budget. The copy is never written
        to: what the checks compare against (measure/device_checks.py)."""
        entry = self._copies.get(id(array))
        if entry is None or entry[0] is not array:
            entry = self._keep(engine, array)
        return None if entry is None else entry[1]

    def _keep(self, engine: Engine, array: np.ndarray) -> tuple[np.ndarray, Any] | None:
        """Upload array into a buffer of its own, if it is worth it and fits the budget."""
        budget = engine.info.memory_bytes // MEMORY_SHARE
        if array.nbytes < MIN_BYTES or self._bytes + array.nbytes > budget:
            return None
        try:
            device = engine.allocate(array.nbytes)
        except CudabenchError:  # out of memory: the variants need it more
            return None
        engine.upload(device, array)
        self._copies[id(array)] = (array, device)
        self._bytes += array.nbytes
        return array, device

    def holds_any(self) -> bool:
        """Return whether any copy is kept (memory that release would give back)."""
        return bool(self._copies)

    def release(self, engine: Engine) -> None:
        """Free every resident copy (the benchmark's rows are done)."""
        for _array, device in self._copies.values():
            engine.free(device)
        self._copies.clear()
        self._bytes = 0


RESIDENT = ResidentInputs()  # this worker process's
