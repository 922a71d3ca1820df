"""Tables at a terminal's width: whole columns by priority, never a cut cell (issue 30)."""

from __future__ import annotations

import glob

import pytest
from rich.console import Console

from cudabench.render.fit import WIDE_ENV, differing_params, fit, layout
from cudabench.render.run_table import build_tables
from cudabench.render.terminal import render_rows, render_run
from cudabench.results.loader import load_results
from cudabench.results.model import RunOutcome

H100_FILES = sorted(glob.glob("tests/data/h100*/*.json"))


def rendered(outcome: RunOutcome, width: int, terminal: bool = True) -> str:
    console = Console(width=width, force_terminal=terminal, color_system=None)
    with console.capture() as capture:
        render_run(outcome, console)
    return capture.get()


@pytest.mark.parametrize("path", H100_FILES)
@pytest.mark.parametrize("width", [80, 100, 120])
def test_h100_tables_fit_without_cutting_a_cell(path, width):
    outcome = RunOutcome(load_results(path).benchmarks)
    text = rendered(outcome, width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    for model in build_tables(outcome):  # the name column always stays, whole
        for row in model.rows:
            assert row[0].text in text


def test_left_out_columns_are_named_and_piped_output_keeps_them(monkeypatch):
    monkeypatch.delenv(WIDE_ENV, raising=False)
    outcome = RunOutcome(load_results(H100_FILES[0]).benchmarks)
    narrow = rendered(outcome, 80)
    assert "left out to fit:" in " ".join(narrow.split())
    piped = rendered(outcome, 80, terminal=False)  # a file or a pipe: every column
    assert "left out" not in piped
    monkeypatch.setenv(WIDE_ENV, "1")
    assert "left out" not in rendered(outcome, 80)


def test_the_most_important_columns_are_kept_first():
    columns = ["variant", "params", "check", "median", "spread", "GFLOP/s", "GB/s",
               "vs cuBLAS", "rel error"]
    sweep = [["tiled", f"TILE={tile}", "PASS", "1.00 ms", "±0.1%", "2,000.0", "12.0",
              "0.50x", "1.0e-07"] for tile in (16, 32)]
    kept = fit(columns, sweep, 60)
    names = [columns[i] for i in kept.kept]
    assert names[:4] == ["variant", "params", "check", "median"] and "vs cuBLAS" in names
    assert "rel error" in kept.left_out and "spread" in kept.left_out
    assert fit(columns, sweep, None).left_out == ()  # no terminal: everything


def test_the_gpu_that_tells_rows_of_one_name_apart_is_kept_next_to_the_name():
    # history show of a store shared by two models, at 80 columns, left the GPU out:
    # transpose/naive twice, 1.136 ms and 967.5 us, and nothing said which card was which
    columns = ["benchmark", "latest", "change", "runs", "GPU", "band", "commits"]
    rows = [[f"transpose/naive TILE=32 8192x{n} float32", "1.136 ms", "+1.0%", "3",
             gpu, "1.1-1.2 ms", "abcdef1..abcdef2"]
            for n in (8192, 4096) for gpu in ("H100 80GB HBM3", "H200")]
    fitted = fit(columns, rows, 56)
    assert "GPU" not in fitted.left_out and "latest" in fitted.left_out  # before any number
    one_model = [[*row[:4], "H100 80GB HBM3", *row[5:]] for row in rows[::2]]
    assert "GPU" in fit(columns, one_model, 56).left_out  # it tells nothing apart there


def test_params_that_tell_no_rows_apart_rank_after_the_numbers():
    # Each variant once, at its defaults: a long params cell must not push out vs cuBLAS.
    columns = ["variant", "params", "check", "median", "GFLOP/s", "vs cuBLAS", "vs naive"]
    params = "TILE=64 BLOCK_ROWS=8 GROUP=1 LOAD_CACHE=1 STORE_CACHE=2"
    rows = [["evict_first", params, "PASS", "181 us", "2,969.4", "1.02x", "6.2x"],
            ["naive", "TILE=32", "PASS", "1.12 ms", "472.6", "0.17x", "1.00x"]]
    kept = fit(columns, rows, 70)
    assert [columns[i] for i in kept.kept] == ["variant", "check", "median", "GFLOP/s",
                                               "vs cuBLAS", "vs naive"]
    assert kept.left_out == ("params",)
    assert "params" in [columns[i] for i in fit(columns, rows, 140).kept]  # room: kept


def test_differing_params_keeps_what_tells_rows_apart():
    cells = ["TILE=64 BLOCK_ROWS=8 GROUP=1", "TILE=64 BLOCK_ROWS=8", "-",
             "TILE=64 BLOCK_ROWS=8 GROUP=8"]
    assert differing_params(cells) == (["GROUP=1", "-", "-", "GROUP=8"],
                                       "TILE=64 BLOCK_ROWS=8")
    assert differing_params(["TILE=8", "TILE=16"]) is None  # nothing to cut
    assert differing_params(["TILE=8 x", "TILE=8"]) is None  # not NAME=value pairs


@pytest.mark.parametrize("columns, rows", [
    (("benchmark", "variant", "params", "compiled"),  # a dry run: params left out
     [["transpose 1024x1024 float32", "evict_first",
       f"TILE=64 BLOCK_ROWS=8 GROUP={g} LOAD_CACHE=1 STORE_CACHE=2", "ok (sm_90)"]
      for g in (1, 8)]),
    (("variant", "params", "check", "median", "vs cuBLAS"),  # a run: vs cuBLAS pushed out
     [["evict_first", f"TILE=64 BLOCK_ROWS=8 GROUP={g} LOAD_CACHE=1 STORE_CACHE=2", "PASS",
       "181 us", "1.02x"] for g in (1, 8)])])
def test_a_narrow_sweep_shows_the_params_that_differ(columns, rows):
    console = Console(width=60, force_terminal=True, color_system=None)
    with console.capture() as capture:
        render_rows("sweep", columns, rows, console)
    text = " ".join(capture.get().split())
    assert "GROUP=1" in text and "GROUP=8" in text and "left out" not in text, text
    assert ("params: those that differ between rows; the others, the same in every row "
            "that has them: TILE=64 BLOCK_ROWS=8 LOAD_CACHE=1 STORE_CACHE=2") in text


def test_a_column_is_kept_only_when_every_more_important_one_is():
    # history check at 80 columns showed "runs" where "change" did not fit
    columns = ["benchmark", "runs", "change", "verdict"]
    rows = [["matmul/tiled_conflict/TILE=16", "3", "+10.1%", "slower"]]  # one word: no fold
    kept = fit(columns, rows, 50)  # room for "runs" (7) but not for "change" (9)
    assert [columns[i] for i in kept.kept] == ["benchmark", "verdict"]
    assert kept.left_out == ("runs", "change")
    assert [columns[i] for i in fit(columns, rows, 52).kept] == ["benchmark", "change",
                                                                 "verdict"]


def test_a_first_column_of_long_names_folds_rather_than_push_the_verdict_off():
    # history check at 80 columns showed the benchmark column alone: a name with its
    # parameters filled the width, and the verdict was "left out to fit"
    columns = ["benchmark", "runs", "current", "change", "verdict"]
    name = "matmul/async_double_buffer BK=16 BM=128 BN=128 MIN_BLOCKS=2 STAGES=2 WM=32 WN=64 " \
           "64x64x64 float32"
    rows = [[name, "5", "3.783 us", "+0.1%", "same"], ["matmul/naive TILE=16 64x64x64 float32",
                                                      "5", "5.332 us", "-0.2%", "same"]]
    fitted = fit(columns, rows, 80)
    assert [columns[i] for i in fitted.kept] == columns
    assert fitted.first_width == 36  # 45% of 80: names fold onto a few lines, not many
    console = Console(width=80, force_terminal=True, color_system=None)
    with console.capture() as capture:
        render_rows("history check", columns, rows, console)
    lines = capture.get().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "left out" not in capture.get() and "same" in capture.get()
    assert "matmul/async_double_buffer BK=16" in capture.get()  # folded at a space
    # A name too long to fold usefully (one long word) is not folded: the columns that do
    # not fit are left out, as before.
    one_word = [[name.replace(" ", "/"), *rows[0][1:]]]
    assert fit(columns, one_word, 80).first_width is None


def test_a_long_text_that_becomes_a_note_stops_no_column():
    columns = ["benchmark", "reason", "runs"]
    plan = layout(columns, [["dot/a", "a reason far too long for the table", "3"]], 25)
    assert [columns[i] for i in plan.fitted.kept] == ["benchmark", "runs"]
    assert plan.notes == ("[1] reason: a reason far too long for the table",)


def test_the_ops_rate_comes_before_the_other_rate():
    columns = ["variant", "median", "GFLOP/s", "GB/s"]
    rows = [["tiled", "1.00 ms", "51,412.7", "75.3"]]  # GB/s is the narrower

    def kept(width: int, rate: str) -> list[str]:
        return [columns[i] for i in fit(columns, rows, width, rate).kept]

    assert kept(31, "GFLOP/s") == ["variant", "median"]  # not GB/s in GFLOP/s's place
    assert kept(32, "GFLOP/s") == ["variant", "median", "GFLOP/s"]
    assert kept(32, "GB/s") == ["variant", "median", "GB/s"]


@pytest.mark.parametrize(("path", "rate"), [("tests/data/h100-insight/m4096_full.json",
                                               "GFLOP/s"),
                                              ("tests/data/h100-insight/d.json", "GB/s"),
                                              ("tests/data/h100-insight/t8192.json", "GB/s")])
def test_a_run_table_knows_its_rate(path, rate):
    # dot counts FLOPs too, but at 0.25 FLOP/byte it is read in GB/s (as in the figure)
    assert build_tables(RunOutcome(load_results(path).benchmarks))[0].rate == rate


def test_matmul_at_80_columns_shows_gflops_not_gbps(monkeypatch):
    monkeypatch.delenv(WIDE_ENV, raising=False)
    outcome = RunOutcome(load_results("tests/data/h100-insight/m4096_full.json").benchmarks)
    text = rendered(outcome, 80)
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    assert "GFLOP/s" in header and "GB/s" not in header
    left_out = " ".join(text[text.index("left out to fit:"):].split())
    assert "GB/s" in left_out.split("(")[0]


def test_plain_tables_fit_too():
    console = Console(width=40, force_terminal=True, color_system=None)
    with console.capture() as capture:
        render_rows("t", ["benchmark", "a long column name", "x"],
                    [["matmul/tiled", "some long value here", "1"]], console)
    text = capture.get()
    assert "…" not in text and "matmul/tiled" in text
    assert "left out" in text


COMPARE_PAIRS = [("tests/data/h100/v1-matmul.json", "tests/data/h100/v2-matmul.json"),
                 ("tests/data/compare/baseline.json", "tests/data/compare/slower20.json"),
                 ("tests/data/compare/baseline.json", "tests/data/compare/failing.json")]


@pytest.mark.parametrize(("old", "new"), COMPARE_PAIRS)
@pytest.mark.parametrize("width", [80, 100, 120])
def test_compare_fits_and_keeps_its_reasons_as_notes(old, new, width):
    from cudabench.cli.compare import judge
    from cudabench.render.terminal import render_comparison

    comparison = judge(load_results(old), load_results(new), "5%")
    console = Console(width=width, force_terminal=True, color_system=None)
    with console.capture() as capture:
        render_comparison(comparison, console)
    text = capture.get()
    table = text.split("┘")[0]  # the table itself: notes below it may be long lines
    assert "…" not in text and max(len(line) for line in table.splitlines()) <= width
    for row in comparison.rows:
        assert row.variant in text
        if row.verdict.value != "same":  # its verdict and its reason are on screen
            assert row.verdict.value in text and row.reason.split()[0] in text


def test_long_texts_left_out_become_notes_shared_by_rows_that_say_the_same():
    columns = ["benchmark", "change", "verdict", "reason"]
    rows = [["dot/a", "+9%", "slower", "the interval is above the threshold, well above"],
            ["dot/b", "+0%", "same", "inside"],
            ["dot/c", "+8%", "slower", "the interval is above the threshold, well above"]]
    plan = layout(columns, rows, 40, noted_rows={0, 2})
    assert [columns[i] for i in plan.fitted.kept] == ["benchmark", "change", "verdict"]
    assert plan.fitted.left_out == ()  # the reason is in the notes, not named as lost
    assert plan.marks == {0: "[1]", 2: "[1]"}
    assert plan.notes == ("[1] reason: the interval is above the threshold, well above",)
    assert layout(columns, rows, None).notes == ()  # every column: nothing to note


def test_a_pipe_keeps_a_table_wider_than_the_console_whole(monkeypatch):
    import io

    from cudabench.render.terminal import render_rows

    monkeypatch.delenv("COLUMNS", raising=False)
    stream = io.StringIO()  # not a terminal: every column, as wide as they need
    long = "x" * 150
    render_rows("t", ["benchmark", "a", "b"], [["dot/a", long, long]],
                Console(file=stream, width=100, color_system=None))
    text = stream.getvalue()
    assert "…" not in text and text.count(long) == 2 and "left out" not in text
    monkeypatch.setenv("COLUMNS", "100")  # a width asked for: fitted to it, as a terminal
    stream = io.StringIO()
    render_rows("t", ["benchmark", "a", "b"], [["dot/a", long, long]],
                Console(file=stream, width=100, color_system=None))
    assert long not in stream.getvalue() and "left out to fit: a, b" in stream.getvalue()


@pytest.mark.parametrize("columns", [None, "100"])
def test_a_table_s_cells_are_measured_once_to_print_it(monkeypatch, columns):
    # a measure before printing (for a width that went unused, or that Rich finds again
    # while printing) measured every cell twice more: a quarter of a large report's time
    import io

    from rich.table import Table

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    # Rich's own path (a coloured terminal's, or a table it alone can draw)
    monkeypatch.setattr("cudabench.render.terminal.table_segments", lambda *args: None)
    measured = []
    real = Table._measure_column
    monkeypatch.setattr(Table, "_measure_column", lambda self, console, options, column: (
        measured.append(column.header) or real(self, console, options, column)))
    stream = io.StringIO()
    render_rows("t", ["benchmark", "a", "b"], [["dot/a", "x" * 150, "1"]],
                Console(file=stream, width=100, color_system=None))
    assert stream.getvalue().count("dot/a") == 1
    kept = {"benchmark", "a", "b"} if columns is None else {"benchmark"}  # 100: a, b left out
    assert sorted(measured) == sorted(kept)  # each column once


def test_a_name_wider_than_the_terminal_folds_every_letter_kept():
    console = Console(width=30, force_terminal=True, color_system=None)
    name = "matmul/" + "a_very_long_variant_name" * 2
    with console.capture() as capture:
        render_rows("t", ["benchmark", "x"], [[name, "1"]], console)
    text = capture.get()
    assert "…" not in text
    assert name in "".join(line.strip("│ ") for line in text.splitlines()
                           if line.startswith("│"))


def test_the_best_table_at_80_columns_names_each_winner_s_size_and_params():
    # at 80 columns it showed op, dtype, variant, median and a long "tie with ..." verdict:
    # which size and which TILE had won was left out
    from cudabench.cli.best import COLUMNS

    rows = [["matmul", size, "float32", variant, "TILE=32", "5.689 us", "TILE=16", "-", "tie",
             "TILE=8; TILE=16"] for size in ("64x64x64", "128x128x128")
            for variant in ("tiled", "naive")]
    console = Console(width=80, force_terminal=True, color_system=None)
    with console.capture() as capture:
        render_rows("best configuration per variant and size", COLUMNS, rows, console)
    header = next(line for line in capture.get().splitlines() if line.startswith("┃"))
    shown = [cell.strip() for cell in header.strip("┃").split("┃")]
    assert {"size", "variant", "best params", "median", "verdict"} <= set(shown), shown
    assert "tied with: TILE=8; TILE=16" in capture.get()  # a note, not a lost column


def test_a_search_s_one_best_row_shows_where_its_params_are():
    # at 100 columns a search's one best row read "-" in its best params column (none of its
    # parameters differ between rows), under a line on what "differs between rows"
    from cudabench.cli.best import COLUMNS

    params = "BM=64 BN=64 BK=8 WM=32 WN=32 STAGES=4 MIN_BLOCKS=2"
    rows = [["matmul", "128x128x128", "float32", "async_double_buffer", params, "3.975 us",
             "STAGES=3", "+0.2%", "tie", "-"]]
    console = Console(width=100, force_terminal=True, color_system=None)
    with console.capture() as capture:
        render_rows("best configuration per variant and size", COLUMNS, rows, console)
    text = capture.get()
    assert "│ (below) " in text and f"best params of the row: {params}" in text, text
    assert "differ between rows" not in text


def test_params_each_row_has_its_own_of_stay_in_their_cells():
    # a row holding none of the shared parameters made every cell "(below)", under a line
    # giving the third row's parameters as every row's
    columns = ("variant", "params", "check", "median")
    rows = [["a", "TILE=16", "PASS", "1 us"], ["b", "TILE=32", "PASS", "1 us"],
            ["c", "GROUP_SIZE_M=8 WARPS=4 STAGES=3", "PASS", "1 us"]]
    for width in (40, 60, 90):
        console = Console(width=width, force_terminal=True, color_system=None)
        with console.capture() as capture:
            render_rows("sweep", columns, rows, console)
        text = " ".join(capture.get().split())
        assert "(below)" not in text and "of every row" not in text, text


@pytest.mark.parametrize("value, on", [("1", True), ("yes", True), ("0", False),
                                       ("false", False), ("No", False), ("off", False),
                                       ("", False)])
def test_the_wide_variable_says_no_as_other_variables_do(monkeypatch, value, on):
    # CUDABENCH_WIDE=false turned every column on
    from cudabench.render.fit import wide

    monkeypatch.setenv("CUDABENCH_WIDE", value)
    assert wide() is on
