"""A new user's first install: the README, nvcc's messages, help, --traceback, `list` at 80.

Everything here runs without a GPU, PyCUDA or nvcc: nvcc is played by small scripts.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import MATMUL_HEADER, write_kernel

from cudabench.catalog import discover
from cudabench.cli import cli
from cudabench.cli.boundary import hoist_group_flags
from cudabench.common import extras
from cudabench.errors import ExitCode
from cudabench.engines import nvcc

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SOFTMAX = ROOT / "examples" / "softmax"


def invoke(*args: object, env: dict[str, str] | None = None):
    """Run the CLI with stdout and stderr kept apart (click 8.1 and 8.2+)."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always separates them
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], env=env)


def section(title: str) -> str:
    """Return the README's section under `## title`, up to the next `## `."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else len(README)]


# -- the README -------------------------------------------------------------------------------


def test_readme_points_at_nothing_outside_the_repository():
    for pattern in (r"\.\./", r"/work\b", r"\bshared/"):
        found = [line for line in README.splitlines() if re.search(pattern, line)]
        assert not found, f"README.md points outside the repository ({pattern}): {found}"


def test_readme_links_to_files_that_exist():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README.md links to a missing file: {target}"
    assert (ROOT / "docs" / "github-actions.md").exists()


def test_readme_install_names_the_toolkit_and_what_runs_without_a_gpu():
    install = section("Install and run")
    assert "CUDA_ROOT=/path/to/cuda pip install -e '.[gpu]'" in install
    assert "wrapper" in install and "PATH" in install and "/usr/local/cuda" in install
    no_gpu = install[install.index("Without a GPU"):]
    for command in ("list", "compare", "report", "plot", "history", "--dry-run", "nvcc"):
        assert f"`{command}`" in no_gpu or f"`cudabench {command}`" in no_gpu, command


# -- nvcc: not found, found but broken --------------------------------------------------------


def fake_nvcc(folder: Path, script: str) -> Path:
    """Write an executable `nvcc` shell script into folder."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "nvcc"
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """No nvcc anywhere: PATH is an empty folder, CUDA_ROOT and /usr/local/cuda are empty."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_ROOT", str(tmp_path / "cuda-root"))
    monkeypatch.setattr(nvcc, "CUDA_HOME", tmp_path / "usr-local-cuda")
    return tmp_path


def a_variant():
    return discover()["matmul"]["naive"]


def test_missing_nvcc_says_where_it_looked_and_how_to_fix_it(bare):
    assert nvcc.find_nvcc() is None
    message = nvcc.nvcc_problem()
    assert message is not None
    for fragment in ("nvcc was not found", "PATH", str(bare / "cuda-root" / "bin"),
                     str(bare / "usr-local-cuda" / "bin"), "install the CUDA toolkit",
                     "CUDA_ROOT=/path/to/cuda"):
        assert fragment in message
    assert "\n" not in message
    build = nvcc.compile_ptx(a_variant(), {"TILE": 16})
    assert (build.returncode, build.output) == (127, message)
    hint = nvcc.pycuda_install_hint()
    assert "pip install 'pycuda>=2024.1'" in hint and "CUDA_ROOT=/path/to/cuda" in hint
    assert "nvcc was not found" in hint and "\n" not in hint


def test_missing_nvcc_without_cuda_root_says_it_is_not_set(bare, monkeypatch):
    monkeypatch.delenv("CUDA_ROOT")
    assert "$CUDA_ROOT/bin (not set)" in (nvcc.nvcc_problem() or "")


def test_nvcc_is_found_in_cuda_root_and_in_usr_local_cuda(bare, monkeypatch):
    script = 'echo "Cuda compilation tools, release 13.0"\n'
    home = fake_nvcc(bare / "usr-local-cuda" / "bin", script)
    assert nvcc.find_nvcc() == str(home)
    root = fake_nvcc(bare / "cuda-root" / "bin", script)
    assert nvcc.find_nvcc() == str(root)  # $CUDA_ROOT/bin before /usr/local/cuda/bin
    on_path = fake_nvcc(bare / "empty", script)
    assert nvcc.find_nvcc() == str(on_path)  # PATH first
    assert nvcc.nvcc_problem() is None
    assert "and now" not in nvcc.pycuda_install_hint()


WRAPPER_ERROR = "nvcc-wrapper: error: /opt/cuda-12.9/bin/nvcc: No such file or directory"


def test_a_broken_wrapper_is_named_with_its_first_error_line(bare, monkeypatch):
    # an installed wheel's hint: `pip install -e '.[gpu]'` was a clone's
    monkeypatch.setattr(extras, "requirements", lambda extra: ("pycuda>=2024.1",))
    wrapper = fake_nvcc(bare / "empty",
                        f'echo "nvcc-wrapper: starting"\necho "{WRAPPER_ERROR}" >&2\nexit 127\n')
    message = nvcc.nvcc_problem()
    assert message is not None
    assert f"nvcc was found at {wrapper} but fails to run" in message
    assert WRAPPER_ERROR in message and "wrapper" in message and "CUDA_ROOT=" in message
    assert message.endswith("CUDA_ROOT=/path/to/cuda pip install 'pycuda>=2024.1' "
                            "(cudabench's `gpu` extra)"), message
    assert "not found" not in message
    build = nvcc.compile_ptx(a_variant(), {"TILE": 16})
    assert build.returncode == 127 and build.output == message and "\n" not in build.output
    assert "fails to run" in nvcc.pycuda_install_hint()


def test_an_nvcc_that_cannot_be_executed_is_not_a_crash(bare):
    junk = bare / "empty" / "nvcc"
    junk.write_bytes(b"\x00\x01 not a program")
    junk.chmod(0o755)
    build = nvcc.compile_ptx(a_variant(), {"TILE": 16})
    assert build.returncode == 126
    assert f"nvcc was found at {junk} but cannot be run" in build.output


def test_a_kernel_error_is_still_the_kernels_not_nvccs(bare):
    fake_nvcc(bare / "empty", 'case "$1" in --version) echo "release 13.0"; exit 0;; esac\n'
              'echo "naive.cu(12): error: identifier \\"undeclared\\" is undefined" >&2\n'
              "exit 1\n")
    build = nvcc.compile_ptx(a_variant(), {"TILE": 16})
    assert build.returncode == 1
    assert 'identifier "undeclared" is undefined' in build.output
    assert "fails to run" not in build.output


def test_dry_run_shows_why_nvcc_fails(bare):
    fake_nvcc(bare / "empty", f'echo "{WRAPPER_ERROR}" >&2\nexit 1\n')
    result = invoke("matmul", "--dry-run", "--variant", "naive", env={"COLUMNS": "2000"})
    assert result.exit_code == 2, result.output
    assert "fails to run" in result.stdout and WRAPPER_ERROR in result.stdout


# -- --traceback anywhere, help without arguments ---------------------------------------------


@pytest.fixture
def no_pycuda(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)


@pytest.mark.parametrize("args", [["matmul", "--size", "0", "--traceback"],
                                  ["matmul", "--traceback", "--size", "0"],
                                  ["--traceback", "matmul", "--size", "0"]])
def test_traceback_works_anywhere_on_the_command_line(no_pycuda, args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("cudabench: error: --size '0'")


def test_without_traceback_there_is_none(no_pycuda):
    result = invoke("matmul", "--size", "0")
    assert result.exit_code == 2 and "Traceback" not in result.stderr


def test_traceback_after_the_subcommand_in_a_real_process():
    done = subprocess.run([sys.executable, "-m", "cudabench", "dot", "--size", "0",
                           "--traceback"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 2, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "no such option" not in done.stderr


def test_hoist_group_flags():
    assert hoist_group_flags(["matmul", "-s", "8"]) == ["matmul", "-s", "8"]
    assert hoist_group_flags(["matmul", "--traceback", "-s", "8", "--traceback"]) == [
        "--traceback", "matmul", "-s", "8"]
    assert hoist_group_flags(["run", "--", "--traceback"]) == ["run", "--", "--traceback"]
    assert hoist_group_flags(["--traceback"]) == []
    assert hoist_group_flags(["report", "r.json", "--wide", "--traceback"]) == [
        "--traceback", "--wide", "report", "r.json"]
    assert hoist_group_flags(["--wide", "report", "r.json"]) == ["--wide", "report", "r.json"]
    assert hoist_group_flags(["--wide"]) == []


@pytest.mark.parametrize("args", [[], ["--traceback"]])
def test_no_arguments_print_the_help(args):
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage:") and "Commands:" in result.stdout
    assert "matmul" in result.stdout and "error" not in result.stderr


def test_a_group_without_arguments_prints_its_help():
    result = invoke("history")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout and "check" in result.stdout and result.stderr == ""


# -- exit codes: errors.ExitCode, the README's table and `cudabench --help` agree -------------


def test_exit_codes_in_help_match_the_readme_table():
    table = {int(code): meaning for code, meaning in
             re.findall(r"^\| (\d+) \| (.+) \|$", section("Exit codes"), re.MULTILINE)}
    assert set(table) == {int(code) for code in ExitCode}
    for word in ("compare", "ab", "history check"):
        assert f"`{word}`" in table[ExitCode.REGRESSION]
    help_text = invoke("--help").stdout
    codes = help_text[help_text.index("Exit codes"):help_text.index("Options:")]
    listed = {int(code) for code in re.findall(r"(?<![\w.-])(\d+)(?![\w.])", codes)}
    assert listed == set(table), codes
    for word in ("compare", "ab", "history check", "--traceback", "Ctrl-C"):
        assert word in codes, word


# -- `cudabench list` on an 80-column terminal -------------------------------------------------


def list_at(columns: int, *kernels_dirs: Path) -> str:
    args = [arg for folder in kernels_dirs for arg in ("--kernels-dir", folder)]
    result = invoke("list", *args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    assert "…" not in result.stdout  # Rich's mark of a cut cell
    table = [line for line in result.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= columns for line in table)
    return result.stdout


def op_table(out: str, op: str) -> str:
    """Return the lines of op's table in `list`'s output: from its title to its last rule."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == op)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("└"))
    return "\n".join(lines[start:end + 1])


