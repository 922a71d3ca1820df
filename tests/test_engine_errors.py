"""Without a usable GPU, the engine says which piece is missing and how to get it."""

from __future__ import annotations

import builtins
import types

import pytest

from cudabench.errors import GpuEnvironmentError
from cudabench.engines import pycuda_engine as engine


def fake_import(driver=None, error: ImportError | None = None):
    """Return an importer of pycuda that yields a package holding driver, or raises error."""
    def import_pycuda(name):
        if error is not None:
            raise error
        return types.SimpleNamespace(driver=driver, compiler=types.SimpleNamespace())
    return import_pycuda


def driver(init_error: Exception | None = None, count: int = 1):
    def init():
        if init_error is not None:
            raise init_error
    return types.SimpleNamespace(init=init, Device=types.SimpleNamespace(count=lambda: count))


@pytest.mark.parametrize(("importer", "says"), [
    (fake_import(error=ModuleNotFoundError("No module named 'pycuda'", name="pycuda")),
     "PyCUDA is not installed: install it with `pip install 'pycuda>=2024.1' "
     "'nvidia-ml-py>=12' (cudabench's `gpu` extra)`"),
    (fake_import(error=ImportError("libcuda.so.1: cannot open shared object file",
                                   name="pycuda._driver")),
     "the NVIDIA CUDA driver library is missing"),
    (fake_import(error=ImportError("undefined symbol: cuMemAlloc_v2", name="pycuda._driver")),
     "PyCUDA is installed but failed to load"),
    (fake_import(driver(RuntimeError("cuInit failed: no CUDA-capable device is detected"))),
     "the CUDA driver could not start (cuInit failed: no CUDA-capable device"),
    (fake_import(driver(count=0)), "no CUDA GPU found"),
])
def test_missing_pieces_are_named(monkeypatch, importer, says):
    monkeypatch.setattr(engine, "driver_present", lambda: True)  # PyCUDA is what is missing
    real_import = builtins.__import__

    def patched(name, *args, **kwargs):
        if name == "pycuda" or name.startswith("pycuda."):
            return importer(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", patched)
    with pytest.raises(GpuEnvironmentError) as error:
        engine.load_pycuda()
    assert says in str(error.value)


def test_without_a_driver_the_hint_is_what_works_without_a_gpu(monkeypatch):
    real_import = builtins.__import__

    def patched(name, *args, **kwargs):
        if name == "pycuda" or name.startswith("pycuda."):
            raise ModuleNotFoundError("No module named 'pycuda'", name="pycuda")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", patched)
    monkeypatch.setattr(engine, "driver_present", lambda: False)
    with pytest.raises(GpuEnvironmentError, match="no NVIDIA driver on this machine"):
        engine.load_pycuda()


def test_a_launch_opts_in_where_static_and_dynamic_shared_memory_pass_48_kib():
    """48 KiB of dynamic shared memory beside 24 bytes of static was refused on an H100
    (dot/bulk CHUNK=8192 STAGES=3): the two together decide."""
    from cudabench.engines.pycuda_engine import needs_optin

    limit = 48 * 1024
    assert needs_optin(limit, 24, limit)
    assert needs_optin(limit + 1, 0, limit)
    assert not needs_optin(limit, 0, limit)
    assert not needs_optin(limit - 24, 24, limit)
    assert not needs_optin(0, limit, limit)  # static alone: nothing to opt in to


def test_the_launcher_opts_in_each_function_by_its_own_static_shared_memory():
    """launcher() pairs each function with its dynamic bytes and its static ones (a stub
    driver records the opt-ins; nothing is launched)."""
    from cudabench.engines.protocol import Compiled

    class Function:
        def __init__(self):
            self.opted = []

        def set_attribute(self, attribute, value):
            self.opted.append((attribute, value))

    gpu = engine.PycudaEngine.__new__(engine.PycudaEngine)
    gpu.info = types.SimpleNamespace(max_shared_bytes_per_block=48 * 1024)
    gpu.cuda = types.SimpleNamespace(
        function_attribute=types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="max dynamic"))
    first, second, third = Function(), Function(), Function()
    compiled = Compiled([first, second, third],
                        attributes=[{"shared_bytes": 24}, {"shared_bytes": 0}])
    gpu.launcher(compiled, [((1, 1, 1), (32, 1, 1))] * 3, [], [48 * 1024] * 3)
    assert first.opted == [("max dynamic", 48 * 1024)]  # 24 static bytes beside it
    assert second.opted == [] and third.opted == []  # 48 KiB alone fits; unknown: as dynamic


