"""An op folder's helper modules (`_ref.py`, a `_helpers/` package), imported per folder.

Python keeps one module a name, so with an op file's folder on the import path two folders'
`_ref.py` would be one module: the first imported. Two copies of one op folder (what
`cudabench ab OLD NEW` compares) could then not run in one process. Instead each op folder
is a package of its own, `cudabench.ops.user._folder_<digest>`, and the op file, and the
helpers it imports, get an `__import__` (through their builtins) that turns an import of a
module beside the op file (`import _ref`, `from _helpers.body import f`, `from . import
_ref`, at import time or inside a function) into an import of the folder package's module:
each folder's own, as a script gets the modules beside it. Every other import is Python's.
A process the op's code starts finds these modules by name too (cudabench.ops.user).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

USER_OPS_PACKAGE = "cudabench.ops.user"  # where op files and their helpers live (sys.modules)
INHERITED = "CUDABENCH_OP_FILES"  # the op files loaded, for the processes op code starts
MAX_INHERITED_CHARS = 64 * 1024  # Linux takes 128 KiB an environment string
_FOLDERS: dict[str, tuple[Path, dict[str, Any]]] = {}  # package -> (folder, its builtins)
_OP_FILES: dict[str, Path] = {}  # an op file's module name -> the file (its local copy)
_python_import = builtins.__import__


def folder_builtins(folder: Path) -> dict[str, Any]:
    """Return the builtins for code of folder (an op file, its helpers): Python's, with an
    `__import__` that finds the modules beside folder's op files in folder's package."""
    importlib.import_module(USER_OPS_PACKAGE)  # Python's import looks the top one up
    package = _package_of(folder)
    if package not in _FOLDERS or package not in sys.modules:
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


def _package_of(folder: Path) -> str:
    """Return the name of folder's package (its helpers' parent): one per folder's path."""
    return f"{USER_OPS_PACKAGE}._folder_{hashlib.sha1(str(folder).encode()).hexdigest()[:12]}"


def loaded_op_file(name: str, file: Path) -> None:
    """Note that the op file `file` is the module `name`, in this process's environment
    too: a process its code starts (a Pool's, spawned) unpickles a function of the op file
    or of a helper beside it by that name, and finds it (adopt_inherited). And in the
    cache folder, for a process started from one that began before this file loaded
    (forkserver's: its environment is the server's, taken when the server started)."""
    _OP_FILES[name] = file
    _register(name, file)
    _register(_package_of(file.parent), file.parent)
    text = json.dumps({key: str(path) for key, path in _OP_FILES.items()})
    if len(text) <= MAX_INHERITED_CHARS:  # beyond, every later exec (nvcc) failed: E2BIG
        os.environ[INHERITED] = text


def adopt_inherited() -> None:
    """Take the op files of the process that started this one (loaded_op_file): their
    modules and their folders' helpers import by name here too (the finder loads them)."""
    if _FINDER not in sys.meta_path:  # the register is asked for names the variable lacks
        sys.meta_path.insert(0, _FINDER)
    try:
        inherited = json.loads(os.environ.get(INHERITED, "{}"))
    except ValueError:
        return  # not cudabench's: nothing to adopt
    if not isinstance(inherited, dict):
        return
    for name, file in inherited.items():
        if isinstance(name, str) and isinstance(file, str) and name not in _OP_FILES:
            _OP_FILES[name] = Path(file)
            folder_builtins(Path(file).parent)


def _registered_at() -> Path | None:
    from cudabench.common.cache_dir import cache_root  # here: spawned processes rarely ask

    root = cache_root()
    return None if root is None else root / "op-modules"


def _register(name: str, place: Path) -> None:
    """Write down where the module name (an op file's, a folder's package) comes from."""
    folder = _registered_at()
    if folder is None:  # caching off: the environment alone tells processes started later
        return
    entry, text = folder / name, str(place)
    try:
        if entry.is_file() and entry.read_text(encoding="utf-8") == text:
            return
        folder.mkdir(parents=True, exist_ok=True)
        part = folder / f"{name}.{os.getpid()}.part"
        part.write_text(text, encoding="utf-8")
        os.replace(part, entry)
    except OSError:
        pass  # a cache that cannot be written: the environment still tells spawned ones


