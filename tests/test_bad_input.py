"""Every input rejected cleanly: no traceback, no exit 4, no hang, no overwritten file.

Named classes of bad input first (each once misbehaved), then property-based tests
(hypothesis) that feed random and mutated results files, suites, headers and flags.
"""

from __future__ import annotations

import contextlib
import json
import os
import string
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cudabench.catalog import parse_header
from cudabench.cli import cli
from cudabench.cli.suite import load_suite
from cudabench.errors import CudabenchError
from cudabench.planning.plan import make_plan
from cudabench.results import RunOutcome

DATA = Path(__file__).parent / "data" / "compare"
BASELINE = json.loads((DATA / "baseline.json").read_text())
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def clean(done, codes=(2,)) -> None:
    """The command ended with one of codes, a message, and no traceback."""
    assert done.exit_code in codes, done.output
    assert "Traceback" not in done.output and "internal error" not in done.output


# -- the classes that once misbehaved ----------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (["matmul", "-p", "TILE=8", "-p", "TILE=16"], "--param TILE given twice"),
    # the next option taken for the value: results written to a file named --quiet
    (["matmul", "--json", "--quiet"], "--json --quiet: --json takes a value, and --quiet is "
     "one of this command's options: give --json its value first"),
    (["report", "r.json", "--markdown", "--html"], "--markdown --html: --markdown takes a "
     "value"),
    (["dot", "--json", "--help"], "--json --help: --json takes a value"),  # ran, wrote ./--help
    (["matmul", "--seed", "-1"], "--seed -1: must be between 0"),
    (["dot", "--warmup", "inf"], "--warmup inf: must be a finite number"),
    (["dot", "--max-time", "nan"], "--max-time nan: must be a finite number"),
    (["dot", "--precision", "-0.1"], "--precision must be > 0"),
    (["dot", "--precision", "abc"], "is not a fraction (0.005) or a percentage (0.5%)"),
    # int() took each for 16 without a word
    (["matmul", "-p", "TILE=1_6"], "--param TILE '1_6': expected integers"),
    (["matmul", "-p", "TILE=+16"], "--param TILE '+16': expected integers"),
    (["matmul", "-p", "TILE=\uff11\uff16"], "expected integers"),
    (["dot", "--size", "\uff16\uff14"], "sizes are positive integers"),
    # positive, but too large: it said "sizes are positive integers"
    (["dot", "--size", "1<<70"], "--size '1<<70': each extent must be at most 2^31-1"),
    # a timeout the warm-up and sampling fill: every variant killed, the kernel blamed
    (["dot", "--warmup", "5", "--timeout", "1"],
     "--timeout 1 s leaves no time to sample: a variant's warm-up (--warmup 5 s)"),
    # taken, then every row warned of "the 0 s budget": no time was left to sample
    (["dot", "--warmup", "1.9", "--timeout", "2"],
     "--timeout 2 s leaves no time to sample: a variant's warm-up (--warmup 1.9 s)"),
    (["ab", "A", "B", "--warmup", "1e12"],
     "--timeout 60 s leaves no time to sample: a variant's warm-up (--warmup 1e+12 s)"),
    # the user gave no --warmup, or 0: it was blamed ("--warmup 0 s ... lower it")
    (["dot", "--warmup", "0", "--timeout", "0.25"], "other passes run within it; raise "
     "--timeout"),
    (["ab", "A", "B", "--warmup", "nan"], "--warmup nan: must be a finite number"),
    # "--max-samples must be at most ...": ab has --samples, and no --max-time
    (["ab", "A", "B", "--samples", "99999999999"], "--samples must be at most 1,000,000,000 "
     "(ab's 1 s a round ends sampling long before)"),
    # "sizes are positive integers such as 1000"
    (["ab", "A", "B", "--size", "64,128"], "--size 64,128: ab measures one size; give a single"),
    # an optional value starting with '-' was "No such option '-1'"
    (["dot", "--energy", "-1"], "--energy -1: --energy takes no value starting with '-'"),
    # added to the watchdog's deadline: the run never ended, --timeout or not
    (["dot", "--energy", "1e30"], "--energy 1e30: at most 3600 s of energy sampling"),
    (["dot", "--energy=-1"], "--energy -1: --energy takes no value starting with '-'"),
    (["dot", "--counters", "-3"], "--counters -3: --counters takes no value starting with"),
    # "No such option '-x'", where --energy=-1 said what was wrong
    (["dot", "--counters=-x"], "--counters -x: --counters takes no value starting with '-'"),
    (["dot", "--sanitize=-x"], "--sanitize -x: --sanitize takes no value starting with '-'"),
    # a decimal or -inf was "No such option '-0'" (Click's first letter of -0.5)
    (["dot", "--energy", "-0.5"], "--energy -0.5: --energy takes no value starting with '-'"),
    (["dot", "--energy=-0.5"], "--energy -0.5: --energy takes no value starting with '-'"),
    (["dot", "--counters", "-inf"], "--counters -inf: --counters takes no value starting with"),
    (["dot", "--sanitize", "-1.5"], "--sanitize -1.5: --sanitize takes no value starting with"),
    (["run", "--energy", "-.5"], "--energy -.5: --energy takes no value starting with '-'"),
    (["dot", "--energy", "A/dot/atomic.cu"], "is a file, not seconds; give the file before"),
    # an argument, not an option: it said "leave the option out"
    (["run", ""], "[CONFIG]': an empty value is not one: give a value, or leave CONFIG out "
     "for its default"),
    (["compare", "", "x.json"], "'BASELINE': an empty value is not one: give a value ("),
    (["dot", "--json", ""], "an empty value is not one: give a value, or leave the option out"),
])
def test_bad_flags_are_one_line(no_gpu_work, tmp_path, args, says):
    for side in ("A", "B"):  # ab's two folders of kernels
        (tmp_path / side / "dot").mkdir(parents=True)
        (tmp_path / side / "dot" / "atomic.cu").write_bytes(
            (Path(__file__).parents[1] / "kernels" / "dot" / "atomic.cu").read_bytes())
    args = [str(tmp_path / a) if a.split("/")[0] in ("A", "B") else a for a in args]
    done = invoke(*args)
    clean(done)
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("timing", "says"), [
    ("warmup = 1e300", "timing.timeout 60 s leaves no time to sample: a variant's warm-up "
     "(timing.warmup 1e+300 s)"),
    ("min_samples = 1.5", "timing.min_samples: expected a whole number, not 1.5"),
    ("max_samples = 1.7", "timing.max_samples: expected a whole number, not 1.7"),
    ("max_samples = 1e300", "timing.max_samples must be at most 1,000,000,000"),
    # it blamed max_samples, which the suite did not set
    ("min_samples = 1e30", "timing.min_samples must be at most 1,000,000,000"),
    ("", 'dtypes: an empty list names none, e.g. dtypes = ["float32", "float16"]'),
])
def test_a_suite_s_timing_is_held_to_the_flags_rules(tmp_path, timing, says):
    suite = tmp_path / "cudabench.toml"
    entry = 'size = "1000"' if timing else 'size = "1000"\ndtypes = []'
    suite.write_text(f'[timing]\n{timing}\n[[benchmark]]\nop = "dot"\n{entry}\n')
    done = invoke("run", suite, "--dry-run")
    clean(done)
    assert says in done.stderr, done.stderr


