"""The spread of one benchmark across GPUs (--replicate): is one card slower than its
siblings? Pure logic over result rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cudabench.results.model import BenchmarkResult, DeviceInfo


@dataclass(frozen=True)
class DeviceSpread:
    """One benchmark's medians on each GPU that measured it, and how far apart they are."""

    result: BenchmarkResult  # the first row: names the benchmark
    medians: tuple[tuple[DeviceInfo, float], ...]  # (GPU, median seconds), in GPU order

    @property
    def spread(self) -> float:
        """Return the slowest GPU's median over the fastest's, less one (0.02: 2%)."""
        times = [median for _, median in self.medians]
        return max(times) / min(times) - 1

    @property
    def slowest(self) -> DeviceInfo:
        """Return the GPU with the largest median."""
        return max(self.medians, key=lambda pair: pair[1])[0]


def device_spreads(results: Sequence[BenchmarkResult]) -> list[DeviceSpread]:
    """Return the spread of every benchmark measured (median known) on two GPUs or more."""
    found: dict[tuple[object, ...], dict[tuple[object, ...], tuple[DeviceInfo, float]]] = {}
    first: dict[tuple[object, ...], BenchmarkResult] = {}
    for r in results:
        if r.device is None or not r.median_s:
            continue
        first.setdefault(r.key, r)
        found.setdefault(r.key, {}).setdefault(r.device.identity, (r.device, r.median_s))
    return [DeviceSpread(first[key], tuple(sorted(by_device.values(),
                                                  key=lambda pair: pair[0].index)))
            for key, by_device in found.items() if len(by_device) > 1]
