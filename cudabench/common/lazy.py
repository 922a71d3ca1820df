"""Modules imported on first use: `cudabench --help` and `cudabench list` stay light.

NumPy takes about 0.1 s to import; commands that never touch an array (help, list, the
catalog) should not pay it. Modules write

    if TYPE_CHECKING:
        import numpy as np
    else:
        from cudabench.common.lazy import numpy as np

and use `np` as usual: the first attribute looked up imports NumPy.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """A stand-in that imports the named module on its first attribute access."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            with signals_held():
                self._module = importlib.import_module(self.__name__)
        return getattr(self._module, attribute)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends, then act on them (also while a stopped
    run saves its rows, cli/stopped.py: a second Ctrl-C there lost them all): a stop inside
    NumPy's import left it half made, and NumPy cannot be imported twice in a process, so
    the stop's own handling (a results file's rows, their statistics) failed with "cannot
    load module more than once" (exit 4). Their handlers are swapped for ones that note
    the signal (a mask would hold it in this thread only: another thread takes it, and
    Python still runs the handler here). An import takes a tenth of a second: the stop is
    only that late. Only the main thread may set handlers; elsewhere it holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    heard: list[int] = []
    saved: dict[signal.Signals, Any] = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(number)
        if handler in (signal.SIG_IGN, None):  # ignored, or not set from Python: left
            continue
        saved[number] = handler
        signal.signal(number, lambda received, frame: heard.append(received))
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        # SIGTERM first: its handler's stop (exit 143) is the one a CI's cancel (SIGINT,
        # then SIGTERM) must end with, and the first handler to raise ends the loop
        for received in sorted(set(heard), key=lambda number: number != signal.SIGTERM):
            signal.raise_signal(received)  # its own handler, now the import is whole


numpy = LazyModule("numpy")