def test_a_suite_string_where_a_list_belongs_is_refused(tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsizes = "1000"\n')
    with pytest.raises(CudabenchError, match="sizes: expected a list"):
        load_suite(suite)


@pytest.mark.parametrize("content", [b"\xff\xfe[\x00[\x00", "ünïcode".encode("utf-16")])
def test_binary_and_utf16_files_are_refused(tmp_path, content):
    for name in ("cudabench.toml", "r.json"):
        path = tmp_path / name
        path.write_bytes(content)
        done = invoke("run", path) if name.endswith(".toml") else invoke("compare", path, path)
        clean(done)


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000, "1" + "0" * 5000])
def test_deep_nesting_and_huge_numbers_are_refused(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    clean(invoke("compare", DATA / "baseline.json", path))


def test_a_current_file_with_no_benchmarks_does_not_pass_the_gate(tmp_path):
    empty = dict(BASELINE, benchmarks=[])
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(empty))
    done = invoke("compare", DATA / "baseline.json", path)
    clean(done)
    assert "holds no benchmarks" in done.stderr


def test_markdown_may_not_overwrite_a_compared_file(tmp_path):
    copy = tmp_path / "current.json"
    copy.write_text((DATA / "identical.json").read_text())
    before = copy.read_text()
    done = invoke("compare", DATA / "baseline.json", copy, "--markdown", copy)
    clean(done)
    assert copy.read_text() == before


