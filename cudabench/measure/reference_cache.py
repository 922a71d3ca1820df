"""CPU references kept on disk across runs, keyed by everything that determines them.

A float64 reference of a large product takes the CPU seconds, and the same benchmark is run
again and again (a CI suite, a tuning session, `ab`). A reference depends on the op's code
(ops/fingerprint.py: its class's files and the ops package that makes inputs), the shape,
the types, the seed, the check asked for, and NumPy's version (its generators and
arithmetic): the key hashes them all, so a changed seed, shape or op recomputes. It also
depends on the inputs themselves, which an op may make from more than the seed (a data file
beside it, NumPy's global generator): each entry holds a digest of every byte of the inputs
it was computed from, and inputs that differ are a miss (a stale reference failed correct
kernels). Only references that took a while to make (and twice their inputs' digest) are
kept, each written atomically with a hash of its content; an entry that cannot be read or
fails its hash is made again, never trusted half-read or damaged. CUDABENCH_CACHE_DIR=off
keeps nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench import __version__
from cudabench.common.cache_dir import cache_root
from cudabench.common.cores import in_parallel
from cudabench.ops.fingerprint import op_fingerprint
from cudabench.planning.plan import Plan

MIN_SECONDS = 0.05  # quicker to make than to read back: not kept
MAX_BYTES = 2 << 30  # one entry at most
KEEP_BYTES = 8 << 30  # the folder is pruned, oldest first, beyond this
# A part file untouched this long is a killed writer's (SIGKILL, a power cut): a live one is
# written in seconds, its time renewed by every write
STALE_PART_S = 30 * 60
DIGEST_CHUNK = 16 << 20  # bytes hashed by one thread: the digest never depends on the cores
# kept only where making it took this many times its inputs' digest: a hit hashes them
# first (a dot of 4M elements hashed in 0.17 s on two cores, its reference made in 0.15 s)
DIGEST_WORTH = 2.0


def cached_reference(plan: Plan, seed: int, inputs: Mapping[str, np.ndarray],
                     compute: Callable[[], Any], *extra: object) -> tuple[Any, float]:
    """Return (the reference for plan's inputs of seed, the CPU's seconds to compute it):
    read from the cache (with the seconds its computation took, which the results report
    as the CPU's time) if it was computed from the same inputs, or computed and kept if it
    took long enough. extra: anything else it depends on (the check asked for)."""
    folder = cache_root()
    path = folder / "references" / f"{reference_key(plan, seed, *extra)}.pickle" \
        if folder is not None else None
    digest, digest_s = None, 0.0  # hashed only where an entry is read or written
    try:
        present = path is not None and path.exists()
    except OSError:  # a folder it may not search (Python 3.11 raises): no cache, as unwritable
        path, present = None, False
    if path is not None and present:
        digest, digest_s = _timed_digest(inputs)
        kept = _read(path, digest)
        if kept is not None:
            return kept
    started = time.perf_counter()  # the reference's own time, not the digest's
    value = compute()
    spent = time.perf_counter() - started
    if path is not None and spent >= MIN_SECONDS:
        if digest is None:
            digest, digest_s = _timed_digest(inputs)
        if spent >= DIGEST_WORTH * digest_s:
            _keep(path, (value, spent), digest)
        else:  # reading it back (its inputs hashed first) would cost more than making it
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
    return value, spent


def _timed_digest(inputs: Mapping[str, np.ndarray]) -> tuple[bytes, float]:
    """Return the inputs' digest and the seconds it took."""
    started = time.perf_counter()
    digest = inputs_digest(inputs)
    return digest, time.perf_counter() - started


def inputs_digest(inputs: Mapping[str, np.ndarray]) -> bytes:
    """Return a SHA-256 of every input's name, type, shape and bytes (all of them: a sample
    would miss a change elsewhere), hashed in chunks on the cores' threads. SHA-256 is
    hardware-accelerated on current CPUs (faster than BLAKE2 here): 64M float32 elements
    took 0.4-1.0 s on two shared cores, a softmax's float64 reference of them 6-16 s."""
    whole = hashlib.sha256()
    for name in sorted(inputs):
        array = np.ascontiguousarray(inputs[name])
        whole.update(repr((name, array.dtype.str, array.shape)).encode())
        data = array.reshape(-1).view(np.uint8).data
        chunks = in_parallel(lambda index: hashlib.sha256(
            data[index * DIGEST_CHUNK:(index + 1) * DIGEST_CHUNK]).digest(),
            -(-len(data) // DIGEST_CHUNK))
        whole.update(b"".join(chunks))
    return whole.digest()


def reference_key(plan: Plan, seed: int, *extra: object) -> str:
    """Return the hash of what plan's reference for seed depends on."""
    parts = (__version__, _numpy_version(), plan.op.name, op_fingerprint(plan.op),
             tuple(plan.shape), plan.types.describe(), plan.dtype.name, seed, repr(extra))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]


def _numpy_version() -> str:
    import numpy

    return str(numpy.__version__)


# An entry: this line, the inputs' digest, the SHA-256 of the pickle, the pickle. A flipped
# bit on disk fails the hash and the reference is made again: unchecked, it was a wrong
# reference that failed every kernel (cuBLAS too), or a pickle that raised anything on
# loading, at every run. Other inputs under the same key are a miss, and the entry is
# written over with the new inputs' reference.
MAGIC = b"cudabench reference 2\n"
HEADER = len(MAGIC) + 64


def _read(path: Path, inputs: bytes) -> tuple[Any, float] | None:
    """Return a kept (reference, seconds) computed from inputs of that digest, or None
    where there is none whole and intact."""
    try:
        with path.open("rb") as stream:
            head = stream.read(HEADER)
            if head[:len(MAGIC)] != MAGIC or head[len(MAGIC):len(MAGIC) + 32] != inputs:
                return None  # an older format, or other inputs: not read any further
            payload = stream.read()
    except OSError:
        return None
    if hashlib.sha256(payload).digest() != head[len(MAGIC) + 32:]:
        return None  # torn or damaged: made again, and written over
    try:
        value, computed_s = pickle.loads(payload)
        os.utime(path)  # recently used: pruned last
        return value, float(computed_s)
    except Exception:  # written whole by this code, yet unreadable (another NumPy): remake
        return None


def _keep(path: Path, value: Any, inputs: bytes) -> None:
    """Write value, computed from inputs of that digest, atomically (a temporary file
    renamed), if small enough; prune."""
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
            stream.write(MAGIC + inputs + hashlib.sha256(data).digest() + data)
        os.replace(temporary, path)
        temporary = None
        _prune(path.parent)
    except BaseException as exc:  # Ctrl-C and SIGTERM too: a torn part file is never read
        if temporary is not None:  # and would fill a full disk further
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        if not isinstance(exc, OSError):
            raise
        # a full or read-only disk costs the cache, not the run


def _prune(folder: Path) -> None:
    """Remove the part files of killed writers (older than STALE_PART_S), and the least
    recently used entries beyond KEEP_BYTES (a live writer's part file counted)."""
    entries, parts = [], 0
    stale = time.time() - STALE_PART_S
    for entry in [*folder.glob("*.pickle"), *folder.glob("*.part")]:
        try:
            stat = entry.stat()
            if entry.suffix == ".part":
                if stat.st_mtime < stale:
                    entry.unlink()
                else:
                    parts += stat.st_size
                continue
        except OSError:
            continue
        entries.append((stat.st_mtime, stat.st_size, entry))
    total = parts + sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= KEEP_BYTES:
            break
        try:
            entry.unlink()
            total -= size
        except OSError:
            continue
