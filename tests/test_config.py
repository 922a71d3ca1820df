"""Suite files: cudabench.toml and [tool.cudabench] in pyproject.toml."""

from __future__ import annotations

import textwrap

import pytest

from cudabench.cli.suite import find_config, load_suite
from cudabench.errors import UsageError
from cudabench.planning.plan import make_plan

SUITE = """
[timing]
max_time = 0.5
min_samples = 30

[[benchmark]]
op = "matmul"
sizes = ["1000", "17x33x5"]
dtypes = ["float32", "int32"]
variants = ["naive", "tiled"]
params = { TILE = 32 }

[[benchmark]]
op = "dot"
size = "1<<20"
hot = true
"""


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_suite_expands_sizes_and_dtypes(tmp_path):
    requests = load_suite(write(tmp_path / "cudabench.toml", SUITE))
    assert [(r.op, r.size, r.dtype) for r in requests] == [
        ("matmul", "1000", "float32"), ("matmul", "1000", "int32"),
        ("matmul", "17x33x5", "float32"), ("matmul", "17x33x5", "int32"),
        ("dot", "1<<20", "float32"),
    ]
    assert requests[0].params == {"TILE": 32} and requests[0].variants == ("naive", "tiled")
    assert requests[0].timing.max_time_s == 0.5 and requests[0].timing.min_samples == 30
    assert not requests[0].hot and requests[-1].hot
    plans = [make_plan(r) for r in requests]  # every request is a valid plan
    assert plans[0].variants[1].params == {"TILE": 32}


def test_pyproject_table_is_found(tmp_path):
    write(tmp_path / "pyproject.toml", """
        [project]
        name = "x"
        [[tool.cudabench.benchmark]]
        op = "transpose"
        size = 64
    """)
    path = find_config(tmp_path)
    assert path.name == "pyproject.toml"
    assert [r.size for r in load_suite(path)] == ["64"]


def test_a_pyproject_whose_tool_is_not_a_table_has_no_suite(tmp_path):
    # `tool = "x"`: AttributeError, exit 4
    path = write(tmp_path / "pyproject.toml", 'tool = "x"\n')
    with pytest.raises(UsageError, match=r"pyproject.toml: no \[tool.cudabench\] table"):
        load_suite(path)


