"""`plot --variant NAME -p NAME=VALUE` (and `report`'s): draw the configurations asked for."""

from __future__ import annotations

import json

import pytest

from cudabench.render import plot
from test_report import (
    DATA,
    assert_one_line_error,
    invoke,
    search_file,
    series_lines,
    write_json,
)

SWEEP = DATA / "sweep_best.json"  # matmul naive, tiled, tiled_conflict at TILE=8,16,32; cuBLAS


def drawn_figure(monkeypatch, *args: object):
    """Run `plot` and return its result and the figure it would have written."""
    pytest.importorskip("matplotlib")
    figures: list = []
    monkeypatch.setattr(plot, "save", lambda figure, path: figures.append(figure))
    result = invoke("plot", *args)
    assert result.exit_code == 0, result.stderr
    (figure,) = figures
    return result, figure


def labels(figure) -> list[list[str]]:
    """Each panel's series, without the file a label names where there are several."""
    return [[line.get_label().split(" [")[0] for line in series_lines(axes)]
            for axes in figure.get_axes()]


def test_a_search_s_figure_draws_the_configurations_a_param_names(tmp_path, monkeypatch):
    # a search of 384 configurations drew its 5 fastest and default, whatever was asked
    path = search_file(tmp_path / "search.json", 384)
    result, figure = drawn_figure(monkeypatch, path, "-o", tmp_path / "s.png", "-p", "BLOCK=256")
    said = " ".join(result.stderr.split())
    # 64 of the 384 have BLOCK=256: the note counts those, and says so
    assert ("note: atomic (dot): the 5 fastest of its 64 configurations with BLOCK=256 drawn "
            "and its default, 58 left out (`cudabench report` lists every one); -p "
            "NAME=VALUE and --variant NAME draw the ones you name") in said, said
    for names in labels(figure):
        atomic = [name for name in names if name.startswith("atomic")]
        assert len(atomic) == 6 and all("BLOCK=256 " in name for name in atomic), names
        assert "cuBLAS" in names  # the yardstick stays
    # a few: every one drawn, nothing said left out
    result, figure = drawn_figure(monkeypatch, path, "-o", tmp_path / "s.png",
                                  "-p", "BLOCK=32,64", "-p", "BLOCKS_PER_SM=1,2")
    assert "left out" not in result.stderr
    assert sorted(labels(figure)[0]) == sorted(
        ["cuBLAS", "memcpy_dtod"] + [f"atomic BLOCK={b} BLOCKS_PER_SM={n}"
                                     for b in (32, 64) for n in (1, 2)])


def test_variant_draws_that_variant_and_its_op_s_yardsticks_alone(tmp_path, monkeypatch):
    _, figure = drawn_figure(monkeypatch, SWEEP, DATA / "d.json", "-o", tmp_path / "v.png",
                             "--variant", "tiled", "-p", "TILE=8,32", "--kind", "throughput")
    # dot's panel goes: none of its variants was chosen
    assert [axes.get_title() for axes in figure.get_axes()] == ["matmul float32"]
    assert sorted(labels(figure)[0]) == ["cuBLAS", "tiled TILE=32", "tiled TILE=8"]
    # a variant without the parameter is drawn whole, as a run's -p leaves it at its defaults
    _, figure = drawn_figure(monkeypatch, SWEEP, DATA / "d.json", "-o", tmp_path / "v.png",
                             "--variant", "tiled", "--variant", "atomic", "-p", "TILE=16",
                             "--kind", "throughput")
    assert sorted(map(sorted, labels(figure))) == [
        ["atomic BLOCK=256 BLOCKS_PER_SM=8", "cuBLAS", "memcpy_dtod"],
        ["cuBLAS", "tiled TILE=16"]]


