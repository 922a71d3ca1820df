"""The shipped JSON Schema of results files: valid itself, matching what cudabench writes."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cudabench.errors import ResultsFileError, UsageError
from cudabench.results.codec import FILE_KIND, SCHEMA_VERSION
from cudabench.results.migrations import migrate
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind, Verification
from cudabench.results.schema import SCHEMA_PATH, load_schema, validate
from cudabench.results.writer import ResultsWriter

COMPARE_DATA = Path(__file__).parent / "data" / "compare"
NOT_V1 = {"truncated.json", "schema99.json"}  # unreadable JSON; a version from the future
V1_FILES = sorted(p for p in COMPARE_DATA.glob("*.json") if p.name not in NOT_V1)

DEVICE = DeviceInfo(
    name="NVIDIA H200", compute_capability="9.0", sm_count=132, memory_bytes=150754820096,
    l2_bytes=52428800, sm_clock_khz=1980000, memory_clock_khz=3201000, memory_bus_bits=6144,
    max_threads_per_block=1024, max_shared_bytes_per_block=49152, driver_version="12.4",
    cuda_version="12.4.0", index=0, pci_bus_id="0000:19:00.0", uuid="GPU-8e1f0000-test",
)
SAMPLES = (2.41e-5, 2.40e-5, 2.43e-5, 2.39e-5)
PASSED = Verification(passed=True, rel_error=0.0, max_abs_error=0.0, bad_elements=0,
                      total_elements=9006001, criterion="exact")
FAILED = Verification(passed=False, rel_error=math.inf, max_abs_error=math.inf,
                      bad_elements=9006001, total_elements=9006001, criterion="exact")
COMMON: dict[str, Any] = dict(op="transpose", shape=(3001, 3001), dims=("ROWS", "COLS"),
                              dtype="float32", hot=False, bytes_moved=72048008,
                              cpu_reference_s=0.021)


def results() -> list[BenchmarkResult]:
    """Return a PASS variant, a REF reference row, an ERROR row and a FAIL row."""
    launch = {"entry": "transpose_shared", "grid": [94, 94, 1], "block": [32, 8, 1],
              "registers": 32, "shared_bytes": 4096, "local_bytes": 0,
              "max_threads_per_block": 1024}
    return [
        BenchmarkResult(variant="shared", params={"TILE": 32}, samples_s=SAMPLES,
                        verification=PASSED, launches=(launch,), device=DEVICE,
                        counters={"gpu__time_duration.sum": 24100.0},
                        counters_units={"gpu__time_duration.sum": "nsecond"},
                        source="kernels/transpose/shared.cu",
                        warnings=("median 24.1 us is close to launch overhead",), **COMMON),
        BenchmarkResult(variant="memcpy_dtod", params={}, samples_s=SAMPLES, kind=Kind.REFERENCE,
                        device=DEVICE, source="cuMemcpyDtoDAsync",
                        writeback_after_run_s=(4.9e-5, 5.0e-5), writeback_baseline_s=(4e-5, 4e-5),
                        **COMMON),
        BenchmarkResult(variant="broken", params={"TILE": 8}, error="nvcc: syntax error",
                        device=DEVICE, source="kernels/transpose/broken.cu", **COMMON),
        BenchmarkResult(variant="wrong", params={}, verification=FAILED, device=DEVICE,
                        source="kernels/transpose/wrong.cu", **COMMON),
    ]


@pytest.fixture
def writer(tmp_path: Path) -> ResultsWriter:
    """Return a writer that has written the four rows to tmp_path/results.json."""
    writer = ResultsWriter(tmp_path / "results.json", argv=["transpose", "--json", "results.json"])
    writer.start({"engine": "fake", "engine_version": "1"})
    for result in results():
        writer.add(result)
    return writer


@pytest.fixture
def document(writer: ResultsWriter) -> dict[str, Any]:
    """Return a complete, valid version-2 document."""
    return copy.deepcopy(writer.document(complete=True))


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA_PATH.name == "results.schema.json" and SCHEMA_PATH.is_file()


def test_the_schema_matches_the_codec_constants() -> None:
    properties = load_schema()["properties"]
    assert properties["schema_version"] == {**properties["schema_version"],
                                            "const": SCHEMA_VERSION}
    assert properties["kind"]["const"] == FILE_KIND


def test_the_schema_is_extensible_everywhere() -> None:
    text = SCHEMA_PATH.read_text(encoding="utf-8")
    assert '"additionalProperties": false' not in text
    assert '"unevaluatedProperties": false' not in text


def test_every_written_field_is_described(document: dict[str, Any]) -> None:
    schema = load_schema()

    def described(properties: dict[str, Any], names: Any, where: str) -> None:
        for name in names:
            assert name in properties, f"{where}.{name} is missing from the schema"
            assert properties[name].get("description"), f"{where}.{name} has no description"

    described(schema["properties"], document, "$")
    described(schema["$defs"]["device"]["properties"],
              [f.name for f in dataclasses.fields(DeviceInfo)], "device")
    definitions = schema["$defs"]
    for row in document["benchmarks"]:
        described(definitions["benchmark"]["properties"], row, "benchmark")
        described(definitions["throughput"]["properties"], row["throughput"], "throughput")
        if row["stats"] is not None:
            described(definitions["stats"]["properties"], row["stats"], "stats")
        if row["verification"] is not None:
            described(definitions["verification"]["properties"], row["verification"],
                      "verification")


def test_a_written_document_validates(document: dict[str, Any]) -> None:
    statuses = [row["status"] for row in document["benchmarks"]]
    assert statuses == ["PASS", "REF", "ERROR", "FAIL"]
    assert document["benchmarks"][3]["verification"]["rel_error"] is None  # inf -> null
    assert document["benchmarks"][2]["samples_s"] == []
    validate(document)


def test_the_written_file_validates(writer: ResultsWriter) -> None:
    writer.write()
    loaded = json.loads(writer.path.read_text(encoding="utf-8"))
    assert loaded["complete"] is True
    validate(loaded)


def test_an_incomplete_file_validates(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path / "partial.json", argv=[])
    writer.start({"engine": "fake", "engine_version": "1"})  # no devices, no benchmarks yet
    writer.write(complete=False)  # as an interrupted run leaves it
    loaded = json.loads(writer.path.read_text(encoding="utf-8"))
    assert loaded["complete"] is False
    validate(loaded)


@pytest.mark.parametrize("path", V1_FILES, ids=lambda p: p.name)
def test_version_1_files_validate_once_migrated(path: Path) -> None:
    original = json.loads(path.read_text(encoding="utf-8"))
    assert original["schema_version"] == 1
    validate(migrate(original))


def test_version_1_files_are_tested() -> None:
    assert len(V1_FILES) >= 5


def _broken(document: dict[str, Any], change: str) -> dict[str, Any]:
    broken = copy.deepcopy(document)
    if change == "zero sample":
        broken["benchmarks"][0]["samples_s"][1] = 0
    elif change == "sub-nanosecond sample":
        broken["benchmarks"][0]["samples_s"][1] = 5e-324
    elif change == "unknown status":
        broken["benchmarks"][0]["status"] = "MAYBE"
    elif change == "no devices":
        del broken["devices"]
    elif change == "version 1":
        broken["schema_version"] = 1
    return broken


@pytest.mark.parametrize(("change", "field"), [
    ("zero sample", "$.benchmarks[0].samples_s[1]"),
    ("sub-nanosecond sample", "$.benchmarks[0].samples_s[1]"),
    ("unknown status", "$.benchmarks[0].status"),
    ("no devices", "'devices'"),
    ("version 1", "$.schema_version"),
])
def test_an_invalid_document_names_the_field(document: dict[str, Any], change: str,
                                             field: str) -> None:
    with pytest.raises(ResultsFileError) as caught:
        validate(_broken(document, change))
    message = str(caught.value)
    assert field in message
    assert "\n" not in message


def test_a_status_that_disagrees_with_verification_fails(document: dict[str, Any]) -> None:
    document["benchmarks"][3]["status"] = "PASS"  # verification.passed is false
    with pytest.raises(ResultsFileError, match=r"benchmarks\[3\]"):
        validate(document)


def test_unknown_fields_are_allowed(document: dict[str, Any]) -> None:
    document["future_top_level_field"] = {"anything": [1, 2, 3]}
    document["tool"]["future_tool_field"] = "x"
    document["devices"][0]["future_device_field"] = 7
    document["benchmarks"][0]["future_benchmark_field"] = "from a later cudabench"
    document["benchmarks"][0]["stats"]["p90_s"] = 2.43e-5
    document["benchmarks"][0]["launches"][0]["dynamic_shared_bytes"] = 0
    validate(document)


def test_validating_without_jsonschema_is_a_usage_error(
        document: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # makes `import jsonschema` fail
    with pytest.raises(UsageError, match=r"pip install 'jsonschema>=4.18'"):
        validate(document)


def test_the_documented_example_validates() -> None:
    text = (Path(__file__).parents[1] / "docs" / "results-schema.md").read_text(encoding="utf-8")
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    validate(json.loads(example))


# Each a hand edit of a full row (rounds, --writeback, --energy, --transfers, --profile-time)
# and whether both the schema and the loader refuse it.
MUTATIONS = {
    "status missing": "del B[0]['status']",
    "complete missing": "del d['complete']",
    "stats missing": "del B[0]['stats']",
    "stats count 0": "B[0]['stats']['count'] = 0",
    "gbps missing": "del B[0]['throughput']['gbps']",
    "source missing": "del B[0]['source']",
    "warnings missing": "del B[0]['warnings']",
    "shape zero": "B[0]['shape'] = [0]",
    "params float": "B[0]['params']['TILE'] = 16.5",
    "device index missing": "del d['devices'][0]['index']",
    "device sm_clock negative": "d['devices'][0]['sm_clock_khz'] = -1",
    "device uuid int": "d['devices'][0]['uuid'] = 5",
    "device settings list": "d['devices'][0]['settings'] = []",
    "telemetry polls string": "B[0]['telemetry']['polls'] = '3'",
    "telemetry clock range string": "B[0]['telemetry']['sm_clock_mhz'] = '1500'",
    "telemetry unknown field": "B[0]['telemetry']['clock_event_reasons'] = ['sw power cap']",
    "energy negative": "B[0]['energy']['joules'] = -1",
    "energy without launches": "del B[0]['energy']['launches']",
    "energy unknown field": "B[0]['energy']['method'] = 'nvml'",
    "transfers pinned negative": "B[0]['transfers']['pinned']['h2d_s'] = -1",
    "transfers trip string": "B[0]['transfers']['end_to_end_s'] = '1'",
    "transfers unknown field": "B[0]['transfers']['note'] = 'x'",
    "transfers unknown phase": "B[0]['transfers']['pinned']['how'] = 'events'",
    "clock zero": "B[0]['sample_clocks_mhz'][0] = 0",
    "sample over a day": "B[0]['samples_s'][0] = 1e6",
    "zero input tiny": "B[0]['zero_input_samples_s'] = [1e-12]",
    "unit unknown": "B[0]['unit'] = 'rt'",
    "l2_flush unknown": "B[0]['l2_flush'] = 'dirty'",
    "kind unknown": "B[0]['kind'] = 'kernel'",
    "rounds 0": "B[0]['rounds'] = 0",
    "phases negative": "B[0]['phases']['compile'] = -1",
    "cpu reference negative": "B[0]['cpu_reference_s'] = -1",
    "total_elements negative": "B[0]['verification']['total_elements'] = -3",
    "bad_elements negative": "B[0]['verification']['bad_elements'] = -3",
    "PASS without samples": "B[0]['samples_s'] = []; B[0]['stats'] = None; "
                            "B[0]['sample_clocks_mhz'] = []",
    "PASS that is FAIL": "B[0]['verification']['passed'] = False",
    "PASS with a suspicion": "B[0]['suspect'] = 'faster than DRAM'",
    "PASS with a skip reason": "B[0]['skipped'] = 'x'",
    "SKIP with a verification": "B[0]['skipped'] = 'x'; B[0]['status'] = 'SKIP'",
    "SKIP without samples": "B[0].update(skipped='x', status='SKIP', verification=None, "
                            "samples_s=[], stats=None, sample_clocks_mhz=[])",
    "TIMEOUT with a verification": "B[0]['status'] = 'TIMEOUT'; B[0]['error'] = 'timed out'",
    "TIMEOUT without an error": "B[0].update(status='TIMEOUT', verification=None)",
    "TIMEOUT": "B[0].update(status='TIMEOUT', verification=None, error='--timeout 1')",
    "ERROR reference without an error": "B[-1]['status'] = 'ERROR'",
    "REF with a verification": "B[-1]['verification'] = B[0]['verification']",
    "REF with an error": "B[-1]['error'] = 'x'",
    "SUSPECT without a reason": "B[0]['status'] = 'SUSPECT'; B[0]['suspect'] = ''",
    "SUSPECT": "B[0]['status'] = 'SUSPECT'; B[0]['suspect'] = 'faster than DRAM'",
    "unknown row field": "B[0]['future'] = {'x': 1}",
    "passed with bad elements": "B[0]['verification']['bad_elements'] = 3",
    "control character in a variant": "B[0]['variant'] = 'a\\x1b[2Jb'",
    "control character in a dim": "B[0]['dims'][0] = 'R\\x07'",
    "control character in a parameter": "B[0]['params']['T\\x9b'] = 1",
    "control character in a GPU": "d['devices'][0]['name'] = 'H\\x1b]0;x\\x07'",
    "launch grid not a list": "B[0]['launches'][0]['grid'] = 'x'",
    "launch registers negative": "B[0]['launches'][0]['registers'] = -1",
    "launch of new attributes": "B[0]['launches'][0]['cluster'] = [2, 1, 1]",
    "variant ERROR without an error": "B[0].update(status='ERROR', verification=None)",
}
# What JSON Schema cannot say, which the loader alone refuses (docs/results-schema.md lists them)
LOADER_ONLY = {
    "device out of range": "B[0]['device'] = 5",
    "writeback pairs unequal": "B[0]['writeback_baseline_s'] = B[0]['writeback_baseline_s'][:1]",
    "integer over 64 bits": "B[0]['params']['TILE'] = 2**64",
    "integer with a fraction": "B[0]['rounds'] = 2.0",
    "NaN (Python's json reads it)": "B[0]['samples_s'][0] = math.nan",
    "Infinity": "B[0]['cpu_reference_s'] = math.inf",
}
# The run's informational metadata, which the loader reads defensively and never refuses
SCHEMA_ONLY = {
    "tool version int": "d['tool']['version'] = 1",
    "notes a string": "d['notes'] = 'hello'",
    "command a string": "d['command'] = 'cudabench run'",
    "profile negative": "d['profile'] = {'wall_s': -1}",
    "created missing": "del d['created']",
    # and null in a field added without a version change: read as absent, as in older files
    "unit null": "B[0]['unit'] = None",
    "telemetry null": "B[0]['telemetry'] = None",
    "batch samples null": "B[0]['batch_samples_s'] = None",
    "settings null": "d['devices'][0]['settings'] = None",
}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Return a fake run's document with every optional measurement on its rows."""
    import subprocess

    root = Path(__file__).parents[1]
    path = tmp_path_factory.mktemp("full") / "full.json"
    subprocess.run([sys.executable, str(root / "tests" / "fake_cli.py"), "transpose", "--size",
                    "256", "--rounds", "2", "--writeback", "--energy", "0.1", "--transfers",
                    "--profile-time", "--json", str(path), "--quiet"],
                   cwd=root, check=True, capture_output=True)
    document: dict[str, Any] = json.loads(path.read_text())
    assert document["benchmarks"][0]["energy"] and document["benchmarks"][-1]["kind"] == \
        "reference"
    return document


