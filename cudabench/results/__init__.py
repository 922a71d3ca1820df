"""The results model, its JSON file format (schema, migrations, writer, loader)."""

from __future__ import annotations

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

__all__ = [
    "FAILING_STATUSES", "FILE_KIND", "SCHEMA_VERSION", "BenchmarkResult", "DeviceInfo", "Kind",
    "ResultsFile", "RunOutcome", "Status", "Verification", "load_results",
]
