"""Every command's tables at 80, 100 and 120 columns: whole columns, no cell cut ("…"),
no data row wrapped (issue 30). COLUMNS makes the width, as a terminal would."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from helpers import MATMUL_BODY, MATMUL_HEADER, unreadable, write_kernel

WIDTHS = [80, 100, 120]
H100_FILES = sorted(glob.glob("tests/data/h100*/*.json"))
QUICK = ("--warmup", "0", "--min-samples", "5", "--max-samples", "5", "--no-batch")
SUITE = ('[timing]\nmax_time = 0.05\nmin_samples = 5\nwarmup = 0\n\n'
         '[[benchmark]]\nop = "dot"\nsize = "1000"\n\n'
         '[[benchmark]]\nop = "matmul"\nsize = "64"\n')


def run(width: int, *args: object):
    """Run the CLI at a terminal width of `width` columns, stdout and stderr apart."""
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 always separates them
        runner = CliRunner()
    result = runner.invoke(cli, [str(a) for a in args], env={"COLUMNS": str(width)})
    dump = os.environ.get("CUDABENCH_TEST_DUMP")  # a folder: keep the output to look at
    if dump:
        name = "_".join(Path(str(a)).name for a in args)[:80]
        Path(dump, f"{width}-{name}.txt").write_text(result.stdout + result.stderr)
    return result


def assert_readable(text: str, width: int, every_line: bool = False) -> None:
    problems = unreadable(text, width, every_line)
    assert not problems, "\n".join(problems) + "\n\n" + text


@pytest.mark.parametrize("path", H100_FILES)
@pytest.mark.parametrize("width", WIDTHS)
def test_report_of_each_h100_file(path, width):
    done = run(width, "report", path)
    assert done.exit_code == 0, done.output
    assert_readable(done.stdout, width)


@pytest.mark.parametrize(("old", "new"), [
    ("tests/data/h100/v1-matmul.json", "tests/data/h100/v2-matmul.json"),
    ("tests/data/compare/baseline.json", "tests/data/compare/failing.json"),
    ("tests/data/compare/baseline.json", "tests/data/compare/added_removed.json")])
@pytest.mark.parametrize("width", WIDTHS)
def test_compare(old, new, width):
    done = run(width, "compare", old, new, "--allow-missing")
    assert done.exit_code in (0, 1), done.output
    assert_readable(done.stdout, width)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A history of the H100 matmul files: v1 twice then v2 (recorded at three commits)."""
    import json

    folder = tmp_path_factory.mktemp("history")
    paths = []
    for index, name in enumerate(["v1", "v1", "v2", "v2"]):
        document = json.loads(Path(f"tests/data/h100/{name}-matmul.json").read_text())
        document["git_commit"] = f"{index:040x}"
        paths.append(folder / f"run{index}.json")
        paths[-1].write_text(json.dumps(document))
    db = folder / "h.db"
    assert run(120, "history", "import", *paths[:3], "--db", db).exit_code == 0
    return db


@pytest.mark.parametrize("width", WIDTHS)
def test_history_show_and_check(store, width):
    shown = run(width, "history", "show", "--db", store)
    assert shown.exit_code == 0, shown.output
    assert_readable(shown.stdout, width)
    checked = run(width, "history", "check", "tests/data/h100/v2-matmul.json", "--db", store,
                  "--min-runs", "3")
    assert checked.exit_code in (0, 1), checked.output
    assert_readable(checked.stdout, width)


def test_history_check_at_80_columns_keeps_the_change_before_the_runs(store):
    checked = run(80, "history", "check", "tests/data/h100/v2-matmul.json", "--db", store,
                  "--min-runs", "3")
    header = next(line for line in checked.stdout.splitlines() if line.startswith("┃"))
    # the benchmark names fold (tests/test_fit.py), which leaves room for the current time
    assert [cell.strip() for cell in header.strip("┃").split("┃")] == [
        "benchmark", "current", "change", "verdict"]
    assert "runs" in " ".join(checked.stdout[checked.stdout.index("left out"):].split())


