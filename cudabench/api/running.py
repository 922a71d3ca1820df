"""run() and run_suite(): the benchmark commands, called from Python.

No second code path: the arguments become the command's own options (a list of sizes or
parameter values sweeps, as the flags do), the command's build_requests and load_suite
turn them into requests, and cli.commands.measure() checks and runs them on the engine
that cli.commands.engine_spec names (the PyCUDA engine; tests replace that function, as
they do for the commands). A kernel given as source text is written to a folder of its own
and read by the catalog like any --kernels-dir file, header and all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import numbers
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from cudabench.api.results import Integer, PathLike, Real, Results, as_path
from cudabench.api.terms import RUN_ARGUMENTS, python_terms, switch
from cudabench.common.cache_dir import cache_root
from cudabench.errors import CudabenchError, ResultsNotWritten, UsageError, folder_gone
from cudabench.planning.plan import Insight
from cudabench.planning.timing import TimingPolicy
from cudabench.results.model import DEFAULT_L2_FLUSH, L2_FLUSHES, BenchmarkResult

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Size: TypeAlias = "Integer | str"
# one size, or several to sweep: a list, or a NumPy array of them
Sizes: TypeAlias = "Size | Sequence[Size] | npt.NDArray[np.integer[Any]]"
_VARIANT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def run(op: str, *, variants: str | Sequence[str] | None = None,
        size: Sizes | None = None, dtype: str | None = None,
        params: Mapping[str, Integer | Sequence[Integer]] | None = None,
        kernels_dir: PathLike | Sequence[PathLike] | None = None,
        sources: Mapping[str, str] | None = None, device: Integer = 0,
        timing: TimingPolicy | None = None, seed: Integer = 0, hot: bool = False,
        l2_flush: str = DEFAULT_L2_FLUSH, vendor: bool = True, batch: bool = True,
        json: PathLike | None = None, progress: bool = False, keep_workers: Real = 0.0,
        writeback: bool = False, full_check: bool = False,
        counters: bool | str | Sequence[str] = False, energy: bool | Real = False,
        transfers: bool = False, sanitize: bool | str = False) -> Results:
    """Verify and time op's variants, as `cudabench OP` does; return every row.

    variants: names to run (default all); size: "1024", 1024, "512x256x128", or a list (or a
    "256..4096:x2" range) to sweep; dtype: default float32 where the op takes it; params:
    NAME -> value, a list sweeps; kernels_dir: more folders of variants and ops; sources:
    variant name -> CUDA source text with its header (`// cudabench: OP` ...); timing: the
    sampling policy; l2_flush: "clean" or "memset", the flush before each cold sample
    (--l2-flush); writeback: also time what each row leaves the L2 to write back
    (--writeback); json: also write the results file here as the rows arrive; progress:
    a progress display on stderr; keep_workers: keep the GPU worker that many idle seconds
    for the next run (--keep-workers: a script or test session of many runs starts it
    once); full_check: verify every element against the float64 reference (--full-check);
    counters: True for ncu's default set, or metric names (--counters); energy: True or
    seconds of back-to-back launches (--energy); transfers: time the host copies
    (--transfers); sanitize: True (memcheck) or a compute-sanitizer tool (--sanitize).
    Bad input raises UsageError (or KernelFileError, naming the file and line); a variant
    that fails verification is a FAIL row, not an exception.
    """
    from cudabench.ops.registry import forget_file_ops
    from cudabench.runner.workers import refuse_in_a_worker_import

    refuse_in_a_worker_import()
    forget_file_ops()  # op files edited since the last run are loaded afresh, as a command does
    with python_terms(RUN_ARGUMENTS), _in_an_existing_folder():
        extra = _extra_insight(full_check, counters, energy, transfers, sanitize)
        return _run(op, variants, size, dtype, params, kernels_dir, sources, device, timing,
                    seed, hot, l2_flush, vendor, batch, json, progress, keep_workers,
                    writeback, extra)


@contextlib.contextmanager
def _in_an_existing_folder() -> Iterator[None]:
    """Re-raise the OSError of a current folder deleted under the caller (a worker's spawn
    and a relative path need it) as the UsageError that says so."""
    try:
        yield
    except OSError:
        gone = folder_gone("os.chdir() to an existing folder")
        if gone is None:
            raise
        raise gone from None


def _extra_insight(full_check: Any, counters: Any, energy: Any, transfers: Any,
                   sanitize: Any) -> dict[str, Any]:
    """Return the command's options for run()'s checks and measurements beyond the
    samples, each given as the command's flag would be (its checks then apply)."""
    from cudabench.cli.options import ENERGY_DEFAULT_S

    if isinstance(counters, bool):
        metrics = "default" if counters else None
    elif isinstance(counters, str) and counters:
        metrics = counters
    elif (isinstance(counters, Sequence) and not isinstance(counters, str) and counters
          and all(isinstance(name, str) and name for name in counters)):
        metrics = ",".join(counters)
    else:
        raise UsageError(f"counters {counters!r}: expected True, or ncu metric names "
                         "(a comma-separated text or a list)")
    if isinstance(energy, bool):
        seconds = str(ENERGY_DEFAULT_S) if energy else None
    elif isinstance(energy, numbers.Real):  # NumPy's too
        seconds = repr(float(energy))  # --energy's own check refuses <= 0, nan, inf
    else:
        raise UsageError(f"energy {energy!r}: expected True, or seconds of launches")
    if isinstance(sanitize, bool):
        tool = "memcheck" if sanitize else None
    elif isinstance(sanitize, str):
        tool = sanitize  # the plan refuses a tool compute-sanitizer lacks, as for the flag
    else:
        raise UsageError(f"sanitize {sanitize!r}: expected True (memcheck) or a "
                         "compute-sanitizer tool such as 'racecheck'")
    return {"full_check": switch(full_check, "full_check"), "counters": metrics,
            "energy": seconds, "transfers": switch(transfers, "transfers"), "sanitize": tool}



