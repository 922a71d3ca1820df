"""Bring results files of older schema versions up to the current one, on load.

The rule: a new optional field needs no new version (readers ignore what they do not
know, and the JSON Schema allows extra fields); a field that changes meaning or becomes
required bumps SCHEMA_VERSION and adds a step here, so every older file still loads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from cudabench.results.codec import SCHEMA_VERSION

Document = dict[str, Any]


class MigrationError(ValueError):
    """An old file lacks what its own version required; field names the field."""

    def __init__(self, field: str, expected: str) -> None:
        super().__init__(f"{field}: expected {expected}")
        self.field = field
        self.expected = expected


def _v1_to_v2(document: Document) -> Document:
    """Version 1 held one `gpu` object for the whole file and called variants `kernel`.

    Version 2 lists `devices` and each benchmark names its device by index; the engine's
    version moves from the GPU into `tool`; kind `kernel` is now `variant`.
    """
    gpu = document.pop("gpu", None)
    if not isinstance(gpu, dict) or not isinstance(gpu.get("name"), str):
        raise MigrationError("gpu", "an object with the GPU's name (a version-1 file)")
    gpu = dict(gpu)
    engine_version = gpu.pop("pycuda_version", None)
    tool = document.get("tool")
    if isinstance(tool, dict):
        engine_version = tool.pop("pycuda_version", engine_version)
        if engine_version is not None:
            tool.setdefault("engine", "pycuda")
            tool.setdefault("engine_version", engine_version)
    devices = [{"index": 0, "pci_bus_id": None, "uuid": None, **gpu}]
    document["devices"] = devices
    benchmarks = document.get("benchmarks")
    # anything but a list is left for the loader to name ("benchmarks: expected a list")
    for benchmark in benchmarks if isinstance(benchmarks, list) else ():
        if isinstance(benchmark, dict):
            if benchmark.get("kind") == "kernel":
                benchmark["kind"] = "variant"
            benchmark["device"] = 0
    document["schema_version"] = 2
    return document


# MIGRATIONS[v] turns a version-v document into a version v+1 one.
MIGRATIONS: dict[int, Callable[[Document], Document]] = {1: _v1_to_v2}
READABLE_VERSIONS = tuple(range(min(MIGRATIONS), SCHEMA_VERSION + 1))


def migrate(document: Document) -> Document:
    """Return a copy of a document of any readable version, upgraded to SCHEMA_VERSION.

    A current document's copy is shallow (its values are shared with `document`: read
    them, do not change them); an older one is copied deep, as the steps change it in place.
    """
    version = document["schema_version"]
    if version == SCHEMA_VERSION:  # a deep copy of 20 MB of samples took a second a load
        return dict(document)
    upgraded = copy.deepcopy(document)
    while version < SCHEMA_VERSION:
        upgraded = MIGRATIONS[version](upgraded)
        version += 1
    return upgraded
