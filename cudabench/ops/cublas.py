"""cuBLAS routines for the built-in ops, through CuPy's thin cuBLAS bindings (optional).

CuPy (the `vendor` extra) is imported only when a call is bound, on the GPU
worker: the engine's context is current then, so cuBLAS runs in it, on the legacy default
stream that the engine's events are recorded on. Each bound call owns a cuBLAS handle made
before timing. The compute type is pinned (CUBLAS_COMPUTE_32F: no TF32 for float32) and
named in the row's source.

Row-major buffers are column-major transposes: C = A @ B (row-major) is C^T = B^T A^T, a
column-major GEMM with the operands swapped; B = A^T is geam with op(A) = T.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.extras import install_hint
from cudabench.ops.vendor import Run, Shape, VendorCall, VendorUnavailable

INSTALL_HINT = (f"CuPy is not installed: `{install_hint('vendor')}` (with CUDA 12: "
                "cupy-cuda12x) for cuBLAS rows, or pass --no-vendor")
CUDA_R = {"float16": 2, "float32": 0, "float64": 1}  # cudaDataType_t
COMPUTE = {"float32": 68, "float64": 70}  # CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F
COMPUTE_NAMES = {68: "CUBLAS_COMPUTE_32F", 70: "CUBLAS_COMPUTE_64F"}
GEMM_DEFAULT = -1
OP_N, OP_T = 0, 1
POINTER_MODE_DEVICE = 1


def _cublas() -> Any:
    """Import CuPy's cuBLAS bindings, or say how to get them."""
    try:
        return importlib.import_module("cupy_backends.cuda.libs.cublas")
    except ImportError:
        raise VendorUnavailable(INSTALL_HINT) from None
    except Exception as exc:  # a CuPy built for another CUDA fails here, not on import
        raise VendorUnavailable(f"CuPy's cuBLAS failed to load ({exc}); reinstall CuPy for "
                                "this CUDA, or pass --no-vendor") from None


def _handle(cublas: Any) -> int:
    """Create a cuBLAS handle on the current context's legacy default stream."""
    try:
        handle = int(cublas.create())
        cublas.setStream(handle, 0)
    except Exception as exc:  # no GPU context, or cuBLAS refused
        raise VendorUnavailable(f"cuBLAS could not start here ({exc})") from None
    return handle


def gemm(input_type: str, output_type: str, accumulate: str) -> VendorCall | str:
    """Return cublasGemmEx for C = A @ B with a pinned compute type, or why none."""
    if input_type not in CUDA_R or output_type not in CUDA_R:
        return f"no vendor routine: cuBLAS has no {input_type} GEMM through CuPy"
    compute = COMPUTE[accumulate]
    # float16 inputs with a float32 compute type run on tensor cores; float64 GEMMs use the
    # FP64 tensor cores where the GPU has them (sm_80, sm_90; the vendor row falls back to
    # CUDA cores elsewhere: roofs.library_unit); float32 with COMPUTE_32F stays on CUDA cores.
    unit = "cuda" if input_type == "float32" else "tensor"
    note = " (no TF32)" if input_type == "float32" else ""
    scalar = np.float64 if accumulate == "float64" else np.float32

    def bind(buffers: Mapping[str, int], shape: Shape) -> tuple[Run, Run]:
        cublas = _cublas()
        handle = _handle(cublas)
        m, k, n = shape
        alpha, beta = np.ones(1, scalar), np.zeros(1, scalar)  # kept alive by the closure
        data = CUDA_R[input_type], CUDA_R[output_type]

        def run() -> None:
            # Column-major C^T (n x m) = B^T (n x k) @ A^T (k x m).
            cublas.gemmEx(handle, OP_N, OP_N, n, m, k, alpha.ctypes.data, buffers["B"],
                          data[0], n, buffers["A"], data[0], k, beta.ctypes.data,
                          buffers["C"], data[1], n, compute, GEMM_DEFAULT)

        return run, lambda: cublas.destroy(handle)

    # Tensor cores are rated by their input type, CUDA cores by the accumulator's.
    roof_type = input_type if unit == "tensor" else accumulate
    return VendorCall("cuBLAS", f"cublasGemmEx {input_type}->{output_type}, "
                      f"{COMPUTE_NAMES[compute]}{note}", unit, roof_type, bind)


def geam(dtype: str) -> VendorCall | str:
    """Return cublas<t>geam for B = A^T, or why none."""
    routine = {"float32": "sgeam", "float64": "dgeam"}.get(dtype)
    if routine is None:
        return f"no vendor routine: cuBLAS geam has no {dtype} form"
    scalar = np.float64 if dtype == "float64" else np.float32

    def bind(buffers: Mapping[str, int], shape: Shape) -> tuple[Run, Run]:
        cublas = _cublas()
        handle = _handle(cublas)
        function = getattr(cublas, routine)
        rows, cols = shape
        alpha, beta = np.ones(1, scalar), np.zeros(1, scalar)

        def run() -> None:
            # A (rows x cols, row-major) is column-major cols x rows; B = A^T is column-
            # major rows x cols with leading dimension rows. beta = 0: B is not read.
            function(handle, OP_T, OP_N, rows, cols, alpha.ctypes.data, buffers["A"], cols,
                     beta.ctypes.data, buffers["B"], rows, buffers["B"], rows)

        return run, lambda: cublas.destroy(handle)

    return VendorCall("cuBLAS", f"cublas{routine[0].upper()}geam (transpose)", "", "", bind)


def dot(dtype: str) -> VendorCall | str:
    """Return cublas<t>dot writing its result to device memory, or why none."""
    routine = {"float32": "sdot", "float64": "ddot"}.get(dtype)
    if routine is None:
        return f"no vendor routine: cuBLAS has no {dtype} dot through CuPy"

    def bind(buffers: Mapping[str, int], shape: Shape) -> tuple[Run, Run]:
        cublas = _cublas()
        handle = _handle(cublas)
        # The result goes to the device buffer, so the call does not wait for the GPU.
        cublas.setPointerMode(handle, POINTER_MODE_DEVICE)
        function = getattr(cublas, routine)
        (n,) = shape

        def run() -> None:
            function(handle, n, buffers["a"], 1, buffers["b"], 1, buffers["out"])

        return run, lambda: cublas.destroy(handle)

    return VendorCall("cuBLAS", f"cublas{routine[0].upper()}dot (device pointer mode)",
                      "cuda", dtype, bind)