def _run(op: str, variants: str | Sequence[str] | None, size: Sizes | None,
         dtype: str | None, params: Mapping[str, Integer | Sequence[Integer]] | None,
         kernels_dir: PathLike | Sequence[PathLike] | None, sources: Mapping[str, str] | None,
         device: Integer, timing: TimingPolicy | None, seed: Integer, hot: bool, l2_flush: str,
         vendor: bool, batch: bool, json: PathLike | None, progress: bool,
         keep_workers: Real, writeback: bool, extra: Mapping[str, Any]) -> Results:
    """run()'s work, its errors in the command's terms."""
    from cudabench.cli.op_commands import refuse_clashes_of
    from cudabench.ops import get_op, load_ops

    if not isinstance(op, str):
        raise UsageError(f"op {op!r}: expected an op's name, e.g. 'matmul' (see `cudabench "
                         "list`)")
    given = _paths(kernels_dir, "kernels_dir")
    get_op(op, given)  # an unknown op is refused before its name becomes a folder of sources
    refuse_clashes_of(load_ops(given))  # an op file the command line refuses
    device = _device(device)
    json_path = as_path(json, "json") if json is not None else None
    if sources:
        _refuse_misplaced_sources(op, sources, given)
    inline = [inline_dir(op, sources)] if sources else []
    with _in_sources_terms(inline):
        return _run_in(op, variants, size, dtype, params, given, inline, device, timing, seed,
                       hot, l2_flush, vendor, batch, json_path, progress, keep_workers,
                       writeback, extra)


@contextlib.contextmanager
def _in_sources_terms(inline: list[Path]) -> Iterator[None]:
    """Re-raise an error naming a file written for run(sources=...) (a header's mistake,
    a compile error) with the source's name, sources['NAME'], in place of the cache path
    the caller never chose."""
    try:
        yield
    except CudabenchError as exc:
        if not inline:
            raise
        written = re.compile(re.escape(str(inline[0])) + r"/\w+/([^/:\s]+)\.cu")
        named = written.sub(lambda m: f"sources[{m[1]!r}]", str(exc))
        if named == str(exc):
            raise
        exc.args = (named,)
        raise exc from None


