"""Clocks, throttling and power around each measurement, through NVML (nvidia-ml-py).

Optional like nvml.py: pynvml is imported only when a monitor is opened, and every query
that NVML refuses (NOT_SUPPORTED is common on consumer cards, MIG slices and VMs) reads as
None. FakeMonitor gives canned, deterministic values for the fake engine and for tests.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

from cudabench.insight.throttling import throttle_causes

Clock = Callable[[], float]
ClosingT = TypeVar("ClosingT", bound="_Closing")

POLL_INTERVAL_S = 0.01  # NVML calls cost microseconds each: never more than 100 polls/s

# Clock-event ("throttle") reason bits, as NVML defines them; the same values under the
# nvmlClocksEventReason* and the older nvmlClocksThrottleReason* names.
GPU_IDLE = 0x1  # clocks drop because nothing runs: between samples, not a slowdown
APPLICATIONS_CLOCKS = 0x2  # a clock setting chosen by the admin, not an event
REASON_NAMES = {
    0x4: "sw power cap",
    0x8: "hw slowdown",
    0x10: "sync boost",
    0x20: "sw thermal slowdown",
    0x40: "hw thermal slowdown",
    0x80: "hw power brake",
    0x100: "display clocks",
    0x200: "board limit",
    0x400: "reliability",
}
IGNORED_REASONS = GPU_IDLE | APPLICATIONS_CLOCKS

NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED: the query will never work on this device
FUNCTION_NOT_FOUND = 13  # NVML_ERROR_FUNCTION_NOT_FOUND: a driver older than pynvml

# PCIe per-lane transfer rate (GT/s) and line-code efficiency, by generation. Gen 6 sends
# 256-byte FLITs of which 242 bytes carry data (the rest is CRC and FEC): 242/256 assumed.
PCIE_LANE = {
    1: (2.5e9, 8 / 10),
    2: (5e9, 8 / 10),
    3: (8e9, 128 / 130),
    4: (16e9, 128 / 130),
    5: (32e9, 128 / 130),
    6: (64e9, 242 / 256),
}


def pcie_peak_bytes_per_s(generation: int | None, width: int | None) -> float | None:
    """Return a link's raw peak bytes/s in one direction (before packet overheads)."""
    if generation not in PCIE_LANE or not width:
        return None
    rate, efficiency = PCIE_LANE[generation]
    return rate * efficiency / 8 * width


def reason_names(mask: int) -> list[str]:
    """Return the sorted readable names of clock-event reason bits, idle and app clocks
    left out."""
    mask &= ~IGNORED_REASONS
    names = [name for bit, name in REASON_NAMES.items() if mask & bit]
    known = sum(REASON_NAMES)
    if mask & ~known:  # a newer driver's reason: still worth reporting
        names.append(f"reason {mask & ~known:#x}")
    return sorted(names)


@dataclass(frozen=True)
class Reading:
    """One poll of the device: any field is None when NVML refused it."""

    reasons: int | None
    sm_clock_mhz: float | None
    memory_clock_mhz: float | None
    temperature_c: float | None
    power_w: float | None


class _Source(Protocol):
    """What a window reads: implemented by Monitor (NVML) and FakeMonitor."""

    def read(self) -> Reading:
        """Return the current reasons, clocks, temperature and power."""

    def violations_ns(self) -> tuple[int | None, int | None]:
        """Return the cumulative power and thermal violation times in ns."""


class Window:
    """Clock events, clocks, temperature and power over one measurement."""

    def __init__(self, source: _Source, clock: Clock = time.perf_counter) -> None:
        self._source = source
        self._clock = clock
        self._last = -math.inf
        self._readings: list[Reading] = []
        self._violations_open = source.violations_ns()
        self._summary: dict[str, Any] | None = None

    def poll(self) -> None:
        """Read the device, at most once per POLL_INTERVAL_S; call it after each sample."""
        if self._summary is not None:
            return
        now = self._clock()
        if now - self._last < POLL_INTERVAL_S:
            return
        self._last = now
        self._readings.append(self._source.read())

    def close(self) -> dict[str, Any]:
        """Return the window's summary (the same one on later calls)."""
        if self._summary is not None:
            return self._summary
        if not self._readings:  # never polled: one reading, so the summary is not empty
            self._readings.append(self._source.read())
        power_open, thermal_open = self._violations_open
        power_close, thermal_close = self._source.violations_ns()
        mask = 0
        for reading in self._readings:
            mask |= reading.reasons or 0
        powers = _present(r.power_w for r in self._readings)
        temperatures = _present(r.temperature_c for r in self._readings)
        self._summary = {
            "throttle_reasons": reason_names(mask),
            "sm_clock_mhz": _range(r.sm_clock_mhz for r in self._readings),
            "memory_clock_mhz": _range(r.memory_clock_mhz for r in self._readings),
            "temperature_c": max(temperatures) if temperatures else None,
            "power_w": sum(powers) / len(powers) if powers else None,
            "power_violation_s": _delta_s(power_open, power_close),
            "thermal_violation_s": _delta_s(thermal_open, thermal_close),
            "polls": len(self._readings),
        }
        return self._summary


