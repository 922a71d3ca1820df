"""The history store's file: its tables, created and migrated, and the checks made on a
file before SQLite opens it (another program's file, a newer schema, a damaged one).

Layout (schema version 8):

- meta(key, value): `schema_version`, the version the migrations brought the file to;
- runs(id, source_hash UNIQUE, source_path, git_commit, branch, dirty, created, recorded,
  host, tool_version, file_schema, command_key, gate): one run each; source_hash, the
  SHA-256 of its measurements ("rows:" and the hex: results.identity) or, for runs
  recorded before and files that measured nothing, of its text, makes import idempotent;
  command_key (version 3; NULL before) the command that made it, less its output flags
  (records.command_key): which runs measured the same set; gate (version 8) 'pass' or
  'fail', the verdict of the last `history check` (or `--record --check`) that judged the
  run once recorded, NULL where none did (and for every run recorded before);
- devices(id, name, uuid, pci_bus_id, compute_capability): unknown UUID and bus id are '';
- results(id, run_id, device_id, op, variant, params, shape, dtype, hot, kind, status,
  median_s, samples_s, l2_flush): params a JSON object with sorted keys, shape and samples
  JSON arrays, median_s NULL when nothing was timed; l2_flush "clean", "memset" or "" (hot),
  added by version 2, the rows before it "memset" (cold) or ""; param_order (version 4)
  the parameter names in the kernel header's order, a JSON list ('' before);
  slow_clock_samples_s (version 5) the samples set aside for a slow SM clock, a JSON array,
  and slow_clock_share the share of all the row's samples that ran slow, set aside or
  kept (where too few would remain without them) (NULL before: not recorded; version 7
  made the rows before it NULL, whose share counted the set-aside samples alone);
- cards(run_id, device_id, card) (version 6): each card a run's results file lists, its
  `devices` entry whole as JSON (driver and CUDA versions, power limit, clocks...), which
  history check compares as compare does; runs recorded before have none.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from cudabench.common.infiles import unreachable
from cudabench.common.own_files import own_folder_of
from cudabench.history.records import (
    APPLICATION_ID,
    SQLITE_MAGIC,
    Migration,
    StoreError,
)


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


def _add_l2_flush_v2(conn: sqlite3.Connection) -> None:
    """Version 2: each result's L2 flush (results files record it since 2026-11-27). Cold
    rows recorded before were flushed by a memset, the only method then; hot rows by none."""
    conn.execute("ALTER TABLE results ADD COLUMN l2_flush TEXT NOT NULL DEFAULT 'memset'")
    conn.execute("UPDATE results SET l2_flush = '' WHERE hot != 0")
    conn.execute("DROP INDEX results_benchmark")
    conn.execute("CREATE INDEX results_benchmark ON results "
                 "(op, variant, params, shape, dtype, hot, l2_flush)")


def _add_command_key_v3(conn: sqlite3.Connection) -> None:
    """Version 3: each run's command, less its output flags (history check's `missing`
    compares a file with the runs of the same command). Runs recorded before have none."""
    conn.execute("ALTER TABLE runs ADD COLUMN command_key TEXT")


def _add_param_order_v4(conn: sqlite3.Connection) -> None:
    """Version 4: each result's parameter names in the kernel header's order (a JSON list),
    which `history show` lists them in, as the run tables do (params is sorted: the
    benchmark's identity). Rows recorded before have '' (shown by name)."""
    conn.execute("ALTER TABLE results ADD COLUMN param_order TEXT NOT NULL DEFAULT ''")


def _add_slow_clock_samples_v5(conn: sqlite3.Connection) -> None:
    """Version 5: each result's samples set aside for a slow SM clock (a JSON array) and
    their share of its samples, so a check tells a kernel that newly makes the card
    throttle from one that always did (the share alone is read: a series does not decode
    every run's samples; the samples are kept as samples_s is, nothing measured lost).
    Rows recorded before have NULL (not recorded)."""
    conn.execute("ALTER TABLE results ADD COLUMN slow_clock_samples_s TEXT")
    conn.execute("ALTER TABLE results ADD COLUMN slow_clock_share REAL")


def _add_cards_v6(conn: sqlite3.Connection) -> None:
    """Version 6: each run's cards as its results file lists them (a `devices` entry as
    JSON), so a check says which driver or card setting changed since the run it is judged
    against, as compare does: a driver update or a lower power limit moves every timing.
    Runs recorded before have none (nothing compared)."""
    conn.execute("CREATE TABLE cards (run_id INTEGER NOT NULL REFERENCES runs (id) "
                 "ON DELETE CASCADE, device_id INTEGER NOT NULL REFERENCES devices (id), "
                 "card TEXT NOT NULL)")
    conn.execute("CREATE INDEX cards_run ON cards (run_id)")


def _forget_slow_clock_share_v7(conn: sqlite3.Connection) -> None:
    """Version 7: slow_clock_share counts the slow samples a run kept (too few fast ones
    would remain without them) besides those set aside; the rows before counted the
    set-aside ones alone, and the store keeps no clock per sample to count the others: their
    share is NULL (not recorded). A 0 there read as "this kernel never throttled the card"
    and made a check judge a kernel that always did as newly throttling it.

    The rows that set samples aside lose theirs too, though it is a true lower bound: the
    share is read as the most the history throttled (throttled_by_kernel: at most half the
    current share), where a lower bound errs toward that same false verdict. A row pooled
    from --rounds holds the set-aside samples of one round beside the kept slow ones of
    another, and the runs that kept theirs (the most throttled) would fall out of the
    history's largest share, leaving only the runs that throttled less."""
    conn.execute("UPDATE results SET slow_clock_share = NULL")


def _add_gate_v8(conn: sqlite3.Connection) -> None:
    """Version 8: each run's gate verdict, as the check that judged it once recorded gave
    it ('pass', 'fail'): the missing-kernel check passes over the runs that failed, since
    `--record --check` records them too, and pushes that dropped a kernel, each failing,
    made the drop a level the next one passed by. Runs recorded before have NULL (never
    judged: counted as before)."""
    conn.execute("ALTER TABLE runs ADD COLUMN gate TEXT")


# MIGRATIONS[v] brings a store of version v to v + 1, inside the caller's transaction;
# SQLite's DDL is transactional, so a failed step leaves the old version whole.
MIGRATIONS: tuple[Migration, ...] = (_create_v1, _add_l2_flush_v2, _add_command_key_v3,
                                     _add_param_order_v4, _add_slow_clock_samples_v5,
                                     _add_cards_v6, _forget_slow_clock_share_v7,
                                     _add_gate_v8)
SCHEMA_VERSION = len(MIGRATIONS)
# The oldest version a reader takes as it is (a writer upgrades it): version 3 only adds
# runs.command_key, which a read of an older store takes as unknown (no `missing` verdicts).
READABLE_FROM = 2
COMMANDS_SINCE = 3  # the version whose runs record their command (runs.command_key)
PARAM_ORDER_SINCE = 4  # the version whose results keep their parameters' order
CARDS_SINCE = 6  # the version whose runs keep their cards' driver and settings
# the version whose slow_clock_share counts kept slow samples too: a reader takes an older
# store's shares (version 5's and 6's) as not recorded, as its upgrade makes them
SLOW_SHARE_SINCE = 7
GATE_SINCE = 8  # the version whose runs keep the verdict of the check that judged them
TABLES = frozenset({"meta", "runs", "devices", "results"})  # in every version since 1


def precheck(path: Path, create: bool) -> bool:
    """Check the file before SQLite touches it; return whether it exists (non-empty)."""
    why = unreachable(path)
    if why is not None:
        raise StoreError(f"{path}: {why}")
    own = own_folder_of(path.resolve()) if create else None
    if own is not None:  # a store written there breaks every run (the catalog reads it)
        raise StoreError(f"{path}: lies among cudabench's own code and kernels ({own}); "
                         "keep the history store elsewhere (--db)")
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
    if not stat.S_ISREG(info.st_mode):  # /dev/null: SQLite made /dev/null-journal beside it
        raise StoreError(f"{path}: is not a regular file (a device, a pipe), not a history "
                         "store; pass --db with a file")
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
        raise StoreError(not_a_store_message(path, "not an SQLite database"))
    if len(header) < 100:
        raise StoreError(damaged_message(path, "shorter than an SQLite header"))
    # Header fields (big-endian): schema cookie at 40, application id at 68. Checked here,
    # before a connection could roll back another program's hot journal in its file.
    schema_cookie = int.from_bytes(header[40:44], "big")
    app_id = int.from_bytes(header[68:72], "big")
    if app_id != APPLICATION_ID and schema_cookie != 0:
        raise StoreError(not_a_store_message(
            path, "an SQLite database without cudabench's mark: another program's, or a "
            "damaged header"))
    return True


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def is_writable(path: Path) -> bool:
    """Return whether the file may be written: permissions, and a write bit set at all.

    The write bits are checked too because root may write anything: a file made
    read-only on purpose stays so.
    """
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)


def not_a_store_message(path: Path, what: str) -> str:
    return (f"{path}: not a cudabench history store ({what}); pass --db with a store's path "
            "or a new one")


def damaged_message(path: Path, detail: str) -> str:
    return (f"{path}: the history store is damaged ({detail}); restore it from a backup, or "
            "move it aside and import the results files again")