def _run_in(op: str, variants: str | Sequence[str] | None, size: Sizes | None,
            dtype: str | None, params: Mapping[str, Integer | Sequence[Integer]] | None,
            given: list[Path], inline: list[Path], device: int, timing: TimingPolicy | None,
            seed: Integer, hot: bool, l2_flush: str, vendor: bool, batch: bool,
            json_path: Path | None, progress: bool, keep_workers: Real, writeback: bool,
            extra: Mapping[str, Any]) -> Results:
    """_run's work once its folders are known."""
    from cudabench.cli.options import Outputs, build_requests

    dirs = [*given, *inline]
    names = _names(variants)
    sizes = _sizes(size)
    dtype = _dtype_name(dtype)
    chosen = dtype if dtype is not None else _default_dtype(op, dirs)
    policy = timing if timing is not None else TimingPolicy()
    if not isinstance(policy, TimingPolicy):
        raise UsageError(f"timing {policy!r}: expected a cudabench.TimingPolicy")
    param_texts = _param_texts(params)
    options: dict[str, Any] = {
        "size": sizes, "dtype": chosen, "variants": tuple(names), "params": param_texts,
        "seed": _int(seed, "seed"), "kernels_dirs": tuple(dirs), "hot": switch(hot, "hot"),
        "l2_flush": l2_flush, **extra, "no_vendor": not switch(vendor, "vendor"),
        "no_batch": not switch(batch, "batch"), "writeback": switch(writeback, "writeback"),
        "warmup": policy.warmup_s, "min_samples": policy.min_samples,
        "max_samples": policy.max_samples, "precision": policy.precision,
        "max_time": policy.max_time_s, "timeout": policy.timeout_s,
        "compile_timeout": policy.compile_timeout_s, "rounds": policy.rounds,
    }
    requests = build_requests(op, {}, **options)
    keep = _seconds(keep_workers, "keep_workers")
    argv = _command(op, options, device) + _keep_flag(keep)
    outputs = Outputs(json_path=json_path, progress=switch(progress, "progress"), argv=argv[1:])
    return _measure(requests, device, outputs, argv, keep)


def run_suite(path: PathLike | None = None, *,
              kernels_dir: PathLike | Sequence[PathLike] | None = None, device: Integer = 0,
              vendor: bool = True, batch: bool = True, json: PathLike | None = None,
              progress: bool = False, keep_workers: Real = 0.0,
              l2_flush: str | None = None) -> Results:
    """Run a suite file (cudabench.toml, or pyproject.toml's [tool.cudabench]; default:
    the one in the current folder), as `cudabench run` does; return every row.
    keep_workers: as for run(); l2_flush: the flush of every entry, whatever the file says
    (None: the file's, clean by default)."""
    from cudabench.ops.registry import forget_file_ops
    from cudabench.runner.workers import refuse_in_a_worker_import

    refuse_in_a_worker_import()
    forget_file_ops()  # op files edited since the last run are loaded afresh, as a command does
    with python_terms(RUN_ARGUMENTS), _in_an_existing_folder():
        return _run_suite(path, kernels_dir, device, vendor, batch, json, progress,
                          keep_workers, l2_flush)


