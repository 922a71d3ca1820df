"""The results model, its JSON file format (schema, migrations, writer, loader).

Names are imported on first use (PEP 562), so that code needing only the model (an op's
Verification, say) does not load the codec and its JSON machinery: `cudabench --help`
stays quick.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudabench.results.codec import FILE_KIND, SCHEMA_VERSION
    from cudabench.results.loader import load_results
    from cudabench.results.model import (
        FAILING_STATUSES,
        BenchmarkResult,
        DeviceInfo,
        Kind,
        ResultsFile,
        RunOutcome,
        Status,
        Verification,
    )

_WHERE = {
    "FILE_KIND": "codec", "SCHEMA_VERSION": "codec", "load_results": "loader",
    **{name: "model" for name in ("FAILING_STATUSES", "BenchmarkResult", "DeviceInfo", "Kind",
                                  "ResultsFile", "RunOutcome", "Status", "Verification")},
}

__all__ = [
    "FAILING_STATUSES", "FILE_KIND", "SCHEMA_VERSION", "BenchmarkResult", "DeviceInfo", "Kind",
    "ResultsFile", "RunOutcome", "Status", "Verification", "load_results",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