@pytest.mark.parametrize("method", ["clean", "memset"])
def test_the_flush_reads_or_overwrites_twice_the_l2(method):
    """_flush_l2 with a stub driver: the buffer (twice the L2) is allocated and set once;
    then each flush either launches the read over all of it or memsets all of it."""
    calls = []

    class Kernel:
        def prepared_async_call(self, grid, block, stream, *args):
            calls.append(("read", grid, block, stream, args))

    gpu = engine.PycudaEngine.__new__(engine.PycudaEngine)
    gpu.info = types.SimpleNamespace(l2_bytes=50 * 2**20, sm_count=132)
    gpu._flush_buffer = None
    gpu.allocate = lambda nbytes: calls.append(("allocate", nbytes)) or 4096
    gpu._utility_kernels = lambda: {"cudabench_read_flush": Kernel()}
    gpu.cuda = types.SimpleNamespace(
        memset_d32=lambda buffer, value, words: calls.append(("set", buffer, words)),
        memset_d32_async=lambda buffer, value, words: calls.append(("memset", buffer, words)))
    gpu._flush_l2(method)
    gpu._flush_l2(method)
    words = 2 * 50 * 2**20 // 4
    assert calls[:2] == [("allocate", 4 * words), ("set", 4096, words)]
    if method == "memset":
        assert calls[2:] == [("memset", 4096, words)] * 2
    else:
        read = ("read", (132 * 8, 1), (256, 1, 1), None, (4096, words // 4, 0, 4096))
        assert calls[2:] == [read] * 2


def stub_timer(gave_up: bool = False):
    """Return a PycudaEngine whose stream work is a log: the blocking kernel, stamps,
    flushes, runs, events and the flag, and whose events are 2 ms apart."""
    log = []

    class Event:
        def __init__(self, name):
            self.name = name

        def record(self):
            log.append(f"{self.name}.record")

        def synchronize(self):
            log.append(f"{self.name}.synchronize")

        def time_since(self, other):
            return 2.0

    class Flag(list):
        def __setitem__(self, index, value):
            log.append(f"flag[{index}]={value}")
            super().__setitem__(index, value)

    gpu = engine.PycudaEngine.__new__(engine.PycudaEngine)
    gpu._start, gpu._stop = Event("start"), Event("stop")
    gpu._flag = Flag([0, 1 if gave_up else 0])
    gpu.cuda = types.SimpleNamespace(Error=RuntimeError)
    gpu._hold = lambda: log.append("hold")
    gpu._stamp = lambda: log.append("stamp")
    gpu._flush_l2 = lambda method: log.append(f"flush {method}")
    return gpu, log, lambda: log.append("run")


def test_every_timing_queues_its_work_behind_the_hold_then_releases_and_waits():
    # the order is the measurement: all queued behind the spinning kernel, events around
    # the timed part alone, released once everything is queued
    gpu, log, run = stub_timer()
    assert gpu.time_once(run, "clean") == 2e-3
    assert log == ["hold", "stamp", "flush clean", "start.record", "run", "stop.record",
                   "stamp", "flag[0]=1", "stop.synchronize"]
    log.clear()
    assert gpu.time_batch(run, 3) == pytest.approx(2e-3 / 3)
    assert log == ["hold", "start.record", "run", "run", "run", "stop.record", "flag[0]=1",
                   "stop.synchronize"]
    log.clear()
    assert gpu.time_writeback(run, "clean") == (2e-3, 2e-3)
    pair = ["hold", "flush clean", "start.record", "flush clean", "stop.record", "flag[0]=1",
            "stop.synchronize"]
    assert log == [*pair[:2], "run", *pair[2:], *pair]


def test_a_hold_that_gave_up_voids_a_batch_and_a_write_back_pair():
    gpu, _, run = stub_timer(gave_up=True)
    assert gpu.time_batch(run, 3) is None and gpu.time_writeback(run, "clean") is None
