"""--keep-workers on one host: a GPU worker kept across commands (runner/kept_worker.py),
driven through the CLI on the fake engine, its process and socket real."""

from __future__ import annotations

import os
import time
from pathlib import Path

# Imported before the pytester session below (an in-process session drops the modules it
# imported, and NumPy cannot be imported twice in one process).
import numpy  # noqa: F401
import pytest
from helpers import invoke

import cudabench.api  # noqa: F401
import cudabench.cli.commands  # noqa: F401
from cudabench.engines.fake_engine import FAKE_DEVICE
from cudabench.results import Status, load_results

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent
QUICK = ("--warmup", "0", "--max-time", "0.02", "--no-batch")


@pytest.fixture
def kept(monkeypatch, tmp_path):
    """A private socket folder for the test's kept workers, all of them ended after it;
    the workers import the tests' fake specs."""
    import shutil
    import tempfile

    from cudabench.runner import kept_worker

    runtime = Path(tempfile.mkdtemp(prefix="cbk-", dir="/tmp"))  # short: a socket's path
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    yield kept_worker
    kept_worker.stop_all()
    shutil.rmtree(runtime, ignore_errors=True)


def recording(monkeypatch, tmp_path):
    from ray_specs import EnvironmentRecordingSpec

    spec = EnvironmentRecordingSpec(out_dir=str(tmp_path))
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: spec)


def opened(tmp_path: Path) -> set[str]:
    """The engines opened so far: one file per worker process (its pid in the name)."""
    return {p.name for p in tmp_path.glob("env-*.json")}


def test_the_next_command_runs_on_the_kept_worker(kept, monkeypatch, tmp_path):
    recording(monkeypatch, tmp_path)
    first = invoke("dot", "--size", "1000,3", "--keep-workers", "60", *QUICK,
                   "--json", tmp_path / "a.json")
    assert first.exit_code == 0, first.stderr
    assert len(opened(tmp_path)) == 1
    assert list(kept.socket_folder().glob("worker-*.sock"))  # it outlived the command
    second = invoke("matmul", "--size", "33", "--keep-workers", "60", *QUICK,
                    "--json", tmp_path / "b.json")
    assert second.exit_code == 0, second.stderr
    assert len(opened(tmp_path)) == 1  # no engine opened again
    rows = load_results(tmp_path / "b.json").benchmarks
    assert rows and all(r.status in (Status.PASS, Status.REF, Status.SKIP) for r in rows)
    assert {r.op for r in rows} == {"matmul"}  # this command's plans, not the last one's
    # Without the flag: a worker of the command's own, which ends with it.
    third = invoke("dot", "--size", "1000", *QUICK, "--json", tmp_path / "c.json")
    assert third.exit_code == 0, third.stderr
    assert len(opened(tmp_path)) == 2


