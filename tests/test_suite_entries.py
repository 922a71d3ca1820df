"""A suite entry's defaults and errors, as the op commands give and name them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.cli.suite import load_suite
from cudabench.errors import UsageError
from cudabench.planning.plan import make_plan

QUICK = "[timing]\nmax_time = 0.05\nmin_samples = 8\nwarmup = 0\n\n"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def half_only_softmax(folder: Path) -> Path:
    """Return a copy of examples/softmax whose op takes float16 alone."""
    shutil.copytree(EXAMPLES / "softmax", folder)
    op = folder / "softmax.py"
    lines = op.read_text(encoding="utf-8").splitlines(keepends=True)
    op.write_text("".join(line for line in lines
                          if not line.lstrip().startswith(('"float32": (', '"float64": ('))),
                  encoding="utf-8")
    return folder


def test_an_entry_without_dtype_takes_the_op_s_default_type(use_fake, tmp_path):
    # float32 always: an op of float16 alone ran as `cudabench softmax` but its suite
    # entry failed "dtype float32: softmax supports float16"
    half_only_softmax(tmp_path / "ops")
    suite = tmp_path / "cudabench.toml"
    suite.write_text('kernels_dirs = ["ops"]\n' + QUICK + '[[benchmark]]\nop = "softmax"\n'
                     'size = "64"\n\n[[benchmark]]\nop = "dot"\nsize = "1000"\n',
                     encoding="utf-8")
    half, dot = load_suite(suite)
    assert (half.dtype, dot.dtype) == ("float16", "float32")
    assert make_plan(half).dtype.name == "float16"
    done = CliRunner().invoke(cli, ["run", str(suite), "--json", str(tmp_path / "r.json")])
    assert done.exit_code == 0, done.output


def test_an_entry_s_error_names_no_flag_the_suite_has_not(tmp_path):
    # transpose_inplace's size error said "or drop --inplace", a flag of `cudabench
    # transpose` a suite entry has no key for
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n\n'
                     '[[benchmark]]\nop = "transpose_inplace"\nsize = "64x32"\n',
                     encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        [make_plan(request) for request in load_suite(suite)]
    said = str(refused.value)
    assert said.startswith(f"{suite}: benchmark[1] (transpose_inplace"), said
    assert "--inplace" not in said and 'or use op = "transpose"' in said, said


def test_an_entry_too_big_for_memory_is_named(use_fake, tmp_path, monkeypatch):
    # "--size 4096x4096x4096: ... about --size 1024x... would fit": no benchmark[i], and
    # a flag for what the suite's size key sets
    monkeypatch.setattr("cudabench.measure.memory.host_available_bytes", lambda: 64 * 2**20)
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda gpu: None)
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n\n'
                     '[[benchmark]]\nop = "matmul"\nsize = "4096"\n', encoding="utf-8")
    done = CliRunner().invoke(cli, ["run", str(suite)])
    assert done.exit_code == 2, done.output
    said = done.stderr.strip()
    assert said.startswith(f"cudabench: error: {suite}: benchmark[1]: size 4096x4096x4096: "
                           "matmul float32 needs"), said
    assert "--size" not in said and "about size " in said, said
