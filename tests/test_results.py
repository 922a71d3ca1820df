"""Result records, the results file writer and its round trip."""

from __future__ import annotations

import dataclasses
import json
import math
import stat
from pathlib import Path

import pytest

from cudabench.results import BenchmarkResult, DeviceInfo, Kind, Verification, load_results
from cudabench.results.writer import ResultsWriter

DATA = Path(__file__).parent / "data" / "compare"

DEVICE = DeviceInfo(
    name="NVIDIA H200", compute_capability="9.0", sm_count=132, memory_bytes=150 * 2**30,
    l2_bytes=60 * 2**20, sm_clock_khz=1980000, memory_clock_khz=3201000, memory_bus_bits=6016,
    max_threads_per_block=1024, max_shared_bytes_per_block=48 * 1024, driver_version="13.0",
    cuda_version="13.0.0", index=0, pci_bus_id="0000:19:00.0", uuid="GPU-aaaa",
)
OTHER = dataclasses.replace(DEVICE, index=1, pci_bus_id="0000:3b:00.0", uuid="GPU-bbbb")
PASSED = Verification(True, 1e-7, 1e-5, 0, 100, "exact")
FAILED = Verification(False, math.inf, math.nan, 3, 100, "exact")


def result(**fields) -> BenchmarkResult:
    base = dict(op="matmul", variant="tiled", params={"TILE": 16}, shape=(10, 10, 10),
                dims=("M", "K", "N"), dtype="float32", hot=False,
                samples_s=(1e-5, 1.1e-5, 0.9e-5), verification=PASSED, flops=2000,
                bytes_moved=1200, cpu_reference_s=1e-3, device=DEVICE)
    return BenchmarkResult(**{**base, **fields})


@pytest.mark.parametrize(("fields", "status"), [
    ({}, "PASS"),
    ({"verification": FAILED}, "FAIL"),
    ({"verification": FAILED, "error": "the kernel faulted"}, "FAIL"),  # faulted = failed
    ({"verification": None, "error": "nvcc failed"}, "ERROR"),
    ({"verification": None, "kind": Kind.REFERENCE}, "REF"),
    ({"verification": None, "kind": Kind.VENDOR}, "REF"),
    ({"verification": None}, "ERROR"),
])
def test_status(fields, status):
    assert result(**fields).status == status


def test_round_trip_keeps_everything_that_is_compared(tmp_path):
    path = tmp_path / "r.json"
    writer = ResultsWriter(path, argv=["matmul"])
    writer.start({"engine": "pycuda", "engine_version": "2026.1"})
    original = [result(), result(variant="naive", verification=FAILED, error="faulted"),
                result(variant="memcpy_dtod", kind=Kind.REFERENCE, verification=None, params={}),
                result(variant="naive", device=OTHER)]
    for item in original:
        writer.add(item)
    writer.write(complete=True)
    loaded = load_results(path)
    assert loaded.gpu_name == "NVIDIA H200" and loaded.metadata["complete"] is True
    assert loaded.metadata["tool"]["engine_version"] == "2026.1"
    assert loaded.schema_version == 2 and loaded.devices == (DEVICE, OTHER)
    for before, after in zip(original, loaded.benchmarks, strict=True):
        # Every field, the device included; NaN errors come back as inf (below).
        assert dataclasses.replace(after, verification=None) == dataclasses.replace(
            before, verification=None)
        assert after.status == before.status
    # Non-finite errors are stored as null (strict JSON) and read back as infinite.
    assert math.isinf(loaded.benchmarks[1].verification.max_abs_error)
    data = json.loads(path.read_text())
    assert data["benchmarks"][0]["stats"]["median_s"] == pytest.approx(1e-5)
    assert data["benchmarks"][0]["throughput"]["gflops"] == pytest.approx(2000 / 1e-5 / 1e9)


def test_file_is_valid_after_every_benchmark(tmp_path):
    path = tmp_path / "r.json"
    writer = ResultsWriter(path, argv=[])
    path.write_text("an older file\n", encoding="utf-8")
    writer.start({})
    # Nothing written before the first result: a run that measures nothing keeps the old file.
    assert path.read_text(encoding="utf-8") == "an older file\n"
    writer.add(result())
    partial = load_results(path)
    assert len(partial.benchmarks) == 1 and partial.metadata["complete"] is False
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind
    assert stat.S_IMODE(path.stat().st_mode) & 0o044  # readable by others, not 0600


