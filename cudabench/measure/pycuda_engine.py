"""The only module that imports PyCUDA: context, compilation, buffers, launches, events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from cudabench.catalog import KernelVariant
from cudabench.errors import CompileError, GpuEnvironmentError, LaunchRefused
from cudabench.measure.engine import Compiled, Geometry, KernelFault, Run
from cudabench.measure.nvml import device_uuid
from cudabench.results.model import DeviceInfo

INSTALL_HINT = (
    "install it with `pip install 'cudabench[gpu]'` (builds against the CUDA toolkit: "
    "nvcc must be on PATH)"
)


def load_pycuda() -> ModuleType:
    """Import and initialise PyCUDA's driver module; say what is missing if it cannot."""
    try:
        import pycuda.compiler  # noqa: F401  (loads nvcc support; fails like the driver)
        import pycuda.driver as cuda
    except ImportError as exc:
        text = str(exc)
        if "libcuda" in text:
            raise GpuEnvironmentError(
                f"the NVIDIA CUDA driver library is missing ({text}): install the NVIDIA "
                "driver, or run on a machine with an NVIDIA GPU"
            ) from None
        if isinstance(exc, ModuleNotFoundError) and str(exc.name or "").startswith("pycuda"):
            raise GpuEnvironmentError(f"PyCUDA is not installed: {INSTALL_HINT}") from None
        raise GpuEnvironmentError(
            f"PyCUDA is installed but failed to load ({text}): it may be built for another "
            f"CUDA or Python; reinstall it ({INSTALL_HINT})"
        ) from None
    try:
        cuda.init()
        count = cuda.Device.count()
    except Exception as exc:  # pycuda raises its own RuntimeError/LogicError here
        raise GpuEnvironmentError(
            f"the CUDA driver could not start ({exc}): is an NVIDIA driver installed and a "
            "GPU visible (nvidia-smi, CUDA_VISIBLE_DEVICES)?"
        ) from None
    if count == 0:
        raise GpuEnvironmentError("no CUDA GPU found (nvidia-smi lists none visible)")
    module: ModuleType = cuda
    return module


