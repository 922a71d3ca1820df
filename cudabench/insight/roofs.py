"""The device's roofs: peak DRAM bandwidth and peak arithmetic rate per type on CUDA cores.

Bandwidth: 2 (double data rate) x memory clock x bus width, from the device's attributes.
Arithmetic: SMs x SM clock x operations per clock per SM, from the table below by compute
capability (NVIDIA CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table:
results per clock per SM, x2 for a fused multiply-add). The clock is the attribute's
maximum (boost) clock, so a roof is an upper bound. Where one capability spans parts with
different FP64 rates (sm_80: A100 vs A30/A10; sm_90: H100 SXM/PCIe vs H20), the table
assumes the data-center part.

A result faster than its roof is not believed: its row is SUSPECT (a cheat, a clock the
table does not know, or a kernel on units it did not declare). Tensor-core roofs come with
the insight issue; a kernel on tensor cores would declare its unit there.
"""

from __future__ import annotations

from cudabench.results.model import BenchmarkResult, DeviceInfo

# FLOP per clock per SM on CUDA cores (FMA = 2), by (major, minor) and type.
FLOP_PER_CLOCK_PER_SM: dict[tuple[int, int], dict[str, int]] = {
    (7, 0): {"float16": 256, "float32": 128, "float64": 64, "int32": 128},   # V100
    (7, 5): {"float16": 256, "float32": 128, "float64": 4, "int32": 128},    # T4
    (8, 0): {"float16": 256, "float32": 128, "float64": 64, "int32": 128},   # A100
    (8, 6): {"float16": 256, "float32": 256, "float64": 4, "int32": 128},    # A10, RTX 30
    (8, 9): {"float16": 256, "float32": 256, "float64": 4, "int32": 128},    # L4, RTX 40
    (9, 0): {"float16": 512, "float32": 256, "float64": 128, "int32": 128},  # H100, H200
}
MARGIN = 1.10  # clocks and counts round: only beyond 10% over the roof is a row suspect


def dram_bandwidth(device: DeviceInfo) -> float | None:
    """Return peak DRAM bandwidth in bytes/s from the memory clock and bus width."""
    if not device.memory_clock_khz or not device.memory_bus_bits:
        return None
    return 2 * device.memory_clock_khz * 1e3 * device.memory_bus_bits / 8


def flop_rate(device: DeviceInfo, dtype: str) -> float | None:
    """Return peak CUDA-core operations/s for a type, or None for an unknown capability."""
    major, _, minor = device.compute_capability.partition(".")
    try:
        per_sm = FLOP_PER_CLOCK_PER_SM[(int(major), int(minor or 0))][dtype]
    except (KeyError, ValueError):
        return None
    return device.sm_count * device.sm_clock_khz * 1e3 * per_sm


def suspect(result: BenchmarkResult, accumulate: str) -> str | None:
    """Return why a measured result is faster than the device allows, or None."""
    device, median = result.device, result.median_s
    if device is None or not median:
        return None
    rate = flop_rate(device, accumulate)
    if result.flops and rate and result.flops / median > MARGIN * rate:
        return (f"{result.flops / median / 1e12:.1f} TFLOP/s is beyond the device's "
                f"{rate / 1e12:.1f} TFLOP/s {accumulate} roof on CUDA cores")
    bandwidth = dram_bandwidth(device)
    # Only data that cannot sit in L2 between samples is held to the DRAM roof.
    cold = not result.hot and result.bytes_moved > device.l2_bytes
    if bandwidth and cold and result.bytes_moved / median > MARGIN * bandwidth:
        return (f"{result.bytes_moved / median / 1e9:,.0f} GB/s is beyond the device's "
                f"{bandwidth / 1e9:,.0f} GB/s DRAM bandwidth")
    return None
