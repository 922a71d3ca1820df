"""`cudabench report` and `cudabench plot` on saved H100 results, with no GPU."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
import sys
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
                              "one of the results files")
        assert source.read_bytes() == before
    # A results file may have any name, even one that looks like a figure's.
    odd = write_text(tmp_path / "results.svg", source.read_text(encoding="utf-8"))
    assert_one_line_error(invoke("plot", odd, "-o", odd), "-o", "one of the results files")
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


def test_report_reads_a_schema_1_file(no_gpu_libraries):
    result = invoke("report", Path(__file__).parent / "data" / "h100" / "v1-matmul.json")
    assert result.exit_code == 0, result.stderr
    assert "matmul 1000x1000x1000" in result.stdout and "tiled_conflict" in result.stdout


@pytest.mark.parametrize("kind", ["throughput", "roofline", "both"])
def test_plot_writes_a_png(tmp_path, kind):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"{kind}.png"
    result = invoke("plot", *FILES, "-o", out, "--kind", kind)
    assert result.exit_code == 0, result.stderr
    data = out.read_bytes()
    assert data.startswith(PNG)
    assert len(data) > 20_000  # axes, lines and labels, not an empty canvas


def test_plot_writes_an_svg_and_a_pdf(tmp_path):
    pytest.importorskip("matplotlib")
    for name, start in (("out.svg", b"<?xml"), ("out.PDF", b"%PDF")):
        result = invoke("plot", *FILES, "-o", tmp_path / name)
        assert result.exit_code == 0, result.stderr
        assert (tmp_path / name).read_bytes().startswith(start)
    svg = (tmp_path / "out.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and "tiled_conflict" in svg  # matplotlib keeps text as comments


def test_plot_refuses_an_unknown_suffix_before_reading(tmp_path):
    out = tmp_path / "out.jpg"
    assert_one_line_error(invoke("plot", tmp_path / "missing.json", "-o", out), "-o",
                          "out.jpg", ".png")
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


def test_plot_without_matplotlib_gives_the_install_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "out.png"
    assert_one_line_error(invoke("plot", *FILES, "-o", out),
                          "plotting needs matplotlib: pip install 'cudabench[plot]'")
    assert not out.exists()


def test_plot_text_is_literal():
    pytest.importorskip("matplotlib")
    # '$\\b$' is invalid mathtext: drawing it unescaped raises; escaped it is plain text.
    results = load_results(FILES[0]).benchmarks
    odd = [dataclasses.replace(r, variant=f"_x$\\b${r.variant}") for r in results]
    svg = plot.svg_text(plot.both_figure(odd))
    assert svg.startswith("<svg") and "xmlns" not in svg and "http" not in svg
    assert plot.text("a$b") == "a\\$b" and plot.text("_a") == " _a"