def test_list_on_80_columns_never_cuts_a_name():
    out = list_at(80, SOFTMAX)
    for op, variants in discover([SOFTMAX]).items():
        for name, variant in variants.items():  # its own cell, in its op's table, whole
            assert re.search(rf"^│ {name}(?: \*)?(?: \[\d+\])? +│", op_table(out, op),
                             re.MULTILINE), (op, name)
            assert re.search(rf"(?<![\w.]){re.escape(variant.path.name)}\b", out), name
            assert str(variant.path.parent) in out
            for param in variant.params:
                assert re.search(rf"(?<!\w){param.name}=", out), param.name


def test_list_on_80_columns_keeps_a_long_variant_name_whole(tmp_path):
    extra = tmp_path / "k"
    write_kernel(extra, "tiled_with_a_much_longer_name", MATMUL_HEADER)
    out = list_at(80, extra)
    assert re.search(r"^│ tiled_with_a_much_longer_name(?: \[\d+\])? +│",
                     op_table(out, "matmul"), re.MULTILINE)
    assert re.search(r"(?<![\w.])tiled_with_a_much_longer_name\.cu\b", out)


def test_list_on_a_wide_terminal_shows_each_full_path(tmp_path):
    result = invoke("list", "--kernels-dir", SOFTMAX, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.stderr
    for variants in discover([SOFTMAX]).values():
        for variant in variants.values():
            assert re.search(rf"│ {re.escape(str(variant.path))} +│", result.stdout)


def test_list_on_a_very_narrow_terminal_folds_names_but_keeps_every_letter():
    result = invoke("list", env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.stderr
    assert "…" not in result.stdout
    cells = "".join(line.split("│")[1].strip() for line in result.stdout.splitlines()
                    if line.startswith("│"))  # the variant column, the first of each op's
    for variants in discover().values():
        for name in variants:
            assert name in cells, name


def test_a_transient_start_error_is_tried_again_and_a_lasting_one_is_not():
    # CI once lost one of ~300 parallel compiles to a moment out of processes or memory
    calls: list[int] = []

    def flaky() -> subprocess.Popen[str]:
        calls.append(1)
        if len(calls) < 3:  # once out of processes, once a sandbox's fork under load
            raise OSError((errno.EAGAIN, errno.EFAULT)[len(calls) - 1], "transient")
        return subprocess.Popen(["true"], text=True)

    process = nvcc.start_retrying(flaky, pause_s=0.001)
    assert process.wait() == 0 and len(calls) == 3

    calls.clear()

    def missing() -> subprocess.Popen[str]:
        calls.append(1)
        raise OSError(errno.ENOEXEC, "Exec format error")

    with pytest.raises(OSError, match="Exec format error"):
        nvcc.start_retrying(missing, pause_s=0.001)
    assert len(calls) == 1

    def always_busy() -> subprocess.Popen[str]:
        raise OSError(errno.ETXTBSY, "Text file busy")

    with pytest.raises(OSError, match="Text file busy"):
        nvcc.start_retrying(always_busy, tries=2, pause_s=0.001)


def test_the_readme_s_suite_plans_as_pasted(tmp_path):
    # its `kernels_dirs = ["my_kernels"]`, a folder a new user does not have, made the
    # first suite they wrote fail: "kernels_dirs .../my_kernels: no such directory"
    from cudabench.cli.suite import load_suite

    section = README.split("## Suites and results files", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    suite = tmp_path / "cudabench.toml"
    suite.write_text(block, encoding="utf-8")
    requests = load_suite(suite)
    assert {(r.op, r.dtype) for r in requests} == {("matmul", "float32"), ("matmul", "int32")}
