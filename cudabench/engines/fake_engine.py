"""A NumPy engine for tests: kernels run as their op's host stand-in, timings are synthetic.

It implements the Engine protocol, so the whole pipeline (plan, verify, time, results file,
tables, compare) runs on a machine without a GPU. Timings are seeded and noisy, so the
stopping rule, the spread and the significance test see data that behaves like samples,
not constants. It can be told to misbehave per variant (see Fault). It is a test double,
not a user mode: no command line flag selects it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.catalog import KernelVariant
from cudabench.errors import CompileError, GpuEnvironmentError
from cudabench.engines.fake_kernels import Fault, FakeKernel, FakeLaunch
from cudabench.engines.protocol import (
    Compiled,
    CompileRequest,
    Engine,
    Geometry,
    KernelFault,
    Run,
)
from cudabench.engines.telemetry import FakeMonitor, MonitorLike
from cudabench.engines.utility_kernels import differ_mask
from cudabench.engines.tensormaps import (
    GLOBAL_ALIGN,
    TensorMapRequest,
    TensorMapUnavailable,
    shape_problem,
)
from cudabench.ops import DTYPES, find_op
from cudabench.ops.cublas import INSTALL_HINT
from cudabench.ops.vendor import VendorCall, VendorUnavailable
from cudabench.results.model import DeviceInfo

FAKE_DEVICE = DeviceInfo(
    name="cudabench fake GPU", compute_capability="9.0", sm_count=4,
    memory_bytes=2 * 2**30, l2_bytes=2**20, sm_clock_khz=1_500_000,
    memory_clock_khz=2_000_000, memory_bus_bits=1024, max_threads_per_block=1024,
    max_shared_bytes_per_block=48 * 1024, driver_version="13.0", cuda_version="13.0",
    index=0, pci_bus_id="0000:00:00.0", uuid="GPU-00000000-fake-0000-0000-000000000000",
    max_shared_bytes_per_block_optin=227 * 1024,
)


FAKE_CLOCK_MHZ = FAKE_DEVICE.sm_clock_khz / 1e3
FAKE_LINK_BPS = 32e9  # a PCIe 4.0 x16 link, per direction
FAKE_FLUSH_S = 40e-6  # a clean flush of the fake L2
FAKE_WRITEBACK_SHARE = 0.05  # of a run's time, what its dirty lines take to write back
LAUNCH_FREE = 0.8  # a batch hides the launch cost: a fake batch is this much faster


@dataclass(frozen=True)
class FakeSpec:
    """A picklable recipe for a fake engine; seed varies the noise between runs."""

    device_index: int = 0
    seed: int = 0
    faults: Mapping[str, Fault] = field(default_factory=dict)  # variant name -> fault
    slowdown: Mapping[str, float] = field(default_factory=dict)  # variant name -> factor
    noise: float = 0.01  # relative spread of the synthetic samples
    memory_bytes: int = 2 * 2**30  # allocations beyond this fail, as on a full GPU
    slow_clock_every: int = 0  # every n-th sample runs at half the SM clock (0: never)
    batch_share: float = LAUNCH_FREE  # a batch's time per launch, of a sample's
    throttle: bool = False  # the monitor reports a power cap while measuring
    vendor_missing: bool = False  # the vendor library is not installed
    no_monitor: bool = False  # no NVML on this host
    compute_capability: str = FAKE_DEVICE.compute_capability  # another GPU generation
    device_count: int = 1  # how many fake GPUs the host has
    lost_devices: tuple[int, ...] = ()  # fake GPUs that cannot be opened (lost)
    lost_after_s: float = 0.0  # how long a lost GPU takes to fail to open
    crashing_devices: tuple[int, ...] = ()  # fake GPUs whose driver kills the process opening

    def open(self) -> Engine:
        """Return a fresh fake engine."""
        if self.device_index in self.crashing_devices:  # as a driver's segfault would
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.device_index in self.lost_devices:
            time.sleep(self.lost_after_s)
            raise GpuEnvironmentError(f"fake GPU {self.device_index} fell off the bus")
        return FakeEngine(self)

    def model(self) -> str:
        """Return the fake GPU's model name (what a tuning cache is kept per)."""
        return FAKE_DEVICE.name

    def count_devices(self) -> int:
        """Return the fake host's GPU count."""
        return self.device_count

    def restricted(self, index: int) -> FakeSpec:
        """A fake engine ignores CUDA_VISIBLE_DEVICES: it is told its index instead."""
        return dataclasses.replace(self, device_index=index)


