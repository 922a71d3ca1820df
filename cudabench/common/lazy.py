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
            with _signals_held():
                self._module = importlib.import_module(self.__name__)
        return getattr(self._module, attribute)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends (in the main thread, where Python runs
    their handlers): a stop inside NumPy's import left it half made, and NumPy cannot be
    imported twice in a process, so the stop's own handling (a results file's rows, their
    statistics) failed with "cannot load module more than once" (exit 4). An import takes
    a tenth of a second: the stop is only that late."""
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


numpy = LazyModule("numpy")
