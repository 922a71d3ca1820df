"""Read a benchmark suite: `cudabench.toml`, or `[tool.cudabench]` in a pyproject.toml.

    kernels_dirs = ["kernels_extra"]   # optional, relative to the config file, `~` the
                                       # home folder (a top-level key: above the first [table])

    [timing]                      # optional, applies to every benchmark
    max_time = 1.0                # seconds of sampling per variant
    precision = 0.005             # or "0.5%"
    min_samples = 20
    warmup = 0.05
    rounds = 1                    # each benchmark's rows measured N times, pooled (--rounds)

    [[benchmark]]
    op = "matmul"                 # an op from `cudabench list`
    sizes = ["1000", "512x256x128"]    # or size = "1000"; a sweep: "256..4096:x2"
    dtypes = ["float32", "int32"]      # or dtype = "float32"; default: float32, else the
                                       # op's first type (as the op's --dtype)
    variants = ["naive", "tiled"]      # optional: default all
    params = { TILE = 16 }             # optional; a list sweeps: { TILE = [8, 16, 32] }
    hot = false                        # optional
    l2_flush = "clean"                 # optional: "clean" or "memset", as --l2-flush
    seed = 0                           # optional
    full_check = false                 # optional: the full reference, as --full-check
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cudabench.catalog.discovery import check_folders
from cudabench.common.flag_terms import SUITE_KEYS, rename_flags
from cudabench.common.infiles import MAX_SOURCE_BYTES, TooLarge, read_capped
from cudabench.common.text import decoded
from cudabench.errors import CudabenchError, UsageError
from cudabench.ops import get_op
from cudabench.planning.plan import Request
from cudabench.planning.timing import TimingPolicy
from cudabench.ops.sizes import MAX_SWEEP_POINTS, expand_sizes
from cudabench.results.model import DEFAULT_L2_FLUSH, L2_FLUSHES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

DEFAULT_FILES = ("cudabench.toml", "pyproject.toml")
TIMING_KEYS = {"warmup": "warmup_s", "min_samples": "min_samples", "max_samples": "max_samples",
               "precision": "precision", "max_time": "max_time_s", "timeout": "timeout_s",
               "compile_timeout": "compile_timeout_s", "rounds": "rounds"}
INTEGER_KEYS = {"rounds"}  # a count of rounds: a whole number
# Sample counts: whole numbers, which older suites may write as 20.0 (taken as 20 as always).
COUNT_KEYS = {"min_samples", "max_samples"}
BENCHMARK_KEYS = {"op", "size", "sizes", "dtype", "dtypes", "variants", "params", "hot", "seed",
                  "sanitize", "full_check", "l2_flush"}


def find_config(directory: Path) -> Path:
    """Return cudabench.toml, or a pyproject.toml with [tool.cudabench], in directory."""
    for name in DEFAULT_FILES:
        path = directory / name
        if path.is_file() and (name != "pyproject.toml" or "cudabench" in _tool(path)):
            return path
    raise UsageError(
        f"no suite in {directory}: create cudabench.toml (see README, 'Suites'), add "
        "[tool.cudabench] to pyproject.toml, or name the config file (`cudabench run FILE`, "
        "`cudabench calibrate FILE`)"
    )


def _tool(path: Path) -> Mapping[str, Any]:
    tool = _read(path).get("tool", {})
    return tool if isinstance(tool, dict) else {}


def _read(path: Path) -> dict[str, Any]:
    try:
        # newlines as a text-mode read gives them (a file with CR line ends loaded)
        # a BOM an editor wrote: "Invalid statement (at line 1, column 1)"
        return dict(tomllib.loads(decoded(read_capped(path, MAX_SOURCE_BYTES), "utf-8-sig")))
    except TooLarge as exc:
        raise UsageError(f"{exc}: not a suite file") from None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such suite file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: a folder, not a suite file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: cannot read as UTF-8 text: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nested too deep; a number too long
        raise UsageError(f"{path}: not a suite cudabench can read: "
                         f"{type(exc).__name__}: {str(exc)[:120]}") from None


def load_suite(path: Path, extra_kernels_dirs: tuple[Path, ...] = ()) -> list[Request]:
    """Return one Request per benchmark x size x dtype of a suite file."""
    data = _read(path)
    where = str(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool")  # `tool = "x"` is no table: none of ours
        table = tool.get("cudabench") if isinstance(tool, dict) else None
        where = f"{path} [tool.cudabench]"
        if not isinstance(table, dict):
            raise UsageError(f"{path}: no [tool.cudabench] table")
        data = table
    unknown = set(data) - {"timing", "kernels_dirs", "benchmark"}
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                         "(expected timing, kernels_dirs, benchmark)")
    timing = _timing(data.get("timing", {}), where)
    dirs = tuple(path.parent / Path(d).expanduser()  # "~/kk": the user's, as a shell reads it
                 for d in _strings(data, "kernels_dirs", where, []))
    try:  # the file's folders, named as its key (each entry said `--kernels-dir nope`)
        check_folders(dirs)
    except UsageError as exc:
        raise UsageError(f"{where}: {rename_flags(str(exc), SUITE_KEYS)}") from None
    entries = data.get("benchmark")
    if isinstance(entries, dict):  # `[benchmark]`: one table, where each entry is one
        raise UsageError(f"{where}: [benchmark] is one table; write each entry under "
                         "[[benchmark]] (two brackets: an array of tables)")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{where}: no [[benchmark]] entries")
    requests: list[Request] = []
    defaults: dict[str, str] = {}  # each op's default type, found once
    for i, entry in enumerate(entries):
        at = f"{where}: benchmark[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{at}: expected a table")
        unknown = set(entry) - BENCHMARK_KEYS
        if unknown:
            raise UsageError(f"{at}: unknown key(s) {', '.join(sorted(unknown))} "
                             f"(expected {', '.join(sorted(BENCHMARK_KEYS))})")
        if not isinstance(entry.get("op"), str):
            raise UsageError(f"{at}.op: expected an op name such as \"matmul\"")
        params = entry.get("params", {})
        if not isinstance(params, dict) or not all(_is_param(v) for v in params.values()):
            raise UsageError(f"{at}.params: expected a table of integers, e.g. {{ TILE = 16 }},"
                             " or lists to sweep, e.g. { TILE = [8, 16, 32] }")
        grid = {name: value if isinstance(value, list) else [value]
                for name, value in params.items()}
        combos = math.prod(len(values) for values in grid.values())  # before making them
        if combos > MAX_SWEEP_POINTS:
            raise UsageError(f"{at}.params: {combos:,} combinations, more than "
                             f"{MAX_SWEEP_POINTS:,}; sweep fewer values")
        points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
        hot = entry.get("hot", False)
        seed = entry.get("seed", 0)
        if not isinstance(hot, bool):
            raise UsageError(f"{at}.hot {hot!r}: expected true or false")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise UsageError(f"{at}.seed {seed!r}: expected an integer")
        full_check = entry.get("full_check", False)
        if not isinstance(full_check, bool):
            raise UsageError(f"{at}.full_check: expected true or false")
        l2_flush = entry.get("l2_flush", DEFAULT_L2_FLUSH)
        if l2_flush not in L2_FLUSHES:
            raise UsageError(f"{at}.l2_flush: expected {' or '.join(map(repr, L2_FLUSHES))}")
        sanitize = entry.get("sanitize")
        if sanitize is not None and not isinstance(sanitize, str):
            raise UsageError(f"{at}.sanitize: expected a tool name such as \"memcheck\"")
        sizes: list[str | None] = [
            expanded for text in _plural(entry, "size", "sizes", at)
            for expanded in (expand_sizes(text, f"{at}.size")
                             if "," in text or ".." in text else [text])] or [None]
        dtypes = (_plural(entry, "dtype", "dtypes", at)
                  or [_default_dtype(entry["op"], dirs + tuple(extra_kernels_dirs), defaults)])
        count = len(sizes) * len(points) * len(dtypes)
        if len(requests) + count > MAX_SWEEP_POINTS:  # the whole suite, like a CLI sweep
            raise UsageError(f"{at}: the suite grows to {len(requests) + count:,} benchmarks, "
                             f"more than {MAX_SWEEP_POINTS:,}; use fewer sizes, types or "
                             "parameter values")
        sweep = count > 1
        for size in sizes:
            for dtype in dtypes:
                for point in points:
                    requests.append(Request(
                        op=entry["op"], size=size, dtype=dtype,
                        variants=tuple(_variants(entry, at)),
                        params=point, seed=seed, hot=hot, l2_flush=l2_flush,
                        sanitize=sanitize,
                        timing=timing,
                        kernels_dirs=dirs + tuple(extra_kernels_dirs),
                        origin=f"{at} ({entry['op']}, size {size or 'default'}, {dtype})",
                        sweep=sweep, full_check=full_check,
                    ))
    return requests


def _default_dtype(op: str, dirs: tuple[Path, ...], found: dict[str, str]) -> str:
    """Return the type an entry without dtype measures: the op command's --dtype default,
    float32 where the op takes it, else its first type (an op of float16 alone). An op
    that cannot be found gets float32: the entry's plan says what is wrong, naming it."""
    if op not in found:
        try:
            found[op] = get_op(op, dirs).default_dtype
        except CudabenchError:
            found[op] = "float32"
    return found[op]