def _present(values: Any) -> list[float]:
    return [v for v in values if v is not None]


def _range(values: Any) -> dict[str, float | None]:
    seen = _present(values)
    return {"min": min(seen) if seen else None, "max": max(seen) if seen else None}


def _delta_s(before: int | None, after: int | None) -> float | None:
    if before is None or after is None or after < before:  # unsupported, or driver reloaded
        return None
    return (after - before) / 1e9


def throttled(summary: dict[str, Any]) -> str | None:
    """Return a one-line warning when a window saw throttling, else None."""
    causes = throttle_causes(summary)
    if not causes:
        return None
    return (f"the GPU throttled while measuring ({'; '.join(causes)}): these times are "
            "slower than the card's best")


class MonitorLike(Protocol):
    """A device monitor: Monitor on NVML, FakeMonitor in tests and the fake engine."""

    def settings(self) -> dict[str, Any]:
        """Return the device's configuration facts (None where unknown)."""

    def window(self) -> Window:
        """Open a measurement window."""

    def energy_mj(self) -> int | None:
        """Return the energy counter in mJ, or None without one."""

    def close(self) -> None:
        """Release the monitor."""


class _Closing:
    """Context-manager support for monitors."""

    def close(self) -> None:
        """Release the monitor."""

    def __enter__(self: ClosingT) -> ClosingT:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class Monitor(_Closing):
    """One GPU seen through NVML; NVML stays initialized until close()."""

    def __init__(self, nvml: Any, handle: Any, clock: Clock = time.perf_counter) -> None:
        self._nvml = nvml
        self._handle = handle
        self._clock = clock
        self._unsupported: set[str] = set()
        self._closed = False

    def _query(self, name: str, *args: Any) -> Any:
        """Call nvml.<name>(handle, *args); None when NVML refuses (and, when it will
        always refuse, without asking again: polls must stay cheap)."""
        if name in self._unsupported:
            return None
        function = getattr(self._nvml, name, None)
        if function is None:  # an older pynvml without this query
            self._unsupported.add(name)
            return None
        try:
            return function(self._handle, *args)
        except self._nvml.NVMLError as exc:
            if getattr(exc, "value", None) in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
                self._unsupported.add(name)
            return None

    def settings(self) -> dict[str, Any]:
        """Return power limit, ECC, MIG, persistence, max clocks and the PCIe link."""
        nvml = self._nvml
        limit_mw = self._query("nvmlDeviceGetEnforcedPowerLimit")
        ecc = self._query("nvmlDeviceGetEccMode")  # [current, pending]
        mig = self._query("nvmlDeviceGetMigMode")  # [current, pending]
        persistence = self._query("nvmlDeviceGetPersistenceMode")
        # The max generation and width: an idle link trains down to gen 1 to save power.
        generation = self._query("nvmlDeviceGetMaxPcieLinkGeneration")
        width = self._query("nvmlDeviceGetMaxPcieLinkWidth")
        return {
            "power_limit_w": limit_mw / 1000 if limit_mw is not None else None,
            "ecc_enabled": bool(ecc[0] == nvml.NVML_FEATURE_ENABLED) if ecc else None,
            "mig_enabled": bool(mig[0] == nvml.NVML_DEVICE_MIG_ENABLE) if mig else None,
            "persistence_enabled": (bool(persistence == nvml.NVML_FEATURE_ENABLED)
                                    if persistence is not None else None),
            "max_sm_clock_mhz": self._query("nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM),
            "max_memory_clock_mhz": self._query("nvmlDeviceGetMaxClockInfo",
                                                nvml.NVML_CLOCK_MEM),
            "pcie_max_generation": generation,
            "pcie_max_width": width,
            "pcie_peak_bytes_per_s": pcie_peak_bytes_per_s(generation, width),
        }

    def read(self) -> Reading:
        """Return the current reasons, clocks, temperature and power."""
        nvml = self._nvml
        reasons = self._query("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:  # pynvml or driver older than the rename (CUDA 12.2)
            reasons = self._query("nvmlDeviceGetCurrentClocksThrottleReasons")
        power_mw = self._query("nvmlDeviceGetPowerUsage")
        return Reading(
            reasons=reasons,
            sm_clock_mhz=self._query("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM),
            memory_clock_mhz=self._query("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM),
            temperature_c=self._query("nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU),
            # On A100 and newer this is a 1 s running average, not an instant reading.
            power_w=power_mw / 1000 if power_mw is not None else None,
        )

    def violations_ns(self) -> tuple[int | None, int | None]:
        """Return the cumulative power and thermal violation times in ns."""
        nvml = self._nvml
        power = self._query("nvmlDeviceGetViolationStatus", nvml.NVML_PERF_POLICY_POWER)
        thermal = self._query("nvmlDeviceGetViolationStatus", nvml.NVML_PERF_POLICY_THERMAL)
        return (int(power.violationTime) if power is not None else None,
                int(thermal.violationTime) if thermal is not None else None)

    def window(self) -> Window:
        """Open a measurement window (reads the violation counters now)."""
        return Window(self, self._clock)

    def energy_mj(self) -> int | None:
        """Return the energy used since the driver loaded in mJ; None before Volta."""
        energy = self._query("nvmlDeviceGetTotalEnergyConsumption")
        return int(energy) if energy is not None else None

    def close(self) -> None:
        """Shut NVML down (once)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()


def open_monitor(pci_bus_id: str | None, clock: Clock = time.perf_counter) -> Monitor | None:
    """Open a monitor on the GPU at a PCI bus id; None without pynvml, NVML or that GPU.

    By bus id, never by index: NVML orders devices by bus id, CUDA by speed unless
    CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES renumbers only CUDA's.
    """
    if not pci_bus_id:
        return None
    try:
        nvml: Any = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # not installed, no driver library, or NVML refused (gVisor)
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
    except Exception:  # unknown bus id, or a format this NVML does not accept
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
        return None
    return Monitor(nvml, handle, clock)


class FakeMonitor(_Closing):
    """Canned, deterministic readings without NVML; throttle=True shows a power cap."""

    POWER_W = 250.0

    def __init__(self, throttle: bool = False, energy: bool = True,
                 clock: Clock = time.perf_counter) -> None:
        self.throttle = throttle
        self.energy = energy
        self._clock = clock
        self._violation_reads = 0
        self.closed = False

    def settings(self) -> dict[str, Any]:
        """Return an H100-like PCIe card's settings."""
        return {"power_limit_w": 350.0, "ecc_enabled": True, "mig_enabled": False,
                "persistence_enabled": True, "max_sm_clock_mhz": 1500,
                "max_memory_clock_mhz": 2000, "pcie_max_generation": 5, "pcie_max_width": 16,
                "pcie_peak_bytes_per_s": pcie_peak_bytes_per_s(5, 16)}

    def read(self) -> Reading:
        """Return full clocks, or a power-capped SM clock (with GPU idle, which is masked)."""
        if self.throttle:
            return Reading(GPU_IDLE | 0x4, 1200.0, 2000.0, 83.0, 350.0)
        return Reading(GPU_IDLE, 1500.0, 2000.0, 60.0, self.POWER_W)

    def violations_ns(self) -> tuple[int | None, int | None]:
        """Return counters that grow by 50 ms of power violation per read when throttling."""
        self._violation_reads += 1
        power = self._violation_reads * 50_000_000 if self.throttle else 0
        return power, 0

    def window(self) -> Window:
        """Open a measurement window."""
        return Window(self, self._clock)

    def energy_mj(self) -> int | None:
        """Return POWER_W times the injected clock, in mJ; None when energy=False."""
        if not self.energy:
            return None
        return int(self._clock() * self.POWER_W * 1000)

    def close(self) -> None:
        """Mark the monitor closed."""
        self.closed = True
