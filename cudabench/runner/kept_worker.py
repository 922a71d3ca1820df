"""A GPU worker kept across commands (--keep-workers SECONDS on one host).

A run's worker takes about a second to be ready (its interpreter, NumPy, PyCUDA, the CUDA
context, CuPy for a vendor row) and ends with the command. A kept worker is a process of
its own session that serves one command after another over a Unix socket: the next
command on the same GPU, engine, environment and cudabench code connects to it instead of
starting one. It is the same worker: the command watches it as its own (a job past its
timeout kills it, its row says TIMEOUT and the rest run in a fresh one; after a kernel
fault it ends), it runs one command at a time (a second waits for the first: their
measurements never overlap on the GPU), and it ends itself after SECONDS without one.

Its socket lives in a folder only its user can enter ($XDG_RUNTIME_DIR/cudabench, else
/tmp/cudabench-UID), named by a fingerprint of what it runs; a random key, in a file beside
it that only the user can read, authenticates each connection; what it prints goes to a
.log file beside it (kept where it failed). `cudabench workers` lists them, `--stop` ends
them (cli/kept.py).
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import hashlib
import os
import pickle
import secrets
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from cudabench.ops.folder_imports import INHERITED as OP_FILES
from cudabench.common.fingerprint import code_key
from cudabench.engines.protocol import EngineSpec
from cudabench.ops.registry import forget_file_ops
from cudabench.results.model import BenchmarkResult
from cudabench.runner.workers import Worker, open_engine, serve_batches

CONNECT_WAIT_S = 20.0  # how long a new kept worker may take to listen
HELLO_WAIT_S = 5.0  # how long a listening one may take to answer (else it is ending)
PEER_POLL_S = 0.5  # how often a kept worker looks whether its command is still there
POLL_S = 0.05
INHERITED_PREFIXES = ("CUDA", "CUDABENCH", "NVIDIA", "NV_", "OMP_", "OPENBLAS", "MKL_",
                      "PYCUDA", "CUPY")
INHERITED_NAMES = frozenset({"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "HOME", "TMPDIR",
                             "XDG_CACHE_HOME"})
# The CUDABENCH_ variables the worker never reads: the command's own (its table's width, its
# history store, the keep time: flag or variable) and the op files each command loads afresh
# (ops/folder_imports.INHERITED). Each new value of one started another worker on the same
# GPU. Any other (CUDABENCH_CACHE_DIR, CUDABENCH_RELOCATED) is read by the worker: kept.
COMMAND_ONLY = frozenset({"CUDABENCH_WIDE", "CUDABENCH_HISTORY_DB", "CUDABENCH_KEEP_WORKERS",
                          OP_FILES})
STOPPED_FILE = "stopped-workers"  # the pids `workers --stop` ended, and when
MAX_FOLDER_CHARS = 70  # + "/worker-" + 16 hex digits + ".sock": within AF_UNIX's 107


def socket_folder() -> Path:
    """Return the folder of this user's kept workers' sockets, made private (0700)."""
    runtime = Path(os.environ.get("XDG_RUNTIME_DIR", ""))  # unset: ".", not absolute
    # The XDG spec: a relative path is ignored (it would name a folder per working folder).
    folder = (runtime / "cudabench" if runtime.is_absolute() and runtime.is_dir()
              else Path(tempfile.gettempdir()) / f"cudabench-{os.getuid()}")
    if len(str(folder)) > MAX_FOLDER_CHARS:  # a socket's path must fit 107 bytes
        folder = Path("/tmp") / f"cudabench-{os.getuid()}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = folder.lstat()  # not a link's target: a link planted in /tmp is refused
    if stat.S_ISLNK(status.st_mode) or status.st_uid != os.getuid():
        raise PermissionError(f"{folder} is a link or another user's: set XDG_RUNTIME_DIR")
    os.chmod(folder, 0o700)
    return folder


def address_of(spec: EngineSpec, env: Mapping[str, str], label: int | None) -> Path:
    """Return the socket of the kept worker for what it runs with: cudabench's code, the
    engine, its GPU's label, the Python, the working folder (relative kernel folders
    resolve there) and the environment where it chooses what the worker runs on or with
    (which GPU CUDA_VISIBLE_DEVICES shows, the toolkit on PATH, the compile cache's folder,
    BLAS threads): a command whose shell changed one gets a worker of its own, never one
    that would measure on another GPU. Not those only the command reads (COMMAND_ONLY)."""
    inherited = {name: value for name, value in os.environ.items()
                 if (name.startswith(INHERITED_PREFIXES) or name in INHERITED_NAMES)
                 and name not in COMMAND_ONLY}
    what = pickle.dumps((code_key(), spec, sorted({**inherited, **env}.items()), label,
                         sys.executable, os.getcwd()))
    return socket_folder() / f"worker-{hashlib.sha256(what).hexdigest()[:16]}.sock"


_SAID: set[str] = set()  # notes this process has printed (once each, not every worker)


def _say_once(text: str) -> None:
    """Print a note on stderr, once a process: a run's workers would each say it again."""
    if text not in _SAID:
        _SAID.add(text)
        sys.stderr.write(text + "\n")


