"""A hash of the code that decides an op's results, for the caches keyed on it.

An op's inputs, reference, check and arguments live in its class, the classes it derives
from, the file that declared it, the modules that file imports from its own folder (a
`_ref.py` beside it, a package of helpers, a bytecode-only `.pyc` or an extension module:
compiled ones by their bytes), the modules of an installed op's package that its module
imports (`from my_package import reference`), and the ops package's shared helpers (inputs,
types, checks): a change to any of them must miss the CPU-reference and tuning caches. Each file
is hashed by its bytes, read again whenever its size or modification time changes, so a
long-lived process (a kept worker, a pytest session) sees an edited op file too.
"""

from __future__ import annotations

import ast
import dis
import hashlib
import importlib.machinery
import importlib.util
import inspect
import marshal
import os
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType

from cudabench import __version__

_PACKAGE = Path(__file__).resolve().parent  # cudabench/ops
_OWN_CODE = _PACKAGE.parent  # cudabench: its version is in the hash already
_STANDARD_LIBRARY = {Path(sysconfig.get_paths()[key]).resolve()
                     for key in ("stdlib", "platstdlib")}
_FILES: dict[str, tuple[tuple[int, int], str]] = {}  # path -> ((size, mtime), hash)
# (file, start, scope) -> (its hash, its imports)
_IMPORTS: dict[tuple[Path, Path, Path], tuple[str, list[Path]]] = {}


def op_fingerprint(op: object) -> str:
    """Return the hash of cudabench's version and every file of op's code."""
    files = {str(path) for path in _PACKAGE.glob("*.py")}
    modules: list[ModuleType] = []
    for cls in type(op).__mro__:
        module = sys.modules.get(cls.__module__)
        if module is not None:
            modules.append(module)
        source = getattr(module, "__file__", None)
        if source is None:
            try:
                source = inspect.getsourcefile(cls)
            except TypeError:  # a built-in class (object): no file
                continue
        if source:
            files.add(str(Path(source).resolve()))
    origin = getattr(op, "origin", None)
    if isinstance(origin, str) and origin.endswith(".py"):
        files.add(str(Path(origin).resolve()))  # an op made from a class imported elsewhere
    files |= _local_imports(files, modules)
    # the op's class's and its entry point's modules: a base class's library (an ABC
    # mixin) is not followed
    own = [sys.modules.get(name) for name in {type(op).__module__, str(origin or "")}]
    package_files, package_modules = _package_imports([m for m in own if m is not None])
    files |= package_files
    _refuse_stale(modules + package_modules)
    _refuse_rebuilt(files)
    digest = hashlib.sha256(__version__.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + _file_hash(name).encode())
    return digest.hexdigest()


_LOADED = "__cudabench_loaded_stat__"  # a module's file's (size, mtime) when first seen


def _refuse_stale(modules: list[ModuleType]) -> None:
    """Refuse an op whose code comes from a module that changed on disk since this process
    first saw it loaded (an entry-point op or its package's helpers, a base class on
    PYTHONPATH, in a kept worker: only the op files of --kernels-dir are loaded afresh per
    command). Its code is the old one: its verdicts would be, and the caches keyed on the
    new bytes would keep them."""
    from cudabench.errors import OpFileError

    for module in modules:
        file = getattr(module, "__file__", None)
        if not file or not _others_code(Path(file).resolve()):
            continue
        try:
            info = os.stat(file)
        except OSError:
            continue
        now = (info.st_size, info.st_mtime_ns)
        # kept on the module object: one imported afresh (a --kernels-dir op file, each
        # command) starts without it
        if vars(module).setdefault(_LOADED, now) != now:
            raise OpFileError(f"{file}: changed since this process loaded it, which would "
                              "run the old code: end the kept workers (`cudabench workers "
                              "--stop`), or the Python session, and run again")


_EXTENSIONS: dict[str, tuple[int, int]] = {}  # an extension module's (size, mtime), first seen