def _run_suite(path: PathLike | None, kernels_dir: PathLike | Sequence[PathLike] | None,
               device: Integer, vendor: bool, batch: bool, json: PathLike | None,
               progress: bool, keep_workers: Real, l2_flush: str | None) -> Results:
    """run_suite()'s work, its errors in the command's terms."""
    from cudabench.catalog.discovery import check_folders, refuse_empty_folders
    from cudabench.cli.options import Outputs, with_flush
    from cudabench.cli.suite import find_config, load_suite

    config = as_path(path, "path") if path is not None else find_config(Path.cwd())
    dirs = tuple(_paths(kernels_dir, "kernels_dir"))
    # the arguments first: checked while planning the suite, their errors named its entries
    check_folders(dirs)
    refuse_empty_folders(dirs)  # one given by mistake: the argument's, not the suite's
    if l2_flush is not None and l2_flush not in L2_FLUSHES:
        raise UsageError(f"l2_flush {l2_flush!r}: expected one of {', '.join(L2_FLUSHES)}, "
                         "or None for the suite's own")
    device = _device(device)
    json_path = as_path(json, "json") if json is not None else None
    insight = Insight(vendor=switch(vendor, "vendor"), batch=switch(batch, "batch"))
    requests = [dataclasses.replace(request, insight=insight)
                for request in with_flush(load_suite(config, dirs), l2_flush)]
    # no path: the command bare `cudabench run` is, which the history store keys the
    # folder's suite by (its absolute path was another command: the missing-kernel vote
    # and the auto threshold read another command's runs)
    named = [str(config)] if path is not None else []
    argv = ["cudabench", "run", *named, *(a for d in dirs for a in ("--kernels-dir", str(d)))]
    argv += ["--l2-flush", l2_flush] if l2_flush else []
    argv += [flag for flag, off in (("--no-vendor", not vendor), ("--no-batch", not batch))
             if off]
    keep = _seconds(keep_workers, "keep_workers")
    argv += _keep_flag(keep)
    outputs = Outputs(json_path=json_path, progress=switch(progress, "progress"),
                      argv=argv[1:], inputs=(config,))  # the suite file is never written over
    return _measure(requests, device, outputs, argv, keep)


def _measure(requests: list[Any], device: int, outputs: Any, argv: list[str],
             keep_s: float = 0.0) -> Results:
    from cudabench.cli import commands
    from cudabench.cli.options import Placement
    from cudabench.results.writer import provenance

    # the commit and time of the measurement: to_json() or record() later kept those of the
    # moment they wrote (a run measured before a commit was recorded at it)
    stamped = provenance()
    heard: dict[tuple[object, ...], BenchmarkResult] = {}  # the rows so far, by benchmark

    def hear(row: BenchmarkResult) -> None:  # a later round's row replaces the earlier
        heard[(row.key, row.device.identity if row.device else None)] = row

    try:
        with commands.rows_heard_by(hear):
            measured = commands.measure(requests, device, outputs,
                                        Placement(keep_workers_s=keep_s))
    except KeyboardInterrupt as stop:
        # Ctrl-C in a notebook or script: the rows measured so far ride on the exception
        # (stopped_results(e), or e.results), as a stopped command keeps them:
        # marked incomplete, as its file is, so that compare() and to_json() say so
        stop.results = Results(tuple(heard.values()), (), tuple(argv),  # type: ignore[attr-defined]
                               metadata={**stamped, "complete": False})
        raise
    if measured.writer is not None:  # written: another run of this process may write it
        measured.writer.close()
    results = Results(measured.outcome.results, measured.outcome.notes, tuple(argv),
                      dict(measured.versions), measured.json_path, stamped)
    if measured.write_error is not None:  # every row is still the caller's, on the error
        raise ResultsNotWritten(measured.write_error, results)
    return results


def stopped_results(stop: BaseException) -> Results | None:
    """Return the rows run() or run_suite() had measured when stop, the KeyboardInterrupt
    it raised, ended it (marked incomplete); None for one raised elsewhere. Typed, where
    `stop.results` is not: `except KeyboardInterrupt as stop: cb.stopped_results(stop)`."""
    kept = getattr(stop, "results", None)
    return kept if isinstance(kept, Results) else None


def _seconds(value: Any, name: str) -> float:
    """Return value as seconds an idle worker is kept (0 to 86400), else UsageError."""
    seconds = float(value) if isinstance(value, numbers.Real) else None  # NumPy's too
    if isinstance(value, bool) or seconds is None or not (
            math.isfinite(seconds) and 0 <= seconds <= 86400):
        raise UsageError(f"{name} {value!r}: expected the seconds an idle worker is kept, "
                         "0 to 86400")
    return seconds


