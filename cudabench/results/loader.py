"""Load a results file of any readable schema version; errors name the path and field."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from cudabench.common.infiles import MiB, TooLarge, gunzip_capped, read_capped
from cudabench.common.outfiles import SQLITE_MAGIC, refuse_written
from cudabench.common.text import decoded
from cudabench.errors import ResultsFileError, UsageError
from cudabench.results.codec import (
    FILE_KIND,
    Checker,
    benchmark_from_dict,
    device_from_dict,
    printable,
)
from cudabench.results.migrations import READABLE_VERSIONS, MigrationError, migrate
from cudabench.results.model import ResultsFile

GZIP_MAGIC = b"\x1f\x8b"  # a gzip stream's first bytes: docs/data keeps large files so


MAX_RESULTS_BYTES = 1024 * MiB  # a sweep of 10000 points holds some 200 MiB of samples


def read_text(path: Path) -> str:
    """Return a results file's text; a gzip-compressed file (`.json.gz`) gives the text
    inside it. Errors are one line naming the path."""
    try:
        raw = read_capped(path, MAX_RESULTS_BYTES)
    except TooLarge as exc:
        raise ResultsFileError(f"{exc}: not a results file") from None
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsFileError(f"{path}: a folder, not a results file") from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read results file: {exc.strerror or exc}"
                               ) from None
    if raw.startswith(SQLITE_MAGIC):  # "not UTF-8 text: invalid continuation byte" said less
        raise ResultsFileError(f"{path}: an SQLite database (a history store?), not a results "
                               "file; `cudabench history check FILE --db STORE` reads a store")
    try:
        if raw.startswith(GZIP_MAGIC):
            raw = gunzip_capped(raw, MAX_RESULTS_BYTES)
        # Newlines as a text-mode read gives them: the history store hashes this text.
        text = decoded(raw, "utf-8-sig")  # a BOM an editor wrote is no part of the JSON
    except TooLarge as exc:
        raise ResultsFileError(f"{path}: a gzip file that {exc}: not a results file"
                               ) from None
    except (OSError, EOFError, zlib.error) as exc:  # a damaged or cut gzip stream
        raise ResultsFileError(f"{path}: a gzip file that cannot be decompressed: {exc}"
                               ) from None
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{path}: not a results file (not UTF-8 text: {exc.reason} at "
                               f"byte {exc.start})") from None
    return text


def read_document(path: Path) -> dict[str, Any]:
    """Return the file's JSON object, checked to be a cudabench file of a readable version."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # a results file is one JSON object: one that starts so and breaks off is cut
        # short, one followed by more is two files joined (`cat a.json b.json`, two gzip
        # streams); anything else (a suite, notes) is another kind of file
        if not text.lstrip().startswith("{"):
            cause = "not a results file, which is a JSON object ({...})"
        elif exc.msg == "Extra data":
            cause = "the file holds more than one JSON document (two files joined?)"
        else:
            cause = "the file may be truncated"
        raise ResultsFileError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            f"{cause}"
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
        hint = ("a newer cudabench wrote it: upgrade cudabench to read it" if newer
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
    # A gate reads `complete is False` as a crashed run: "false", 0 or null must not pass it,
    # nor a file without the field (every version's writer wrote it: one without is edited)
    check.expect("complete" in data, "complete",
                 "true or false, which every results file holds (was it edited by hand?)")
    check.expect(isinstance(data["complete"], bool), "complete", "true or false")
    metadata = printable({k: v for k, v in data.items() if k not in ("devices", "benchmarks")})
    return ResultsFile(str(path), metadata, devices, tuple(benchmarks),
                       schema_version=int(original["schema_version"]))


def check_replaceable(path: Path | None, flag: str) -> None:
    """Refuse an output results file that exists and is not one: the run would write over
    it (notes, a kernel, a history store named by mistake). An empty file is taken, and so
    is any cudabench results file, one this version cannot read included (a newer one, a
    damaged one: still the results it was, which the run replaces), but one a stopped run
    left marked incomplete: its rows may be the only ones that run kept. One a running
    cudabench is writing is refused as that: its writer's lock comes later."""
    if path is None:
        return
    refuse_written(path, flag)  # not "a run that stopped": one that goes on
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        data = json.loads(read_text(path))
    except (ResultsFileError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or data.get("kind") != FILE_KIND:
        raise UsageError(f"{flag} {path}: exists and is not a cudabench results file, which "
                         "the run would write over; name a new file or an old results "
                         "file")
    if data.get("complete") is False:  # a stopped run's rows: perhaps their only copy
        raise UsageError(f"{flag} {path}: holds the rows of a run that stopped (marked "
                         "incomplete), which this run would write over; move it away or "
                         "delete it first, or name a new file")
