"""The CPU's cores for host-side work on large arrays: one thread pool, fixed chunks.

NumPy lets go of the GIL inside its loops (a generator's fill, a comparison, a copy), so
the work a benchmark does on inputs of hundreds of MB (drawing them, transposing the
reference, comparing results bit for bit) spreads over threads. Callers cut the work into
chunks of a fixed size, so what they compute never depends on how many cores there are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
MAX_THREADS = 8  # memory-bound loops gain little past this; several GPU workers share a host
PREFIX = "cudabench-cores"  # the pool's threads' names
_pool: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def threads() -> int:
    """Return how many threads the pool gets: the cores this process may use, or the BLAS
    share a multi-GPU run gives each worker (OMP_NUM_THREADS), at most MAX_THREADS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    share = os.environ.get("OMP_NUM_THREADS", "")
    if share.isascii() and share.isdigit() and int(share) > 0:  # "²" is a digit too
        cores = min(cores, int(share))
    return max(1, min(MAX_THREADS, cores))


def in_parallel(function: Callable[[int], T], count: int) -> list[T]:
    """Return [function(0), ..., function(count - 1)], computed on the pool's threads."""
    global _pool
    if count <= 1 or threading.current_thread().name.startswith(PREFIX):
        # Called from the pool's own thread: waiting on the pool could deadlock it.
        return [function(index) for index in range(count)]
    with _LOCK:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=threads(), thread_name_prefix=PREFIX)
        pool = _pool
    return list(pool.map(function, range(count)))


def _forget_pool() -> None:
    """A forked child has none of the parent's threads: it makes a pool of its own."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)