def _adopt_registered(name: str) -> bool:
    """Take the module name (an op file's, a folder's package) from the cache folder's
    register, where this process's environment did not name it; whether it was there."""
    folder = _registered_at()
    try:
        text = (folder / name).read_text(encoding="utf-8") if folder is not None else ""
    except (OSError, ValueError):
        return False
    place = Path(text)
    if not text or not place.is_absolute():
        return False
    if name == _package_of(place):  # a folder's package
        folder_builtins(place)
    else:
        _OP_FILES[name] = place
        folder_builtins(place.parent)
    return True


def refresh_builtins() -> None:
    """Bring the op folders' builtins up to date with Python's (`gettext.install()`'s `_`,
    a test's patched `open`): each is a copy with its own `__import__`, taken when the
    folder's first op file loaded; called before op code runs (ops.base.user_code)."""
    now = vars(builtins)
    for _, names in _FOLDERS.values():
        for gone in [name for name in names if name not in now and name != "__import__"]:
            del names[gone]  # a patch undone (monkeypatch.undo)
        importer = names["__import__"]
        names.update(now)
        names["__import__"] = importer


def forget_folders() -> None:
    """Forget the folders, and every module of USER_OPS_PACKAGE (op files, their folders'
    packages and helpers): the next import reads each file again."""
    for name in [name for name in sys.modules if name.startswith(f"{USER_OPS_PACKAGE}.")]:
        del sys.modules[name]
    _FOLDERS.clear()
    _BESIDE.clear()
    _OP_FILES.clear()
    os.environ.pop(INHERITED, None)


_BESIDE: dict[tuple[Path, str], bool] = {}  # (folder, name) -> beside(): asked at every import


def beside(folder: Path, name: str) -> bool:
    """Whether an op file's import of the top-level module name is of one in its folder.

    A name with a leading `_` (a helper) is the folder's wherever Python has one too
    (`_random.py`), as a script's are; any other (a sibling op file, `numpy/`) only where
    Python finds none: `copy.py`, an op beside, does not hide the standard `copy`. A module
    in folder is a file of any of Python's suffixes (`.py`, `.pyc`, an extension module), a
    package with an `__init__.py`, or a folder named with `_` (a package without one); a
    kernels subfolder (`softmax/`) is none. Kept until forget_folders: every import
    statement of op code asks."""
    known = _BESIDE.get((folder, name))
    if known is None:
        base = folder / name
        here = name.isidentifier() and (
            any((folder / f"{name}{suffix}").is_file()
                for suffix in importlib.machinery.all_suffixes())
            or (base / "__init__.py").is_file() or (name.startswith("_") and base.is_dir()))
        known = _BESIDE[(folder, name)] = here and (
            name.startswith("_") or _python_finds(name) is None)
    return known


def _python_finds(name: str) -> object:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _importer(folder: Path, package: str) -> Any:
    def folder_import(name: str, globals: Any = None, locals: Any = None,
                      fromlist: Sequence[str] | None = (), level: int = 0) -> ModuleType:
        here = globals.get("__package__") if level and globals else None
        if isinstance(here, str) and here.startswith(USER_OPS_PACKAGE):
            # an op file's module sits in the top package, a helper's in its folder's:
            # depth 0, 1, 2 in a helper package
            depth = here.count(".") - USER_OPS_PACKAGE.count(".")
            if level > max(depth, 1):  # above the folder: cudabench's own modules
                raise ImportError(f"attempted relative import beyond the op's folder "
                                  f"({folder})")
            if depth == 0:  # `from . import _ref` in an op file: as `import _ref` gives
                return _python_import(f"{package}.{name}" if name else package, globals,
                                      locals, fromlist, 0)
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
        if fullname in _OP_FILES:  # an op file, imported by name (in a process it started)
            file = _OP_FILES[fullname]
            return importlib.util.spec_from_file_location(
                fullname, file, loader=_FolderSourceLoader(fullname, str(file),
                                                           folder_builtins(file.parent)))
        head, _, rest = fullname.partition(f"{USER_OPS_PACKAGE}.")
        package = f"{USER_OPS_PACKAGE}.{rest.partition('.')[0]}"
        if head or not rest:
            return None
        if fullname == package and package not in _FOLDERS and _adopt_registered(fullname):
            if fullname in _OP_FILES:  # an op file that loaded after this process began
                return self.find_spec(fullname, path, target)
            # a folder's package, made by folder_builtins: Python's import takes it as is
            return importlib.util.spec_from_loader(fullname, _Made(), is_package=True)
        if package not in _FOLDERS or fullname == package:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        names = _FOLDERS[package][1]
        # a .py or a bytecode-only .pyc: its code runs with the folder's builtins (an
        # extension module's C code imports as Python does: it finds no helper by name)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _FolderSourceLoader(fullname, spec.loader.path, names)
        elif spec is not None and isinstance(spec.loader,
                                             importlib.machinery.SourcelessFileLoader):
            spec.loader = _FolderBytecodeLoader(fullname, spec.loader.path, names)
        return spec