def test_a_kept_worker_ends_after_its_idle_time(kept, use_fake, tmp_path):
    done = invoke("dot", "--size", "1000", "--keep-workers", "0.5", *QUICK)
    assert done.exit_code == 0, done.stderr
    deadline = time.monotonic() + 15
    while list(kept.socket_folder().glob("worker-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(kept.socket_folder().glob("worker-*.sock")), "it outlived its idle time"


def test_a_kept_worker_that_ends_leaves_no_file(kept, use_fake, tmp_path):
    # its worker-*.lock (which commands take to find or start it) stayed, one per worker
    # ever kept
    done = invoke("dot", "--size", "1000", "--keep-workers", "0.5", *QUICK)
    assert done.exit_code == 0, done.stderr
    deadline = time.monotonic() + 15
    while list(kept.socket_folder().glob("worker-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(kept.socket_folder().glob("worker-*"))
    done = invoke("dot", "--size", "1000", "--keep-workers", "60", *QUICK)
    assert done.exit_code == 0 and list(kept.socket_folder().glob("worker-*.lock"))
    assert kept.stop_all() == 1 and not list(kept.socket_folder().glob("worker-*"))


def test_a_kept_worker_that_hangs_is_killed_and_the_rest_run_in_a_fresh_one(
        kept, use_fake, tmp_path):
    from cudabench.engines.fake_engine import Fault

    use_fake(faults={"tiled": Fault.HANGS})
    out = tmp_path / "r.json"
    done = invoke("matmul", "--size", "20", "--keep-workers", "60", "--timeout", "1.5",
                  *QUICK, "--json", out)
    assert done.exit_code == 3, done.stderr
    statuses = {r.variant: r.status for r in load_results(out).benchmarks}
    assert statuses["tiled"] is Status.TIMEOUT and statuses["naive"] is Status.PASS
    assert statuses["tiled_conflict"] is Status.PASS  # after it, in a fresh kept worker
    use_fake()
    again = invoke("matmul", "--size", "20", "--keep-workers", "60", *QUICK)
    assert again.exit_code == 0, again.stderr


def test_a_faulting_kernel_ends_the_kept_worker_and_the_next_command_starts_one(
        kept, use_fake, monkeypatch, tmp_path):
    from cudabench.engines.fake_engine import Fault

    use_fake(faults={"naive": Fault.FAULT})
    out = tmp_path / "r.json"
    done = invoke("matmul", "--size", "33", "--keep-workers", "60", *QUICK, "--json", out)
    assert done.exit_code == 3, done.stderr
    statuses = {r.variant: r.status for r in load_results(out).benchmarks}
    assert statuses["naive"] is Status.FAIL and statuses["tiled"] is Status.PASS
    recording(monkeypatch, tmp_path)  # another engine: another kept worker
    assert invoke("dot", "--size", "100", "--keep-workers", "60", *QUICK).exit_code == 0
    assert len(opened(tmp_path)) == 1


def test_two_commands_at_once_share_one_kept_worker(kept, monkeypatch, tmp_path):
    """They run one after the other on it (their measurements never overlap)."""
    import subprocess
    import sys

    main = ("import sys\nimport cudabench.cli.commands as c\nfrom ray_specs import "
            "EnvironmentRecordingSpec as S\nspec = S(out_dir=sys.argv[1])\n"
            "c.engine_spec = lambda device: spec\nfrom cudabench.cli import cli\n"
            "sys.exit(cli.main(sys.argv[2:]))\n")
    command = [sys.executable, "-c", main, str(tmp_path), "dot", "--size", "1000,2000",
               "--keep-workers", "60", *QUICK, "--quiet"]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    assert len(opened(tmp_path)) == 1


def test_a_bad_keep_workers_value_is_a_usage_error(use_fake):
    for value in ("-1", "nan", "abc", "1e9"):
        done = invoke("dot", "--size", "100", "--keep-workers", value)
        assert done.exit_code == 2, (value, done.stderr)
        assert "--keep-workers" in done.stderr


def test_cudabench_keep_workers_keeps_them_without_the_flag(kept, monkeypatch, tmp_path):
    recording(monkeypatch, tmp_path)
    monkeypatch.setenv("CUDABENCH_KEEP_WORKERS", "60")
    first = invoke("dot", "--size", "1000", *QUICK)
    assert first.exit_code == 0, first.stderr
    assert list(kept.socket_folder().glob("worker-*.sock"))  # it outlived the command
    second = invoke("matmul", "--size", "33", *QUICK)
    assert second.exit_code == 0, second.stderr
    assert len(opened(tmp_path)) == 1
    # The flag wins, 0 included: a worker of the command's own.
    third = invoke("dot", "--size", "1000", "--keep-workers", "0", *QUICK)
    assert third.exit_code == 0, third.stderr
    assert len(opened(tmp_path)) == 2


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "1e9", "inf"])
def test_a_bad_cudabench_keep_workers_is_a_usage_error_naming_it(use_fake, monkeypatch,
                                                                  value):
    from cudabench.cli.early import early_keep

    monkeypatch.setenv("CUDABENCH_KEEP_WORKERS", value)
    done = invoke("dot", "--size", "100", *QUICK)
    assert done.exit_code == 2, done.stderr
    assert f"CUDABENCH_KEEP_WORKERS={value!r}" in done.stderr
    assert "Traceback" not in done.stderr
    assert early_keep(["dot"]) is None  # no early start either: the command says what fails


def test_the_early_start_reads_cudabench_keep_workers(monkeypatch):
    from cudabench.cli.early import early_keep

    monkeypatch.setenv("CUDABENCH_KEEP_WORKERS", "30")
    assert early_keep(["dot"]) == 30.0
    assert early_keep(["dot", "--keep-workers", "0"]) == 0.0  # the flag wins
    monkeypatch.setenv("CUDABENCH_KEEP_WORKERS", " ")
    assert early_keep(["dot"]) == 0.0


def test_the_python_api_keeps_the_worker_between_runs(kept, monkeypatch, tmp_path):
    import cudabench.api as api
    from cudabench.errors import UsageError

    recording(monkeypatch, tmp_path)
    fast = api.TimingPolicy(warmup_s=0.0, min_samples=5, max_time_s=0.02)
    first = api.run("dot", size=1000, timing=fast, batch=False, keep_workers=60)
    second = api.run("matmul", variants=["tiled"], size=48, timing=fast, batch=False,
                     keep_workers=60, json=tmp_path / "r.json")
    assert not first.failures and not second.failures
    assert len(opened(tmp_path)) == 1
    assert "--keep-workers" in load_results(tmp_path / "r.json").metadata["command"]
    for bad in (-1, float("nan"), "60", True):
        with pytest.raises(UsageError, match="keep_workers"):
            api.run("dot", size=1000, keep_workers=bad)


def test_a_pytest_session_starts_its_worker_once(kept, monkeypatch, tmp_path, pytester):
    recording(monkeypatch, tmp_path)
    pytester.makepyfile(test_project='''
import pytest
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=5, max_time_s=0.02)


@pytest.mark.parametrize("size", [32, 48, 64])
def test_tiled(cudabench, size):
    cudabench.run("matmul", variants=["tiled"], size=size, vendor=False, batch=False,
                  timing=FAST)
''')
    done = pytester.runpytest("--cudabench-keep-workers", "60")
    done.assert_outcomes(passed=3)
    assert len(opened(tmp_path)) == 1


def test_another_visible_gpu_gets_a_worker_of_its_own(kept, monkeypatch):
    """A worker kept while CUDA_VISIBLE_DEVICES showed one GPU never serves a command
    whose shell shows another: its socket is another."""
    from cudabench.engines.fake_engine import FakeSpec

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    first = kept.address_of(FakeSpec(), {}, None)
    monkeypatch.setenv("COLUMNS", "123")  # the terminal's: the same worker
    assert kept.address_of(FakeSpec(), {}, None) == first
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert kept.address_of(FakeSpec(), {}, None) != first
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert kept.address_of(FakeSpec(), {}, None) == first
    # the op files a command loaded: each new set of them started another worker
    monkeypatch.setenv("CUDABENCH_OP_FILES", '{"cudabench.ops.user.x_0": "/x.py"}')
    assert kept.address_of(FakeSpec(), {}, None) == first


def test_a_variable_only_the_command_reads_finds_the_same_worker(kept, monkeypatch):
    """The table's width, the history store and the keep time (flag or variable) are the
    command's: a shell that sets one reuses the worker another shell kept (a second worker
    held a CUDA context and measured beside the first on one GPU); the cache folder, which
    the worker compiles into, is its own."""
    from cudabench.engines.fake_engine import FakeSpec

    for name in ("CUDABENCH_WIDE", "CUDABENCH_HISTORY_DB", "CUDABENCH_KEEP_WORKERS",
                 "CUDABENCH_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    first = kept.address_of(FakeSpec(), {}, None)  # --keep-workers 300
    monkeypatch.setenv("CUDABENCH_KEEP_WORKERS", "300")
    assert kept.address_of(FakeSpec(), {}, None) == first
    monkeypatch.setenv("CUDABENCH_KEEP_WORKERS", "600")
    monkeypatch.setenv("CUDABENCH_WIDE", "1")
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", "/tmp/h.db")
    assert kept.address_of(FakeSpec(), {}, None) == first
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", "/tmp/elsewhere")
    assert kept.address_of(FakeSpec(), {}, None) != first


def test_every_cudabench_variable_is_sorted_for_the_kept_worker(kept):
    """Each CUDABENCH_ variable the code names is either the command's alone (left out of
    the worker's address) or one this list knows the worker reads: a new one is sorted."""
    import re

    read_by_worker = {"CUDABENCH_CACHE_DIR", "CUDABENCH_RELOCATED"}
    code = "".join(path.read_text() for path in (TESTS.parent / "cudabench").rglob("*.py"))
    named = set(re.findall(r"\bCUDABENCH_[A-Z_]*[A-Z]", code))
    assert named - kept.COMMAND_ONLY - read_by_worker == set()


@pytest.mark.parametrize("in_helper", [False, True], ids=["op-file", "helper-module"])
def test_an_edited_op_file_is_loaded_afresh_by_the_kept_worker(kept, use_fake, tmp_path,
                                                                in_helper):
    """The kept worker imported the user's op file (and the helper modules it imports) for
    the first command; the second command, after an edit, must use the edit."""
    from test_op_plugins import an_edit_reaches_the_next_command

    an_edit_reaches_the_next_command(tmp_path, "--keep-workers", "60", *QUICK,
                                     in_helper=in_helper)


def test_a_kept_worker_ends_when_its_command_is_killed_mid_batch(kept, use_fake, tmp_path):
    """Killed while its kernel hangs, a command leaves nobody to kill the worker: it ends
    itself, and the next command starts a fresh one."""
    import signal
    import subprocess
    import sys

    main = ("import sys\nimport cudabench.cli.commands as c\n"
            "from cudabench.engines.fake_engine import FakeSpec, Fault\n"
            "spec = FakeSpec(faults={'naive': Fault.HANGS})\n"
            "c.engine_spec = lambda device: spec\nfrom cudabench.cli import cli\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")
    command = subprocess.Popen([sys.executable, "-c", main, "matmul", "--size", "20",
                                "--variant", "naive", "--keep-workers", "60", "--timeout",
                                "300", *QUICK, "--quiet"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    folder = kept.socket_folder()
    deadline = time.monotonic() + 30
    while not list(folder.glob("worker-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2.0)  # the hanging launch has begun
    command.send_signal(signal.SIGKILL)
    command.wait(timeout=10)
    deadline = time.monotonic() + 15
    while list(folder.glob("worker-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(folder.glob("worker-*.sock")), "the worker outlived its killed command"


FAKE_MAIN = ("import sys\nimport cudabench.cli.commands as c\n"
             "from cudabench.engines.fake_engine import FakeSpec, Fault\n"
             "spec = FakeSpec(faults={'naive': Fault.HANGS})\n"
             "c.engine_spec = lambda device: spec\nfrom cudabench.cli import cli\n"
             "sys.exit(cli.main(sys.argv[2:]))\n")


def test_a_command_queued_behind_one_that_times_out_is_not_harmed(kept, tmp_path):
    """A's kernel hangs and A kills the shared worker at its timeout; B, waiting its turn
    on that worker, starts another and measures every row (no ERROR row from A's fault).
    Both open the same engine (a fake whose `naive` hangs; B runs a dot, which has no
    `naive`), so they meet at one worker."""
    import subprocess
    import sys

    def command(kind: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", FAKE_MAIN, kind, *args,
                                 "--keep-workers", "60", *QUICK, "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = command("hang", "matmul", "--size", "20", "--variant", "naive", "--timeout", "3")
    time.sleep(1.5)  # A holds the worker, its kernel hanging
    second = command("ok", "dot", "--size", "1000", "--json", str(tmp_path / "b.json"))
    out_b, err_b = second.communicate(timeout=120)
    out_a, err_a = first.communicate(timeout=120)
    assert first.returncode == 3 and "TIMEOUT" in out_a, err_a
    assert second.returncode == 0, err_b
    rows = load_results(tmp_path / "b.json").benchmarks
    assert rows and all(r.status in (Status.PASS, Status.REF) for r in rows), rows


def test_a_row_whose_kept_worker_workers_stop_ended_says_so(kept, tmp_path):
    """`cudabench workers --stop` from another terminal ended the worker of a running
    command: its row's ERROR said "died (exit code unknown: a kept worker)"."""
    import subprocess
    import sys

    command = subprocess.Popen([sys.executable, "-c", FAKE_MAIN, "hang", "matmul", "--size",
                                "20", "--variant", "naive", "--timeout", "300",
                                "--keep-workers", "60", *QUICK, "--quiet"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = kept.socket_folder()
    deadline = time.monotonic() + 30
    while not list(folder.glob("worker-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2.0)  # the hanging launch has begun
    stopped = invoke("workers", "--stop")
    assert stopped.exit_code == 0 and "ended 1 kept worker" in stopped.stdout
    out, err = command.communicate(timeout=60)
    assert command.returncode == 2, err
    assert "ended by `cudabench workers --stop`" in out + err, out + err
    assert "exit code unknown" not in out + err


def test_a_connection_with_a_wrong_key_does_not_stop_the_kept_worker(kept, use_fake):
    from multiprocessing import AuthenticationError
    from multiprocessing.connection import Client

    assert invoke("dot", "--size", "1000", "--keep-workers", "60", *QUICK).exit_code == 0
    (address,) = kept.socket_folder().glob("worker-*.sock")
    with pytest.raises((AuthenticationError, EOFError, OSError)):
        Client(str(address), "AF_UNIX", authkey=b"not the key")
    started = time.monotonic()
    again = invoke("dot", "--size", "1000", "--keep-workers", "60", *QUICK)
    assert again.exit_code == 0, again.stderr
    assert time.monotonic() - started < 20
    assert list(kept.socket_folder().glob("worker-*.sock")) == [address]  # the same one


def gone_within(kept, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while list(kept.socket_folder().glob("worker-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not list(kept.socket_folder().glob("worker-*.sock"))


def test_a_usage_error_ends_the_kept_worker_its_command_started(kept, use_fake):
    # the worker starts before the command's plans are made (prestart): a refused command
    # left it holding a GPU context for the whole --keep-workers time, with nothing run
    refused = invoke("matmul", "--size", "33", "--tile", "7", "--keep-workers", "600", *QUICK)
    assert refused.exit_code == 2 and "TILE in 8, 16, 32" in refused.stderr, refused.output
    assert gone_within(kept, 15), "a refused command's kept worker stayed"
    # one kept by an earlier command stays kept for the next
    assert invoke("dot", "--size", "1000", "--keep-workers", "600", *QUICK).exit_code == 0
    refused = invoke("matmul", "--size", "33", "--tile", "7", "--keep-workers", "600", *QUICK)
    assert refused.exit_code == 2, refused.output
    assert not gone_within(kept, 2)
    assert len(kept.describe()) == 1


def test_the_workers_command_lists_and_ends_kept_workers(kept, use_fake):
    assert invoke("dot", "--size", "1000", "--keep-workers", "60", *QUICK).exit_code == 0
    ((_, pid, holding, gpu),) = kept.describe()
    assert holding == 0  # nobody served or waiting (the asking connection left out)
    assert gpu == f"GPU 0 ({FAKE_DEVICE.name})"
    listed = invoke("workers")
    assert listed.exit_code == 0, listed.stderr
    assert str(pid) in listed.stdout and "kept GPU workers" in listed.stdout
    stopped = invoke("workers", "--stop")
    assert stopped.exit_code == 0 and "ended 1 kept worker" in stopped.stdout
    assert not list(kept.socket_folder().glob("worker-*"))  # its lock file too
    again = invoke("workers")
    assert again.exit_code == 0 and "no kept workers" in again.stdout


def test_the_workers_command_counts_only_the_commands_there(kept, tmp_path):
    """Each listing's own connection, closed, stayed queued behind a hanging command and
    was counted by the next: 1, 2, 3, 4 commands "running or waiting" where one was."""
    import subprocess
    import sys

    hanging = subprocess.Popen([sys.executable, "-c", FAKE_MAIN, "hang", "matmul", "--size",
                                "20", "--variant", "naive", "--timeout", "300",
                                "--keep-workers", "60", *QUICK, "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                gpu.startswith("GPU") for _, _, _, gpu in kept.describe()):
            time.sleep(0.2)  # until the worker opened its engine for the command
        time.sleep(1.0)  # its kernel hangs
        counts = [[holding for _, _, holding, _ in kept.describe()] for _ in range(4)]
        assert counts == [[1]] * 4, counts
    finally:
        hanging.kill()
        hanging.wait(timeout=10)


def test_the_workers_command_forgets_a_waiting_command_that_was_killed(kept, tmp_path):
    """A command waiting behind a hanging one, then killed, was counted until the hanging
    one ended: its first message, unread, hid its closed end from the worker."""
    import subprocess
    import sys

    def command(kind: str, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", FAKE_MAIN, kind, *args,
                                 "--keep-workers", "60", *QUICK, "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def holding_within(count: int, seconds: float) -> list[int]:
        deadline = time.monotonic() + seconds
        while True:
            counts = [holding for _, _, holding, gpu in kept.describe() if gpu.startswith("GPU")]
            if counts == [count] or time.monotonic() > deadline:
                return counts
            time.sleep(0.2)

    hanging = command("hang", "matmul", "--size", "20", "--variant", "naive", "--timeout", "300")
    waiting = None
    try:
        assert holding_within(1, 60) == [1]  # the worker opened its engine for it
        waiting = command("ok", "dot", "--size", "1000")
        assert holding_within(2, 60) == [2]  # it waits its turn
        waiting.kill()
        waiting.wait(timeout=10)
        assert holding_within(1, 10) == [1]
    finally:
        for process in (hanging, waiting):
            if process is not None:
                process.kill()
                process.wait(timeout=10)


def test_a_closed_end_with_a_message_unread_is_hung_up(kept):
    # both the waiting queue and a batch's watch ask this: a message the command sent
    # before it went, unread, hid its close
    import socket

    worker, command = socket.socketpair()
    with worker:
        assert not kept._hung_up(worker.fileno())
        command.sendall(b"keep")
        assert not kept._hung_up(worker.fileno())
        command.close()
        assert kept._hung_up(worker.fileno())


def test_the_workers_command_says_which_gpu_each_kept_worker_holds(kept, use_fake):
    # two kept workers of `--devices all` were listed by socket and pid alone
    use_fake(device_count=2)
    done = invoke("dot", "--size", "1000", "--devices", "all", "--replicate", "--keep-workers",
                  "60", *QUICK)
    assert done.exit_code == 0, done.output
    held = sorted(gpu for _, _, _, gpu in kept.describe())
    assert held == [f"GPU 0 ({FAKE_DEVICE.name}); CUDA_VISIBLE_DEVICES=0",
                    f"GPU 1 ({FAKE_DEVICE.name}); CUDA_VISIBLE_DEVICES=1"], held
    listed = invoke("workers")
    assert "GPU" in listed.stdout and "CUDA_VISIBLE_DEVICES=1" in " ".join(listed.stdout.split())


def test_a_kept_worker_whose_key_was_replaced_is_started_afresh(kept, monkeypatch, tmp_path):
    # a key that no longer matches: AuthenticationError was an internal error (exit 4) in
    # every later command and in `cudabench workers`
    recording(monkeypatch, tmp_path)
    # kept 5 s: once its key is replaced nothing can reach it to stop it, so it ends idle
    first = invoke("dot", "--size", "1000", "--keep-workers", "5", *QUICK)
    assert first.exit_code == 0, first.stderr
    (key,) = kept.socket_folder().glob("worker-*.key")
    key.write_bytes(b"garbage" * 5)
    listed = invoke("workers")
    assert listed.exit_code == 0, listed.output
    again = invoke("dot", "--size", "1000", "--keep-workers", "60", *QUICK)
    assert again.exit_code == 0, again.stderr
    assert len(opened(tmp_path)) == 2  # a worker of its own, started afresh


def test_a_kept_workers_folder_it_may_not_use_is_a_usage_error(monkeypatch, tmp_path):
    import shutil
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="cbk-", dir="/tmp"))  # short: a longer one is
    try:  # passed over for /tmp/cudabench-UID (a socket's path must fit 107 bytes)
        (runtime / "cudabench").symlink_to(tmp_path)  # a link planted where the folder goes
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        done = invoke("workers")
        assert done.exit_code == 2, done.output
        assert "the kept workers' folder:" in done.stderr and "is a link or another user's" \
            in done.stderr and len(done.stderr.strip().splitlines()) == 1
        # a file where the folder goes: "[Errno 17] File exists", XDG_RUNTIME_DIR unnamed
        (runtime / "cudabench").unlink()
        (runtime / "cudabench").write_text("")
        done = invoke("workers")
        assert done.exit_code == 2 and "File exists" in done.stderr, done.output
        assert "set XDG_RUNTIME_DIR to a folder of your own" in " ".join(done.stderr.split())
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_run_where_no_worker_can_be_kept_says_so_once_and_runs(use_fake, monkeypatch,
                                                                   tmp_path):
    # keeping is a saving, never a reason to fail: the run goes on with a plain worker,
    # but it said nothing, and the user waited for a kept worker that never was
    import shutil
    import tempfile

    from cudabench.runner import kept_worker

    monkeypatch.setattr(kept_worker, "_SAID", set())
    runtime = Path(tempfile.mkdtemp(prefix="cbk-", dir="/tmp"))
    try:
        (runtime / "cudabench").symlink_to(tmp_path)  # a folder it may not use
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        done = invoke("dot", "--size", "1000,2000", "--keep-workers", "60", *QUICK,
                      "--json", tmp_path / "r.json")
        assert done.exit_code == 0, done.stderr
        said = [line for line in done.stderr.splitlines() if "--keep-workers" in line]
        assert len(said) == 1, done.stderr
        assert "no GPU worker is kept" in said[0] and "is a link" in said[0], said
        assert load_results(tmp_path / "r.json").benchmarks
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_abandoning_a_kept_worker_that_serves_another_command_lets_it_be():
    # Ctrl-C of a command waiting its turn on several GPUs SIGKILLed the kept worker that
    # was serving another command: its run lost a row ("worker process died"), exit 2
    from pathlib import Path

    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner.kept_worker import KeptWorker

    class Process:
        killed = False

        def kill(self):
            self.killed = True

    class Connection:
        closed = False

        def close(self):
            self.closed = True

    worker = KeptWorker(FakeSpec(), [], 60.0)
    process, connection = Process(), Connection()
    worker._address, worker._process, worker._messages = Path("kept"), process, connection
    worker.abandon()  # not yet serving this command: let go of, never killed
    assert connection.closed and not process.killed
    worker._served = True  # serving this command (stuck in its kernel): ended
    worker.abandon()
    assert process.killed


def test_a_relative_xdg_runtime_dir_is_ignored(monkeypatch, tmp_path):
    # the XDG spec: a relative path is ignored; used as given, each working folder had a
    # socket folder (and its kept workers) of its own, made inside the user's project
    import tempfile

    from cudabench.runner.kept_worker import socket_folder

    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", "run")
    assert socket_folder() == Path(tempfile.gettempdir()) / f"cudabench-{os.getuid()}"
    assert not (tmp_path / "run" / "cudabench").exists()
