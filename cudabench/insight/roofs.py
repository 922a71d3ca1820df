"""The device's roofs: peak DRAM bandwidth and peak operation rates per unit and type.

Bandwidth: 2 (double data rate) x memory clock x bus width, from the device's attributes.
Arithmetic: SMs x SM clock x operations per clock per SM, from `CAPABILITIES` by compute
capability. CUDA-core rates come from the CUDA C++ Programming Guide's arithmetic-instruction
throughput table (results per clock per SM, x2 for a fused multiply-add); tensor-core rates
(dense, no sparsity) from NVIDIA's architecture whitepapers (V100, Turing, A100, GA102, Ada,
H100). The clock is the attribute's maximum (boost) clock, so a roof is an upper bound.
Where one capability spans parts with different rates the table assumes the data-center part
named in its `part`, and its `note` says what differs.

`Roofs.of(device)` gathers them; `assess` places a result under them (intensity, bound, share
of peak); `suspect` does not believe a result faster than its unit's roof.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cudabench.results.model import UNITS, BenchmarkResult, DeviceInfo

# Named in every table's footer: short. The module doc says which tables and papers.
SOURCE = ("CUDA C++ Programming Guide (CUDA cores), NVIDIA architecture whitepapers "
          "(tensor cores)")
MARGIN = 1.10  # clocks and counts round: only beyond 10% over the roof is a row suspect

# NVIDIA quotes Hopper's FP16/BF16/TF32 tensor peaks at 1830 of the H100 SXM's 1980 MHz
# maximum boost (1620 of 1755 MHz on PCIe): tensor work runs below the max clock. The
# table carries that ratio so the roof is the datasheet's 989 TFLOP/s, not 1070; MARGIN
# still sits above the hardware's 4096 FLOP/clk/SM at full boost, so no true result is
# SUSPECT. FP64 (tensor or not) is quoted at the full boost clock.
HOPPER_TENSOR_CLOCK = 1830 / 1980


@dataclass(frozen=True)
class Capability:
    """One compute capability's operations per clock per SM, and the part they assume."""

    cuda: Mapping[str, float]  # on CUDA cores, by type; an FMA counts 2
    tensor: Mapping[str, float]  # on tensor cores (dense), by input type; an FMA counts 2
    part: str  # the part whose rates the table took
    note: str  # how other parts of this capability differ
    # Model names in a device's name whose per-SM rates are the part's, longest first: on
    # those the footer states the rates; on another part of the capability it assumes them.
    shared_by: tuple[str, ...] = ()


CAPABILITIES: dict[tuple[int, int], Capability] = {
    (7, 0): Capability(
        cuda={"float16": 256, "float32": 128, "float64": 64, "int32": 128},
        tensor={"float16": 1024},  # 8 tensor cores x 64 FMA
        part="V100 SXM2",
        note="V100 PCIe has the same rates per SM; Volta tensor cores take FP16 only "
             "(FP16 or FP32 accumulation at one rate)",
        shared_by=("V100",),
    ),
    (7, 5): Capability(
        cuda={"float16": 256, "float32": 128, "float64": 4, "int32": 128},
        tensor={"float16": 1024},
        part="T4",
        shared_by=("T4",),
        note="GeForce RTX 20 parts run FP16 with FP32 accumulation at half this rate; "
             "Turing tensor cores have no TF32 or FP64",
    ),
    (8, 0): Capability(
        # FP16 on CUDA cores is 4x FP32 here (A100 whitepaper: 78 TFLOP/s).
        cuda={"float16": 512, "float32": 128, "float64": 64, "int32": 128},
        tensor={"float16": 2048, "tf32": 1024, "float64": 128},
        part="A100 SXM",
        note="A100 PCIe, A800 and A30 have the same rates per SM (their SMs and clocks "
             "come from the device)",
        shared_by=("A100", "A800", "A30"),
    ),
    (8, 6): Capability(
        cuda={"float16": 256, "float32": 256, "float64": 4, "int32": 128},
        tensor={"float16": 1024, "tf32": 512},
        part="A10/A40",
        shared_by=("A10", "A40"),
        note="GeForce RTX 30 parts run FP16 with FP32 accumulation and TF32 at half these "
             "tensor rates; sm_86 tensor cores have no FP64",
    ),
    (8, 9): Capability(
        cuda={"float16": 256, "float32": 256, "float64": 4, "int32": 128},
        tensor={"float16": 1024, "tf32": 512},
        part="L40S/L4",
        shared_by=("L40S", "L40", "L4"),
        note="GeForce RTX 40 parts run FP16 with FP32 accumulation and TF32 at half these "
             "tensor rates; sm_89 tensor cores have no FP64",
    ),
    (9, 0): Capability(
        # INT32 runs at half the FP32 rate: 64 IMAD/clk/SM against 128 FFMA.
        cuda={"float16": 512, "float32": 256, "float64": 128, "int32": 128},
        tensor={"float16": 4096 * HOPPER_TENSOR_CLOCK, "tf32": 2048 * HOPPER_TENSOR_CLOCK,
                "float64": 256},
        part="H100 SXM",
        note="H100 PCIe and H200 have the same rates per SM; H800 (FP64 about 1 TFLOP/s) "
             "and H20 (far fewer tensor FLOPs) have lower ones, so there the roofs are high",
        shared_by=("GH200", "H200", "H100"),
    ),
}

