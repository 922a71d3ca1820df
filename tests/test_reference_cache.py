"""CPU references kept on disk across runs: the key and what is never trusted."""

from __future__ import annotations

import pickle
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from cudabench.measure import reference_cache
from cudabench.measure.reference_cache import cached_reference, reference_key
from cudabench.planning.plan import Request, make_plan
from helpers import invoke

ROOT = Path(__file__).parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(reference_cache, "MIN_SECONDS", 0.0)  # keep even quick ones
    monkeypatch.setattr(reference_cache, "DIGEST_WORTH", 0.0, raising=False)  # any digest
    return tmp_path / "cache" / "references"


INPUTS = {"A": np.arange(6.0), "B": np.ones(4)}  # what the references below are "of"


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
    first, computed_s = cached_reference(plan(), 0, INPUTS, compute)
    again, read_s = cached_reference(plan(), 0, INPUTS, compute)
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
    cached_reference(plan(), 0, INPUTS, compute)
    cached_reference(plan(), 1, INPUTS, compute)  # a changed seed recomputes
    assert compute.calls == 2


def test_a_torn_entry_is_made_again(cache):
    compute = Counting(np.ones(3))
    cached_reference(plan(), 0, INPUTS, compute)
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(pickle.dumps((np.ones(3), 1.0))[:10])  # cut short
    value, _ = cached_reference(plan(), 0, INPUTS, compute)
    assert compute.calls == 2 and np.array_equal(value, np.ones(3))


def test_quick_references_and_cache_off_keep_nothing(cache, monkeypatch):
    monkeypatch.setattr(reference_cache, "MIN_SECONDS", 60.0)
    cached_reference(plan(), 0, INPUTS, Counting(np.ones(3)))
    assert not cache.exists()
    monkeypatch.setattr(reference_cache, "MIN_SECONDS", 0.0)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", "off")
    compute = Counting(np.ones(3))
    cached_reference(plan(), 0, INPUTS, compute)
    cached_reference(plan(), 0, INPUTS, compute)
    assert compute.calls == 2 and not cache.exists()


@pytest.mark.parametrize("damage", ["flip a bit of the value", "garble the pickle",
                                    "an entry of the old format"])
def test_a_damaged_entry_is_made_again_and_written_over(cache, damage):
    # a flipped bit was a wrong reference that failed every kernel, cuBLAS too, at every
    # run; a garbled pickle raised MemoryError or ModuleNotFoundError as the op's error
    compute = Counting(np.full(3, 1.5))
    cached_reference(plan(), 0, INPUTS, compute)
    (entry,) = cache.glob("*.pickle")
    data = bytearray(entry.read_bytes())
    if damage == "flip a bit of the value":
        data[-20] ^= 0x40
    elif damage == "garble the pickle":
        data[reference_cache.HEADER + 8:] = b"\x80\x05cnosuchmodule_x\nX\n." * 3
    else:
        data = bytearray(pickle.dumps((np.zeros(3), 1.0)))
    entry.write_bytes(bytes(data))
    value, _ = cached_reference(plan(), 0, INPUTS, compute)
    assert compute.calls == 2 and np.array_equal(value, np.full(3, 1.5))
    again, _ = cached_reference(plan(), 0, INPUTS, compute)  # rewritten whole
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
    value, _ = cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    assert np.array_equal(value, np.arange(6.0))  # the run goes on
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_a_write_stopped_by_a_signal_leaves_no_part_file(cache, monkeypatch, stop):
    # Ctrl-C or SIGTERM (a KeyboardInterrupt, SystemExit) while an entry was written left
    # its part file, which nothing removed
    def stopped(*args):
        raise stop()

    monkeypatch.setattr(reference_cache.os, "replace", stopped)
    with pytest.raises(stop):
        cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    assert list(cache.iterdir()) == []


def test_a_killed_writer_s_part_file_is_pruned_and_a_live_one_counted(cache, monkeypatch):
    # SIGKILL leaves a part file (up to 2 GiB) no handler can remove: pruning removes one
    # untouched for long, and counts a young one (a live writer's) in the folder's size
    import os

    cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    [entry] = cache.iterdir()
    size = entry.stat().st_size
    entry.unlink()
    old, young = cache / "tmpold.part", cache / "tmpyoung.part"
    old.write_bytes(b"x" * 100)
    young.write_bytes(b"y" * 100)
    long_ago = time.time() - reference_cache.STALE_PART_S - 60
    os.utime(old, (long_ago, long_ago))
    # room for the entry, not for the entry and the young part
    monkeypatch.setattr(reference_cache, "KEEP_BYTES", size + 50)
    cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    assert sorted(path.name for path in cache.iterdir()) == ["tmpyoung.part"]


