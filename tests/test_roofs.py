"""The roofs against NVIDIA's datasheets, the roofline assessment, and the SUSPECT check."""

from __future__ import annotations

import dataclasses

import pytest

from cudabench.insight import roofs
from cudabench.insight.roofs import Roofs, assess, describe, suspect
from cudabench.results import DeviceInfo
from cudabench.results.model import BenchmarkResult

H100_SXM = DeviceInfo(
    name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
    memory_bytes=85017493504, l2_bytes=52428800, sm_clock_khz=1980000,
    memory_clock_khz=2619000, memory_bus_bits=5120, max_threads_per_block=1024,
    max_shared_bytes_per_block=49152, driver_version="13.0", cuda_version="13.0.0",
)
A100_40GB = DeviceInfo(
    name="NVIDIA A100-SXM4-40GB", compute_capability="8.0", sm_count=108,
    memory_bytes=42505273344, l2_bytes=41943040, sm_clock_khz=1410000,
    memory_clock_khz=1215000, memory_bus_bits=5120, max_threads_per_block=1024,
    max_shared_bytes_per_block=49152, driver_version="13.0", cuda_version="13.0.0",
)
T = 1e12


def measured(seconds: float, flops: int = 0, bytes_moved: int = 0, hot: bool = False,
             device: DeviceInfo | None = H100_SXM) -> BenchmarkResult:
    return BenchmarkResult(op="matmul", variant="v", params={}, shape=(1,), dims=("N",),
                           dtype="float16", hot=hot, samples_s=(seconds,) * 5, flops=flops,
                           bytes_moved=bytes_moved, device=device)


def matmul_at(tflops: float, n: int = 8192, device: DeviceInfo = H100_SXM) -> BenchmarkResult:
    flops = 2 * n**3
    return measured(flops / (tflops * T), flops=flops, bytes_moved=3 * 2 * n * n, device=device)


# The datasheets: H100 SXM5 and A100 whitepapers (dense, no sparsity).
@pytest.mark.parametrize(("unit", "dtype", "expected"), [
    ("cuda", "float32", 66.9), ("cuda", "float64", 33.5), ("cuda", "float16", 133.8),
    ("cuda", "int32", 33.5), ("tensor", "float16", 989.4), ("tensor", "tf32", 494.7),
    ("tensor", "float64", 66.9),
])
def test_the_h100_sxm_roofs_are_its_datasheet(unit, dtype, expected):
    assert Roofs.of(H100_SXM).rate(unit, dtype) == pytest.approx(expected * T, rel=0.01)


def test_the_h100_dram_roof_is_its_datasheet():
    assert roofs.dram_bandwidth(H100_SXM) == pytest.approx(3.35e12, rel=0.01)
    assert Roofs.of(H100_SXM).dram_bps == roofs.dram_bandwidth(H100_SXM)


@pytest.mark.parametrize(("unit", "dtype", "expected"), [
    ("cuda", "float32", 19.5), ("cuda", "float64", 9.7), ("cuda", "float16", 78.0),
    ("cuda", "int32", 19.5), ("tensor", "float16", 312.0), ("tensor", "tf32", 156.0),
    ("tensor", "float64", 19.5),
])
def test_the_a100_roofs_are_its_datasheet(unit, dtype, expected):
    assert Roofs.of(A100_40GB).rate(unit, dtype) == pytest.approx(expected * T, rel=0.01)


def test_the_a100_dram_roof_is_its_datasheet():
    assert Roofs.of(A100_40GB).dram_bps == pytest.approx(1.555e12, rel=0.01)


def test_int32_runs_at_half_the_fp32_rate_on_hopper_and_at_it_on_ampere():
    h100, a100 = Roofs.of(H100_SXM), Roofs.of(A100_40GB)
    assert h100.rate("cuda", "int32") == pytest.approx(h100.rate("cuda", "float32") / 2)
    assert a100.rate("cuda", "int32") == pytest.approx(a100.rate("cuda", "float32"))


def test_the_table_covers_volta_to_hopper_and_names_its_source_and_parts():
    for cc in ((7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0)):
        entry = roofs.CAPABILITIES[cc]
        assert set(entry.cuda) == {"float16", "float32", "float64", "int32"}
        assert "float16" in entry.tensor and entry.part and entry.note
    assert "Programming Guide" in roofs.SOURCE and "whitepaper" in roofs.SOURCE
    assert "Programming Guide" in (roofs.__doc__ or "")
    assert roofs.CAPABILITIES[(9, 0)].part == "H100 SXM"
    assert Roofs.of(H100_SXM).source == roofs.SOURCE


def test_tensor_types_the_hardware_lacks_have_no_roof():
    for cc in ("7.0", "7.5", "8.6", "8.9"):
        device = dataclasses.replace(H100_SXM, compute_capability=cc)
        assert Roofs.of(device).rate("tensor", "float64") is None
    assert Roofs.of(dataclasses.replace(H100_SXM, compute_capability="7.0")).rate(
        "tensor", "tf32") is None


