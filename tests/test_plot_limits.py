"""How much one figure draws: at most MAX_SERIES series, across files and GPUs too, and
what it left out said."""

from __future__ import annotations

import dataclasses

import pytest

from cudabench.render import plot
from cudabench.render.origins import rows_of
from cudabench.render.plot.selection import MAX_SERIES
from cudabench.results import load_results
from test_plot_choice import drawn_figure
from test_report import DATA, search_file, series_lines


def copies(folder, source, count: int) -> list:
    """Write count copies of a results file, named run00.json, run01.json..."""
    folder.mkdir(exist_ok=True)
    paths = [folder / f"run{i:02d}.json" for i in range(count)]
    for path in paths:
        path.write_bytes(source.read_bytes())
    return paths


def test_a_figure_of_many_files_draws_the_first_that_fit_and_says_what_it_left_out(
        tmp_path, monkeypatch):
    # 30 files of 4 series each (2 variants, cuBLAS, the copy) drew 120 series: the limit
    # counted no vendor or copy row, nor cut a file; 30 sweeps made a 900x10,635 px PNG
    paths = copies(tmp_path / "runs", DATA / "d.json", 30)
    result, figure = drawn_figure(monkeypatch, *paths, "-o", tmp_path / "m.png",
                                  "--kind", "throughput")
    said = " ".join(result.stderr.split())
    assert ("note: 20 of 30 files left out (run10.json, run11.json, run12.json, "
            "run13.json") in said, said
    assert f"and 8 more): a figure holds {MAX_SERIES} series (`cudabench report` lists " \
        "every one); name fewer files, or -p NAME=VALUE" in said
    (axes,) = figure.get_axes()
    lines = series_lines(axes)
    assert len(lines) == MAX_SERIES
    assert {line.get_label().split(" [")[1].rstrip("]") for line in lines} == {
        f"run{i:02d}.json" for i in range(10)}
    from matplotlib.legend import Legend

    (legend,) = figure.findobj(Legend)
    assert "20 of 30 files left out" in " ".join(legend.get_title().get_text().split())
    # a page says it under its figures, naming where every one is
    rows = rows_of([load_results(path) for path in paths])
    assert any(line.startswith("20 of 30 files left out") and "the tables below" in line
               for line in plot.left_out(rows, "the tables below list every one"))


def test_cublas_and_copy_rows_count_toward_the_series_a_figure_holds(tmp_path, monkeypatch):
    # 3 files of 12 configurations: 36 series of the variant, under 40, so none was cut,
    # and the 6 cuBLAS and copy series made 42
    path = search_file(tmp_path / "search.json", 12)
    paths = copies(tmp_path / "runs", path, 3)
    result, figure = drawn_figure(monkeypatch, *paths, "-o", tmp_path / "m.png",
                                  "--kind", "throughput")
    assert ("note: atomic (dot): the 5 fastest of its 12 configurations drawn and its "
            "default, 6 left out") in " ".join(result.stderr.split())
    assert "files left out" not in result.stderr
    (axes,) = figure.get_axes()
    assert len(series_lines(axes)) == 3 * (6 + 2) <= MAX_SERIES


def test_one_file_on_many_gpus_leaves_out_the_gpus_past_the_limit():
    pytest.importorskip("matplotlib")
    rows = load_results(DATA / "d.json").benchmarks
    many = [dataclasses.replace(r, device=dataclasses.replace(
        r.device, uuid=f"GPU-{i:08x}-0000", index=i)) for i in range(12) for r in rows]
    assert plot.left_out(many) == [
        f"2 of 12 GPUs left out (GPU 10 (GPU-0000000a), GPU 11 (GPU-0000000b)): a figure "
        f"holds {MAX_SERIES} series (`cudabench report` lists every one)"]
