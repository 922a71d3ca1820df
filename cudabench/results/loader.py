"""Load a results file of any readable schema version; errors name the path and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cudabench.errors import ResultsFileError
from cudabench.results.codec import (
    FILE_KIND,
    Checker,
    benchmark_from_dict,
    device_from_dict,
)
from cudabench.results.migrations import READABLE_VERSIONS, MigrationError, migrate
from cudabench.results.model import ResultsFile


def read_document(path: Path) -> dict[str, Any]:
    """Return the file's JSON object, checked to be a cudabench file of a readable version."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"{path}: cannot read results file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "the file may be truncated"
        ) from None
    except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
        raise ResultsFileError(f"{path}: not a results file: {type(exc).__name__}: "
                               f"{str(exc)[:100]}") from None
    check = Checker(path)
    check.expect(isinstance(data, dict), "", "a JSON object")
    check.expect(data.get("kind") == FILE_KIND, "kind", f'"{FILE_KIND}" (not a cudabench file?)')
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS))
        newer = isinstance(version, int) and not isinstance(version, bool) \
            and version > max(READABLE_VERSIONS)
        hint = ("a newer cudabench wrote it: upgrade cudabench to compare it" if newer
                else "the file is damaged or not written by cudabench")
        raise ResultsFileError(
            f"{path}: schema_version {version!r} is not one this cudabench reads ({readable}); "
            f"{hint}"
        )
    return dict(data)


def load_results(path: Path | str) -> ResultsFile:
    """Load, migrate and validate a results file."""
    path = Path(path)
    original = read_document(path)
    check = Checker(path)
    try:
        data = migrate(original)
    except MigrationError as exc:
        raise check.error(exc.field, exc.expected) from None
    entries = check.field(data, "devices", list)
    devices = tuple(device_from_dict(entry, check.within(f"devices[{i}]"))
                    for i, entry in enumerate(entries))
    entries = check.field(data, "benchmarks", list)
    benchmarks = []
    for i, entry in enumerate(entries):
        check.expect(isinstance(entry, dict), f"benchmarks[{i}]", "an object")
        benchmarks.append(benchmark_from_dict(entry, check.within(f"benchmarks[{i}]"), devices))
    metadata = {k: v for k, v in data.items() if k not in ("devices", "benchmarks")}
    return ResultsFile(str(path), metadata, devices, tuple(benchmarks),
                       schema_version=int(original["schema_version"]))