def test_unwritable_path_names_the_flag(tmp_path):
    from cudabench.errors import UsageError

    (tmp_path / "file").write_text("")
    writer = ResultsWriter(tmp_path / "file" / "r.json", argv=[])
    writer.start({})
    writer.add(result())  # streaming goes quiet (a full disk must not stop the run)...
    assert writer.stream_error is not None and "--json" in writer.stream_error
    with pytest.raises(UsageError, match="--json"):  # ...and the complete file says it
        writer.write(complete=True)


def test_streaming_goes_on_after_a_write_that_failed(tmp_path, monkeypatch):
    # one failed write (a disk full for a moment) stopped the streaming for good: a stop
    # later kept only the rows written before it
    from cudabench.errors import UsageError
    from cudabench.results import writer as writer_module

    path = tmp_path / "r.json"
    writer = ResultsWriter(path, argv=[])
    writer.start({})
    writer.add(result())
    real = writer_module.replacing

    def full(*args, **kwargs):
        raise UsageError("--json r.json: cannot write: No space left on device")

    monkeypatch.setattr(writer_module, "replacing", full)
    writer.add(result())
    assert writer.stream_error is not None and len(load_results(path).benchmarks) == 1
    monkeypatch.setattr(writer_module, "replacing", real)
    writer.add(result())
    assert writer.stream_error is None and len(load_results(path).benchmarks) == 3
    monkeypatch.setattr(writer_module, "replacing", full)
    writer.add(result())
    monkeypatch.setattr(writer_module, "replacing", real)
    # a stop tries once more: the disk has room again
    assert writer.stopped_note() == f"the run stopped: 4 of its rows are in {path}, marked " \
        "incomplete"
    assert len(load_results(path).benchmarks) == 4


def test_a_large_results_file_is_rewritten_within_a_time_budget(tmp_path, monkeypatch):
    # rewritten after every row, a 2000-row run spent 69 s writing its file (7.6 MB by
    # the end): past a size, a write waits until STREAM_BUDGET times its cost has passed
    from contextlib import contextmanager

    from cudabench.results import writer as writer_module

    class Clock:
        now = 100.0

        def monotonic(self) -> float:
            return self.now

    clock = Clock()
    real = writer_module.replacing

    @contextmanager
    def slow(*args, **kwargs):  # a write that takes 0.1 s
        with real(*args, **kwargs) as stream:
            yield stream
        clock.now += 0.1

    monkeypatch.setattr(writer_module, "time", clock)
    monkeypatch.setattr(writer_module, "replacing", slow)
    monkeypatch.setattr(writer_module, "STREAM_FREE_BYTES", 0)  # every file is "large"
    path = tmp_path / "r.json"
    writer = ResultsWriter(path, argv=[])
    writer.start({})
    writer.add(result())
    assert len(load_results(path).benchmarks) == 1
    writer.add(result())  # at once: not rewritten yet
    assert len(load_results(path).benchmarks) == 1 and writer.written == 1
    clock.now += writer_module.STREAM_BUDGET * 0.1
    writer.add(result())  # 20 write-times later: rewritten, with the row before it
    assert len(load_results(path).benchmarks) == 3
    writer.add(result())
    # a stop writes the rows not written yet
    assert writer.stopped_note() == f"the run stopped: 4 of its rows are in {path}, marked " \
        "incomplete"
    assert len(load_results(path).benchmarks) == 4
    monkeypatch.setattr(writer_module, "STREAM_FREE_BYTES", 1 << 20)
    writer.add(result())  # a small file: after every row
    assert len(load_results(path).benchmarks) == 5


def test_a_version_1_file_loads_as_version_2():
    loaded = load_results(DATA / "baseline.json")
    original = json.loads((DATA / "baseline.json").read_text())
    assert original["schema_version"] == 1 and loaded.schema_version == 1
    (gpu,) = loaded.devices
    assert gpu.name == original["gpu"]["name"] and gpu.index == 0 and gpu.uuid is None
    assert loaded.metadata["tool"]["engine_version"] == original["gpu"]["pycuda_version"]
    assert len(loaded.benchmarks) == len(original["benchmarks"])
    for before, after in zip(original["benchmarks"], loaded.benchmarks, strict=True):
        assert after.device == gpu
        assert list(after.samples_s) == before["samples_s"]
        assert after.kind is (Kind.VARIANT if before["kind"] == "kernel" else Kind.REFERENCE)