NAMES = {"float16": "FP16", "float32": "FP32", "float64": "FP64", "int32": "INT32",
         "tf32": "TF32"}
UNIT_NAMES = {"cuda": "CUDA cores", "tensor": "tensor"}


def capability(device: DeviceInfo) -> Capability | None:
    """Return the table's entry for the device's compute capability, or None if unknown."""
    major, _, minor = device.compute_capability.partition(".")
    try:
        return CAPABILITIES.get((int(major), int(minor or 0)))
    except ValueError:  # a capability string the driver should never give
        return None


def library_unit(device: DeviceInfo, unit: str, compute_type: str) -> str:
    """Return the unit a library routine asking for tensor cores runs on here: CUDA cores
    where the table says this GPU's tensor cores do not take its type (cuBLAS's float64 GEMM
    on sm_75, sm_86, sm_89), as the library falls back. A GPU not in the table keeps it."""
    entry = capability(device)
    if unit != "tensor" or entry is None or compute_type in entry.tensor:
        return unit
    return "cuda"


def dram_bandwidth(device: DeviceInfo) -> float | None:
    """Return peak DRAM bandwidth in bytes/s from the memory clock and bus width."""
    if not device.memory_clock_khz or not device.memory_bus_bits:
        return None
    return 2 * device.memory_clock_khz * 1e3 * device.memory_bus_bits / 8


def flop_rate(device: DeviceInfo, dtype: str, unit: str = "cuda") -> float | None:
    """Return peak operations/s for a type on a unit, or None where the table has none."""
    return Roofs.of(device).rate(unit, dtype)


def label(unit: str, compute_type: str) -> str:
    """Return a roof's name for people: 'FP32 CUDA cores', 'FP16 tensor'."""
    return f"{NAMES.get(compute_type, compute_type)} {UNIT_NAMES.get(unit, unit)}"


def _check_unit(unit: str) -> None:
    # A misspelt unit would silently switch the roof off: that is the caller's bug.
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: expected one of {', '.join(UNITS)}")


