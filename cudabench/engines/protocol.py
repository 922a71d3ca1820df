"""The engine seam: what the pipeline needs from a GPU, as a typing.Protocol.

The pipeline talks only to this protocol, and this module imports no engine. The PyCUDA
engine (pycuda_engine.py with its spec, the only module that imports pycuda) implements it
on a real GPU; the fake engine (fake_engine.py)
implements it with NumPy for tests. An engine is opened from a spec, a small picklable
recipe, so that a fresh worker process can open an engine of the same kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.catalog import KernelVariant
from cudabench.engines.telemetry import MonitorLike
from cudabench.engines.tensormaps import TensorMapRequest
from cudabench.ops.vendor import VendorCall
from cudabench.results.model import DeviceInfo

Geometry = Sequence[tuple[tuple[int, ...], tuple[int, ...]]]  # (grid, block) per launch
Run = Callable[[], None]  # enqueues one run of a variant (all its launches), returns at once


class KernelFault(Exception):
    """A launch failed on the GPU (bad address, timeout...): CUDA in this process is lost."""


@dataclass
class Compiled:
    """A compiled variant: one engine function per launch in the header's order.

    tensor_maps, set by the caller for one plan (variant.py), are the TMA tensor maps every
    launch gets after the op's arguments: launcher() builds each over the buffer at its
    arg_index among the arguments it is given, so that new buffers get maps of their own.
    """

    functions: list[Any]
    attributes: list[dict[str, int]] = field(default_factory=list)  # registers, shared bytes...
    tensor_maps: tuple[TensorMapRequest, ...] = ()


@dataclass(frozen=True)
class CompileRequest:
    """A variant to compile with these -D defines and headers: what compile() is given,
    but the signature (which changes how the kernel is called, not what is built)."""

    variant: KernelVariant
    defines: Mapping[str, object]
    headers: tuple[str, ...] = ()


class Engine(Protocol):
    """One GPU, its context and everything allocated on it."""

    @property
    def info(self) -> DeviceInfo:
        """Return the device's facts: name, identity, SMs, L2, clocks, limits."""

    @property
    def grid_limits(self) -> tuple[int, ...]:
        """Return the largest grid extent along x, y and z."""

    @property
    def versions(self) -> Mapping[str, str]:
        """Return the engine's and its libraries' versions, recorded in results files."""

    @property
    def faulted(self) -> bool:
        """Return whether a kernel faulted: nothing more can run in this process."""

    def compile(self, variant: KernelVariant, defines: Mapping[str, object],
                signature: str, headers: Sequence[str] = ()) -> Compiled:
        """Compile a variant with -D defines and headers included first (cuda_fp16.h for
        float16), for its `arch` when it names one (else for this GPU); signature has a P
        per buffer, an i per int, then a T per tensor map (128 bytes, passed by value)."""

    def compile_ahead(self, requests: Sequence[CompileRequest]) -> None:
        """Start compiling requests in the background, in order, while the caller goes on;
        compile() then waits only for its own. A hint: an engine may compile nothing."""

    def allocate(self, nbytes: int) -> Any:
        """Allocate device memory; GpuEnvironmentError when there is not enough."""

    def offset(self, buffer: Any, nbytes: int) -> Any:
        """Return a handle to the memory nbytes into buffer, usable like a buffer."""

    def free(self, buffer: Any) -> None:
        """Release an allocation (quietly after a fault: the process owns nothing then)."""

    def upload(self, buffer: Any, host: np.ndarray) -> None:
        """Copy a host array to the device."""

    def download(self, buffer: Any, shape: tuple[int, ...], dtype: type[np.generic]
                 ) -> np.ndarray:
        """Copy a device buffer back as an array."""

    def fill(self, buffer: Any, value: np.generic, count: int) -> None:
        """Fill count elements with value's bit pattern (the poison)."""

    def copy(self, target: Any, source: Any, nbytes: int) -> None:
        """Enqueue a device-to-device copy."""

    def count_differing(self, a: Any, b: Any, count: int, itemsize: int, zeros_equal: bool
                        ) -> int | None:
        """Return in how many of count elements of itemsize bytes two device buffers differ,
        compared on the device as unsigned words (zeros_equal: +0 and -0 count as equal), or
        None where the engine cannot compare such elements there (the caller downloads)."""

    def launcher(self, compiled: Compiled, geometry: Geometry, args: Sequence[Any],
                 dynamic_shared: Sequence[int] = ()) -> Run:
        """Return a function that enqueues every launch of a variant once, each with its
        dynamic shared memory in bytes (opting in above 48 KiB). args are the op's; the
        compiled variant's tensor maps are built here over args[request.arg_index] and
        passed after them (TensorMapUnavailable when one cannot be made)."""

    def forget_compiled(self) -> None:
        """Forget the variants compiled and loaded so far (a worker kept across commands,
        before the next command: their source files or headers may have changed; the
        on-disk cache, which checks every file a build read, answers again quickly)."""

    def synchronize(self) -> None:
        """Wait for the GPU; raise KernelFault if a launch failed."""

    def time_once(self, run: Run, flush: str | None) -> float:
        """Return the seconds between events around one run, the L2 flushed before by
        flush's method ("clean": read twice its size; "memset": overwrite twice its size),
        or not at all (None: --hot)."""

    def clock_log(self, start: bool = False) -> list[float | None]:
        """Return the SM clock in MHz of each time_once since the log was (re)started, from
        stamps in the stream (None where a sample was too short to tell); start=True empties
        the log."""

    def time_writeback(self, run: Run, flush: str) -> tuple[float, float] | None:
        """Return the seconds of an L2 flush (flush's method) right after run, itself run
        after a flush, and of one right after a flush alone: the first less the second is
        the write-back of the dirty lines run left in the L2. None if the queue could not
        be held (as time_batch)."""

    def time_batch(self, run: Run, launches: int) -> float | None:
        """Return seconds per launch of `launches` runs queued behind a blocking kernel and
        timed back to back (warm L2, the launch cost off the clock); None if the queue could
        not be held (the blocking kernel timed out)."""

    def time_transfer(self, buffer: Any, host: np.ndarray, to_device: bool, pinned: bool
                      ) -> float:
        """Return the seconds between events around one copy of host to (or from) buffer,
        from pageable memory or a page-locked copy of it made beforehand."""

    def vendor_launcher(self, call: VendorCall, buffers: Mapping[str, Any],
                        shape: tuple[int, ...], emulate: Run) -> tuple[Run, Run]:
        """Bind a vendor routine to buffers: return its run and what releases it. A fake
        engine runs emulate instead. VendorUnavailable when the library cannot run here."""

    @property
    def monitor(self) -> MonitorLike | None:
        """Return the device's NVML monitor (clocks, power, energy), or None without NVML."""

    def close(self) -> None:
        """Release the context and everything in it."""


class EngineSpec(Protocol):
    """A picklable recipe for an engine, so that a fresh process can open the same kind."""

    @property
    def device_index(self) -> int:
        """Return the CUDA index of the device the engine opens."""

    def open(self) -> Engine:
        """Open the engine (this is where a GPU is first touched)."""

    def count_devices(self) -> int:
        """Return how many GPUs this process could open (no context is made)."""

    def restricted(self, index: int) -> EngineSpec:
        """Return the spec a worker opens when CUDA_VISIBLE_DEVICES shows it GPU `index`
        alone."""