def test_a_current_file_loads_without_a_deep_copy_and_an_old_one_is_left_as_it_was(
        tmp_path, monkeypatch):
    # a deep copy of a current file's document (20 MB of samples) took a second a load
    import copy
    import types

    from cudabench.results import migrations
    deep = []
    monkeypatch.setattr(migrations, "copy", types.SimpleNamespace(
        deepcopy=lambda value: deep.append(1) or copy.deepcopy(value)))
    writer = ResultsWriter(tmp_path / "r.json", argv=[])
    writer.start({"engine": "fake", "engine_version": "1"})
    writer.add(result())
    writer.write()
    assert len(load_results(writer.path).benchmarks) == 1 and deep == []
    current = json.loads(writer.path.read_text())
    upgraded = migrations.migrate(current)
    assert upgraded == current and upgraded is not current and deep == []
    old = json.loads((DATA / "baseline.json").read_text())
    before = copy.deepcopy(old)
    assert migrations.migrate(old)["schema_version"] == 2 and deep == [1]
    assert old == before  # the steps change a copy


def test_a_version_1_file_compares_with_a_version_2_file(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli
    from cudabench.results.codec import benchmark_to_dict, device_to_dict

    old = load_results(DATA / "baseline.json")
    document = json.loads((DATA / "baseline.json").read_text())
    document.pop("gpu")
    document["schema_version"] = 2
    document["devices"] = [device_to_dict(d) for d in old.devices]
    document["benchmarks"] = [benchmark_to_dict(b, 0) for b in old.benchmarks]
    for benchmark in document["benchmarks"]:  # another run (a copy of one is refused)
        benchmark["samples_s"] = [1.0001 * s for s in benchmark["samples_s"]]
    new = tmp_path / "v2.json"
    new.write_text(json.dumps(document))
    done = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(new)])
    assert done.exit_code == 0, done.output
    assert "7 same" in done.output
    slower = json.loads(json.dumps(document))
    for benchmark in slower["benchmarks"]:
        benchmark["samples_s"] = [1.3 * s for s in benchmark["samples_s"]]
    new.write_text(json.dumps(slower))
    done = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(new)])
    assert done.exit_code == 1 and "slower" in done.output


def test_real_files_of_both_versions_from_one_gpu_compare_as_the_same_run():
    from click.testing import CliRunner

    from cudabench.cli import cli

    folder = Path(__file__).parent / "data" / "h100"
    v1, v2 = load_results(folder / "v1-matmul.json"), load_results(folder / "v2-matmul.json")
    assert (v1.schema_version, v2.schema_version) == (1, 2)
    assert v2.devices[0].uuid and v2.devices[0].pci_bus_id and v1.devices[0].uuid is None
    for args in ([folder / "v1-matmul.json", folder / "v2-matmul.json"],
                 [folder / "v2-matmul.json", folder / "v1-matmul.json"]):
        done = CliRunner().invoke(cli, ["compare", *map(str, args)])
        assert done.exit_code == 0 and "3 same" in done.output, done.output


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["benchmarks"][0]["verification"].pop("rel_error"),
     "benchmarks[0].verification.rel_error"),
    (lambda d: d.pop("gpu"), "gpu"),
    (lambda d: d["gpu"].pop("name"), "gpu"),
    (lambda d: d["gpu"].pop("sm_count"), "devices[0].sm_count"),
])
def test_a_damaged_file_is_a_one_line_error_naming_the_field(tmp_path, edit, field):
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "baseline.json").read_text())
    edit(document)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(document))
    done = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(damaged)])
    assert done.exit_code == 2, done.output
    assert f"{damaged}: {field}: expected" in done.output
    assert "Traceback" not in done.output and "internal error" not in done.output


@pytest.mark.parametrize("command", ["report", "compare"])
def test_an_unknown_unit_is_a_bad_file_for_every_reader(tmp_path, command):
    # report held such a row against its roofs and stopped with an internal error.
    from click.testing import CliRunner

    from cudabench.cli import cli

    source = Path(__file__).parent / "data" / "h100" / "v2-matmul.json"
    document = json.loads(source.read_text())
    document["benchmarks"][0]["unit"] = "x"
    damaged = tmp_path / "unit.json"
    damaged.write_text(json.dumps(document))
    args = [str(damaged)] if command == "report" else [str(source), str(damaged)]
    done = CliRunner().invoke(cli, [command, *args])
    assert done.exit_code == 2, done.output
    assert f"{damaged}: benchmarks[0].unit: expected one of cuda, tensor" in done.output


