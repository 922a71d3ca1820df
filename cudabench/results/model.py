"""The result records: plain frozen dataclasses, seconds everywhere, raw samples kept."""

from __future__ import annotations

import enum
import functools
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudabench.common.stats import Summary, summarize
from cudabench.errors import ExitCode


class Kind(str, enum.Enum):
    """What a row measures: a kernel variant, a reference (the copy), or a vendor library."""

    VARIANT = "variant"
    REFERENCE = "reference"
    VENDOR = "vendor"

    def __str__(self) -> str:  # `print(row.kind)` says variant, not Kind.VARIANT
        return str(self.value)


class Status(str, enum.Enum):
    """A row's outcome: verified, failed verification, not run, or an unverified reference."""

    PASS = "PASS"
    FAIL = "FAIL"  # wrong result, or the kernel faulted
    ERROR = "ERROR"  # not compiled or not launched: nothing was verified
    REF = "REF"  # a reference row: timed, nothing to verify
    TIMEOUT = "TIMEOUT"  # did not finish within --timeout: killed with its worker process
    SUSPECT = "SUSPECT"  # verified, but faster than the device allows: not believed
    SKIP = "SKIP"  # not run, on purpose (the variant does not support the type, say)

    def __str__(self) -> str:  # `print(row.status)` says PASS, as the tables do
        return str(self.value)


FAILING_STATUSES = frozenset({Status.FAIL, Status.ERROR, Status.TIMEOUT, Status.SUSPECT})


@dataclass(frozen=True)
class Verification:
    """How a kernel's result compared with the reference."""

    passed: bool
    rel_error: float  # ||result - reference|| / ||reference||
    max_abs_error: float
    bad_elements: int  # elements outside tolerance, unwritten (poisoned) ones included
    total_elements: int
    criterion: str  # the rule applied, for humans


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU a result was measured on, and the driver around it."""

    name: str
    compute_capability: str
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    sm_clock_khz: int
    memory_clock_khz: int
    memory_bus_bits: int
    max_threads_per_block: int
    max_shared_bytes_per_block: int  # without opting in
    driver_version: str
    cuda_version: str
    index: int = 0  # CUDA ordinal in the measuring process
    pci_bus_id: str | None = None  # e.g. 0000:19:00.0
    uuid: str | None = None  # e.g. GPU-8e1f...; from NVML when nvidia-ml-py is installed
    # Shared memory a block may have when its kernel opts in (227 KiB on sm_90), if known.
    max_shared_bytes_per_block_optin: int | None = None
    # Settings that change what a card can do, from NVML when available: power limit, ECC,
    # MIG, persistence, max clocks, the host link (compare says when two files differ).
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def max_sm_clock_mhz(self) -> float:
        """Return the SM clock a sample is held against: NVML's maximum, else the
        attribute's."""
        from_nvml = self.settings.get("max_sm_clock_mhz")
        if isinstance(from_nvml, (int, float)) and not isinstance(from_nvml, bool) \
                and from_nvml > 0:
            return float(from_nvml)
        return self.sm_clock_khz / 1e3

    @property
    def identity(self) -> tuple[Any, ...]:
        """Return what tells two physical GPUs apart (the UUID where known)."""
        return (self.uuid,) if self.uuid else (self.name, self.pci_bus_id, self.index)


# How the L2 is flushed before each cold sample (--l2-flush). "clean": a kernel reads a
# buffer of twice the L2's size, which evicts what the last sample left (writing back its
# dirty lines there, off the clock) and leaves the L2 holding clean lines no kernel uses:
# a sample pays for no traffic but its own, as under Nsight Compute's cache control, less
# the dirty lines it leaves (at most the L2's size of a writing kernel's output), written
# back off the clock. "memset": the buffer is overwritten instead, as nvbench does; that
# leaves the L2 full of dirty lines which the timed kernel writes back inside its own
# window, whether it writes or not (on an H100, 10 us of a 184 us read-only dot and 6 us of
# the copy: docs/measurements.md).
L2_FLUSHES = ("clean", "memset")
DEFAULT_L2_FLUSH = "clean"


UNITS = ("cuda", "tensor")  # what a kernel runs on: each has its roofs (insight/roofs.py)


# A sample whose SM clock ran below this share of the card's maximum is set aside
# (measure/sampling.py); the notes that count such samples name the share.
SLOW_CLOCK = 0.75


