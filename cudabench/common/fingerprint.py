"""A fingerprint of the cudabench code this process runs: a worker kept across commands
(a Ray actor, a local kept worker) is reused only by a command of the same code, never
one that would measure with an older worker."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


@functools.cache
def code_key() -> str:
    """Return 12 hex digits of the version and the package modules' sizes and times."""
    import cudabench

    package = Path(cudabench.__file__).parent
    digest = hashlib.sha256(cudabench.__version__.encode())
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:12]