@pytest.mark.parametrize(("version", "hint"), [(3, "newer cudabench"), ("2", "damaged"),
                                               (None, "damaged"), (0, "damaged")])
def test_an_unknown_schema_version_says_why(tmp_path, version, hint):
    from cudabench.errors import ResultsFileError

    document = json.loads((DATA / "baseline.json").read_text())
    document["schema_version"] = version
    path = tmp_path / "x.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsFileError, match=hint):
        load_results(path)


def test_the_file_is_json_dump_s_text_after_every_row(tmp_path):
    """Rows are encoded once each; the file must still read as json.dump wrote it."""
    rows = load_results(Path(__file__).parent / "data" / "h200x2" / "all.json").benchmarks
    writer = ResultsWriter(tmp_path / "r.json")
    for count, row in enumerate(rows[:12], start=1):
        writer.add(row)
        text = (tmp_path / "r.json").read_text()
        document = writer.document(complete=False)
        document["updated"] = json.loads(text)["updated"]
        assert text == json.dumps(document, indent=1, allow_nan=False) + "\n", count
    empty = ResultsWriter(tmp_path / "e.json")
    empty.write(complete=True)
    assert json.loads((tmp_path / "e.json").read_text())["benchmarks"] == []


def test_a_gzip_compressed_file_loads_as_the_json_inside_it(tmp_path):
    import gzip

    plain = Path(__file__).parent / "data" / "compare" / "baseline.json"
    packed = tmp_path / "baseline.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_results(packed).benchmarks == load_results(plain).benchmarks
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed.read_bytes()[:40])
    with pytest.raises(Exception, match="gzip file that cannot be decompressed"):
        load_results(cut)


@pytest.mark.parametrize(("make", "says"), [
    (lambda folder: folder / "missing.json", "no such file"),
    (lambda folder: folder, "a folder, not a results file"),
    (lambda folder: (folder / "latin.json").write_bytes(b"\xff\xfe{}") and
     folder / "latin.json", "not UTF-8 text"),
    # a history store given as a results file read "not UTF-8 text: invalid continuation"
    (lambda folder: (folder / "history.db").write_bytes(b"SQLite format 3\x00" + bytes(200))
     and folder / "history.db", r"an SQLite database \(a history store\?\), not a results"),
])
def test_a_file_that_cannot_be_read_says_why_in_one_line(tmp_path, make, says):
    from cudabench.errors import ResultsFileError

    with pytest.raises(ResultsFileError, match=says) as raised:
        load_results(make(tmp_path))
    assert "\n" not in str(raised.value) and "Errno" not in str(raised.value)


@pytest.mark.parametrize("field, value, says", [
    ("transfers", {"pinned": None}, "transfers.pinned: expected an object of non-negative"),
    ("transfers", {"end_to_end_s": "12"}, "transfers.end_to_end_s: expected a non-negative"),
    ("energy", {"launches": 10.0}, "energy.joules: expected present"),
    ("writeback_after_run_s", [4e-5, 4.1e-5], "expected as many as writeback_baseline_s"),
    ("writeback_baseline_s", [4e-5, -1.0], "writeback_baseline_s: expected a list of times"),
    # a falsy value that is no list (0, "", {}) was read as no samples
    ("slow_clock_samples_s", 0, "slow_clock_samples_s: expected a list of times"),
    ("slow_clock_samples_s", {}, "slow_clock_samples_s: expected a list of times"),
])
def test_a_damaged_transfers_or_energy_object_is_a_bad_file(tmp_path, field, value, says):
    # they reached the renderers: report and plot ended in an internal error (exit 4)
    from cudabench.errors import ResultsFileError

    data = json.loads((Path(__file__).parent / "data" / "h100-insight" /
                       "t8192_transfers.json").read_text())
    data["benchmarks"][0][field] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match=says):
        load_results(path)