class PycudaEngine:
    """One GPU, its context and everything allocated on it (the Engine protocol)."""

    def __init__(self, device_index: int = 0) -> None:
        self.cuda = load_pycuda()
        import pycuda.compiler

        self._compiler: ModuleType = pycuda.compiler
        if not 0 <= device_index < self.cuda.Device.count():
            raise GpuEnvironmentError(
                f"--device {device_index}: there are {self.cuda.Device.count()} GPU(s)"
            )
        self.device = self.cuda.Device(device_index)
        # A context of our own rather than the primary one: cudabench shares the process
        # with nothing else, and releases it in close().
        self.context = self.device.make_context()
        self.faulted = False  # set when a kernel faulted: CUDA is unusable in this process
        self._modules: dict[tuple[Any, ...], Compiled] = {}
        self._start, self._stop = self.cuda.Event(), self.cuda.Event()
        self._flush_buffer: Any = None
        self._abandoned: list[Any] = []  # allocations of a faulted context, never freed
        self.info = self._device_info(device_index)
        import pycuda

        self.versions = {"engine": "pycuda", "engine_version": str(pycuda.VERSION_TEXT)}
        attrs, attr = self.device.get_attributes(), self.cuda.device_attribute
        self.grid_limits = tuple(int(attrs[a]) for a in (
            attr.MAX_GRID_DIM_X, attr.MAX_GRID_DIM_Y, attr.MAX_GRID_DIM_Z))

    # -- context ---------------------------------------------------------------------

    def _fault(self, exc: Exception) -> KernelFault:
        self.faulted = True
        return KernelFault(str(exc))

    def close(self) -> None:
        """Release the context."""
        if self.context is None:
            return
        try:
            self.context.pop()
            self.context.detach()
        except self.cuda.Error:
            if not self.faulted:  # after a fault the driver refuses; nothing is left to free
                raise
        self.context = None

    def _device_info(self, device_index: int) -> DeviceInfo:
        cuda = self.cuda
        attrs = self.device.get_attributes()
        attr = cuda.device_attribute
        major, minor = self.device.compute_capability()
        driver = cuda.get_driver_version()
        built = cuda.get_version()
        pci_bus_id = str(self.device.pci_bus_id())
        return DeviceInfo(
            name=self.device.name(),
            compute_capability=f"{major}.{minor}",
            sm_count=int(attrs[attr.MULTIPROCESSOR_COUNT]),
            memory_bytes=int(self.device.total_memory()),
            l2_bytes=int(attrs[attr.L2_CACHE_SIZE]),
            sm_clock_khz=int(attrs.get(attr.CLOCK_RATE, 0)),
            memory_clock_khz=int(attrs.get(attr.MEMORY_CLOCK_RATE, 0)),
            memory_bus_bits=int(attrs.get(attr.GLOBAL_MEMORY_BUS_WIDTH, 0)),
            max_threads_per_block=int(attrs[attr.MAX_THREADS_PER_BLOCK]),
            max_shared_bytes_per_block=int(attrs[attr.MAX_SHARED_MEMORY_PER_BLOCK]),
            max_shared_bytes_per_block_optin=int(
                attrs.get(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0)) or None,
            driver_version=f"{driver // 1000}.{driver % 1000 // 10}",
            cuda_version=".".join(map(str, built)),
            index=device_index,
            pci_bus_id=pci_bus_id,
            uuid=device_uuid(pci_bus_id),
        )

    # -- compilation -----------------------------------------------------------------
    def compile(self, variant: KernelVariant, defines: Mapping[str, object],
                signature: str, headers: Sequence[str] = ()) -> Compiled:
        """Compile a variant with -D defines; signature is PyCUDA's prepare() string."""
        key = (str(variant.path), variant.source, tuple(sorted(defines.items())), signature,
               tuple(headers))
        if key in self._modules:
            return self._modules[key]
        # -lineinfo: compute-sanitizer and profilers name source lines (no cost in speed).
        options = ["-lineinfo", *(f"-D{name}={value}" for name, value in sorted(defines.items()))]
        try:
            module = self._compiler.SourceModule(
                variant.compile_source(headers), options=options, no_extern_c=True,
                include_dirs=[str(variant.path.parent)],
            )
        except self.cuda.CompileError as exc:
            output = (exc.stderr or exc.stdout or str(exc)).strip()
            raise CompileError(
                f"{variant.path}: nvcc failed with {' '.join(options)}:\n{output}"
            ) from None
        compiled = Compiled(functions=[])
        for launch in variant.launches:
            try:
                function = module.get_function(launch.entry)
            except self.cuda.LogicError:
                raise CompileError(
                    f"{variant.path}:{launch.line}: no kernel named {launch.entry!r} in the "
                    f'compiled file; declare it `extern "C" __global__ void {launch.entry}(...)`'
                ) from None
            function.prepare(signature)
            compiled.functions.append(function)
            compiled.attributes.append({
                "registers": function.num_regs,
                "shared_bytes": function.shared_size_bytes,
                "local_bytes": function.local_size_bytes,
                "max_threads_per_block": function.max_threads_per_block,
            })
        self._modules[key] = compiled
        return compiled

    # -- memory ----------------------------------------------------------------------
    def allocate(self, nbytes: int) -> Any:
        """Allocate device memory (at least one byte)."""
        try:
            return self.cuda.mem_alloc(max(int(nbytes), 1))
        except self.cuda.MemoryError:
            raise GpuEnvironmentError(
                f"out of GPU memory allocating {nbytes / 2**20:.1f} MiB: use a smaller --size"
            ) from None

    def offset(self, buffer: Any, nbytes: int) -> Any:
        """Return the device address nbytes into buffer (PyCUDA takes addresses as ints)."""
        return int(buffer) + nbytes

    def free(self, buffer: Any) -> None:
        """Release an allocation; after a fault there is nothing left to free."""
        if self.faulted:
            # The driver would refuse, and PyCUDA warn on stderr when the allocation is
            # collected: keep it until the worker process ends (workers.py exits at once).
            self._abandoned.append(buffer)
            return
        buffer.free()

    def upload(self, device_buffer: Any, host: np.ndarray) -> None:
        """Copy a host array to the device."""
        if host.size:
            self.cuda.memcpy_htod(device_buffer, np.ascontiguousarray(host))

    def download(self, device_buffer: Any, shape: tuple[int, ...], dtype: type[np.generic]
                 ) -> np.ndarray:
        """Copy a device buffer back as an array."""
        host = np.empty(shape, dtype=dtype)
        if host.size:
            self.cuda.memcpy_dtoh(host, device_buffer)
        return host

    def fill(self, device_buffer: Any, value: np.generic, count: int) -> None:
        """Fill count elements with value's bit pattern (the poison), of value's width."""
        width = np.asarray(value).itemsize
        memset = {4: (self.cuda.memset_d32, np.uint32), 2: (self.cuda.memset_d16, np.uint16),
                  1: (self.cuda.memset_d8, np.uint8)}.get(width)
        if memset is None:  # no 8-byte memset in the driver API: upload the pattern
            self.upload(device_buffer, np.full(max(count, 1), value))
            return
        function, word = memset
        function(device_buffer, int(np.asarray(value).reshape(1).view(word)[0]), max(count, 1))

    # -- running and timing ----------------------------------------------------------
    def launcher(self, compiled: Compiled, geometry: Geometry, args: Sequence[Any],
                 dynamic_shared: Sequence[int] = ()) -> Run:
        """Return a function that enqueues every launch of a variant once."""
        shared = list(dynamic_shared) or [0] * len(compiled.functions)
        for function, nbytes in zip(compiled.functions, shared):
            if nbytes > self.info.max_shared_bytes_per_block:  # beyond 48 KiB: opt in
                function.set_attribute(
                    self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        calls = list(zip(compiled.functions, geometry, shared))

        def run() -> None:
            for function, (grid, block), nbytes in calls:
                try:
                    function.prepared_async_call(grid, block, None, *args, shared_size=nbytes)
                except self.cuda.Error as exc:  # refused at once: not a fault, nothing ran
                    raise LaunchRefused(
                        f"the driver refused to launch grid {grid} x block {block}: {exc}"
                    ) from None

        return run

    def synchronize(self) -> None:
        """Wait for the GPU; raise KernelFault if a launch failed."""
        try:
            self.context.synchronize()
        except self.cuda.Error as exc:
            raise self._fault(exc) from None

    def time_once(self, run: Run, flush_l2: bool) -> float:
        """Return the seconds between CUDA events around one run, L2 flushed before."""
        if flush_l2:
            self._flush_l2()
        self._start.record()
        run()
        self._stop.record()
        try:
            self._stop.synchronize()
        except self.cuda.Error as exc:
            raise self._fault(exc) from None
        return float(self._stop.time_since(self._start)) / 1e3

    def _flush_l2(self) -> None:
        # Overwriting twice the L2's size evicts whatever the previous sample left in it.
        words = max(2 * self.info.l2_bytes // 4, 1)
        if self._flush_buffer is None:
            self._flush_buffer = self.allocate(words * 4)
        self.cuda.memset_d32_async(self._flush_buffer, 0, words)

    def copy(self, target: Any, source: Any, nbytes: int) -> None:
        """Enqueue a device-to-device copy of nbytes."""
        self.cuda.memcpy_dtod_async(target, source, nbytes)
