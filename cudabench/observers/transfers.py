"""`--transfers`: the whole trip the seed articles measure, phase by phase.

Host to device (every input), the kernel (the row's median), device to host (the result),
each copy timed with events, from pageable host memory and from page-locked (pinned) memory,
with GB/s against the link's peak. The link's peak comes from NVML's maximum PCIe generation
and width (an idle link reports a low current generation); without NVML it is unknown. The
end-to-end GPU time (pinned copies and the kernel) is held against the CPU reference's time.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.engines.protocol import Engine

REPEATS = 5  # copies per phase: their median (copies vary little; this is not the benchmark)


def measure(engine: Engine, buffers: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
            result: tuple[str, np.ndarray], kernel_s: float, cpu_reference_s: float
            ) -> dict[str, Any]:
    """Return the phases by memory kind, the link's peak and the trip against the CPU's."""
    name, result_host = result
    phases: dict[str, Any] = {}
    for kind, pinned in (("pageable", False), ("pinned", True)):
        h2d = sum(_median(engine, buffers[n], array, True, pinned) for n, array in
                  inputs.items())
        d2h = _median(engine, buffers[name], result_host, False, pinned)
        phases[kind] = {
            "h2d_s": h2d, "h2d_bytes": sum(a.nbytes for a in inputs.values()),
            "d2h_s": d2h, "d2h_bytes": result_host.nbytes,
        }
    for values in phases.values():
        values["h2d_gbps"] = values["h2d_bytes"] / values["h2d_s"] / 1e9
        values["d2h_gbps"] = values["d2h_bytes"] / values["d2h_s"] / 1e9
    trip = phases["pinned"]["h2d_s"] + kernel_s + phases["pinned"]["d2h_s"]
    return {**phases, "kernel_s": kernel_s,
            "link_peak_bytes_per_s": engine.info.settings.get("pcie_peak_bytes_per_s"),
            "end_to_end_s": trip, "cpu_reference_s": cpu_reference_s}


def _median(engine: Engine, buffer: Any, host: np.ndarray, to_device: bool, pinned: bool
            ) -> float:
    """Return the median event time of a few copies (the first one warms the path)."""
    engine.time_transfer(buffer, host, to_device, pinned)
    return statistics.median(engine.time_transfer(buffer, host, to_device, pinned)
                             for _ in range(REPEATS))
