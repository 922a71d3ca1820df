"""Compiled kernels kept on disk across runs: one cubin per key, checked before it is used.

The key (compiler.py) hashes what nvcc is given: the source text, every flag (the target,
the -D defines, the include folder) and the toolkit's version. What the source includes is
known only once nvcc has run (its -MD dependency list), so each entry records every file
nvcc read with its content's hash, and an entry whose files changed since is not used: an
edited header recompiles, as an edited kernel does. An entry is written atomically (a
temporary file renamed), carries its cubin's length and hash, and one that cannot be read
whole and intact is compiled again, never trusted. Beyond KEEP_BYTES the least recently
used entries are removed (once per process that compiles). Entries live in
`cache_root()/cubins` (CUDABENCH_CACHE_DIR, else $XDG_CACHE_HOME/cudabench, else
~/.cache/cudabench); CUDABENCH_CACHE_DIR=off keeps nothing.

Several processes may compile the same key at once (a worker per GPU whose benchmarks
share a kernel, a dry run beside a run): a lock file per key makes the second wait for the
first and read its entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from cudabench.common.cache_dir import cache_root

try:
    import fcntl
except ImportError:  # not on POSIX: compiles of one key in two processes both run
    fcntl = None  # type: ignore[assignment]

MAGIC = b"cudabench-cubin 1\n"
KEEP_BYTES = 2 << 30  # the folder is pruned, least recently used first, beyond this
_PRUNED: set[Path] = set()  # folders this process has pruned
LOCK_POLL_S = 0.05
Dependency = tuple[str, int, int, str]  # path, size, mtime_ns, sha256 of its content
_HASHES: dict[tuple[str, int, int, int], str] = {}  # this process's file hashes
_HASHES_LOCK = threading.Lock()


def folder() -> Path | None:
    """Return the folder of compiled kernels, or None when caching is off."""
    root = cache_root()
    return root / "cubins" if root is not None else None


def entry_path(where: Path, key: str) -> Path:
    """Return where key's entry lives (a subfolder per first two hex digits)."""
    return where / key[:2] / f"{key}.cubin"


def read(where: Path, key: str) -> bytes | None:
    """Return key's cubin if its entry is whole and every file it was built from is as it
    was; None when absent, torn, corrupt or stale."""
    try:
        data = entry_path(where, key).read_bytes()
        if not data.startswith(MAGIC):
            return None
        header_end = data.index(b"\n", len(MAGIC))
        header = json.loads(data[len(MAGIC):header_end])
        cubin = data[header_end + 1:]
        if (header.get("key") != key or len(cubin) != header["cubin_bytes"]
                or hashlib.sha256(cubin).hexdigest() != header["cubin_sha256"]):
            return None
        if not all(_unchanged(tuple(dep)) for dep in header["dependencies"]):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        # AttributeError: a header that is JSON but no object (`1`, `null`); RecursionError:
        # one nested too deep for the parser (`[[[[...`)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry_path(where, key))  # recently used: pruned last
    return cubin


def write(where: Path, key: str, cubin: bytes, dependencies: Sequence[Dependency]) -> None:
    """Keep cubin under key with the files it was built from; a full or read-only disk
    costs the cache, not the run."""
    header = {"key": key, "cubin_bytes": len(cubin),
              "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
              "dependencies": [list(dep) for dep in dependencies]}
    path = entry_path(where, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(MAGIC + json.dumps(header).encode() + b"\n" + cubin)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        return
    if where not in _PRUNED:  # once per process, by the first that compiles something
        _PRUNED.add(where)
        prune(where)


def prune(where: Path, keep_bytes: int | None = None) -> None:
    """Remove the least recently used entries (and their lock files) beyond keep_bytes
    (KEEP_BYTES)."""
    limit = KEEP_BYTES if keep_bytes is None else keep_bytes
    entries = []
    for entry in where.glob("*/*.cubin"):
        with contextlib.suppress(OSError):
            stat = entry.stat()
            entries.append((stat.st_mtime_ns, stat.st_size, entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            entry.unlink()
            total -= size
            entry.with_suffix(".lock").unlink(missing_ok=True)


@contextlib.contextmanager
def locked(where: Path, key: str, give_up: Callable[[], bool] = lambda: False
           ) -> Iterator[bool]:
    """Hold key's lock while the block runs; yield False (unlocked) when the lock file
    cannot be made or give_up() says to stop waiting."""
    path = entry_path(where, key).with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        held = fcntl is None
        while not held and not give_up():
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:  # another process compiles this key: wait for it
                time.sleep(LOCK_POLL_S)
            except OSError:  # a file system without locks: compile unlocked
                break
        yield held
    finally:
        os.close(handle)  # closing releases the lock


def dependencies(depfile: str, ignore_under: Path) -> list[str]:
    """Return the files a make-style dependency list (nvcc -MD -MF) names, but those under
    ignore_under (the temporary folder the source was written to)."""
    text = depfile.replace("\\\n", " ").replace("\\ ", "\0")
    _, _, files = text.partition(": ")
    ignored = str(ignore_under)
    return [name.replace("\0", " ") for name in files.split()
            if not name.replace("\0", " ").startswith(ignored)]


def fingerprint(paths: Sequence[str], built_after_ns: int) -> list[Dependency] | None:
    """Return each file's (path, size, mtime_ns, sha256), or None when one is missing or
    was changed after built_after_ns (time.time_ns() when the compile started): the cubin
    may not match it, so it is not kept."""
    found = []
    for name in dict.fromkeys(paths):
        try:
            stat = os.stat(name)
        except OSError:
            return None
        if stat.st_mtime_ns >= built_after_ns:
            return None
        digest = _file_hash(name, stat)
        if digest is None:
            return None
        found.append((name, stat.st_size, stat.st_mtime_ns, digest))
    return found


def _unchanged(dependency: tuple[object, ...]) -> bool:
    """Return whether a recorded file still has its content (its hash, whatever its time)."""
    name, _size, _mtime, digest = dependency
    try:
        stat = os.stat(str(name))
    except OSError:
        return False
    return _file_hash(str(name), stat) == digest


def _file_hash(name: str, stat: os.stat_result) -> str | None:
    """Return the sha256 of a file's content, once per process per version of the file
    (its size, time and inode): a run checks the same toolkit headers for every entry."""
    memo = (name, stat.st_size, stat.st_mtime_ns, stat.st_ino)
    with _HASHES_LOCK:
        known = _HASHES.get(memo)
    if known is not None:
        return known
    try:
        digest = hashlib.sha256(Path(name).read_bytes()).hexdigest()
    except OSError:
        return None
    with _HASHES_LOCK:
        _HASHES[memo] = digest
    return digest
