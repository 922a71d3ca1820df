"""The history store: every recorded run in one SQLite file, through the standard library.

The file is marked with PRAGMA application_id, so another program's SQLite file is told
apart before anything touches it. It runs in WAL mode with a busy timeout: readers never
wait, writers queue (two CI jobs recording at once both get in). Every write is one
transaction (BEGIN IMMEDIATE), so a crash leaves the store as it was. Everything that makes
a store unusable (not a store, a newer schema, locked, read-only, damaged, a file system
without WAL) is a StoreError: one line, exit 2, and the file untouched.

The tables and their migrations are schema.py's, the reads queries.py's, the records
records.py's; this module opens a store and writes to it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cudabench.common.text import encodable
from cudabench.history.queries import Queries
from cudabench.history.records import (
    APPLICATION_ID,
    BUSY_TIMEOUT_S,
    DEFAULT_VFS,
    QUICK_CHECK_MAX_BYTES,
    Benchmark,
    StoreError,
    command_key,
    device_key,
    encode_benchmark,
    now_utc,
    one_row_each,
    parse_time,
    run_hashes,
    text_or_none,
)
from cudabench.history.schema import (
    GATE_SINCE,
    MIGRATIONS,
    READABLE_FROM,
    SCHEMA_VERSION,
    TABLES,
    damaged_message,
    file_size,
    is_writable,
    not_a_store_message,
    precheck,
)
from cudabench.results.codec import device_to_dict
from cudabench.results.model import BenchmarkResult, DeviceInfo, ResultsFile


class Store(Queries):
    """An open history store; use Store.open, and close it (or use it as a context)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, writable: bool,
                 timeout_s: float, read_only_connection: bool = False) -> None:
        self._conn = conn
        self.path = path
        self.writable = writable
        self.timeout_s = timeout_s
        self.read_only_connection = read_only_connection
        self.version = SCHEMA_VERSION  # the file's, once _prepare has read it
        self.wal_left: str | None = None  # why close() left the WAL beside the store

    # Opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str, create: bool = False, *, timeout_s: float | None = None,
             vfs: str | None = None) -> Store:
        """Open the store at path.

        create=True: make it (and its folder) if missing, and open it for writing (import);
        create=False: it must exist, and is only read. Raises StoreError on anything that
        makes it unusable, before writing a byte.
        """
        path = Path(path)
        timeout = BUSY_TIMEOUT_S if timeout_s is None else timeout_s
        vfs = DEFAULT_VFS if vfs is None else vfs
        exists = precheck(path, create)
        if create and not exists:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{path}: cannot create the store's folder: "
                                 f"{exc.strerror or exc}") from None
        read_only_file = exists and not is_writable(path)
        if create and read_only_file:
            where = ("on a read-only file system" if path.stat().st_mode & 0o200
                     else f"mode {stat.filemode(path.stat().st_mode)}")
            raise StoreError(f"{path}: the store is read-only ({where}): make it writable "
                             "to record, or pass --db with another path")
        if create and not os.access(path.parent, os.W_OK):
            raise StoreError(f"{path}: cannot write in its folder, which SQLite needs for "
                             "the store's journal: pass --db with a writable path")
        # A reader that cannot write the folder (a read-only mount, a shared team store, a
        # CI artefact) opens read-only; SQLite then needs the store immutable besides, as
        # it cannot make the WAL's index beside it: tried when the plain read-only fails.
        read_only_place = exists and not create and not os.access(path.parent, os.W_OK)
        mode = "rwc" if create else ("ro" if read_only_file or read_only_place else "rw")
        tries = ["", "&immutable=1"] if read_only_place else [""]
        for extra in tries:
            uri = (f"{path.resolve().as_uri()}?mode={mode}{extra}"
                   + (f"&vfs={vfs}" if vfs else ""))
            try:
                return cls._connect(uri, path, create, exists, timeout, mode == "ro")
            except StoreError:
                if extra == tries[-1]:
                    raise
        raise AssertionError("unreachable: the last try raises")

    @classmethod
    def _connect(cls, uri: str, path: Path, create: bool, exists: bool, timeout: float,
                 read_only: bool) -> Store:
        """Open and prepare the store at uri; StoreError if it cannot be used."""
        try:
            # isolation_level None: no implicit transactions; ours are explicit, IMMEDIATE.
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the store: {exc}") from None
        store = cls(conn, path, create, timeout, read_only_connection=read_only)
        try:
            with store._errors():
                store._prepare()
        except BaseException:
            conn.close()
            if create and not exists and file_size(path) == 0:
                # Refused before a byte was written (no WAL here, say): leave no file.
                with contextlib.suppress(OSError):
                    path.unlink()
            raise
        return store

    def _prepare(self) -> None:
        """Check what the file is, turn WAL on, and create or migrate it (writers only)."""
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        version = self._identify()
        if version is None and not self.writable:
            raise StoreError(f"{self.path}: the store is empty: record runs with "
                             "`cudabench history import FILE...` first")
        if not self.read_only_connection:  # a read-only one cannot switch, nor write
            self._enable_wal()
        conn.execute("PRAGMA foreign_keys = ON")
        # Damage found now, not halfway through a write; readers skip it on big stores,
        # where a query that meets a damaged page still fails as a StoreError.
        if version is not None and (self.writable
                                    or file_size(self.path) <= QUICK_CHECK_MAX_BYTES):
            problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                detail = "; ".join(line for p in problems for line in p.splitlines()
                                   if not line.startswith("***"))
                raise StoreError(damaged_message(self.path, detail[:200]))
        if not self.writable:
            if version is not None and version < READABLE_FROM:
                raise StoreError(f"{self.path}: the store has schema version {version}; this "
                                 f"cudabench uses {SCHEMA_VERSION}: record a results file "
                                 f"into it once (`cudabench history import FILE --db "
                                 f"{self.path}`: that upgrades the store) and try again")
            self.version = version if version is not None else SCHEMA_VERSION
            return
        if version is None or version < SCHEMA_VERSION:
            with self.transaction():
                self._migrate()

    def _identify(self) -> int | None:
        """Return the store's schema version, None for an empty file; refuse other files."""
        conn = self._conn
        if not conn.in_transaction:
            # One snapshot for every read below: a store being created by another process
            # must not show its tables before its mark, or the other way round.
            conn.execute("BEGIN")
            try:
                return self._identify()
            finally:
                if conn.in_transaction:  # a read: nothing to lose if ending it fails
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("COMMIT")
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app_id != APPLICATION_ID:
            # empty: no object at all, and no user_version (another program's fresh
            # database sets one before its tables)
            objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app_id == 0 and not objects and not conn.execute(
                    "PRAGMA user_version").fetchone()[0]:
                return None
            raise StoreError(not_a_store_message(self.path,
                                                 "an SQLite database of another program"))
        if TABLES - tables:
            raise StoreError(damaged_message(self.path, "tables missing: " +
                                             ", ".join(sorted(TABLES - tables))))
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise StoreError(damaged_message(self.path, "no schema version in its meta table"))
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: the store has schema version {version}, newer than "
                             f"this cudabench's {SCHEMA_VERSION}: a newer cudabench wrote it; "
                             "upgrade cudabench to use it")
        return version

    def _enable_wal(self) -> None:
        """Turn on WAL, retrying while another process switches it; refuse where it fails."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                # Two processes creating one store: the switch takes a lock without waiting.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if str(mode).lower() != "wal":
            raise StoreError(
                f"{self.path}: SQLite cannot use WAL mode here (journal mode {mode!r}): the "
                "store seems to be on a network file system, where concurrent writers would "
                "corrupt it; pass --db with a path on a local disk")

    def _migrate(self) -> None:
        """Apply the missing migrations in order; the caller holds the write transaction."""
        conn = self._conn
        version = self._identify() or 0  # again, inside the lock: another may have done it
        for step in MIGRATIONS[version:]:
            step(conn)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                     (str(SCHEMA_VERSION),))

    # Transactions and errors -------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block as one write transaction (a savepoint when nested): all or nothing."""
        if not self.writable:
            raise ValueError(f"{self.path}: the store was opened for reading")
        self._forget_reads()  # the series read so far may change
        conn = self._conn
        with self._errors():
            # SQLite rolls the whole transaction back itself after an I/O error or a full
            # disk: rolling back again failed ("no transaction is active") and hid why
            if conn.in_transaction:
                conn.execute("SAVEPOINT nested")
                try:
                    yield
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK TO nested")
                        conn.execute("RELEASE nested")
                    raise
                conn.execute("RELEASE nested")
                return
            conn.execute("BEGIN IMMEDIATE")  # the write lock now: no upgrade deadlock later
            try:
                yield
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection (SQLite folds the WAL back into the file). Where a writer's
        store cannot take it back (a full disk), wal_left says why: the store copied alone
        (a CI cache) would be malformed, or miss runs."""
        conn = self._conn
        if self.writable and not conn.in_transaction:
            # Closing folds it in silently, or silently fails: done first to hear a failure.
            # PASSIVE waits for nobody; frames another connection still reads are its own
            # close's to fold.
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:
                self.wal_left = (f"{self.path}: SQLite could not fold {self.path}-wal back into "
                                 f"the store ({exc}): the store is whole only with that file "
                                 "beside it; copy both, or free space and run any history "
                                 "command on it to fold it in")
        conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Writing ---------------------------------------------------------------------------

    def record(self, results: ResultsFile, source: str, branch: str | None = None) -> int | None:
        """Record a loaded results file; return its run id, or None when already recorded.

        source is the file's text as read. The run is known by its measurements (and its
        text: records.run_hashes), so the same run twice, under any path or in any
        re-edited copy, adds nothing. One transaction: all rows or none.
        """
        rows = one_row_each(results)  # before the transaction: a refused file adds nothing
        digest = run_hashes(results, source)[0]
        meta = results.metadata
        tool = meta.get("tool")
        commit = meta.get("git_commit")
        dirty = meta.get("git_dirty")
        branch = branch if branch is not None else meta.get("git_branch")
        created = parse_time(str(meta.get("created", ""))) or now_utc()
        with self.transaction():
            if self.run_for(results, source) is not None:
                return None
            cursor = self._conn.execute(
                "INSERT INTO runs (source_hash, source_path, git_commit, branch, dirty, created,"
                " recorded, host, tool_version, file_schema, command_key)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (digest, encodable(str(results.path)),  # a name that is no UTF-8 too
                 commit if isinstance(commit, str) else None,
                 branch if isinstance(branch, str) else None,
                 int(dirty) if isinstance(dirty, bool) else None, created, now_utc(),
                 text_or_none(meta.get("host")),
                 text_or_none(tool.get("version")) if isinstance(tool, dict) else None,
                 results.schema_version, command_key(meta.get("command"))))
            run_id = int(cursor.lastrowid or 0)
            devices: dict[tuple[Any, ...], int] = {}
            for result in rows:
                device_id = None
                if result.device is not None:
                    ident = device_key(result.device)
                    if ident not in devices:
                        devices[ident] = self._device_id(result.device)
                    device_id = devices[ident]
                self._insert_result(run_id, device_id, result)
            for device in results.devices:  # what a check compares its card with (schema 6)
                ident = device_key(device)
                if ident not in devices:
                    devices[ident] = self._device_id(device)
                self._conn.execute("INSERT INTO cards (run_id, device_id, card) VALUES (?,?,?)",
                                   (run_id, devices[ident], json.dumps(device_to_dict(device))))
        return run_id

    def give_branch(self, run_id: int, branch: str) -> str | None:
        """Record branch on a recorded run that has none (an import --branch of runs
        imported without one); return the run's branch before (None: it had none, and now
        has branch). The caller holds the write transaction."""
        with self._errors():
            row = self._conn.execute("SELECT branch FROM main.runs WHERE id = ?",
                                     (run_id,)).fetchone()
            if row is not None and row[0] is None:
                self._conn.execute("UPDATE main.runs SET branch = ? WHERE id = ?",
                                   (branch, run_id))
        return None if row is None else row[0]

    def record_gate(self, run_id: int, passed: bool) -> None:
        """Record the gate's verdict on a recorded run (history check's on the run it
        judged; the last one stands): the missing-kernel check passes over the runs that
        failed. The one write a reader's connection makes, a statement SQLite makes atomic;
        none into a store older than version 8 (a reader upgrades none) nor through a
        read-only connection."""
        if self.version < GATE_SINCE or self.read_only_connection:
            return
        with self._errors():  # main's runs: only_branch's view of them cannot be written
            self._conn.execute("UPDATE main.runs SET gate = ? WHERE id = ?",
                               ("pass" if passed else "fail", run_id))

    def _device_id(self, device: DeviceInfo) -> int:
        """Return the id of a device's row, adding it the first time."""
        ident = device_key(device)
        self._conn.execute("INSERT OR IGNORE INTO devices (name, uuid, pci_bus_id, "
                           "compute_capability) VALUES (?,?,?,?)", ident)
        row = self._conn.execute("SELECT id FROM devices WHERE name = ? AND uuid = ? AND "
                                 "pci_bus_id = ? AND compute_capability = ?", ident).fetchone()
        return int(row[0])

    def _insert_result(self, run_id: int, device_id: int | None,
                       result: BenchmarkResult) -> None:
        """Insert one result row."""
        bench = Benchmark.of(result)
        median = result.median_s
        self._conn.execute(
            "INSERT INTO results (run_id, device_id, op, variant, params, shape, dtype, hot, "
            "l2_flush, kind, status, median_s, samples_s, param_order, slow_clock_samples_s, "
            "slow_clock_share) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, device_id, *encode_benchmark(bench), result.kind.value, result.status.value,
             median if median is not None and math.isfinite(median) else None,
             json.dumps([float(s) for s in result.samples_s]), json.dumps(list(bench.order)),
             json.dumps([float(s) for s in result.slow_clock_samples_s]),
             result.slow_clock_share))