class _Gone(Exception):
    """The kept worker ended before it served this command (another command's timeout or
    fault, its idle end): this command starts or finds another, its rows unaffected."""


class KeptWorker(Worker):
    """A Worker whose process outlives the command: connected to where one is kept for
    its engine, environment and code, or started there. Watched as any worker
    while it serves this command: a job past its limit or a fault ends it (the next run
    starts a fresh one). One that ends before it served this command is replaced without
    a trace in the rows."""

    def __init__(self, spec: EngineSpec, plans: Any, keep_s: float,
                 env: Mapping[str, str] | None = None, label: int | None = None) -> None:
        super().__init__(spec, plans, env=env, label=label)
        self.keep_s = keep_s
        self._address: Path | None = None  # None: this process is a plain worker
        self._served = False  # whether the kept process has begun this command's session
        self._plain = False  # keeping failed twice: plain workers from now on
        self._spawned = False  # this command started the kept process
        self._ran = False  # this command sent it work

    def _start(self) -> None:
        """Connect to the kept worker, starting it where there is none (or it is ending);
        where none can be started (no private socket folder), a plain worker, said once in a
        note: keeping is a saving, never a reason for a run to fail."""
        self._served = False
        try:
            if self._plain:
                raise RuntimeError("kept workers ended twice before serving this command")
            self._start_kept()
        except (OSError, RuntimeError) as why:
            self._address = None
            _say_once(f"note: --keep-workers: no GPU worker is kept ({why}); this "
                      "command's worker ends with it")
            super()._start()

    def _start_kept(self) -> None:
        self._has_plans = False
        address = address_of(self.spec, self.env, self.label)
        self._address = address
        # One command at a time finds or starts it: two starting at once start one.
        with _locked(address.with_suffix(".lock")):
            found = _connect(address, wait_s=0.0)
            if found is None:
                _spawn(address, self.spec, self.env, self.label, self.keep_s)
                self._spawned = True
                found = _connect(address, wait_s=CONNECT_WAIT_S)
        if found is None:
            raise RuntimeError(f"the kept worker at {address} did not start")
        connection, pid, _, _ = found
        if self.keep_s:  # this command's --keep-workers: the idle time from now on
            connection.send(("keep", self.keep_s))
        self._messages, self._inbox, self._process = connection, _Connected(connection), _Pid(pid)
        self._heard = True  # it answered: it imported long ago, whatever ends it now

    def run(self, jobs: Any, on_result: Any, on_start: Any = None,
            first: bool = True, hand_back: bool = False) -> list[BenchmarkResult]:
        """Worker.run, starting again (once) where the kept worker ended before it served
        this command."""
        self._ran = True
        for attempt in (1, 2):
            try:
                return super().run(jobs, on_result, on_start, first, hand_back)
            except _Gone:
                pass
            except OSError:  # the connection broke as the batch was sent
                if self._served or self._address is None:
                    raise
                self._drop()
            if attempt == 2:  # two kept workers ended unused: a plain one of this command's
                self._plain = True
        return super().run(jobs, on_result, on_start, first, hand_back)

    def _follow_batch(self, watch: Any, jobs: Any, results: list[BenchmarkResult],
                      on_result: Any, on_start: Any, first: bool) -> tuple[str, bool]:
        def started(versions: Mapping[str, str]) -> None:
            self._served = True
            if on_start is not None:
                on_start(versions)

        served_before = self._served
        reason, keep = super()._follow_batch(watch, jobs, results, on_result, started, first)
        if (reason and not results and not self._served and not served_before
                and self._address is not None):
            raise _Gone(reason)
        return reason, keep

    def close(self, wait: bool = True) -> None:
        """End this command's session; the process stays for the next command, unless
        this command started it and gave it no work (a usage error after the early start,
        cli/early.py): nothing asked for it, and it would hold a GPU context for the
        whole --keep-workers time."""
        if self._address is None:
            super().close(wait)
            return
        if self._process is not None and self._process.is_alive():
            with contextlib.suppress(Exception):
                if self._spawned and not self._ran:  # a later command's own keep wins
                    self._inbox.put(("keep", 0.0))
                self._inbox.put(None)
        self._drop()

    def abandon(self) -> None:
        """Worker.abandon (Ctrl-C on several GPUs, a thread still running after the grace),
        but a kept process that has not begun this command's session serves another
        command: only let go of it (killing it broke that command's run)."""
        if self._address is not None and not self._served:
            with contextlib.suppress(Exception):
                if self._messages is not None:
                    self._messages.close()
            return
        super().abandon()

    def _discard(self) -> None:
        """End the kept process where it is serving this command (it failed, or is stuck in
        a kernel); where it never began to, it serves others: only let go of it."""
        if self._address is None:
            super()._discard()
            return
        if self._process is not None and self._served:
            self._process.kill()
        self._drop()

    def _drop(self) -> None:
        with contextlib.suppress(Exception):
            if self._messages is not None:
                self._messages.close()
        self._process = self._inbox = self._messages = None
        self._has_plans, self._served = False, False


