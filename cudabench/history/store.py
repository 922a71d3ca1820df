"""The history store: every recorded run in one SQLite file, through the standard library.

Layout (schema version 1):

- meta(key, value): `schema_version`, the version the migrations brought the file to;
- runs(id, source_hash UNIQUE, source_path, git_commit, branch, dirty, created, recorded,
  host, tool_version, file_schema): one results file each; the SHA-256 of its text makes
  import idempotent;
- devices(id, name, uuid, pci_bus_id, compute_capability): unknown UUID and bus id are '';
- results(id, run_id, device_id, op, variant, params, shape, dtype, hot, kind, status,
  median_s, samples_s): params a JSON object with sorted keys, shape and samples JSON
  arrays, median_s NULL when nothing was timed.

The file is marked with PRAGMA application_id, so another program's SQLite file is told
apart before anything touches it. It runs in WAL mode with a busy timeout: readers never
wait, writers queue (two CI jobs recording at once both get in). Every write is one
transaction (BEGIN IMMEDIATE), so a crash leaves the store as it was. Everything that makes
a store unusable (not a store, a newer schema, locked, read-only, damaged, a file system
without WAL) is a StoreError: one line, exit 2, and the file untouched.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import sqlite3
import stat
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudabench.errors import CudabenchError
from cudabench.results.model import BenchmarkResult, DeviceInfo, ResultsFile, Status

DEFAULT_PATH = Path(".cudabench") / "history.db"
QUICK_CHECK_MAX_BYTES = 256 * 2**20  # readers check stores up to this size at open
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another one before giving up
DEFAULT_VFS: str | None = None  # SQLite's own choice; tests name another to simulate NFS
APPLICATION_ID = 0x63624831  # "cbH1": marks the file as a cudabench history store
SQLITE_MAGIC = b"SQLite format 3\x00"
USABLE_STATUSES = (Status.PASS.value, Status.REF.value)  # timings worth a trend


class StoreError(CudabenchError):
    """A history store that cannot be used as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Benchmark:
    """What a benchmark is across runs: BenchmarkResult.key as named fields."""

    op: str
    variant: str
    params: tuple[tuple[str, int], ...]
    shape: tuple[int, ...]
    dtype: str
    hot: bool

    @classmethod
    def of(cls, result: BenchmarkResult) -> Benchmark:
        """Return the benchmark a result measured."""
        return cls(result.op, result.variant, tuple(sorted(result.params.items())),
                   tuple(result.shape), result.dtype, result.hot)

    @property
    def key(self) -> tuple[Any, ...]:
        """Return the same tuple as BenchmarkResult.key."""
        return (self.op, self.variant, self.params, self.shape, self.dtype, self.hot)

    def describe(self) -> str:
        """Return 'op/variant (hot) params shape dtype' for tables and messages."""
        params = " ".join(f"{k}={v}" for k, v in self.params)
        return " ".join(part for part in (
            f"{self.op}/{self.variant}" + (" (hot)" if self.hot else ""), params,
            "x".join(map(str, self.shape)), self.dtype) if part)


@dataclass(frozen=True)
class RunInfo:
    """One recorded run (one results file)."""

    id: int
    commit: str | None
    branch: str | None
    dirty: bool | None
    created: str  # ISO 8601 in UTC: when the run was measured
    recorded: str  # when it was imported
    host: str | None
    tool_version: str | None
    source_path: str
    source_hash: str
    results: int
    gpu_models: tuple[str, ...]


@dataclass(frozen=True)
class Tracked:
    """A benchmark the store holds on one GPU model, with how many runs measured it."""

    benchmark: Benchmark
    gpu_model: str
    kind: str
    runs: int


@dataclass(frozen=True)
class SeriesPoint:
    """A benchmark's median in one run (the median of its rows when several GPUs of the
    model ran it)."""

    run_id: int
    commit: str | None
    created: str
    median_s: float
    status: str


Migration = Callable[[sqlite3.Connection], None]


def _create_v1(conn: sqlite3.Connection) -> None:
    """Create the tables of schema version 1."""
    # One statement at a time: executescript would COMMIT the caller's transaction first.
    for statement in _V1_TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)