@dataclass(frozen=True)
class BenchmarkResult:
    """One variant, reference or vendor row measured at one shape, dtype and parameter set."""

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
    kind: Kind = Kind.VARIANT
    source: str = ""
    error: str | None = None  # why it could not be compiled or run
    warnings: tuple[str, ...] = ()
    cpu_reference_s: float | None = None
    launches: tuple[Mapping[str, Any], ...] = field(default=())  # entry, grid, registers...
    device: DeviceInfo | None = None  # None only in files that predate schema 2
    timed_out: bool = False  # killed by the watchdog (--timeout)
    suspect: str | None = None  # why a verified result is faster than the device's roof
    zero_input_samples_s: tuple[float, ...] = ()  # the same kernel timed on all-zero inputs
    skipped: str | None = None  # why the variant was not run (status SKIP)
    # The roof a row is held against: the unit it runs on (UNITS) and the type of its
    # arithmetic ("float32", "tf32"...); "" when it does no arithmetic.
    unit: str = ""
    compute_type: str = ""
    # The kept samples' SM clocks in MHz, from stamps in the stream (None: not known), and
    # the samples set aside because they ran below SLOW_CLOCK of the maximum SM clock.
    sample_clocks_mhz: tuple[float | None, ...] = ()
    slow_clock_samples_s: tuple[float, ...] = ()
    # Back-to-back launches with the launch cost off the clock, warm L2: seconds per launch,
    # one value per batch.
    batch_samples_s: tuple[float, ...] = ()
    # NVML around the samples: clocks, temperature, power, throttle reasons, violations.
    telemetry: Mapping[str, Any] = field(default_factory=dict)
    # Nsight Compute metric -> value for one launch (--counters), and why none when asked.
    counters: Mapping[str, float] = field(default_factory=dict)
    counters_note: str | None = None
    # Each counter's unit as ncu printed it ("byte", "%", "nsecond"...); empty in files
    # written before it was kept.
    counters_units: Mapping[str, str] = field(default_factory=dict)
    # --energy: joules, launches and seconds of a pass of back-to-back launches.
    energy: Mapping[str, float] = field(default_factory=dict)
    # --writeback: seconds of an L2 flush right after a run (itself after a flush, off the
    # clock) and of one after no run, taken in turns: what the first takes beyond the second
    # is the write-back of the dirty lines the run left, which a cold sample does not pay.
    writeback_after_run_s: tuple[float, ...] = ()
    writeback_baseline_s: tuple[float, ...] = ()
    # --transfers: host<->device phases, each {"seconds", "bytes", "gbps"} by name.
    transfers: Mapping[str, Any] = field(default_factory=dict)
    # --profile-time: the worker's seconds per phase of this row (compile, inputs, CPU
    # reference, verify, samples...); empty unless asked for.
    phases: Mapping[str, float] = field(default_factory=dict, compare=False)
    # How the L2 was flushed before each cold sample ("clean" or "memset", --l2-flush): the
    # plan's, on every row of a cold plan (sampled or not); "" on --hot rows.
    l2_flush: str = ""
    # --rounds: how many rounds the row pools (1: measured once), and the median of each
    # round that was timed, in round order (empty for a row measured once).
    rounds: int = 1
    round_medians_s: tuple[float, ...] = ()
    # Which round a row of a --rounds run measured (0: the first); a pooled row's is its
    # first round's. Not written to results files: they hold pooled rows only.
    round_index: int = field(default=0, compare=False)
    # The results file a row was read from, where a figure draws several files' rows
    # (`plot A.json B.json`): their series apart. Not written to results files.
    origin: str = field(default="", compare=False)

    @property
    def gpu_sampling_s(self) -> float:
        """Return the GPU time in the row's samples as issue 29 counts it: the timed
        samples, those on zero inputs and one launch per batch (a batch sample is seconds
        per launch)."""
        return sum(self.samples_s) + sum(self.zero_input_samples_s) + sum(
            self.batch_samples_s)

    @property
    def slow_kept_samples_s(self) -> tuple[float, ...]:
        """Return the kept samples whose clock ran below SLOW_CLOCK: a run keeps them where
        too few would remain to set them aside (measure/sampling.py: split_slow)."""
        clocks = self.sample_clocks_mhz
        if self.device is None or len(clocks) != len(self.samples_s):
            return ()  # no maximum to hold them against, or no clock per sample
        slow = SLOW_CLOCK * self.device.max_sm_clock_mhz
        return tuple(s for s, clock in zip(self.samples_s, clocks)
                     if clock is not None and clock < slow)

    @property
    def slow_clock_share(self) -> float:
        """Return the share of the row's samples that ran below SLOW_CLOCK: those set
        aside and those kept (a mixed row's share of 0 hid that half ran slow)."""
        slow = len(self.slow_clock_samples_s) + len(self.slow_kept_samples_s)
        return slow / (len(self.slow_clock_samples_s) + len(self.samples_s)) if slow else 0.0

    @functools.cached_property
    def summary(self) -> Summary | None:
        """Return the statistics of the samples (None when nothing was timed)."""
        return summarize(self.samples_s) if self.samples_s else None

    @property
    def median_s(self) -> float | None:
        """Return the median sample in seconds (None when nothing was timed)."""
        return self.summary.median_s if self.summary else None

    @property
    def writeback_s(self) -> float | None:
        """Return what the next flush paid for this row's dirty lines: the median flush
        after a run less the median flush after none (None when not measured)."""
        if not (self.writeback_after_run_s and self.writeback_baseline_s):
            return None
        return (statistics.median(self.writeback_after_run_s)
                - statistics.median(self.writeback_baseline_s))

    @property
    def batch_median_s(self) -> float | None:
        """Return the median per-launch time of the batches (None when not measured)."""
        return statistics.median(self.batch_samples_s) if self.batch_samples_s else None

    @property
    def gflops(self) -> float | None:
        """Return the arithmetic rate at the median, for ops that count FLOPs."""
        return self.flops / self.median_s / 1e9 if self.median_s and self.flops else None

    @property
    def gbps(self) -> float | None:
        """Return the effective bandwidth at the median (the op's fewest bytes moved)."""
        return self.bytes_moved / self.median_s / 1e9 if self.median_s else None

    @property
    def key(self) -> tuple[Any, ...]:
        """Identify the benchmark across runs: what compare pairs on."""
        return (
            self.op, self.variant, tuple(sorted(self.params.items())),
            tuple(self.shape), self.dtype, self.hot,
        )

    @property
    def status(self) -> Status:
        """Return PASS or FAIL (verified; a kernel that faulted failed), ERROR, TIMEOUT or REF."""
        if self.skipped is not None:
            return Status.SKIP
        if self.timed_out:
            return Status.TIMEOUT
        if self.verification is not None:
            if not self.verification.passed:
                return Status.FAIL
            return Status.SUSPECT if self.suspect else Status.PASS
        if self.error is not None:
            return Status.ERROR
        return Status.REF if self.kind is not Kind.VARIANT else Status.ERROR


