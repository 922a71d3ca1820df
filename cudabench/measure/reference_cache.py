"""CPU references kept on disk across runs, keyed by everything that determines them.

A float64 reference of a large product takes the CPU seconds, and the same benchmark is run
again and again (a CI suite, a tuning session, `ab`). A reference depends on the op's code
(ops/fingerprint.py: its class's files and the ops package that makes inputs), the shape,
the types, the seed, the check asked for, and NumPy's version (its generators and
arithmetic): the key hashes them all, so a changed seed, shape or op recomputes. Only
references that took a while to make are kept, each written atomically with a hash of its
content; an entry that cannot be read or fails its hash is made again, never trusted
half-read or damaged. CUDABENCH_CACHE_DIR=off keeps nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudabench import __version__
from cudabench.common.cache_dir import cache_root
from cudabench.ops.fingerprint import op_fingerprint
from cudabench.planning.plan import Plan

MIN_SECONDS = 0.05  # quicker to make than to read back: not kept
MAX_BYTES = 2 << 30  # one entry at most
KEEP_BYTES = 8 << 30  # the folder is pruned, oldest first, beyond this


def cached_reference(plan: Plan, seed: int, compute: Callable[[], Any], *extra: object
                     ) -> tuple[Any, float]:
    """Return (the reference for plan's inputs of seed, the CPU's seconds to compute it):
    read from the cache (with the seconds its computation took, which the results report
    as the CPU's time), or computed and kept if it took long enough. extra: anything else
    it depends on (the check asked for)."""
    started = time.perf_counter()
    folder = cache_root()
    path = folder / "references" / f"{reference_key(plan, seed, *extra)}.pickle" \
        if folder is not None else None
    if path is not None:
        kept = _read(path)
        if kept is not None:
            return kept
    value = compute()
    spent = time.perf_counter() - started
    if path is not None and spent >= MIN_SECONDS:
        _keep(path, (value, spent))
    return value, spent


def reference_key(plan: Plan, seed: int, *extra: object) -> str:
    """Return the hash of what plan's reference for seed depends on."""
    parts = (__version__, _numpy_version(), plan.op.name, op_fingerprint(plan.op),
             tuple(plan.shape), plan.types.describe(), plan.dtype.name, seed, repr(extra))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]


def _numpy_version() -> str:
    import numpy

    return str(numpy.__version__)


# An entry: this line, the SHA-256 of the pickle, the pickle. A flipped bit on disk fails
# the hash and the reference is made again: unchecked, it was a wrong reference that failed
# every kernel (cuBLAS too), or a pickle that raised anything on loading, at every run.
MAGIC = b"cudabench reference 1\n"


def _read(path: Path) -> tuple[Any, float] | None:
    """Return a kept (reference, seconds), or None where there is none whole and intact."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, payload = data[len(MAGIC):len(MAGIC) + 32], data[len(MAGIC) + 32:]
    if not data.startswith(MAGIC) or hashlib.sha256(payload).digest() != digest:
        return None  # torn, damaged, or an older format: made again, and written over
    try:
        value, computed_s = pickle.loads(payload)
        os.utime(path)  # recently used: pruned last
        return value, float(computed_s)
    except Exception:  # written whole by this code, yet unreadable (another NumPy): remake
        return None


def _keep(path: Path, value: Any) -> None:
    """Write value atomically (a temporary file renamed), if small enough; prune."""
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return  # an op's reference that cannot be pickled is simply not kept
    if len(data) > MAX_BYTES:
        return
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(handle, "wb") as stream:
            stream.write(MAGIC + hashlib.sha256(data).digest() + data)
        os.replace(temporary, path)
        _prune(path.parent)
    except OSError:  # a full or read-only disk costs the cache, not the run
        if temporary is not None:  # a torn part file would fill a full disk further
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return


def _prune(folder: Path) -> None:
    """Remove the least recently used entries beyond KEEP_BYTES."""
    entries = []
    for entry in folder.glob("*.pickle"):
        try:
            stat = entry.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime, stat.st_size, entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= KEEP_BYTES:
            break
        try:
            entry.unlink()
            total -= size
        except OSError:
            continue