def describe() -> list[tuple[str, int, int, str]]:
    """Return this user's kept workers that answer: (socket, pid, commands it holds, the
    asking one left out, the GPU it holds)."""
    found = []
    for address in sorted(socket_folder().glob("worker-*.sock")):
        answer = _connect(address, wait_s=0.0)
        if answer is not None:
            connection, pid, holding, gpu = answer
            connection.close()
            found.append((str(address), pid, max(0, holding - 1), gpu))
    return found


def stop_all() -> int:
    """End every kept worker of this user now, busy or not, and remove what each left (a
    stale socket's too); return how many answered."""
    found = describe()
    _record_stopped([pid for _, pid, _, _ in found])
    for _, pid, _, _ in found:
        _Pid(pid).kill()
    for address in socket_folder().glob("worker-*.sock"):
        for suffix in (".sock", ".key", ".log"):
            with contextlib.suppress(OSError):
                address.with_suffix(suffix).unlink()
    for lock in socket_folder().glob("worker-*.lock"):
        _remove_lock(lock)
    return len(found)


def _locked(path: Path) -> Any:
    """Return path opened and locked (flock, exclusive), once it is the file path names:
    one removed while this command waited for it (_remove_lock) is left for the new one."""
    while True:
        handle = open(path, "a")  # noqa: SIM115 (the caller's `with` closes it)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            held, named = os.fstat(handle.fileno()), os.stat(path)
            if (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino):
                return handle
        except FileNotFoundError:
            pass
        except BaseException:
            handle.close()
            raise
        handle.close()


