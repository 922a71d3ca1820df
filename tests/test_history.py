"""`cudabench history`: the store, import, show, check and their errors, on real results.

Histories are built from tests/data files: each run resamples the real samples (seeded)
and may scale them, with its own commit and time.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from cudabench.analysis.verdicts import Verdict
from cudabench.common.stats import mann_whitney_u
from cudabench.common.units import format_seconds
from cudabench.cli.boundary import BoundaryGroup
from cudabench.cli.history import history as history_group
from cudabench.history import queries as queries_module
from cudabench.history import store as store_module
from cudabench.history.report import check, per_commit
from cudabench.history.records import Benchmark, SeriesPoint
from cudabench.history.schema import SCHEMA_VERSION
from cudabench.history.store import Store
from cudabench.history.threshold import (
    auto_threshold,
    smallest_detectable,
    threshold_from_medians,
)
from cudabench.results import load_results

DATA = Path(__file__).parent / "data"
H100 = "h100/v2-matmul.json"
H200 = "compare/baseline.json"
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def commit_of(index: int) -> str:
    """Return the fake commit of run index."""
    return hashlib.sha1(f"commit {index}".encode()).hexdigest()


def make_run(folder: Path, index: int, source: str = H100, factors: dict[str, float] | None = None,
             fail: str | None = None, name: str = "run") -> Path:
    """Write run `index` of a history: source's samples resampled (seed index), variants
    scaled by factors, measured `index` hours after START at commit_of(index)."""
    document = json.loads((DATA / source).read_text(encoding="utf-8"))
    rng = np.random.default_rng(index)
    for bench in document["benchmarks"]:
        samples = np.asarray(bench["samples_s"])
        scale = (factors or {}).get(bench["variant"], 1.0)
        bench["samples_s"] = [float(x) for x in rng.choice(samples, samples.size) * scale]
        if bench["variant"] == fail:
            bench["verification"]["passed"] = False
            bench["verification"]["bad_elements"] = 7
            bench["status"] = "FAIL"
    document["created"] = (START + dt.timedelta(hours=index)).isoformat()
    document["git_commit"] = commit_of(index)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{index:03d}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@functools.lru_cache(maxsize=1)
def root() -> click.Group:
    """Return the CLI with `history` in it: the real one once wired, else the same boundary."""
    from cudabench.cli import cli

    if "history" in getattr(cli, "commands", {}):
        return cli
    group = BoundaryGroup(name="cudabench",
                          params=[click.Option(["--traceback"], is_flag=True)])
    group.add_command(history_group)
    return group


def invoke(*args: object):
    """Run `cudabench history ARGS` with stdout and stderr kept apart."""
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 always separates them
        runner = CliRunner()
    return runner.invoke(root(), ["history", *(str(a) for a in args)])


def assert_one_line_error(result, *fragments: str) -> str:
    """Check exit 2, nothing on stdout, one stderr line with every fragment."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cudabench: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def import_runs(db: Path, paths: list[Path]) -> None:
    result = invoke("import", *paths, "--db", db)
    assert result.exit_code == 0, result.stderr


def counts(db: Path) -> dict[str, int]:
    with Store.open(db) as store:
        return store.counts()


# The store and import ----------------------------------------------------------------------


def test_import_is_idempotent(tmp_path):
    db = tmp_path / "h.db"
    first, second = make_run(tmp_path, 1), make_run(tmp_path, 2)
    result = invoke("import", first, second, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "recorded as run 1: 3 benchmarks on NVIDIA H100 80GB HBM3" in result.stdout
    assert "recorded as run 2" in result.stdout
    before = counts(db)
    assert before["runs"] == 2 and before["results"] == 6 and before["devices"] == 1
    copy = tmp_path / "elsewhere.json"
    copy.write_bytes(first.read_bytes())  # the same content under another name
    result = invoke("import", first, copy, second, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("already recorded") == 3
    assert counts(db) == before


def test_a_file_a_running_cudabench_is_writing_is_skipped_not_recorded(tmp_path):
    # its rows so far were recorded (warned of as a run that "stopped early"), then the
    # whole run again when it ended: two runs of one, each history to the gate
    from cudabench.cli.history import record_files
    from cudabench.common.outfiles import claim_output
    from cudabench.errors import UsageError

    db, streaming = tmp_path / "h.db", make_run(tmp_path, 1)
    document = json.loads(streaming.read_text(encoding="utf-8"))
    streaming.write_text(json.dumps({**document, "complete": False}), encoding="utf-8")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
         "from cudabench.common.outfiles import claim_output\n"
         f"claim = claim_output(Path({str(streaming)!r}), '--json')\n"
         "print('writing', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "writing\n"
        done = make_run(tmp_path, 2)
        result = invoke("import", streaming, done, "--db", db)
        assert result.exit_code == 0, result.stderr
        assert (f"{streaming}: skipped: it is being written by a running cudabench (pid "
                f"{holder.pid}); import it when that run ends") in result.stdout
        assert "recorded as run 1" in result.stdout and result.stderr == ""
        assert counts(db)["runs"] == 1
        # so is its PATH.partial, where a run streams while an older PATH is kept
        partial = streaming.with_name(streaming.name + ".partial")
        partial.write_bytes(streaming.read_bytes())
        result = invoke("import", partial, "--db", db)
        assert "skipped: it is being written" in result.stdout and counts(db)["runs"] == 1
        checked = invoke("check", streaming, "--db", db)  # gated: failed, not "stopped"
        assert checked.exit_code == 1 and (
            f"{streaming} is incomplete: it is being written by a running cudabench (pid "
            f"{holder.pid}), so it fails the gate; check it when that run ends"
        ) in checked.stderr, checked.stderr
    finally:
        holder.communicate("", timeout=30)
    claim = claim_output(streaming, "--json")  # a thread of this process's, writing it
    with pytest.raises(UsageError, match="is being written by a running cudabench "
                                         r"\(this process\): record it when that run ends"):
        record_files([streaming], db, say=False)
    assert claim is not None
    claim.close()
    result = invoke("import", streaming, "--db", db)  # its run stopped: recorded, warned of
    assert "recorded as run 2" in result.stdout and "stopped early" in result.stderr


def test_a_re_edited_copy_of_a_recorded_file_is_the_same_run(tmp_path):
    # only the text's hash identified a run: five re-indented copies of one slow run
    # became five runs, an "established level", and the slowdown then passed the check
    db, run = tmp_path / "h.db", make_run(tmp_path, 1)
    document = json.loads(run.read_text(encoding="utf-8"))
    document["benchmarks"].reverse()
    copy = tmp_path / "copy.json"
    copy.write_text(json.dumps(document, indent=3), encoding="utf-8")
    result = invoke("import", run, copy, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert f"{copy}: already recorded (run 1)" in " ".join(result.stdout.split())
    assert counts(db)["runs"] == 1
    # and history check of the copy leaves its own run out of its history
    checked = invoke("check", copy, "--db", db)
    assert "its own run 1 left out of its history" in " ".join(checked.stdout.split())


@pytest.mark.parametrize("flag", ["--strategy=random", "--budget"])
def test_a_search_s_file_is_not_a_run_to_record(tmp_path, flag):
    # recorded: one measurement (or a tuning cache's copy of one) counted as two runs, a
    # spread of 0, and toward the 5 runs --check needs; --record is refused with a search
    db = tmp_path / "h.db"
    search = edited(make_run(tmp_path, 1), lambda d: d.update(
        command=["cudabench", "matmul", "--best", flag, *(["20"] if flag == "--budget" else [])]))
    result = invoke("import", make_run(tmp_path / "ok", 2), search, "--db", db)
    assert result.exit_code == 2 and "a --best search's results" in result.stderr, result.output
    assert not db.exists() or counts(db)["runs"] == 0  # all or nothing


@pytest.mark.parametrize("command", [["cudabench", "ab", "A", "B"], None])
def test_an_ab_file_is_not_a_run_to_record(tmp_path, command):
    # recorded: each variant's two copies (naive@A, naive@B) as benchmarks of their own
    db = tmp_path / "h.db"

    def sides(document: dict) -> None:
        document["command"] = command
        document["benchmarks"] = [{**bench, "variant": f"{bench['variant']}@{side}"}
                                  for bench in document["benchmarks"] for side in "AB"]

    ab = edited(make_run(tmp_path, 1), sides)
    assert_one_line_error(invoke("import", make_run(tmp_path / "ok", 2), ab, "--db", db),
                          f"{ab}: an `ab` run's results")
    assert not db.exists() or counts(db)["runs"] == 0  # all or nothing


def test_the_same_file_twice_in_one_import_is_one_run(tmp_path):
    db, run = tmp_path / "h.db", make_run(tmp_path, 1)
    result = invoke("import", run, run, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "already recorded (run 1)" in result.stdout
    assert counts(db)["runs"] == 1


def test_both_schema_versions_import_with_their_run_facts(tmp_path):
    db = tmp_path / ".cudabench" / "history.db"  # its folder is made
    import_runs(db, [DATA / "h100/v1-matmul.json", DATA / H100, DATA / H200])
    with Store.open(db) as store:
        runs = store.runs()
        assert [r.commit[:7] for r in runs] == ["3f9c2d4", "ee91d8f", "ee91d8f"]  # by time
        assert runs[0].created == "2024-06-11T09:30:00+00:00"
        assert runs[0].dirty is False and runs[1].dirty is True
        assert runs[0].host == "gpu-runner-07" and runs[1].tool_version == "0.1.0"
        assert runs[0].gpu_models == ("NVIDIA H200",)
        assert [r.id for r in store.runs(gpu_model="NVIDIA H100 80GB HBM3")] == [2, 1]
        assert [r.id for r in store.runs(since="2025-01-01T00:00:00+00:00")] == [2, 1]
        result = load_results(DATA / H100).benchmarks[0]
        bench = Benchmark.of(result)
        assert bench.key == result.key
        series = store.series(bench, "NVIDIA H100 80GB HBM3")
        assert [p.run_id for p in series] == [2, 1]  # v2 was measured 5 s before v1
        assert series[1].median_s == pytest.approx(
            load_results(DATA / "h100/v1-matmul.json").benchmarks[0].median_s)
        assert [p.run_id for p in store.series(bench, "NVIDIA H200")] == [3]  # per GPU model
        assert store.series(bench, "NVIDIA A100") == []
        # The version-1 file names its H100 without bus id and UUID: another device row.
        assert store.counts()["devices"] == 3


def test_branch_is_recorded_when_given(tmp_path):
    db = tmp_path / "h.db"
    assert invoke("import", make_run(tmp_path, 1), "--branch", "main", "--db", db).exit_code == 0
    with Store.open(db) as store:
        assert store.runs()[0].branch == "main"


def test_import_branch_of_runs_already_recorded_sets_a_missing_branch(tmp_path):
    # "already recorded", the branch left NULL: --branch main then read no run, and the
    # gate was off
    db = tmp_path / "h.db"
    runs = [make_run(tmp_path, i) for i in range(2)]
    import_runs(db, runs[:1])
    done = invoke("import", *runs, "--branch", "main", "--db", db)
    assert done.exit_code == 0 and done.stderr == "", done.output
    assert f"{runs[0]}: already recorded (run 1): its branch set to main" in done.stdout
    with Store.open(db) as store:
        assert [run.branch for run in store.runs()] == ["main", "main"]
    done = invoke("import", runs[0], "--branch", "other", "--db", db)
    assert done.exit_code == 0, done.output
    assert done.stderr.strip() == (f"warning: {runs[0]}: already recorded (run 1) on branch "
                                   "main: --branch other not applied (a run has one branch)")
    with Store.open(db) as store:
        assert store.branches() == ["main"]


def test_a_bad_file_among_good_ones_records_nothing(tmp_path):
    db = tmp_path / "h.db"
    result = invoke("import", make_run(tmp_path, 1), DATA / "compare/truncated.json", "--db", db)
    assert_one_line_error(result, "truncated.json", "not valid JSON")
    assert not db.exists()


def record_files(db: str, paths: list[str], barrier) -> None:
    """Child process: wait for the other, then record each file in its own transaction."""
    barrier.wait()
    for path in paths:
        with Store.open(db, create=True) as store:
            store.record(load_results(path), Path(path).read_text(encoding="utf-8"))


def context() -> multiprocessing.context.BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def test_two_processes_recording_at_once_lose_nothing(tmp_path):
    db = tmp_path / "new" / "h.db"  # both also race to create it
    ours = [str(make_run(tmp_path, i)) for i in range(8)]
    theirs = [str(make_run(tmp_path, i, source=H200)) for i in range(8, 16)]
    ctx = context()
    barrier = ctx.Barrier(2)
    workers = [ctx.Process(target=record_files, args=(str(db), files, barrier))
               for files in (ours, theirs)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    with Store.open(db) as store:
        runs = store.runs()
        assert len(runs) == 16
        assert {r.source_path for r in runs} == set(ours + theirs)
        assert store.counts()["results"] == 8 * 3 + 8 * 7


def test_a_write_that_raises_midway_leaves_the_store_unchanged(tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path, 1)])
    before = counts(db)
    calls = []
    original = Store._insert_result

    def insert_then_fail(self, *args):
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("disk pulled")
        original(self, *args)

    monkeypatch.setattr(Store, "_insert_result", insert_then_fail)
    run = make_run(tmp_path, 2)
    with Store.open(db, create=True) as store, pytest.raises(RuntimeError, match="disk pulled"):
        store.record(load_results(run), run.read_text(encoding="utf-8"))
    assert len(calls) == 2
    assert counts(db) == before
    # Several files in one transaction: the first is undone with the second.
    calls.clear()
    other = make_run(tmp_path, 3, source=H200)
    with Store.open(db, create=True) as store, pytest.raises(RuntimeError), store.transaction():
        store.record(load_results(other), other.read_text(encoding="utf-8"))  # 7 rows
        store.record(load_results(run), run.read_text(encoding="utf-8"))
    assert counts(db) == before



def test_a_full_disk_while_importing_is_reported_as_itself(tmp_path, monkeypatch):
    # SQLite rolls the transaction back itself after an I/O error: rolling back again
    # failed, "internal error: cannot rollback - no transaction is active", exit 4, and
    # every file before the failing one was said "recorded"
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path, 1)])
    before = counts(db)
    original = Store._insert_result
    calls = []

    def full_disk(self, *args):
        calls.append(1)
        if len(calls) == 10:  # the second file's: as SQLite does on SQLITE_IOERR/FULL
            self._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        original(self, *args)

    monkeypatch.setattr(Store, "_insert_result", full_disk)
    result = invoke("import", make_run(tmp_path, 2, source=H200), make_run(tmp_path, 3),
                    "--db", db)
    assert_one_line_error(result, f"{db}: cannot use the store: disk I/O error")
    assert counts(db) == before


def test_a_wal_left_beside_the_store_is_said(tmp_path, monkeypatch):
    # a full disk failed the checkpoint of close(), silently: the store copied alone (a CI
    # cache of it) was malformed
    class NoCheckpoint:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            if "wal_checkpoint" in sql:
                raise sqlite3.OperationalError("disk I/O error")
            return self.conn.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.conn, name)

    original = Store.__init__

    def init(self, conn, *args, **kwargs):
        original(self, NoCheckpoint(conn), *args, **kwargs)

    monkeypatch.setattr(Store, "__init__", init)
    db = tmp_path / "h.db"
    result = invoke("import", make_run(tmp_path, 1), "--db", db)
    assert result.exit_code == 0, result.output
    assert "recorded as run 1" in result.stdout
    assert f"warning: {db}: SQLite could not fold {db}-wal back into the store (disk I/O " \
        "error)" in " ".join(result.stderr.split()), result.stderr
    monkeypatch.undo()
    assert counts(db)["runs"] == 1


