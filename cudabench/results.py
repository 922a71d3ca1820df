"""Result records (frozen dataclasses, seconds everywhere) and the versioned JSON file."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from cudabench.stats import Summary, summarize


@dataclass(frozen=True)
class Verification:
    """How a kernel's result compared with the reference."""

    passed: bool
    rel_error: float  # ||result - reference|| / ||reference||
    max_abs_error: float
    bad_elements: int  # elements outside tolerance, unwritten (poisoned) ones included
    total_elements: int
    criterion: str  # the rule applied, for humans

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (non-finite numbers become null)."""
        return {
            "passed": self.passed,
            "rel_error": _finite(self.rel_error),
            "max_abs_error": _finite(self.max_abs_error),
            "bad_elements": self.bad_elements,
            "total_elements": self.total_elements,
            "criterion": self.criterion,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Verification:
        """Rebuild from to_dict's output."""
        return cls(
            passed=bool(data["passed"]),
            rel_error=_number(data["rel_error"]),
            max_abs_error=_number(data["max_abs_error"]),
            bad_elements=int(data["bad_elements"]),
            total_elements=int(data["total_elements"]),
            criterion=str(data["criterion"]),
        )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _number(value) -> float:
    return float("inf") if value is None else float(value)


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU a run measured, and the software stack around it."""

    name: str
    compute_capability: str
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    sm_clock_khz: int
    memory_clock_khz: int
    memory_bus_bits: int
    max_threads_per_block: int
    max_shared_bytes_per_block: int
    driver_version: str
    cuda_version: str
    pycuda_version: str

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class BenchmarkResult:
    """One variant (or reference) measured at one shape, dtype and parameter set."""

    op: str
    variant: str
    params: Mapping[str, int]
    shape: tuple[int, ...]
    dims: tuple[str, ...]
    dtype: str
    hot: bool
    samples_s: tuple[float, ...] = ()
    verification: Verification | None = None
    flops: int = 0
    bytes_moved: int = 0
    kind: str = "kernel"  # "kernel" or "reference" (the device-to-device copy)
    source: str = ""
    error: str | None = None  # why it could not be compiled or run
    warnings: tuple[str, ...] = ()
    cpu_reference_s: float | None = None
    launches: tuple[Mapping, ...] = field(default=())  # entry, grid, block, registers...

    @functools.cached_property
    def summary(self) -> Summary | None:
        """Return the statistics of the samples (None when nothing was timed)."""
        return summarize(self.samples_s) if self.samples_s else None

    @property
    def median_s(self) -> float | None:
        """Return the median sample in seconds (None when nothing was timed)."""
        return self.summary.median_s if self.summary else None

    @property
    def gflops(self) -> float | None:
        """Return the arithmetic rate at the median, for ops that count FLOPs."""
        return self.flops / self.median_s / 1e9 if self.median_s and self.flops else None

    @property
    def gbps(self) -> float | None:
        """Return the effective bandwidth at the median (the op's fewest bytes moved)."""
        return self.bytes_moved / self.median_s / 1e9 if self.median_s else None

    @property
    def key(self) -> tuple:
        """Identify the benchmark across runs: what compare pairs on."""
        return (
            self.op, self.variant, tuple(sorted(self.params.items())),
            tuple(self.shape), self.dtype, self.hot,
        )

    @property
    def status(self) -> str:
        """Return PASS or FAIL (verified; a kernel that faulted failed), ERROR, or REF."""
        if self.verification is not None:
            return "PASS" if self.verification.passed else "FAIL"
        if self.error is not None:
            return "ERROR"  # not compiled or not launched: nothing was verified
        return "REF" if self.kind == "reference" else "ERROR"


# -- the results file ------------------------------------------------------------------

SCHEMA_VERSION = 1
FILE_KIND = "cudabench-results"


@dataclass(frozen=True)
class ResultsFile:
    """A loaded results file: where it came from, the GPU, and its benchmarks."""

    path: str
    metadata: Mapping  # tool, created, git commit, host, command...
    gpu: Mapping
    benchmarks: tuple[BenchmarkResult, ...]

    @property
    def gpu_name(self) -> str:
        """Return the GPU model name ('' when the file holds no GPU)."""
        return str(self.gpu.get("name", ""))


def benchmark_to_dict(result: BenchmarkResult) -> dict:
    """Return a benchmark as a JSON-ready dict, with its statistics and throughput."""
    return {
        "op": result.op,
        "variant": result.variant,
        "kind": result.kind,
        "params": dict(result.params),
        "shape": list(result.shape),
        "dims": list(result.dims),
        "dtype": result.dtype,
        "hot": result.hot,
        "status": result.status,
        "error": result.error,
        "verification": result.verification.to_dict() if result.verification else None,
        "samples_s": list(result.samples_s),
        "stats": result.summary.to_dict() if result.summary else None,
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
    }


def benchmark_from_dict(data: Mapping, check: _Checker) -> BenchmarkResult:
    """Rebuild a benchmark from benchmark_to_dict's output; errors name the field."""
    params = check.field(data, "params", dict)
    for name, value in params.items():
        check.expect(_is_int(value), f"params.{name}", "an integer")
    shape = check.field(data, "shape", list)
    check.expect(all(_is_int(v) and v > 0 for v in shape), "shape", "a list of positive integers")
    dims = check.field(data, "dims", list)
    check.expect(all(isinstance(v, str) for v in dims), "dims", "a list of names")
    samples = check.field(data, "samples_s", list)
    for i, value in enumerate(samples):
        check.expect(_is_number(value) and value > 0, f"samples_s[{i}]", "a positive number")
    kind = check.field(data, "kind", str)
    check.expect(kind in ("kernel", "reference"), "kind", '"kernel" or "reference"')
    error = data.get("error")
    check.expect(error is None or isinstance(error, str), "error", "a string or null")
    verification = data.get("verification")
    if verification is not None:
        check.expect(isinstance(verification, dict), "verification", "an object or null")
        try:
            verification = Verification.from_dict(verification)
        except (KeyError, TypeError, ValueError) as exc:
            raise check.error("verification", f"an object with passed, rel_error... ({exc})"
                              ) from None
    check.expect(kind != "kernel" or error is not None or verification is not None,
                 "verification", "an object: a kernel that ran was verified")
    throughput = check.field(data, "throughput", dict)
    for name in ("flops", "bytes_moved"):
        check.expect(_is_int(throughput.get(name)), f"throughput.{name}", "an integer")
    warnings = data.get("warnings", [])
    check.expect(isinstance(warnings, list) and all(isinstance(w, str) for w in warnings),
                 "warnings", "a list of strings")
    launches = data.get("launches", [])
    check.expect(isinstance(launches, list) and all(isinstance(x, dict) for x in launches),
                 "launches", "a list of objects")
    cpu = data.get("cpu_reference_s")
    check.expect(cpu is None or _is_number(cpu), "cpu_reference_s", "a number or null")
    return BenchmarkResult(
        op=check.field(data, "op", str),
        variant=check.field(data, "variant", str),
        params=params,
        shape=tuple(shape),
        dims=tuple(dims),
        dtype=check.field(data, "dtype", str),
        hot=check.field(data, "hot", bool),
        samples_s=tuple(float(v) for v in samples),
        verification=verification,
        flops=throughput["flops"],
        bytes_moved=throughput["bytes_moved"],
        kind=kind,
        source=str(data.get("source", "")),
        error=error,
        warnings=tuple(warnings),
        cpu_reference_s=cpu,
        launches=tuple(launches),
    )


def load_results(path) -> ResultsFile:
    """Load and validate a results file; ResultsFileError names the path and field."""
    import json
    from pathlib import Path

    from cudabench.errors import ResultsFileError

    path = Path(path)
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
    check = _Checker(path)
    check.expect(isinstance(data, dict), "", "a JSON object")
    check.expect(data.get("kind") == FILE_KIND, "kind", f'"{FILE_KIND}" (not a cudabench file?)')
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsFileError(
            f"{path}: schema_version {version!r} is not one this cudabench reads "
            f"({SCHEMA_VERSION}); compare files written by the same major version"
        )
    gpu = check.field(data, "gpu", dict)
    check.within("gpu").field(gpu, "name", str)
    entries = check.field(data, "benchmarks", list)
    benchmarks = []
    for i, entry in enumerate(entries):
        check.expect(isinstance(entry, dict), f"benchmarks[{i}]", "an object")
        benchmarks.append(benchmark_from_dict(entry, check.within(f"benchmarks[{i}]")))
    metadata = {k: v for k, v in data.items() if k not in ("gpu", "benchmarks")}
    return ResultsFile(str(path), metadata, gpu, tuple(benchmarks))


class _Checker:
    """Validate fields of decoded JSON; errors read `PATH: benchmarks[3].samples_s[2]: ...`."""

    def __init__(self, path, base: str = "") -> None:
        self.path = path
        self.base = base

    def within(self, name: str) -> _Checker:
        """Return a checker for a nested object."""
        return _Checker(self.path, f"{self.base}.{name}" if self.base else name)

    def error(self, field_name: str, expected: str):
        from cudabench.errors import ResultsFileError

        dotted = ".".join(part for part in (self.base, field_name) if part)
        location = f"{self.path}: {dotted}" if dotted else f"{self.path}"
        return ResultsFileError(f"{location}: expected {expected}")

    def expect(self, ok: bool, field_name: str, expected: str) -> None:
        if not ok:
            raise self.error(field_name, expected)

    def field(self, data: Mapping, name: str, kind: type):
        value = data.get(name) if isinstance(data, Mapping) else None
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        names = {str: "a string", list: "a list", dict: "an object", bool: "true or false",
                 int: "an integer"}
        self.expect(ok, name, names.get(kind, kind.__name__))
        return value


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