class FakeEngine:
    """The Engine protocol on NumPy arrays, with a log of what the pipeline asked for."""

    def __init__(self, spec: FakeSpec) -> None:
        self.spec = spec
        index = spec.device_index
        self.info = dataclasses.replace(
            FAKE_DEVICE, index=index, pci_bus_id=f"0000:{index:02x}:00.0",
            uuid=f"GPU-00000000-fake-0000-0000-{index:012d}",
            compute_capability=spec.compute_capability)
        self.grid_limits = (2**31 - 1, 65535, 65535)
        self.versions = {"engine": "fake", "engine_version": "1"}
        self.faulted = False
        # each GPU its own noise: --replicate's rows of one benchmark are not copies
        self.rng = np.random.default_rng(spec.seed if not spec.device_index
                                         else (spec.seed, spec.device_index))
        self.out_of_memory = False
        self.pending_s = 0.0  # simulated GPU time enqueued since the last event
        self.pending_fault = False
        self.pending_hang = False  # a launch that never finishes was enqueued
        # ("flush" | "sample" | "fill" | "run" | "compile" | "tensor_map", detail)
        self.log: list[tuple[str, Any]] = []
        self.allocated_bytes = 0
        self.clocks: list[float | None] = []  # the SM clock of each sample since clock_log
        self._monitor = None if spec.no_monitor else FakeMonitor(throttle=spec.throttle)
        if self._monitor is not None:
            self.info = dataclasses.replace(self.info, settings=self._monitor.settings())

    # -- the protocol --------------------------------------------------------------------
    def forget_compiled(self) -> None:
        """Nothing is kept: every compile is made again (and logged)."""
        self.log.append(("forget", None))

    def compile(self, variant: KernelVariant, defines: Mapping[str, object],
                signature: str, headers: Sequence[str] = ()) -> Compiled:
        """Return a fake kernel per launch; nothing is compiled. Like the driver, refuse a
        variant built for another GPU, and a signature whose tensor maps are not the
        header's."""
        self.alive()
        self.log.append(("compile", (variant.name, signature)))
        if variant.arch is not None:
            reason = variant.arch.unsupported_on(self.info.compute_capability)
            if reason is not None:
                raise CompileError(f"{variant.path}: the driver cannot load the kernel on this "
                                   f"GPU (fake): {reason}")
        if signature.count("T") != len(variant.tensor_maps):
            raise CompileError(f"{variant.path}: the signature {signature} passes "
                               f"{signature.count('T')} tensor map(s); the header asks for "
                               f"{len(variant.tensor_maps)}")
        fault = self.spec.faults.get(variant.name)
        while fault is Fault.COMPILE_HANGS:
            time.sleep(1.0)
        if fault is Fault.OUT_OF_MEMORY:
            self.out_of_memory = True
        dtype = next(d.name for d in DTYPES.values() if d.ctype == defines["DTYPE"])
        types = find_op(variant.op_origin, variant.op).type_set(dtype)
        kernel = FakeKernel(variant, types, fault, self.spec.slowdown.get(variant.name, 1.0))
        attributes = {"registers": 32, "shared_bytes": 0, "local_bytes": 0,
                      "max_threads_per_block": 1024}
        return Compiled([kernel] * len(variant.launches),
                        [dict(attributes) for _ in variant.launches])

    def compile_ahead(self, requests: Sequence[CompileRequest]) -> None:
        """Log what would be compiled ahead (names and defines); nothing is compiled."""
        self.log.append(("compile_ahead", [(r.variant.name, dict(r.defines), r.headers)
                                           for r in requests]))

    def allocate(self, nbytes: int) -> np.ndarray:
        """Return a byte array holding garbage (never zeros), like fresh device memory."""
        self.alive()
        if self.out_of_memory or self.allocated_bytes + nbytes > self.spec.memory_bytes:
            self.out_of_memory = False  # one variant's buffers do not fit; later ones may
            raise GpuEnvironmentError(
                f"out of GPU memory allocating {nbytes / 2**20:.1f} MiB: use a smaller --size")
        self.allocated_bytes += max(nbytes, 1)
        return self.rng.integers(1, 255, size=max(nbytes, 1), dtype=np.uint8)

    def offset(self, buffer: Any, nbytes: int) -> np.ndarray:
        """Return a view of the bytes from nbytes on."""
        view: np.ndarray = buffer[nbytes:]
        return view

    def free(self, buffer: Any) -> None:
        """Forget an allocation."""
        self.allocated_bytes -= buffer.size

    def upload(self, buffer: Any, host: np.ndarray) -> None:
        """Copy host bytes in."""
        self.alive()
        self.log.append(("upload", host.nbytes))
        raw = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        buffer[: raw.size] = raw

    def download(self, buffer: Any, shape: tuple[int, ...], dtype: type[np.generic]
                 ) -> np.ndarray:
        """Copy bytes out as an array."""
        self.alive()
        count = math.prod(shape)
        size = np.dtype(dtype).itemsize
        return np.array(buffer[: count * size].view(dtype).reshape(shape))

    def fill(self, buffer: Any, value: np.generic, count: int) -> None:
        """Fill count elements with value."""
        self.alive()
        kind = np.asarray(value).dtype
        buffer[: count * kind.itemsize].view(kind)[:] = value
        self.log.append(("fill", count))

    def copy(self, target: Any, source: Any, nbytes: int) -> None:
        """Copy bytes and enqueue the time a copy of that size takes."""
        self.alive()
        target[:nbytes] = source[:nbytes]
        self.pending_s += 2e-6 + 2 * nbytes / 2.0e12

    def count_differing(self, a: Any, b: Any, count: int, itemsize: int, zeros_equal: bool
                        ) -> int | None:
        """Count differing elements as the GPU's kernel does (None for widths it has no
        kernel for, as the real engine)."""
        self.alive()
        if itemsize not in (2, 4, 8):
            return None
        self.log.append(("compare", count))
        kind = np.dtype(f"u{itemsize}")
        x = a[: count * itemsize].view(kind)
        y = b[: count * itemsize].view(kind)
        differ = x != y
        if zeros_equal:  # +0 and -0: only the sign bit set between them
            differ &= ((x | y) & kind.type(differ_mask(itemsize, True))) != 0
        return int(np.count_nonzero(differ))

    def launcher(self, compiled: Compiled, geometry: Geometry, args: Sequence[Any],
                 dynamic_shared: Sequence[int] = ()) -> Run:
        """Return a run that emulates the variant and enqueues its synthetic time; check and
        record the tensor maps the real engine would build (the op's emulate never sees
        them: a correct kernel reads the same buffers through them)."""
        kernel: FakeKernel = compiled.functions[0]
        for request in compiled.tensor_maps:
            self._tensor_map(args, request)
        op = find_op(kernel.variant.op_origin, kernel.variant.op)
        cost_s = self._cost_s(kernel, args)
        return FakeLaunch(self, kernel, op, args, cost_s)

    def synchronize(self) -> None:
        """Raise KernelFault if a launch faulted since the last check."""
        self.alive()
        self._raise_pending_fault()

    def time_once(self, run: Run, flush: str | None) -> float:
        """Return one noisy synthetic sample of run's enqueued time."""
        self.alive()
        if flush is not None:
            self.log.append(("flush", flush))
        self.pending_s = 0.0
        run()
        self._raise_pending_fault()
        base, self.pending_s = self.pending_s, 0.0
        noise = self.rng.lognormal(0.0, self.spec.noise)
        if self.rng.random() < 0.02:  # a rare outlier, as a real GPU has
            noise *= 1.0 + self.rng.uniform(0.05, 0.5)
        sample = base * noise
        slow = self.spec.slow_clock_every and len(self.clocks) % self.spec.slow_clock_every == 1
        self.clocks.append(FAKE_CLOCK_MHZ / 2 if slow else FAKE_CLOCK_MHZ)
        if slow:  # at half the clock a kernel takes about twice as long
            sample *= 2
        self.log.append(("sample", sample))
        return float(sample)

    def clock_log(self, start: bool = False) -> list[float | None]:
        """Return the fake SM clock of each sample since the log started."""
        if start:
            self.clocks = []
        return list(self.clocks)

    def time_writeback(self, run: Run, flush: str) -> tuple[float, float] | None:
        """Run once; return a noisy flush after it, longer by a share of its synthetic
        time, and a noisy flush after none."""
        self.alive()
        self.pending_s = 0.0
        run()
        self._raise_pending_fault()
        cost, self.pending_s = self.pending_s, 0.0
        self.log.append(("writeback", flush))
        after, baseline = FAKE_FLUSH_S * self.rng.lognormal(0.0, self.spec.noise, 2)
        return float(after + FAKE_WRITEBACK_SHARE * cost), float(baseline)

    def time_batch(self, run: Run, launches: int) -> float | None:
        """Return the enqueued time per launch of back-to-back runs, without noise."""
        self.alive()
        self.pending_s = 0.0
        # One launch computed, its synthetic cost charged `launches` times: on a GPU the
        # batch costs milliseconds, and emulating hundreds of launches on the CPU would
        # make the fake the slowest part of every CPU test and of the fake benchmarks.
        run()
        self._raise_pending_fault()
        total, self.pending_s = self.pending_s * launches, 0.0
        self.log.append(("batch", launches))
        return total / launches * self.spec.batch_share

    def time_transfer(self, buffer: Any, host: np.ndarray, to_device: bool, pinned: bool
                      ) -> float:
        """Copy for real and return a synthetic time: pinned copies run at the link's rate,
        pageable ones through a staging copy at less than half of it."""
        self.alive()
        if to_device:
            self.upload(buffer, host)
        rate = FAKE_LINK_BPS * (0.9 if pinned else 0.4)
        return 5e-6 + host.nbytes / rate

    def vendor_launcher(self, call: VendorCall, buffers: Mapping[str, Any],
                        shape: tuple[int, ...], emulate: Run) -> tuple[Run, Run]:
        """Return a run that does the op's work with NumPy at a vendor-like speed."""
        self.alive()
        if self.spec.vendor_missing:
            raise VendorUnavailable(INSTALL_HINT)
        cost_s = 2e-6 + sum(b.size for b in buffers.values()) / 1.5e12

        def run() -> None:
            self.alive()
            self.log.append(("run", call.library))
            with np.errstate(all="ignore"):
                emulate()
            self.pending_s += cost_s

        return run, lambda: None

    @property
    def monitor(self) -> MonitorLike | None:
        """Return the fake NVML monitor (None when the spec says there is no NVML)."""
        return self._monitor

    def close(self) -> None:
        """Nothing to release."""

    # -- helpers -------------------------------------------------------------------------
    def _tensor_map(self, args: Sequence[Any], request: TensorMapRequest) -> None:
        """Check a tensor map as cuTensorMapEncodeTiled would, over the buffer it names, and
        log it; TensorMapUnavailable when the driver would refuse it."""
        self.alive()
        buffer = args[request.arg_index] if request.arg_index < len(args) else None
        if not isinstance(buffer, np.ndarray):
            raise TensorMapUnavailable(f"tensor_map {request.buffer}: argument "
                                       f"{request.arg_index + 1} is not a buffer (fake)")
        problem = shape_problem(request)
        if problem is None and buffer.size < request.nbytes:
            problem = (f"{request.buffer} holds {buffer.size} bytes, fewer than the "
                       f"{request.nbytes} its map covers")
        address = int(buffer.__array_interface__["data"][0])
        if problem is None and address % GLOBAL_ALIGN:
            problem = f"{request.buffer} is not {GLOBAL_ALIGN}-byte aligned"
        if problem is not None:
            raise TensorMapUnavailable(f"tensor_map {request.buffer} ({request.where}): "
                                       f"{problem} (fake)")
        self.log.append(("tensor_map", (request, address)))

    def _cost_s(self, kernel: FakeKernel, args: Sequence[Any]) -> float:
        """Model one launch's time: a launch cost and its buffers' bytes, times a factor
        that differs by variant (a stand-in for speed, not a model of the GPU)."""
        buffers = sum(arg.size for arg in args if isinstance(arg, np.ndarray))
        factor = 1.0 + (zlib.crc32(kernel.variant.name.encode()) % 1000) / 1000
        return (3e-6 + buffers / 1.0e12) * factor * kernel.slowdown

    def _raise_pending_fault(self) -> None:
        """Raise the fault a launch left, as the next synchronising call does on a GPU;
        block forever behind a launch that never finishes."""
        while self.pending_hang:
            time.sleep(1.0)
        if self.pending_fault:
            self.faulted = True
            raise KernelFault("an illegal memory access was encountered (fake)")

    def alive(self) -> None:
        """Refuse everything after a fault."""
        # After a fault, CUDA refuses everything in the process: so does the fake.
        if self.faulted:
            raise KernelFault("the CUDA context is unusable after an earlier fault (fake)")
