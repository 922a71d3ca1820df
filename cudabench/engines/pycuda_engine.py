"""The only module that imports PyCUDA: context, buffers, launches, events (its compile
path: pycuda_compile.py; its device facts: pycuda_device.py; its own kernels:
utility_kernels.py)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.catalog import KernelVariant
from cudabench.engines import telemetry
from cudabench.engines.cuda_driver import CudaDriver
from cudabench.engines.nvcc import pycuda_install_hint
from cudabench.engines.nvml import device_count
from cudabench.engines.protocol import (
    Compiled,
    CompileRequest,
    Engine,
    Geometry,
    KernelFault,
    Run,
)
from cudabench.engines.pycuda_compile import PycudaCompiler
from cudabench.engines.pycuda_device import device_info
from cudabench.engines.telemetry import MonitorLike
from cudabench.engines.utility_kernels import (
    BLOCK_TIMEOUT_NS,
    MAX_STAMPS,
    DIFFER_BLOCK,
    DIFFER_BLOCKS_PER_SM,
    DIFFER_KERNELS,
    FLUSH_BLOCK,
    FLUSH_BLOCKS_PER_SM,
    UTILITY_NAME,
    UTILITY_SOURCE,
    differ_mask,
    stamp_clock_mhz,
)
from cudabench.engines.visibility import refuse_launch_blocking, visible_entries
from cudabench.errors import GpuEnvironmentError, LaunchRefused
from cudabench.ops.vendor import VendorCall


def load_pycuda() -> ModuleType:
    """Import and initialise PyCUDA's driver module; say what is missing if it cannot."""
    # GPUs counted as nvidia-smi, NVML and --devices count them, before CUDA starts: in
    # CUDA's own order (fastest first) `--device 1` and `info --device 1` opened another
    # card than the one their memory check and `--devices 1` read, on a host of two models
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
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
            if not driver_present():  # building PyCUDA would not help here
                raise GpuEnvironmentError(
                    "no NVIDIA driver on this machine (libcuda.so.1 cannot be loaded), and "
                    "PyCUDA is not installed: measuring needs an NVIDIA GPU; without one, "
                    "`cudabench list`, `report`, `compare`, `history`, `plot` and `--dry-run` work"
                ) from None
            raise GpuEnvironmentError(f"PyCUDA is not installed: {pycuda_install_hint()}") from None
        raise GpuEnvironmentError(
            f"PyCUDA is installed but failed to load ({text}): it may be built for another "
            f"CUDA or Python; reinstall it ({pycuda_install_hint()})"
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


def driver_present() -> bool:
    """Return whether the NVIDIA driver's CUDA library loads here (libcuda.so.1)."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def needs_optin(dynamic: int, static: int, default_limit: int) -> bool:
    """Return whether a launch with dynamic bytes of dynamic shared memory must opt in
    (MAX_DYNAMIC_SHARED_SIZE_BYTES) first: a block's static and dynamic shared memory
    together beyond the default 48 KiB. Dynamic alone is not enough: 48 KiB of dynamic
    beside 24 bytes of static mbarriers is refused without it (dot/bulk, CHUNK=8192
    STAGES=3, on an H100)."""
    return dynamic > 0 and dynamic + static > default_limit


class PycudaEngine:
    """One GPU, its context and everything allocated on it (the Engine protocol)."""

    def __init__(self, device_index: int = 0) -> None:
        refuse_launch_blocking()
        self.cuda = load_pycuda()
        if not 0 <= device_index < self.cuda.Device.count():
            raise GpuEnvironmentError(
                f"--device {device_index}: there are {self.cuda.Device.count()} GPU(s)"
            )
        self.device = self.cuda.Device(device_index)
        # The primary context, the one the CUDA runtime uses: vendor libraries (cuBLAS
        # through CuPy) then run in the same context, on the engine's own buffers.
        self.context = self.device.retain_primary_context()
        self.context.push()
        self.faulted = False  # set when a kernel faulted: CUDA is unusable in this process
        self._start, self._stop = self.cuda.Event(), self.cuda.Event()
        self._flush_buffer: Any = None
        self._abandoned: list[Any] = []  # allocations of a faulted context, never freed
        self._utility: Any = None  # the stamp and blocking kernels, compiled on first use
        self._stamps: Any = None  # device buffer: (globaltimer, clock64) per stamp
        self._stamp_count = 0
        self._flag: Any = None  # host-mapped word the blocking kernel waits on
        self._differ_count: Any = None  # device word: count_differing's result
        self._driver: CudaDriver | None = None  # CUDA Python's bindings, for tensor maps
        self.info = device_info(self.cuda, self.device, device_index)
        self._compiler = PycudaCompiler(self.cuda, self.info.compute_capability,
                                        self._cuda_driver)
        self._compiler.ahead_source(UTILITY_SOURCE, UTILITY_NAME)  # needed by every sample
        self._monitor = telemetry.open_monitor(self.info.pci_bus_id)
        if self._monitor is not None:
            self.info = dataclasses.replace(self.info, settings=self._monitor.settings())
        import pycuda

        self.versions = {"engine": "pycuda", "engine_version": str(pycuda.VERSION_TEXT)}
        attrs, attr = self.device.get_attributes(), self.cuda.device_attribute
        self.grid_limits = tuple(int(attrs[a]) for a in (
            attr.MAX_GRID_DIM_X, attr.MAX_GRID_DIM_Y, attr.MAX_GRID_DIM_Z))

    # -- context ---------------------------------------------------------------------

    def _fault(self, exc: Exception) -> KernelFault:
        self.faulted = True
        return KernelFault(str(exc))

    @property
    def monitor(self) -> MonitorLike | None:
        """Return the NVML monitor of this GPU (found by PCI bus id), or None."""
        return self._monitor

    def close(self) -> None:
        """Stop the compiles still running and release the context."""
        self._compiler.close()
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None
        if self.context is None:
            return
        try:
            self.context.pop()
            self.context.detach()
        except self.cuda.Error:
            if not self.faulted:  # after a fault the driver refuses; nothing is left to free
                raise
        self.context = None

    # -- compilation (pycuda_compile.py) ---------------------------------------------
    def compile(self, variant: KernelVariant, defines: Mapping[str, object],
                signature: str, headers: Sequence[str] = ()) -> Compiled:
        """Compile a variant with -D defines, for its `arch` when it names one (exactly that
        target), else for this GPU; built ahead when compile_ahead asked for it."""
        return self._compiler.compile(variant, defines, signature, headers)

    def forget_compiled(self) -> None:
        self._compiler.forget()

    def compile_ahead(self, requests: Sequence[CompileRequest]) -> None:
        """Start building requests on the CPU's cores while this engine measures."""
        self._compiler.ahead(requests)

    def _cuda_driver(self) -> CudaDriver:
        """Return CUDA Python's driver bindings in this engine's context (opened once)."""
        if self._driver is None:
            self._driver = CudaDriver(int(self.context.handle))
        return self._driver

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

    def count_differing(self, a: Any, b: Any, count: int, itemsize: int, zeros_equal: bool
                        ) -> int | None:
        """Return in how many elements two buffers differ, counted by a kernel (see Engine):
        only the count crosses the link."""
        name = DIFFER_KERNELS.get(itemsize)
        if name is None:
            return None
        if count <= 0:
            return 0
        kernel = self._utility_kernels()[name]
        if self._differ_count is None:
            self._differ_count = self.allocate(8)
        self.cuda.memset_d32(self._differ_count, 0, 2)
        blocks = max(1, min(self.info.sm_count * DIFFER_BLOCKS_PER_SM,
                            -(-count // DIFFER_BLOCK)))
        kernel.prepared_call((blocks, 1), (DIFFER_BLOCK, 1, 1), int(a), int(b),
                             count, differ_mask(itemsize, zeros_equal), int(self._differ_count))
        self.synchronize()
        return int(self.download(self._differ_count, (1,), np.uint64)[0])

    # -- running and timing ----------------------------------------------------------
    def launcher(self, compiled: Compiled, geometry: Geometry, args: Sequence[Any],
                 dynamic_shared: Sequence[int] = ()) -> Run:
        """Return a function that enqueues every launch of a variant once; its tensor maps,
        encoded here over the buffers in args, go after the op's arguments by value."""
        if compiled.tensor_maps:
            driver = self._cuda_driver()
            args = [*args, *(driver.encode(int(args[request.arg_index]), request)
                             for request in compiled.tensor_maps)]
        shared = list(dynamic_shared) or [0] * len(compiled.functions)
        statics = [attrs.get("shared_bytes", 0) for attrs in compiled.attributes]
        statics += [0] * (len(compiled.functions) - len(statics))  # unknown: dynamic decides
        for function, nbytes, static in zip(compiled.functions, shared, statics):
            if needs_optin(nbytes, static, self.info.max_shared_bytes_per_block):
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

    def time_once(self, run: Run, flush: str | None) -> float:
        """Return the seconds between CUDA events around one run, the L2 flushed before by
        flush's method (None: not flushed); clock stamps before the flush and after the stop
        event (off the clock).

        Everything is queued behind a kernel that spins on a host-mapped flag, released once
        the stop event is queued: the GPU starts the run only when all of its launches are
        in the queue. Otherwise a run of several launches, or a host thread slowed for a
        moment (the GIL, a busy core), leaves the GPU idle between the start event and a
        launch, and the idle time is counted: on an H100 whole rounds of a 37 us kernel read
        4-5 us slower, and `ab` intervals reached -60%.
        """
        self._hold()
        # The first stamp goes before the flush: with nothing left between the launches, a
        # short run's span alone is too short for the SM clock (clock_log gives None under
        # 20 us); the flush beside it runs at the same clock and makes the span long enough.
        self._stamp()
        if flush is not None:
            self._flush_l2(flush)
        self._start.record()
        run()
        self._stop.record()
        self._stamp()
        self._release()
        return float(self._stop.time_since(self._start)) / 1e3

    def time_writeback(self, run: Run, flush: str) -> tuple[float, float] | None:
        """Return the seconds of a flush after run (itself after a flush) and of a flush
        after a flush alone, each timed with the stream held until all of it is queued
        (None when the hold gave up: the host's gaps may be on the clock)."""
        times = []
        for with_run in (True, False):
            self._hold()
            self._flush_l2(flush)
            if with_run:
                run()
            self._start.record()
            self._flush_l2(flush)
            self._stop.record()
            if not self._release():
                return None
            times.append(float(self._stop.time_since(self._start)) / 1e3)
        return times[0], times[1]

    def _release(self) -> bool:
        """Release the stream _hold held (the GPU sees the host-mapped word change) and wait
        for it, raising KernelFault if a launch failed; return False where the blocking
        kernel had given up, its launches run as they were queued (host gaps on the clock)."""
        self._flag[0] = 1
        try:
            self._stop.synchronize()
        except self.cuda.Error as exc:
            raise self._fault(exc) from None
        return not self._flag[1]

    def _hold(self) -> None:
        """Enqueue the blocking kernel: the stream waits until the host sets the flag (or
        the kernel gives up after BLOCK_TIMEOUT_NS and the launches run as queued)."""
        block = self._utility_kernels()["cudabench_block"]
        self._flag[:] = 0
        flag = np.uintp(self._flag.base.get_device_pointer())
        block(flag, np.uint64(BLOCK_TIMEOUT_NS), block=(1, 1, 1), grid=(1, 1))

    # -- clocks and batches ------------------------------------------------------------
    def _utility_kernels(self) -> Any:
        if self._utility is None:
            module = self._compiler.load_source(UTILITY_SOURCE, UTILITY_NAME)
            # get_function returns a new, unprepared object each call: keep these two.
            self._utility = {name: module.get_function(name) for name in
                             ("cudabench_stamp", "cudabench_block", "cudabench_read_flush",
                              *DIFFER_KERNELS.values())}
            self._utility["cudabench_stamp"].prepare("P")
            self._utility["cudabench_read_flush"].prepare("PQiP")
            for name in DIFFER_KERNELS.values():
                self._utility[name].prepare("PPQQP")
            self._stamps = self.allocate(MAX_STAMPS * 16)
            self._flag = self.cuda.pagelocked_zeros(
                (2,), np.int32, mem_flags=self.cuda.host_alloc_flags.DEVICEMAP)
        return self._utility

    def _stamp(self) -> None:
        """Enqueue a stamp: SM 0's clock64 and the global timer, into the next slot."""
        if self._stamp_count >= MAX_STAMPS:
            return
        stamp = self._utility_kernels()["cudabench_stamp"]
        # One block per SM: one of them lands on SM 0, which alone writes.
        slot = np.uintp(int(self._stamps) + 16 * self._stamp_count)
        stamp.prepared_async_call((self.info.sm_count, 1), (32, 1, 1), None, slot)
        self._stamp_count += 1

    def clock_log(self, start: bool = False) -> list[float | None]:
        """Return the SM clock (MHz) of each sample since the log started; see Engine."""
        self._utility_kernels()
        if start:
            self.fill(self._stamps, np.uint32(0), MAX_STAMPS * 4)
            self._stamp_count = 0
            return []
        self.synchronize()
        words = self.download(self._stamps, (MAX_STAMPS, 2), np.uint64)[: self._stamp_count]
        return [stamp_clock_mhz(words[i], words[i + 1])
                for i in range(0, len(words) - 1, 2)]

    def time_batch(self, run: Run, launches: int) -> float | None:
        """Return seconds per launch of runs queued behind a blocking kernel (nvbench's
        method): the start event fires when the block is released, with every launch
        already queued, so the launch cost stays off the clock."""
        self._hold()
        self._start.record()
        for _ in range(launches):
            run()
        self._stop.record()
        if not self._release():
            return None
        return float(self._stop.time_since(self._start)) / 1e3 / launches

    def time_transfer(self, buffer: Any, host: np.ndarray, to_device: bool, pinned: bool
                      ) -> float:
        """Return the event time of one host<->device copy; pinned copies go through a
        page-locked array made before the events (its allocation is not the transfer)."""
        cuda = self.cuda
        side = np.ascontiguousarray(host)
        if pinned:
            side = cuda.pagelocked_empty(host.shape, host.dtype)
            side[...] = host
        self._start.record()
        if to_device:
            (cuda.memcpy_htod_async if pinned else cuda.memcpy_htod)(buffer, side)
        else:
            (cuda.memcpy_dtoh_async if pinned else cuda.memcpy_dtoh)(side, buffer)
        self._stop.record()
        try:
            self._stop.synchronize()
        except cuda.Error as exc:
            raise self._fault(exc) from None
        return float(self._stop.time_since(self._start)) / 1e3

    def vendor_launcher(self, call: VendorCall, buffers: Mapping[str, Any],
                        shape: tuple[int, ...], emulate: Run) -> tuple[Run, Run]:
        """Bind a vendor routine to the buffers' device addresses (same context)."""
        return call.bind({name: int(buffer) for name, buffer in buffers.items()}, shape)

    def _flush_l2(self, method: str) -> None:
        # Reading or overwriting twice the L2's size evicts whatever the previous sample left
        # in it. A read leaves clean lines; a memset leaves dirty ones, which the timed kernel
        # then writes back on its own clock (results/model.py, L2_FLUSHES).
        vectors = max(2 * self.info.l2_bytes // 16, 1)
        if self._flush_buffer is None:
            self._flush_buffer = self.allocate(vectors * 16)
            self.cuda.memset_d32(self._flush_buffer, 0, vectors * 4)  # defined when read
        if method == "memset":
            self.cuda.memset_d32_async(self._flush_buffer, 0, vectors * 4)
            return
        kernel = self._utility_kernels()["cudabench_read_flush"]
        blocks = self.info.sm_count * FLUSH_BLOCKS_PER_SM
        kernel.prepared_async_call((blocks, 1), (FLUSH_BLOCK, 1, 1), None,
                                   int(self._flush_buffer), vectors, 0,
                                   int(self._flush_buffer))

    def copy(self, target: Any, source: Any, nbytes: int) -> None:
        """Enqueue a device-to-device copy of nbytes."""
        self.cuda.memcpy_dtod_async(target, source, nbytes)


@dataclass(frozen=True)
class PycudaSpec:
    """Open the PyCUDA engine on one GPU."""

    device_index: int = 0

    def open(self) -> Engine:
        """Import PyCUDA (only now) and make a context on the device."""
        return PycudaEngine(self.device_index)

    def count_devices(self) -> int:
        """Count the visible GPUs: CUDA_VISIBLE_DEVICES's entries, else NVML's count, else
        the driver's (PyCUDA, in this process: a count makes no context)."""
        count = device_count()  # NVML's: the host's, whatever CUDA_VISIBLE_DEVICES shows
        entries = visible_entries(physical=count)
        if entries is not None:  # a UUID is not matched to an index ("UUID,0" may be one
            # GPU twice): never more than the host has, so no two workers share one GPU
            return min(len(entries), count) if count is not None else len(entries)
        if count is not None:
            return count
        return int(load_pycuda().Device.count())

    def restricted(self, index: int) -> PycudaSpec:
        """The worker's one visible GPU is its device 0."""
        return PycudaSpec(0)
