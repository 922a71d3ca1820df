"""The tuning cache: every configuration a search evaluated, one JSON line each.

One file per (op, shape, dtype, cache state, GPU model, source hash of the variant and the
files it includes, of the op's code (ops/fingerprint.py) and cudabench's version, the
inputs' seed, the timing policy's measuring settings and the kind of check: a row measured
with 3 quick samples is not reused where 20 were asked for), under
`cache_root()/tune/<op>/` (CUDABENCH_CACHE_DIR moves it; `off` keeps nothing;
`--no-tune-cache` ignores it; deleting the folder clears it). A row is appended as soon as
it arrives, so an interrupted search loses nothing it measured: run again, and only what is
new is measured. A line that cannot be read whole (a run killed mid-write) is ignored, and
the next row starts a line of its own; a timeout, a lost worker, running out of GPU
memory, a compile that failed for want of memory, disk or time and a SKIP for want of CUDA
Python are not kept (measured again next time).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from cudabench.catalog import KernelVariant
from cudabench.common.cache_dir import cache_root
from cudabench.errors import ResultsFileError
from cudabench.results.codec import (
    Checker,
    benchmark_from_dict,
    benchmark_to_dict,
    device_from_dict,
    device_to_dict,
)
from cudabench.results.model import BenchmarkResult, Status

FORMAT = 1
Key = tuple[tuple[str, int], ...]  # a configuration: its sorted parameters


def source_hash(variant: KernelVariant) -> str:
    """Return the hash of the variant's text and of every local file it includes."""
    digest = hashlib.sha256(variant.source.encode())
    for name, _, content in variant.included_files():
        digest.update(name.encode() + b"\0" + content.encode())
    return digest.hexdigest()[:16]


def config_key(params: Mapping[str, int]) -> Key:
    """Return the cache's key for a configuration."""
    return tuple(sorted((name, int(value)) for name, value in params.items()))


def cache_path(op: str, variant: KernelVariant, shape: tuple[int, ...], dtype: str,
               hot: bool, model: str, root: Path | None = None,
               measuring: Mapping[str, object] | None = None) -> Path | None:
    """Return the file of one search's results, or None when caching is off. measuring
    holds what else decides a row (timing settings, the kind of check)."""
    root = root if root is not None else cache_root()
    if root is None:
        return None
    parts = [FORMAT, op, variant.name, list(shape), dtype, hot, model, source_hash(variant),
             sorted((measuring or {}).items())]
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", model).strip("-").lower() or "gpu"
    size = "x".join(map(str, shape))
    return root / "tune" / op / f"{variant.name}-{size}-{dtype}-{slug}-{digest}.jsonl"


class TuneCache:
    """One search's file: read once, appended to by any thread that hears a row."""

    def __init__(self, path: Path | None, search: tuple[object, ...] | None = None) -> None:
        self.path = path
        # the search's (op, variant, shape, dtype, hot): a row of another (an edited or
        # copied file) is none of its measurements, and never reaches its results
        self.search = search
        self.lock = threading.Lock()

    def load(self) -> dict[Key, BenchmarkResult]:
        """Return the rows kept so far, by configuration (the last one wins)."""
        if self.path is None or not self.path.is_file():
            return {}
        rows = {}
        for line in self.path.read_text(errors="replace").splitlines():
            row = _decode(self.path, line)
            if row is not None and (self.search is None or search_of(row) == self.search):
                rows[config_key(row.params)] = row
        return rows

    def add(self, result: BenchmarkResult) -> None:
        """Append a row (its kernel text left out: the file's key holds its hash), unless
        what it says may not hold next time (lasting)."""
        if self.path is None or not lasting(result):
            return
        device = result.device
        line = json.dumps({"device": device_to_dict(device) if device else None,
                           "row": benchmark_to_dict(dataclasses.replace(result, source=""),
                                                    0 if device else None)})
        with self.lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a+b") as handle:
                    # a line cut short (a full disk, a power cut) must not swallow this one
                    handle.seek(0, os.SEEK_END)
                    cut = handle.tell() > 0 and not _ends_a_line(handle)
                    handle.write(("\n" if cut else "").encode() + line.encode() + b"\n")
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:  # a cache is a convenience: the search goes on without it
                sys.stderr.write(f"note: the tuning cache {self.path} cannot be written "
                                 f"({exc.strerror or exc}): this search is not cached "
                                 "(CUDABENCH_CACHE_DIR sets where it goes)\n")
                self.path = None


def _ends_a_line(handle: BinaryIO) -> bool:
    """Return whether the file open in handle ends with a newline (it is not empty)."""
    handle.seek(-1, os.SEEK_END)
    return handle.read(1) == b"\n"


# What an error says when the next try may go otherwise: the GPU's memory taken by another
# process, nvcc or its cicc/ptxas killed (the OOM killer) or out of memory, a full disk or
# /tmp, nvcc missing, broken or stuck, a worker lost, CUDA Python's bindings missing or too
# old for tensor maps (installing them must not find the SKIP kept: the key holds the
# toolkit and driver, not Python packages). nvcc's diagnostics of the source are none of
# these: the file's key holds the source's hash, so an edit misses them anyway; nor are a
# shape that breaks TMA's rules or a tensor map the driver refused (keyed by its version).
_PASSING = re.compile(
    r"CUDA Python's driver bindings|CUDA Python bindings have no|"
    r"out of (?:GPU )?memory|memory allocation failure|no space left on device|"
    r"disk quota exceeded|died due to signal|nvcc was killed|nvcc was not found|"
    r"nvcc was found at|nvcc at .* cannot be run|did not finish within|nvcc wrote no cubin|"
    r"stopped before it started|worker process died|worker process failed|"
    r"worker running it was lost|ran in a fresh worker|Ray worker|was given up", re.IGNORECASE)
    # cudabench's own words of a lost worker: a bare "worker" matched a kernel's path
    # (/srv/workers/..., persistent_worker.cu), and its compile error was never kept


def lasting(result: BenchmarkResult) -> bool:
    """Return whether a row would come out the same again (a measurement, a compile error
    of the source, a wrong result, a configuration the GPU cannot run), so a later search
    may reuse it; a timeout, or an error or SKIP of the moment (_PASSING), is measured
    again."""
    return (result.status is not Status.TIMEOUT
            and not any(_PASSING.search(text or "") for text in (result.error, result.skipped)))


def search_of(row: BenchmarkResult) -> tuple[object, ...]:
    """Return which search a row belongs to: its op, variant, shape, dtype and cache state."""
    return row.op, row.variant, tuple(row.shape), row.dtype, row.hot


def _decode(path: Path, line: str) -> BenchmarkResult | None:
    """Return a line's row, or None for one torn or unreadable."""
    try:
        data = json.loads(line)
        check = Checker(path)
        devices = [device_from_dict(data["device"], check)] if data.get("device") else []
        return benchmark_from_dict(data["row"], check, devices)
    except (ValueError, KeyError, TypeError, AttributeError, ResultsFileError,
            RecursionError, OverflowError):
        return None  # AttributeError: valid JSON, not an object (`1`, `[1]`)