def test_cudabench_toml_wins_and_missing_suite_is_explained(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    with pytest.raises(UsageError, match="cudabench.toml"):
        find_config(tmp_path)
    write(tmp_path / "cudabench.toml", SUITE)
    assert find_config(tmp_path).name == "cudabench.toml"


def test_kernels_dirs_are_relative_to_the_file(tmp_path):
    write(tmp_path / "cudabench.toml", 'kernels_dirs = ["mine"]\n' + SUITE)
    (tmp_path / "mine").mkdir()
    (request, *_) = load_suite(tmp_path / "cudabench.toml")
    assert request.kernels_dirs == (tmp_path / "mine",)


@pytest.mark.parametrize(("text", "message"), [
    ("[[benchmark]]\nop = 'matmul'\nsizez = ['1']\n", "benchmark[0]: unknown key(s) sizez"),
    ("[[benchmark]]\nsize = '1'\n", "benchmark[0].op"),
    ("[[benchmark]]\nop = 'dot'\nsize = '1'\nsizes = ['2']\n", "size or sizes"),
    ("[[benchmark]]\nop = 'dot'\nparams = { BLOCK = 'big' }\n", "benchmark[0].params"),
    ("[[benchmark]]\nop = 'dot'\nvariants = 'atomic'\n", "benchmark[0].variants"),
    # the file's keys, not the flags they stand for
    ("[timing]\nmax_time = 0\n[[benchmark]]\nop = 'dot'\n",
     "[timing]: timing.max_time must be > 0 seconds"),
    ("[timing]\nmax_tme = 1\n[[benchmark]]\nop = 'dot'\n",
     "[timing]: unknown key(s) max_tme (it takes warmup, "),
    ("kernels_dirs = ['nope']\n[[benchmark]]\nop = 'dot'\n", "toml: kernels_dirs /"),
    # written below [timing], TOML reads it as one of its keys
    ("[timing]\nmax_time = 1\nkernels_dirs = ['k']\n[[benchmark]]\nop = 'dot'\n",
     "kernels_dirs is a top-level key: write it above the first [table]"),
    ("kernels_dirs = 3\n[[benchmark]]\nop = 'dot'\n", "toml: kernels_dirs: expected a list"),
    ("benchmarks = 1\n", "unknown key(s) benchmarks"),
    ("[timing]\n", "no [[benchmark]]"),
    ("[[benchmark]\n", "not valid TOML"),
    # an empty list ran every variant, as if the key were absent
    ("[[benchmark]]\nop = 'dot'\nvariants = []\n", "benchmark[0].variants: an empty list"),
])
def test_bad_suites_name_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path / "cudabench.toml", text)
    with pytest.raises(UsageError) as error:
        load_suite(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_plan_errors_say_which_benchmark(tmp_path):
    path = write(tmp_path / "cudabench.toml",
                 "[[benchmark]]\nop = 'dot'\n[[benchmark]]\nop = 'matmul'\nsize = '0'\n")
    _, request = load_suite(path)
    with pytest.raises(UsageError) as error:
        make_plan(request)
    assert f"{path}: benchmark[1] (matmul, size 0, float32): size '0'" in str(error.value)


@pytest.mark.parametrize(("entry", "message"), [
    ("op = 'dot'\nvariants = ['atomicc']", "variants atomicc: no such dot variant"),
    ("op = 'dot'\nparams = { BLOCKZ = 8 }", "params BLOCKZ: no selected dot variant takes BLOCKZ"),
    ("op = 'dot'\nseed = -1", "seed -1: must be between 0 and 2^63-1"),
    ("op = 'matmul'\nvariants = ['mma_sync']",
     'dtype float32: variant mma_sync supports float16 (dtype = "float16" runs it)'),
])
def test_an_entrys_plan_errors_name_its_keys_not_flags(tmp_path, entry, message):
    path = write(tmp_path / "cudabench.toml", f"[[benchmark]]\n{entry}\n")
    (request, *_) = load_suite(path)
    with pytest.raises(UsageError) as error:
        make_plan(request)
    assert f"{path}: benchmark[0] (" in str(error.value) and message in str(error.value)
    assert "--" not in str(error.value), str(error.value)


def test_a_suites_on_request_note_names_the_suite_key_not_the_flag(tmp_path):
    path = write(tmp_path / "cudabench.toml", """
        [[benchmark]]
        op = "dot"
        sizes = ["1000", "2000"]
        """)
    notes = {note for request in load_suite(path) for note in make_plan(request).notes}
    assert len(notes) == 1, notes  # one note for the entry, not one per size
    (note,) = notes
    assert "run on request" in note and 'variants = ["NAME"] or ["all"]' in note
    assert "benchmark[0]" in note and "--variant" not in note


def test_a_suite_file_that_is_missing_or_a_folder_says_so(tmp_path):
    with pytest.raises(UsageError, match="missing.toml: no such suite file"):
        load_suite(tmp_path / "missing.toml")
    with pytest.raises(UsageError, match="a folder, not a suite file"):
        load_suite(tmp_path)


def test_a_suite_s_precision_takes_a_percentage_as_the_flag_does(tmp_path):
    # precision = "1%": "timing.precision: expected a number", where --precision 1% is taken
    suite = write(tmp_path / "cudabench.toml",
                  '[timing]\nprecision = "1%"\n\n[[benchmark]]\nop = "dot"\n')
    assert load_suite(suite)[0].timing.precision == pytest.approx(0.01)
    write(suite, '[timing]\nprecision = "one%"\n\n[[benchmark]]\nop = "dot"\n')
    with pytest.raises(UsageError, match=r"timing.precision 'one%': expected a fraction "
                                         r"\(0.005\) or a percentage"):
        load_suite(suite)
    write(suite, '[timing]\nprecision = "1"\n\n[[benchmark]]\nop = "dot"\n')
    with pytest.raises(UsageError, match=r'timing.precision: expected a number \(a fraction'):
        load_suite(suite)