def _remove_lock(path: Path) -> None:
    """Remove a kept worker's lock file, unless a command holds it now (it is finding or
    starting one): a command waiting for it then takes a new one (_locked)."""
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink()


def _record_stopped(pids: list[int]) -> None:
    """Note that `workers --stop` ends these workers now: a command one of them served
    then says who ended its worker (it saw only a process gone). Kept for an hour."""
    if not pids:
        return
    now = time.time()
    lines = [f"{pid} {stamp}" for pid, stamp in _stopped().items() if stamp > now - 3600]
    with contextlib.suppress(OSError):
        (socket_folder() / STOPPED_FILE).write_text(
            "".join(line + "\n" for line in [*lines, *(f"{pid} {now}" for pid in pids)]),
            encoding="utf-8")


def _stopped() -> dict[int, float]:
    """Return the workers `workers --stop` ended in the last hour: pid -> when."""
    found: dict[int, float] = {}
    with contextlib.suppress(OSError, ValueError):
        text = (socket_folder() / STOPPED_FILE).read_text(encoding="utf-8")
        for line in text.splitlines():
            pid, stamp = line.split()
            found[int(pid)] = float(stamp)
    return found


def _connect(address: Path, wait_s: float) -> tuple[Connection, int, int, str] | None:
    """Connect to the kept worker at address and take its hello (its pid, how many
    commands it holds, this one included, and its GPU); None where none answers within
    wait_s."""
    key_file = address.with_suffix(".key")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            connection = Client(str(address), "AF_UNIX", authkey=key_file.read_bytes())
            if connection.poll(HELLO_WAIT_S):
                hello = connection.recv()
                if isinstance(hello, tuple) and hello[0] == "pid":
                    gpu = str(hello[3]) if len(hello) > 3 else "-"  # an older cudabench's
                    return connection, int(hello[1]), int(hello[2]), gpu
            connection.close()  # it is ending: no hello
        except AuthenticationError:  # its key file was replaced: it can never answer us
            return None
        except (OSError, EOFError, ValueError):
            pass  # not listening yet, or gone
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_S)