def crash_midway(db: str, path: str) -> None:
    """Child process: die (no cleanup at all) after the second result row is written."""
    calls = []
    original = Store._insert_result

    def insert_then_die(self, *args):
        calls.append(1)
        if len(calls) == 3:
            os._exit(17)
        original(self, *args)

    Store._insert_result = insert_then_die  # type: ignore[method-assign]
    with Store.open(db, create=True) as store:
        store.record(load_results(path), Path(path).read_text(encoding="utf-8"))


def test_a_process_killed_midway_leaves_the_store_as_it_was(tmp_path):
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path, 1)])
    before = counts(db)
    worker = context().Process(target=crash_midway, args=(str(db), str(make_run(tmp_path, 2))))
    worker.start()
    worker.join(60)
    assert worker.exitcode == 17
    assert counts(db) == before  # opening also ran SQLite's integrity check
    import_runs(db, [make_run(tmp_path, 2)])  # and the store takes the run afterwards
    assert counts(db)["runs"] == 2


# Bad stores: exit 2, one line, the file's bytes unchanged ---------------------------------


def make_store(tmp_path: Path, runs: int = 2) -> Path:
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path, i) for i in range(runs)])
    return db


def other_sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE things (x)")
    conn.execute("INSERT INTO things VALUES (1)")
    conn.commit()
    conn.close()
    return path


def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 20, encoding="utf-8")
    return path


def fresh_sqlite(tmp_path: Path) -> Path:
    """Another program's database before its first table: it has set its user_version."""
    path = tmp_path / "fresh.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    return path