def _refuse_rebuilt(files: set[str]) -> None:
    """Refuse an op whose extension module (a compiled helper) was rebuilt since this
    process first saw it: Python loads one once a process (a kept worker, a pytest
    session), so the old build would run under the new bytes' key, and the caches keep
    its verdicts."""
    from cudabench.errors import OpFileError

    for name in files:
        if not name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            continue
        try:
            info = os.stat(name)
        except OSError:
            continue
        if _EXTENSIONS.setdefault(name, (info.st_size, info.st_mtime_ns)) != (
                info.st_size, info.st_mtime_ns):
            raise OpFileError(f"{name}: rebuilt since this process first saw it, and Python "
                              "loads an extension module once a process: end the kept "
                              "workers (`cudabench workers --stop`), or the Python session, "
                              "and run again")


def _package_imports(modules: list[ModuleType]) -> tuple[set[str], list[ModuleType]]:
    """Return the files of the package of an installed op (an entry point's, one on
    PYTHONPATH) that its modules import, followed import by import (a plugin's `from
    my_package import reference`), and those of them loaded here. Its version would not
    do: `pip install -e` keeps it while the files change. Bounded to the op's own package:
    its dependencies (NumPy) have their versions, and are not followed."""
    files: set[str] = set()
    loaded: list[ModuleType] = []
    for module in modules:
        name, file = module.__name__, getattr(module, "__file__", None)
        top = name.partition(".")[0]
        path = Path(file).resolve() if isinstance(file, str) else None
        if path is None or top == "cudabench" or not _others_code(path):
            continue  # cudabench's own (its version), an op file of a folder (_local_imports)
        depth = name.count(".") + (path.stem == "__init__")
        if not depth:
            continue  # a module of no package: nothing of its own beyond itself
        root = path.parents[depth]  # where Python found the package (on sys.path)
        for found in {path, *_followed(path, root, root / top, lambda _: True)}:
            files.add(str(found))
            parts = found.relative_to(root).with_name(found.name.partition(".")[0]).parts
            dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            helper = sys.modules.get(dotted)
            if helper is not None and helper is not module:
                loaded.append(helper)
    return files, loaded


def _local_imports(files: set[str], modules: list[ModuleType]) -> set[str]:
    """Return the files of the modules that a user's op files import from their own folders:
    those their import statements name (local_imports), and those the op's modules hold
    once loaded (wherever the import found them, the folder's subfolders too)."""
    found: set[str] = set()
    for name in files:
        if is_users_code(Path(name)):
            found |= {str(path) for path in local_imports(Path(name), compiled=True)}
    for module in modules:
        file = getattr(module, "__file__", None)
        if not file or not is_users_code(Path(file).resolve()):
            continue  # cudabench's own ops (its version), an installed package's (below)
        folder = Path(file).resolve().parent
        for value in vars(module).values():
            held = value if isinstance(value, ModuleType) else \
                sys.modules.get(getattr(value, "__module__", None) or "")
            source = getattr(held, "__file__", None)
            if isinstance(source, str):  # a .py, a .pyc, an extension module: its bytes
                path = Path(source).resolve()
                if is_users_code(path) and path.is_relative_to(folder):
                    # its imports are the op folder's (`import _ref` in _helpers/body.py)
                    found |= {str(path), *(str(p) for p in local_imports(path, folder,
                                                                         compiled=True))}
    return found - files


def local_imports(path: Path, root: Path | None = None, compiled: bool = False) -> set[Path]:
    """Return the files in root (path's folder by default: an op file's) and its packages
    that path imports, followed import by import: every import statement counts (one
    inside a function too, a relative one in a helper package, one of a bytecode-only
    helper), resolved as the op file's own imports find them (ops/folder_imports.beside: a
    `_` name in the folder; another where Python has no module of that name, which a file
    beside may then shadow no more than it does there: counted all the same, on the safe
    side). compiled: the bytecode-only and extension modules too (hashed; not sources)."""
    root = root.resolve() if root is not None else path.resolve().parent
    found = _followed(path, root, root, is_users_code)
    return found if compiled else {p for p in found if p.suffix == ".py"}


def _followed(path: Path, start: Path, scope: Path, keep: Callable[[Path], bool]
              ) -> set[Path]:
    """Return the files in scope that path imports, import by import, absolute imports
    found from start; keep: which files count (and are followed)."""
    found: set[Path] = set()
    waiting = [path.resolve()]
    while waiting:
        for imported in _imported_from(waiting.pop(), start, scope):
            if imported not in found and keep(imported):
                found.add(imported)
                waiting.append(imported)
    found.discard(path.resolve())
    return found