@pytest.mark.parametrize("field, key, value", [
    ("telemetry", "clock_event_reasons", ["sw power cap"]),
    ("energy", "method", "nvml"),
    ("transfers", "note", "pinned by cudaHostRegister"),
    ("transfers", "pinned", {"h2d_s": 1e-3, "how": "events"}),
])
def test_a_field_a_newer_cudabench_adds_inside_an_object_is_ignored(tmp_path, field, key,
                                                                     value):
    # docs/results-schema.md, Versioning: readers ignore fields they do not know, so an
    # older cudabench keeps reading newer files of the same version (it said "corrupt")
    data = json.loads((Path(__file__).parent / "data" / "h100-insight" /
                       "t8192_transfers.json").read_text())
    row = data["benchmarks"][0]
    row["energy"] = {"joules": 10.0, "launches": 100, "seconds": 0.5}
    row[field][key] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    loaded = load_results(path).benchmarks[0]
    assert getattr(loaded, field).get(key) != value  # left out, as a field it does not know
    assert loaded.energy["joules"] == 10.0 and loaded.transfers["pinned"]["h2d_s"] > 0
    assert loaded.telemetry == {k: v for k, v in row["telemetry"].items() if k != key}


def test_a_writeback_pass_survives_loading_and_writing(tmp_path):
    from cudabench.results.codec import benchmark_to_dict

    data = json.loads((Path(__file__).parent / "data" / "h100-insight" /
                       "t8192_transfers.json").read_text())
    data["benchmarks"][0] |= {"writeback_after_run_s": [5e-5, 5.2e-5],
                              "writeback_baseline_s": [4e-5, 4e-5]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    row = load_results(path).benchmarks[0]
    assert row.writeback_s == pytest.approx(1.1e-5)
    written = benchmark_to_dict(row, None)
    assert written["writeback_after_run_s"] == [5e-5, 5.2e-5]
    assert "writeback_after_run_s" not in benchmark_to_dict(load_results(path).benchmarks[1],
                                                            None)


def test_a_tree_is_dirty_for_changed_or_new_source_files_not_for_results(tmp_path,
                                                                          monkeypatch):
    # the baseline.json a CI job restores, and the history store's folder, marked every
    # run of a clean checkout dirty
    import shutil
    import subprocess

    from cudabench.results.writer import git_commit

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    monkeypatch.delenv("GITHUB_REF_NAME", raising=False)
    monkeypatch.delenv("CI_COMMIT_REF_NAME", raising=False)
    assert git_commit(tmp_path) == {"git_commit": None, "git_dirty": None, "git_branch": None}
    git("init", "-q")
    (tmp_path / "kernel.cu").write_text("// one\n", encoding="utf-8")
    git("add", "kernel.cu")
    git("commit", "-q", "-m", "one")
    git("checkout", "-q", "-b", "feature")
    assert git_commit(tmp_path)["git_dirty"] is False
    assert git_commit(tmp_path)["git_branch"] == "feature"
    git("checkout", "-q", "--detach")  # a CI job's checkout: its variables name the branch
    assert git_commit(tmp_path)["git_branch"] is None
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    assert git_commit(tmp_path)["git_branch"] == "main"
    (tmp_path / "baseline.json").write_text("{}", encoding="utf-8")
    (tmp_path / ".cudabench").mkdir()
    (tmp_path / ".cudabench" / "history.db").write_bytes(b"")
    found = git_commit(tmp_path)
    assert found["git_dirty"] is False and len(found["git_commit"]) == 40
    (tmp_path / "new.cu").write_text("// new\n", encoding="utf-8")
    assert git_commit(tmp_path)["git_dirty"] is True  # a kernel the run may load
    (tmp_path / "new.cu").unlink()
    (tmp_path / "kernel.cu").write_text("// two\n", encoding="utf-8")
    assert git_commit(tmp_path)["git_dirty"] is True


def test_terminal_controls_in_a_results_file_s_names_are_refused_and_in_texts_shown_escaped(
        tmp_path):
    # a pull request's results file could retitle or clear the terminal printing its names
    from cudabench.errors import ResultsFileError
    from cudabench.render.terminal import stdout_console
    from cudabench.results import load_results as load

    source = sorted((Path(__file__).parent / "data" / "h100").glob("*.json"))[0]
    document = json.loads(source.read_text(encoding="utf-8"))
    document["benchmarks"][0]["variant"] = "\x1b]0;pwned\x07x\x1b[2J"
    path = tmp_path / "esc.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ResultsFileError, match=r"benchmarks\[0\]\.variant: expected a name "
                                               "without control characters"):
        load(path)
    # free texts (errors, warnings) are loaded with their controls written out (a Text the
    # tables print, a markdown or CSV cell, are not escaped when printed)
    document["benchmarks"][0]["variant"] = "x"
    document["benchmarks"][0]["warnings"] = ["nvcc said:\r\n\x1b[1mbold\x1b[0m"]
    path.write_text(json.dumps(document), encoding="utf-8")
    row = load(path).benchmarks[0]
    assert row.warnings == ("nvcc said:\n\\x1b[1mbold\\x1b[0m",)
    console = stdout_console()
    with console.capture() as captured:
        console.print(row.warnings[0], markup=False)
    assert captured.get() == "nvcc said:\n\\x1b[1mbold\\x1b[0m\n"


