"""The JSON Schema of results files (shipped beside this module) and a validator for it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from cudabench.errors import ResultsFileError, UsageError

SCHEMA_NAME = "results.schema.json"
MAX_MESSAGE = 200  # characters of jsonschema's message kept (it may quote a whole object)


def _schema_path() -> Path:
    """Return the shipped schema's path (the package resource, else the file beside this one)."""
    try:
        resource = files("cudabench.results") / SCHEMA_NAME
        path = Path(str(resource))
        if path.is_file():
            return path
    except (ModuleNotFoundError, TypeError, ValueError):
        pass
    return Path(__file__).parent / SCHEMA_NAME


SCHEMA_PATH: Path = _schema_path()


def load_schema() -> dict[str, Any]:
    """Return the results file JSON Schema (draft 2020-12) as a dict."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def validate(document: Mapping[str, Any]) -> None:
    """Raise ResultsFileError naming the JSON path of the first error if document is invalid."""
    try:
        import jsonschema
    except ImportError:
        raise UsageError(
            "validating results files needs jsonschema: pip install 'jsonschema>=4.18'"
        ) from None
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return
    where: str = error.json_path  # e.g. $.benchmarks[0].samples_s[2]
    message = " ".join(str(error.message).split())
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE - 3] + "..."
    version = schema["properties"]["schema_version"]["const"]
    raise ResultsFileError(
        f"results file does not match the schema of version {version}: {where}: {message}"
    )