def newer_store(tmp_path: Path) -> Path:
    db = make_store(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    return db


def damaged_store(tmp_path: Path) -> Path:
    db = make_store(tmp_path, runs=6)
    page = 4096
    assert db.stat().st_size >= 6 * page
    with db.open("r+b") as handle:  # garbage over pages 3 to 5 (tables and indexes)
        handle.seek(2 * page)
        handle.write(np.random.default_rng(0).bytes(3 * page))
    return db


def truncated_store(tmp_path: Path) -> Path:
    db = make_store(tmp_path, runs=6)
    os.truncate(db, db.stat().st_size // 2)
    return db


BAD_STORES = {
    "a text file": (text_file, "not a cudabench history store (not an SQLite database)"),
    "another program's SQLite file": (other_sqlite, "not a cudabench history store"),
    "another program's fresh SQLite file": (fresh_sqlite, "not a cudabench history store"),
    "a newer schema": (newer_store, "schema version 99, newer than this cudabench's"),
    "damaged pages": (damaged_store, "the history store is damaged"),
    "a truncated store": (truncated_store, "the history store is damaged"),
}


@pytest.mark.parametrize("case", BAD_STORES)
@pytest.mark.parametrize("command", ["import", "show", "check"])
def test_a_bad_store_is_refused_untouched(tmp_path, case, command):
    make, message = BAD_STORES[case]
    db = make(tmp_path)
    before = db.read_bytes()
    run = make_run(tmp_path, 50)
    args = {"import": ("import", run), "show": ("show",), "check": ("check", run)}[command]
    assert_one_line_error(invoke(*args, "--db", db), str(db), message)
    assert db.read_bytes() == before


@pytest.mark.parametrize("edit", ["UPDATE results SET params = '{'",
                                  "UPDATE results SET shape = 'x'",
                                  "UPDATE results SET shape = '[1e400, 1, 1]'",
                                  "UPDATE results SET median_s = -1.0"])
@pytest.mark.parametrize("command", ["show", "check", "plot"])
def test_rows_no_cudabench_wrote_are_a_damaged_store_not_an_internal_error(tmp_path, edit,
                                                                          command):
    db = make_store(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute(edit)  # the file is SQLite and cudabench's, its rows are not
    conn.commit()
    conn.close()
    args = {"show": ("show",), "check": ("check", make_run(tmp_path, 50)),
            "plot": ("plot", tmp_path / "trend.png")}[command]
    result = invoke(*args, "--db", db)
    if command == "check" and "median_s" not in edit:  # rows of no key a file has: unread
        assert result.exit_code == 0 and "too little history" in result.stdout, result.output
    else:
        assert_one_line_error(result, str(db), "the history store is damaged")


def test_a_command_key_no_cudabench_wrote_is_not_an_internal_error(tmp_path):
    # history check read every run's command_key as JSON: '{{' was exit 4
    db = make_store(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET command_key = '{{'")
    conn.commit()
    conn.close()
    result = invoke("check", make_run(tmp_path, 50), "--db", db)
    assert result.exit_code in (0, 1, 2) and "internal error" not in result.stderr, \
        result.output


def test_a_file_holding_a_benchmark_twice_is_neither_recorded_nor_judged(tmp_path):
    # A --replicate run (every benchmark on every GPU of one model) or a hand-merged file:
    # the store keeps one row per benchmark and model, and check refused such a file.
    db = make_store(tmp_path)
    before = db.read_bytes()
    twice = make_run(tmp_path, 60, name="twice")
    document = json.loads(twice.read_text(encoding="utf-8"))
    document["benchmarks"].append(document["benchmarks"][0])
    twice.write_text(json.dumps(document), encoding="utf-8")
    for args in (("import", twice), ("check", twice)):
        result = invoke(*args, "--db", db)
        assert result.exit_code == 2, result.output
        assert "appears twice" in result.stderr and "one row per benchmark" in result.stderr
    assert db.read_bytes() == before
    # A reference row twice (older pytest sessions measured the copy beside every test):
    # its first is kept, and the file is recorded.
    refs = make_run(tmp_path, 61, name="refs")
    document = json.loads(refs.read_text(encoding="utf-8"))
    vendor = {**document["benchmarks"][0], "kind": "vendor", "variant": "cuBLAS"}
    document["benchmarks"] += [vendor, vendor]
    refs.write_text(json.dumps(document), encoding="utf-8")
    assert invoke("import", refs, "--db", db).exit_code == 0


def test_a_read_only_store_is_not_written_but_can_be_read(tmp_path):
    db = make_store(tmp_path)
    before = db.read_bytes()
    db.chmod(0o444)
    try:
        result = invoke("import", make_run(tmp_path, 9), "--db", db)
        assert_one_line_error(result, str(db), "read-only", "-r--r--r--")
        assert db.read_bytes() == before
        shown = invoke("show", "--db", db)
        assert shown.exit_code == 0, shown.stderr
        assert "matmul/naive" in shown.stdout
    finally:
        db.chmod(0o644)
    assert db.read_bytes() == before


def test_a_store_in_a_folder_that_cannot_be_written_is_read(tmp_path, monkeypatch):
    # a read-only mount or a shared team store: show, check and compare --threshold auto
    # failed ("unable to open database file"), as SQLite cannot make the WAL's index there
    db = make_store(tmp_path)
    before = db.read_bytes()
    real_access = os.access
    monkeypatch.setattr(store_module.os, "access", lambda path, mode: (
        False if Path(path) == db.parent and mode == os.W_OK else real_access(path, mode)))
    tried = []
    real_connect = store_module.Store._connect.__func__

    def connect(cls, uri, *args):
        tried.append(uri.split("?", 1)[1])
        if "immutable" not in uri:  # as on a read-only file system, where ro alone fails
            raise store_module.StoreError(f"{db}: cannot open the store: unable to open "
                                          "database file")
        return real_connect(cls, uri, *args)

    monkeypatch.setattr(store_module.Store, "_connect", classmethod(connect))
    shown = invoke("show", "--db", db)
    assert shown.exit_code == 0, shown.stderr
    assert "matmul/naive" in shown.stdout
    assert tried == ["mode=ro", "mode=ro&immutable=1"]
    assert db.read_bytes() == before
    result = invoke("import", make_run(tmp_path, 9), "--db", db)
    assert_one_line_error(result, str(db), "cannot write in its folder")


def test_a_store_on_a_read_only_file_system_says_so(tmp_path, monkeypatch):
    # it showed the file's mode, -rw-r--r--, which allows writing
    db = make_store(tmp_path)
    monkeypatch.setattr(store_module, "is_writable", lambda path: False)  # as os.access says
    result = invoke("import", make_run(tmp_path, 9), "--db", db)
    assert_one_line_error(result, str(db), "the store is read-only (on a read-only file "
                                           "system)")


def test_a_locked_store_times_out_untouched(tmp_path, monkeypatch):
    db = make_store(tmp_path)
    before = db.read_bytes()
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer, in the middle of its transaction
    try:
        result = invoke("import", make_run(tmp_path, 9), "--db", db)
        assert_one_line_error(result, str(db), "locked", "more than 0.2 s")
        shown = invoke("show", "--db", db)  # WAL: readers do not wait for a writer
        assert shown.exit_code == 0, shown.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert db.read_bytes() == before
    assert counts(db)["runs"] == 2


def test_a_file_system_without_wal_is_refused(tmp_path, monkeypatch):
    # SQLite's dot-file locking has no shared memory, as on NFS: WAL cannot be turned on.
    monkeypatch.setattr(store_module, "DEFAULT_VFS", "unix-dotfile")
    db = tmp_path / "nfs.db"
    result = invoke("import", make_run(tmp_path, 1), "--db", db)
    assert_one_line_error(result, str(db), "network file system", "local disk")
    assert not db.exists()
    monkeypatch.setattr(store_module, "DEFAULT_VFS", None)
    existing = make_store(tmp_path)
    before = existing.read_bytes()
    monkeypatch.setattr(store_module, "DEFAULT_VFS", "unix-dotfile")
    assert_one_line_error(invoke("show", "--db", existing), "network file system")
    assert existing.read_bytes() == before


@pytest.mark.parametrize(("command", "message"), [
    ("show", "no history store here"), ("check", "no history store here")])
def test_a_missing_store_is_not_created_by_readers(tmp_path, command, message):
    db = tmp_path / "none.db"
    args = ("show",) if command == "show" else ("check", make_run(tmp_path, 1))
    assert_one_line_error(invoke(*args, "--db", db), message)
    assert not db.exists()


def test_a_folder_is_not_a_store(tmp_path):
    assert_one_line_error(invoke("import", make_run(tmp_path, 1), "--db", tmp_path), "is a folder")


def test_a_pipe_is_not_a_store(tmp_path):
    # a 0-byte character device or pipe was taken as a new store (/dev/null-journal made)
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_one_line_error(invoke("import", make_run(tmp_path, 1), "--db", fifo),
                          "is not a regular file (a device, a pipe)")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pipe")) == ["pipe"]


def test_an_empty_file_becomes_a_store_on_import_only(tmp_path):
    db = tmp_path / "empty.db"
    db.touch()
    assert_one_line_error(invoke("show", "--db", db), "the store is empty")
    import_runs(db, [make_run(tmp_path, 1)])
    assert counts(db)["runs"] == 1


def test_the_store_knows_its_schema_version(tmp_path):
    db = make_store(tmp_path)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta").fetchall() == [(str(SCHEMA_VERSION),)]
    assert conn.execute("PRAGMA application_id").fetchone()[0] == store_module.APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with pytest.raises(ValueError, match="opened for reading"), Store.open(db) as store, \
            store.transaction():
        pass


def test_migrations_run_in_order_in_one_transaction(tmp_path, monkeypatch):
    db = make_store(tmp_path)

    def add_note(conn):
        conn.execute("ALTER TABLE runs ADD COLUMN note TEXT")

    def broken(conn):
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("migration bug")

    now = store_module.MIGRATIONS  # the store is at len(now)
    monkeypatch.setattr(store_module, "MIGRATIONS", (*now, add_note, broken))
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", len(now) + 2)
    monkeypatch.setattr(store_module, "READABLE_FROM", len(now) + 1)  # readers need step 1
    assert_one_line_error(invoke("show", "--db", db), f"schema version {len(now)}",
                          "history import FILE --db")
    before = db.read_bytes()
    with pytest.raises(RuntimeError, match="migration bug"):
        Store.open(db, create=True)
    assert db.read_bytes() == before  # neither step 2 nor step 3 stayed
    monkeypatch.setattr(store_module, "MIGRATIONS", (*now, add_note))
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", len(now) + 1)
    with Store.open(db, create=True):
        pass
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta").fetchall() == [(str(len(now) + 1),)]
    assert "note" in [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchall() == []
    conn.close()


# show ----------------------------------------------------------------------------------


def trend_history(tmp_path: Path) -> Path:
    """24 runs on the H100: naive 6% slower from run 12, tiled_conflict drifting 1% a
    commit over runs 6 to 15, tiled flat."""
    paths = []
    for i in range(24):
        drift = 1.01 ** min(max(i - 5, 0), 10)
        paths.append(make_run(tmp_path / "runs", i, factors={
            "naive": 1.06 if i >= 12 else 1.0, "tiled_conflict": drift}))
    db = tmp_path / "h.db"
    import_runs(db, paths)
    return db



def test_check_and_show_read_no_more_runs_than_they_keep(tmp_path, monkeypatch):
    # series built every point of a benchmark's whole history, then kept the last few:
    # `history check` took 27-48 s on a store of 30k runs, however small its --last
    built = []
    real = queries_module.SeriesPoint
    monkeypatch.setattr(queries_module, "SeriesPoint", lambda *a: built.append(1) or real(*a))
    db = tmp_path / "h.db"
    current = make_run(tmp_path / "now", 99)
    reads = []
    for batch in (range(0, 15), range(15, 45)):
        import_runs(db, [make_run(tmp_path / "runs", i) for i in batch])
        built.clear()
        checked = invoke("check", current, "--db", db, "--last", "5", "--min-runs", "3")
        assert checked.exit_code == 0, checked.output
        assert invoke("show", "--db", db, "--last", "4").exit_code == 0
        reads.append(len(built))
    assert reads[0] == reads[1]


def with_rare_kernel(document: dict) -> None:
    """Add a copy of the tiled kernel at another size: a benchmark of its own, rare where
    only some runs measure it."""
    tiled = next(b for b in document["benchmarks"] if b["variant"] == "tiled")
    document["benchmarks"].append({**tiled, "shape": [2000, 2000, 2000]})


def test_a_benchmark_new_or_rare_in_a_large_store_is_read_without_the_whole_store(
        tmp_path, monkeypatch):
    # the reader walked every run of the store for a benchmark with fewer runs than
    # --last: one new kernel in the file, on 1,600 runs of 150 rows, took 6.4 s and +160 MB
    walked = []
    real = queries_module.SeriesReader._read_more

    def read_more(self):
        more = real(self)
        walked.append(self._read)
        return more

    monkeypatch.setattr(queries_module.SeriesReader, "_read_more", read_more)
    db = tmp_path / "h.db"
    current = edited(make_run(tmp_path / "now", 99), with_rare_kernel)  # its size is new
    reads = []
    for batch in (range(0, 40), range(40, 120)):
        import_runs(db, [edited(make_run(tmp_path / "runs", i), with_rare_kernel)
                         if i in (3, 50) else make_run(tmp_path / "runs", i) for i in batch])
        walked.clear()
        with Store.open(db) as store:
            rows = check(store, load_results(current), last=5, min_runs=3).rows
        assert [r.runs for r in rows] == [5, 5, 5, 2 if len(batch) > 40 else 1]
        reads.append(max(walked))
    assert reads[0] == reads[1] < 40, reads


def test_a_rare_benchmark_s_series_past_the_walk_is_its_whole_series_last_points(tmp_path):
    # the runs a series needs past the walk are read alone: the same points, failed rows,
    # ties of time, a run left out and --since included
    paths = []
    for i in range(60):
        path = make_run(tmp_path / "runs", i, fail="tiled" if i in (20, 45) else None)
        if i % 9 == 2 or i in (20, 45):
            edited(path, with_rare_kernel)
        if i in (29, 38):  # measured at the same time as the run before
            edited(path, lambda d, i=i: d.update(
                created=(START + dt.timedelta(hours=i - 1)).isoformat()))
        paths.append(path)
    db = tmp_path / "h.db"
    import_runs(db, paths)
    rare = next(Benchmark.of(r) for r in load_results(paths[2]).benchmarks
                if r.shape == (2000, 2000, 2000))
    model = "NVIDIA H100 80GB HBM3"
    with Store.open(db) as store:
        for kwargs in ({}, {"usable_only": False}, {"exclude_run": 30},
                       {"since": (START + dt.timedelta(hours=12)).isoformat()}):
            every = store.series(rare, model, **kwargs)
            usable = kwargs.get("usable_only", True)
            for last in (1, 2, 3, 5, 8, 20):
                reader = store.reader(model, kwargs.get("since"), kwargs.get("exclude_run"))
                assert reader.series(rare, last=last, usable_only=usable) == every[-last:]
                store._forget_reads()  # and after a walk of fewer runs
                reader = store.reader(model, kwargs.get("since"), kwargs.get("exclude_run"))
                assert reader.series(rare, last=1, usable_only=usable) == every[-1:]
                assert reader.series(rare, last=last, usable_only=usable) == every[-last:]
    assert len(every) < 8  # reached back past the walk


def test_a_last_past_sqlite_s_integers_is_all_runs_and_min_runs_is_bounded(tmp_path):
    # --last 2^63 overflowed into SQLite (exit 4); --min-runs 2^63 advised --last 2^63
    db = flat_history(tmp_path)
    current = make_run(tmp_path, 100, factors={"tiled": 1.2}, name="current")
    huge = str(2**63)
    assert invoke("show", "--db", db, "--last", huge).exit_code == 0
    assert invoke("plot", tmp_path / "trend.png", "--db", db, "--last", huge).exit_code == 0
    checked = invoke("check", current, "--db", db, "--last", huge)
    assert checked.exit_code == 1 and verdicts(checked.stdout)["tiled"] == "slower"
    assert_one_line_error(invoke("check", current, "--db", db, "--min-runs", huge),
                          "--min-runs", "3<=x<=1000000")


def test_the_newest_runs_of_a_series_are_its_last_points(tmp_path):
    # series(last=N) picks its runs in SQL: the same points as the whole series' last N,
    # ties of time, failed rows, a run left out, --since and --branch included
    paths = [make_run(tmp_path / "runs", i, fail="naive" if i in (4, 9) else None)
             for i in range(12)]
    for i in (5, 6, 10):  # measured at the same time as the run before
        document = json.loads(paths[i].read_text(encoding="utf-8"))
        document["created"] = (START + dt.timedelta(hours=i - 1)).isoformat()
        document["git_branch"] = "other" if i == 10 else "main"
        paths[i].write_text(json.dumps(document), encoding="utf-8")
    db = tmp_path / "h.db"
    import_runs(db, paths)
    with Store.open(db) as store:
        for branch in (None, "main"):
            if branch:
                store.only_branch(branch)
            for tracked in store.benchmarks():
                for kwargs in ({}, {"usable_only": False}, {"exclude_run": 7},
                               {"since": (START + dt.timedelta(hours=3)).isoformat()}):
                    every = store.series(tracked.benchmark, tracked.gpu_model, **kwargs)
                    # and as the reader of many benchmarks' series reads them
                    reader = store.reader(tracked.gpu_model, kwargs.get("since"),
                                          kwargs.get("exclude_run"))
                    usable = kwargs.get("usable_only", True)
                    for last in (1, 2, 3, 5, 11, 20):
                        assert store.series(tracked.benchmark, tracked.gpu_model, last=last,
                                            **kwargs) == every[-last:]
                        assert reader.series(tracked.benchmark, last=last,
                                             usable_only=usable) == every[-last:]
                    assert reader.series(tracked.benchmark, usable_only=usable) == every


def show_rows(stdout: str) -> dict[str, str]:
    """Return each table line by the variant it names."""
    rows = {}
    for line in stdout.splitlines():
        for variant in ("naive", "tiled_conflict", "tiled "):
            if f"matmul/{variant}" in line:
                rows[variant.strip()] = line
    return rows


def test_show_names_the_step_commit_and_the_drift_range(tmp_path):
    db = trend_history(tmp_path)
    result = invoke("show", "--db", db)
    assert result.exit_code == 0, result.stderr
    rows = show_rows(result.stdout)
    assert set(rows) == {"naive", "tiled", "tiled_conflict"}
    assert f"step at {commit_of(12)[:7]} (2026-01-01)" in rows["naive"]
    assert "+6." in rows["naive"]
    # One GPU model in every row: the title names it, no column repeats it.
    assert "cudabench history:" in result.stdout and "(H100 80GB HBM3)" in result.stdout
    assert "H100" not in rows["naive"]
    assert f"drift {commit_of(6)[:7]}..{commit_of(15)[:7]}" in rows["tiled_conflict"]
    assert "step at" not in rows["tiled_conflict"]
    assert " - " in rows["tiled"] and "step" not in rows["tiled"] and "drift" not in rows["tiled"]
    for row in rows.values():
        assert " 24 " in row and "±" in row


def test_show_says_its_band_is_taken_since_the_last_change(tmp_path):
    # "band (last 10)" read as the last 10 commits; it is the last 10 since a step or drift
    db = trend_history(tmp_path)
    result = invoke("show", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "band (last 10 since last change)" in result.stdout, result.stdout
    naive = show_rows(result.stdout)["naive"]
    with Store.open(db) as store:  # naive stepped at run 12: the band is of runs 14..23
        tracked = next(t for t in store.benchmarks(variant="naive"))
        medians = [p.median_s for p in store.series(tracked.benchmark, tracked.gpu_model)]
    band = f"{format_seconds(min(medians[14:]))}..{format_seconds(max(medians[14:]))}"
    assert band in naive, (band, naive)


def test_show_sorts_shapes_and_parameters_as_numbers(tmp_path):
    # the store sorts them as text: 128x128x128 before 64x64x64, TILE=16 before TILE=8
    def sizes(document: dict) -> None:
        naive, tiled = document["benchmarks"][:2]
        document["benchmarks"] = [
            *({**naive, "shape": [n] * 3} for n in (1000, 128, 64)),
            *({**tiled, "params": {"TILE": t}} for t in (16, 32, 8))]

    db = tmp_path / "h.db"
    import_runs(db, [edited(make_run(tmp_path / "runs", i), sizes) for i in range(3)])
    result = invoke("show", "--db", db)
    assert result.exit_code == 0, result.stderr
    rows = [line.split("│")[1].split()[:3] for line in result.stdout.splitlines()
            if "matmul/" in line]
    assert rows == [["matmul/naive", "TILE=16", shape] for shape in
                    ("64x64x64", "128x128x128", "1000x1000x1000")] + [
        ["matmul/tiled", f"TILE={t}", "1000x1000x1000"] for t in (8, 16, 32)], rows


def test_a_branch_is_recorded_and_read_alone(tmp_path):
    # --record kept no branch (NULL every time), and one feature-branch run put its
    # number into main's `latest`
    main_runs = [make_run(tmp_path / "main", i) for i in range(6)]
    for path in main_runs:
        document = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**document, "git_branch": "main"}), encoding="utf-8")
    feature = make_run(tmp_path / "feature", 40, factors={"naive": 1.5})
    db = tmp_path / "h.db"
    import_runs(db, main_runs)
    import_runs(db, [feature])  # recorded without a branch
    with Store.open(db) as store:
        assert [run.branch for run in store.runs()] == ["main"] * 6 + [None]
    slow = make_run(tmp_path / "now", 50, factors={"naive": 1.5})
    on_main = invoke("check", slow, "--db", db, "--branch", "main")
    assert on_main.exit_code == 1 and "slower" in on_main.stdout, on_main.stdout
    # CI's full ref (GitHub's github.ref) is the branch: it read as a new branch with no
    # history, and the slowdown passed, exit 0
    ref = invoke("check", slow, "--db", db, "--branch", "refs/heads/main")
    assert ref.exit_code == 1 and "slower" in ref.stdout, ref.output
    # a branch no run was recorded on (a typo): every row "too little history", passed
    assert_one_line_error(invoke("check", slow, "--db", db, "--branch", "mian"),
                          "--branch mian: no run in", "did you mean main?")
    # another case alone (MAIN: no letter matches main's) read as a new branch: passed too
    assert_one_line_error(invoke("check", slow, "--db", db, "--branch", "MAIN"),
                          "--branch MAIN: no run in", "did you mean main?")
    # a new branch, no typo: its history starts now, and says so
    fresh = invoke("check", slow, "--db", db, "--branch", "feature/new-tiles")
    assert fresh.exit_code == 0, fresh.output
    assert "--branch feature/new-tiles: no run in" in fresh.stderr
    naive_all = show_rows(invoke("show", "--db", db).stdout)["naive"]
    naive_main = show_rows(invoke("show", "--db", db, "--branch", "main").stdout)["naive"]
    assert " 7 " in naive_all and " 6 " in naive_main and naive_all != naive_main
    assert_one_line_error(invoke("show", "--db", db, "--branch", "nope"), "--branch")
    with Store.open(db) as store:  # nothing written: the view is the connection's own
        assert len(store.runs()) == 7
    # show and plot said only "no recorded run matches the filters" to the typo check names
    pytest.importorskip("matplotlib")
    for args in (("show",), ("plot", tmp_path / "trend.png")):
        assert_one_line_error(invoke(*args, "--db", db, "--branch", "mian"),
                              "--branch mian: no run in", "did you mean main?")
    assert not (tmp_path / "trend.png").exists()



def test_a_remote_tracking_branch_name_is_its_branch_and_an_empty_one_is_refused(
        tmp_path, monkeypatch):
    # origin/main and refs/remotes/origin/main read as branches no run was recorded on:
    # every row "too little history", the gate off (exit 0); refs/heads/ became an empty
    # name, which passed everything
    for name in ("GITHUB_REF_NAME", "GITHUB_HEAD_REF", "CI_COMMIT_REF_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no repository here: no remote known
    db = tmp_path / "h.db"
    assert invoke("import", "--branch", "main", "--db", db,
                  *[make_run(tmp_path / "main", i) for i in range(6)]).exit_code == 0
    slow = make_run(tmp_path / "now", 50, factors={"naive": 1.5})
    for name in ("origin/main", "refs/remotes/origin/main"):
        done = invoke("check", slow, "--db", db, "--branch", name)
        assert done.exit_code == 1 and "slower" in done.stdout, (name, done.output)
    for name in ("refs/heads/", "refs/remotes/origin/"):
        assert_one_line_error(invoke("check", slow, "--db", db, "--branch", name),
                              f"--branch {name!r}: names no branch")
    # a remote of the working folder's repository: its branch, recorded as itself
    git = functools.partial(subprocess.run, check=True, capture_output=True, cwd=tmp_path)
    git(["git", "init", "-q", "-b", "main"])
    git(["git", "remote", "add", "upstream", "https://example.invalid/repo.git"])
    assert invoke("import", make_run(tmp_path / "f", 60), "--branch", "upstream/feature",
                  "--db", db).exit_code == 0
    with Store.open(db) as store:
        assert store.branches() == ["feature", "main"]


def test_a_real_new_branch_near_a_recorded_one_is_no_typo(tmp_path, monkeypatch):
    # release-1.3 after release-1.2, feature-logout after feature-login: refused as a typo
    # of the recorded branch, which failed each new branch's first CI job
    for name in ("GITHUB_REF_NAME", "GITHUB_HEAD_REF", "CI_COMMIT_REF_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no repository here: git knows no branch
    db = tmp_path / "h.db"
    for branch, index in (("release-1.2", 0), ("feature-login", 1), ("main", 2)):
        result = invoke("import", make_run(tmp_path / branch, index), "--db", db,
                        "--branch", branch)
        assert result.exit_code == 0, result.stderr
    current = make_run(tmp_path / "now", 9)

    def accepted(branch: str) -> None:
        result = invoke("check", current, "--db", db, "--branch", branch)
        assert result.exit_code == 0, result.output
        assert f"--branch {branch}: no run in" in result.stderr

    for branch in ("release-1.3", "release-2.0", "release-10.2"):
        accepted(branch)  # only its numbers differ: a version
    for typo, meant in (("feature-logout", "feature-login"), ("mian", "main"), ("MAIN", "main")):
        assert_one_line_error(invoke("check", current, "--db", db, "--branch", typo),
                              f"--branch {typo}: no run in", f"did you mean {meant}?")
    # a branch git knows in the working folder's repository is real
    git = functools.partial(subprocess.run, check=True, capture_output=True, cwd=tmp_path)
    git(["git", "init", "-q", "-b", "main"])
    git(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
         "--allow-empty", "-m", "start"])
    git(["git", "branch", "feature-logout"])
    accepted("feature-logout")
    git(["git", "update-ref", "refs/remotes/origin/feature-logon", "HEAD"])
    accepted("feature-logon")
    assert_one_line_error(invoke("check", current, "--db", db, "--branch", "mian"),
                          "did you mean main?")
    monkeypatch.setenv("GITHUB_HEAD_REF", "feature-lgin")  # the CI's own branch
    accepted("feature-lgin")


def test_show_filters(tmp_path):
    db = trend_history(tmp_path)
    result = invoke("show", "--op", "matmul", "--variant", "naive", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert set(show_rows(result.stdout)) == {"naive"}
    since = invoke("show", "--since", "2026-01-01T20:00:00Z", "--variant", "naive", "--db", db)
    assert since.exit_code == 0, since.stderr
    row = show_rows(since.stdout)["naive"]
    assert " 4 " in row and "step" not in row  # runs 20..23 only: after the step
    assert_one_line_error(invoke("show", "--op", "dot", "--db", db), "no recorded run matches")
    assert_one_line_error(invoke("show", "--since", "last week", "--db", db), "--since")


@pytest.mark.parametrize("moment", ["0001-01-01T00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_outside_pythons_range_is_unreadable(tmp_path, moment):
    # in UTC these fall before year 1 or after 9999: an unreadable time, not an OverflowError
    db = trend_history(tmp_path)
    assert_one_line_error(invoke("show", "--since", moment, "--db", db), "--since")
    path = make_run(tmp_path / "odd", 99)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["created"] = moment
    path.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("import", path, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "recorded as run 25" in result.stdout


def test_show_counts_commits_not_the_runs_of_interleaved_ones(tmp_path):
    # runs of two branches interleaved (a, b, a, b, a, b) read "6" commits
    db = tmp_path / "h.db"
    runs = [edited(make_run(tmp_path / "runs", i), lambda d, i=i: d.update(
        git_commit=commit_of(i % 2))) for i in range(6)]
    import_runs(db, runs)
    result = invoke("show", "--variant", "tiled", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert " 2 " in show_rows(result.stdout)["tiled"], result.stdout


def test_reruns_of_one_commit_are_one_point():
    points = [SeriesPoint(1, "a", "t1", 1.0, "PASS"), SeriesPoint(2, "a", "t2", 3.0, "PASS"),
              SeriesPoint(3, "b", "t3", 2.0, "PASS"), SeriesPoint(4, None, "t4", 5.0, "PASS"),
              SeriesPoint(5, None, "t5", 6.0, "PASS")]
    merged = per_commit(points)
    assert [(p.run_id, p.median_s) for p in merged] == [(2, 2.0), (3, 2.0), (4, 5.0), (5, 6.0)]


# check ---------------------------------------------------------------------------------


def flat_history(tmp_path: Path, runs: int = 10, source: str = H100) -> Path:
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "runs", i, source=source) for i in range(runs)])
    return db


def verdicts(stdout: str) -> dict[str, str]:
    """Return each benchmark line's verdict word, by variant."""
    found = {}
    words = {v.value for v in Verdict}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 2 and cells[1] and "/" in cells[1]:  # a row's first line
            variant = cells[1].split()[0].split("/")[1]
            found[variant] = next(cell for cell in cells if cell in words)
    return found


def test_check_flags_a_regression_against_the_history(tmp_path):
    db = flat_history(tmp_path)
    current = make_run(tmp_path, 100, factors={"tiled": 1.2}, name="current")
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert verdicts(result.stdout) == {"naive": "same", "tiled": "slower",
                                       "tiled_conflict": "same"}
    assert "+20." in result.stdout and "history: 10 runs, spread" in result.stdout
    assert "1 regression: 1 slower, 2 same" in result.stdout.replace("\n", " ")


def test_a_subcommand_s_options_are_checked_as_a_command_s_are(tmp_path):
    # --branch took --allow-missing for its value: the regression passed, exit 0
    db = flat_history(tmp_path)
    current = make_run(tmp_path, 100, factors={"tiled": 1.2}, name="current")
    result = invoke("check", current, "--db", db, "--branch", "--allow-missing")
    assert_one_line_error(result, "--branch --allow-missing: --branch takes a value")


def test_check_judges_a_change_of_exactly_the_threshold_alike_whatever_the_rounding(tmp_path):
    # 672/640 - 1 computes a hair above 0.05 and 21/20 - 1 a hair below: both are +5%
    # exactly, which is not "more than the threshold" (the first was slower, exit 1)
    for low, high in ((640e-9, 672e-9), (20e-6, 21e-6)):
        folder = tmp_path / f"{low:g}"
        runs = [make_run(folder, i) for i in range(6)]
        current = make_run(folder, 100, name="current")
        for i, path in enumerate(runs):  # each run's median exactly low, its samples its own
            document = json.loads(path.read_text(encoding="utf-8"))
            document["benchmarks"] = [b for b in document["benchmarks"]
                                      if b["variant"] == "tiled"]
            document["benchmarks"][0]["samples_s"] = [low] * 21 + [low * (1.01 + i / 1e4)] * 20
            path.write_text(json.dumps(document), encoding="utf-8")
        document = json.loads(runs[0].read_text(encoding="utf-8"))
        document["benchmarks"][0]["samples_s"] = [high] * 21 + [high * 1.02] * 20
        document["git_commit"] = commit_of(100)
        current.write_text(json.dumps(document), encoding="utf-8")
        import_runs(folder / "h.db", runs)
        result = invoke("check", current, "--db", folder / "h.db", "--threshold", "5%")
        assert result.exit_code == 0, (result.stdout, result.stderr)
        assert verdicts(result.stdout) == {"tiled": "same"}, result.stdout


def test_check_passes_a_run_like_its_history(tmp_path):
    db = flat_history(tmp_path)
    result = invoke("check", make_run(tmp_path, 101, name="current"), "--db", db)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert set(verdicts(result.stdout).values()) == {"same"}
    assert "no regression: 3 same" in result.stdout


def test_check_with_too_little_history_says_so_and_passes(tmp_path):
    db = flat_history(tmp_path, runs=3)
    current = make_run(tmp_path, 100, factors={"tiled": 1.5}, name="current")
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert set(verdicts(result.stdout).values()) == {"noisy"}
    assert "too little history: 3 runs" in result.stdout
    assert "(3 with too little history, not gated)" in result.stdout.replace("\n", " ")


def test_check_fails_a_run_that_fails_verification(tmp_path):
    db = flat_history(tmp_path)
    current = make_run(tmp_path, 100, fail="naive", name="current")
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 1
    assert verdicts(result.stdout)["naive"] == "failed"
    assert "7 of" in result.stdout


def test_check_gates_a_kernel_relabelled_as_a_vendor_row(tmp_path):
    # the current file's kind was trusted: a failing (or 30% slower) kernel whose row said
    # "vendor" was "not gated", where compare against the same runs failed it
    db = flat_history(tmp_path)
    current = make_run(tmp_path, 100, factors={"tiled": 1.3}, name="current")
    document = json.loads(current.read_text(encoding="utf-8"))
    for bench in document["benchmarks"]:
        if bench["variant"] == "tiled":
            bench["kind"] = "vendor"
    current.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert verdicts(result.stdout)["tiled"] == "failed"
    assert "recorded as a kernel, a vendor row here" in " ".join(result.stdout.split())


def test_check_does_not_gate_a_slower_reference_row(tmp_path):
    db = flat_history(tmp_path, source=H200)
    current = make_run(tmp_path, 100, source=H200, factors={"memcpy_dtod": 1.2},
                       name="current")
    result = invoke("check", current, "--threshold", "5%", "--db", db)
    assert result.exit_code == 0, result.stdout
    assert verdicts(result.stdout)["memcpy_dtod"] == "slower"
    # counted apart in the summary, in compare's words: "no regression: 1 slower, ..." read
    # as a gate that passed a slowdown
    summary = " ".join(result.stdout.split()).rsplit("no regression: ", 1)[1]
    assert "slower" not in summary.split(";")[0], summary
    assert "; not gated: 1 slower (vendor-library or copy rows)" in summary


def test_check_leaves_the_current_run_out_of_its_own_history(tmp_path):
    db = flat_history(tmp_path)
    current = make_run(tmp_path, 100, factors={"tiled": 1.2}, name="current")
    import_runs(db, [current])
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 1
    assert "its own run 11 left out of its history" in result.stdout.replace("\n", " ")


def test_check_weighs_only_the_runs_after_a_step(tmp_path):
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": 0.8 if i >= 8 else 1.0})
                     for i in range(16)])
    faster_kernel = make_run(tmp_path, 100, factors={"tiled": 0.8}, name="current")
    with Store.open(db) as store:
        found = check(store, load_results(faster_kernel))
    row = next(r for r in found.rows if r.benchmark.variant == "tiled")
    assert row.verdict is Verdict.SAME, row.reason
    assert row.runs == 8 and f"since the step at {commit_of(8)[:7]}" in row.reason
    back_to_slow = make_run(tmp_path, 101, name="current")
    with Store.open(db) as store:
        again = check(store, load_results(back_to_slow))
    assert next(r for r in again.rows if r.benchmark.variant == "tiled").verdict is Verdict.SLOWER


def test_check_judges_against_the_level_after_a_drift(tmp_path):
    db = trend_history(tmp_path)  # tiled_conflict drifted 10% over runs 6..15, then flat
    current = make_run(tmp_path, 100, factors={"tiled_conflict": 1.01**10 * 1.03},
                       name="current")
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 1, result.stdout
    # naive is back to its level before its step: 6% faster than its last 12 runs.
    assert verdicts(result.stdout) == {"naive": "faster", "tiled": "same",
                                       "tiled_conflict": "slower"}
    with Store.open(db) as store:
        row = next(r for r in check(store, load_results(current)).rows
                   if r.benchmark.variant == "tiled_conflict")
    assert row.change == pytest.approx(0.03, abs=0.005)
    assert f"since the drift that ended at {commit_of(15)[:7]}" in row.reason


def edited(path: Path, edit) -> Path:
    """Apply edit to the results document at path, in place; return path."""
    document = json.loads(path.read_text(encoding="utf-8"))
    edit(document)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def on_card(path: Path, driver: str = "13.0", power_limit_w: float = 350.0) -> Path:
    """Set the driver and power limit of the results file's card, in place."""
    def edit(document: dict) -> None:
        document["devices"][0]["driver_version"] = driver
        document["devices"][0]["settings"] = {"power_limit_w": power_limit_w, "ecc_enabled": True}
    return edited(path, edit)


def card_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("the card differs")]


def test_check_says_where_the_card_differs_from_the_run_it_is_judged_against(tmp_path):
    # A driver update or a lower power limit on a CI runner moved every timing, and the
    # check said nothing of it, where compare names each difference.
    db = tmp_path / "h.db"
    import_runs(db, [on_card(make_run(tmp_path / "runs", i)) for i in range(6)])
    current = on_card(make_run(tmp_path, 100, name="current"), "12.0", 250.0)
    done = invoke("check", current, "--db", db)
    assert done.exit_code == 0, (done.stdout, done.stderr)  # a note: the verdicts decide
    assert card_lines(done.stdout) == [
        f"the card differs: driver: 13.0 -> 12.0 (against the last recorded run, "
        f"{commit_of(5)[:7]})",
        f"the card differs: power limit (W): 350.0 -> 250.0 (against the last recorded run, "
        f"{commit_of(5)[:7]})"]
    same = invoke("check", on_card(make_run(tmp_path, 101, name="same")), "--db", db)
    assert same.exit_code == 0 and card_lines(same.stdout) == [], same.stdout


def test_a_version_5_store_keeps_no_cards_and_checks_without_card_lines(tmp_path):
    db = tmp_path / "h.db"
    import_runs(db, [on_card(make_run(tmp_path / "runs", i)) for i in range(6)])
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE cards")  # version 6's
    conn.execute("ALTER TABLE runs DROP COLUMN gate")  # version 8's
    conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    current = on_card(make_run(tmp_path, 100, name="current"), "12.0", 250.0)
    done = invoke("check", current, "--db", db)  # read as it is
    assert done.exit_code == 0 and card_lines(done.stdout) == [], done.stdout
    import_runs(db, [current])  # a writer upgrades it; the runs before keep no card
    done = invoke("check", current, "--db", db)
    assert done.exit_code == 0 and card_lines(done.stdout) == [], done.stdout
    with Store.open(db) as store:
        assert store.version == SCHEMA_VERSION
        assert [card.driver_version for card in store.run_cards(7, "NVIDIA H100 80GB HBM3")
                ] == ["12.0"]
        assert store.run_cards(6, "NVIDIA H100 80GB HBM3") == []


def test_check_fails_a_kernel_of_the_last_run_that_this_file_lacks(tmp_path):
    # A slowed kernel renamed, dropped or skipped must not leave the gate (compare's rule).
    db = flat_history(tmp_path, runs=6)

    def rename(document):
        for bench in document["benchmarks"]:
            if bench["variant"] == "tiled":
                bench["variant"] = "tiled_v2"

    def drop(document):
        document["benchmarks"] = [b for b in document["benchmarks"] if b["variant"] != "tiled"]

    for edit in (rename, drop):
        current = edited(make_run(tmp_path, 100, factors={"tiled": 1.5}, name=edit.__name__),
                         edit)
        result = invoke("check", current, "--db", db)
        assert result.exit_code == 1, (edit.__name__, result.stdout)
        assert verdicts(result.stdout)["tiled"] == "missing"
        assert "1 missing" in " ".join(result.stdout.split())
        allowed = invoke("check", current, "--db", db, "--allow-missing")
        assert allowed.exit_code == 0 and "missing" not in verdicts(allowed.stdout).values()


@pytest.mark.parametrize("extra", [["--device", "0"], ["--l2-flush", "clean"], ["--device=1"]])
def test_a_default_or_device_option_added_does_not_hide_a_dropped_kernel(tmp_path, extra):
    # the same command with its default `--l2-flush clean` (or `--device 0`) added was
    # another command, with no runs: the dropped kernel passed unseen
    db = flat_history(tmp_path, runs=6)

    def drop(document):
        document["command"] = [*document["command"], *extra]
        document["benchmarks"] = [b for b in document["benchmarks"] if b["variant"] != "tiled"]

    result = invoke("check", edited(make_run(tmp_path, 100, name="cur"), drop), "--db", db)
    assert result.exit_code == 1 and verdicts(result.stdout)["tiled"] == "missing", \
        result.stdout


def test_a_pytest_session_s_options_that_judge_or_show_it_are_the_same_command():
    # -q against -v, or another --cudabench-threshold, made another command: a kernel the
    # session dropped was then not missing
    from cudabench.history.records import command_key

    def key(*words: str) -> str | None:
        return command_key(["python", "-m", "pytest", "perf", "-k", "dot", *words,
                            "--cudabench-record", "h.db"])

    same = {key(), key("-q"), key("-vv"), key("-xvs"), key("-sv"),
            key("--tb", "short", "-p", "no:cacheprovider"),
            key("-pno:cacheprovider", "-rA", "--color=yes"), key("--cudabench-threshold",
                                                                 "3%"),
            key("--cudabench-threshold=5%", "--cudabench-allow-missing", "--cudabench-alpha",
                "0.01")}
    assert len(same) == 1, same
    assert key("-m", "slow") != key() and key("--cudabench-rounds", "3") != key()
    # and a store's key written before, -q and all, reads as the same command
    from cudabench.history.records import comparable_key

    older = json.dumps(["python", "-m", "pytest", "perf", "-k", "dot", "-q"])
    assert comparable_key(older) == comparable_key(key() or "")
    assert comparable_key(json.dumps(["pytest", "-q"])) == '["pytest"]'  # nothing but it
    # a benchmark command's -s and -p are what it measures
    assert command_key(["cudabench", "dot", "-s", "64"]) == '["cudabench", "dot", "-s", "64"]'


def test_a_command_s_options_in_another_order_are_the_same_command():
    from cudabench.history.records import command_key, comparable_key

    def key(*words: str) -> str:
        found = command_key(["cudabench", *words])
        assert found is not None
        return comparable_key(found)

    assert key("matmul", "--size", "64", "--variant", "a", "--variant", "b") == \
        key("matmul", "--variant=a", "--variant", "b", "--size=64", "--device", "1")
    assert key("matmul", "--size", "64") != key("matmul", "--size", "64", "--hot")
    assert key("matmul", "--size", "64") != key("matmul", "--size", "64", "--l2-flush",
                                                "memset")
    # a suite's own flush is what `run` measures: --l2-flush clean there is another one
    assert key("run", "--l2-flush", "clean") != key("run")
    assert key("ab", "A", "B") != key("ab", "B", "A")
    # the words after --device's value are not its: two suites stay two commands
    assert key("run", "--device", "1", "a.toml") != key("run", "--device", "1", "b.toml")
    assert key("run", "--device", "1", "a.toml") == key("run", "a.toml", "--device=0")
    assert key("run", "--device", "0", "a.toml") != key("run")
    # a short option is its long one: `-s 64` dropping a kernel passed as another command
    assert key("dot", "-s", "64", "-p", "TILE=8") == key("dot", "--size=64", "--param",
                                                         "TILE=8") == key("dot", "-s64",
                                                                          "-pTILE=8")


def test_check_of_another_command_or_a_short_history_misses_nothing(tmp_path):
    # `--variant naive` runs one kernel of three: another command, so the others are not
    # missing; nor are they where the command has fewer than 3 recorded runs.
    def naive_only(document):
        document["command"] = [*document["command"], "--variant", "naive"]
        document["benchmarks"] = [b for b in document["benchmarks"]
                                  if b["variant"] not in ("tiled", "tiled_conflict")]

    for runs in (6, 2):
        db = flat_history(tmp_path / str(runs), runs=runs)
        for edit in (naive_only, lambda d: naive_only(d) or d.update(command=d["command"][:-2])):
            current = edited(make_run(tmp_path / str(runs), 100, name="one"), edit)
            result = invoke("check", current, "--db", db)
            if runs == 6 and edit is not naive_only:  # the set's own command: missing
                assert result.exit_code == 1 and "2 missing" in " ".join(result.stdout.split())
                continue
            assert result.exit_code == 0, result.stdout
            assert "missing" not in verdicts(result.stdout).values()


def test_a_command_s_output_flags_do_not_make_it_another_command():
    from cudabench.history.records import command_key

    plain = command_key(["cudabench", "run", "suite.toml"])
    assert plain == command_key(["cudabench", "run", "suite.toml", "--json", "a.json",
                                 "--record", "--check", "--db=h.db", "--markdown", "s.md"])
    assert plain != command_key(["cudabench", "run", "other.toml"])
    assert command_key("cudabench run") is None and command_key(None) is None


def test_check_refuses_bad_options(tmp_path):
    db = flat_history(tmp_path, runs=1)
    run = make_run(tmp_path, 5)
    assert_one_line_error(invoke("check", run, "--threshold", "5", "--db", db), "--threshold")
    assert_one_line_error(invoke("check", run, "--alpha", "2", "--db", db), "--alpha")
    assert_one_line_error(invoke("check", DATA / "compare/schema99.json", "--db", db),
                          "schema_version 99")


def test_check_refuses_a_window_shorter_than_the_history_it_needs(tmp_path):
    # --last 4 with --min-runs 5 (or --min-runs 50 with --last 20) left every row "too
    # little history, not gated": a 3x slowdown passed.
    db = flat_history(tmp_path)
    slow = make_run(tmp_path, 100, factors={"tiled": 3.0}, name="current")
    for flags, named in ((["--last", "4"], "--last 4 is below --min-runs 5"),
                         (["--min-runs", "50"], "--last 20 is below --min-runs 50")):
        assert_one_line_error(invoke("check", slow, *flags, "--db", db), named)
    assert invoke("check", slow, "--last", "5", "--db", db).exit_code == 1


# thresholds ----------------------------------------------------------------------------


def history_runs(source: str) -> int:
    """Return the runs an auto threshold's source says it weighed, outliers left out or
    not ("history: 8 runs (4 outliers left out), spread ..." is 12): medians resampled
    from one file lie ~0.01% apart, where a run 0.05% off is an outlier."""
    import re

    found = re.match(r"history: (\d+) runs(?: \((\d+) outliers? left out\))?, spread ", source)
    assert found is not None, source
    return int(found[1]) + int(found[2] or 0)


def test_auto_threshold_from_history_and_its_floor(tmp_path):
    db = flat_history(tmp_path, runs=12)
    result = load_results(DATA / H100).benchmarks[1]
    with Store.open(db) as store:
        limit, source = auto_threshold(store, result, "NVIDIA H100 80GB HBM3")
        assert history_runs(source) == 12, source
        assert limit == 0.02 and "below the 2% floor" in source  # H100 medians: ~0.1% apart
        limit, source = auto_threshold(store, result, "NVIDIA H200")
        assert (limit, source) == (0.02, "floor 2%: only 0 runs in history (auto needs 5)")


def test_auto_thresholds_of_a_file_of_two_gpu_models_look_each_row_up_by_its_own(tmp_path):
    # compare passed the file's models joined ("Other GPU + NVIDIA H100 80GB HBM3"), which
    # no history holds: every row fell to the 2% floor, "only 0 runs in history"
    from cudabench.cli.compare import auto_thresholds

    db = flat_history(tmp_path, runs=12)
    result = load_results(DATA / H100).benchmarks[1]
    assert result.device is not None and result.device.name == "NVIDIA H100 80GB HBM3"
    with Store.open(db) as store:
        _, source = auto_thresholds(store, "NVIDIA H100 80GB HBM3 + Other GPU", db)(result)
    assert history_runs(source) == 12, source


def test_threshold_from_medians_scales_with_the_spread():
    rng = np.random.default_rng(1)
    medians = list(np.exp(rng.normal(0, 0.01, 200)) * 1e-4)  # 1% run-to-run
    limit, source = threshold_from_medians(medians)
    assert limit == pytest.approx(0.03, rel=0.15)
    assert source.startswith("history: 200 runs, spread ") and source.endswith("% x 3")
    stepped = medians[:100] + [m * 1.3 for m in medians[100:]]  # a step is not noise
    assert threshold_from_medians(stepped)[0] == pytest.approx(limit, rel=0.2)
    assert threshold_from_medians(medians[:4])[1] == "floor 2%: only 4 runs in history " \
                                                     "(auto needs 5)"


def test_smallest_detectable_matches_the_rank_test():
    spread, samples = 0.01, 30
    shift = smallest_detectable(0.001, spread, samples)
    assert 0.005 < shift < 0.03
    rng = np.random.default_rng(2)
    caught = sum(
        mann_whitney_u(rng.normal(1.0, spread, samples),
                       rng.normal(1.0 + shift, spread, samples)) < 0.001
        for _ in range(300))
    assert 0.7 < caught / 300 < 0.9  # the power asked for: 0.8
    # past the threshold: the medians' change must exceed it too (at it: half the time)
    assert 0.05 < smallest_detectable(0.05, spread, samples) < 0.06
    assert smallest_detectable(0.05, spread, 2) == float("inf")  # 2 samples never reach p<1e-3
    assert smallest_detectable(0.001, 0.02, samples) > shift


def test_smallest_detectable_is_never_only_where_the_test_cannot_reach_alpha():
    from cudabench.analysis.compare import reachable_p

    # 10 against 10 reach p < 0.001 (the gate failed such a row as slower while --power
    # said "never"): the shift given is one the test catches about 80% of the time
    spread = 0.01
    shift = smallest_detectable(0.001, spread, 10)
    assert 0.01 < shift < 0.04
    rng = np.random.default_rng(3)
    caught = sum(
        mann_whitney_u(rng.normal(1.0, spread, 10), rng.normal(1.0 + shift, spread, 10))
        < 0.001 for _ in range(1000))
    assert 0.75 < caught / 1000 < 0.92
    for alpha in (0.001, 0.01):
        for n1 in range(3, 40):
            for n2 in range(3, 40):
                never = smallest_detectable(0.02, spread, n2, n1, alpha) == float("inf")
                assert never == (reachable_p(n1, n2) >= alpha), (n1, n2, alpha)


# plot ----------------------------------------------------------------------------------


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    db = flat_history(tmp_path, runs=6)
    out = tmp_path / "trend.png"
    result = invoke("plot", out, "--variant", "tiled", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG")


def test_plot_takes_the_formats_cudabench_plot_takes(tmp_path):
    pytest.importorskip("matplotlib")
    db = flat_history(tmp_path, runs=6)
    out = tmp_path / "trend.jpg"
    assert invoke("plot", out, "--variant", "tiled", "--db", db).exit_code == 0
    assert out.read_bytes().startswith(b"\xff\xd8")  # a JPEG
    odd = tmp_path / "trend.tiff"
    result = invoke("plot", odd, "--db", tmp_path / "none.db")  # refused before reading
    assert_one_line_error(result, "OUTPUT", "cannot tell the format from .tiff", ".png")
    assert not odd.exists()


def test_plot_never_writes_over_the_store_it_reads(tmp_path):
    db = flat_history(tmp_path, runs=3)
    store = tmp_path / "trend.png"
    db.rename(store)
    kept = store.read_bytes()
    result = invoke("plot", store, "--db", store)
    assert result.exit_code == 2 and "one of the files this command reads" in result.stderr
    assert store.read_bytes() == kept


def test_plot_draws_a_bounded_figure_of_the_benchmarks_that_changed_first(tmp_path):
    # a panel of 2.8 inches per benchmark, unbounded: 99 made a figure of 41,580 px (12 s),
    # 882 ran out of memory
    pytest.importorskip("matplotlib")
    from cudabench.cli.history import MAX_PANELS, _panels
    from cudabench.history.report import trends

    sizes = [8 * n for n in range(1, MAX_PANELS + 6)]

    def many(document: dict, index: int) -> None:
        naive = document["benchmarks"][0]
        document["benchmarks"] = [{**naive, "shape": [n] * 3} for n in sizes]
        if index >= 5:  # the last shape in the table's order stepped 50% slower
            last = document["benchmarks"][-1]
            last["samples_s"] = [x * 1.5 for x in last["samples_s"]]

    db = tmp_path / "h.db"
    import_runs(db, [edited(make_run(tmp_path / "runs", i), lambda d, i=i: many(d, i))
                     for i in range(10)])
    out = tmp_path / "trend.png"
    result = invoke("plot", out, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert f"wrote {out}: {MAX_PANELS} benchmarks" in result.stdout
    said = " ".join(result.stderr.split())
    assert f"5 of {len(sizes)} benchmarks left out" in said
    assert "narrow it with --op, --variant, --gpu, --since or --branch" in said
    height = int.from_bytes(out.read_bytes()[20:24], "big")  # the PNG's IHDR
    assert height <= 2.8 * MAX_PANELS * 150
    with Store.open(db) as store:
        found = trends(store)
    assert found[-1].detection.steps  # drawn, in the table's order, before the first ones
    shown = [trend.tracked.benchmark.shape[0] for trend in _panels(found)]
    assert shown == sizes[:MAX_PANELS - 1] + sizes[-1:]


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = invoke("plot", tmp_path / "t.png", "--db", tmp_path / "none.db")
    assert_one_line_error(result, "needs matplotlib", "pip install")


def test_a_noisy_history_cannot_raise_the_auto_threshold_past_its_cap():
    # Medians wandering by ~100% between runs once made a 302% gate: a 2x slowdown was "same".
    wild = [1e-3 * f for f in (1, 3, 0.7, 2.5, 1.2, 4, 0.9, 3.3)]
    limit, source = threshold_from_medians(wild)
    assert limit == pytest.approx(0.25)
    assert "capped at 25% (--max-threshold)" in source
    assert threshold_from_medians(wild, cap=0.5)[0] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        threshold_from_medians(wild, floor=0.3, cap=0.25)


def test_compare_with_a_wild_history_still_catches_a_2x_slowdown(tmp_path):
    from cudabench.cli import cli

    db = tmp_path / "h.db"
    wild = [1, 3.1, 0.6, 2.2, 0.8, 4.0, 1.4, 0.5, 2.8, 1.1]  # medians swinging 3x between runs
    swings = [make_run(tmp_path / "runs", i, factors={v: wild[i] for v in
                                                        ("naive", "tiled", "tiled_conflict")})
              for i in range(len(wild))]
    import_runs(db, swings)
    base = make_run(tmp_path, 50, name="base")
    slow = make_run(tmp_path, 51, factors={"tiled": 2.0}, name="slow")
    runner = CliRunner()
    summary = tmp_path / "summary.md"
    result = runner.invoke(cli, ["compare", str(base), str(slow), "--db", str(db),
                                 "--markdown", str(summary)])
    assert result.exit_code == 1, result.output
    assert verdicts(result.stdout)["tiled"] == "slower"
    assert "capped at 25% (--max-threshold)" in summary.read_text(encoding="utf-8")
    loose = runner.invoke(cli, ["compare", str(base), str(slow), "--db", str(db),
                                "--max-threshold", "150%"])
    assert loose.exit_code == 0, loose.output
    bad = runner.invoke(cli, ["compare", str(base), str(slow), "--max-threshold", "1%"])
    assert bad.exit_code == 2 and "--max-threshold" in bad.output


def test_history_check_notes_a_slowdown_it_passes_as_noise(tmp_path):
    db = tmp_path / "h.db"
    wild = [1, 3.1, 0.6, 2.2, 0.8, 4.0, 1.4, 0.5, 2.8, 1.1]  # medians swinging 3x between runs
    import_runs(db, [make_run(tmp_path / "runs", i, factors={
        v: wild[i] for v in ("naive", "tiled", "tiled_conflict")}) for i in range(len(wild))])
    slow = make_run(tmp_path, 51, factors={"tiled": 3.5 * 1.25}, name="slow")
    done = invoke("check", slow, "--db", db)
    assert done.exit_code == 0, done.output
    text = " ".join(done.stdout.split())
    assert "note: matmul/tiled" in text and "so the gate passes it" in text
    assert text.count("note: ") == 1  # the others are within their threshold


def test_history_check_takes_max_threshold_as_compare_does(tmp_path):
    # Medians that move ~11% from run to run (auto: 3 x that = 33%, past the 25% cap) while
    # most lie within ~7% of their middle, so a +29% run is significant: slower under the
    # default cap, within a 50% one. (No run is an outlier, which auto leaves out.)
    history = (1.01, 1.18, 0.94, 1.05, 0.98, 1.05, 1.0, 0.96, 0.93, 1.15)
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": f})
                     for i, f in enumerate(history)])
    slow = make_run(tmp_path, 51, factors={"tiled": 1.005 * 1.29}, name="slow")
    capped = invoke("check", slow, "--db", db)
    assert capped.exit_code == 1, capped.output
    assert verdicts(capped.stdout)["tiled"] == "slower"
    assert "(--max-threshold)" in capped.stdout.replace("│", "").replace("\n", "")
    loose = invoke("check", slow, "--db", db, "--max-threshold", "50%")
    assert loose.exit_code == 0, loose.output
    bad = invoke("check", slow, "--db", db, "--max-threshold", "1%")
    assert_one_line_error(bad, "--max-threshold 1%", "floor")


def test_check_fails_an_incomplete_file_and_a_slowdown_on_too_few_samples(tmp_path):
    db = flat_history(tmp_path)
    partial = make_run(tmp_path, 100, name="partial")
    document = json.loads(partial.read_text(encoding="utf-8"))
    document["complete"] = False
    partial.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("check", partial, "--db", db)
    assert result.exit_code == 1 and "incomplete" in result.stderr
    assert "gate failed, the current run is incomplete" in result.stdout  # not "no regression"
    assert "no regression" not in result.stdout

    few = make_run(tmp_path, 101, factors={"tiled": 3.0}, name="few")
    document = json.loads(few.read_text(encoding="utf-8"))
    for bench in document["benchmarks"]:
        if bench["variant"] == "tiled":
            bench["samples_s"] = bench["samples_s"][:2]
    few.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("check", few, "--db", db)
    assert result.exit_code == 1, result.stdout
    assert verdicts(result.stdout)["tiled"] == "untestable"


def test_show_keeps_a_gpu_column_when_the_history_holds_two_models(tmp_path, monkeypatch):
    import json

    first = tmp_path / "h100.json"
    first.write_text(Path("tests/data/h100/v1-matmul.json").read_text())
    other = json.loads(first.read_text())  # schema 1: one "gpu"
    other["gpu"]["name"] = "NVIDIA H200"
    second = tmp_path / "h200.json"
    second.write_text(json.dumps(other))
    db = tmp_path / "h.db"
    assert invoke("import", first, second, "--db", db).exit_code == 0
    monkeypatch.setenv("CUDABENCH_WIDE", "1")
    result = invoke("show", "--db", db)
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "matmul/naive" in line]
    assert len(rows) == 2 and {"H100 80GB HBM3" in rows[0], "H100 80GB HBM3" in rows[1]} == {
        True, False}
    assert any(" H200 " in row for row in rows)


def test_the_gpu_filter_takes_the_model_as_the_tables_show_it(tmp_path):
    db = tmp_path / "h.db"
    assert invoke("import", "tests/data/h100/v1-matmul.json", "--db", db).exit_code == 0
    for name in ("H100 80GB HBM3", "NVIDIA H100 80GB HBM3"):
        shown = invoke("show", "--db", db, "--gpu", name)
        assert shown.exit_code == 0 and "matmul/naive" in shown.stdout, (name, shown.stderr)
    missed = invoke("show", "--db", db, "--gpu", "H100")  # a model, not a part of one
    assert missed.exit_code == 2 and "--gpu" in missed.stderr


def test_a_gzip_compressed_results_file_is_recorded_and_checked(tmp_path):
    import gzip

    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(make_run(tmp_path, 1).read_bytes()))
    db = tmp_path / "h.db"
    result = invoke("import", packed, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "recorded as run 1" in result.stdout
    assert invoke("check", packed, "--db", db).exit_code == 0


# the L2 flush -----------------------------------------------------------------------------


def cleaned(path: Path, factor: float = 1.0) -> Path:
    """Mark a run's cold rows as measured after the clean flush, times scaled by factor."""
    document = json.loads(path.read_text(encoding="utf-8"))
    for bench in document["benchmarks"]:
        bench["l2_flush"] = "" if bench["hot"] else "clean"
        bench["samples_s"] = [s * factor for s in bench["samples_s"]]
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_benchmark_after_another_flush_has_a_history_of_its_own(tmp_path):
    # Ten memset runs, then one clean run 5% faster (a read-only kernel's flush cost): the
    # clean result's gate and trend are not built from the memset medians.
    db = flat_history(tmp_path, runs=10)
    clean = cleaned(make_run(tmp_path / "runs", 10), 0.95)
    import_runs(db, [clean])
    result = next(r for r in load_results(clean).benchmarks if r.variant == "tiled")
    assert result.l2_flush == "clean"
    with Store.open(db) as store:
        _, source = auto_threshold(store, result, "NVIDIA H100 80GB HBM3")
        assert source == "floor 2%: only 1 run in history (auto needs 5)"
        memset = dataclasses.replace(result, l2_flush="memset")
        assert history_runs(auto_threshold(store, memset, "NVIDIA H100 80GB HBM3")[1]) == 10
    shown = invoke("show", "--db", db, "--variant", "tiled")
    assert shown.exit_code == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "(memset flush)" in text and "(clean flush)" in text


def test_a_version_2_store_is_read_as_it_is_and_upgraded_by_a_writer(tmp_path):
    # Version 3 only adds each run's command: readers (show, check, compare's auto
    # threshold) take a version 2 store as it is, with no `missing` verdicts from it.
    db = flat_history(tmp_path, runs=4)
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN command_key")
    conn.execute("ALTER TABLE results DROP COLUMN param_order")  # version 4's
    conn.execute("ALTER TABLE results DROP COLUMN slow_clock_samples_s")  # version 5's
    conn.execute("ALTER TABLE results DROP COLUMN slow_clock_share")
    conn.execute("DROP TABLE cards")  # version 6's
    conn.execute("ALTER TABLE runs DROP COLUMN gate")  # version 8's
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    assert invoke("show", "--db", db).exit_code == 0
    current = edited(make_run(tmp_path, 100, name="cur"), lambda d: d.update(
        benchmarks=[b for b in d["benchmarks"] if b["variant"] != "tiled"]))
    checked = invoke("check", current, "--db", db)
    assert checked.exit_code == 0 and "missing" not in checked.stdout, checked.stdout
    import_runs(db, [make_run(tmp_path, 200, name="new")])  # a writer upgrades it
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
        == (str(SCHEMA_VERSION),)
    conn.close()


def version_1_store(db: Path) -> Path:
    """Write a store of schema version 1 (before the flush was recorded) at db."""
    from cudabench.history.records import APPLICATION_ID
    from cudabench.history.schema import MIGRATIONS

    conn = sqlite3.connect(db)
    MIGRATIONS[0](conn)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute("INSERT INTO runs VALUES (1, 'h', 'old.json', NULL, NULL, NULL, "
                 "'2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00', NULL, NULL, 2)")
    for row_id, hot in ((1, 0), (2, 1)):
        conn.execute("INSERT INTO results VALUES (?, 1, NULL, 'dot', 'bulk', '{}', '[64]', "
                     "'float32', ?, 'variant', 'PASS', 1e-5, '[1e-5]')", (row_id, hot))
    conn.commit()
    conn.close()
    return db


def test_record_upgrades_a_version_1_store_and_refuses_a_read_only_one_before_the_run(
        use_fake, tmp_path, monkeypatch):
    # --record (and calibrate, the API's record()) refused an older store a writer
    # upgrades; a read-only store was found after the whole run was measured
    import helpers

    import cudabench.api as cb

    db = version_1_store(tmp_path / "v1.db")
    quick = ("--size", "64", "--variant", "tiled", "--no-vendor", "--max-time", "0.01")
    done = helpers.invoke("matmul", *quick, "--json", tmp_path / "r.json", "--record",
                          "--db", db)
    assert done.exit_code == 0, done.output
    assert "recorded as run 2" in done.output, done.output
    api_db = version_1_store(tmp_path / "api.db")
    cb.load(tmp_path / "r.json").record(api_db)
    monkeypatch.setattr("cudabench.history.store.is_writable", lambda path: False)
    ran = []
    monkeypatch.setattr("cudabench.cli.commands.run_plans",
                        lambda *args, **kwargs: ran.append(1))
    done = helpers.invoke("matmul", *quick, "--record", "--db", db)
    assert done.exit_code == 2 and "the store is read-only" in done.stderr, done.output
    assert not ran


def test_a_version_1_store_is_upgraded_with_its_rows_flushed_by_memset(tmp_path):
    # A store written before the flush was recorded: its cold rows were all memset-flushed.
    db = version_1_store(tmp_path / "h.db")
    assert_one_line_error(invoke("show", "--db", db), "schema version 1",
                          "history import FILE --db")
    import_runs(db, [cleaned(make_run(tmp_path, 5))])  # a writer upgrades the store
    conn = sqlite3.connect(db)
    flushes = dict(conn.execute("SELECT id, l2_flush FROM results WHERE run_id = 1"))
    new = {row[0] for row in conn.execute("SELECT DISTINCT l2_flush FROM results "
                                          "WHERE run_id != 1 AND hot = 0")}
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    keys = dict(conn.execute("SELECT id, command_key FROM runs"))
    conn.close()
    assert flushes == {1: "memset", 2: ""} and new == {"clean"}
    assert version == (str(SCHEMA_VERSION),) == ("8",)
    assert keys[1] is None and '"matmul"' in keys[2]  # version 3: the command of a new run


def test_a_recorded_slow_run_does_not_let_its_rerun_pass(tmp_path):
    # `--record --check` records a run before it judges it: re-running the failed job must
    # meet the same verdict, not a band widened by the slow run itself.
    db = flat_history(tmp_path, runs=12)
    first = make_run(tmp_path, 100, factors={"tiled": 1.1}, name="slow")
    assert invoke("check", first, "--db", db).exit_code == 1
    import_runs(db, [first])
    again = edited(make_run(tmp_path, 100, factors={"tiled": 1.1}, name="again"),  # the
                   lambda d: d.update(host="another runner"))  # same samples, another file
    result = invoke("check", again, "--db", db)
    assert result.exit_code == 1 and verdicts(result.stdout)["tiled"] == "slower", \
        result.stdout


def test_a_slow_level_is_the_history_only_once_several_commits_hold_it(tmp_path):
    # Re-runs of one slow commit never become the baseline; a level that min_runs runs of
    # 3 commits or more hold is a step the history follows (a slowdown kept on purpose).
    db = flat_history(tmp_path, runs=10)
    reruns = [edited(make_run(tmp_path / "slow", i, factors={"tiled": 1.2}),
                     lambda d: d.update(git_commit=commit_of(50))) for i in range(10, 18)]
    import_runs(db, reruns)
    current = make_run(tmp_path, 100, factors={"tiled": 1.2}, name="current")
    with Store.open(db) as store:
        row = next(r for r in check(store, load_results(current)).rows
                   if r.benchmark.variant == "tiled")
    assert row.verdict is Verdict.SLOWER and row.runs == 10, row.reason
    assert "8 newer runs since the step" in row.reason
    import_runs(db, [make_run(tmp_path / "kept", i, factors={"tiled": 1.2})
                     for i in range(18, 21)])  # 3 more commits: 11 runs of 4 commits
    with Store.open(db) as store:
        row = next(r for r in check(store, load_results(current)).rows
                   if r.benchmark.variant == "tiled")
    assert row.verdict is Verdict.SAME and row.runs == 11, row.reason


def slow_reruns(tmp_path: Path, indexes, commit: int = 50) -> list[Path]:
    """Runs of one slow commit (tiled 1.3x), as `--record --check` records them failing."""
    return [edited(make_run(tmp_path / f"slow{commit}", i, factors={"tiled": 1.3}),
                   lambda d: d.update(git_commit=commit_of(commit))) for i in indexes]


def test_a_slow_commit_s_reruns_with_two_normal_commits_between_are_no_level(tmp_path):
    # 5 failed re-runs of slow commit x, then commits a and b back at the old speed, then x
    # again: the level after the step counted 3 commits (x, a, b) and became the history,
    # and the next slow commit passed as `same`. a and b show the old level, not the new.
    db = flat_history(tmp_path, runs=6)
    import_runs(db, slow_reruns(tmp_path, range(6, 11)))
    import_runs(db, [make_run(tmp_path / "back", i) for i in (11, 12)])
    import_runs(db, slow_reruns(tmp_path, [13]))
    current = make_run(tmp_path, 100, factors={"tiled": 1.3}, name="current")
    row = tiled_row(db, current)
    assert row.verdict is Verdict.SLOWER, row.reason


def test_a_slow_commit_re_run_past_the_window_keeps_failing(tmp_path):
    # after --last failed re-runs of one commit no run before the step was left in the
    # window: no step was found, the re-runs were the history, and the next one passed
    db = flat_history(tmp_path, runs=6)
    reruns = slow_reruns(tmp_path, range(6, 30))
    import_runs(db, reruns)
    again = edited(make_run(tmp_path, 100, factors={"tiled": 1.3}, name="again"),
                   lambda d: d.update(git_commit=commit_of(50)))
    for last in ("20", "5"):
        result = invoke("check", again, "--db", db, "--last", last)
        assert result.exit_code == 1 and verdicts(result.stdout)["tiled"] == "slower", \
            result.stdout
    # a slowdown that 3 commits keep is a level the history follows, as before
    import_runs(db, slow_reruns(tmp_path, [30], commit=51) + slow_reruns(tmp_path, [31], 52))
    assert tiled_row(db, again).verdict is Verdict.SAME


def test_a_level_after_a_speedup_is_judged_against_the_speedup_not_older_runs(tmp_path):
    # 15 runs, a speedup held by 5 commits, then 7 commits back at the first speed: the
    # level the last step left is the speedup's; measured against the 15 runs before it,
    # the 7 were "nearer the old level", never a level, and a run at that speed was slower
    db = tmp_path / "h.db"
    runs = [make_run(tmp_path / "runs", i) for i in range(15)]
    runs += [make_run(tmp_path / "runs", i, factors={"tiled": 0.7}) for i in range(15, 20)]
    runs += [make_run(tmp_path / "runs", i) for i in range(20, 27)]
    import_runs(db, runs)
    row = tiled_row(db, make_run(tmp_path, 100, name="current"))
    assert row.verdict is Verdict.SAME, row.reason


def test_a_store_of_one_commit_s_runs_is_read_in_a_bounded_window(tmp_path, monkeypatch):
    # a nightly job on an unchanged commit: the window of one commit's runs grew until it
    # was the whole store, each benchmark's series read and searched for steps (25 s and
    # 6 GB at 10,000 runs)
    from cudabench.history import report

    monkeypatch.setattr(report, "MAX_WINDOW", 40)
    db = tmp_path / "h.db"
    import_runs(db, [edited(make_run(tmp_path / "one", i),
                            lambda d: d.update(git_commit=commit_of(7))) for i in range(60)])
    asked = []
    real = queries_module.SeriesReader.series

    def series(self, *args, last=None, **kwargs):
        asked.append(last)
        return real(self, *args, last=last, **kwargs)

    monkeypatch.setattr(queries_module.SeriesReader, "series", series)
    row = tiled_row(db, make_run(tmp_path, 100, name="current"))
    assert row.verdict is Verdict.SAME, row.reason
    assert max(n for n in asked if n is not None) <= 40, asked


def test_a_median_outside_the_runs_but_not_significant_is_not_called_within_them(tmp_path):
    # the reason read "within the history (p=0.26 >= 0.001, outside the 10 runs)"
    db = tmp_path / "h.db"
    spread = [1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.025, 0.975, 1.0]
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": f})
                     for i, f in enumerate(spread)])
    reasons = {}
    for factor in (1.02, 1.04):
        current = make_run(tmp_path, 100, factors={"tiled": factor}, name=f"current{factor}")
        with Store.open(db) as store:
            found = check(store, load_results(current))
        row = next(r for r in found.rows if r.benchmark.variant == "tiled")
        assert row.verdict is Verdict.SAME, row.reason
        reasons[factor] = row.reason
    assert reasons[1.02].startswith("within the history (") and "inside the 10" in reasons[1.02]
    assert reasons[1.04].startswith("no significant change (") and "outside the 10" in \
        reasons[1.04]


