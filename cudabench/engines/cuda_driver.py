"""CUDA Python's driver bindings, for what PyCUDA cannot do: TMA tensor maps.

PyCUDA has no cuTensorMapEncodeTiled, and packs a launch's arguments into one buffer that
must match the kernel's parameter layout byte for byte, where a CUtensorMap sits at an
offset its alignment (64 or 128 bytes, by toolkit) and the constant bank decide. So the
PyCUDA engine asks the driver, through `cuda.bindings.driver` (the package cuda-bindings,
the optional extra `tma`):

- param_layout: the (offset, size) of each parameter of a compiled kernel
  (cuFuncGetParamInfo on the same cubin loaded once more), from which tensormaps.py makes
  PyCUDA's struct format;
- encode: the 128 bytes of a tiled tensor map over a device address (cuTensorMapEncodeTiled),
  passed by value as one more argument.

The only module that imports cuda.bindings, and only when a variant has tensor maps. It
works in the calling thread's current context, which must be the PyCUDA engine's (the
device's primary context); open() checks that.
"""

from __future__ import annotations

import ctypes
import importlib
import struct
from collections.abc import Sequence
from typing import Any

from cudabench.common.extras import install_hint
from cudabench.errors import GpuEnvironmentError
from cudabench.engines.tensormaps import (
    DATA_TYPES,
    TENSOR_MAP_BYTES,
    TensorMapRequest,
    TensorMapUnavailable,
)

INSTALL_HINT = (f"{install_hint('tma')}: CUDA Python's driver bindings (with a CUDA 12 "
                "driver: pip install 'cuda-bindings>=12.4,<13')")
MAX_PARAMS = 8192  # more than a kernel's 32 KiB of parameters can hold
SWIZZLE = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
L2_PROMOTION = {0: "NONE", 64: "L2_64B", 128: "L2_128B", 256: "L2_256B"}


def load_bindings() -> Any:
    """Import cuda.bindings.driver; TensorMapUnavailable with the install hint if missing."""
    try:
        return importlib.import_module("cuda.bindings.driver")
    except ImportError as exc:
        raise TensorMapUnavailable(
            f"tensor maps are built with CUDA Python's driver bindings, which cannot be "
            f"imported here ({exc}): {INSTALL_HINT}") from None


def encode_arguments(driver: Any, address: int, request: TensorMapRequest) -> tuple[Any, ...]:
    """Return cuTensorMapEncodeTiled's arguments for request over the device address: the
    driver counts dimensions innermost first, so extents, strides and box are reversed;
    every element stride is 1, no interleave, out-of-bounds elements read as zeros."""
    rank = len(request.shape)
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return (
        getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{DATA_TYPES[request.dtype]}"),
        rank,
        address,
        [u64(extent) for extent in reversed(request.shape)],
        [u64(stride) for stride in reversed(request.strides[:-1])],
        [u32(extent) for extent in reversed(request.box)],
        [u32(1)] * rank,
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{SWIZZLE[request.swizzle]}"),
        getattr(driver.CUtensorMapL2promotion,
                f"CU_TENSOR_MAP_L2_PROMOTION_{L2_PROMOTION[request.l2]}"),
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )


class CudaDriver:
    """The driver bindings in the PyCUDA engine's context."""

    def __init__(self, context_handle: int) -> None:
        self.driver = load_bindings()
        self._call("cuInit", 0)
        (current,) = self._call("cuCtxGetCurrent")
        if int(current) != int(context_handle):
            raise GpuEnvironmentError(
                f"CUDA Python's driver bindings see context {int(current):#x}, not PyCUDA's "
                f"{int(context_handle):#x}: tensor maps must be made in the engine's context")

    def _call(self, name: str, *args: Any) -> tuple[Any, ...]:
        """Call a driver function; return its results after the status, or raise on error."""
        result = getattr(self.driver, name)(*args)
        result = result if isinstance(result, tuple) else (result,)
        if result[0] != self.driver.CUresult.CUDA_SUCCESS:
            raise GpuEnvironmentError(f"the CUDA driver's {name} failed: {self.error(result[0])}")
        return tuple(result[1:])

    def error(self, status: Any) -> str:
        """Return a CUresult's name, e.g. CUDA_ERROR_INVALID_VALUE."""
        named = self.driver.cuGetErrorName(status)
        if named[0] == self.driver.CUresult.CUDA_SUCCESS and named[1]:
            return bytes(named[1]).decode(errors="replace")
        return f"CUresult {int(status)}"

    def param_layout(self, cubin: bytes, entry: str) -> list[tuple[int, int]]:
        """Return (offset, size) in bytes of each parameter of kernel entry in cubin, as the
        driver lays them out in the kernel's parameter space."""
        if not hasattr(self.driver, "cuFuncGetParamInfo"):
            raise TensorMapUnavailable(
                "these CUDA Python bindings have no cuFuncGetParamInfo, which tensor maps need "
                f"to place their argument: {INSTALL_HINT}")
        image = ctypes.create_string_buffer(cubin, len(cubin))
        (module,) = self._call("cuModuleLoadData", ctypes.addressof(image))
        try:
            (function,) = self._call("cuModuleGetFunction", module, entry.encode())
            layout = []
            for index in range(MAX_PARAMS):
                status, offset, size = self.driver.cuFuncGetParamInfo(function, index)
                if status == self.driver.CUresult.CUDA_ERROR_INVALID_VALUE:
                    break  # past the last parameter
                if status != self.driver.CUresult.CUDA_SUCCESS:
                    raise TensorMapUnavailable(
                        f"the driver cannot tell {entry}'s parameter layout (cuFuncGetParamInfo:"
                        f" {self.error(status)}); tensor maps need a CUDA 12.4 or newer driver")
                layout.append((int(offset), int(size)))
        finally:
            self._call("cuModuleUnload", module)
        return layout

    def encode(self, address: int, request: TensorMapRequest) -> bytes:
        """Return the 128 bytes of a tiled tensor map over the buffer at address."""
        status, tensor_map = self.driver.cuTensorMapEncodeTiled(
            *encode_arguments(self.driver, int(address), request))
        if status != self.driver.CUresult.CUDA_SUCCESS:
            raise TensorMapUnavailable(
                f"tensor_map {request.buffer} ({request.where}): the driver refused "
                f"{request.describe()} ({self.error(status)})")
        words: Sequence[Any] = tensor_map.opaque
        data = struct.pack(f"={len(words)}Q", *(int(word) for word in words))
        assert len(data) == TENSOR_MAP_BYTES
        return data