class _Made(importlib.abc.Loader):
    """The loader of a module already made (a folder's package): it is used as it is."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return sys.modules[spec.name]

    def exec_module(self, module: ModuleType) -> None:
        pass


class _WithBuiltins:
    """A loader of Python's that first gives the module its folder's builtins."""

    def __init__(self, fullname: str, path: str, names: dict[str, Any]) -> None:
        super().__init__(fullname, path)  # type: ignore[call-arg]
        self._builtins = names

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = self._builtins
        super().exec_module(module)  # type: ignore[misc]


# (typeshed's SourceLoader and InspectLoader disagree on source_to_code: no fault of ours)
class _FolderSourceLoader(  # type: ignore[misc]
        _WithBuiltins, importlib.machinery.SourceFileLoader):
    """A .py file's loader, with the folder's builtins."""


class _FolderBytecodeLoader(_WithBuiltins, importlib.machinery.SourcelessFileLoader):
    """A bytecode-only .pyc's loader, with the folder's builtins."""


_FINDER = _FolderFinder()

# the names these modules have in sys.modules, as a user wrote them: `_ref`, `myop`
_FOLDER_PREFIX = re.compile(re.escape(USER_OPS_PACKAGE) + r"\._folder_[0-9a-f]{12}\.")
_OP_MODULE = re.compile(re.escape(USER_OPS_PACKAGE) + r"\.(\w+?)_[0-9a-f]{12}\b")


def plain_names(text: str) -> str:
    """Return text (an exception's) with the modules of op folders named as their files
    name them: "No module named '_helpers.shape'", not the folder package's name."""
    return _OP_MODULE.sub(r"\1", _FOLDER_PREFIX.sub("", text))


def error_text(exc: BaseException, skip: str | None = None) -> str:
    """Return "Type: message" of an exception op code raised, its modules named as their
    files name them, with where in a helper it was raised (not in skip, the op file the
    message names already), and a hint where importlib looked for a helper by name."""
    text = f"{type(exc).__name__}: {plain_names(str(exc))}"
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    by_importlib = any(frame.name == "import_module" and "importlib" in frame.filename
                       for frame in traceback.extract_tb(exc.__traceback__))
    if missing and by_importlib and any(beside(folder, missing.partition(".")[0])
                                        for folder, _ in _FOLDERS.values()):
        text += (f" ({missing} is beside the op file: an import statement finds it, "
                 "`import " + missing + "`; importlib does not look beside op files)")
    return text + _raised_at(exc, skip)


def _raised_at(exc: BaseException, skip: str | None) -> str:
    """Return " (at FILE:LINE)" for the innermost frame of exc's traceback in an op
    folder's code other than the file skip, else "": a mistake in `_ref.py` is found
    there, not in the op file that called it."""
    folders = [folder for folder, _ in _FOLDERS.values()]
    own = Path(skip).resolve() if skip else None
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        file = Path(frame.filename).resolve()
        if file != own and any(file.is_relative_to(folder) for folder in folders):
            return f" (at {frame.filename}:{frame.lineno})"
    return ""
