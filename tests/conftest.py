"""Shared fixtures; GPU tests (marker `gpu`) skip with the reason when no GPU is usable."""

from __future__ import annotations

import functools
import os
import tempfile

import pytest


def pytest_configure(config):
    """Keep the tests' caches (compiled kernels, references) out of the user's: one folder
    for the session, unless the caller chose one; and the user's kept workers out of the
    tests."""
    os.environ.setdefault("CUDABENCH_CACHE_DIR", tempfile.mkdtemp(prefix="cudabench-tests-"))
    # A developer's shell may keep workers for every command (CUDABENCH_KEEP_WORKERS): the
    # tests start their own, and those that keep one say so.
    os.environ.pop("CUDABENCH_KEEP_WORKERS", None)
    os.environ.pop("CUDABENCH_HISTORY_DB", None)  # a developer's store, kept out too
    # The tables fit the terminal's width, which COLUMNS sets: a CI runner's (or a wide
    # shell's) must not change what the tests read. Without it Rich and pytest take 80
    # columns off a terminal; a test of another width sets COLUMNS itself.
    for name in ("COLUMNS", "LINES", "CUDABENCH_WIDE"):
        os.environ.pop(name, None)


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Return why GPU tests cannot run here, or None when a GPU is usable."""
    from cudabench.errors import GpuEnvironmentError
    from cudabench.engines.pycuda_engine import load_pycuda

    try:
        load_pycuda()
    except GpuEnvironmentError as exc:
        return f"no usable GPU: {exc}"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture
def use_fake(monkeypatch):
    """Make the CLI open fake engines; call it with FakeSpec fields to configure them."""
    from cudabench.engines.fake_engine import FakeSpec

    def use(**fields) -> None:
        spec = FakeSpec(**fields)
        monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: spec)

    use()
    return use


@pytest.fixture
def worker_starts(monkeypatch):
    """Return the list of GPU workers started (Worker._start) while the test runs: a fresh
    worker costs about a second on a GPU."""
    from cudabench.runner import workers

    starts = []
    original = workers.Worker._start

    def counted(self):
        starts.append(self)
        original(self)

    monkeypatch.setattr(workers.Worker, "_start", counted)
    return starts


@pytest.fixture
def no_gpu_work(monkeypatch):
    """Stop benchmark commands right after validation: what is tested is the input."""
    from cudabench.results import RunOutcome

    monkeypatch.setattr("cudabench.cli.commands.run_plans",
                        lambda plans, spec, on_result=None, on_start=None, **placement:
                        RunOutcome(()))
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
