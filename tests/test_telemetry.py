"""Telemetry and energy through a fake pynvml: no GPU, no driver."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from cudabench.observers.energy import Energy, EnergyUnavailable, measure_energy
from cudabench.engines.telemetry import (
    POLL_INTERVAL_S,
    FakeMonitor,
    Monitor,
    MonitorLike,
    Window,
    open_monitor,
    pcie_peak_bytes_per_s,
    reason_names,
    throttled,
)

BUS_ID = "00000000:65:00.0"


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


class FakeNvml:
    """The pynvml functions and constants telemetry uses, on one GPU at BUS_ID."""

    NVMLError = NVMLError
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_NOT_FOUND = 6
    NVML_FEATURE_ENABLED = 1
    NVML_DEVICE_MIG_ENABLE = 1
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_PERF_POLICY_POWER = 0
    NVML_PERF_POLICY_THERMAL = 1

    def __init__(self, unsupported: set[str] = frozenset(), init_fails: bool = False) -> None:
        self.unsupported = set(unsupported)
        self.init_fails = init_fails
        self.reasons = 0x1
        self.violation_ns = {0: 0, 1: 0}
        self.energy_mj = 1_000_000
        self.sm_clock = 1980
        self.power_mw = 300_000
        self.calls: dict[str, int] = {}
        self.inits = self.shutdowns = 0

    def _ask(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if name in self.unsupported:
            raise NVMLError(self.NVML_ERROR_NOT_SUPPORTED)

    def nvmlInit(self) -> None:
        if self.init_fails:
            raise NVMLError(12)  # NVML_ERROR_LIBRARY_NOT_FOUND
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        if bus_id != BUS_ID:
            raise NVMLError(self.NVML_ERROR_NOT_FOUND)
        return "handle"

    def nvmlDeviceGetHandleByIndex(self, index):
        raise AssertionError("NVML indexes differ from CUDA's: look GPUs up by bus id")

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        self._ask("nvmlDeviceGetEnforcedPowerLimit")
        return 700_000

    def nvmlDeviceGetEccMode(self, handle):
        self._ask("nvmlDeviceGetEccMode")
        return [1, 0]

    def nvmlDeviceGetMigMode(self, handle):
        self._ask("nvmlDeviceGetMigMode")
        return [0, 0]

    def nvmlDeviceGetPersistenceMode(self, handle):
        self._ask("nvmlDeviceGetPersistenceMode")
        return 1

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        self._ask("nvmlDeviceGetMaxClockInfo")
        return {self.NVML_CLOCK_SM: 1980, self.NVML_CLOCK_MEM: 2619}[kind]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle):
        self._ask("nvmlDeviceGetMaxPcieLinkGeneration")
        return 5

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle):
        self._ask("nvmlDeviceGetMaxPcieLinkWidth")
        return 16

    def nvmlDeviceGetClockInfo(self, handle, kind):
        self._ask("nvmlDeviceGetClockInfo")
        return {self.NVML_CLOCK_SM: self.sm_clock, self.NVML_CLOCK_MEM: 2619}[kind]

    def nvmlDeviceGetTemperature(self, handle, sensor):
        self._ask("nvmlDeviceGetTemperature")
        return 55

    def nvmlDeviceGetPowerUsage(self, handle):
        self._ask("nvmlDeviceGetPowerUsage")
        return self.power_mw

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        self._ask("nvmlDeviceGetCurrentClocksEventReasons")
        return self.reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        self._ask("nvmlDeviceGetCurrentClocksThrottleReasons")
        return self.reasons

    def nvmlDeviceGetViolationStatus(self, handle, policy):
        self._ask("nvmlDeviceGetViolationStatus")
        return SimpleNamespace(referenceTime=0, violationTime=self.violation_ns[policy])

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        self._ask("nvmlDeviceGetTotalEnergyConsumption")
        return self.energy_mj


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def nvml(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def test_opens_by_bus_id_and_shuts_nvml_down(nvml):
    with open_monitor(BUS_ID) as monitor:
        assert isinstance(monitor, Monitor)
        reading = monitor.read()
        assert (reading.sm_clock_mhz, reading.memory_clock_mhz, reading.temperature_c,
                reading.power_w) == (1980, 2619, 55, 300.0)
    assert (nvml.inits, nvml.shutdowns) == (1, 1)


def test_unknown_bus_id_gives_none_and_shuts_down(nvml):
    assert open_monitor("00000000:01:00.0") is None
    assert open_monitor(None) is None
    assert nvml.inits == nvml.shutdowns == 1


def test_nvml_init_failure_gives_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(init_fails=True))
    assert open_monitor(BUS_ID) is None


def test_missing_pynvml_gives_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    assert open_monitor(BUS_ID) is None


def test_settings(nvml):
    settings = open_monitor(BUS_ID).settings()
    assert settings == {
        "power_limit_w": 700.0, "ecc_enabled": True, "mig_enabled": False,
        "persistence_enabled": True, "max_sm_clock_mhz": 1980, "max_memory_clock_mhz": 2619,
        "pcie_max_generation": 5, "pcie_max_width": 16,
        "pcie_peak_bytes_per_s": pytest.approx(63.015e9, rel=1e-4),
    }


def test_settings_not_supported_read_as_none(monkeypatch):
    fake = FakeNvml(unsupported={"nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetEccMode",
                                 "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxPcieLinkWidth"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    settings = open_monitor(BUS_ID).settings()
    for key in ("power_limit_w", "ecc_enabled", "mig_enabled", "pcie_max_width",
                "pcie_peak_bytes_per_s"):
        assert settings[key] is None, key
    assert settings["pcie_max_generation"] == 5
    assert settings["max_sm_clock_mhz"] == 1980


@pytest.mark.parametrize(("generation", "gb_per_s"),
                         [(1, 4.0), (2, 8.0), (3, 15.754), (4, 31.508), (6, 121.0)])
def test_pcie_peak(generation, gb_per_s):
    assert pcie_peak_bytes_per_s(generation, 16) == pytest.approx(gb_per_s * 1e9, rel=1e-4)
    assert pcie_peak_bytes_per_s(7, 16) is None
    assert pcie_peak_bytes_per_s(generation, None) is None


def test_reason_names_mask_idle_and_app_clocks():
    assert reason_names(0x1 | 0x2) == []
    assert reason_names(0x1 | 0x4 | 0x40) == ["hw thermal slowdown", "sw power cap"]
    assert reason_names(0x8000) == ["reason 0x8000"]


def test_idle_alone_is_no_warning(nvml):
    clock = FakeClock()
    window = open_monitor(BUS_ID, clock=clock).window()
    window.poll()
    summary = window.close()
    assert summary["throttle_reasons"] == []
    assert summary["power_violation_s"] == summary["thermal_violation_s"] == 0
    assert throttled(summary) is None


def test_power_cap_is_a_warning(nvml):
    clock = FakeClock()
    window = open_monitor(BUS_ID, clock=clock).window()
    window.poll()
    nvml.reasons = 0x1 | 0x4  # power capped during a later sample
    nvml.sm_clock = 1410
    nvml.power_mw = 700_000
    clock.now += POLL_INTERVAL_S
    window.poll()
    nvml.reasons, nvml.sm_clock, nvml.power_mw = 0x1, 1980, 300_000
    clock.now += POLL_INTERVAL_S
    window.poll()
    summary = window.close()
    assert summary["throttle_reasons"] == ["sw power cap"]
    assert summary["sm_clock_mhz"] == {"min": 1410, "max": 1980}
    assert summary["memory_clock_mhz"] == {"min": 2619, "max": 2619}
    assert summary["power_w"] == pytest.approx((300 + 700 + 300) / 3)
    assert summary["temperature_c"] == 55
    assert summary["polls"] == 3
    assert throttled(summary) == ("the GPU throttled while measuring (sw power cap): these "
                                  "times are slower than the card's best")


def test_violation_deltas(nvml):
    nvml.violation_ns = {0: 5_000_000_000, 1: 7_000_000_000}  # before the window: ignored
    window = open_monitor(BUS_ID, clock=FakeClock()).window()
    nvml.violation_ns = {0: 5_120_000_000, 1: 7_000_000_000}
    summary = window.close()
    assert summary["power_violation_s"] == pytest.approx(0.12)
    assert summary["thermal_violation_s"] == 0
    assert summary["throttle_reasons"] == []
    assert throttled(summary) == ("the GPU throttled while measuring (0.12 s of power "
                                  "violation): these times are slower than the card's best")


def test_violation_not_supported_is_none(monkeypatch):
    fake = FakeNvml(unsupported={"nvmlDeviceGetViolationStatus"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    summary = open_monitor(BUS_ID, clock=FakeClock()).window().close()
    assert summary["power_violation_s"] is None
    assert throttled(summary) is None


def test_polling_is_rate_limited(nvml):
    clock = FakeClock()
    window = open_monitor(BUS_ID, clock=clock).window()
    for _ in range(100):  # 100 samples within 5 ms of each other: one reading
        window.poll()
        clock.now += 0.00005
    assert nvml.calls["nvmlDeviceGetClockInfo"] == 2  # SM and memory, once
    clock.now = POLL_INTERVAL_S
    window.poll()
    window.poll()
    assert window.close()["polls"] == 2


def test_unsupported_queries_are_not_repeated(monkeypatch):
    fake = FakeNvml(unsupported={"nvmlDeviceGetPowerUsage"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    clock = FakeClock()
    window = open_monitor(BUS_ID, clock=clock).window()
    for _ in range(5):
        window.poll()
        clock.now += 1
    assert fake.calls["nvmlDeviceGetPowerUsage"] == 1
    assert window.close()["power_w"] is None


class OldPynvml(FakeNvml):
    """A pynvml from before the rename to clock-event reasons."""

    def __getattribute__(self, name):
        if name == "nvmlDeviceGetCurrentClocksEventReasons":
            raise AttributeError(name)
        return super().__getattribute__(name)


class OldDriver(FakeNvml):
    """A new pynvml on a driver without the renamed function."""

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        raise NVMLError(13)  # NVML_ERROR_FUNCTION_NOT_FOUND


@pytest.mark.parametrize("kind", [OldPynvml, OldDriver])
def test_falls_back_to_throttle_reasons(monkeypatch, kind):
    old = kind()
    old.reasons = 0x20
    monkeypatch.setitem(sys.modules, "pynvml", old)
    clock = FakeClock()
    window = open_monitor(BUS_ID, clock=clock).window()
    window.poll()
    clock.now += 1
    window.poll()
    assert window.close()["throttle_reasons"] == ["sw thermal slowdown"]
    assert old.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 2


def test_energy_counter(nvml):
    monitor = open_monitor(BUS_ID)
    assert monitor.energy_mj() == 1_000_000
    nvml.unsupported.add("nvmlDeviceGetTotalEnergyConsumption")
    assert monitor.energy_mj() is None


def test_fake_monitor_is_deterministic():
    clock = FakeClock()
    calm: MonitorLike = FakeMonitor(clock=clock)
    window = calm.window()
    window.poll()
    assert throttled(window.close()) is None
    hot: MonitorLike = FakeMonitor(throttle=True, clock=clock)
    window = hot.window()
    window.poll()
    summary = window.close()
    assert summary["throttle_reasons"] == ["sw power cap"]
    assert summary["power_violation_s"] == pytest.approx(0.05)
    assert "sw power cap; 0.05 s of power violation" in throttled(summary)
    assert isinstance(window, Window)
    assert FakeMonitor(energy=False).energy_mj() is None
    with FakeMonitor() as fake:
        assert fake.settings()["pcie_peak_bytes_per_s"] == pytest.approx(63.015e9, rel=1e-4)
    assert fake.closed


class Gpu:
    """Launches that each take launch_s of the fake clock; counts waits."""

    def __init__(self, clock: FakeClock, launch_s: float = 0.001) -> None:
        self.clock = clock
        self.launch_s = launch_s
        self.launches = self.syncs = self.queued = self.max_queued = 0

    def run(self) -> None:
        self.clock.now += self.launch_s
        self.launches += 1
        self.queued += 1
        self.max_queued = max(self.max_queued, self.queued)

    def synchronize(self) -> None:
        self.syncs += 1
        self.queued = 0


def test_energy_over_a_pass():
    clock = FakeClock()
    clock.now = 100.0
    gpu = Gpu(clock)
    energy = measure_energy(gpu.run, gpu.synchronize, FakeMonitor(clock=clock), seconds=3.0,
                            clock=clock)
    assert energy.seconds == pytest.approx(3.0, abs=0.011)
    assert energy.launches == gpu.launches == pytest.approx(3000, abs=11)
    assert energy.mean_power_w == pytest.approx(FakeMonitor.POWER_W, rel=1e-3)
    assert energy.joules_per_launch == pytest.approx(0.25, rel=1e-3)
    assert gpu.max_queued <= 50
    assert gpu.queued == 0  # the last launches finished before the counter was read


def test_energy_pass_of_short_launches_waits_every_50():
    clock = FakeClock()
    gpu = Gpu(clock, launch_s=1e-6)
    energy = measure_energy(gpu.run, gpu.synchronize, FakeMonitor(clock=clock), seconds=1.0,
                            clock=clock)
    assert gpu.max_queued == 50
    assert gpu.queued == 0
    assert energy.launches == pytest.approx(1e6, rel=1e-3)
    assert energy.joules == pytest.approx(250.0, rel=1e-3)


def test_energy_helpers():
    energy = Energy(joules=10.0, launches=1000, seconds=2.0)
    assert energy.joules_per_launch == 0.01
    assert energy.mean_power_w == 5.0
    assert energy.gflop_per_joule(2e9) == pytest.approx(200.0)
    assert energy.gb_per_joule(1e8) == pytest.approx(10.0)


def test_energy_not_supported(nvml):
    nvml.unsupported.add("nvmlDeviceGetTotalEnergyConsumption")
    gpu = Gpu(FakeClock())
    with pytest.raises(EnergyUnavailable, match="no energy counter"):
        measure_energy(gpu.run, gpu.synchronize, open_monitor(BUS_ID), clock=gpu.clock)
    assert gpu.launches == 0
    with pytest.raises(EnergyUnavailable):
        measure_energy(gpu.run, gpu.synchronize, FakeMonitor(energy=False), clock=gpu.clock)


def test_frozen_energy_counter_is_unavailable(nvml):
    gpu = Gpu(FakeClock())
    with pytest.raises(EnergyUnavailable, match="did not advance"):
        measure_energy(gpu.run, gpu.synchronize, open_monitor(BUS_ID), seconds=0.1,
                       clock=gpu.clock)
    assert gpu.launches >= 100