def _verdicts(document: dict[str, Any], code: str, folder: Path) -> tuple[bool, bool]:
    """Return whether the schema and the loader accept the document edited by code."""
    from cudabench.results import load_results

    d = copy.deepcopy(document)
    exec(code, {"d": d, "B": d["benchmarks"], "math": math})
    try:
        validate(d)
        schema_ok = True
    except ResultsFileError:
        schema_ok = False
    path = folder / "edited.json"
    path.write_text(json.dumps(d))  # NaN and Infinity as Python's json writes them
    try:
        load_results(path)
        loader_ok = True
    except ResultsFileError:
        loader_ok = False
    return schema_ok, loader_ok


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_the_schema_and_the_loader_agree_on_an_edited_file(full_run: dict[str, Any],
                                                           tmp_path: Path, name: str) -> None:
    # validate() passed files load_results refused (a clock of 0, unit "rt", joules -1...),
    # and refused files it loaded (no status, a negative CPU time, a TIMEOUT row verified)
    schema_ok, loader_ok = _verdicts(full_run, MUTATIONS[name], tmp_path)
    assert schema_ok == loader_ok, f"schema accepts: {schema_ok}, loader: {loader_ok}"


@pytest.mark.parametrize(("name", "loader_only"), [
    *((name, True) for name in LOADER_ONLY), *((name, False) for name in SCHEMA_ONLY)])