def _is_param(value: Any) -> bool:
    """Return whether a suite's parameter value is an integer or a non-empty list of them."""
    values = value if isinstance(value, list) and value else [value]
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _timing(table: Any, where: str) -> TimingPolicy:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [timing] takes {', '.join(TIMING_KEYS)}")
    unknown = sorted(set(table) - set(TIMING_KEYS))
    if unknown:
        # kernels_dirs written below [timing] is read as one of its keys in TOML
        top = ("; kernels_dirs is a top-level key: write it above the first [table]"
               if "kernels_dirs" in unknown else "")
        raise UsageError(f"{where}: [timing]: unknown key(s) {', '.join(unknown)} (it takes "
                         f"{', '.join(TIMING_KEYS)}){top}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "precision" and isinstance(value, str) and value.strip().endswith("%"):
            try:  # "0.5%", as --precision takes it
                value = float(value.strip()[:-1]) / 100
            except ValueError:
                raise UsageError(f"{where}: timing.precision {value!r}: expected a fraction "
                                 "(0.005) or a percentage (\"0.5%\")") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise UsageError(f"{where}: timing.{key}: expected a number"
                             + (' (a fraction, 0.005, or a percentage, "0.5%")'
                                if key == "precision" else ""))
        if key in INTEGER_KEYS and not isinstance(value, int):
            raise UsageError(f"{where}: timing.{key}: expected a whole number, not {value}")
        if key in COUNT_KEYS and isinstance(value, float):
            if not value.is_integer():
                raise UsageError(f"{where}: timing.{key}: expected a whole number, not {value}")
            value = int(value)
        values[TIMING_KEYS[key]] = value
    try:
        return TimingPolicy(**values).validate()
    except UsageError as exc:
        raise UsageError(f"{where}: [timing]: {rename_flags(str(exc), SUITE_KEYS)}") from None


def _strings(table: Mapping[str, Any], key: str, where: str, default: list[str]) -> list[str]:
    value = table.get(key, default)
    at = f"{where}.{key}" if where.endswith("]") else f"{where}: {key}"  # an entry's, the file's
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{at}: expected a list of strings")
    if any(not v.strip() for v in value):
        raise UsageError(f"{at}: an empty string is not a value")
    return value


def _variants(entry: Mapping[str, Any], where: str) -> list[str]:
    """Return an entry's variants (none given: every variant of the op); `variants = []`
    names none, which ran every one, as if the key were absent."""
    names = _strings(entry, "variants", where, [])
    if "variants" in entry and not names:
        raise UsageError(f'{where}.variants: an empty list names no variant; leave it out to '
                         'run every variant, or name some: variants = ["tiled"]')
    return names


# What a suite's size and dtype look like, for the examples its errors give.
_EXAMPLES = {"size": ('"1000"', '"4096"'), "dtype": ('"float32"', '"float16"')}


def _plural(table: Mapping[str, Any], one: str, many: str, where: str) -> list[str]:
    if one in table and many in table:
        raise UsageError(f"{where}: give {one} or {many}, not both")
    if one in table:
        value = table[one]
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{where}.{one}: expected a string such as {_EXAMPLES[one][0]}")
        return [value]
    values = table.get(many, [])
    if not isinstance(values, list) or (many in table and not values):  # a string: characters
        what = "an empty list names none" if values == [] else "expected a list"
        raise UsageError(f"{where}.{many}: {what}, e.g. {many} = "
                         f"[{', '.join(_EXAMPLES[one])}]")
    values = [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
    return _strings({many: values}, many, where, [])