@dataclass(frozen=True)
class RunOutcome:
    """Everything one command measured, on one or more GPUs."""

    results: tuple[BenchmarkResult, ...]
    notes: tuple[str, ...] = ()  # variants skipped and why

    @property
    def nothing_measured(self) -> bool:
        """Return whether rows were planned and no kernel ran: every row SKIP, or every
        variant's (a cuBLAS or copy row measured beside them measured no kernel of the
        run's: a sweep whose every point exceeds the GPU's shared memory)."""
        kernels = {r.status for r in self.results if r.kind is Kind.VARIANT}
        return bool(self.results) and (kernels or {r.status for r in self.results}) == {
            Status.SKIP}

    @property
    def measured_something(self) -> bool:
        """Return whether a row the run is about holds samples: a kernel's where it has
        kernel rows (not the cuBLAS or copy row measured beside them), else any row's. A
        run that did not leaves the reports of an earlier run as they were."""
        kernels = [r for r in self.results if r.kind is Kind.VARIANT]
        return any(r.samples_s for r in (kernels or self.results))

    @property
    def exit_code(self) -> ExitCode:
        """Return 2 if a row could not be compiled or run or nothing at all was measured
        (every row SKIP: no GPU it can run on, no CUDA Python...), 3 if one failed or
        timed out."""
        statuses = {r.status for r in self.results}
        if Status.ERROR in statuses or self.nothing_measured:
            return ExitCode.USAGE
        if statuses & {Status.FAIL, Status.TIMEOUT, Status.SUSPECT}:
            return ExitCode.VERIFICATION_FAILED
        return ExitCode.OK


@dataclass(frozen=True)
class ResultsFile:
    """A loaded results file: where it came from, its devices, and its benchmarks."""

    path: str
    metadata: Mapping[str, Any]  # tool, created, git commit, host, command...
    devices: tuple[DeviceInfo, ...]
    benchmarks: tuple[BenchmarkResult, ...]
    schema_version: int

    @property
    def said(self) -> tuple[str, ...]:
        """Return what a reader of the file's rows must be told: that its run stopped
        early (or is still writing it), and the notes the run kept (a GPU given up,
        variants left out; a `notes` field of another shape, written by a person, is none
        of them)."""
        stopped: tuple[str, ...] = ()
        if self.metadata.get("complete") is False:
            from cudabench.common.outfiles import being_written

            writing = being_written(Path(self.path))  # not stopped: its run goes on
            stopped = (f"{self.path} is incomplete: "
                       + (f"it is {writing}" if writing else "its run stopped early"),)
        notes = self.metadata.get("notes")
        kept = tuple(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else ()
        return stopped + kept

    @property
    def gpu_name(self) -> str:
        """Return the GPU model name, models joined by ' + ' ('' when none is recorded)."""
        return " + ".join(sorted({device.name for device in self.devices}))
