"""Records to JSON-ready dicts and back (schema version 2); errors name the field."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cudabench.common.text import CONTROLS, escape_controls
from cudabench.errors import ResultsFileError
from cudabench.results.model import (
    L2_FLUSHES,
    UNITS,
    BenchmarkResult,
    DeviceInfo,
    Kind,
    Status,
    Verification,
)

SCHEMA_VERSION = 2
FILE_KIND = "cudabench-results"


def verification_to_dict(v: Verification) -> dict[str, Any]:
    """Return a JSON-ready dict (non-finite numbers become null)."""
    return {
        "passed": v.passed,
        "rel_error": _finite(v.rel_error),
        "max_abs_error": _finite(v.max_abs_error),
        "bad_elements": v.bad_elements,
        "total_elements": v.total_elements,
        "criterion": v.criterion,
    }


def device_to_dict(device: DeviceInfo) -> dict[str, Any]:
    """Return a device as a JSON-ready dict."""
    return dataclasses.asdict(device)


def benchmark_to_dict(result: BenchmarkResult, device: int | None) -> dict[str, Any]:
    """Return a benchmark as a JSON-ready dict; device is its index in the file's devices."""
    return {
        "op": result.op,
        "variant": result.variant,
        "kind": result.kind.value,
        "device": device,
        "params": dict(result.params),
        "shape": list(result.shape),
        "dims": list(result.dims),
        "dtype": result.dtype,
        "hot": result.hot,
        "l2_flush": result.l2_flush,
        "status": result.status.value,
        "error": result.error,
        "suspect": result.suspect,
        "skipped": result.skipped,
        "verification": (verification_to_dict(result.verification)
                         if result.verification else None),
        "samples_s": list(result.samples_s),
        "zero_input_samples_s": list(result.zero_input_samples_s),
        "stats": dataclasses.asdict(result.summary) if result.summary else None,
        "throughput": {
            "flops": result.flops,
            "bytes_moved": result.bytes_moved,
            "gflops": result.gflops,
            "gbps": result.gbps,
        },
        "cpu_reference_s": result.cpu_reference_s,
        "warnings": list(result.warnings),
        "launches": [dict(launch) for launch in result.launches],
        "source": result.source,
        "unit": result.unit,
        "compute_type": result.compute_type,
        "sample_clocks_mhz": list(result.sample_clocks_mhz),
        "slow_clock_samples_s": list(result.slow_clock_samples_s),
        "batch_samples_s": list(result.batch_samples_s),
        "telemetry": _json_ready(result.telemetry),
        "counters": {name: _finite(value) for name, value in result.counters.items()},
        "counters_note": result.counters_note,
        **({"counters_units": dict(result.counters_units)} if result.counters_units else {}),
        "energy": dict(result.energy),
        **({"writeback_after_run_s": list(result.writeback_after_run_s),
            "writeback_baseline_s": list(result.writeback_baseline_s)}
           if result.writeback_after_run_s else {}),
        "transfers": _json_ready(result.transfers),
        **({"phases": dict(result.phases)} if result.phases else {}),
        **({"rounds": result.rounds, "round_medians_s": list(result.round_medians_s)}
           if result.rounds > 1 else {}),
    }


