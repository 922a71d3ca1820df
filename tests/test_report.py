"""`cudabench report` and `cudabench plot` on saved H100 results, with no GPU."""

from __future__ import annotations

import csv
import dataclasses
import html
import importlib.util
import io
import json
import math
import re
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli.boundary import BoundaryGroup
from cudabench.cli.report import plot_command, report_command
from cudabench.render import plot
from cudabench.results import load_results

DATA = Path(__file__).parent / "data" / "h100-insight"
FILES = [DATA / name for name in ("m1000.json", "mc.json", "d.json", "m128.json")]
PNG = b"\x89PNG\r\n\x1a\n"
COUNTER_LABELS = ("bank confl. ld", "bank confl. st", "occupancy", "DRAM %", "SM %",
                  "L2 hit", "regs", "ncu time")


def invoke(*args: object):
    """Run report/plot inside the CLI's error boundary, stdout and stderr apart."""
    group = BoundaryGroup("cudabench", commands=[report_command, plot_command])
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always separates them
        runner = CliRunner()
    # Wide enough that Rich never wraps a column title ('vs cuBLAS' over two lines).
    return runner.invoke(group, [str(a) for a in args], env={"COLUMNS": "400"})


def assert_one_line_error(result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cudabench: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def no_gpu_libraries(monkeypatch):
    """Make any import of PyCUDA or CuPy fail, as on a machine without CUDA."""
    for name in ("pycuda", "pycuda.driver", "cupy"):
        monkeypatch.setitem(sys.modules, name, None)


def write_json(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_report_shows_every_insight_column_without_a_gpu(no_gpu_libraries):
    result = invoke("report", *FILES)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for text in ("matmul 1000x1000x1000 (MxKxN) float32", "matmul 128x128x128",
                 "dot 16777216 (N) float32", "vs cuBLAS", "vs naive", "% of memcpy_dtod",
                 "% of peak", "bound", "batch (warm)", "energy/launch", "GFLOP/J",
                 "behind the times", "roofs: DRAM 3,352 GB/s", "NVML while sampling",
                 *COUNTER_LABELS):
        assert text in out, text
    # The numbers the run itself printed (its markdown: /work/.device/2/m1000.md).
    naive = next(line for line in out.splitlines() if line.startswith("│ naive ")
                 and "344.9 us" in line)
    for cell in ("5,798.6", "0.18x", "1.00x", "326.1 us", "8.7%", "compute"):
        assert cell in naive, cell
    assert "100,708,531" in out  # tiled_conflict's shared-load bank conflicts (mc.json)


@pytest.mark.parametrize("name", ["new.json.gz", "new.JSON.GZ", "new.yaml.xz"])
def test_report_takes_no_compressed_name_of_code_or_configuration(tmp_path, name):
    # `--markdown new.json` was refused but `--markdown new.json.gz` written: text in a .gz
    target = tmp_path / name
    result = invoke("report", FILES[0], "--markdown", target)
    kind = name[len("new"):]
    assert_one_line_error(result, f"--markdown {target}: {kind} is a name of code or "
                          "configuration", "name it e.g. new.md")
    assert not target.exists()


def test_report_markdown_names_each_file_as_text(tmp_path):
    # each file's path went into its `## ` heading as it was: HTML and links rendered
    folder = tmp_path / "md" / "<b>x</b>"
    folder.mkdir(parents=True)
    odd = folder / "[a](http:evil)*b*.json"
    odd.write_bytes(FILES[0].read_bytes())
    md = tmp_path / "out.md"
    result = invoke("report", odd, FILES[1], "--markdown", md)
    assert result.exit_code == 0, result.stderr
    headings = [line for line in md.read_text(encoding="utf-8").splitlines()
                if line.startswith("## ")]
    assert headings == [f"## `{odd}`", f"## `{FILES[1]}`"]


def test_report_writes_markdown_and_csv_that_parse(tmp_path):
    md, table = tmp_path / "out.md", tmp_path / "out.csv"
    result = invoke("report", *FILES, "--markdown", md, "--csv", table)
    assert result.exit_code == 0, result.stderr

    text = md.read_text(encoding="utf-8")
    assert "| vs cuBLAS |" in text and "| % of peak |" in text and "| ncu time |" in text
    blocks = re.findall(r"((?:^\|.*\|\n)+)", text, flags=re.MULTILINE)
    assert len(blocks) >= 6  # a table and a detail table per matmul, the dot pair
    for block in blocks:
        rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in block.splitlines()]
        assert len({len(row) for row in rows}) == 1, block  # every row as wide as its header

    rows = list(csv.DictReader(io.StringIO(table.read_text(encoding="utf-8"))))
    loaded = [b for path in FILES for b in load_results(path).benchmarks]
    assert len(rows) == len(loaded)
    # each row names its file: two runs' rows of one benchmark differ only in numbers
    assert [r["file"] for r in rows] == [str(path) for path in FILES
                                         for _ in load_results(path).benchmarks]
    by_name = {(r["op"], r["shape"], r["variant"]): r for r in rows}
    naive = by_name[("matmul", "1000x1000x1000", "naive")]
    cublas = by_name[("matmul", "1000x1000x1000", "cuBLAS")]
    assert naive["status"] == "PASS" and naive["kind"] == "variant" and naive["hot"] == "false"
    assert naive["params"] == "TILE=16" and naive["pci_bus_id"] == "0000:00:06.0"
    median = float(naive["median_s"])
    assert math.isclose(median, 344.9e-6, rel_tol=1e-3)  # seconds, unformatted
    assert math.isclose(float(naive["vs cuBLAS"]), float(cublas["median_s"]) / median)
    assert math.isclose(float(naive["pct_of_peak"]), 8.7, abs_tol=0.05)
    assert naive["bound"] == "compute"

    counted = by_name[("matmul", "1024x1024x1024", "naive")]
    assert float(counted["gpu__time_duration.sum"]) == 415040.0
    assert float(counted["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]) == 0.0
    assert math.isclose(float(counted["energy_j_per_launch"]), 933.478 / 4750)
    # the energy table's GFLOP/J, which the CSV lacked
    assert math.isclose(float(counted["gflops_per_joule"]), 2 * 1024 ** 3 / 1e9 * 4750 / 933.478)
    assert counted["gb_per_joule"] == "" and naive["gflops_per_joule"] == ""
    assert by_name[("matmul", "1024x1024x1024", "cuBLAS")]["gpu__time_duration.sum"] == ""

    atomic = by_name[("dot", "16777216", "atomic")]
    copy = by_name[("dot", "16777216", "memcpy_dtod")]
    assert math.isclose(float(atomic["% of memcpy_dtod"]),
                        100 * float(copy["median_s"]) / float(atomic["median_s"]))
    assert copy["status"] == "REF" and copy["gflops"] == "" and copy["rel_error"] == ""
    assert atomic["bound"] == "memory"
    # A column of another op's group stays empty rather than relating unrelated rows.
    assert atomic["vs naive"] == ""


@pytest.mark.parametrize("make, fragment", [
    (lambda tmp: tmp / "missing.json", "missing.json"),
    (lambda tmp: write_text(tmp / "broken.json", '{"kind": "cudabench-results", '),
     "not valid JSON"),
    (lambda tmp: write_text(tmp / "other.json", '{"kind": "something else"}'), "other.json"),
    (lambda tmp: tmp, "is a directory"),
])
def test_a_bad_results_file_is_one_line_naming_it(tmp_path, make, fragment):
    path = make(tmp_path)
    assert_one_line_error(invoke("report", FILES[0], path), fragment)


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_an_output_on_an_input_is_refused_and_the_input_kept(tmp_path):
    source = write_text(tmp_path / "m1000.json", FILES[0].read_text(encoding="utf-8"))
    before = source.read_bytes()
    for flag in ("--markdown", "--html", "--csv"):
        assert_one_line_error(invoke("report", source, flag, source), flag,
                              "one of the files this command reads")
        assert source.read_bytes() == before
    # A results file may have any name, even one that looks like a figure's.
    odd = write_text(tmp_path / "results.svg", source.read_text(encoding="utf-8"))
    assert_one_line_error(invoke("plot", odd, "-o", odd), "-o",
                          "one of the files this command reads")
    assert odd.read_bytes() == before


def test_two_outputs_on_one_path_are_refused(tmp_path):
    out = tmp_path / "out.txt"
    assert_one_line_error(invoke("report", *FILES, "--markdown", out, "--csv", out),
                          "--csv", "--markdown")
    assert not out.exists()


def test_a_file_without_benchmarks_is_refused_and_an_incomplete_one_noted(tmp_path):
    document = json.loads(FILES[3].read_text(encoding="utf-8"))
    empty = write_json(tmp_path / "empty.json", {**document, "benchmarks": []})
    assert_one_line_error(invoke("report", empty), "empty.json", "no benchmarks")

    partial = write_json(tmp_path / "partial.json", {**document, "complete": False})
    result = invoke("report", partial)
    assert result.exit_code == 0, result.stderr
    assert "partial.json is incomplete" in result.stderr
    if importlib.util.find_spec("matplotlib") is not None:  # `plot` said nothing of it
        result = invoke("plot", partial, "-o", tmp_path / "p.png")
        assert result.exit_code == 0, result.stderr
        assert f"note: {partial} is incomplete: its run stopped early" in result.stderr


def test_report_reads_a_schema_1_file(no_gpu_libraries):
    result = invoke("report", Path(__file__).parent / "data" / "h100" / "v1-matmul.json")
    assert result.exit_code == 0, result.stderr
    assert "matmul 1000x1000x1000" in result.stdout and "tiled_conflict" in result.stdout


@pytest.mark.parametrize("kind, panels", [("throughput", 2), ("roofline", 1), ("both", 3)])
def test_plot_writes_a_png(tmp_path, kind, panels):
    image = pytest.importorskip("matplotlib.image")
    out = tmp_path / f"{kind}.png"
    result = invoke("plot", *FILES, "-o", out, "--kind", kind)
    assert result.exit_code == 0, result.stderr
    data = out.read_bytes()
    assert data.startswith(PNG)
    pixels = image.imread(out)[..., :3].reshape(-1, 3)
    # 150 dpi, 6 inches a panel column: two columns where there are two panels.
    assert pixels.shape[0] > 600 * 900
    colours = {tuple(p) for p in pixels[::7].round(2).tolist()}
    assert len(colours) > 50  # lines, markers, text in several colours, not a blank canvas
    assert (pixels < 0.95).any(axis=1).mean() > 0.02  # ink on a good part of it
    # Each panel is an axes of the figure that was saved.
    results = [r for path in FILES for r in load_results(path).benchmarks]
    assert len(plot.figure_of(kind, results).get_axes()) == panels


def test_plot_writes_an_svg_and_a_pdf(tmp_path):
    pytest.importorskip("matplotlib")
    for name, start in (("out.svg", b"<?xml"), ("out.PDF", b"%PDF")):
        result = invoke("plot", *FILES, "-o", tmp_path / name)
        assert result.exit_code == 0, result.stderr
        assert (tmp_path / name).read_bytes().startswith(start)
    svg = (tmp_path / "out.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and "tiled_conflict" in svg  # matplotlib keeps text as comments


def test_plot_refuses_an_unknown_suffix_before_reading(tmp_path):
    out = tmp_path / "out.tiff"
    assert_one_line_error(invoke("plot", tmp_path / "missing.json", "-o", out), "-o",
                          "out.tiff", ".png")
    assert not out.exists()


def test_plot_roofline_needs_flops_but_throughput_shows_bytes(tmp_path):
    pytest.importorskip("matplotlib")
    document = json.loads(FILES[2].read_text(encoding="utf-8"))
    copy_only = [b for b in document["benchmarks"] if b["kind"] == "reference"]
    assert copy_only  # d.json holds the device-to-device copy
    path = write_json(tmp_path / "copy.json", {**document, "benchmarks": copy_only})
    assert_one_line_error(invoke("plot", path, "-o", tmp_path / "r.png", "--kind", "roofline"),
                          "--kind roofline", "FLOPs")
    result = invoke("plot", path, "-o", tmp_path / "t.png", "--kind", "throughput")
    assert result.exit_code == 0, result.stderr


def test_plot_says_which_rows_it_left_out(tmp_path):
    # SUSPECT matmul rows vanished and "no roofline: no ... benchmark counts FLOPs" blamed
    # the ops: stderr says what the figure does not show
    pytest.importorskip("matplotlib")
    document = json.loads(FILES[0].read_text(encoding="utf-8"))
    assert document["benchmarks"][0]["op"] == "matmul"  # rows that count FLOPs
    for row in document["benchmarks"]:
        if row["kind"] == "variant":
            row["status"], row["suspect"] = "SUSPECT", "faster than the GPU's roof"
    odd = write_json(tmp_path / "odd.json", document)
    result = invoke("plot", odd, FILES[2], "-o", tmp_path / "r.png")
    assert result.exit_code == 0, result.stderr
    count = sum(row["kind"] == "variant" for row in document["benchmarks"])
    assert f"note: not plotted: {count} SUSPECT rows" in " ".join(result.stderr.split())
    quiet = invoke("plot", *FILES, "-o", tmp_path / "all.png")
    assert "not plotted" not in quiet.stderr


def test_plot_of_two_files_draws_each_files_rows_apart(tmp_path, monkeypatch):
    # a baseline's and a current run's rows of one GPU made one series: two points at a
    # size joined by a vertical line, nothing saying which file each came from
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    base, now = tmp_path / "base.json", tmp_path / "sub" / "now.json"
    now.parent.mkdir()
    for path in (base, now):
        path.write_bytes(FILES[2].read_bytes())
    drawn = []
    monkeypatch.setattr(plot, "save", lambda figure, path: drawn.append(figure))
    result = invoke("plot", base, now, "-o", tmp_path / "t.png", "--kind", "throughput")
    assert result.exit_code == 0, result.stderr
    texts = {t.get_text() for t in drawn[0].findobj(Text)}
    variants = {r.variant for r in load_results(FILES[2]).benchmarks}
    for name in ("base.json", "now.json"):
        labelled = {text for text in texts if text.endswith(f" [{name}]")}
        assert {text.split(" ")[0] for text in labelled} == variants, texts
    alone = invoke("plot", base, "-o", tmp_path / "one.png")
    assert alone.exit_code == 0, alone.stderr


def test_file_labels_use_the_path_where_two_files_share_a_name():
    from cudabench.render.origins import file_labels

    assert file_labels(["a/r.json", "b/r.json", "c/s.json"]) == {
        "a/r.json": "a/r.json", "b/r.json": "b/r.json", "c/s.json": "s.json"}


def test_plot_without_matplotlib_gives_the_install_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "out.png"
    assert_one_line_error(invoke("plot", *FILES, "-o", out),
                          "plotting needs matplotlib: pip install 'matplotlib>=3.7'")
    assert not out.exists()


SWEEP = DATA / "sweep_best.json"


def axes_by_title(figure) -> dict[str, object]:
    return {axes.get_title(): axes for axes in figure.get_axes()}


def legend_texts(figure) -> list[str]:
    """Every legend entry of a figure and of its subfigures (each panel has its own)."""
    texts: list[str] = []
    stack = [figure]
    while stack:
        part = stack.pop()
        texts += [t.get_text() for legend in part.legends for t in legend.get_texts()]
        stack += list(part.subfigs)
    return texts


def test_the_figure_of_a_sweep_has_units_shapes_series_and_roofs():
    pytest.importorskip("matplotlib")
    results = load_results(SWEEP).benchmarks
    figure = plot.both_figure(results)
    panels = axes_by_title(figure)
    throughput = panels["matmul float32"]
    assert throughput.get_ylabel() == "throughput (GFLOP/s)"
    assert "(MxKxN)" in throughput.get_xlabel()
    # A tick at each size, labelled with its shape; the values as people read them.
    assert [t.get_text() for t in throughput.get_xticklabels()] == [
        "256³", "512³", "1024³", "2048³", "4096³"]
    assert {"1,000", "10,000"} <= {t.get_text() for t in throughput.get_yticklabels()}
    lines = throughput.get_lines()
    assert len(lines) == 10  # 3 variants x 3 tiles, and cuBLAS
    by_label = {line.get_label(): line for line in lines}
    assert all(len(line.get_xdata()) == 5 for line in lines)  # every size, 256 to 4096
    # A variant keeps one colour over its tiles, which differ by marker; cuBLAS is dashed.
    naive = [by_label[f"naive TILE={tile}"] for tile in (8, 16, 32)]
    assert len({line.get_color() for line in naive}) == 1
    assert len({line.get_marker() for line in naive}) == 3
    assert by_label["cuBLAS"].get_linestyle() == "--"
    assert by_label["tiled TILE=8"].get_color() != naive[0].get_color()
    legend = legend_texts(figure)
    assert legend.count("naive TILE=8") == 2 and legend.count("cuBLAS") == 2  # both panels

    roofline = panels["NVIDIA H100 80GB HBM3\n(GPU 0 at 0000:00:06.0)"]
    assert roofline.get_xscale() == roofline.get_yscale() == "log"
    assert roofline.get_ylabel() == "achieved TFLOP/s, log scale"
    assert "FLOP/byte" in roofline.get_xlabel()
    texts = [t.get_text() for t in roofline.texts]
    assert "DRAM 3,352 GB/s" in texts and "FP32 CUDA cores 66.9 TFLOP/s" in texts
    # The same colours as the throughput panel: one variant, one colour in every panel.
    roof_series = {line.get_label(): line for line in roofline.get_lines()}
    assert roof_series["naive TILE=8"].get_color() == naive[0].get_color()
    cublas = roof_series["cuBLAS"]
    assert max(cublas.get_ydata()) < 66.9  # under its roof, in TFLOP/s
    assert len(roofline.get_lines()) == 10 + 2  # the series, the DRAM and the FP32 roofs


def test_a_streaming_op_is_read_in_gb_per_s_beside_its_copy():
    pytest.importorskip("matplotlib")
    figure = plot.throughput_figure(load_results(DATA / "d.json").benchmarks)
    dot = axes_by_title(figure)["dot float32"]
    assert dot.get_ylabel() == "bandwidth (GB/s)"
    labels = {line.get_label() for line in dot.get_lines()}
    assert any(label.startswith("memcpy_dtod") for label in labels)
    assert dot.get_ylim()[0] == 0  # a linear axis from zero: equal speeds look equal


def test_several_gpus_of_one_model_are_told_apart():
    pytest.importorskip("matplotlib")
    results = [r for name in ("m4096_full.json", "m1000.json")
               for r in load_results(DATA / name).benchmarks]
    figure = plot.both_figure(results)
    titles = [axes.get_title() for axes in figure.get_axes()]
    assert any("GPU-c39d14b7" in t for t in titles) and any("GPU-533cbc01" in t for t in titles)
    lines = axes_by_title(figure)["matmul float32"].get_lines()
    fills = {line.get_label(): line.get_fillstyle() for line in lines}
    assert fills["cuBLAS [GPU-c39d14b7]"] != fills["cuBLAS [GPU-533cbc01]"]


@pytest.mark.parametrize("count, apart", [(8, "device"), (30, "origin")])
def test_each_gpu_or_file_of_a_figure_has_a_look_of_its_own(count, apart):
    # 6 marker fills, then round again: the 7th GPU's atomic looked like the 1st's
    pytest.importorskip("matplotlib")
    atomic = load_results(DATA / "d.json").benchmarks[0]
    rows = [dataclasses.replace(atomic, device=dataclasses.replace(
                atomic.device, uuid=f"GPU-{i:08x}", index=i)) if apart == "device"
            else dataclasses.replace(atomic, origin=f"run{i}.json") for i in range(count)]
    lines = axes_by_title(plot.throughput_figure(rows))["dot float32"].get_lines()
    looks = {(line.get_color(), line.get_marker(), line.get_fillstyle(),
              line.get_markeredgecolor(), line.get_markersize()) for line in lines}
    assert len(lines) == count and len(looks) == count


def test_without_flops_the_figure_is_the_throughput_and_says_why():
    pytest.importorskip("matplotlib")
    figure = plot.both_figure(load_results(DATA / "t8192.json").benchmarks)
    assert [axes.get_title() for axes in figure.get_axes()] == ["transpose float32"]
    assert figure.get_axes()[0].get_ylabel() == "bandwidth (GB/s)"
    assert "no roofline" in figure._supxlabel.get_text()
    assert [t.get_text() for t in figure.get_axes()[0].get_xticklabels()] == ["8192²"]


def drawn_ticks(axis, coordinate: int) -> list:
    """Return an axis's visible tick labels inside its view (matplotlib keeps labels for
    ticks just outside it, which it does not draw)."""
    low, high = sorted(axis.get_view_interval())
    return [t for t in axis.get_ticklabels() if t.get_visible()
            and low <= t.get_position()[coordinate] <= high]


def boxes_overlap(a, b) -> bool:
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


@pytest.mark.parametrize("names", [
    ("sweep_best.json",),
    ("m1000.json", "mc.json", "d.json", "m128.json", "m4096_f16.json"),
    ("t8192.json", "t8192_transfers.json"),
    ("m4096_full.json", "t8192.json", "t8192_transfers.json", "m1000.json"),
])
def test_no_text_overlaps_or_leaves_the_figure(names):
    pytest.importorskip("matplotlib")
    results = [r for name in names for r in load_results(DATA / name).benchmarks]
    figures = [plot.both_figure(results)] + [f for _, f in plot.panel_figures(results)]
    for figure in figures:
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        page = figure.bbox
        for axes in figure.get_axes():
            texts = [axes.title, axes.xaxis.label, axes.yaxis.label, *axes.texts,
                     *drawn_ticks(axes.xaxis, 0), *drawn_ticks(axes.yaxis, 1)]
            for t in texts:
                if not t.get_visible() or not t.get_text():
                    continue
                box = t.get_window_extent(renderer)
                assert (box.x0 >= page.x0 - 2 and box.x1 <= page.x1 + 2
                        and box.y0 >= page.y0 - 2 and box.y1 <= page.y1 + 2), t.get_text()
            for ticks in (drawn_ticks(axes.xaxis, 0), drawn_ticks(axes.yaxis, 1)):
                shown = [t.get_window_extent(renderer) for t in ticks if t.get_text()]
                for i, a in enumerate(shown):
                    assert not any(boxes_overlap(a, b) for b in shown[i + 1:]), \
                        [t.get_text() for t in ticks]
        legends, stack = [], [figure]
        while stack:
            part = stack.pop()
            legends += part.legends
            stack += list(part.subfigs)
        for legend in legends:  # under the panels, inside the figure
            box = legend.get_window_extent(renderer)
            assert box.y0 >= page.y0 - 2 and box.x0 >= page.x0 - 2 and box.x1 <= page.x1 + 2
            for axes in figure.get_axes():
                assert not boxes_overlap(box, axes.get_window_extent(renderer))
        # No legend, wherever it is, covers a data point.
        legends += [axes.get_legend() for axes in figure.get_axes() if axes.get_legend()]
        for axes in figure.get_axes():
            points = [point for line in axes.get_lines() for point in
                      axes.transData.transform(line.get_xydata())]
            for legend in legends:
                box = legend.get_window_extent(renderer)
                inside = [p for p in points if box.x0 < p[0] < box.x1 and box.y0 < p[1] < box.y1]
                assert not inside, (axes.get_title(), len(inside))


def test_the_change_figure_colours_each_verdict():
    pytest.importorskip("matplotlib")
    bars = [plot.ChangeBar("a", 0.2, 0.02, "bad", "slower"),
            plot.ChangeBar("b", 0.001, 0.02, "", "same"),
            plot.ChangeBar("c", -0.1, 0.02, "good", "faster")]
    figure = plot.change_figure(bars)
    axes = figure.get_axes()[0]
    from matplotlib.colors import to_hex
    changes = [p for p in axes.patches if p.get_height() < 0.4]  # the bars, not the bands
    assert [round(p.get_width(), 3) for p in changes] == [20.0, 0.1, -10.0]
    assert [to_hex(p.get_facecolor()) for p in changes] == [
        plot.VERDICT_COLOURS["bad"], plot.VERDICT_COLOURS[""], plot.VERDICT_COLOURS["good"]]
    assert {t.get_text() for t in axes.texts} >= {"a", "b", "c", "slower", "same", "faster"}


def with_units(tmp_path, units: dict[str, str], more: dict[str, float] | None = None):
    """Write mc.json with units for its rows' counters (and more counters); return it."""
    data = json.loads((DATA / "mc.json").read_text())
    for row in data["benchmarks"]:
        if row.get("counters"):
            row["counters"].update(more or {})
            row["counters_units"] = units
    return write_json(tmp_path / "units.json", data)


def test_the_csv_names_each_counter_s_unit_where_ncu_gave_one(tmp_path):
    # the counters' columns held ncu's numbers without their units (nanoseconds, bytes, %)
    path = with_units(tmp_path, {"gpu__time_duration.sum": "nsecond",
                                 "lts__t_sector_hit_rate.pct": "%"})
    table = tmp_path / "out.csv"
    result = invoke("report", path, "--csv", table)
    assert result.exit_code == 0, result.stderr
    header = next(csv.reader(io.StringIO(table.read_text(encoding="utf-8"))))
    assert "gpu__time_duration.sum (nsecond)" in header
    assert "lts__t_sector_hit_rate.pct (%)" in header
    assert "launch__registers_per_thread" in header  # no unit known: the name alone
    assert load_results(path).benchmarks[0].counters_units or any(
        b.counters_units for b in load_results(path).benchmarks)


def test_a_counter_without_a_short_label_shows_its_unit_in_the_tables(tmp_path):
    # the terminal and markdown tables titled a --metrics counter by its name alone: a
    # column of "268,435,456" under dram__bytes_write.sum said no unit (the CSV did)
    path = with_units(tmp_path, {"dram__bytes_write.sum": "byte",
                                 "lts__t_sector_hit_rate.pct": "%"},
                      {"dram__bytes_write.sum": 268435456})
    md = tmp_path / "out.md"
    result = invoke("report", path, "--markdown", md)
    assert result.exit_code == 0, result.stderr
    for text in (result.output, md.read_text(encoding="utf-8")):
        assert "dram__bytes_write.sum (byte)" in text
        assert "268,435,456" in text
        assert "L2 hit" in text and "L2 hit (%)" not in text  # a short label stays short


def test_a_hot_series_does_not_look_like_the_cold_one_beside_it():
    pytest.importorskip("matplotlib")
    # hot and cold rows of one variant were drawn alike: only the legend told them apart
    cold = load_results(FILES[0]).benchmarks
    hot = [dataclasses.replace(r, hot=True, l2_flush="") for r in cold]
    figure = plot.throughput_figure([*cold, *hot])
    lines = {line.get_label(): line for axes in figure.axes for line in axes.get_lines()}
    name = next(r.variant for r in cold if r.kind.value == "variant")
    pair = [line for label, line in lines.items()
            if label.split(" ")[0] == name and "(hot L2)" in label], \
        [line for label, line in lines.items()
         if label.split(" ")[0] == name and "(hot L2)" not in label]
    assert pair[0] and pair[1], sorted(lines)
    hot_line, cold_line = pair[0][0], pair[1][0]
    assert hot_line.get_color() == cold_line.get_color()  # one variant, one colour
    assert (hot_line.get_alpha(), hot_line.get_linewidth()) != (cold_line.get_alpha(),
                                                                cold_line.get_linewidth())
    alone = plot.throughput_figure(hot)  # a hot run alone is drawn as any run is
    assert all(line.get_alpha() in (None, 1.0)
               for axes in alone.axes for line in axes.get_lines())


def test_plot_text_is_literal():
    pytest.importorskip("matplotlib")
    # '$\\b$' is invalid mathtext: drawing it unescaped raises; escaped it is plain text.
    results = load_results(FILES[0]).benchmarks
    odd = [dataclasses.replace(r, variant=f"_x$\\b${r.variant}") for r in results]
    svg = plot.svg_text(plot.both_figure(odd))
    assert svg.startswith("<svg") and "xmlns" not in svg and "http" not in svg
    assert plot.text("a$b") == "a\\$b" and plot.text("_a") == " _a"


def test_each_file_reported_has_tables_of_its_own(tmp_path):
    # merged, the second run's cuBLAS row read "vs cuBLAS 0.50x", against the first's
    data = json.loads((DATA / "t8192.json").read_text())
    for row in data["benchmarks"]:
        if row["variant"] == "cuBLAS":
            row["samples_s"] = [s * 2 for s in row["samples_s"]]
            row.pop("median_s", None)
    slower = write_json(tmp_path / "slower.json", data)
    table = tmp_path / "out.csv"
    result = invoke("report", DATA / "t8192.json", slower, "--csv", table)
    assert result.exit_code == 0, result.stderr
    text = "".join(result.stdout.split())
    assert f"{slower}:".replace(" ", "") in text and str(DATA / "t8192.json") in text
    rows = [r for r in csv.DictReader(io.StringIO(table.read_text(encoding="utf-8")))
            if r["variant"] == "cuBLAS"]
    assert len(rows) == 2 and {float(r["vs cuBLAS"]) for r in rows} == {1.0}, rows


def test_the_warnings_of_several_files_name_their_file():
    # stderr, read apart from the tables (a CI log), said the same warning twice
    one = invoke("report", DATA / "sweep_best.json")
    assert one.stderr.startswith("warning: ")  # one file: as a run says them
    both = invoke("report", DATA / "sweep_best.json", DATA / "t8192.json")
    assert both.exit_code == 0, both.stderr
    lines = both.stderr.splitlines()
    assert lines and all(line.startswith((f"{DATA / 'sweep_best.json'}: ",
                                          f"{DATA / 't8192.json'}: ")) for line in lines)
    assert f"{DATA / 'sweep_best.json'}: warning: matmul/tiled" in both.stderr


def test_a_sweep_s_warnings_say_which_configuration_they_mean():
    # "warning: matmul/tiled: median 13.8 us is close to launch overhead" three times,
    # with three numbers and no size or TILE to tell them apart
    result = invoke("report", DATA / "sweep_best.json")
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings, result.stderr
    tiled = [line for line in warnings if line.startswith("warning: matmul/tiled ")]
    assert len(tiled) == len(set(tiled)) >= 2
    assert all(re.match(r"warning: matmul/tiled TILE=\d+ \d+x\d+x\d+ float32: ", line)
               for line in tiled), tiled


def test_a_change_figure_of_long_names_lays_out_without_a_warning():
    # names wider than the axes made constrained layout give up, a matplotlib warning on
    # the stderr of `compare --html`
    pytest.importorskip("matplotlib")
    import warnings

    name = ("matmul/async_double_buffer BK=16 BM=128 BN=128 MIN_BLOCKS=2 STAGES=2 WM=32 "
            "WN=64 256x256x256 float32")
    bars = [plot.ChangeBar(name, 0.001 * i, 0.02, "bad", "failed") for i in range(7)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot.svg_text(plot.change_figure(bars))


def test_the_footer_says_throttled_where_the_warning_does():
    # the footer read "SM clock 1,980-1,980 MHz ... no throttling" under a warning that the
    # GPU throttled (0.036 s of power violation; its samples ran at 1,411-1,455 MHz)
    result = invoke("report", DATA / "m4096_f16.json")
    assert result.exit_code == 0, result.stderr
    footer = " ".join(result.stdout.split())
    assert "SM clock 1,411-1,980 MHz" in footer
    assert "THROTTLED: 0.036 s of power violation" in footer and "no throttling" not in footer
    assert "the GPU throttled while measuring (0.036 s of power violation)" in " ".join(
        result.stderr.split())


def test_the_footer_sums_the_rows_violations_and_keeps_nvml_s_clock_ceiling(tmp_path):
    # one unlabelled number per row ("0.011 s of power violation, 0.034 s of ..."), and
    # the samples' clocks (estimates, a little high) lifted the range past the card's max
    data = json.loads((DATA / "m4096_f16.json").read_text())
    for seconds, row in zip((0.011, 0.034), data["benchmarks"]):
        row["telemetry"]["power_violation_s"] = seconds
        row["sample_clocks_mhz"] = [1996.0] * len(row["sample_clocks_mhz"])
    result = invoke("report", write_json(tmp_path / "t.json", data))
    footer = " ".join(result.stdout.split())
    assert "THROTTLED: 0.045 s of power violation" in footer, footer
    assert "SM clock 1,980-1,980 MHz" in footer


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_output_no_file_can_be_made_in_is_refused_before_any_work():
    # os.access says /proc is writable to root; the report printed every table, then failed
    for path in ("/proc/x.html", "/proc/nodir/x.html"):  # its folder, or the one it is in
        result = invoke("report", DATA / "t8192.json", "--html", path)
        assert result.exit_code == 2 and result.stdout == "", result.stdout
        assert f"--html {path}: cannot write there" in result.stderr


def test_vs_naive_in_a_sweep_of_naive_says_against_which():
    # "vs naive" read 1.92x for naive TILE=32: against naive TILE=8, the first, unsaid
    result = invoke("report", DATA / "sweep_best.json")
    assert result.exit_code == 0, result.stderr
    assert "vs naive: against naive TILE=8, the first of the table" in result.stdout
    assert "vs naive TILE" not in result.stdout  # the column keeps its one name (CSV)
    single = invoke("report", DATA / "m1000.json")  # one naive row: nothing to say
    assert "vs naive" in single.stdout and "vs naive:" not in single.stdout


def test_a_long_legend_label_folds_inside_a_page_s_narrow_panel():
    # "async_double_buffer BM=128 BN=128 BK=16 WM=32 WN=64 STAGES=2 MIN_BLOCKS=2" was cut
    # at both edges of the HTML page's 4.6-inch panels: its colour and name lost
    pytest.importorskip("matplotlib")
    rows = load_results(DATA / "m1000.json").benchmarks
    long = {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "STAGES": 2, "MIN_BLOCKS": 2,
            "SPLIT_MAX": 8}
    rows = [dataclasses.replace(rows[0], variant="async_double_buffer", params=long),
            *rows[1:]]
    for _, figure in plot.panel_figures(rows):
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        legends, stack = [], [figure]
        while stack:
            part = stack.pop()
            legends += part.legends
            stack += list(part.subfigs)
        assert legends
        for legend in legends:
            for text in legend.get_texts():
                box = text.get_window_extent(renderer)
                assert figure.bbox.x0 - 2 <= box.x0 and box.x1 <= figure.bbox.x1 + 2, \
                    text.get_text()
        texts = [t.get_text() for legend in legends for t in legend.get_texts()]
        assert any("\n" in t and t.startswith("async_double_buffer") for t in texts), texts


def test_the_html_report_of_several_files_draws_and_names_each_file_s_rows(tmp_path):
    # two files' rows of one benchmark made one series (a vertical line between the runs)
    # and their warnings one list that never said whose
    pytest.importorskip("matplotlib")
    base, now = tmp_path / "base.json", tmp_path / "now.json"
    for path in (base, now):
        path.write_bytes((DATA / "sweep_best.json").read_bytes())
    page = tmp_path / "r.html"
    assert invoke("report", base, now, "--html", page).exit_code == 0
    text = html.unescape(page.read_text(encoding="utf-8"))
    for name in ("base.json", "now.json"):
        assert f"[{name}]" in text  # a legend entry per file
        assert f"<li class=\"warn\">{name}: warning: matmul/tiled" in text


def test_history_plot_takes_a_dollar_in_a_name_literally(tmp_path):
    # matplotlib read `naive$_$v2` as mathtext: an internal error (exit 4)
    pytest.importorskip("matplotlib")
    data = json.loads((DATA / "sweep_best.json").read_text(encoding="utf-8"))
    for row in data["benchmarks"]:
        row["variant"] = row["variant"] + "$_$v2" if row["kind"] == "variant" else row["variant"]
    odd = write_json(tmp_path / "odd.json", data)
    db = tmp_path / "h.db"
    from helpers import invoke as command  # every command: history too

    imported = command("history", "import", odd, "--db", db)
    assert imported.exit_code == 0, imported.output
    drawn = command("history", "plot", tmp_path / "h.png", "--db", db)
    assert drawn.exit_code == 0, drawn.output


def test_a_failed_or_suspect_row_is_no_yardstick():
    # "vs cuBLAS 0.38x" against a cuBLAS row whose time was not believed (SUSPECT), unmarked
    from cudabench.render.run_table import build_tables
    from cudabench.results.model import RunOutcome, Status

    rows = load_results(DATA / "m1000.json").benchmarks
    vendor = next(r for r in rows if r.variant == "cuBLAS")
    assert "vs cuBLAS" in build_tables(RunOutcome(rows))[0].columns
    for status in (Status.SUSPECT, Status.FAIL):
        odd = dataclasses.replace(vendor, suspect="faster than the GPU allows") \
            if status is Status.SUSPECT else dataclasses.replace(
                vendor, verification=dataclasses.replace(vendor.verification, passed=False))
        assert odd.status is status
        shown = [odd if r is vendor else r for r in rows]
        assert "vs cuBLAS" not in build_tables(RunOutcome(shown))[0].columns


def test_a_change_bar_s_long_name_is_cut_with_a_mark_not_at_the_figure_s_edge():
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    name = ("matmul/async_double_buffer BK=16 BM=128 BN=128 MIN_BLOCKS=2 STAGES=2 WM=32 "
            "WN=64 256x256x256 float32")
    figure = plot.change_figure([plot.ChangeBar(name, 0.01, 0.02, "", "same")])
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    (label,) = [t for t in figure.findobj(Text) if t.get_text().startswith("matmul/")]
    assert label.get_text().endswith("...")
    assert label.get_window_extent(renderer).x1 <= figure.bbox.x1 + 2


def test_a_csv_cell_a_spreadsheet_would_run_as_a_formula_is_text():
    # a kernel file named =HYPERLINK("http://evil","x").cu: its row's variant cell ran
    from cudabench.render.csv_out import _plain

    assert _plain('=HYPERLINK("http://evil","x")') == '\'=HYPERLINK("http://evil","x")'
    for start in ("+", "-", "@", "\t"):
        assert _plain(start + "1") == "'" + start + "1"
    assert _plain(-1.5) == -1.5 and _plain("tiled") == "tiled" and _plain(True) == "true"


def test_a_roofline_title_does_not_say_a_gpu_s_index_twice():
    # a GPU without a UUID beside one of its model was titled "(GPU 0, GPU 0)"
    pytest.importorskip("matplotlib")
    results = [r for name in ("v1-matmul.json", "v2-matmul.json")
               for r in load_results(DATA.parent / "h100" / name).benchmarks]
    titles = [axes.get_title() for axes in plot.roofline_figure(results).get_axes()]
    assert "NVIDIA H100 80GB HBM3\n(GPU 0)" in titles, titles
    assert "NVIDIA H100 80GB HBM3\n(GPU 0 at 0000:00:06.0, GPU-3d6bb633)" in titles, titles


def on_twins(uuids: list[str | None], indexes: list[int]):
    """d.json's rows, once on each of GPUs of its model (each its own size and bus)."""
    rows = load_results(DATA / "d.json").benchmarks
    twins = []
    for number, (uuid, index) in enumerate(zip(uuids, indexes)):
        device = dataclasses.replace(rows[0].device, uuid=uuid, index=index,
                                     pci_bus_id=f"0000:0{number}:00.0")
        twins += [dataclasses.replace(r, device=device, shape=(r.shape[0] * (number + 1),))
                  for r in rows]
    return twins


@pytest.mark.parametrize("uuids, indexes", [
    (["GPU-00000000-fake-0000-0000-000000000000", "GPU-00000000-fake-0000-0000-000000000001"],
     [0, 1]),
    (["MIG-GPU-8e1f3a2b-0000-0000-0000-000000000000/1/0",
      "MIG-GPU-8e1f3a2b-0000-0000-0000-000000000000/2/0"], [0, 0]),
    ([None, None], [0, 0])])
def test_two_gpus_whose_uuids_start_alike_are_two_series(uuids, indexes):
    # both GPUs' points were one line, labelled [GPU-00000000]: their tags matched
    pytest.importorskip("matplotlib")
    results = on_twins(uuids, indexes)
    lines = axes_by_title(plot.throughput_figure(results))["dot float32"].get_lines()
    labels = [line.get_label() for line in lines]
    assert len(lines) == len(results) and len(set(labels)) == len(labels), labels
    assert all(len(line.get_xdata()) == 1 for line in lines)
    titles = [axes.get_title() for axes in plot.roofline_figure(results).get_axes()]
    assert len(set(titles)) == 2, titles


def test_report_names_what_each_run_named_in_its_warnings(tmp_path):
    # a suite run's warnings came back naming flags: "a larger --size", "--max-time"
    document = json.loads(FILES[2].read_text(encoding="utf-8"))
    document["benchmarks"][0]["warnings"] = ["try a larger --size (raise --max-time)"]
    suite = write_json(tmp_path / "suite.json",
                       {**document, "command": ["cudabench", "run", "suite.toml"]})
    flags = write_json(tmp_path / "flags.json",
                       {**document, "command": ["cudabench", "dot", "--size", "256"]})
    for files in ([suite], [flags], [suite, flags]):
        result = invoke("report", *files, "--html", tmp_path / "r.html")
        assert result.exit_code == 0, result.stderr
        page = html.unescape((tmp_path / "r.html").read_text(encoding="utf-8"))
        for path, named in ((suite, "a larger size (raise timing.max_time)"),
                            (flags, "a larger --size (raise --max-time)")):
            shown = path in files
            assert (f"try {named}" in result.stderr) == shown, result.stderr
            assert (f"try {named}" in page) == shown


def test_report_of_an_ab_file_names_ab_s_samples_flag(tmp_path):
    # it advised "raise --max-samples", a flag ab does not have (its --samples is the cap)
    document = json.loads(FILES[2].read_text(encoding="utf-8"))
    document["benchmarks"][0]["warnings"] = [
        "noisy: at the --max-samples cap of 9 samples; raise --max-samples"]
    path = write_json(tmp_path / "ab.json",
                      {**document, "command": ["cudabench", "ab", "A", "B", "--samples", "9"]})
    result = invoke("report", path, "--html", tmp_path / "r.html")
    assert result.exit_code == 0, result.stderr
    page = html.unescape((tmp_path / "r.html").read_text(encoding="utf-8"))
    for shown in (result.stderr, page):
        assert "at the --samples cap of 9 samples; raise --samples" in shown
        assert "--max-samples" not in shown


def test_plot_roofline_of_failed_rows_says_they_failed(tmp_path, use_fake):
    # every dot variant FAILed: the error blamed the op ("a copy or a transpose does no
    # arithmetic"), though dot counts FLOPs
    pytest.importorskip("matplotlib")
    from helpers import invoke as run_cli

    from cudabench.engines.fake_engine import Fault

    variants = ("atomic", "shared_tree")
    use_fake(faults={name: Fault.WRONG_ELEMENT for name in variants})
    path = tmp_path / "failed.json"
    run = run_cli("dot", "--size", "4096", *(f"--variant={name}" for name in variants),
                  "--no-vendor", "--json", path)
    assert run.exit_code == 3 and path.exists(), run.stderr
    line = assert_one_line_error(
        invoke("plot", path, "-o", tmp_path / "r.png", "--kind", "roofline"),
        "--kind roofline: none of the benchmarks that count FLOPs was timed and verified "
        "(2 FAIL rows")
    assert "does no arithmetic" not in line


def test_the_cpu_reference_is_said_where_the_first_row_has_none(tmp_path):
    # a first row that timed out has no reference time: the caption read "-" for all
    document = json.loads((DATA / "d.json").read_text(encoding="utf-8"))
    first = document["benchmarks"][0]
    reference_s = first["cpu_reference_s"]
    assert reference_s and all(b["cpu_reference_s"] == reference_s
                               for b in document["benchmarks"][1:2])
    first["cpu_reference_s"] = None
    result = invoke("report", write_json(tmp_path / "d.json", document))
    assert result.exit_code == 0, result.stderr
    assert "CPU reference (NumPy, float64): -" not in result.stdout
    assert "CPU reference (NumPy, float64): " in result.stdout


def test_a_title_without_html_is_refused_not_ignored(tmp_path):
    # the title names the HTML page alone: `report f.json --title T` printed, untitled
    assert_one_line_error(invoke("report", FILES[0], "--title", "T"),
                          "--title names the HTML page only; without --html it does nothing")
    page = tmp_path / "r.html"
    assert invoke("report", FILES[0], "--title", "T", "--html", page).exit_code == 0
    assert "<title>T</title>" in page.read_text(encoding="utf-8")


KERNELS = Path(__file__).parents[1] / "kernels"
ATOMIC_DEFAULT = {"BLOCK": 256, "BLOCKS_PER_SM": 8}  # kernels/dot/atomic.cu's


def search_file(path: Path, count: int) -> Path:
    """Write a search's file: `count` configurations of dot's atomic variant at one size,
    each slower than the one before, the default the slowest; beside cuBLAS and the copy."""
    document = json.loads((DATA / "d.json").read_text(encoding="utf-8"))
    row = document["benchmarks"][0]
    assert row["variant"] == "atomic"
    configs = [params for params in ({"BLOCK": block, "BLOCKS_PER_SM": blocks}
                                     for blocks in range(1, 1000)
                                     for block in (32, 64, 128, 256, 512, 1024))
               if params != ATOMIC_DEFAULT][:count - 1] + [ATOMIC_DEFAULT]
    rows = [{**row, "params": params, "source": str(KERNELS / "dot" / "atomic.cu"),
             "samples_s": [s * (1 + i / 100) for s in row["samples_s"]],
             "stats": {**row["stats"], "median_s": row["stats"]["median_s"] * (1 + i / 100)}}
            for i, params in enumerate(configs)]
    others = [r for r in document["benchmarks"] if r["kind"] != "variant"]
    return write_json(path, {**document, "benchmarks": rows + others})


def series_lines(axes) -> list:
    return [line for line in axes.get_lines() if not line.get_label().startswith("_")]


def test_each_configuration_of_a_sweep_has_a_look_of_its_own(tmp_path):
    # past 10 parameter sets the markers came round again: BLOCKS_PER_SM=11 was drawn as
    # BLOCKS_PER_SM=1 (one colour, one filled "o"), their legend entries alike
    pytest.importorskip("matplotlib")
    results = load_results(search_file(tmp_path / "sweep.json", 20)).benchmarks
    figure = plot.both_figure(results)
    for axes in figure.get_axes():
        lines = series_lines(axes)
        # all drawn, and cuBLAS, and the copy but in the roofline (it does no arithmetic)
        assert len(lines) == 20 + 1 + (axes.get_title() == "dot float32"), axes.get_title()
        # one size: each series is a lone point, told apart by colour and marker alone
        looks = [(line.get_color(), line.get_marker(), line.get_fillstyle()) for line in lines]
        assert len(set(looks)) == len(looks), axes.get_title()
    assert not plot.left_out(results)


def test_a_search_file_draws_its_fastest_configurations_and_says_what_it_left_out(tmp_path):
    # 384 configurations made 384 series of 10 looks, and a 900x24,300 px PNG, nearly all
    # legend; 3,400 took two minutes
    image = pytest.importorskip("matplotlib.image")
    path, out = search_file(tmp_path / "search.json", 384), tmp_path / "search.png"
    result = invoke("plot", path, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert ("note: atomic (dot): the 5 fastest of its 384 configurations drawn and its "
            "default, 378 left out (`cudabench report` lists every one)") in " ".join(
        result.stderr.split())
    assert image.imread(out).shape[0] < 2000  # two panels and their short legends
    figure = plot.both_figure(load_results(path).benchmarks)
    drawn = [f"atomic BLOCK={block} BLOCKS_PER_SM=1" for block in (32, 64, 128, 256)] + [
        "atomic BLOCK=256 BLOCKS_PER_SM=8 (default)", "atomic BLOCK=512 BLOCKS_PER_SM=1",
        "cuBLAS", "memcpy_dtod"]  # in the order of their parameters
    throughput, roofline = figure.get_axes()
    assert [line.get_label() for line in series_lines(throughput)] == drawn
    assert [line.get_label() for line in series_lines(roofline)] == drawn[:-1]
    titles = [legend.get_title().get_text() for part in figure.subfigs
              for panel in part.subfigs for legend in panel.legends]
    assert len(titles) == 2 and all(" ".join(title.split()) == (
        "atomic: the 5 fastest of 384 configurations and the default; `cudabench report` "
        "lists every one") for title in titles)


def test_the_styles_of_a_large_search_take_linear_time(tmp_path):
    # each row sorted its variant's parameter sets again: 3,400 rows took 12 s
    results = load_results(search_file(tmp_path / "search.json", 3400)).benchmarks
    plot.plotted(results)  # the medians, computed once, are not what is timed
    started = time.perf_counter()
    styles = plot.Styles.of(results)
    assert time.perf_counter() - started < 2.0
    assert len(styles.slots) == 3400 + 2


def test_a_figure_of_many_variants_of_many_configurations_stays_readable(tmp_path):
    # three variants of 18 configurations each: 54 series in one panel, 27 legend rows
    pytest.importorskip("matplotlib")
    rows = [r for r in load_results(search_file(tmp_path / "s.json", 18)).benchmarks
            if r.kind.value == "variant"]
    results = [dataclasses.replace(r, variant=name)
               for name in ("atomic", "shared_tree", "warp") for r in rows]
    said = plot.left_out(results)
    assert [line.split(":")[0] for line in said] == ["atomic (dot)", "shared_tree (dot)"]
    lines = series_lines(plot.throughput_figure(results).get_axes()[0])
    assert len(lines) == 6 + 6 + 18  # the largest cut until the figure holds at most 40
    looks = [(line.get_color(), line.get_marker()) for line in lines]
    assert len(set(looks)) == len(looks)


def test_several_files_filtered_to_one_keep_naming_their_file(tmp_path):
    # --variant atomic left d.json alone of four: its CSV had no file column, and the
    # tables and markdown no heading naming it
    md, table = tmp_path / "out.md", tmp_path / "out.csv"
    result = invoke("report", *FILES, "--variant", "atomic", "--markdown", md, "--csv", table)
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(table.read_text(encoding="utf-8"))))
    assert rows and {r["file"] for r in rows} == {str(DATA / "d.json")}
    assert "d.json" in md.read_text(encoding="utf-8").split("\n", 1)[0]
    assert f"{DATA / 'd.json'}:" in result.stdout
