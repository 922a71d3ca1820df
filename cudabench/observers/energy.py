"""Energy per launch (--energy, opt-in): a separate pass of back-to-back launches.

Unavailability is an exception, EnergyUnavailable(reason), never a None: the caller can
show why (no counter before Volta, a counter that did not move) next to the timings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cudabench.engines.telemetry import MonitorLike

SYNC_EVERY = 50  # launches between waits: keeps the launch queue short...
SYNC_AFTER_S = 0.01  # ...and so the pass ends within ~10 ms of its time
RELIABLE_S = 1.0  # a shorter pass is a handful of the counter's ~100 ms steps: warned of


class EnergyUnavailable(Exception):
    """No energy figure for this device; str(exc) (and .reason) says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Energy:
    """The board's energy over a pass of launches (idle and static power included)."""

    joules: float
    launches: int
    seconds: float

    @property
    def joules_per_launch(self) -> float:
        """Return the energy of one launch (all the variant's kernels) in J."""
        return self.joules / self.launches

    @property
    def mean_power_w(self) -> float:
        """Return the mean board power over the pass in W."""
        return self.joules / self.seconds

    def gflop_per_joule(self, flops_per_launch: float) -> float:
        """Return useful work per energy, in GFLOP/J."""
        return flops_per_launch * self.launches / self.joules / 1e9

    def gb_per_joule(self, bytes_per_launch: float) -> float:
        """Return bytes moved per energy, in GB/J."""
        return bytes_per_launch * self.launches / self.joules / 1e9


def measure_energy(run: Callable[[], None], synchronize: Callable[[], None],
                   monitor: MonitorLike, seconds: float = 3.0,
                   clock: Callable[[], float] = time.perf_counter,
                   launch_s: float = 0.0) -> Energy:
    """Launch run() back to back for `seconds` and read NVML's energy counter around it.

    The counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded) moves
    only every ~100 ms, and on some GPUs covers only part of each period, so a pass of
    under a second can be off by tens of percent: keep the default of several seconds.
    launch_s, when known, bounds the GPU work queued between waits.
    Raises EnergyUnavailable when the device has no counter (before Volta, or
    NOT_SUPPORTED) or when it did not advance; ValueError for a non-positive `seconds`.
    """
    if not seconds > 0:
        raise ValueError(f"seconds must be positive, not {seconds}")
    synchronize()  # earlier work must not be charged to this pass
    start_mj = monitor.energy_mj()
    if start_mj is None:
        raise EnergyUnavailable("this GPU has no energy counter (NVML has one from Volta on)")
    # Launches return at once: with a known launch time, queue no more than SYNC_AFTER_S of
    # GPU work, so that a slow kernel's pass ends near its length, not 50 launches later.
    sync_every = SYNC_EVERY if launch_s <= 0 else max(1, min(SYNC_EVERY,
                                                             int(SYNC_AFTER_S / launch_s)))
    start = last_sync = clock()
    launches = since_sync = 0
    while True:
        run()
        launches += 1
        since_sync += 1
        if since_sync >= sync_every or clock() - last_sync > SYNC_AFTER_S:
            synchronize()
            since_sync = 0
            last_sync = clock()
            # Checked only after a wait: the pass ends with the queue empty, and its time
            # counts finished work, not queued launches.
            if last_sync - start >= seconds:
                break
    elapsed = last_sync - start
    end_mj = monitor.energy_mj()
    if end_mj is None:
        raise EnergyUnavailable("the energy counter stopped answering during the pass")
    if end_mj <= start_mj:  # a frozen counter (or a driver reload) would give 0 J or less
        raise EnergyUnavailable(f"the energy counter did not advance over {elapsed:.3g} s")
    return Energy(joules=(end_mj - start_mj) / 1000, launches=launches, seconds=elapsed)