_V1_TABLES = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            source_hash TEXT NOT NULL UNIQUE,
            source_path TEXT NOT NULL,
            git_commit TEXT,
            branch TEXT,
            dirty INTEGER,
            created TEXT NOT NULL,
            recorded TEXT NOT NULL,
            host TEXT,
            tool_version TEXT,
            file_schema INTEGER NOT NULL
        );
        CREATE INDEX runs_created ON runs (created, id);
        CREATE TABLE devices (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            uuid TEXT NOT NULL DEFAULT '',
            pci_bus_id TEXT NOT NULL DEFAULT '',
            compute_capability TEXT NOT NULL DEFAULT '',
            UNIQUE (name, uuid, pci_bus_id, compute_capability)
        );
        CREATE TABLE results (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            device_id INTEGER REFERENCES devices (id),
            op TEXT NOT NULL,
            variant TEXT NOT NULL,
            params TEXT NOT NULL,
            shape TEXT NOT NULL,
            dtype TEXT NOT NULL,
            hot INTEGER NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            median_s REAL,
            samples_s TEXT NOT NULL
        );
        CREATE INDEX results_benchmark ON results (op, variant, params, shape, dtype, hot);
        CREATE INDEX results_run ON results (run_id);
"""


# MIGRATIONS[v] brings a store of version v to v + 1, inside the caller's transaction;
# SQLite's DDL is transactional, so a failed step leaves the old version whole.
MIGRATIONS: tuple[Migration, ...] = (_create_v1,)
SCHEMA_VERSION = len(MIGRATIONS)
TABLES = frozenset({"meta", "runs", "devices", "results"})  # in every version since 1


def now_utc() -> str:
    """Return the current time as ISO 8601 in UTC, to the second."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def parse_time(text: str) -> str | None:
    """Return an ISO date or time as ISO 8601 in UTC (naive: UTC); None if not one."""
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"  # Python 3.10's fromisoformat does not read Z
    try:
        moment = dt.datetime.fromisoformat(raw)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def source_hash(source: str) -> str:
    """Return the SHA-256 of a results file's text: the same file twice is one run."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class Store:
    """An open history store; use Store.open, and close it (or use it as a context)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, writable: bool,
                 timeout_s: float, read_only_connection: bool = False) -> None:
        self._conn = conn
        self.path = path
        self.writable = writable
        self.timeout_s = timeout_s
        self.read_only_connection = read_only_connection

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
        exists = _precheck(path, create)
        if create and not exists:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{path}: cannot create the store's folder: "
                                 f"{exc.strerror or exc}") from None
        read_only_file = exists and not _writable(path)
        if create and read_only_file:
            raise StoreError(f"{path}: the store is read-only (mode "
                             f"{stat.filemode(path.stat().st_mode)}): make it writable to "
                             "record, or pass --db with another path")
        if create and not os.access(path.parent, os.W_OK):
            raise StoreError(f"{path}: cannot write in its folder, which SQLite needs for "
                             "the store's journal: pass --db with a writable path")
        mode = "rwc" if create else ("ro" if read_only_file else "rw")
        uri = f"{path.resolve().as_uri()}?mode={mode}" + (f"&vfs={vfs}" if vfs else "")
        try:
            # isolation_level None: no implicit transactions; ours are explicit, IMMEDIATE.
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the store: {exc}") from None
        store = cls(conn, path, create, timeout, read_only_connection=mode == "ro")
        try:
            with store._errors():
                store._prepare()
        except BaseException:
            conn.close()
            if create and not exists and _size(path) == 0:
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
        if version is not None and (self.writable or _size(self.path) <= QUICK_CHECK_MAX_BYTES):
            problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                detail = "; ".join(line for p in problems for line in p.splitlines()
                                   if not line.startswith("***"))
                raise StoreError(_damaged(self.path, detail[:200]))
        if not self.writable:
            if version is not None and version < SCHEMA_VERSION:
                raise StoreError(f"{self.path}: the store has schema version {version}; this "
                                 f"cudabench uses {SCHEMA_VERSION}: run `cudabench history "
                                 "import` once (it upgrades the store) and try again")
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
            if app_id == 0 and not tables:
                return None
            raise StoreError(_not_a_store(self.path, "an SQLite database of another program"))
        if TABLES - tables:
            raise StoreError(_damaged(self.path, "tables missing: " +
                                      ", ".join(sorted(TABLES - tables))))
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise StoreError(_damaged(self.path, "no schema version in its meta table"))
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
        conn = self._conn
        with self._errors():
            if conn.in_transaction:
                conn.execute("SAVEPOINT nested")
                try:
                    yield
                except BaseException:
                    conn.execute("ROLLBACK TO nested")
                    conn.execute("RELEASE nested")
                    raise
                conn.execute("RELEASE nested")
                return
            conn.execute("BEGIN IMMEDIATE")  # the write lock now: no upgrade deadlock later
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn SQLite's errors about the file into StoreErrors; others are bugs."""
        try:
            yield
        except StoreError:
            raise
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise StoreError(
                    f"{self.path}: the store is locked: another process kept it busy for "
                    f"more than {self.timeout_s:g} s; try again when it is done") from None
            if "readonly" in text or "read-only" in text:
                raise StoreError(f"{self.path}: the store is read-only ({text}): make it "
                                 "writable, or pass --db with another path") from None
            if "unable to open" in text:
                raise StoreError(
                    f"{self.path}: cannot open the store ({text}): check its permissions and "
                    "folder; on a network file system SQLite's WAL mode cannot work, so pass "
                    "--db with a path on a local disk") from None
            if "disk I/O" in text or "disk is full" in text:
                raise StoreError(f"{self.path}: cannot use the store: {text}") from None
            raise
        except sqlite3.DatabaseError as exc:  # not a database, malformed image
            raise StoreError(_damaged(self.path, str(exc))) from None

    def close(self) -> None:
        """Close the connection (SQLite folds the WAL back into the file)."""
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Writing ---------------------------------------------------------------------------

    def record(self, results: ResultsFile, source: str, branch: str | None = None) -> int | None:
        """Record a loaded results file; return its run id, or None when already recorded.

        source is the file's text as read: its SHA-256 identifies the run, so the same
        content twice (under any path) adds nothing. One transaction: all rows or none.
        """
        digest = source_hash(source)
        meta = results.metadata
        tool = meta.get("tool")
        commit = meta.get("git_commit")
        dirty = meta.get("git_dirty")
        branch = branch if branch is not None else meta.get("git_branch")
        created = parse_time(str(meta.get("created", ""))) or now_utc()
        with self.transaction():
            if self.run_for(source) is not None:
                return None
            cursor = self._conn.execute(
                "INSERT INTO runs (source_hash, source_path, git_commit, branch, dirty, created,"
                " recorded, host, tool_version, file_schema) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (digest, str(results.path), commit if isinstance(commit, str) else None,
                 branch if isinstance(branch, str) else None,
                 int(dirty) if isinstance(dirty, bool) else None, created, now_utc(),
                 _text(meta.get("host")),
                 _text(tool.get("version")) if isinstance(tool, dict) else None,
                 results.schema_version))
            run_id = int(cursor.lastrowid or 0)
            devices: dict[tuple[Any, ...], int] = {}
            for result in results.benchmarks:
                device_id = None
                if result.device is not None:
                    ident = _device_key(result.device)
                    if ident not in devices:
                        devices[ident] = self._device_id(result.device)
                    device_id = devices[ident]
                self._insert_result(run_id, device_id, result)
        return run_id

    def _device_id(self, device: DeviceInfo) -> int:
        """Return the id of a device's row, adding it the first time."""
        ident = _device_key(device)
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
            "kind, status, median_s, samples_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, device_id, *_encode(bench), result.kind.value, result.status.value,
             median if median is not None and math.isfinite(median) else None,
             json.dumps([float(s) for s in result.samples_s])))

    # Reading ---------------------------------------------------------------------------

    def run_for(self, source: str) -> int | None:
        """Return the id of the run recorded from this text, or None."""
        with self._errors():
            row = self._conn.execute("SELECT id FROM runs WHERE source_hash = ?",
                                     (source_hash(source),)).fetchone()
        return int(row[0]) if row else None

    def runs(self, gpu_model: str | None = None, since: str | None = None,
             last: int | None = None) -> list[RunInfo]:
        """Return the recorded runs, oldest first (by when they were measured)."""
        where, args = ["1"], []
        if since is not None:
            where.append("r.created >= ?")
            args.append(since)
        if gpu_model is not None:
            where.append("EXISTS (SELECT 1 FROM results x JOIN devices d ON d.id = x.device_id"
                         " WHERE x.run_id = r.id AND d.name = ?)")
            args.append(gpu_model)
        query = (
            "SELECT r.id, r.git_commit, r.branch, r.dirty, r.created, r.recorded, r.host, "
            "r.tool_version, r.source_path, r.source_hash, "
            "(SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), "
            "(SELECT GROUP_CONCAT(name, char(10)) FROM (SELECT DISTINCT d.name FROM results x "
            " JOIN devices d ON d.id = x.device_id WHERE x.run_id = r.id ORDER BY d.name)) "
            f"FROM runs r WHERE {' AND '.join(where)} ORDER BY r.created, r.id")
        with self._errors():
            rows = self._conn.execute(query, args).fetchall()
        found = [RunInfo(id=row[0], commit=row[1], branch=row[2],
                         dirty=None if row[3] is None else bool(row[3]), created=row[4],
                         recorded=row[5], host=row[6], tool_version=row[7], source_path=row[8],
                         source_hash=row[9], results=row[10],
                         gpu_models=tuple(row[11].split("\n")) if row[11] else ())
                 for row in rows]
        return found[-last:] if last else found

    def benchmarks(self, op: str | None = None, variant: str | None = None,
                   gpu_model: str | None = None, since: str | None = None) -> list[Tracked]:
        """Return each benchmark the store holds, per GPU model, in a stable order."""
        where, args = ["1"], []
        for column, value in (("x.op", op), ("x.variant", variant), ("d.name", gpu_model),
                              ("r.created >=", since)):
            if value is not None:
                where.append(f"{column} ?" if column.endswith(">=") else f"{column} = ?")
                args.append(value)
        query = (
            "SELECT x.op, x.variant, x.params, x.shape, x.dtype, x.hot, "
            "COALESCE(d.name, ''), MIN(x.kind), COUNT(DISTINCT x.run_id) FROM results x "
            "JOIN runs r ON r.id = x.run_id LEFT JOIN devices d ON d.id = x.device_id "
            f"WHERE {' AND '.join(where)} "
            "GROUP BY x.op, x.variant, x.params, x.shape, x.dtype, x.hot, d.name "
            "ORDER BY COALESCE(d.name, ''), x.op, x.variant, x.shape, x.params, x.dtype, x.hot")
        with self._errors():
            rows = self._conn.execute(query, args).fetchall()
        return [Tracked(_decode(row[:6]), row[6], row[7], row[8]) for row in rows]

    def series(self, benchmark: Benchmark, gpu_model: str, last: int | None = None,
               since: str | None = None, exclude_run: int | None = None,
               usable_only: bool = True) -> list[SeriesPoint]:
        """Return a benchmark's median per run on one GPU model, oldest first.

        usable_only keeps verified (PASS) and reference (REF) rows with a median: failing
        and suspect rows have timings no trend should follow. last keeps the newest N.
        """
        op, variant, params, shape, dtype, hot = _encode(benchmark)
        where = ["x.op = ?", "x.variant = ?", "x.params = ?", "x.shape = ?", "x.dtype = ?",
                 "x.hot = ?", "COALESCE(d.name, '') = ?"]
        args: list[Any] = [op, variant, params, shape, dtype, hot, gpu_model]
        if usable_only:
            where.append(f"x.status IN ({','.join('?' * len(USABLE_STATUSES))})"
                         " AND x.median_s IS NOT NULL")
            args.extend(USABLE_STATUSES)
        if since is not None:
            where.append("r.created >= ?")
            args.append(since)
        if exclude_run is not None:
            where.append("r.id != ?")
            args.append(exclude_run)
        query = ("SELECT r.id, r.git_commit, r.created, x.median_s, x.status FROM results x "
                 "JOIN runs r ON r.id = x.run_id LEFT JOIN devices d ON d.id = x.device_id "
                 f"WHERE {' AND '.join(where)} ORDER BY r.created, r.id, x.id")
        with self._errors():
            rows = self._conn.execute(query, args).fetchall()
        by_run: dict[int, list[Any]] = {}
        for row in rows:
            by_run.setdefault(row[0], []).append(row)
        points = []
        for run_rows in by_run.values():  # dicts keep insertion order: oldest run first
            first = run_rows[0]
            medians = [r[3] for r in run_rows if r[3] is not None]
            worst = _worst_status([r[4] for r in run_rows])
            points.append(SeriesPoint(first[0], first[1], first[2],
                                      statistics.median(medians) if medians else math.nan,
                                      worst))
        return points[-last:] if last else points

    def counts(self) -> dict[str, int]:
        """Return the number of rows of each table (tests, and a summary line)."""
        with self._errors():
            return {table: int(self._conn.execute(f"SELECT COUNT(*) FROM {table}")
                               .fetchone()[0]) for table in sorted(TABLES)}