def test_the_documented_differences_are_the_only_ones(full_run: dict[str, Any],
                                                      tmp_path: Path, name: str,
                                                      loader_only: bool) -> None:
    code = (LOADER_ONLY if loader_only else SCHEMA_ONLY)[name]
    assert _verdicts(full_run, code, tmp_path) == (loader_only, not loader_only)
    assert _verdicts(full_run, "pass", tmp_path) == (True, True)


def _table_fields(text: str, heading: str) -> list[str]:
    """Return the first column of the first table under a heading of docs/results-schema.md."""
    section = text.split(f"\n{heading}\n", 1)[1]
    rows = section.split("\n\n| field |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [row.split("`")[1] for row in rows]


def test_the_documented_required_fields_are_the_schemas() -> None:
    # "Every field in the first table is required" listed l2_flush, which is optional in the
    # schema and the loader (files before 2026-11-27 lack it)
    text = (Path(__file__).parents[1] / "docs" / "results-schema.md").read_text(encoding="utf-8")
    required = load_schema()["$defs"]["benchmark"]["required"]
    assert _table_fields(text, "## Benchmarks") == required
    assert "l2_flush" in _table_fields(text, "### Fields added without a version change")


def test_the_docs_say_a_version_1_baseline_needs_its_flush() -> None:
    # a version 1 file was flushed by a memset; the default is now clean, and compare refuses
    # to mix the two (exit 2): "a version 1 baseline compares with a version 2 run" misled
    root = Path(__file__).parents[1]
    schema_doc = " ".join((root / "docs" / "results-schema.md").read_text().split())
    readme = " ".join((root / "README.md").read_text().split())
    assert "compares with a version 2 run measured with `--l2-flush memset`" in schema_doc
    assert "still load, and compare with runs of their L2 flush (`--l2-flush memset`)" in readme