def test_a_row_stripped_of_its_gpu_is_refused_not_passed_ungated(tmp_path):
    # a slowed row with "device": null had no history on GPU "", "too little history, not
    # gated", exit 0; compare refuses such rows
    db = flat_history(tmp_path)
    slow = make_run(tmp_path, 100, factors={"tiled": 1.5}, name="current")
    document = json.loads(slow.read_text(encoding="utf-8"))
    next(r for r in document["benchmarks"] if r["variant"] == "tiled")["device"] = None
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("check", stripped, "--db", db)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith(f"cudabench: error: {stripped}: 1 measured row(s) record "
                                    "no GPU (device null)")
    assert invoke("check", slow, "--db", db).exit_code == 1  # the same run, its GPU named


def test_a_command_whose_history_is_all_on_another_flush_is_refused(tmp_path):
    # the suite's flush changed: history is kept per model and flush, so every row had
    # "too little history, not gated" and a 1.5x slowdown passed
    db = flat_history(tmp_path)  # files of before the flush was recorded: memset
    slow = make_run(tmp_path, 100, factors={"tiled": 1.5}, name="current")
    document = json.loads(slow.read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        row["l2_flush"] = "clean"
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("check", clean, "--db", db)
    assert result.exit_code == 2, result.stdout
    said = " ".join(result.stderr.split())
    assert "last 3 recorded runs on NVIDIA H100 80GB HBM3 followed the memset L2 flush, " \
           "and this file the clean one" in said
    new = invoke("check", clean, "--db", db, "--allow-missing")  # checked as new
    assert new.exit_code == 0 and "too little history" in " ".join(new.stdout.split())
    import_runs(db, [clean])  # recorded: the next check of this flush starts its history
    again = make_run(tmp_path, 101, factors={"tiled": 1.5}, name="again")
    document = json.loads(again.read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        row["l2_flush"] = "clean"
    again.write_text(json.dumps(document), encoding="utf-8")
    assert invoke("check", again, "--db", db).exit_code == 0


@pytest.mark.parametrize("words", [["--l2-flush", "clean"], ["--l2-flush=clean"]])
def test_a_flush_changed_on_the_command_line_is_refused_too(tmp_path, words):
    # --l2-flush on the command line made the command another one, with no recorded runs:
    # the refusal never came and the 1.5x slowdown passed, "too little history"
    db = flat_history(tmp_path)
    slow = make_run(tmp_path, 100, factors={"tiled": 1.5}, name="current")
    document = json.loads(slow.read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        row["l2_flush"] = "clean"
    document["command"] = [*document["command"], *words]
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("check", clean, "--db", db)
    assert result.exit_code == 2, result.stdout
    assert "followed the memset L2 flush, and this file the clean one" in " ".join(
        result.stderr.split())


def test_a_store_with_the_command_and_its_hot_form_judges_each_by_its_own_runs(tmp_path):
    # the hot form's 3 newer runs made the cold command's file "nothing can be judged"
    # ("followed the  L2 flush"), though its own 6 runs were there: a 1.5x slowdown
    # passed as a refusal, exit 2, not 1
    db = flat_history(tmp_path)  # the cold command's runs
    hot = []
    for seed in (200, 201, 202):
        path = make_run(tmp_path, seed, name=f"hot{seed}")
        document = json.loads(path.read_text(encoding="utf-8"))
        document["command"] = [*document["command"], "--hot"]
        for row in document["benchmarks"]:
            row["hot"], row["l2_flush"] = True, ""
        path.write_text(json.dumps(document), encoding="utf-8")
        hot.append(path)
    import_runs(db, hot)
    slow = make_run(tmp_path, 100, factors={"tiled": 1.5}, name="current")
    result = invoke("check", slow, "--db", db)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert verdicts(result.stdout)["tiled"] == "slower"


def test_the_flush_options_are_what_a_command_key_loses_unflushed():
    from cudabench.history.records import command_key, unflushed_key

    key = command_key(["cudabench", "dot", "--hot", "--size", "64", "--l2-flush", "memset",
                       "--l2-flush=clean"])
    assert json.loads(unflushed_key(key)) == ["cudabench", "dot", "--size", "64"]


def test_a_store_shared_by_two_gpu_models_judges_each_against_its_own_runs(tmp_path):
    # two CI runners record into one store: the other model's last 3 runs made this
    # model's file "nothing can be judged" (exit 2), though it had 5 runs of its own
    def on(path: Path, model: str) -> Path:
        document = json.loads(path.read_text(encoding="utf-8"))
        for device in document["devices"]:
            device["name"] = model
        path.write_text(json.dumps(document), encoding="utf-8")
        return path

    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "a", i) for i in range(5)]
                + [on(make_run(tmp_path / "b", i), "NVIDIA H200") for i in range(5, 8)])
    current = make_run(tmp_path, 100, name="current")
    result = invoke("check", current, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "too little history" not in " ".join(result.stdout.split())



def test_show_says_a_newer_run_failed_beside_the_latest_timing(tmp_path):
    # "latest" showed the last passing commit's median, the newer failing run unseen
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "runs", i) for i in range(3)]
                + [make_run(tmp_path / "runs", 3, fail="tiled")])
    result = invoke("show", "--db", db, "--variant", "tiled")
    assert result.exit_code == 0, result.stderr
    assert f"(newer: FAIL at {commit_of(3)[:7]})" in " ".join(result.stdout.split())
    fine = invoke("show", "--db", db, "--variant", "naive")
    assert "newer:" not in fine.stdout
    # a newer SKIP measured nothing: not a failure to name
    skipped = make_run(tmp_path / "runs", 4)
    document = json.loads(skipped.read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        if row["variant"] == "naive":
            row.update(status="SKIP", skipped="needs sm_100", samples_s=[],
                       verification=None, stats=None)
    skipped.write_text(json.dumps(document), encoding="utf-8")
    import_runs(db, [skipped])
    assert "newer:" not in invoke("show", "--db", db, "--variant", "naive").stdout


def tiled_row(db: Path, current: Path):
    """Return check's row for the tiled kernel of current against the store db."""
    with Store.open(db) as store:
        return next(r for r in check(store, load_results(current)).rows
                    if r.benchmark.variant == "tiled")


def test_a_slowdown_after_a_recent_speedup_is_judged_against_the_faster_runs(tmp_path):
    # 8 commits at one speed, a speedup (two runs of one commit, too few to be a level of
    # its own), then a commit that loses most of it: it read `faster -13%` against the old
    # level. A faster level is a stricter baseline, so the newest runs count at once.
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": 1.5}) for i in range(8)])
    fast = [edited(make_run(tmp_path / "fast", i, factors={"tiled": 1.0}),
                   lambda d: d.update(git_commit=commit_of(8))) for i in (8, 9)]
    import_runs(db, fast)
    current = make_run(tmp_path, 100, factors={"tiled": 1.3}, name="current")
    row = tiled_row(db, current)
    assert row.verdict is Verdict.SLOWER, row.reason
    assert "+30" in row.reason and "the 2 newest runs" in row.reason, row.reason
    assert row.runs == 2 and row.change is not None and 0.25 < row.change < 0.35
    # recorded when it failed, its re-run fails too: its own runs never become the baseline
    import_runs(db, [current])
    again = edited(make_run(tmp_path, 100, factors={"tiled": 1.3}, name="again"),
                   lambda d: d.update(host="another runner"))
    assert tiled_row(db, again).verdict is Verdict.SLOWER
    # a run as fast as the newest ones is what it was: faster than the established level
    assert tiled_row(db, make_run(tmp_path, 101, name="kept")).verdict is Verdict.FASTER


def test_losing_a_recent_speedup_fails_until_the_slower_speed_is_a_level(tmp_path):
    # 10 commits at one speed, 4 at a 20% speedup, then commits that lose it: the first
    # failed, was recorded (--record --check), and the next passed against the old level
    db = tmp_path / "h.db"
    factors = [1.0] * 10 + [0.8] * 4
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": f})
                     for i, f in enumerate(factors)])
    verdicts = []
    for index in range(14, 20):
        current = make_run(tmp_path / "lost", index, name=f"lost{index}")
        verdicts.append(tiled_row(db, current).verdict)
        import_runs(db, [current])
    # failing until 5 runs from 3 commits show the slower speed again (a plain step's rule)
    assert verdicts[:5] == [Verdict.SLOWER] * 5, verdicts
    assert verdicts[5] is not Verdict.SLOWER, verdicts