def test_other_inputs_under_the_same_key_are_a_miss(cache):
    # an op may make inputs from more than the seed (a data file beside it, NumPy's global
    # generator): a reference of the last run's inputs failed every correct kernel
    compute = Counting(np.ones(3))
    cached_reference(plan(), 0, INPUTS, compute)
    other = {"A": np.arange(6.0), "B": np.array([1.0, 1.0, 1.0, 2.0])}
    value, _ = cached_reference(plan(), 0, other, Counting(np.zeros(3)))
    assert np.array_equal(value, np.zeros(3))  # computed, not the first inputs' reference
    assert len(list(cache.glob("*.pickle"))) == 1  # written over: one entry per key
    again, _ = cached_reference(plan(), 0, other, compute)
    assert compute.calls == 1 and np.array_equal(again, np.zeros(3))  # read back


def test_the_inputs_digest_covers_every_byte_name_type_and_shape(monkeypatch):
    monkeypatch.setattr(reference_cache, "DIGEST_CHUNK", 1000)  # several chunks, one short
    x = np.random.default_rng(0).standard_normal(12345)
    base = reference_cache.inputs_digest({"x": x})
    assert reference_cache.inputs_digest({"x": x.copy()}) == base
    for index in (0, 4321, 12344):  # any element, in any chunk: no sample
        changed = x.copy()
        changed[index] = np.nextafter(changed[index], np.inf)
        assert reference_cache.inputs_digest({"x": changed}) != base
    assert reference_cache.inputs_digest({"y": x}) != base
    assert reference_cache.inputs_digest({"x": x.view(np.int64)}) != base
    assert reference_cache.inputs_digest({"x": x[:12344].reshape(4, -1)}) != \
        reference_cache.inputs_digest({"x": x[:12344]})
    assert reference_cache.inputs_digest({"x": x[::2]}) == \
        reference_cache.inputs_digest({"x": x[::2].copy()})  # strided: its elements


def test_an_op_reading_a_data_file_gets_the_new_files_reference(tmp_path, cache, use_fake):
    # writing-an-op.md: find a data file from Path(__file__).parent; the second run read the
    # first file's reference and failed a correct kernel
    folder = tmp_path / "ops"
    shutil.copytree(ROOT / "examples" / "softmax", folder)
    op = folder / "softmax.py"
    text = op.read_text()
    drawn = "random_floats(rng, shape, -8.0, 8.0, types.input)"
    assert drawn in text
    reference = "        x = inputs[\"x\"].astype(np.float64)\n"
    assert reference in text
    op.write_text(text.replace(drawn, "np.load(Path(__file__).parent / 'x.npy')"
                               ".astype(types.input.numpy)")
                  .replace(reference, "        time.sleep(0.06)  # kept: slow enough\n" + reference)
                  .replace("from __future__ import annotations",
                           "from __future__ import annotations\nimport time\n"
                           "from pathlib import Path"))
    for seed in (1, 2):
        np.save(folder / "x.npy", np.random.default_rng(seed).uniform(-8, 8, (32, 48)))
        result = invoke("softmax", "--kernels-dir", folder, "--variant", "naive",
                        "--size", "32x48", "--max-time", "0.01")
        assert result.exit_code == 0, result.output + result.stderr
        assert "FAIL" not in result.output + result.stderr
    assert len(list(cache.glob("*.pickle"))) == 2  # the inputs' and the recheck's fresh ones


def slow_digest(monkeypatch, seconds):
    """Make the inputs' digest take at least `seconds`."""
    digest = reference_cache.inputs_digest

    def slow(inputs):
        time.sleep(seconds)
        return digest(inputs)

    monkeypatch.setattr(reference_cache, "inputs_digest", slow)


def test_the_reference_s_time_leaves_out_its_inputs_digest(cache, monkeypatch):
    # a miss against an entry of other inputs hashed them inside the reference's time,
    # which the table's CPU reference and every later hit reported
    cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    slow_digest(monkeypatch, 0.2)
    other = {**INPUTS, "B": np.zeros(4)}
    _, spent = cached_reference(plan(), 0, other, Counting(np.arange(6.0)))
    assert spent < 0.2
    _, read_s = cached_reference(plan(), 0, other, Counting(np.arange(6.0)))
    assert read_s == spent


def test_a_reference_quicker_than_its_digest_is_not_kept(cache, monkeypatch):
    cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    assert len(list(cache.glob("*.pickle"))) == 1
    monkeypatch.setattr(reference_cache, "DIGEST_WORTH", 2.0, raising=False)
    slow_digest(monkeypatch, 0.05)
    compute = Counting(np.arange(6.0))
    cached_reference(plan(), 0, {**INPUTS, "B": np.zeros(4)}, compute)
    # a hit would hash the inputs first, slower than making it: not kept, the old removed
    assert compute.calls == 1 and not list(cache.glob("*.pickle"))


def test_a_cache_folder_it_may_not_search_costs_the_cache_not_the_row(cache, monkeypatch):
    # Python 3.11's Path.exists raises PermissionError there: every row was an ERROR
    # blaming the op's reference
    exists = Path.exists

    def refused(self, *args, **kwargs):
        if "references" in str(self):
            raise PermissionError(13, "Permission denied", str(self))
        return exists(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", refused)
    value, _ = cached_reference(plan(), 0, INPUTS, Counting(np.arange(6.0)))
    assert np.array_equal(value, np.arange(6.0))