def _precheck(path: Path, create: bool) -> bool:
    """Check the file before SQLite touches it; return whether it exists (non-empty)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        if not create:
            raise StoreError(f"{path}: no history store here: record runs with `cudabench "
                             "history import FILE...` first, or pass --db") from None
        return False
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path}: is a folder, not a history store; pass --db with a file")
    if info.st_size == 0:
        if not create:
            raise StoreError(f"{path}: the store is empty: record runs with `cudabench "
                             "history import FILE...` first")
        return True
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store: {exc.strerror or exc}") from None
    if not header.startswith(SQLITE_MAGIC):
        raise StoreError(_not_a_store(path, "not an SQLite database"))
    if len(header) < 100:
        raise StoreError(_damaged(path, "shorter than an SQLite header"))
    # Header fields (big-endian): schema cookie at 40, application id at 68. Checked here,
    # before a connection could roll back another program's hot journal in its file.
    schema_cookie = int.from_bytes(header[40:44], "big")
    app_id = int.from_bytes(header[68:72], "big")
    if app_id != APPLICATION_ID and schema_cookie != 0:
        raise StoreError(_not_a_store(path, "an SQLite database without cudabench's mark: "
                                            "another program's, or a damaged header"))
    return True


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _writable(path: Path) -> bool:
    """Return whether the file may be written: permissions, and a write bit set at all.

    The write bits are checked too because root may write anything: a file made
    read-only on purpose stays so.
    """
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)


def _not_a_store(path: Path, what: str) -> str:
    return (f"{path}: not a cudabench history store ({what}); pass --db with a store's path "
            "or a new one")


def _damaged(path: Path, detail: str) -> str:
    return (f"{path}: the history store is damaged ({detail}); restore it from a backup, or "
            "move it aside and import the results files again")


def _device_key(device: DeviceInfo) -> tuple[str, str, str, str]:
    return (device.name, device.uuid or "", device.pci_bus_id or "",
            device.compute_capability or "")


def _encode(bench: Benchmark) -> tuple[str, str, str, str, str, int]:
    """Return a benchmark as the results table's key columns."""
    return (bench.op, bench.variant, json.dumps(dict(bench.params), sort_keys=True),
            json.dumps(list(bench.shape)), bench.dtype, int(bench.hot))


def _decode(row: Sequence[Any]) -> Benchmark:
    """Return the benchmark of the results table's key columns."""
    params = json.loads(row[2])
    return Benchmark(row[0], row[1], tuple(sorted((str(k), int(v)) for k, v in params.items())),
                     tuple(int(x) for x in json.loads(row[3])), row[4], bool(row[5]))


def _worst_status(statuses: Sequence[str]) -> str:
    """Return the status that matters most of a run's rows: a failure over a pass."""
    order = ["FAIL", "ERROR", "TIMEOUT", "SUSPECT", "PASS", "REF", "SKIP"]
    return min(statuses, key=lambda s: order.index(s) if s in order else len(order))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None