@dataclass(frozen=True)
class Roofs:
    """A device's roofs: DRAM bytes/s and ops/s by (unit, type), with where they came from."""

    device: DeviceInfo
    dram_bps: float | None
    ops: Mapping[tuple[str, str], float] = field(hash=False)  # (unit, type) -> ops/s
    source: str = SOURCE
    assumed_part: str | None = None  # None: the capability is not in the table
    note: str = ""
    shared_by: tuple[str, ...] = ()  # the Capability's: parts known to have its rates

    @classmethod
    def of(cls, device: DeviceInfo) -> Roofs:
        """Return the device's roofs; an unknown capability has DRAM only, never an error."""
        entry = capability(device)
        per_clock = device.sm_count * device.sm_clock_khz * 1e3
        ops: dict[tuple[str, str], float] = {}
        if entry is not None and per_clock > 0:
            for unit, rates in (("cuda", entry.cuda), ("tensor", entry.tensor)):
                ops.update({(unit, t): per_clock * rate for t, rate in rates.items()})
        return cls(device=device, dram_bps=dram_bandwidth(device),
                   ops=MappingProxyType(ops),
                   assumed_part=entry.part if entry else None,
                   note=entry.note if entry else "",
                   shared_by=entry.shared_by if entry else ())

    def rate(self, unit: str, compute_type: str) -> float | None:
        """Return peak ops/s of a type on a unit, or None where the table has none."""
        return self.ops.get((unit, compute_type))

    def ridge(self, unit: str, compute_type: str) -> float | None:
        """Return the intensity (ops/byte) where the compute roof meets the DRAM roof."""
        rate = self.rate(unit, compute_type)
        return rate / self.dram_bps if rate and self.dram_bps else None


def _rates_text(roofs: Roofs, unit: str) -> str:
    flops = [f"{NAMES.get(t, t)} {r / 1e12:,.1f}" for (u, t), r in roofs.ops.items()
             if u == unit and t != "int32"]
    text = f"{', '.join(flops)} TFLOP/s" if flops else ""
    int_ops = roofs.ops.get((unit, "int32"))
    if int_ops:  # integer operations are not FLOPs: their own unit
        text += f"{', ' if text else ''}INT32 {int_ops / 1e12:,.1f} TOPS"
    return text


def sm_name(device: DeviceInfo) -> str:
    """Return the architecture's name as nvcc spells it: capability 10.0 is sm_100."""
    major, _, minor = device.compute_capability.partition(".")
    if major.isdigit() and (minor or "0").isdigit():
        return f"sm_{major}{minor or '0'}"
    return f"compute capability {device.compute_capability or '?'}"


def describe(roofs: Roofs) -> str:
    """Return a one-line footer: each roof, how it was computed, and from what."""
    device = roofs.device
    parts = []
    if roofs.dram_bps:
        parts.append(f"DRAM {roofs.dram_bps / 1e9:,.0f} GB/s (2 x "
                     f"{device.memory_clock_khz / 1e3:.0f} MHz x {device.memory_bus_bits} bit)")
    if roofs.assumed_part is None:
        parts.append(f"no arithmetic roofs (bound unknown): {sm_name(device)} is not in the "
                     f"table from {roofs.source}")
        return "roofs: " + "; ".join(parts)
    parts.append(f"CUDA cores {_rates_text(roofs, 'cuda')}")
    tensor = _rates_text(roofs, "tensor")
    if tensor:
        parts.append(f"tensor {tensor}")
    parts.append(f"{device.sm_count} SMs x {device.sm_clock_khz / 1e3:.0f} MHz; "
                 f"from {roofs.source}, {rates_basis(roofs)}")
    return "roofs: " + "; ".join(parts)


def rates_basis(roofs: Roofs) -> str:
    """Say whose per-SM rates the arithmetic roofs are: the table's part's, stated where the
    device is known to share them (an H200 runs the H100 SXM's), assumed elsewhere."""
    part = roofs.assumed_part
    words = re.findall(r"[A-Za-z0-9]+", roofs.device.name.upper())
    model = next((m for m in roofs.shared_by if m.upper() in words), None)
    if model is None:
        return f"assuming the {part}'s per-SM rates"
    if model.upper() in re.findall(r"[A-Za-z0-9]+", (part or "").upper()):
        return f"the {part}'s per-SM rates"
    return f"the {part}'s per-SM rates, which the {model} shares"


