"""Result records (frozen dataclasses, seconds everywhere) and the versioned JSON file."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


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

    @property
    def key(self) -> tuple:
        """Identify the benchmark across runs: what compare pairs on."""
        return (
            self.op, self.variant, tuple(sorted(self.params.items())),
            tuple(self.shape), self.dtype, self.hot,
        )

    @property
    def status(self) -> str:
        """Return PASS, FAIL, ERROR, or REF for a reference row."""
        if self.error is not None:
            return "ERROR"
        if self.kind == "reference":
            return "REF"
        assert self.verification is not None
        return "PASS" if self.verification.passed else "FAIL"