def test_a_slower_mode_of_the_history_is_no_outliers(tmp_path):
    # two runners of one model at other power limits share a store: about a third of the
    # runs 5% slower, across commits. They were "outliers left out", and a run at that
    # speed failed: "+4.1% exceeds the 2.1% threshold ... (7 outliers left out)"
    import random

    chooser = random.Random(3)
    db = tmp_path / "h.db"
    factors = [chooser.choice([1.0, 1.05]) for _ in range(22)]
    assert factors.count(1.05) == 9
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": f})
                     for i, f in enumerate(factors)])
    row = tiled_row(db, make_run(tmp_path, 100, factors={"tiled": 1.05}, name="current"))
    assert row.verdict is not Verdict.SLOWER, row.reason
    # a slowdown beyond both modes still fails
    row = tiled_row(db, make_run(tmp_path, 101, factors={"tiled": 1.3}, name="slow"))
    assert row.verdict is Verdict.SLOWER, row.reason


def test_one_fast_run_is_not_a_level_to_judge_against(tmp_path):
    # a single fast run (a fluke, or a commit measured once) must not fail every normal
    # run after it; two are needed
    db = flat_history(tmp_path, runs=10)
    import_runs(db, [make_run(tmp_path / "fluke", 10, factors={"tiled": 0.8})])
    row = tiled_row(db, make_run(tmp_path, 100, name="current"))
    assert row.verdict is Verdict.SAME, row.reason