@dataclass(frozen=True)
class Assessment:
    """Where one result sits under its device's roofline."""

    intensity: float | None  # ops per byte moved; None for an op without flops (or bytes)
    bound: str | None  # "memory" or "compute"; None when no roof is known
    roof: str  # the compute roof used: "FP32 CUDA cores", "FP16 tensor"
    roof_ops: float | None  # that roof in ops/s; None where the table has none
    achieved_ops: float | None  # ops/s at the median; None for an op without flops
    achieved_bps: float  # bytes/s at the median
    pct_of_peak: float | None  # percent of the roofline attainable at this intensity
    pct_of_achievable: float | None  # percent of the measured copy's bytes/s
    in_l2: bool  # hot, or the working set fits in L2: DRAM percentages may pass 100


def assess(result: BenchmarkResult, roofs: Roofs, unit: str, compute_type: str,
           achievable_bps: float | None) -> Assessment | None:
    """Place a result under the roofline; None when it has no median or no device."""
    _check_unit(unit)
    median, device = result.median_s, result.device
    if not median or device is None:
        return None
    achieved_bps = result.bytes_moved / median
    achieved_ops = result.flops / median if result.flops else None
    roof_ops, dram = roofs.rate(unit, compute_type), roofs.dram_bps
    intensity = (result.flops / result.bytes_moved
                 if result.flops and result.bytes_moved else None)
    bound: str | None
    pct: float | None = None
    if achieved_ops is None:  # nothing to compute: only the bytes can bound it
        bound = "memory"
        pct = 100 * achieved_bps / dram if dram else None
    else:
        # The roofline attainable at this intensity is min(compute roof, intensity x DRAM).
        memory_roof = intensity * dram if intensity is not None and dram else None
        if roof_ops is None:  # no compute roof: the DRAM roof still caps it, but which one
            bound, attainable = None, memory_roof  # bounds the work is not known
        elif memory_roof is not None and memory_roof < roof_ops:
            bound, attainable = "memory", memory_roof
        else:
            bound, attainable = "compute", roof_ops
        pct = 100 * achieved_ops / attainable if attainable else None
    return Assessment(
        intensity=intensity, bound=bound, roof=label(unit, compute_type), roof_ops=roof_ops,
        achieved_ops=achieved_ops, achieved_bps=achieved_bps, pct_of_peak=pct,
        pct_of_achievable=(100 * achieved_bps / achievable_bps
                           if achievable_bps and result.bytes_moved else None),
        in_l2=result.hot or result.bytes_moved <= device.l2_bytes,
    )


def suspect(result: BenchmarkResult, accumulate: str, unit: str = "cuda") -> str | None:
    """Return why a measured result is faster than the device allows, or None.

    `accumulate` names the type the roof is looked up by: on CUDA cores the accumulation
    type; on tensor cores the input type ("float16" covers FP16 and BF16 inputs with FP16 or
    FP32 accumulation, "tf32", "float64"). A type the table has no roof for is not judged.
    """
    _check_unit(unit)
    device, median = result.device, result.median_s
    if device is None or not median:
        return None
    roofs = Roofs.of(device)
    rate = roofs.rate(unit, accumulate)
    if result.flops and rate and result.flops / median > MARGIN * rate:
        where = "on CUDA cores" if unit == "cuda" else "on tensor cores"
        per_s = "TOPS" if accumulate == "int32" else "TFLOP/s"  # as the footer: not FLOPs
        return (f"{result.flops / median / 1e12:.1f} {per_s} is beyond the device's "
                f"{rate / 1e12:.1f} {per_s} {accumulate} roof {where}")
    bandwidth = roofs.dram_bps
    # Only data that cannot sit in L2 between samples is held to the DRAM roof.
    cold = not result.hot and result.bytes_moved > device.l2_bytes
    if bandwidth and cold and result.bytes_moved / median > MARGIN * bandwidth:
        return (f"{result.bytes_moved / median / 1e9:,.0f} GB/s is beyond the device's "
                f"{bandwidth / 1e9:,.0f} GB/s DRAM bandwidth")
    return None