def _spawn(address: Path, spec: EngineSpec, env: Mapping[str, str], label: int | None,
           keep_s: float) -> None:
    """Start a kept worker in a session of its own (it outlives this command)."""
    with contextlib.suppress(OSError):
        address.unlink()  # a stale socket of one that died
    key = secrets.token_bytes(32)
    key_file = address.with_suffix(".key")
    descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(key)
    with open(address.with_suffix(".log"), "wb") as log:  # why one could not start
        process = subprocess.Popen(
            [sys.executable, "-m", "cudabench.runner.kept_worker"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
            env={**os.environ, **env}, close_fds=True)
    assert process.stdin is not None
    process.stdin.write(pickle.dumps((str(address), key, spec, label, keep_s)))
    process.stdin.close()
    _SPAWNED.append(process)  # reaped by Python, not collected while it runs


_SPAWNED: list[subprocess.Popen[bytes]] = []


class _Connected:
    """Either end of a command's connection, with a queue's put (and the clean-up calls
    Worker makes on its inbox)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def put(self, message: object) -> None:
        self.connection.send(message)

    def cancel_join_thread(self) -> None:
        """A queue's: nothing to cancel."""

    def close(self) -> None:
        self.connection.close()


class _Pid:
    """A process of another session, with the calls the watchdog makes on its worker."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exitcode = "unknown: a kept worker"  # for "died (exit code ...)": not our child
        self.taken = time.time()

    @property
    def ended_by(self) -> str | None:
        """Return who ended the worker when the tool itself did (`workers --stop` from
        another terminal), for the row's error; None otherwise."""
        stamp = _stopped().get(self.pid)
        # a pid used again: only a stop since this command took the worker counts
        return ("`cudabench workers --stop`" if stamp is not None and stamp >= self.taken - 1
                else None)

    def is_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not _zombie(self.pid)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        self.join(timeout=10)

    def join(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(POLL_S)


def _zombie(pid: int) -> bool:
    """Return whether pid has exited and waits to be reaped (ours: we started it)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == pid
    except ChildProcessError:  # not our child: it is reaped by its own parent
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1] == "Z"
        except (OSError, IndexError):
            return False


# -- the kept worker's own process ---------------------------------------------------------


class _Server:
    """Serve commands one at a time over the socket; end after keep_s idle seconds.

    A thread accepts each connection at once and says hello (the pid the command watches);
    the main thread serves them in turn, so a second command waits for the first."""

    def __init__(self, address: str, key: bytes, keep_s: float) -> None:
        self.address, self.keep_s = address, keep_s
        self.gpu = _gpu_text(None)  # what `cudabench workers` lists: named once opened
        self.listener = Listener(address, "AF_UNIX", authkey=key)
        self.inode = os.stat(address).st_ino  # its socket: a later worker's is not removed
        self.lock = threading.Lock()
        self.turns = threading.Condition(self.lock)  # a connection queued in waiting
        self.waiting: collections.deque[Connection] = collections.deque()
        self.busy, self.last_use = 0, time.monotonic()  # connections taken, not yet served
        threading.Thread(target=self._accept, daemon=True, name="accept").start()
        threading.Thread(target=self._end_when_idle, daemon=True, name="idle-end").start()

    def _accept(self) -> None:
        while True:
            try:
                connection = self.listener.accept()
            except Exception:  # one that failed to authenticate (a wrong key), or went
                continue
            with self.lock:  # before the hello: the idle end never cuts a command off
                self._forget_gone()
                self.busy += 1
                holding = self.busy
            try:
                connection.send(("pid", os.getpid(), holding, self.gpu))
            except Exception:
                with self.lock:
                    self.busy -= 1
                continue
            with self.lock:
                self.waiting.append(connection)
                self.turns.notify()

    def _forget_gone(self) -> None:
        """Close and stop counting the waiting connections whose command has gone (a
        `cudabench workers` that asked how many wait, then left; a command killed as it
        waited): a busy worker's listing counted each earlier one until the command it
        served ended. Holds self.lock."""
        for connection in [c for c in self.waiting if _hung_up(c.fileno())]:
            self.waiting.remove(connection)
            with contextlib.suppress(OSError):
                connection.close()
            self.busy -= 1

    def serve(self, spec: EngineSpec, label: int | None) -> None:
        """Open the engine for the first command, then serve each command in turn."""
        engine = None
        while True:
            with self.lock:
                self.turns.wait_for(lambda: bool(self.waiting))
                connection = self.waiting.popleft()
            try:
                messages = _Connected(connection)
                if engine is None:
                    engine = open_engine(spec, label, messages)
                    if engine is None:  # no GPU: this worker is of no use to anyone
                        self._end(1)
                    self.gpu = _gpu_text(engine.info)
                # The op files and kernels of the last command may have been edited since:
                # this command's are loaded afresh (the disk cache answers unchanged ones).
                forget_file_ops()
                engine.forget_compiled()
                messages.put(("start", engine.info, dict(engine.versions)))
                watch = _PeerWatch(connection, lambda: self._end(1))
                try:
                    serve_batches(engine, watch.receiving(lambda c=connection: self._receive(c)),
                                  messages)
                finally:
                    watch.stop()
            except (OSError, EOFError):  # the command went (Ctrl-C, killed): serve the next
                self._take_keeps_left(connection)
            except Exception as exc:  # a bug or a lost GPU: tell the command, end
                with contextlib.suppress(Exception):
                    connection.send(f"{type(exc).__name__}: {exc}")
                self._end(1)
            finally:
                with contextlib.suppress(Exception):
                    connection.close()
                with self.lock:
                    self.busy -= 1
                    self.last_use = time.monotonic()
            if engine is not None and engine.faulted:  # CUDA is dead here
                self._end(0)

    def _receive(self, connection: Connection) -> Any:
        """Return the command's next message; ("keep", seconds) sets the idle time."""
        while True:
            message = connection.recv()
            if isinstance(message, tuple) and message and message[0] == "keep":
                self.keep_s = float(message[1])
                continue
            return message

    def _take_keeps_left(self, connection: Connection) -> None:
        """Apply the ("keep", seconds) a command sent before it went: one that started this
        worker and gave it no work asks it to end (KeptWorker.close)."""
        with contextlib.suppress(Exception):
            while connection.poll(0):
                message = connection.recv()
                if isinstance(message, tuple) and message and message[0] == "keep":
                    self.keep_s = float(message[1])

    def _end_when_idle(self) -> None:
        while True:
            time.sleep(min(1.0, max(0.05, self.keep_s / 4)))
            with self.lock:
                if not self.busy and time.monotonic() - self.last_use >= self.keep_s:
                    self._end(0)

    def _end(self, code: int) -> None:
        """Remove its socket, key and lock (unless a later worker's replaced them), then
        exit at once (no CUDA teardown to wait on)."""
        with contextlib.suppress(OSError):
            if os.stat(self.address).st_ino == self.inode:
                for path in (Path(self.address), Path(self.address).with_suffix(".key"),
                             *([Path(self.address).with_suffix(".log")] if code == 0 else [])):
                    path.unlink()
                _remove_lock(Path(self.address).with_suffix(".lock"))
        os._exit(code)


class _PeerWatch:
    """Ends the kept worker when its command goes away while a batch runs (killed by CI's
    timeout, a SIGKILL, a closed terminal): no one is left to kill a kernel that hangs,
    and a hung worker would hold the GPU and every later command's turn."""

    def __init__(self, connection: Connection, end: Any) -> None:
        self.end, self.in_batch, self.stopped = end, False, False
        self.lock = threading.Lock()
        self.peer = socket.socket(fileno=os.dup(connection.fileno()))
        threading.Thread(target=self._watch, daemon=True, name="peer-watch").start()

    def receiving(self, receive: Any) -> Any:
        """Return receive, marking the time from a batch received to the next receive."""
        def wrapped() -> Any:
            with self.lock:
                self.in_batch = False
            message = receive()
            with self.lock:
                self.in_batch = message is not None
            return message
        return wrapped

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
        with contextlib.suppress(OSError):
            self.peer.close()

    def _watch(self) -> None:
        while True:
            time.sleep(PEER_POLL_S)
            with self.lock:
                if self.stopped:
                    return
                if not self.in_batch:
                    continue
                if _hung_up(self.peer.fileno()):
                    self.end()


def _hung_up(descriptor: int) -> bool:
    """Return whether the command at the other end of a connection closed its end."""
    rdhup = getattr(select, "POLLRDHUP", 0)  # Linux's: the close, even with data unread
    if rdhup:
        poller = select.poll()
        poller.register(descriptor, rdhup | select.POLLHUP | select.POLLERR)
        return bool(poller.poll(0))  # POLLNVAL too: a descriptor closed here
    # elsewhere a peek: b"" where it did, but the ("keep", N) every command sends first,
    # left unread while it waits, reads as bytes
    try:
        with socket.socket(fileno=os.dup(descriptor)) as peer:
            return peer.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _gpu_text(info: Any) -> str:
    """Return the GPU a kept worker holds, as `cudabench workers` lists it: its index as the
    command counted it and its model (once open), and the CUDA_VISIBLE_DEVICES it sees."""
    shown = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f"CUDA_VISIBLE_DEVICES={shown}" if shown is not None else ""
    if info is None:
        return f"not opened yet{'; ' + where if where else ''}"
    return f"GPU {info.index} ({info.name}){'; ' + where if where else ''}"


def main() -> None:
    """The kept worker: its settings come pickled on stdin from the command that starts it."""
    address, key, spec, label, keep_s = pickle.loads(sys.stdin.buffer.read())
    server = _Server(address, key, keep_s)
    server.serve(spec, label)


if __name__ == "__main__":
    main()
