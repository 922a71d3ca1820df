"""Reading the history store: runs, benchmarks, series and counts, and SQLite's errors
turned into StoreErrors that say what to do."""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cudabench.errors import ResultsFileError
from cudabench.history.records import (
    USABLE_STATUSES,
    Benchmark,
    RunInfo,
    SeriesPoint,
    StoreError,
    Tracked,
    decode_benchmark,
    encode_benchmark,
    run_hashes,
    worst_status,
)
from cudabench.history.schema import (
    CARDS_SINCE,
    COMMANDS_SINCE,
    GATE_SINCE,
    PARAM_ORDER_SINCE,
    SLOW_SHARE_SINCE,
    TABLES,
    damaged_message,
)
from cudabench.results.codec import Checker, device_from_dict
from cudabench.results.model import DeviceInfo, ResultsFile



# --gpu names a model as NVML does ("NVIDIA H100 80GB HBM3") or as the tables show it,
# without the vendor's name ("H100 80GB HBM3").
# SQLite's largest integer: a LIMIT past it (`--last 2^63`) overflowed; it keeps all rows
ALL_ROWS = 2**63 - 1
GPU_MATCH = "(d.name = ? OR d.name = 'NVIDIA ' || ?)"

class Queries:
    """The reading half of a Store (Store adds opening, transactions and writing)."""

    _conn: sqlite3.Connection
    path: Path
    timeout_s: float
    version: int  # the file's schema version (a reader may hold an older one: READABLE_FROM)

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
            raise StoreError(damaged_message(self.path, str(exc))) from None

    def _benchmark(self, row: Sequence[Any], order: str | None = None) -> Benchmark:
        """Return the benchmark of a row's key columns (and its parameters' order); a
        StoreError where they are not what cudabench wrote (a damaged or hand-edited
        store)."""
        try:
            return decode_benchmark(row, order)
        except (ValueError, TypeError, AttributeError, OverflowError,
                RecursionError) as exc:  # JSONDecodeError included; a shape of 1e400
            raise StoreError(damaged_message(
                self.path, f"a result's key columns cannot be read: {exc}")) from None

    def _median(self, value: object) -> float:
        """Return a recorded median: a positive, finite number of seconds, else a
        StoreError (cudabench records no other)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or value <= 0:
            raise StoreError(damaged_message(self.path, f"a median of {value!r} seconds"))
        return float(value)

    def _slow_clock_share(self, rows: Sequence[Sequence[Any]]) -> float | None:
        """Return the largest share of one run's rows (one a GPU) that ran at a slow clock;
        None when none recorded it; a StoreError for a share cudabench never writes."""
        known = [row[6] for row in rows if row[6] is not None]
        for share in known:
            if isinstance(share, bool) or not isinstance(share, (int, float)) or \
                    not 0 <= share <= 1:
                raise StoreError(damaged_message(
                    self.path, f"a share of {share!r} of samples set aside"))
        return float(max(known)) if known else None

    def run_for(self, results: ResultsFile, source: str) -> int | None:
        """Return the id of the run recorded from this file (its measurements, or its text
        as stores recorded before: records.run_hashes), or None. Looked up in all the
        store's runs, past only_branch's view: a run recorded on another branch is still
        recorded (history check --branch main records its verdict on a PR's run)."""
        hashes = run_hashes(results, source)
        with self._errors():
            row = self._conn.execute(
                f"SELECT id FROM main.runs WHERE source_hash IN ({','.join('?' * len(hashes))}) "
                "ORDER BY id LIMIT 1", hashes).fetchone()
        return int(row[0]) if row else None

    def reads_run(self, run_id: int) -> bool:
        """Return whether run_id is among the runs read (all, or only_branch's)."""
        with self._errors():
            return self._conn.execute("SELECT 1 FROM runs WHERE id = ?",
                                      (run_id,)).fetchone() is not None

    def branches(self) -> list[str]:
        """Return the branches the runs were recorded on (of the runs read: all, or one
        branch's after only_branch), sorted."""
        with self._errors():
            return sorted(row[0] for row in self._conn.execute(
                "SELECT DISTINCT branch FROM runs WHERE branch IS NOT NULL"))

    def only_branch(self, branch: str) -> None:
        """Read only the runs recorded on branch from here on (history show, check, plot
        --branch): a temporary view of that name hides the store's own table of runs from
        this connection, and every query joins its results through it. Never written."""
        quoted = branch.replace("'", "''")
        self._forget_reads()
        with self._errors():
            self._conn.execute("DROP VIEW IF EXISTS temp.runs")
            self._conn.execute(f"CREATE TEMP VIEW runs AS SELECT * FROM main.runs "
                               f"WHERE branch = '{quoted}'")

    def runs(self, gpu_model: str | None = None, since: str | None = None,
             last: int | None = None) -> list[RunInfo]:
        """Return the recorded runs, oldest first (by when they were measured)."""
        where, args = ["1"], []
        if since is not None:
            where.append("r.created >= ?")
            args.append(since)
        if gpu_model is not None:
            where.append("EXISTS (SELECT 1 FROM results x JOIN devices d ON d.id = x.device_id"
                         f" WHERE x.run_id = r.id AND {GPU_MATCH})")
            args += [gpu_model, gpu_model]
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
        for column, value in (("x.op", op), ("x.variant", variant), ("r.created >=", since)):
            if value is not None:
                where.append(f"{column} ?" if column.endswith(">=") else f"{column} = ?")
                args.append(value)
        if gpu_model is not None:
            where.append(GPU_MATCH)
            args += [gpu_model, gpu_model]
        key = "x.op, x.variant, x.params, x.shape, x.dtype, x.hot, x.l2_flush, COALESCE(d.name, '')"
        joins = "JOIN runs r ON r.id = x.run_id LEFT JOIN devices d ON d.id = x.device_id"
        # the newest run's order of the parameters (a header reordered since: the order the
        # tables show now), in the same pass: the newest (created, id) of the rows that
        # recorded one, its order after the second separator (older stores recorded none)
        newest_order = ("MAX(CASE WHEN x.param_order != '' THEN r.created || char(31) || "
                        "printf('%020d', r.id) || char(31) || x.param_order END)"
                        if self.version >= PARAM_ORDER_SINCE else "NULL")
        query = (
            f"SELECT {key}, MIN(x.kind), COUNT(DISTINCT x.run_id), {newest_order} "
            f"FROM results x {joins} WHERE {' AND '.join(where)} "
            "GROUP BY x.op, x.variant, x.params, x.shape, x.dtype, x.hot, x.l2_flush, d.name "
            "ORDER BY COALESCE(d.name, ''), x.op, x.variant, x.shape, x.params, x.dtype, x.hot, "
            "x.l2_flush")
        with self._errors():
            rows = self._conn.execute(query, args).fetchall()
        return [Tracked(self._benchmark(row[:7], row[10].split("\x1f", 2)[2] if row[10] else ""),
                        row[7], row[8], row[9]) for row in rows]

    def series(self, benchmark: Benchmark, gpu_model: str, last: int | None = None,
               since: str | None = None, exclude_run: int | None = None,
               usable_only: bool = True) -> list[SeriesPoint]:
        """Return a benchmark's median per run on one GPU model, oldest first.

        usable_only keeps verified (PASS) and reference (REF) rows with a median: failing
        and suspect rows have timings no trend should follow. last keeps the newest N.
        """
        op, variant, params, shape, dtype, hot, l2_flush = encode_benchmark(benchmark)
        where = ["x.op = ?", "x.variant = ?", "x.params = ?", "x.shape = ?", "x.dtype = ?",
                 "x.hot = ?", "x.l2_flush = ?", "COALESCE(d.name, '') = ?"]
        args: list[Any] = [op, variant, params, shape, dtype, hot, l2_flush, gpu_model]
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
        rows_of = "results x"
        if last:
            # The newest runs chosen in SQL, walking the runs newest first and each run's
            # rows by its index: every point of a long history built to keep the last few
            # made `history check` grow with the whole store (30k runs: 27-48 s).
            rows_of = "results x INDEXED BY results_run"
            where.append(f"x.run_id IN (SELECT r.id FROM runs r WHERE EXISTS (SELECT 1 FROM "
                         f"{rows_of} LEFT JOIN devices d ON d.id = x.device_id WHERE "
                         f"x.run_id = r.id AND {' AND '.join(where)}) "
                         "ORDER BY r.created DESC, r.id DESC LIMIT ?)")
            args += [*args, min(last, ALL_ROWS)]
        clocks = "x.slow_clock_share" if self.version >= SLOW_SHARE_SINCE else "NULL"
        query = ("SELECT r.id, r.git_commit, r.created, x.median_s, x.status, x.kind, "
                 f"{clocks} FROM {rows_of} "
                 "JOIN runs r ON r.id = x.run_id LEFT JOIN devices d ON d.id = x.device_id "
                 f"WHERE {' AND '.join(where)} ORDER BY r.created, r.id, x.id")
        with self._errors():
            rows = self._conn.execute(query, args).fetchall()
        by_run: dict[int, list[Any]] = {}
        for row in rows:
            by_run.setdefault(row[0], []).append(row)
        # dicts keep insertion order: oldest run first
        return [self._point(run_rows) for run_rows in by_run.values()]

    def _point(self, run_rows: Sequence[Sequence[Any]]) -> SeriesPoint:
        """Return a benchmark's point of one run from its rows there (run id, commit,
        created, median, status, kind, slow-clock share), in the results' order."""
        first = run_rows[0]
        medians = [self._median(r[3]) for r in run_rows if r[3] is not None]
        return SeriesPoint(first[0], first[1], first[2],
                           statistics.median(medians) if medians else math.nan,
                           worst_status([r[4] for r in run_rows]), first[5],
                           self._slow_clock_share(run_rows))

    def reader(self, gpu_model: str, since: str | None = None,
               exclude_run: int | None = None) -> SeriesReader:
        """Return the SeriesReader of these arguments, made once for this connection (until
        the store is written or only_branch changes the runs read)."""
        readers: dict[tuple[Any, ...], SeriesReader] = self.__dict__.setdefault("_readers", {})
        key = (gpu_model, since, exclude_run)
        if key not in readers:
            readers[key] = SeriesReader(self, gpu_model, since, exclude_run)
        return readers[key]

    def _forget_reads(self) -> None:
        """Drop the readers' rows: the store was written, or other runs are read now."""
        self.__dict__.pop("_readers", None)

    def runs_of_command(self, key: str | Sequence[str], gpu_model: str,
                        exclude_run: int | None = None, last: int = 3,
                        exclude_commit: str | None = None,
                        skip_failed: bool = False) -> list[int]:
        """Return the ids of the newest `last` runs recorded from a command (its
        command_key, or any of several) with results on a GPU model, newest first (none
        from a store older than version 3, which did not record commands); with
        exclude_commit, none measured at that commit; with skip_failed, none that a check
        recorded as failing the gate (runs.gate; those never judged are kept)."""
        keys = [key] if isinstance(key, str) else list(key)
        if self.version < COMMANDS_SINCE or not keys:
            return []
        passed = (" AND r.gate IS NOT 'fail'"  # NULL: never judged, kept
                  if skip_failed and self.version >= GATE_SINCE else "")
        query = (f"SELECT r.id FROM runs r WHERE r.command_key IN ({','.join('?' * len(keys))})"
                 f"{passed} AND r.id != ? AND (r.git_commit IS NULL OR r.git_commit != ?) "
                 "AND EXISTS ("
                 "SELECT 1 FROM results x LEFT JOIN devices d ON d.id = x.device_id "
                 "WHERE x.run_id = r.id AND COALESCE(d.name, '') = ?) "
                 "ORDER BY r.created DESC, r.id DESC LIMIT ?")
        with self._errors():
            rows = self._conn.execute(query, (*keys, -1 if exclude_run is None else exclude_run,
                                              exclude_commit or "", gpu_model, last)).fetchall()
        return [int(row[0]) for row in rows]

    def command_keys(self) -> list[str]:
        """Return every command_key the store's runs were recorded from."""
        if self.version < COMMANDS_SINCE:
            return []
        with self._errors():
            rows = self._conn.execute("SELECT DISTINCT command_key FROM runs WHERE "
                                      "command_key IS NOT NULL").fetchall()
        return [str(row[0]) for row in rows]

    def run_kernels(self, run_ids: Sequence[int], gpu_model: str
                    ) -> dict[int, tuple[str | None, set[Benchmark]]]:
        """Return each run's commit and the kernels it measured on a GPU model (its
        variant rows but the SKIPs), in a few queries for many runs, each benchmark's key
        columns decoded once."""
        found: dict[int, tuple[str | None, set[Benchmark]]] = {}
        decoded: dict[tuple[Any, ...], Benchmark] = {}
        ids = list(run_ids)
        for start in range(0, len(ids), 500):  # within SQLite's limit on a query's values
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            with self._errors():
                commits = self._conn.execute(
                    f"SELECT id, git_commit FROM runs WHERE id IN ({marks})", chunk).fetchall()
                rows = self._conn.execute(
                    "SELECT x.run_id, x.op, x.variant, x.params, x.shape, x.dtype, x.hot, "
                    "x.l2_flush FROM results x LEFT JOIN devices d ON d.id = x.device_id "
                    f"WHERE x.run_id IN ({marks}) AND COALESCE(d.name, '') = ? "
                    "AND x.kind = 'variant' AND x.status != 'SKIP'", (*chunk, gpu_model)
                ).fetchall()
            found.update((int(run), (commit, set())) for run, commit in commits)
            for row in rows:
                key = tuple(row[1:])
                if key not in decoded:
                    decoded[key] = self._benchmark(key)
                if int(row[0]) in found:
                    found[int(row[0])][1].add(decoded[key])
        return found

    def run_cards(self, run_id: int, gpu_model: str) -> list[DeviceInfo]:
        """Return the cards of a GPU model that a run's results file listed, in its order
        (none from a store older than version 6, nor for the runs recorded before it)."""
        if self.version < CARDS_SINCE:
            return []
        with self._errors():
            rows = self._conn.execute(
                "SELECT c.card FROM cards c JOIN devices d ON d.id = c.device_id "
                "WHERE c.run_id = ? AND d.name = ? ORDER BY c.rowid", (run_id, gpu_model)
            ).fetchall()
        try:
            return [device_from_dict(json.loads(row[0]), Checker(self.path, "cards"))
                    for row in rows]
        except (ValueError, TypeError, RecursionError, ResultsFileError) as exc:
            raise StoreError(damaged_message(
                self.path, f"a run's card cannot be read: {exc}")) from None

    def command_flushes(self, key: str | Sequence[str], gpu_model: str,
                        exclude_run: int | None = None, last: int = 3) -> dict[int, set[str]]:
        """Return the newest `last` runs recorded from a command (its command_key) on a GPU
        model, each with the L2 flushes its results there were measured after ({} from a
        store older than version 3, which did not record commands)."""
        runs = self.runs_of_command(key, gpu_model, exclude_run, last)
        if not runs:
            return {}
        query = ("SELECT x.run_id, x.l2_flush FROM results x LEFT JOIN devices d "
                 "ON d.id = x.device_id WHERE COALESCE(d.name, '') = ? AND x.run_id IN "
                 f"({','.join('?' * len(runs))})")
        with self._errors():
            rows = self._conn.execute(query, (gpu_model, *runs)).fetchall()
        flushes: dict[int, set[str]] = {run: set() for run in runs}
        for run, flush in rows:
            flushes[int(run)].add(str(flush))
        return flushes

    def counts(self) -> dict[str, int]:
        """Return the number of rows of each table (tests, and a summary line)."""
        with self._errors():
            return {table: int(self._conn.execute(f"SELECT COUNT(*) FROM {table}")
                               .fetchone()[0]) for table in sorted(TABLES)}



READ_CHUNK = 512  # the most runs a SeriesReader reads in one query
SHARED_WALK = 2  # a series of the newest N runs walks at most SHARED_WALK * N runs


class SeriesReader:
    """Many benchmarks' series on one GPU model, as Queries.series gives them, read in one
    walk over the runs: newest first, each run's rows once, in chunks that grow until the
    benchmark asked for has the runs it needs. series() per benchmark walked every
    candidate run's rows again for each: a 2000-row sweep's `history check` read each of
    5 runs 6000 times (59 s).

    The walk reaches back at most SHARED_WALK times the runs a series asks for; a
    benchmark still short of them (new, or rare in the store) reads its older runs alone,
    through the results' index of benchmarks: the walk read the whole store for it (1,600
    runs of 150 rows: 6.4 s and +160 MB for one new kernel in the file)."""

    def __init__(self, queries: Queries, gpu_model: str, since: str | None = None,
                 exclude_run: int | None = None) -> None:
        self._queries = queries
        self._gpu_model = gpu_model
        self._since = since
        self._exclude_run = exclude_run
        self._runs: list[tuple[int, str | None, str]] | None = None  # newest first
        self._read = 0  # how many of them were read
        # per benchmark (its key columns), its rows in each run read, newest run first
        self._rows: dict[tuple[Any, ...], list[list[tuple[Any, ...]]]] = {}
        # per benchmark and usable_only, its runs past the walk (_older): how many runs the
        # walk had read, its rows in each run past them, and whether those are all
        self._past: dict[tuple[Any, ...], tuple[int, list[list[tuple[Any, ...]]], bool]] = {}

    def series(self, benchmark: Benchmark, last: int | None = None,
               usable_only: bool = True) -> list[SeriesPoint]:
        """Return Queries.series(benchmark, gpu_model, last, since, exclude_run,
        usable_only)."""
        key = encode_benchmark(benchmark)
        runs = self._rows.setdefault(key, [])
        found: list[list[tuple[Any, ...]]] = []
        at = 0
        while True:
            for run_rows in runs[at:]:
                kept = [row for row in run_rows if not usable_only
                        or (row[4] in USABLE_STATUSES and row[3] is not None)]
                if kept:
                    found.append(kept)
            at = len(runs)
            if last and len(found) >= last:
                break
            if last and self._runs is not None and self._read >= SHARED_WALK * last:
                found += self._older(key, last - len(found), usable_only)
                break
            if not self._read_more():
                break
        if last:
            found = found[:last]
        return [self._queries._point(run_rows) for run_rows in reversed(found)]

    def _older(self, key: tuple[Any, ...], need: int, usable_only: bool
               ) -> list[list[tuple[Any, ...]]]:
        """Return a benchmark's rows in the newest `need` runs older than those the walk
        read (each run's rows, newest run first), read through its key columns' index:
        only its own rows, and of a benchmark with many runs only the first `need` runs'
        fetched."""
        assert self._runs is not None
        past = self._past.get((key, usable_only))
        if past is not None and past[0] == self._read and (past[2] or len(past[1]) >= need):
            return past[1][:need]
        found: list[list[tuple[Any, ...]]] = []
        if self._read >= len(self._runs):  # the walk read every run
            return found
        oldest, _, created = self._runs[self._read - 1]
        where = ["x.op = ?", "x.variant = ?", "x.params = ?", "x.shape = ?", "x.dtype = ?",
                 "x.hot = ?", "x.l2_flush = ?", "COALESCE(d.name, '') = ?",
                 "(r.created < ? OR (r.created = ? AND r.id < ?))"]
        args: list[Any] = [*key, self._gpu_model, created, created, oldest]
        if usable_only:
            where.append(f"x.status IN ({','.join('?' * len(USABLE_STATUSES))})"
                         " AND x.median_s IS NOT NULL")
            args.extend(USABLE_STATUSES)
        self._run_filters(where, args)
        queries = self._queries
        clocks = "x.slow_clock_share" if queries.version >= SLOW_SHARE_SINCE else "NULL"
        whole = True
        # closed where left early: a statement not done holds its read of the store
        with queries._errors(), contextlib.closing(queries._conn.execute(
                "SELECT r.id, r.git_commit, r.created, x.median_s, x.status, x.kind, "
                f"{clocks} FROM results x INDEXED BY results_benchmark "
                "JOIN runs r ON r.id = x.run_id LEFT JOIN devices d ON d.id = x.device_id "
                f"WHERE {' AND '.join(where)} ORDER BY r.created DESC, r.id DESC, x.id",
                args)) as rows:
            for row in rows:
                if not found or found[-1][0][0] != row[0]:  # a run's first row
                    if len(found) == need:
                        whole = False
                        break
                    found.append([])
                found[-1].append(tuple(row))
        self._past[(key, usable_only)] = (self._read, found, whole)
        return found

    def _run_filters(self, where: list[str], args: list[Any]) -> None:
        """Add the runs (r) the series leave out to a query: before --since, and the
        judged file's own run."""
        if self._since is not None:
            where.append("r.created >= ?")
            args.append(self._since)
        if self._exclude_run is not None:
            where.append("r.id != ?")
            args.append(self._exclude_run)

    def _read_more(self) -> bool:
        """Read the next chunk of runs (twice the runs read so far, at most READ_CHUNK);
        return False when every run was read."""
        queries = self._queries
        if self._runs is None:
            where: list[str] = ["1"]
            args: list[Any] = []
            self._run_filters(where, args)
            with queries._errors():
                self._runs = [(int(row[0]), row[1], row[2]) for row in queries._conn.execute(
                    f"SELECT r.id, r.git_commit, r.created FROM runs r WHERE "
                    f"{' AND '.join(where)} ORDER BY r.created DESC, r.id DESC", args)]
        chunk = self._runs[self._read:self._read + min(max(self._read, 16), READ_CHUNK)]
        if not chunk:
            return False
        self._read += len(chunk)
        clocks = "x.slow_clock_share" if queries.version >= SLOW_SHARE_SINCE else "NULL"
        with queries._errors():
            rows = queries._conn.execute(
                f"SELECT x.run_id, x.median_s, x.status, x.kind, {clocks}, x.op, x.variant, "
                "x.params, x.shape, x.dtype, x.hot, x.l2_flush FROM results x "
                "LEFT JOIN devices d ON d.id = x.device_id WHERE x.run_id IN "
                f"({','.join('?' * len(chunk))}) AND COALESCE(d.name, '') = ? ORDER BY x.id",
                [*(run for run, _, _ in chunk), self._gpu_model]).fetchall()
        runs = {run: (commit, created) for run, commit, created in chunk}
        by_run: dict[int, dict[tuple[Any, ...], list[tuple[Any, ...]]]] = {
            run: {} for run, _, _ in chunk}
        for row in rows:
            commit, created = runs[row[0]]
            by_run[row[0]].setdefault(tuple(row[5:]), []).append(
                (row[0], commit, created, row[1], row[2], row[3], row[4]))
        for run, _, _ in chunk:  # newest first
            for key, run_rows in by_run[run].items():
                self._rows.setdefault(key, []).append(run_rows)
        return True