def _keep_flag(seconds: float) -> list[str]:
    return ["--keep-workers", f"{seconds:g}"] if seconds else []


def _refuse_misplaced_sources(op: str, sources: Mapping[str, str], given: Sequence[Path]
                              ) -> None:
    """Refuse, in the sources' own terms, a source whose header names another op and a
    name a variant of op has already (the catalog would name a cache file the caller never
    wrote and ask to rename it)."""
    from cudabench.catalog import discover

    if not isinstance(sources, Mapping):
        return  # inline_dir says what sources must be
    existing = discover(given).get(op, {})
    for name, text in sources.items():
        first = text.lstrip("\ufeff").lstrip().partition("\n")[0] if isinstance(text, str) \
            else ""
        declared = re.match(r"//\s*cudabench:\s*(\S+)", first)
        if declared and declared[1] != op:
            raise UsageError(f"sources[{name!r}]: its header declares op {declared[1]}, and "
                             f"run() was asked for {op!r}: run it as op {declared[1]!r}")
        if name in existing:
            raise UsageError(f"sources[{name!r}]: {op} has a variant {name} already "
                             f"({existing[name].path}): give the source another name")


def inline_dir(op: str, sources: Mapping[str, str]) -> Path:
    """Write each source as <folder>/<op>/<name>.cu and return the folder: a --kernels-dir
    the catalog reads as usual. The folder is named by the sources' hash, so the same
    sources give the same paths (and results files name files that still hold them)."""
    if not isinstance(sources, Mapping):
        raise UsageError("sources: expected a mapping of variant name to CUDA source text")
    # The op is in the hash: sources first run under another op (a mistake the catalog then
    # refuses) must not leave a file that every later run of the same sources reads.
    digest = hashlib.sha256(repr((op, sorted((str(k), str(v)) for k, v in sources.items())))
                            .encode()).hexdigest()[:16]
    try:
        root = private_folder(inline_root())
    except OSError:  # the cache folder cannot hold it (a file, read-only): the temporary one
        try:
            root = private_folder(temporary_inline_root())
        except OSError as exc:
            raise UsageError(f"sources: no folder to write them to ({exc.strerror or exc}): "
                             "set CUDABENCH_CACHE_DIR to a folder of your own") from None
    folder = root / digest
    for name, text in sources.items():
        if not isinstance(name, str) or not _VARIANT_NAME.fullmatch(name):
            raise UsageError(f"sources: variant name {name!r}: use letters, digits, _ and -, "
                             "starting with a letter (it becomes NAME.cu)")
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"sources[{name!r}]: expected the CUDA source text, header "
                             "first (// cudabench: OP ...)")
        target = folder / op / f"{name}.cu"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{name}.")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, target)  # another process writing the same text: no tear
    return folder


def inline_root() -> Path:
    """Return where inline sources are written: the cache folder's inline-UID/ (they outlive
    a reboot, as the results files that name them do), else a folder of this user's in the
    temporary folder (CUDABENCH_CACHE_DIR=off)."""
    root = cache_root()
    if root is not None:  # one folder a user: a cache folder shared by several is no clash
        return root / f"inline-{os.getuid()}"
    return temporary_inline_root()


def temporary_inline_root() -> Path:
    """Return this user's folder for inline sources in the temporary folder."""
    return Path(tempfile.gettempdir()) / f"cudabench-inline-{os.getuid()}"