@pytest.mark.parametrize("cc", ["12.0", "8.7", "garbage", ""])
def test_an_unknown_capability_has_no_arithmetic_roof_and_no_error(cc):
    device = dataclasses.replace(H100_SXM, compute_capability=cc)
    found = Roofs.of(device)
    assert found.ops == {} and found.assumed_part is None
    assert found.dram_bps == pytest.approx(3.35e12, rel=0.01)  # still from the attributes
    assert roofs.flop_rate(device, "float32") is None
    assert "not in the table" in describe(found)
    assert suspect(matmul_at(5000, device=device), "float32") is None
    graded = assess(matmul_at(50, device=device), found, "cuda", "float32", None)
    assert graded is not None and graded.roof_ops is None


@pytest.mark.parametrize(("cc", "name"), [("10.0", "sm_100"), ("12.0", "sm_120")])
def test_without_a_compute_roof_the_bound_is_unknown_not_memory(cc, name):
    device = dataclasses.replace(H100_SXM, compute_capability=cc)
    found = Roofs.of(device)
    graded = assess(matmul_at(50, device=device), found, "cuda", "float32", None)
    assert graded is not None and graded.bound is None
    assert graded.pct_of_peak is not None  # of the DRAM roof at its intensity, still
    assert f"{name} is not in the table" in describe(found)
    # a type a known GPU has no roof for is no more memory-bound
    graded = assess(matmul_at(5), Roofs.of(H100_SXM), "tensor", "int32", None)
    assert graded is not None and graded.bound is None


def test_no_memory_clock_means_no_dram_roof():
    found = Roofs.of(dataclasses.replace(H100_SXM, memory_clock_khz=0))
    assert found.dram_bps is None and found.ridge("cuda", "float32") is None
    assert "DRAM" not in describe(found)


def test_the_kept_flop_rate_reads_cuda_cores_by_default():
    assert roofs.flop_rate(H100_SXM, "float32") == pytest.approx(66.9e12, rel=0.01)
    assert roofs.flop_rate(H100_SXM, "float16", "tensor") == pytest.approx(989.4e12, rel=0.01)


def test_roofs_are_frozen_and_hashable():
    found = Roofs.of(H100_SXM)
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.dram_bps = 0.0  # type: ignore[misc]
    assert hash(found) == hash(Roofs.of(H100_SXM)) and found == Roofs.of(H100_SXM)


def test_the_footer_is_one_line_with_each_roof_its_arithmetic_and_its_source():
    text = describe(Roofs.of(H100_SXM))
    assert "\n" not in text and text.startswith("roofs: ")
    for part in ("DRAM 3,352 GB/s (2 x 2619 MHz x 5120 bit)", "CUDA cores FP16 133.8, FP32 66.9",
                 "INT32 33.5 TOPS", "tensor FP16 989.4, TF32 494.7, FP64 66.9 TFLOP/s",
                 "132 SMs x 1980 MHz", roofs.SOURCE, "the H100 SXM's per-SM rates"):
        assert part in text
    assert "assuming" not in text


@pytest.mark.parametrize(("name", "basis"), [
    ("NVIDIA H100 80GB HBM3", "the H100 SXM's per-SM rates"),
    ("NVIDIA H100 PCIe", "the H100 SXM's per-SM rates"),
    ("NVIDIA H200", "the H100 SXM's per-SM rates, which the H200 shares"),
    ("NVIDIA GH200 480GB", "the H100 SXM's per-SM rates, which the GH200 shares"),
    ("NVIDIA H800", "assuming the H100 SXM's per-SM rates"),
    ("NVIDIA H20", "assuming the H100 SXM's per-SM rates"),
])
def test_the_footer_states_the_rates_a_part_shares_and_assumes_the_rest(name, basis):
    # An H200 report said "assuming H100 SXM", as if its roofs were a guess: the H200 runs
    # the H100 SXM's rates per SM. An H800 or H20 does not, and there they stay assumed.
    text = describe(Roofs.of(dataclasses.replace(H100_SXM, name=name)))
    assert text.endswith(basis)


def test_an_a100_footer_names_the_a100_table():
    assert describe(Roofs.of(A100_40GB)).endswith("the A100 SXM's per-SM rates")


def test_a_copy_is_memory_bound_and_graded_against_dram_and_the_measured_copy():
    gib = 2**30
    copy = measured(2 * gib / 3.0e12, bytes_moved=2 * gib)  # 3.0 TB/s
    graded = assess(copy, Roofs.of(H100_SXM), "cuda", "float32", achievable_bps=2.9e12)
    assert graded is not None
    assert graded.bound == "memory" and graded.intensity is None and graded.achieved_ops is None
    assert graded.pct_of_peak == pytest.approx(100 * 3.0e12 / 3.352e12, rel=0.001)
    assert graded.pct_of_achievable == pytest.approx(100 * 3.0 / 2.9)
    assert not graded.in_l2 and graded.roof == "FP32 CUDA cores"