@pytest.mark.parametrize("args, fragments", [
    (["--variant", "tiledd"], ["--variant tiledd: no such variant in the files; did you mean "
                               "tiled? (their variants: naive, tiled, tiled_conflict; or all"]),
    (["--variant", "naive,tiled"], ["give each: --variant naive --variant tiled"]),
    (["--variant", "cuBLAS"], ["--variant cuBLAS: a cuBLAS row is no variant",
                               "(naive, tiled, tiled_conflict) or all"]),
    (["-p", "TILES=8"], ["-p TILES: no configuration in the files has TILES; did you mean "
                         "TILE? (they have TILE)"]),
    (["-p", "TILE=7,9"], ["-p TILE=7,9: no configuration in the files has TILE=7,9 (they "
                          "have TILE=8,16,32)"]),
    (["--variant", "tiled", "-p", "BLOCK=8"], ["-p BLOCK: no configuration of tiled has "
                                               "BLOCK (they have TILE)"]),
    (["-p", "TILE"], ["-p 'TILE': expected NAME=VALUE"]),
    (["-p", "TILE=8", "-p", "TILE=16"], ["-p TILE given twice"]),
    (["-p", "TILE=" + "9" * 5000], ["-p TILE: '99999999999999999999'... is a number of 5000"]),
])
def test_a_choice_that_matches_nothing_is_one_line_naming_what_there_is(tmp_path, args,
                                                                        fragments):
    pytest.importorskip("matplotlib")
    for command in (["plot", SWEEP, "-o", tmp_path / "p.png"], ["report", SWEEP]):
        assert_one_line_error(invoke(*command, *args), *fragments)


def test_parameters_that_match_apart_but_not_together_are_refused(tmp_path):
    pytest.importorskip("matplotlib")
    path = search_file(tmp_path / "search.json", 12)  # BLOCKS_PER_SM=1,2 and the default 8
    assert_one_line_error(
        invoke("plot", path, "-o", tmp_path / "p.png", "-p", "BLOCK=32", "-p", "BLOCKS_PER_SM=8"),
        "-p BLOCK=32 -p BLOCKS_PER_SM=8: no configuration matches them all (atomic has "
        "BLOCK=32,64,128,256,512,1024 and BLOCKS_PER_SM=1,2,8)")
    # a variant named, and none of its configurations left: not dropped without a word
    assert_one_line_error(
        invoke("plot", SWEEP, path, "-o", tmp_path / "p.png", "--variant", "tiled",
               "--variant", "atomic", "-p", "TILE=8", "-p", "BLOCK=32", "-p",
               "BLOCKS_PER_SM=8"),
        "no configuration of atomic matches (atomic has BLOCK=32,64,128,256,512,1024 and "
        "BLOCKS_PER_SM=1,2,8)")


def test_report_shows_the_chosen_rows_and_leaves_out_a_file_without_any(tmp_path):
    result = invoke("report", SWEEP, DATA / "d.json", "--variant", "tiled", "-p", "TILE=16",
                    "--csv", tmp_path / "r.csv")
    assert result.exit_code == 0, result.stderr
    assert "note: " + str(DATA / "d.json") + ": left out, none of its rows is among those " \
        "--variant tiled -p TILE=16 chose" in " ".join(result.stderr.split())
    rows = (tmp_path / "r.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert len(rows) == 10  # five sizes: tiled TILE=16 and cuBLAS each
    assert all(",tiled," in row or ",cuBLAS," in row for row in rows), rows
    assert all("TILE=16" in row for row in rows if ",tiled," in row)


def test_the_page_s_figures_draw_the_chosen_rows(tmp_path):
    pytest.importorskip("matplotlib")
    page = tmp_path / "r.html"
    result = invoke("report", SWEEP, "--variant", "naive", "--html", page)
    assert result.exit_code == 0, result.stderr
    text = page.read_text(encoding="utf-8")
    assert "naive TILE=8" in text and "tiled" not in text


def test_the_rows_said_not_plotted_are_the_chosen_ones(tmp_path):
    pytest.importorskip("matplotlib")
    document = json.loads(search_file(tmp_path / "search.json", 3).read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        if row["kind"] == "variant":
            row["status"], row["verification"]["passed"] = "FAIL", False
    failed = write_json(tmp_path / "failed.json", document)
    out = tmp_path / "p.png"
    tiled = invoke("plot", failed, SWEEP, "-o", out, "--variant", "tiled")
    assert tiled.exit_code == 0 and "not plotted" not in tiled.stderr, tiled.stderr
    atomic = invoke("plot", failed, SWEEP, "-o", out, "--variant", "atomic")
    assert atomic.exit_code == 0, atomic.stderr
    assert "note: not plotted: 3 FAIL rows" in atomic.stderr  # its cuBLAS and copy drawn
