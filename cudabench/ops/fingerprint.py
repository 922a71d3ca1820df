"""A hash of the code that decides an op's results, for the caches keyed on it.

An op's inputs, reference, check and arguments live in its class, the classes it derives
from, the file that declared it, and the ops package's shared helpers (inputs, types,
checks): a change to any of them must miss the CPU-reference and tuning caches. Each file
is hashed by its bytes, read again whenever its size or modification time changes, so a
long-lived process (a kept worker, a pytest session) sees an edited op file too.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from pathlib import Path

from cudabench import __version__

_PACKAGE = Path(__file__).resolve().parent  # cudabench/ops
_FILES: dict[str, tuple[tuple[int, int], str]] = {}  # path -> ((size, mtime), hash)


def op_fingerprint(op: object) -> str:
    """Return the hash of cudabench's version and every file of op's code."""
    files = {str(path) for path in _PACKAGE.glob("*.py")}
    for cls in type(op).__mro__:
        module = sys.modules.get(cls.__module__)
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
    digest = hashlib.sha256(__version__.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + _file_hash(name).encode())
    return digest.hexdigest()


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