def test_a_low_intensity_op_is_memory_bound_and_graded_by_its_bytes():
    n = 2**28  # a float32 dot: 2 FLOP per 8 bytes, far below the ridge
    dot = measured(8 * n / 2.5e12, flops=2 * n, bytes_moved=8 * n)
    found = Roofs.of(H100_SXM)
    graded = assess(dot, found, "cuda", "float32", None)
    assert graded is not None and graded.bound == "memory"
    assert graded.intensity == pytest.approx(0.25)
    assert graded.pct_of_peak == pytest.approx(100 * 2.5e12 / found.dram_bps)
    assert graded.pct_of_achievable is None


def test_a_large_matmul_on_tensor_cores_is_compute_bound_against_the_tensor_roof():
    graded = assess(matmul_at(700), Roofs.of(H100_SXM), "tensor", "float16", None)
    assert graded is not None
    assert graded.bound == "compute" and graded.roof == "FP16 tensor"
    assert graded.pct_of_peak == pytest.approx(100 * 700 / 989.4, rel=0.001)
    assert graded.intensity == pytest.approx(2 * 8192**3 / (6 * 8192**2))


def test_the_bound_flips_at_the_ridge_point():
    found = Roofs.of(H100_SXM)
    ridge = found.ridge("cuda", "float32")
    assert ridge == pytest.approx(66.9e12 / 3.352e12, rel=0.01)  # FLOP/byte
    bytes_moved = 10**9
    for factor, bound in ((0.9, "memory"), (1.1, "compute")):
        flops = int(factor * ridge * bytes_moved)
        graded = assess(measured(1e-3, flops=flops, bytes_moved=bytes_moved), found, "cuda",
                        "float32", None)
        assert graded is not None and graded.bound == bound


def test_nothing_to_assess_without_a_median_or_a_device():
    found = Roofs.of(H100_SXM)
    untimed = dataclasses.replace(matmul_at(10), samples_s=())
    assert assess(untimed, found, "cuda", "float32", None) is None
    assert assess(matmul_at(10), found, "cuda", "float32", None) is not None
    deviceless = dataclasses.replace(matmul_at(10), device=None)
    assert assess(deviceless, found, "cuda", "float32", None) is None


@pytest.mark.parametrize("hot", [True, False])
def test_l2_resident_rows_get_percentages_but_are_not_suspect(hot):
    size = 2 * 2**30 if hot else 8 * 2**20  # hot, or cold but small enough to stay in L2
    fast = measured(size / 10e12, bytes_moved=size, hot=hot)  # 10 TB/s: L2, not DRAM
    graded = assess(fast, Roofs.of(H100_SXM), "cuda", "float32", 3.0e12)
    assert graded is not None and graded.in_l2
    assert graded.pct_of_peak is not None and graded.pct_of_peak > 100
    assert suspect(fast, "float32") is None


def test_a_cold_copy_beyond_dram_is_suspect():
    big = 2 * 2**30
    why = suspect(measured(big / 10e12, bytes_moved=big), "float32")
    assert why is not None and "GB/s DRAM bandwidth" in why
    assert suspect(measured(big / 3.0e12, bytes_moved=big), "float32") is None


def test_a_float16_matmul_at_700_tflops_is_believed_on_tensor_cores_only():
    fast = matmul_at(700)
    assert suspect(fast, "float16", unit="tensor") is None
    why = suspect(fast, "float16", unit="cuda")
    assert why is not None and "float16 roof on CUDA cores" in why
    why = suspect(fast, "float32")  # the existing call: accumulate type, CUDA cores
    assert why is not None and "TFLOP/s float32 roof on CUDA cores" in why


def test_an_int32_result_is_suspect_in_tops_as_the_footer_gives_its_roof():
    why = suspect(matmul_at(50), "int32")
    assert why is not None and why.startswith("50.0 TOPS is beyond the device's 33.5 TOPS int32")
    assert "FLOP" not in why


def test_beyond_the_tensor_roof_by_more_than_the_margin_is_suspect():
    assert suspect(matmul_at(989.4 * 1.05), "float16", "tensor") is None
    why = suspect(matmul_at(989.4 * 1.2), "float16", "tensor")
    assert why is not None and "roof on tensor cores" in why


def test_a_type_the_unit_has_no_roof_for_is_not_judged():
    assert suspect(matmul_at(5000), "int32", "tensor") is None
    assert suspect(matmul_at(5000), "bfloat8", "cuda") is None


def test_an_unknown_unit_is_a_callers_error():
    with pytest.raises(ValueError, match="unknown unit"):
        suspect(matmul_at(10), "float32", unit="tensr")
    with pytest.raises(ValueError, match="unknown unit"):
        assess(matmul_at(10), Roofs.of(H100_SXM), "tpu", "float32", None)