def test_a_step_on_top_of_a_drift_that_fills_the_window_is_slower(tmp_path):
    # 20 commits each 1% slower fill the window with one slope: no step or drift is found
    # in it, and the spread of its medians (the slope itself) let a further +10% pass as
    # `noisy`. Noise is how much a run's median moves from the run before, as `auto`'s
    # threshold takes it: a slope is not noise.
    db = tmp_path / "h.db"
    factors = [1.0] * 5 + [1.01 ** k for k in range(1, 21)]
    import_runs(db, [make_run(tmp_path / "runs", i, factors={"tiled": f})
                     for i, f in enumerate(factors)])
    row = tiled_row(db, make_run(tmp_path, 100, factors={"tiled": factors[-1] * 1.10},
                                 name="current"))
    assert row.verdict is Verdict.SLOWER, row.reason


def test_check_of_a_run_that_measured_no_kernel_is_refused(tmp_path):
    # it printed an empty table and "no regression: " and exited 0 where compare refuses
    db = flat_history(tmp_path, runs=6)

    def skip_all(document):
        document["command"] = [*document["command"], "--no-batch"]  # another command: no
        for row in document["benchmarks"]:  # kernel of it is missing
            row.update(status="SKIP", skipped="needs sm_100", samples_s=[],
                       verification=None, stats=None)

    current = edited(make_run(tmp_path, 100, name="current"), skip_all)
    assert_one_line_error(invoke("check", current, "--db", db), str(current),
                          "no kernel was measured", "the gate would judge nothing")
    assert_one_line_error(invoke("check", current, "--db", db), "its 3 kernels are SKIPs")


