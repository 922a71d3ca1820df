"""Compile ahead: every cubin of a run started at once, as many nvcc processes at a time as
the CPU has cores, while the first benchmarks are measured.

Threads drive the nvcc processes (each waits on its own; the compiling is done outside
Python). A caller asks for its own cubin with result(): done, it is there; being built,
it waits for that one build; still queued behind others, it is built at once in the
caller's thread, so a job never waits for another's compile. close() stops what is left
(nvcc and the processes it started), for a worker that ends early.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from cudabench.engines.compiler import CubinBuild, CubinRequest, build, kill


def cpu_count() -> int:
    """Return how many cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class CompilePool:
    """Cubins built in the background, in the order asked for."""

    def __init__(self, nvcc: str | None = None, workers: int | None = None) -> None:
        self.nvcc = nvcc
        self.workers = workers or cpu_count()
        self._executor: ThreadPoolExecutor | None = None  # started on first use
        self._futures: dict[CubinRequest, Future[CubinBuild]] = {}
        self._running: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()
        self._closing = False

    def ahead(self, requests: Iterable[CubinRequest]) -> None:
        """Start building each request not asked for before (in order)."""
        with self._lock:
            if self._closing:
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers,
                                                    thread_name_prefix="cudabench-nvcc")
            for request in requests:
                if request not in self._futures:
                    self._futures[request] = self._executor.submit(self._build, request)

    def result(self, request: CubinRequest) -> CubinBuild:
        """Return request's build: the one started ahead, else one made now."""
        with self._lock:
            future = self._futures.get(request)
            if future is not None and future.cancel():  # queued behind others: build now
                future = None
            if future is None:
                future = self._futures[request] = Future()
                mine = True
            else:
                mine = False
        if mine:
            try:
                future.set_result(self._build(request))
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def forget(self) -> None:
        """Forget the builds that are done (their files may have changed since); builds
        still running are kept, and the disk cache answers the rest quickly."""
        with self._lock:
            self._futures = {request: future for request, future in self._futures.items()
                             if not future.done()}

    def close(self) -> None:
        """Stop building: queued builds are dropped and running nvcc processes killed."""
        with self._lock:
            self._closing = True
            running = list(self._running)
            executor, self._executor = self._executor, None
        for process in running:
            kill(process)
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    def _build(self, request: CubinRequest) -> CubinBuild:
        """Build one request, its nvcc process known to close() while it runs."""
        mine: list[subprocess.Popen[str]] = []

        def register(process: subprocess.Popen[str] | None) -> None:
            with self._lock:
                if process is None:
                    self._running.difference_update(mine)
                    return
                mine.append(process)
                self._running.add(process)
                closing = self._closing
            if closing:
                kill(process)

        return build(request, self.nvcc, register, lambda: self._closing)