def private_folder(folder: Path) -> Path:
    """Make folder readable and writable by this user alone, or check that it is: the
    catalog imports every .py and compiles every .cu in a kernels folder, so a folder
    another user can write to (a name anyone can guess in a shared /tmp) would run their
    code. UsageError naming the folder when it is not this user's private one."""
    folder.parent.mkdir(parents=True, exist_ok=True)  # OSError: the caller tries elsewhere
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    state = os.lstat(folder)
    if (not stat.S_ISDIR(state.st_mode) or state.st_uid != os.getuid()
            or state.st_mode & 0o077):
        raise UsageError(f"{folder}: the folder for inline kernel sources is not private to "
                         f"this user (owner uid {state.st_uid}, mode "
                         f"{stat.filemode(state.st_mode)}): another user could put code "
                         "there that the run would import; remove it, or set "
                         "CUDABENCH_CACHE_DIR to a folder of your own")
    return folder


def _paths(value: PathLike | Sequence[PathLike] | None, name: str) -> list[Path]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [as_path(value, name, folder=True)]
    if not isinstance(value, Iterable):  # a list, a tuple, a set, a generator
        raise UsageError(f"{name} {value!r}: expected a folder, or a list of folders")
    return [as_path(item, name, folder=True) for item in value]


def _names(variants: str | Sequence[str] | None) -> list[str]:
    if variants is None:
        return []
    # not a dict's keys, nor b"naive"'s numbers
    if not isinstance(variants, (str, Iterable)) or isinstance(variants, (bytes, Mapping)):
        raise UsageError(f"variants {variants!r}: expected a variant name or a list of names "
                         "(see `cudabench list`)")
    names = [variants] if isinstance(variants, str) else list(variants)
    if not names:  # a list filtered to nothing: running every variant would not be it
        raise UsageError("variants []: an empty list names no variant; leave variants out "
                         "(None) to run the defaults")
    for name in names:
        if not isinstance(name, str) or not name:
            raise UsageError(f"variants: {name!r} is not a variant name (see `cudabench list`)")
        if "," in name:  # the command's advice, "give each: --variant ...", read oddly here
            parts = [part.strip() for part in name.split(",") if part.strip()]
            raise UsageError(f"variants {name!r}: one name a string (a comma list is not "
                             f"one); give a list: variants={parts!r}")
    return names


def _sizes(size: Sizes | None) -> str | None:
    """Return the --size text: one size, or a comma list that sweeps."""
    if size is None:
        return None
    given: Any = size
    if isinstance(given, tuple):  # (64, 32, 16) reads as one shape as often as a sweep
        shape = "x".join(str(item) for item in given)
        raise UsageError(f"size {given!r}: a tuple is ambiguous; give {shape!r} for one "
                         f"shape, or a list, {list(given)!r}, to sweep")
    if hasattr(given, "ndim") and hasattr(given, "tolist"):  # a NumPy array of sizes
        given = given.tolist()
    items = list(given) if isinstance(given, (list, range)) else [given]
    texts = []
    for item in items:
        number = whole(item)
        if number is None and (not isinstance(item, str) or not item.strip()):
            raise UsageError(f"size {item!r}: expected an integer or text such as '1024', "
                             "'512x256x128' or '256..4096:x2'")
        texts.append(str(number if number is not None else item))
    if not texts:
        raise UsageError("size: an empty list sweeps nothing; give at least one size")
    return ",".join(texts)


def _param_texts(params: Mapping[str, Integer | Sequence[Integer]] | None
                 ) -> tuple[str, ...]:
    """Return the --param texts: NAME=VALUE, or NAME=V1,V2 for a list (a sweep)."""
    if params is None:
        return ()
    if not isinstance(params, Mapping):
        raise UsageError("params: expected a mapping of parameter name to an integer or a "
                         "list of integers, e.g. {'TILE': 16} or {'TILE': [8, 16, 32]}")
    texts = []
    for name, value in params.items():
        if not isinstance(name, str):  # {1: 16}: the command's "expected NAME=INTEGER"
            raise UsageError(f"params: key {name!r} is not a parameter name; name one as its "
                             "kernels' headers do, e.g. {'TILE': 16}")
        values = [value] if whole(value) is not None else value
        if (isinstance(value, (str, bytes)) or not isinstance(values, Sequence) or not values
                or any(whole(v) is None for v in values)):
            raise UsageError(f"params[{name!r}] = {value!r}: expected an integer or a list of "
                             "integers, e.g. 16 or [8, 16, 32]")
        texts.append(f"{name}={','.join(str(whole(v)) for v in values)}")
    return tuple(texts)


