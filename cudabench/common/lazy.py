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

import importlib
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """A stand-in that imports the named module on its first attribute access."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self.__name__)
        return getattr(self._module, attribute)


numpy = LazyModule("numpy")
