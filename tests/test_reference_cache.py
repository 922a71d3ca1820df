"""CPU references kept on disk across runs: the key and what is never trusted."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from cudabench.measure import reference_cache
from cudabench.measure.reference_cache import cached_reference, reference_key
from cudabench.planning.plan import Request, make_plan


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(reference_cache, "MIN_SECONDS", 0.0)  # keep even quick ones
    return tmp_path / "cache" / "references"


def plan(size="33", seed=0, dtype="float32"):
    return make_plan(Request(op="matmul", size=size, dtype=dtype, seed=seed))


class Counting:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_a_reference_is_computed_once_then_read_back(cache):
    compute = Counting(np.arange(6.0))
    first, computed_s = cached_reference(plan(), 0, compute)
    again, read_s = cached_reference(plan(), 0, compute)
    assert compute.calls == 1 and np.array_equal(first, again)
    assert read_s == computed_s  # the CPU's time to compute it, not to read it
    assert len(list(cache.glob("*.pickle"))) == 1


def test_the_key_changes_with_what_the_reference_depends_on(cache):
    base = reference_key(plan(), 0)
    assert reference_key(plan(), 0) == base
    assert reference_key(plan(seed=1), 1) != base  # the seed
    assert reference_key(plan(), 1) != base
    assert reference_key(plan(size="34"), 0) != base  # the shape
    assert reference_key(plan(dtype="float64"), 0) != base  # the types
    assert reference_key(plan(), 0, "full") != base  # the check asked for
    compute = Counting(np.ones(3))
    cached_reference(plan(), 0, compute)
    cached_reference(plan(), 1, compute)  # a changed seed recomputes
    assert compute.calls == 2


def test_a_torn_entry_is_made_again(cache):
    compute = Counting(np.ones(3))
    cached_reference(plan(), 0, compute)
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(pickle.dumps((np.ones(3), 1.0))[:10])  # cut short
    value, _ = cached_reference(plan(), 0, compute)
    assert compute.calls == 2 and np.array_equal(value, np.ones(3))


def test_quick_references_and_cache_off_keep_nothing(cache, monkeypatch):
    monkeypatch.setattr(reference_cache, "MIN_SECONDS", 60.0)
    cached_reference(plan(), 0, Counting(np.ones(3)))
    assert not cache.exists()
    monkeypatch.setattr(reference_cache, "MIN_SECONDS", 0.0)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", "off")
    compute = Counting(np.ones(3))
    cached_reference(plan(), 0, compute)
    cached_reference(plan(), 0, compute)
    assert compute.calls == 2 and not cache.exists()


@pytest.mark.parametrize("damage", ["flip a bit of the value", "garble the pickle",
                                    "an entry of the old format"])
def test_a_damaged_entry_is_made_again_and_written_over(cache, damage):
    # a flipped bit was a wrong reference that failed every kernel, cuBLAS too, at every
    # run; a garbled pickle raised MemoryError or ModuleNotFoundError as the op's error
    compute = Counting(np.full(3, 1.5))
    cached_reference(plan(), 0, compute)
    (entry,) = cache.glob("*.pickle")
    data = bytearray(entry.read_bytes())
    if damage == "flip a bit of the value":
        data[-20] ^= 0x40
    elif damage == "garble the pickle":
        data[len(reference_cache.MAGIC) + 40:] = b"\x80\x05cnosuchmodule_x\nX\n." * 3
    else:
        data = bytearray(pickle.dumps((np.zeros(3), 1.0)))
    entry.write_bytes(bytes(data))
    value, _ = cached_reference(plan(), 0, compute)
    assert compute.calls == 2 and np.array_equal(value, np.full(3, 1.5))
    again, _ = cached_reference(plan(), 0, compute)  # rewritten whole
    assert compute.calls == 2 and np.array_equal(again, np.full(3, 1.5))


def test_a_write_that_fails_leaves_no_part_file(cache, monkeypatch):
    # a full disk: the torn temporary stayed, filling the disk further, never pruned
    import os

    def full(handle, mode):
        os.close(handle)

        class Full:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def write(self, data):
                raise OSError(28, "No space left on device")
        return Full()

    monkeypatch.setattr(reference_cache.os, "fdopen", full)
    value, _ = cached_reference(plan(), 0, Counting(np.arange(6.0)))
    assert np.array_equal(value, np.arange(6.0))  # the run goes on
    assert list(cache.iterdir()) == []