def _dtype_name(dtype: Any) -> str | None:
    """Return dtype as a type's name: a string, or NumPy's own (np.float32, np.dtype("f4")),
    else UsageError (a list of types: a run measures one)."""
    if dtype is None or isinstance(dtype, str):
        return dtype
    import numpy

    if isinstance(dtype, numpy.dtype) or (isinstance(dtype, type)
                                          and issubclass(dtype, numpy.generic)):
        return str(numpy.dtype(dtype).name)
    raise UsageError(f"dtype {dtype!r}: expected one type's name, e.g. 'float32' (a run "
                     "measures one type: run once per type)")


def whole(value: Any) -> int | None:
    """Return value as an int when it is an integer, NumPy's included (a notebook's sizes
    often are), not a bool; else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _int(value: Any, name: str) -> int:
    number = whole(value)
    if number is None:
        raise UsageError(f"{name} {value!r}: expected an integer")
    return number


def _device(value: Any) -> int:
    """Return a CUDA device index (0 or more), else UsageError as --device's range gives."""
    index = _int(value, "device")
    if index < 0:
        raise UsageError(f"device {index}: a CUDA device index is 0 or more")
    return index


def _default_dtype(op: str, dirs: Sequence[Path]) -> str:
    """Return the --dtype a command defaults to: float32 where the op takes it."""
    from cudabench.ops import get_op

    return get_op(op, dirs).default_dtype


def _command(op: str, options: Mapping[str, Any], device: int) -> list[str]:
    """Return the command line that runs what run() was asked (for the results file)."""
    from cudabench.cli.names import command_name
    from cudabench.ops import get_op

    spec = get_op(op, options["kernels_dirs"])
    argv = ["cudabench", command_name(spec)]
    if spec.command_flag:  # transpose_inplace is `cudabench transpose --inplace`
        argv.append(f"--{spec.command_flag}")
    if options["size"] is not None:
        argv += ["--size", options["size"]]
    argv += ["--dtype", options["dtype"]]
    for name in options["variants"]:
        argv += ["--variant", name]
    for text in options["params"]:
        argv += ["--param", text]
    for folder in options["kernels_dirs"]:
        argv += ["--kernels-dir", str(folder)]
    defaults = TimingPolicy()
    for flag, key, default in (("--seed", "seed", 0), ("--warmup", "warmup", defaults.warmup_s),
                               ("--min-samples", "min_samples", defaults.min_samples),
                               ("--max-samples", "max_samples", defaults.max_samples),
                               ("--precision", "precision", defaults.precision),
                               ("--max-time", "max_time", defaults.max_time_s),
                               ("--timeout", "timeout", defaults.timeout_s),
                               ("--compile-timeout", "compile_timeout",
                                defaults.compile_timeout_s),
                               ("--rounds", "rounds", defaults.rounds)):
        if options[key] != default:
            argv += [flag, str(options[key])]
    if options.get("l2_flush", DEFAULT_L2_FLUSH) != DEFAULT_L2_FLUSH:
        argv += ["--l2-flush", options["l2_flush"]]
    argv += [flag for flag, on in (("--hot", options["hot"]),
                                   ("--no-vendor", options["no_vendor"]),
                                   ("--no-batch", options["no_batch"]),
                                   ("--writeback", options["writeback"]),
                                   ("--full-check", options["full_check"]),
                                   ("--transfers", options["transfers"])) if on]
    for flag, key in (("--counters", "counters"), ("--energy", "energy"),
                      ("--sanitize", "sanitize")):
        if options[key] is not None:
            argv.append(f"{flag}={options[key]}")
    if device:
        argv += ["--device", str(device)]
    return argv