def test_a_status_and_a_kind_print_as_the_tables_write_them():
    # docs/python.md prints `tiled.status`: it said Status.PASS
    from cudabench.results.model import Kind, Status

    assert str(Status.PASS) == f"{Status.PASS}" == "PASS"
    assert str(Kind.VENDOR) == f"{Kind.VENDOR}" == "vendor"
    assert Status("FAIL") is Status.FAIL and Status.FAIL == "FAIL"


def test_a_results_file_s_terminal_controls_are_written_out_when_loaded(tmp_path):
    # a pull request's file: ESC[2J in the driver version or an error cleared the reader's
    # terminal through `compare`, and a name with one is refused outright
    from cudabench.errors import ResultsFileError

    source = json.loads((Path(__file__).parent / "data" / "h200x2" / "one.json").read_text())
    source["devices"][0]["driver_version"] = "13.0\x1b[2J\x1b]0;PWNED\x1b\\"
    source["devices"][0]["settings"] = {"power_limit_w": "\x1b[31m700"}
    first = next(i for i, b in enumerate(source["benchmarks"]) if b.get("verification"))
    source["benchmarks"][first]["verification"]["criterion"] = "exact\x1b[2J\ttab\nline"
    source["notes"] = ["\x9b2J"]
    source["benchmarks"][first]["warnings"] = ["w\x1b[2J"]
    errored = next(i for i, b in enumerate(source["benchmarks"]) if i != first
                   and b["kind"] == "variant")
    source["benchmarks"][errored].update(error="e\x1b]0;PWNED\x07", verification=None,
                                         status="ERROR", samples_s=[], stats=None)
    path = tmp_path / "pr.json"
    path.write_text(json.dumps(source))
    loaded = load_results(path)
    device, row = loaded.devices[0], loaded.benchmarks[first]
    assert device.driver_version == "13.0\\x1b[2J\\x1b]0;PWNED\\x1b\\"
    assert device.settings == {"power_limit_w": "\\x1b[31m700"}
    assert row.verification is not None
    assert row.verification.criterion == "exact\\x1b[2J\ttab\nline"
    assert loaded.metadata["notes"] == ["\\x9b2J"]
    assert row.warnings == ("w\\x1b[2J",)
    assert loaded.benchmarks[errored].error == "e\\x1b]0;PWNED\\x07"
    source["benchmarks"][first]["params"] = {"T\x1bILE": 16}
    path.write_text(json.dumps(source))
    with pytest.raises(ResultsFileError, match="a parameter name without control"):
        load_results(path)


def test_a_failed_write_says_which_kept_rows_lack_their_later_rounds(tmp_path, monkeypatch):
    # "4 of the run's 4 rows are in ab.json.partial" where two of them held 4 of 6 rounds
    from cudabench.errors import UsageError

    rows = load_results(DATA / "baseline.json").benchmarks[:2]
    writer = ResultsWriter(tmp_path / "r.json", argv=[])
    for row in rows:
        writer.add(row)
    assert writer.streamed_note() == f"; 2 of the run's 2 rows are in {tmp_path / 'r.json'}"
    real = ResultsWriter.write

    def full(self, complete=True):
        raise UsageError("--json r.json: cannot write: [Errno 28] No space left")

    monkeypatch.setattr(ResultsWriter, "write", full)
    writer.replace(0, dataclasses.replace(rows[0], rounds=2))
    writer.flush()
    assert writer.streamed_note().endswith(
        "rows are in " + str(tmp_path / "r.json")
        + " (1 of them without the rounds measured after the last write)")
    monkeypatch.setattr(ResultsWriter, "write", real)
    writer.flush()  # written again: nothing behind
    assert "without" not in writer.streamed_note()