def test_check_of_a_file_of_vendor_rows_alone_says_so(use_fake, tmp_path):
    # it said "no kernel was measured (every one is a SKIP)": there is no SKIP
    import helpers

    db, run = tmp_path / "h.db", tmp_path / "r.json"
    done = helpers.invoke("matmul", "--size", "64", "--variant", "tiled", "--max-time", "0.01",
                          "--json", run)
    assert done.exit_code == 0, done.output
    import_runs(db, [run])

    def vendor_only(document):
        document["benchmarks"] = [row for row in document["benchmarks"]
                                  if row["kind"] == "vendor"]
        for row in document["benchmarks"]:  # another run, not the recorded one
            row["samples_s"] = [s * 1.001 for s in row["samples_s"]]

    current = edited(tmp_path / "r.json", vendor_only)
    text = assert_one_line_error(invoke("check", current, "--db", db, "--allow-missing"),
                                 f"{current}: no kernel was measured (it holds no kernel row, "
                                 "1 vendor row, which the gate does not judge)",
                                 "the gate would judge nothing")
    assert "SKIP" not in text


def test_show_of_a_store_with_no_verified_timing_says_so_not_filters(tmp_path):
    # it said "no recorded run matches the filters (--op, ...)" where none was given
    db = tmp_path / "h.db"
    def fail_all(document):
        for bench in document["benchmarks"]:
            bench["verification"].update(passed=False, bad_elements=7)
            bench["status"] = "FAIL"

    import_runs(db, [edited(make_run(tmp_path / "runs", 0), fail_all)])
    with Store.open(db) as store:
        assert store.counts()["runs"] == 1
    assert_one_line_error(invoke("show", "--db", db),
                          "none of its 1 recorded run has a verified timing to follow")
    assert_one_line_error(invoke("show", "--op", "dot", "--db", db), "matches the filters")