def test_an_unwritable_json_path_fails_before_any_gpu_work(no_gpu_work, tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr("cudabench.cli.commands.run_plans",
                        lambda *args, **kwargs: ran.append(1) or RunOutcome(()))
    (tmp_path / "file").write_text("")
    done = invoke("dot", "--json", tmp_path / "file" / "r.json")
    clean(done)
    assert "--json" in done.stderr and not ran


@pytest.mark.parametrize(("launch", "says"), [
    ("grid N - N; block 32", "has an extent below 1"),
    ("grid 1; block 32; dynamic_shared 0 - 64", "dynamic_shared: -64 bytes is negative"),
])
def test_a_header_with_grid_0_or_negative_shared_memory_is_refused(tmp_path, launch, says):
    from cudabench.planning.plan import Request

    folder = tmp_path / "dot"
    folder.mkdir()
    (folder / "bad.cu").write_text(f"// cudabench: dot\n// launch k: {launch}\n"
                                   'extern "C" __global__ void k() {}\n')
    with pytest.raises(CudabenchError, match=says):
        make_plan(Request(op="dot", size="1000", variants=("bad",),
                          kernels_dirs=(tmp_path,)))


def test_a_kernel_file_may_start_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes("\ufeff// cudabench: dot\n// launch k: grid 1; block 1\n".encode())
    assert parse_header(path).op == "dot"


# -- property-based: random and mutated inputs ------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)


def paths_of(value: object, prefix: tuple = ()) -> list[tuple]:
    """Return every path (keys and indexes) into a JSON value."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            found += paths_of(item, (*prefix, index))
    return found


ALL_PATHS = [p for p in paths_of(BASELINE) if p]


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), json_values, st.booleans()),
                min_size=1, max_size=4))
@example(edits=[(("benchmarks",), True, False)])  # a version-1 file's migration met it
def test_a_mutated_results_file_never_crashes_compare(tmp_path_factory, edits):
    document = json.loads(json.dumps(BASELINE))
    for path, value, delete in edits:
        parent = document
        try:
            for key in path[:-1]:
                parent = parent[key]
            if delete and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    target = tmp_path_factory.mktemp("fuzz") / "mutated.json"
    target.write_text(json.dumps(document))
    before = target.read_text()
    clean(invoke("compare", DATA / "baseline.json", target), codes=(0, 1, 2))
    assert target.read_text() == before


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_as_a_results_file_are_refused(tmp_path_factory, content):
    target = tmp_path_factory.mktemp("fuzz") / "random.json"
    target.write_bytes(content)
    clean(invoke("compare", target, target), codes=(2,))


HEADER_WORDS = ["launch", "k:", "grid", "block", "param", "TILE:", "default", "allowed", "1",
                "16", "..", ",", ";", "cdiv(N,", ")", "N", "TILE", "dtypes:", "float32",
                "shared_bytes:", "dynamic_shared", "*", "-", "//", "description:", "0"]


@FUZZ
@given(st.lists(st.lists(st.sampled_from(HEADER_WORDS), max_size=10).map(" ".join),
                max_size=5))
def test_random_headers_fail_only_as_header_errors(tmp_path_factory, lines):
    from cudabench.planning.plan import Request

    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "dot").mkdir()
    text = "\n".join(["// cudabench: dot", *(f"// {line}" for line in lines)])
    (folder / "dot" / "k.cu").write_text(text + '\nextern "C" __global__ void k() {}\n')
    with contextlib.suppress(CudabenchError):  # any other exception fails the test
        make_plan(Request(op="dot", size="1000", variants=("k",), kernels_dirs=(folder,)))


SUITE_KEYS = ["op", "size", "sizes", "dtype", "dtypes", "variants", "params", "hot", "seed",
              "timing", "kernels_dirs", "benchmark", "max_time", "warmup", "colour"]
toml_values = (st.sampled_from(['"dot"', '"matmul"', '"1000"', '["1000"]', "true", "-1",
                                "1e400", '"float64"', "{ TILE = 8 }", '["naive"]', "[1, 2]",
                                '""', "0"]))


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(SUITE_KEYS), toml_values), max_size=6),
       st.booleans())
def test_random_suites_fail_only_as_usage_errors(tmp_path_factory, pairs, as_table):
    lines = ["[[benchmark]]" if as_table else ""] + [f"{key} = {value}" for key, value in pairs]
    suite = tmp_path_factory.mktemp("fuzz") / "cudabench.toml"
    suite.write_text("\n".join(lines) + "\n")
    with contextlib.suppress(CudabenchError):  # any other exception fails the test
        for request in load_suite(suite):
            make_plan(request)


FLAG_VALUES = st.sampled_from(["--size", "--dtype", "--seed", "--param", "--tile", "--warmup",
                               "--max-time", "--timeout", "--precision", "--min-samples",
                               "--variant", "--hot", "--block", "--inplace"]) | st.text(
    alphabet=string.ascii_letters + string.digits + "=-<x.,_ ", max_size=12)


@FUZZ
@given(st.sampled_from(["matmul", "transpose", "dot"]), st.lists(FLAG_VALUES, max_size=8))
def test_random_flags_end_in_a_result_or_a_usage_error(no_gpu_work, command, flags):
    clean(invoke(command, *flags), codes=(0, 2))


# -- endless inputs ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["report", "/dev/zero"], ["compare", "/dev/zero", "/dev/zero"],
                                  ["history", "import", "/dev/urandom", "--db", "h.db"],
                                  ["run", "/dev/zero", "--dry-run"]])
def test_a_device_named_as_an_input_is_refused_not_read_forever(no_gpu_work, tmp_path,
                                                               monkeypatch, args):
    # each read /dev/zero until the kernel's OOM killer ended it (24 GB resident)
    monkeypatch.chdir(tmp_path)
    done = invoke(*args)
    clean(done)
    assert "a device, not a file" in done.output


def test_a_kernel_file_linked_to_a_device_is_refused(no_gpu_work, tmp_path):
    (tmp_path / "dot").mkdir()
    (tmp_path / "dot" / "zero.cu").symlink_to("/dev/zero")
    done = invoke("dot", "--kernels-dir", tmp_path, "--dry-run")
    clean(done)
    assert "zero.cu: cannot read kernel file" in done.output and "a device" in done.output


LONG = "d" * 300  # one name past the 255 bytes of a file system's names: ENAMETOOLONG


@pytest.mark.parametrize(("args", "env", "says"), [
    (["list", "--kernels-dir", LONG], {}, f"--kernels-dir {LONG}: too long a name"),
    (["matmul", "--kernels-dir", LONG, "--dry-run"], {}, f"--kernels-dir {LONG}: too long"),
    (["ab", LONG, "B"], {}, f"OLD_DIR {LONG}: too long a name"),
    (["run", "long.toml", "--dry-run"], {}, f"kernels_dirs {LONG}: too long a name"),
    (["compare", "r.json", "new.json", "--db", f"{LONG}.db"], {}, f"--db {LONG}.db: too long"),
    (["history", "show"], {"CUDABENCH_HISTORY_DB": f"{LONG}.db"},
     f"CUDABENCH_HISTORY_DB={LONG}.db: too long a name"),
    (["dot", "--size", "100", "--record"], {"CUDABENCH_HISTORY_DB": f"{LONG}.db"},
     f"CUDABENCH_HISTORY_DB={LONG}.db: too long a name"),
    (["dot", "--size", "100"], {"CUDABENCH_CACHE_DIR": LONG},
     f"CUDABENCH_CACHE_DIR={LONG}: too long a name"),
    (["report", "loop.json"], {}, "loop.json: a loop of symbolic links"),
    (["plot", "loop.json", "-o", "p.png"], {}, "loop.json: a loop of symbolic links"),
    (["history", "import", "--db", "loop.db", "r.json"], {}, "loop.db: a loop of symbolic"),
    (["list", "--kernels-dir", "looped"], {}, "x.cu: a loop of symbolic links (it leads to no "
     "file), not a kernel: remove it, or start its name with _ or . to have it skipped"),
    (["list", "--kernels-dir", "looped_op"], {}, "x.py: a loop of symbolic links"),
    # reading a pipe waits for a writer: both hung forever
    (["list", "--kernels-dir", "piped"], {}, "x.cu: is a pipe (its reading waits for a "
     "writer), not a kernel"),
    (["matmul", "--kernels-dir", "piped", "--dry-run"], {}, "x.cu: is a pipe"),
])
def test_a_path_no_file_can_be_at_is_named_not_an_internal_error(use_fake, tmp_path,
                                                                 monkeypatch, args, env, says):
    # Path.is_dir() and .exists() raise for these (resolve() for a loop): exit 4
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "r.json").write_text((DATA / "baseline.json").read_text())
    (tmp_path / "new.json").write_text((DATA / "identical.json").read_text())
    (tmp_path / "long.toml").write_text(f'kernels_dirs = ["{LONG}"]\n[[benchmark]]\n'
                                        'op = "dot"\nsize = "100"\n')
    for link in ("loop.json", "loop.db", "looped/x.cu", "looped_op/x.py"):
        (tmp_path / link).parent.mkdir(exist_ok=True)
        (tmp_path / link).symlink_to(tmp_path / link)
    (tmp_path / "piped").mkdir()
    os.mkfifo(tmp_path / "piped" / "x.cu")
    done = invoke(*args)
    clean(done)
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_gzip_is_unpacked_member_by_member_with_a_cap():
    import gzip
    import zlib

    from cudabench.common.infiles import TooLarge, gunzip_capped

    two = gzip.compress(b"ab") + gzip.compress(b"cd")
    assert gunzip_capped(two, 10) == b"abcd" == gzip.decompress(two)
    with pytest.raises(TooLarge, match="more than"):
        gunzip_capped(gzip.compress(b" " * 5000), 4096)  # a bomb, small
    with pytest.raises(EOFError):
        gunzip_capped(two[:-12], 10)
    with pytest.raises(zlib.error):
        gunzip_capped(b"\x1f\x8b" + b"\x00" * 20, 10)


def test_a_suite_file_with_cr_line_ends_loads(tmp_path):
    path = tmp_path / "cr.toml"
    path.write_bytes(b'[[benchmark]]\rop = "matmul"\rsize = "64"\r')
    assert len(load_suite(path)) == 1


def test_an_input_is_read_in_chunks_not_into_a_buffer_of_the_cap(tmp_path, monkeypatch):
    # read(limit + 1) reserved 1 GiB for a results file of a few KB (MemoryError under
    # `ulimit -v`)
    from cudabench.common import infiles

    asked = []
    real_open = open

    class Spy:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def fileno(self):
            return self.handle.fileno()

        def read(self, size=-1):
            asked.append(size)
            return self.handle.read(size)

    monkeypatch.setattr(infiles, "open", lambda path, mode: Spy(real_open(path, mode)),
                        raising=False)
    path = tmp_path / "small.json"
    path.write_bytes(b"x" * 3000)
    assert infiles.read_capped(path, 1024 * infiles.MiB) == b"x" * 3000
    assert max(asked) <= infiles.MiB
    with pytest.raises(infiles.TooLarge):
        infiles.read_capped(path, 2000)


def test_an_op_run_by_another_s_command_is_named_with_it(no_gpu_work):
    # "No such command 'transpose_inplace'. Did you mean 'transpose'?"
    done = invoke("transpose_inplace", "--size", "64")
    clean(done)
    assert "The op transpose_inplace is run by `cudabench transpose --inplace`" in done.output


def test_a_percentage_is_a_precision(no_gpu_work):
    done = invoke("dot", "--precision", "1%", "--dry-run")
    assert "--precision" not in done.output, done.output


def test_a_suite_s_benchmark_written_as_one_table_is_told_its_brackets(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[benchmark]\nop = "dot"\n')
    with pytest.raises(CudabenchError, match=r"\[benchmark\] is one table; write each entry "
                       r"under \[\[benchmark\]\]"):
        load_suite(suite)


def test_a_suite_with_a_byte_order_mark_loads(tmp_path):
    # "not valid TOML: Invalid statement (at line 1, column 1)"
    suite = tmp_path / "s.toml"
    suite.write_bytes(b'\xef\xbb\xbf[[benchmark]]\nop = "dot"\nsize = "1000"\n')
    assert [request.op for request in load_suite(suite)] == ["dot"]


@pytest.mark.parametrize("args, says", [
    # "no suite in ...": the suite went to --energy
    (["run", "--energy", "SUITE"], "'SUITE' is a file, not seconds; give the file before"),
    # blamed on the suite: "s.toml: benchmark[0] ...: kernels_dirs /nonexistent: no such"
    (["run", "SUITE", "--kernels-dir", "NOWHERE"], "--kernels-dir NOWHERE: "),
    (["calibrate", "SUITE", "--kernels-dir", "NOWHERE"], "--kernels-dir NOWHERE: "),
    # an empty folder: "s.toml: benchmark[0] ...: kernels_dirs EMPTY: holds no kernel"
    (["run", "SUITE", "--kernels-dir", "EMPTY"], "error: --kernels-dir EMPTY: holds no kernel"),
    (["calibrate", "SUITE", "--kernels-dir", "EMPTY"],
     "error: --kernels-dir EMPTY: holds no kernel"),
])
def test_a_suite_command_s_flags_are_named_before_its_suite_is_read(no_gpu_work, tmp_path,
                                                                   monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)  # no suite here
    suite = tmp_path / "s.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n')
    (tmp_path / "empty").mkdir()
    names = {"SUITE": str(suite), "NOWHERE": str(tmp_path / "nowhere"),
             "EMPTY": str(tmp_path / "empty")}
    done = invoke(*[names.get(a, a) for a in args])
    clean(done)
    expected = says.replace("SUITE", str(suite)).replace("NOWHERE", names["NOWHERE"]).replace(
        "EMPTY", names["EMPTY"])
    assert expected in " ".join(done.stderr.split()), done.stderr


def test_a_file_s_name_ending_with_a_slash_is_refused_not_written(use_fake, tmp_path):
    # Path drops the slash: `--markdown notes.txt/` wrote over the user's notes, and
    # `--json newdir/` made a file named newdir
    from click.testing import CliRunner

    from cudabench import api
    from cudabench.cli import cli
    from cudabench.errors import UsageError

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    for flag in ("--markdown", "--json", "--csv"):
        done = CliRunner().invoke(cli, ["dot", "--size", "100", flag, f"{notes}/"])
        assert done.exit_code == 2 and "names a folder (it ends with /)" in done.stderr, \
            done.output
    assert notes.read_text() == "my notes"
    done = CliRunner().invoke(cli, ["report", f"{tmp_path}/r.json/"])
    assert done.exit_code == 2 and "names a folder" in done.stderr
    done = CliRunner().invoke(cli, ["dot", "--size", "100", "--markdown", f"{notes}/."])
    assert done.exit_code == 2 and "(it ends with /.)" in done.stderr, done.output
    assert notes.read_text() == "my notes"
    with pytest.raises(UsageError, match="names a folder"):
        api.run("dot", size=100, json=f"{tmp_path}/new/")
    assert not (tmp_path / "new").exists()



def test_a_history_store_variable_with_a_tilde_is_the_home_folder(tmp_path, monkeypatch):
    # a YAML env: block leaves ~ unexpanded: CUDABENCH_HISTORY_DB=~/h.db made a folder
    # named ~ in the working folder (the workspace that checkout cleans)
    from cudabench.errors import UsageError
    from cudabench.history import default_store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", "~/stores/h.db")
    assert default_store() == tmp_path / "home" / "stores" / "h.db"
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", "~no-such-user-here/h.db")
    with pytest.raises(UsageError, match="CUDABENCH_HISTORY_DB=~no-such-user-here/h.db: "
                                         "cannot expand its ~"):
        default_store()
    assert not (tmp_path / "~").exists() and not (tmp_path / "~no-such-user-here").exists()


def test_a_history_store_variable_naming_a_folder_is_refused(use_fake, tmp_path, monkeypatch):
    # CUDABENCH_HISTORY_DB=store/ made a file named store
    from click.testing import CliRunner

    from cudabench.cli import cli

    monkeypatch.setenv("CUDABENCH_HISTORY_DB", f"{tmp_path}/store/")
    done = CliRunner().invoke(cli, ["dot", "--size", "100", "--record"])
    assert done.exit_code == 2 and "CUDABENCH_HISTORY_DB=" in done.stderr, done.output
    assert "names a folder" in done.stderr and not (tmp_path / "store").exists()
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", str(tmp_path))  # "...; pass --db with a file"
    done = CliRunner().invoke(cli, ["history", "show"])
    assert done.exit_code == 2, done.output
    assert f"CUDABENCH_HISTORY_DB={tmp_path}: is a folder, not a history store; set it to a " \
        "file" in " ".join(done.stderr.split())
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", os.devnull)  # it read "--record /dev/null: ..."
    for args in (["dot", "--size", "100", "--record"], ["history", "show"]):
        done = CliRunner().invoke(cli, args)
        assert done.exit_code == 2, done.output
        assert f"CUDABENCH_HISTORY_DB={os.devnull}: is not a regular file" in done.stderr


def test_a_bad_history_store_variable_stops_only_the_runs_that_use_the_store(use_fake,
                                                                             monkeypatch):
    from click.testing import CliRunner

    from cudabench.cli import cli

    monkeypatch.setenv("CUDABENCH_HISTORY_DB", "store/")
    done = CliRunner().invoke(cli, ["dot", "--size", "100", "--max-time", "0.01"])
    assert done.exit_code == 0, done.output