@pytest.mark.parametrize("width", WIDTHS)
def test_list(width):
    # One table per op, a variant a row on one line: the long texts that do not fit
    # (allowed values) become notes and the files a line per folder, so nothing is cut
    # and no row wraps, and every name, parameter and file is on screen.
    from cudabench.catalog import discover

    done = run(width, "list", "--kernels-dir", "examples/softmax")
    assert done.exit_code == 0, done.output
    assert_readable(done.stdout, width)
    assert "left out" not in done.stdout  # what does not fit is in the notes
    rows = [line.split("│")[1].split(" [")[0].removesuffix(" *").strip()  # * on request
            for line in done.stdout.splitlines() if line.startswith("│")]
    catalog = discover([Path("examples/softmax")])
    assert sorted(rows) == sorted(name for variants in catalog.values() for name in variants)
    text = " ".join(done.stdout.split())
    for variants in catalog.values():
        for variant in variants.values():
            assert variant.path.name in text and " ".join(variant.dtypes) in text
            for param in variant.params:
                assert f"{param.name}={param.default}" in text
                assert f"{param.name} in {param.describe_allowed()}" in text


def test_list_piped_keeps_every_column_on_one_line(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    from cudabench.catalog import discover

    done = CliRunner().invoke(cli, ["list"])
    assert done.exit_code == 0, done.output
    assert_readable(done.stdout, 10_000)
    assert "left out" not in done.stdout and "[1]" not in done.stdout  # no notes
    assert header_cells(done.stdout) == ["variant", "dtypes", "defaults", "allowed", "file"]
    for variants in discover().values():
        for variant in variants.values():
            assert f"│ {variant.path} " in done.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_ab(use_fake, tmp_path, width):
    for side in ("a", "b"):
        for name in ("blocked", "register_tiled_long_name"):
            write_kernel(tmp_path / side / "matmul", name, MATMUL_HEADER, MATMUL_BODY)
    done = run(width, "ab", tmp_path / "a", tmp_path / "b", "--size", "32", "--samples", "5",
               "--warmup", "0", "--rounds", "12")
    assert done.exit_code in (0, 1), done.output
    assert_readable(done.stdout, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_suite_with_profile_time(use_fake, tmp_path, width):
    suite = tmp_path / "cudabench.toml"
    suite.write_text(SUITE)
    done = run(width, "run", suite, "--profile-time", "--json", tmp_path / "r.json")
    assert done.exit_code == 0, done.output
    assert_readable(done.stdout, width)
    assert "--profile-time" in done.stderr
    assert_readable(done.stderr, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_best_of_a_sweep(use_fake, width):
    done = run(width, "matmul", "--size", "32,64", "--tile", "8,16", "--variant", "naive",
               *QUICK, "--best")
    assert done.exit_code == 0, done.output
    assert "best configuration" in done.stdout
    assert_readable(done.stdout, width)


def test_behind_the_times_continues_rather_than_drop_what_was_asked_for(use_fake):
    # at 80 columns it kept energy and left out write-back, transfers and rounds, each
    # asked for by its flag: the table goes on in more tables, each row named again
    done = run(80, "transpose", "--size", "256", "--variant", "naive", "--no-vendor", *QUICK,
               "--rounds", "2", "--writeback", "--transfers", "--energy", "0.05")
    assert done.exit_code == 0, done.output
    flat = " ".join(done.stdout.split())
    assert "behind the times (continued)" in flat
    behind = done.stdout.split("float32: behind the times", 1)[1]
    assert "left out to fit" not in behind
    for column in ("energy/launch", "write-back", "median + write-back", "D2H pageable GB/s",
                   "GPU trip (vs CPU ref)", "rounds"):
        assert column in behind, column
    assert_readable(done.stdout, 80)
    wide = run(400, "transpose", "--size", "256", "--variant", "naive", "--no-vendor", *QUICK,
               "--rounds", "2", "--writeback", "--transfers", "--energy", "0.05")
    assert "(continued)" not in wide.stdout  # room for all of it: one table


def test_best_at_80_columns_keeps_the_size_and_the_best_params(use_fake):
    # it kept "transpose" on every row and left out size and best params, the answer
    done = run(80, "transpose", "--size", "64,128", "--tile", "16,32", *QUICK, "--best")
    assert done.exit_code == 0, done.output
    table = done.stdout.split("best configuration per variant and size: transpose")[1]
    head = next(line for line in table.splitlines() if line.startswith("┃"))
    assert [cell.strip() for cell in head.strip("┃").split("┃")][:4] == [
        "size", "dtype", "variant", "best params"]
    assert "best params: those that differ between rows" in " ".join(table.split())
    assert_readable(done.stdout, 80)


@pytest.mark.parametrize("width", WIDTHS)
def test_dry_run(width):
    done = run(width, "matmul", "--size", "4096", "--dry-run")
    assert done.exit_code in (0, 2), done.output
    assert_readable(done.stdout, width)
    # the plan's parameters, a column or a note, are never left out (they were at 80)
    flat = " ".join(done.stdout.split())
    assert "BM=128 BN=128 BK=16" in flat and "params" not in flat.split("left out")[-1]


@pytest.mark.parametrize("width", WIDTHS)
def test_calibrate(use_fake, tmp_path, monkeypatch, width):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(SUITE)
    done = run(width, "calibrate", "--runs", "5", "--db", tmp_path / "h.db")
    assert done.exit_code == 0, done.output
    assert_readable(done.stdout, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_info(use_fake, width):
    done = run(width, "info")
    assert done.exit_code == 0, done.output
    assert_readable(done.stdout, width)


WIDE_FILE = "tests/data/h100-insight/m4096_full.json"
EVERY_COLUMN = ("spread", "GFLOP/s", "GB/s", "vs cuBLAS", "vs naive", "batch (warm)",
                "% of peak", "bound", "rel error", "max abs err")


def header_cells(text: str) -> list[str]:
    """Return the header cells of the first table in text."""
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    return [cell.strip() for cell in header.strip("┃").split("┃")]


@pytest.mark.parametrize("args", [("--wide", "report", WIDE_FILE),
                                  ("report", WIDE_FILE, "--wide")])
def test_wide_shows_every_column_whole_and_is_not_kept_after(monkeypatch, args):
    monkeypatch.delenv("CUDABENCH_WIDE", raising=False)
    fitted = run(80, "report", WIDE_FILE)
    footer = " ".join(fitted.stdout[fitted.stdout.index("left out to fit:"):].split())
    assert "(--wide shows every column)" in footer
    done = run(80, *args)
    assert done.exit_code == 0, done.output
    assert "left out" not in done.stdout and "…" not in done.stdout
    assert header_cells(done.stdout)[1:] == ["params", "check", "median", *EVERY_COLUMN]
    assert "51,412.7" in done.stdout and "3.49e-04" in done.stdout  # cells whole, unsqueezed
    assert "left out to fit:" in run(80, "report", WIDE_FILE).stdout  # the next command fits


def test_the_environment_variable_still_shows_every_column(monkeypatch):
    monkeypatch.setenv("CUDABENCH_WIDE", "1")
    done = run(80, "report", WIDE_FILE)
    assert "left out" not in done.stdout and "…" not in done.stdout
    assert header_cells(done.stdout)[1:] == ["params", "check", "median", *EVERY_COLUMN]


def test_markdown_and_html_keep_every_column_at_any_width(tmp_path):
    markdown, html = tmp_path / "r.md", tmp_path / "r.html"
    done = run(80, "report", "tests/data/h100-insight/t8192.json", "--markdown", markdown,
               "--html", html)
    assert done.exit_code == 0, done.output
    assert "left out to fit" in done.stdout  # the terminal's table is fitted...
    for column in ("spread", "GB/s", "vs naive", "batch (warm)", "% of peak", "max abs err"):
        assert f" {column} |" in markdown.read_text()  # ...the files are not
        assert column in html.read_text()
    assert "text-overflow" not in html.read_text()  # the page's tables scroll, never cut