def test_history_show_lists_parameters_in_the_header_s_order(tmp_path):
    # the store keys params sorted (the benchmark's identity): `TILE=.. BLOCK_ROWS=..`
    # read in another order than every run table's
    path = cleaned(make_run(tmp_path, 5))
    document = json.loads(path.read_text(encoding="utf-8"))
    first = next(b for b in document["benchmarks"] if b["kind"] == "variant")
    first["params"] = {"TILE": 16, "BLOCK_ROWS": 8, "GROUP": 1}
    document["benchmarks"] = [first]
    path.write_text(json.dumps(document), encoding="utf-8")
    db = tmp_path / "h.db"
    import_runs(db, [path])
    shown = invoke("show", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "TILE=16 BLOCK_ROWS=8 GROUP=1" in " ".join(shown.stdout.split()), shown.stdout


def test_history_show_lists_parameters_in_the_newest_run_s_order(tmp_path):
    # a header reordered between runs: the store holds both orders, and show took the
    # larger string of the two (the older here), not the order the tables show now
    paths = []
    for index, order in ((5, ("TILE", "BLOCK_ROWS", "GROUP")),
                         (6, ("GROUP", "TILE", "BLOCK_ROWS"))):
        path = cleaned(make_run(tmp_path, index, name=f"run{index}"))
        document = json.loads(path.read_text(encoding="utf-8"))
        first = next(b for b in document["benchmarks"] if b["kind"] == "variant")
        values = {"TILE": 16, "BLOCK_ROWS": 8, "GROUP": 1}
        first["params"] = {name: values[name] for name in order}
        document["benchmarks"] = [first]
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(path)
    db = tmp_path / "h.db"
    import_runs(db, paths[::-1])  # recorded newest first: the runs' times decide
    shown = invoke("show", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "GROUP=1 TILE=16 BLOCK_ROWS=8" in " ".join(shown.stdout.split()), shown.stdout


def test_a_version_3_store_is_read_with_its_parameters_by_name(tmp_path):
    db = flat_history(tmp_path, runs=3)
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE results DROP COLUMN param_order")
    conn.execute("ALTER TABLE results DROP COLUMN slow_clock_samples_s")  # version 5's
    conn.execute("ALTER TABLE results DROP COLUMN slow_clock_share")
    conn.execute("DROP TABLE cards")  # version 6's
    conn.execute("ALTER TABLE runs DROP COLUMN gate")  # version 8's
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    shown = invoke("show", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "TILE=" in shown.stdout


def throttled(path: Path, variant: str, share: float = 0.7) -> Path:
    """Set the given share of variant's samples aside, as a kernel that made the card
    throttle leaves them: 1.6 times as long, below 75% of the maximum SM clock."""
    def edit(document: dict) -> None:
        for bench in document["benchmarks"]:
            if bench["variant"] == variant:
                samples = bench["samples_s"]
                cut = round(len(samples) * (1 - share))
                bench["slow_clock_samples_s"] = [s * 1.6 for s in samples[cut:]]
                bench["samples_s"] = samples[:cut]
    return edited(path, edit)


def test_check_judges_a_kernel_that_newly_throttles_the_card_on_all_its_samples(tmp_path):
    # most samples set aside and the kept few judged: `same`, the throttling unseen
    db = flat_history(tmp_path)
    current = throttled(make_run(tmp_path, 100, name="current"), "tiled")
    done = invoke("check", current, "--db", db)
    assert done.exit_code == 1, (done.stdout, done.stderr)
    assert verdicts(done.stdout)["tiled"] == "slower"
    text = " ".join(done.stdout.split())
    assert "judged on the 14 of 20 samples that ran below 75% of the maximum SM clock (the " \
        "history's runs: at most 0%)" in text
    # a kernel whose runs all set most samples aside (held at its power limit): as before
    always = tmp_path / "always"
    db_always = always / "h.db"
    import_runs(db_always, [throttled(make_run(always / "runs", i), "tiled")
                            for i in range(10)])
    again = invoke("check", throttled(make_run(always, 100, name="current"), "tiled"),
                   "--db", db_always)
    assert again.exit_code == 0, (again.stdout, again.stderr)
    assert "samples that ran below" not in again.stdout
    # judged on its kept samples: the samples set aside are said, as compare says them
    assert "note: matmul/tiled" in again.stdout
    assert "14 of 20 samples of the current run ran below 75% of the maximum SM clock and " \
        "were set aside: judged on the other 6" in " ".join(again.stdout.split())
    assert "note:" not in done.stdout  # judged at the slow clock: the reason says it


def test_check_notes_no_set_aside_samples_where_none_were(tmp_path):
    done = invoke("check", make_run(tmp_path, 100, name="current"), "--db", flat_history(tmp_path))
    assert done.exit_code == 0 and "set aside" not in done.stdout, done.stdout


def test_a_store_without_recorded_clocks_does_not_judge_throttling(tmp_path):
    # a version 4 store recorded no set-aside samples: the history's share is unknown
    db = flat_history(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE results SET slow_clock_samples_s = NULL, slow_clock_share = NULL")
    conn.commit()
    conn.close()
    done = invoke("check", throttled(make_run(tmp_path, 100, name="current"), "tiled"),
                  "--db", db)
    assert "samples that ran below" not in done.stdout and done.exit_code == 0, done.stdout


def kept_slow(path: Path, variant: str = "tiled") -> Path:
    """Make variant's run keep 4 slow samples of 8, as a run does where too few fast ones
    would remain to set them aside: every other one 1.6 times as long, at half the clock."""
    def edit(document: dict) -> None:
        for bench in document["benchmarks"]:
            if bench["variant"] == variant:
                fast = bench["samples_s"][:4]
                bench["samples_s"] = [s for f in fast for s in (f, f * 1.6)]
                bench["sample_clocks_mhz"] = [1980.0, 990.0] * 4
    return edited(path, edit)


def test_a_version_6_store_s_slow_clock_shares_are_not_read(tmp_path):
    # version 6 counted the set-aside samples alone: runs that kept their 4 slow samples of
    # 8 recorded a share of 0, and a check of the same kernel, whose share now counts them,
    # said it newly throttles the card (slower, exit 1)
    db = tmp_path / "h.db"
    import_runs(db, [kept_slow(make_run(tmp_path / "runs", i)) for i in range(6)])
    conn = sqlite3.connect(db)
    conn.execute("UPDATE results SET slow_clock_share = 0.0")  # as version 6 recorded them
    conn.execute("ALTER TABLE runs DROP COLUMN gate")  # version 8's
    conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    conn.commit()
    current = kept_slow(make_run(tmp_path, 100, name="current"))
    done = invoke("check", current, "--db", db)  # read as it is
    assert done.exit_code == 0 and "samples that ran below" not in done.stdout, done.stdout
    import_runs(db, [kept_slow(make_run(tmp_path, 101, name="new"))])  # a writer upgrades it
    shares = dict(conn.execute("SELECT run_id, slow_clock_share FROM results "
                               "WHERE variant = 'tiled'"))
    conn.close()
    assert shares == {**{run: None for run in range(1, 7)}, 7: 0.5}
    done = invoke("check", current, "--db", db)
    assert done.exit_code == 0 and "samples that ran below" not in done.stdout, done.stdout


@pytest.mark.parametrize("value", ["'{{'", "7", "-0.5"])
def test_a_set_aside_share_no_cudabench_wrote_is_a_damaged_store(tmp_path, value):
    db = flat_history(tmp_path, runs=6)
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE results SET slow_clock_share = {value}")
    conn.commit()
    conn.close()
    done = invoke("check", make_run(tmp_path, 50), "--db", db)
    assert_one_line_error(done, str(db), "the history store is damaged",
                          "of samples set aside")


def test_the_detectable_slowdown_is_past_the_threshold_the_gate_also_needs():
    # compare calls a row slower only where its medians' change exceeds the threshold as
    # well: a true slowdown at the threshold is that only half the time, not the 80% said
    from cudabench.history.threshold import smallest_detectable

    for threshold, spread, samples in ((0.05, 0.001, 20), (0.02, 0.01, 20), (0.05, 0.03, 20)):
        detectable = smallest_detectable(threshold, spread, samples)
        assert threshold < detectable < threshold + 4 * spread, (threshold, spread)
    assert smallest_detectable(0.02, 0.0, 20) == 0.02  # no noise: the threshold itself


def test_reruns_of_the_judged_commit_between_others_do_not_raise_the_auto_threshold(tmp_path):
    # 5 runs, then a commit 10% slower re-run twice with a run of another commit after
    # each, as `--record --check` records them: the fast-slow-fast medians read as
    # run-to-run noise, auto's threshold rose to 15%, and the third re-run passed as `same`
    # (history check and compare --threshold auto alike)
    from cudabench.cli.compare import judge

    db = flat_history(tmp_path, runs=5)
    slow = commit_of(50)
    runs = [edited(make_run(tmp_path / "pr", i, factors={"tiled": 1.1}),
                   lambda d: d.update(git_commit=slow)) if i % 2 == 0
            else make_run(tmp_path / "pr", i) for i in range(6, 10)]
    import_runs(db, runs)
    current = edited(make_run(tmp_path, 100, factors={"tiled": 1.1}, name="current"),
                     lambda d: d.update(git_commit=slow))
    row = tiled_row(db, current)
    assert row.verdict is Verdict.SLOWER and row.threshold < 0.05, row
    assert "(2 of this commit" in row.threshold_source, row.threshold_source
    compared = judge(load_results(tmp_path / "runs" / "run-000.json"), load_results(current),
                     db=db)
    tiled = next(r for r in compared.rows if r.variant == "tiled")
    assert tiled.verdict is Verdict.SLOWER and tiled.threshold < 0.05, tiled


def test_three_slow_runs_of_three_commits_between_others_are_no_mode(tmp_path):
    # 5 runs, then slow runs of 3 pull-request commits, each recorded as it failed, with a
    # run of main after each: the 3 were taken as a mode of the history (as two runners
    # at other power limits are), and the next such slowdown was `noisy` and passed, even
    # at --threshold 2%. A mode is an established level: 5 runs from 3 commits.
    db = flat_history(tmp_path, runs=5)
    runs = [make_run(tmp_path / "pr", i, factors={"tiled": 1.1}) if i % 2 == 0
            else make_run(tmp_path / "pr", i) for i in range(6, 12)]
    import_runs(db, runs)
    current = make_run(tmp_path, 100, factors={"tiled": 1.1}, name="current")
    done = invoke("check", current, "--db", db, "--threshold", "2%")
    assert done.exit_code == 1 and verdicts(done.stdout)["tiled"] == "slower", done.stdout
    assert tiled_row(db, current).verdict is Verdict.SLOWER


def test_pushes_that_dropped_a_kernel_do_not_outvote_the_runs_before(tmp_path):
    # each push of a pull request that dropped a kernel is recorded as it fails: the first
    # two outvoted the runs before, and the third passed. They are passed over, as a slow
    # level is, until they are one: 5 runs from 3 commits, the file judged among them.
    db = flat_history(tmp_path, runs=5)

    def drop(document):
        document["benchmarks"] = [b for b in document["benchmarks"] if b["variant"] != "tiled"]

    for push in range(5):
        current = edited(make_run(tmp_path / "pr", 50 + push), drop)
        done = invoke("check", current, "--db", db)
        if push < 4:
            assert done.exit_code == 1 and verdicts(done.stdout)["tiled"] == "missing", \
                (push, done.stdout)
        else:
            assert done.exit_code == 0, done.stdout
        import_runs(db, [current])
    said = " ".join(invoke("check", edited(make_run(tmp_path, 60), drop), "--db", db,
                           "--min-runs", "7").stdout.split())
    assert "measured by 3 of the 3 recorded runs of this command before the 5 newest" in said


def drop_tiled(document: dict) -> None:
    document["benchmarks"] = [b for b in document["benchmarks"] if b["variant"] != "tiled"]


def gates(db: Path) -> dict[str, str | None]:
    """Return each run's recorded gate verdict, by its file's name."""
    conn = sqlite3.connect(db)
    found = {Path(path).name: gate for path, gate in conn.execute(
        "SELECT source_path, gate FROM runs")}
    conn.close()
    return found


def test_pushes_that_failed_the_gate_for_a_dropped_kernel_never_make_the_drop_a_level(
        tmp_path):
    # `--record --check` records each push before it judges it, and the store kept no
    # verdict: pushes that dropped a kernel, each failing as `missing`, were counted as
    # the level of the drop (at --min-runs 3, the third passed)
    db = flat_history(tmp_path, runs=5)
    for push in range(4):
        current = edited(make_run(tmp_path / "pr", 50 + push), drop_tiled)
        import_runs(db, [current])  # recorded, then judged: as --record --check does
        done = invoke("check", current, "--db", db, "--min-runs", "3")
        assert done.exit_code == 1 and verdicts(done.stdout)["tiled"] == "missing", \
            (push, done.stdout)
        assert gates(db)[current.name] == "fail"
    # a drop that is meant is recorded passing, and its runs are then a level
    for push in range(4, 6):
        meant = edited(make_run(tmp_path / "pr", 50 + push), drop_tiled)
        import_runs(db, [meant])
        assert invoke("check", meant, "--db", db, "--min-runs", "3",
                      "--allow-missing").exit_code == 0
        assert gates(db)[meant.name] == "pass"
    done = invoke("check", edited(make_run(tmp_path, 60), drop_tiled), "--db", db,
                  "--min-runs", "3")
    assert done.exit_code == 0, done.stdout
    assert gates(db)["run-000.json"] is None  # imported, never judged


def test_a_store_from_before_verdicts_counts_its_runs_and_a_reader_leaves_it_as_it_is(
        tmp_path):
    # version 8 adds runs.gate: the runs before it were never judged, and count as before
    db = flat_history(tmp_path, runs=5)
    import_runs(db, [edited(make_run(tmp_path / "pr", 50 + push), drop_tiled)
                     for push in range(2)])
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN gate")
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    third = edited(make_run(tmp_path / "pr", 52), drop_tiled)
    done = invoke("check", third, "--db", db, "--min-runs", "3")  # the two pushes a level
    assert done.exit_code == 0, done.stdout
    import_runs(db, [third])  # a writer upgrades the store
    assert gates(db) == {**{f"run-{i:03d}.json": None for i in range(5)},
                         "run-050.json": None, "run-051.json": None, "run-052.json": None}
    done = invoke("check", third, "--db", db, "--min-runs", "3")
    assert done.exit_code == 0, done.stdout
    assert gates(db)["run-052.json"] == "pass"
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN gate")  # read as version 7: nothing written
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    assert invoke("check", third, "--db", db, "--min-runs", "3").exit_code == 0
    assert db.read_bytes() == before


def test_a_verdict_that_cannot_be_recorded_is_a_warning_and_stands(tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    current = edited(make_run(tmp_path / "pr", 50), drop_tiled)
    assert invoke("import", *[make_run(tmp_path / "runs", i) for i in range(5)], current,
                  "--branch", "main", "--db", db).exit_code == 0
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer, in the middle of its transaction
    try:
        done = invoke("check", current, "--db", db)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.exit_code == 1 and verdicts(done.stdout)["tiled"] == "missing", done.output
    assert done.stderr.startswith("warning: the verdict on run 6 is not recorded in the "
                                  "store: ") and "locked" in done.stderr, done.stderr
    assert gates(db)[current.name] is None
    # --branch reads the runs through a view of them, which cannot be written
    done = invoke("check", current, "--db", db, "--branch", "main")
    assert done.exit_code == 1 and done.stderr == "", done.output
    assert gates(db)[current.name] == "fail"


def test_check_show_and_auto_read_the_store_in_queries_per_command_not_per_row(
        tmp_path, monkeypatch):
    # each row's series walked every candidate run's rows again, 3 times a row: a
    # 2000-row sweep's check took 59 s on 5 runs, show 34 s, compare --threshold auto 90 s
    from cudabench.cli.compare import judge

    def sweep(sizes: int):
        def edit(document):
            document["benchmarks"] = [{**bench, "shape": [n + k for n in bench["shape"]]}
                                      for k in range(sizes) for bench in document["benchmarks"]]
        return edit

    queries = []
    real = queries_module.Queries._errors

    def counted(self):
        queries.append(1)
        return real(self)

    monkeypatch.setattr(queries_module.Queries, "_errors", counted)
    asked = {}
    for sizes in (2, 20):
        db = tmp_path / f"{sizes}.db"
        import_runs(db, [edited(make_run(tmp_path / str(sizes), i), sweep(sizes))
                         for i in range(5)])
        current = edited(make_run(tmp_path / str(sizes), 100), sweep(sizes))
        queries.clear()
        assert invoke("check", current, "--db", db).exit_code == 0
        assert invoke("show", "--db", db).exit_code == 0
        judge(load_results(tmp_path / str(sizes) / "run-000.json"), load_results(current),
              db=db)
        asked[sizes] = len(queries)
    assert asked[20] == asked[2], asked
    # a store written since reads the run it was given
    extra = make_run(tmp_path, 101)
    with Store.open(tmp_path / "2.db", create=True) as store:
        result = load_results(extra).benchmarks[0]
        assert result.device is not None
        bench, model = Benchmark.of(result), result.device.name
        assert len(store.reader(model).series(bench)) == 5
        store.record(load_results(extra), extra.read_text(encoding="utf-8"))
        assert len(store.reader(model).series(bench)) == 6


def test_the_auto_threshold_leaves_out_nothing_that_leaves_too_few_runs_or_most_of_them():
    # Leaving out the judged commit's runs and the outliers, the threshold fell to the 2%
    # floor where too few runs remained, or where quantised medians made every differing
    # run an outlier: a noisy kernel failed with nothing changed.
    from cudabench.history.records import SeriesPoint
    from cudabench.history.threshold import history_threshold

    def runs(medians, commits=None):
        return [SeriesPoint(i, commits[i] if commits else f"c{i}", f"2026-01-{i + 1:02d}",
                            m, "PASS") for i, m in enumerate(medians)]

    one_far = history_threshold(runs([1.0, 1.06, 0.96, 1.03, 1.5]))  # 4 left: every run
    assert one_far[0] == pytest.approx(0.25) and "left out" not in one_far[1]
    quantised = history_threshold(runs([1.0] * 4 + [1.05, .95, 1.05, .95, 1.0, 1.0]))
    assert quantised[0] > 0.15 and "outlier" not in quantised[1]  # 4 of 10 are the noise
    mostly_judged = history_threshold(runs([1.0, 1.05, .95, 1.02, .98, 1, 1, 1, 1],
                                           ["a", "b", "X", "X", "X", "X", "X", "c", "d"]), "X")
    assert mostly_judged[0] > 0.05 and "this commit" not in mostly_judged[1]
    # still left out where enough remain: a slow commit's re-runs among main's
    slow = history_threshold(runs([1.0, 1.01, 0.99, 1.0, 1.005, 1.1, 1.0, 1.1, 0.995],
                                  ["m1", "m2", "m3", "m4", "m5", "P", "m6", "P", "m7"]), "P")
    assert slow[0] < 0.05 and "2 of this commit left out" in slow[1]


def test_check_on_main_s_history_records_its_verdict_on_another_branch_s_run(tmp_path):
    # --branch main read the runs through a view of main's, where a PR's run is not: its
    # verdict was never recorded, so the PR's failed runs voted a kernel it dropped into
    # the missing-kernel check, and a later main job that dropped it too passed
    db = tmp_path / "h.db"
    assert invoke("import", "--branch", "main", "--db", db,
                  *[make_run(tmp_path / "runs", i) for i in range(5)]).exit_code == 0
    pr = edited(make_run(tmp_path / "pr", 50), drop_tiled)
    assert invoke("import", pr, "--branch", "drop-tiled", "--db", db).exit_code == 0
    done = invoke("check", pr, "--db", db, "--branch", "main")
    assert done.exit_code == 1 and verdicts(done.stdout)["tiled"] == "missing", done.output
    assert "left out of its history" not in done.stdout  # main's history never held it
    assert gates(db)[pr.name] == "fail"


def test_a_run_stopped_before_its_first_row_fails_the_check_as_compare_fails_it(tmp_path):
    # refused as "holds no benchmarks (its run measured nothing)", exit 2, where compare
    # judges the same file incomplete: a failed gate, exit 1
    db = tmp_path / "h.db"
    import_runs(db, [make_run(tmp_path / "runs", i) for i in range(3)])
    document = json.loads(make_run(tmp_path, 9, name="stopped").read_text(encoding="utf-8"))
    document.update(benchmarks=[], devices=[], complete=False)
    stopped = tmp_path / "stopped.json"
    stopped.write_text(json.dumps(document), encoding="utf-8")
    done = invoke("check", stopped, "--db", db)
    assert done.exit_code == 1, done.stderr
    assert "stopped.json is incomplete (its run stopped before its last row): it fails the " \
        "gate" in " ".join(done.stderr.split())
    document["complete"] = True  # a whole run that measured nothing: nothing to judge
    stopped.write_text(json.dumps(document), encoding="utf-8")
    assert_one_line_error(invoke("check", stopped, "--db", db), "holds no benchmarks")
