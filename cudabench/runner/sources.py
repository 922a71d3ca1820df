"""The source files a run's plans depend on beyond cudabench: each variant's kernel folder
(its includes live there), each op file and the modules it imports from its folder. A Ray
cluster ships them to nodes that lack them; a worker kept across commands is reused only
while they are unchanged."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from cudabench.errors import UsageError
from cudabench.ops.fingerprint import local_imports
from cudabench.planning.plan import Plan

SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".inc", ".py")
MAX_BUNDLE_BYTES = 32 * 2**20  # kernel folders are source files; more is a mistake


def source_paths(plans: Sequence[Plan]) -> list[Path]:
    """Return the source files the plans' kernels and ops need: each variant's folder's
    (its includes live there), each op file and the helper modules it imports."""
    folders = {planned.variant.path.parent for plan in plans for planned in plan.variants}
    paths = [path for folder in sorted(folders)
             for path in (sorted(folder.iterdir()) if folder.is_dir() else ())
             if path.suffix in SOURCE_SUFFIXES and path.is_file()]
    origins = {Path(plan.op.origin) for plan in plans if plan.op.origin.endswith(".py")}
    helpers = {path for origin in origins for path in local_imports(origin)}
    shipped = {path.resolve() for path in paths}
    return [*paths, *sorted(path for path in origins | (helpers - shipped) if path.is_file())]


def bundle(plans: Sequence[Plan]) -> dict[str, str]:
    """Return the source files the plans' kernels and ops need (source_paths), by path."""
    files = {str(path): path.read_text(encoding="utf-8", errors="replace")
             for path in source_paths(plans)}
    size = sum(len(text) for text in files.values())
    if size > MAX_BUNDLE_BYTES:
        raise UsageError(f"--cluster: the kernel folders hold {size / 2**20:.1f} MiB of source "
                         f"files, more than {MAX_BUNDLE_BYTES // 2**20} MiB; keep kernel "
                         "folders to sources")
    return files


def digest_of(files: Mapping[str, str]) -> str:
    """Return 16 hex digits of the files' paths and contents."""
    return hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest()[:16]