def _json_ready(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of nested measurements with non-finite floats as null."""
    def clean(value: Any) -> Any:
        if isinstance(value, float):
            return _finite(value)
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    cleaned: dict[str, Any] = clean(data)
    return cleaned


class Checker:
    """Validate fields of decoded JSON; errors read `PATH: benchmarks[3].samples_s[2]: ...`."""

    NAMES = {str: "a string", list: "a list", dict: "an object", bool: "true or false",
             int: "an integer"}

    def __init__(self, path: object, base: str = "") -> None:
        self.path = path
        self.base = base

    def within(self, name: str) -> Checker:
        """Return a checker for a nested object."""
        return Checker(self.path, f"{self.base}.{name}" if self.base else name)

    def error(self, field_name: str, expected: str) -> ResultsFileError:
        """Return the error for a field that is not what was expected."""
        dotted = ".".join(part for part in (self.base, field_name) if part)
        location = f"{self.path}: {dotted}" if dotted else f"{self.path}"
        return ResultsFileError(f"{location}: expected {expected}")

    def expect(self, ok: bool, field_name: str, expected: str) -> None:
        """Raise the field's error unless ok."""
        if not ok:
            raise self.error(field_name, expected)

    def field(self, data: Any, name: str, kind: type) -> Any:
        """Return data[name], checked to be of kind (an int is never a bool, and fits 64
        bits); a string's or an object's terminal controls written out (printable)."""
        value = data.get(name) if isinstance(data, Mapping) else None
        ok = _is_int(value) if kind is int else isinstance(value, kind)
        self.expect(ok, name, self.NAMES.get(kind, kind.__name__))
        return printable(value) if kind in (str, dict) else value

    def name(self, data: Any, name: str) -> str:
        """Return data[name], checked to be a string without control characters: a name
        the tables print (a pull request's file could retitle or clear the terminal)."""
        value: Any = data.get(name) if isinstance(data, Mapping) else None
        self.expect(isinstance(value, str), name, "a string")
        self.expect(not CONTROLS.search(value), name, "a name without control characters")
        return str(value)

    def optional(self, data: Mapping[str, Any], name: str, kind: type) -> Any:
        """Return data[name] checked like field(), or None when absent or null."""
        return None if data.get(name) is None else self.field(data, name, kind)


def _unit(data: Mapping[str, Any], check: Checker) -> str:
    """Return a row's unit: one whose roofs cudabench knows, or "" (no arithmetic)."""
    unit = check.optional(data, "unit", str) or ""
    check.expect(unit in ("", *UNITS), "unit", f"one of {', '.join(UNITS)}")
    return str(unit)


def device_from_dict(data: Any, check: Checker) -> DeviceInfo:
    """Rebuild a device from device_to_dict's output."""
    check.expect(isinstance(data, dict), "", "an object")
    fields: dict[str, Any] = {}
    for spec in dataclasses.fields(DeviceInfo):
        if spec.name == "settings":
            fields["settings"] = _mapping(data, "settings", check)
            continue
        optional = spec.default is not dataclasses.MISSING
        kind = int if str(spec.type).startswith("int") else str
        if optional and spec.name != "index":
            fields[spec.name] = check.optional(data, spec.name, kind)
        elif spec.name == "name":
            fields[spec.name] = check.name(data, spec.name)
        else:  # index too: every version-2 writer wrote it (version 1's gets it migrating)
            fields[spec.name] = check.field(data, spec.name, kind)
        value = fields[spec.name]
        check.expect(kind is not int or value is None or value >= 0, spec.name,
                     "a non-negative integer")  # counts, sizes, clocks and an ordinal
    return DeviceInfo(**fields)


def verification_from_dict(data: Any, check: Checker) -> Verification:
    """Rebuild a verification from verification_to_dict's output."""
    check.expect(isinstance(data, dict), "", "an object or null")
    for name in ("rel_error", "max_abs_error"):
        value = data.get(name)
        check.expect(name in data and (value is None or _is_number(value)), name,
                     "a number or null")
    return Verification(
        passed=check.field(data, "passed", bool),
        rel_error=_number(data["rel_error"]),
        max_abs_error=_number(data["max_abs_error"]),
        bad_elements=_count(data, "bad_elements", check),
        total_elements=_count(data, "total_elements", check),
        criterion=check.field(data, "criterion", str),
    )


def _count(data: Mapping[str, Any], name: str, check: Checker) -> int:
    """Return data[name], checked to be a non-negative integer."""
    value = check.field(data, name, int)
    check.expect(value >= 0, name, "a non-negative integer")
    return int(value)


def benchmark_from_dict(data: Mapping[str, Any], check: Checker,
                        devices: Sequence[DeviceInfo]) -> BenchmarkResult:
    """Rebuild a benchmark from benchmark_to_dict's output; errors name the field."""
    for name in REQUIRED_ROW_FIELDS:  # what every version wrote: a row without is edited
        check.expect(name in data, name, "present (every row has it: was it edited by hand?)")
    params: Any = data.get("params")  # as written: a name with a control is refused, not escaped
    check.expect(isinstance(params, dict), "params", "an object")
    for name, value in params.items():
        check.expect(not CONTROLS.search(name), f"params.{ascii(name)}",
                     "a parameter name without control characters")
        check.expect(_is_int(value), f"params.{name}", "an integer")
    shape = check.field(data, "shape", list)
    check.expect(all(_is_int(v) and v > 0 for v in shape), "shape", "a list of positive integers")
    dims = check.field(data, "dims", list)
    check.expect(all(isinstance(v, str) and not CONTROLS.search(v) for v in dims), "dims",
                 "a list of names")
    samples = check.field(data, "samples_s", list)
    if not _all_times(samples):
        for i, value in enumerate(samples):
            check.expect(_is_time(value), f"samples_s[{i}]", TIME_TEXT)
    kinds = [kind.value for kind in Kind]
    kind_text = check.field(data, "kind", str)
    check.expect(kind_text in kinds, "kind", " or ".join(f'"{k}"' for k in kinds))
    kind = Kind(kind_text)
    error = data.get("error")
    check.expect(error is None or isinstance(error, str), "error", "a string or null")
    verification = None
    if data.get("verification") is not None:
        verification = verification_from_dict(data["verification"], check.within("verification"))
    check.expect(kind is not Kind.VARIANT or error is not None or verification is not None
                 or data.get("skipped") is not None,
                 "verification", "an object: a variant that ran was verified")
    device = data.get("device")
    check.expect(device is None or (_is_int(device) and 0 <= device < len(devices)), "device",
                 f"null or an index into devices (0..{len(devices) - 1})")
    writeback = _writeback(data, check)
    throughput = check.field(data, "throughput", dict)
    for name in ("flops", "bytes_moved"):  # a negative count drew a roofline off its axes
        value = throughput.get(name)
        check.expect(_is_int(value) and value >= 0, f"throughput.{name}",
                     "a non-negative integer")
    for name in ("gflops", "gbps"):  # derived from the median again, but written always
        value = throughput.get(name)
        check.expect(name in throughput and (value is None or _is_number(value)),
                     f"throughput.{name}", "a number or null")
    _check_stats(data.get("stats"), check)
    warnings = data.get("warnings", [])
    check.expect(isinstance(warnings, list) and all(isinstance(w, str) for w in warnings),
                 "warnings", "a list of strings")
    launches: Any = data.get("launches")
    check.expect(isinstance(launches, list) and all(isinstance(x, dict) for x in launches),
                 "launches", "a list of objects")
    for i, launch in enumerate(launches):
        _check_launch(launch, check.within(f"launches[{i}]"))
    cpu = data.get("cpu_reference_s")
    check.expect(cpu is None or (_is_number(cpu) and cpu >= 0), "cpu_reference_s",
                 "a non-negative number of seconds or null")
    result = BenchmarkResult(
        op=check.name(data, "op"),
        variant=check.name(data, "variant"),
        params=params,
        shape=tuple(shape),
        dims=tuple(dims),
        dtype=check.name(data, "dtype"),
        hot=check.field(data, "hot", bool),
        samples_s=tuple(float(v) for v in samples),
        verification=verification,
        flops=throughput["flops"],
        bytes_moved=throughput["bytes_moved"],
        kind=kind,
        source=check.field(data, "source", str),
        error=printable(error),
        warnings=tuple(printable(warnings)),
        cpu_reference_s=cpu,
        launches=tuple(printable(launches)),
        device=devices[device] if device is not None else None,
        timed_out=data.get("status") == "TIMEOUT",
        suspect=check.optional(data, "suspect", str),
        skipped=check.optional(data, "skipped", str),
        zero_input_samples_s=_samples(data, "zero_input_samples_s", check),
        unit=_unit(data, check),
        compute_type=(check.optional(data, "compute_type", str)
                      or _legacy_compute_type(data, throughput["flops"])),
        sample_clocks_mhz=_clocks(data, check),
        slow_clock_samples_s=_samples(data, "slow_clock_samples_s", check),
        batch_samples_s=_samples(data, "batch_samples_s", check),
        telemetry=_telemetry(data, check),
        counters=_numbers(data, "counters", check),
        counters_note=check.optional(data, "counters_note", str),
        counters_units=_units(data, check),
        energy=_energy(data, check),
        writeback_after_run_s=writeback[0],
        writeback_baseline_s=writeback[1],
        transfers=_transfers(data, check),
        phases=_seconds(data, "phases", check),
        l2_flush=_l2_flush(data, check),
        rounds=_rounds(data, check),
        round_medians_s=_samples(data, "round_medians_s", check),
    )
    _check_consistent(result, data, check)
    return result


def _check_consistent(result: BenchmarkResult, data: Mapping[str, Any], check: Checker) -> None:
    """Refuse a row whose stated status disagrees with its fields, or a verified or
    reference row with no samples: a gate must never judge a file that lies about itself."""
    stated = data.get("status")
    check.expect(stated == result.status.value, "status",
                 f'"{result.status.value}", as its verification, error and skip fields say '
                 "(the file is inconsistent: was it edited by hand?)")
    if result.status in (Status.PASS, Status.SUSPECT, Status.REF):
        check.expect(bool(result.samples_s), "samples_s",
                     f"a non-empty list: a {result.status.value} row was timed")
    if result.status in (Status.TIMEOUT, Status.SKIP):  # nothing of theirs was verified
        check.expect(result.verification is None, "verification",
                     f"null on a {result.status.value} row")
    if result.status is Status.TIMEOUT:
        check.expect(result.error is not None, "error",
                     "a string on a TIMEOUT row: the limit it passed")
    verification = result.verification
    if verification is not None and verification.passed:
        check.expect(verification.bad_elements == 0, "verification.bad_elements",
                     "0 where verification.passed is true (the file is inconsistent: was it "
                     "edited by hand?)")


LAUNCH_COUNTS = ("registers", "shared_bytes", "local_bytes", "max_threads_per_block")


def _check_launch(launch: Mapping[str, Any], check: Checker) -> None:
    """Check a launch's known attributes where present (report prints them)."""
    if "entry" in launch:
        check.field(launch, "entry", str)
    for name in ("grid", "block"):
        value = launch.get(name, [])
        check.expect(isinstance(value, list) and all(_is_int(v) and v >= 1 for v in value),
                     name, "a list of positive integers")
    for name in LAUNCH_COUNTS:
        value = launch.get(name, 0)
        check.expect(_is_int(value) and value >= 0, name, "a non-negative integer")


# Fields every version's writer put on every row (the JSON Schema's required ones).
REQUIRED_ROW_FIELDS = ("status", "error", "verification", "samples_s", "stats", "throughput",
                       "cpu_reference_s", "warnings", "launches", "source")
STATS_TIMES = ("median_s", "min_s", "max_s", "mean_s")


def _check_stats(stats: Any, check: Checker) -> None:
    """Check a row's stats: null, or the summary of its samples (which readers derive
    again from samples_s, but other tools read)."""
    if stats is None:
        return
    check.expect(isinstance(stats, dict), "stats", "an object or null")
    check.expect(_is_int(stats.get("count")) and stats["count"] >= 1, "stats.count",
                 "a positive integer")
    for name in STATS_TIMES:
        value = stats.get(name)
        check.expect(_is_number(value) and value > 0, f"stats.{name}",
                     "a positive number of seconds")
    spread = stats.get("spread")
    check.expect(_is_number(spread) and spread >= 0, "stats.spread", "a non-negative number")


def _rounds(data: Mapping[str, Any], check: Checker) -> int:
    """Return how many rounds the row pools (--rounds; 1 in files without the field)."""
    rounds = data.get("rounds", 1)
    check.expect(_is_int(rounds) and rounds >= 1, "rounds", "an integer, at least 1")
    return int(rounds)


def _l2_flush(data: Mapping[str, Any], check: Checker) -> str:
    """Return the row's flush method; a cold row from before the field was recorded was
    flushed by a memset, the only method then."""
    if "l2_flush" not in data:
        return "" if data.get("hot") else "memset"
    method = check.field(data, "l2_flush", str)
    check.expect(method in ("", *L2_FLUSHES), "l2_flush",
                 f"one of {', '.join(L2_FLUSHES)}, or \"\" (not flushed)")
    return str(method)


def _mapping(data: Mapping[str, Any], name: str, check: Checker) -> dict[str, Any]:
    """Return an optional object field (absent or null: empty), printable."""
    value = data.get(name)
    value = {} if value is None else value  # a falsy non-object ([], "", 0) is refused
    check.expect(isinstance(value, dict), name, "an object")
    return dict(printable(value))


def printable(value: Any) -> Any:
    """Return decoded JSON with every string's terminal controls written out as \\xNN: a
    results file another job wrote (a pull request's) is printed by compare, report and
    history, and an escape sequence in its driver version or error text would retitle or
    clear the reader's terminal."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, Mapping):
        return {escape_controls(str(k)): printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    return value


TELEMETRY_RANGES = ("sm_clock_mhz", "memory_clock_mhz")  # {"min": n, "max": n}
TELEMETRY_NUMBERS = ("temperature_c", "power_w", "power_violation_s", "thermal_violation_s",
                     "polls")


def _telemetry(data: Mapping[str, Any], check: Checker) -> dict[str, Any]:
    """Return the NVML telemetry object, its known fields checked (renderers format them);
    a field it does not know is left out, not refused: a newer cudabench of the same schema
    version may add one (docs/results-schema.md, Versioning)."""
    values = _mapping(data, "telemetry", check)
    known: dict[str, Any] = {}
    for key, value in values.items():
        if key == "throttle_reasons":
            check.expect(isinstance(value, list) and all(isinstance(v, str) for v in value),
                         f"telemetry.{key}", "a list of strings")
        elif key in TELEMETRY_RANGES:
            check.expect(value is None or (isinstance(value, dict) and all(
                v is None or _is_number(v) for v in value.values())),
                f"telemetry.{key}", "an object of numbers (min, max) or null")
        elif key in TELEMETRY_NUMBERS:
            check.expect(value is None or _is_number(value), f"telemetry.{key}",
                         "a number or null")
        else:
            continue
        known[key] = value
    return known


ENERGY_FIELDS = ("joules", "launches")  # what a pass always holds (and seconds)
ENERGY_NUMBERS = (*ENERGY_FIELDS, "seconds")


def _energy(data: Mapping[str, Any], check: Checker) -> dict[str, float]:
    """Return the --energy pass: finite, non-negative numbers (joules, launches, seconds);
    a field it does not know is left out, as in _telemetry."""
    values = _mapping(data, "energy", check)
    for key in ENERGY_FIELDS if values else ():
        check.expect(key in values, f"energy.{key}", "present (a pass has joules and launches)")
    known = {key: values[key] for key in ENERGY_NUMBERS if key in values}
    for key, value in known.items():
        check.expect(_is_number(value) and value >= 0, f"energy.{key}",
                     "a non-negative number")
    return {key: float(value) for key, value in known.items()}


def _units(data: Mapping[str, Any], check: Checker) -> dict[str, str]:
    """Return the counters' units: metric name -> a string."""
    values = _mapping(data, "counters_units", check)
    for key, value in values.items():
        check.expect(isinstance(value, str), f"counters_units.{key}", "a string")
    return dict(values)


def _writeback(data: Mapping[str, Any], check: Checker
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Return the --writeback pass: flush times after a run and after none, both or
    neither (one without the other says nothing)."""
    after = _samples(data, "writeback_after_run_s", check)
    baseline = _samples(data, "writeback_baseline_s", check)
    check.expect(len(after) == len(baseline), "writeback_after_run_s",
                 "as many as writeback_baseline_s (a pass times them in pairs)")
    return after, baseline


TRANSFER_KINDS = ("pinned", "pageable")  # each an object of numbers (seconds, bytes, GB/s)
TRANSFER_PHASES = ("h2d_s", "h2d_bytes", "h2d_gbps", "d2h_s", "d2h_bytes", "d2h_gbps")
TRANSFER_TRIP = ("kernel_s", "end_to_end_s", "cpu_reference_s", "link_peak_bytes_per_s")


def _transfers(data: Mapping[str, Any], check: Checker) -> dict[str, Any]:
    """Return the --transfers phases: per memory kind an object of numbers, and the trip's
    numbers (a string or null there reached the renderers: an internal error). A field it
    does not know is left out, as in _telemetry."""
    values = _mapping(data, "transfers", check)
    known: dict[str, Any] = {}
    for key, value in values.items():
        if key in TRANSFER_KINDS:
            check.expect(isinstance(value, dict), f"transfers.{key}",
                         "an object of non-negative numbers")
            known[key] = {name: value[name] for name in TRANSFER_PHASES if name in value}
            check.expect(all(_is_number(v) and v >= 0 for v in known[key].values()),
                         f"transfers.{key}", "an object of non-negative numbers")
        elif key in TRANSFER_TRIP:
            check.expect(value is None or (_is_number(value) and value >= 0),
                         f"transfers.{key}", "a non-negative number or null")
            known[key] = value
    return known


def _seconds(data: Mapping[str, Any], name: str, check: Checker) -> dict[str, float]:
    """Return an optional object of non-negative seconds (--profile-time's phases)."""
    values = _mapping(data, name, check)
    for key, value in values.items():
        check.expect(_is_number(value) and value >= 0, f"{name}.{key}",
                     "a non-negative number of seconds")
    return {key: float(value) for key, value in values.items()}


def _numbers(data: Mapping[str, Any], name: str, check: Checker) -> dict[str, float]:
    """Return an optional object of numbers (null: not finite, read back as inf)."""
    values = _mapping(data, name, check)
    for key, value in values.items():
        check.expect(value is None or _is_number(value), f"{name}.{key}", "a number or null")
    return {key: _number(value) for key, value in values.items()}


def _clocks(data: Mapping[str, Any], check: Checker) -> tuple[float | None, ...]:
    """Return the per-sample SM clocks: positive numbers, or null where unknown."""
    values = data.get("sample_clocks_mhz")
    values = [] if values is None else values  # absent, or null: none
    check.expect(isinstance(values, list) and all(v is None or (_is_number(v) and v > 0)
                                                  for v in values),
                 "sample_clocks_mhz", "a list of positive numbers or nulls")
    return tuple(None if v is None else float(v) for v in values)


# float16 rows accumulate in float32: their CUDA-core roof is float32's.
_ACCUMULATOR = {"float16": "float32"}


def _legacy_compute_type(data: Mapping[str, Any], flops: int) -> str:
    """The roof type of a row whose file predates the field (results of cudabench 0.1 and
    schema 2 before tensor-core rungs): every such row ran on the CUDA cores, rated by its
    accumulator's type. Without it the row would be held to no compute roof at all and its
    % of peak read against intensity x DRAM alone. Rows without FLOPs need none."""
    dtype = data.get("dtype")
    if not flops or not isinstance(dtype, str) or "compute_type" in data or "unit" in data:
        return ""  # a file that has the fields said what it meant, "" included
    return _ACCUMULATOR.get(dtype, dtype)


def _samples(data: Mapping[str, Any], name: str, check: Checker) -> tuple[float, ...]:
    """Return an optional list of samples, each a time a launch can take (absent: none)."""
    values = data.get(name)
    values = [] if values is None else values  # absent, or null: none
    check.expect(isinstance(values, list) and _all_times(values),
                 name, f"a list of times, each {TIME_TEXT}")
    return tuple(float(v) for v in values)


def _finite(value: float) -> float | None:
    return value if _is_number(value) else None


def _number(value: Any) -> float:
    return float("inf") if value is None else float(value)


# No launch takes less than a nanosecond (event timers resolve about half a microsecond, a
# launch takes a microsecond or more): a smaller sample, 5e-324 say, is a damaged or forged
# file, which compare would otherwise take for a speedup.
MIN_TIME_S = 1e-9
# and none takes a day (--timeout stops it long before): 1e308 overflowed the statistics
MAX_TIME_S = 86400.0
TIME_TEXT = ("a number of seconds, from 1e-9 (no launch takes less than a nanosecond) to "
             "86400 (a day)")


def _is_time(value: Any) -> bool:
    return _is_number(value) and MIN_TIME_S <= value <= MAX_TIME_S


def _all_times(values: list[Any]) -> bool:
    """Return whether every value is a time (_is_time), the floats a file holds checked
    by comparison alone: thousands of samples a file, each a call of _is_time's before."""
    # NaN and infinities fail the comparison, and go to _is_time, which refuses them
    return all((type(v) is float and MIN_TIME_S <= v <= MAX_TIME_S) or _is_time(v)
               for v in values)


def _is_int(value: Any) -> bool:
    """Return whether value is an integer of 64 bits (JSON's may have any number of digits,
    which the arithmetic on counts and clocks cannot take as floats)."""
    return isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63


def _is_number(value: Any) -> bool:
    """Return whether value is a finite number a float can hold (JSON allows an integer of
    400 digits, which math.isfinite cannot take: an OverflowError, exit 4, until checked)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