# (level, module, names): `from ..a import b, c` is (2, "a", ("b", "c")), `import a.b` (0, "a.b")
Statement = tuple[int, str, tuple[str, ...]]


def _imported_from(path: Path, start: Path, scope: Path) -> list[Path]:
    """Return the files under scope that path's imports name, absolute ones found from
    start (kept while path's hash is unchanged: a sweep asks for the same op's key at every
    point). A module is a file of any of Python's suffixes: a `_ref.py`, a bytecode-only
    `_ref.pyc` or an extension module is what the import loads."""
    digest = _file_hash(str(path))
    kept = _IMPORTS.get((path, start, scope))
    if kept is not None and kept[0] == digest:
        return kept[1]
    named: list[tuple[Path, str]] = []  # (the folder the name is found from, the name)
    for level, module, names in _statements(path):
        if level > len(path.parents):  # above the file system's root: no file
            continue
        # relative (`from .body import f` in _helpers/__init__.py): from path's package
        folder = start if not level else path.parents[level - 1]
        named += [(folder, module)] if module else []
        named += [(folder, f"{module}.{name}" if module else name) for name in names]
    suffixes = importlib.machinery.all_suffixes()
    paths = []
    for folder, dotted in named:
        parts = dotted.split(".")
        for depth in range(1, len(parts) + 1):
            base = folder.joinpath(*parts[:depth])
            paths += [p for p in (*(base.parent / f"{base.name}{suffix}" for suffix in suffixes),
                                  *(base / f"__init__{suffix}" for suffix in suffixes))
                      if p.is_file() and p.resolve().is_relative_to(scope)]
    _IMPORTS[(path, start, scope)] = (digest, [p.resolve() for p in paths])
    return _IMPORTS[(path, start, scope)][1]


def _statements(path: Path) -> list[Statement]:
    """Return path's import statements: from its source, or from its code where it is a
    bytecode-only module (an extension module's C code imports nothing we can see)."""
    if path.suffix == ".pyc":
        return _bytecode_statements(path)
    if path.suffix != ".py":
        return []
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    found: list[Statement] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "",
                          tuple(alias.name for alias in node.names)))
    return found


def _bytecode_statements(path: Path) -> list[Statement]:
    """Return the import statements of a .pyc's code: each IMPORT_NAME, after the constants
    of its level and its names (`from x import a` compiles so in every CPython 3)."""
    try:
        data = path.read_bytes()
        if data[:4] != importlib.util.MAGIC_NUMBER:  # another Python's: it cannot load
            return []
        code = marshal.loads(data[16:])
    except (OSError, ValueError, EOFError, TypeError):
        return []
    found: list[Statement] = []
    codes = [code]
    while codes:
        current = codes.pop()
        codes += [const for const in current.co_consts if isinstance(const, CodeType)]
        steps = list(dis.get_instructions(current))
        for index, step in enumerate(steps):
            if step.opname == "IMPORT_NAME" and index >= 2:
                level, names = steps[index - 2].argval, steps[index - 1].argval
                found.append((level if isinstance(level, int) else 0, step.argval,
                              tuple(names) if isinstance(names, tuple) else ()))
    return found


def _others_code(path: Path) -> bool:
    """Whether path is neither cudabench's own code nor Python's standard library."""
    return not path.is_relative_to(_OWN_CODE) and not any(
        path.is_relative_to(library) for library in _STANDARD_LIBRARY)


def is_users_code(path: Path) -> bool:
    """Whether path is a user's code: not cudabench's own, nor an installed package's, nor
    Python's standard library (`_random`, `_json` are its modules)."""
    return not path.is_relative_to(_OWN_CODE) and not any(
        part in ("site-packages", "dist-packages") for part in path.parts) and not any(
        path.is_relative_to(library) for library in _STANDARD_LIBRARY)


def _file_hash(path: str) -> str:
    """Return the hash of a file's bytes (kept while its size and time are unchanged)."""
    try:
        info = os.stat(path)
    except OSError:
        return "absent"
    stamp = (info.st_size, info.st_mtime_ns)
    kept = _FILES.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    try:
        value = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
    _FILES[path] = (stamp, value)
    return value
