"""An op folder's helper modules (`_ref.py`, a `_helpers/` package), imported per folder.

Python keeps one module a name, so with an op file's folder on the import path two folders'
`_ref.py` would be one module: the first imported. Two copies of one op folder (what
`cudabench ab OLD NEW` compares) could then not run in one process. Instead each op folder
is a package of its own, `cudabench_user_ops._folder_<digest>`, and the op file, and the
helpers it imports, get an `__import__` (through their builtins) that turns an import of a
module beside the op file (`import _ref`, `from _helpers.body import f`, at import time or
inside a function) into an import of the folder package's module: each folder's own, as a
script gets the modules beside it. Every other import is Python's.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

USER_OPS_PACKAGE = "cudabench_user_ops"  # where op files and their helpers live (sys.modules)
_FOLDERS: dict[str, tuple[Path, dict[str, Any]]] = {}  # package -> (folder, its builtins)
_python_import = builtins.__import__


def folder_builtins(folder: Path) -> dict[str, Any]:
    """Return the builtins for code of folder (an op file, its helpers): Python's, with an
    `__import__` that finds the modules beside folder's op files in folder's package."""
    package = f"{USER_OPS_PACKAGE}._folder_{hashlib.sha1(str(folder).encode()).hexdigest()[:12]}"
    if package not in _FOLDERS or package not in sys.modules:
        if USER_OPS_PACKAGE not in sys.modules:  # Python's import looks the top one up
            root = ModuleType(USER_OPS_PACKAGE, "the op files of the user's folders")
            root.__path__ = []
            sys.modules[USER_OPS_PACKAGE] = root
        module = ModuleType(package, f"the helper modules of the op files in {folder}")
        module.__path__ = [str(folder)]
        module.__package__ = package
        sys.modules[package] = module
        names = dict(vars(builtins))
        names["__import__"] = _importer(folder, package)
        _FOLDERS[package] = (folder, names)
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
    return _FOLDERS[package][1]


def forget_folders() -> None:
    """Forget the folders (their packages, with sys.modules' USER_OPS_PACKAGE entries)."""
    _FOLDERS.clear()


def beside(folder: Path, name: str) -> bool:
    """Whether the top-level module name is one in folder: a `name.py`, a package with an
    `__init__.py`, or a folder named with `_` (a helper package without one). A kernels
    subfolder (`softmax/`) is none: an op file's `import softmax` is not its kernels."""
    base = folder / name
    return name.isidentifier() and (base.with_suffix(".py").is_file() or (
        base / "__init__.py").is_file() or (name.startswith("_") and base.is_dir()))


def _importer(folder: Path, package: str) -> Any:
    def folder_import(name: str, globals: Any = None, locals: Any = None,
                      fromlist: Sequence[str] | None = (), level: int = 0) -> ModuleType:
        top = name.partition(".")[0]
        if level or not beside(folder, top):
            return _python_import(name, globals, locals, fromlist, level)
        module = _python_import(f"{package}.{name}", globals, locals, fromlist, 0)
        # `import _helpers.body` binds the top module, as Python's would: the folder's
        return module if fromlist else sys.modules[f"{package}.{top}"]

    return folder_import


class _FolderFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of a folder package as Python's path finder does, loading each
    with the folder's builtins: its own imports of the folder's helpers stay the folder's."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        package = ".".join(fullname.split(".")[:2])
        if package not in _FOLDERS or fullname == package:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _FolderLoader(fullname, spec.loader.path, _FOLDERS[package][1])
        return spec


class _FolderLoader(importlib.machinery.SourceFileLoader):
    """Python's loader of a .py file, which first gives the module its folder's builtins."""

    def __init__(self, fullname: str, path: str, names: dict[str, Any]) -> None:
        super().__init__(fullname, path)
        self._builtins = names

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = self._builtins
        super().exec_module(module)


_FINDER = _FolderFinder()
