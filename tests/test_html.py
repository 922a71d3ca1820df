"""The HTML reports: self-contained, escaped, statuses and verdicts coloured, and readable in
a real browser at a phone's size (where Chromium is installed)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.analysis.compare import Comparison, ComparisonRow, Verdict
from cudabench.cli.boundary import BoundaryGroup
from cudabench.cli.report import report_command
from cudabench.render import html as html_render
from cudabench.results import load_results
from cudabench.results.model import Kind

DATA = Path(__file__).parent / "data" / "h100-insight"
FILES = [DATA / name for name in ("m1000.json", "mc.json", "d.json", "m128.json")]
EVIL = "<script>alert('x')</script>"
# A reference to anything outside the file: an attribute that loads something (the page
# needs none), a link out of the page, a CSS url() or @import, an element that loads.
# url(#id) and href="#id" point inside the page (the SVG's clip paths and glyphs).
EXTERNAL = re.compile(r"""\b(src|srcset|action|poster|data)\s*="""
                      r"""|\bhref\s*=(?!\s*["']?#)"""
                      r"""|url\s*\((?!\s*["']?#)|@import"""
                      r"""|<(link|script|iframe|object|embed)\b""", re.IGNORECASE)


class Cells(HTMLParser):
    """Collect each <td> and <th>: its text and class; and every tag name seen."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self.tags: set[str] = set()
        self._open: list[str] | None = None
        self._class = ""

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag in ("td", "th"):
            self._open, self._class = [], dict(attrs).get("class") or ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._open is not None:
            self.cells.append(("".join(self._open), self._class))
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open.append(data)


def parse(page: str) -> Cells:
    parser = Cells()
    parser.feed(page)
    return parser


def classes_of(page: str, text: str) -> set[str]:
    return {cls for cell, cls in parse(page).cells if cell == text}


@pytest.fixture(scope="module")
def files():
    return [load_results(path) for path in FILES]


@pytest.fixture(scope="module")
def page(files):
    return html_render.report_html(files, "H100 report")


def test_the_page_fetches_nothing(page):
    assert page.startswith("<!DOCTYPE html>")
    assert EXTERNAL.search(page) is None, EXTERNAL.search(page)
    # Nor any URL at all: the inline SVG's namespace declarations are dropped too.
    assert "http://" not in page and "https://" not in page


def test_the_pattern_would_catch_a_network_reference():
    # The check above must be able to fail: each of these fetches something.
    for bad in ('<img src="https://cdn.example/x.png">', "<a href='//cdn.example/x'>",
                '<link rel="stylesheet" href="x.css">', "<script src=x.js></script>",
                '<img src="figure.png">', '<a href="other.html">',
                "body { background: url(x.png) }", '@import "x.css";'):
        assert EXTERNAL.search(bad), bad
    for fine in ('clip-path="url(#p1)"', "clip-path=url('#p1')", '<use xlink:href="#glyph"/>'):
        assert EXTERNAL.search(fine) is None, fine


def test_the_page_is_made_for_a_phone(page):
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert page.count('<div class="scroll"><table>') == page.count("<table>") > 0
    sizes = re.findall(r"font-size:\s*([^;}]+)", html_render.CSS)
    assert sizes and all(size.strip().endswith(("rem", "%")) for size in sizes), sizes


def test_the_page_shows_devices_tables_captions_and_figures(page, files):
    cells = parse(page).cells
    headers = {text for text, _ in cells}
    for column in ("vs cuBLAS", "% of peak", "bound", "% of memcpy_dtod", "energy/launch",
                   "bank confl. ld", "ncu time"):
        assert column in headers, column
    for text in ("matmul 1000x1000x1000 (MxKxN) float32", "NVIDIA H100 80GB HBM3",
                 "1980 MHz", "2619 MHz", "700 W", "PCIe peak", "persistence mode",
                 "roofs: DRAM 3,352 GB/s", "cublasGemmEx", "NVML while sampling"):
        assert text in page, text
    benchmarks = sum(len(f.benchmarks) for f in files)
    assert len([c for c in cells if c[0] in ("PASS", "REF")]) == benchmarks
    if html_render.plot.available():
        assert page.count('<svg class="figure"') == 2
    else:
        assert "plotting needs matplotlib" in page


def test_status_cells_are_coloured(files):
    rows = list(files[0].benchmarks)
    naive, tiled, conflict, cublas = rows
    v = naive.verification
    assert v is not None
    odd = [
        dataclasses.replace(naive, variant="failing", verification=dataclasses.replace(
            v, passed=False)),
        dataclasses.replace(tiled, variant="suspect", suspect="faster than the roof"),
        dataclasses.replace(conflict, variant="skipped", skipped="not for this type",
                            samples_s=()),
        dataclasses.replace(naive, variant="late", timed_out=True, samples_s=()),
        dataclasses.replace(naive, variant="broken", verification=None, error="no compile",
                            samples_s=()),
        cublas,
    ]
    page = html_render.report_html([dataclasses.replace(files[0], benchmarks=tuple(odd))],
                                   "statuses")
    expected = {"PASS": "good", "FAIL": "bad", "ERROR": "bad", "TIMEOUT": "bad",
                "SUSPECT": "warn", "SKIP": "muted"}
    for status, css in expected.items():
        assert classes_of(page, status) == {css}, status
    assert 'td.bad { color: var(--bad)' in page  # the classes have colours
    assert "error: matmul/broken: no compile" in page  # the diagnostics section


def test_every_user_string_is_escaped(files):
    first = files[0]
    evil = [dataclasses.replace(r, variant=EVIL + r.variant) for r in first.benchmarks]
    evil_file = dataclasses.replace(first, path=f"/tmp/{EVIL}.json", benchmarks=tuple(evil),
                                    metadata={**first.metadata, "host": EVIL})
    page = html_render.report_html([evil_file], f"title {EVIL}")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;naive" in page
    assert f"<title>title {html_render.esc(EVIL)}</title>" in page
    assert "<script" not in html_render.comparison_html(comparison(EVIL)).lower()


def comparison(name: str = "tiled") -> Comparison:
    def row(variant: str, verdict: Verdict, kind: Kind = Kind.VARIANT) -> ComparisonRow:
        return ComparisonRow("matmul", variant, {"TILE": 16}, (64, 64, 64), "float32", False,
                             1e-3, 1.2e-3, 0.2, 1e-9, verdict, "why", kind)

    rows = (row(name, Verdict.SLOWER), row("fixed_one", Verdict.FIXED),
            row("noisy_one", Verdict.NOISY), row("same_one", Verdict.SAME),
            row("memcpy_dtod", Verdict.SLOWER, Kind.REFERENCE))
    return Comparison(rows, (), (), 0.05, 0.001, "base.json", "new.json", "H100", "H100")


def test_comparison_verdicts_are_coloured():
    page = html_render.comparison_html(comparison())
    cells = parse(page).cells
    verdicts = [(text, cls) for text, cls in cells if text in {v.value for v in Verdict}]
    # slower (gated), fixed, noisy, same, slower on a reference row (not gated: a warning)
    assert verdicts == [("slower", "bad"), ("fixed", "good"), ("noisy", "warn"),
                        ("same", ""), ("slower", "warn")]
    assert '<span class="bad">1 regression</span>' in page
    assert '<tr class="regressed">' in page and page.count('class="regressed"') == 1
    assert EXTERNAL.search(page) is None


def test_without_matplotlib_the_page_says_so(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page = html_render.report_html(files, "no plots")
    assert "<svg" not in page
    assert "plotting needs matplotlib: pip install &#x27;cudabench[plot]&#x27;" in page
    assert "vs cuBLAS" in page


def test_report_writes_the_page(tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(BoundaryGroup("cudabench", commands=[report_command]),
                                ["report", *map(str, FILES), "--html", str(out),
                                 "--title", "H100 <insight>"])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "<title>H100 &lt;insight&gt;</title>" in page and "tiled_conflict" in page


def browser() -> str | None:
    return (shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))


@pytest.mark.skipif(browser() is None, reason="no headless browser: chromium, "
                    "chromium-browser or google-chrome is not on PATH")
def test_a_headless_browser_renders_the_page_at_phone_size(tmp_path, page):
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    base = [str(browser()), "--headless", "--no-sandbox", "--disable-gpu",
            "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", path.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    cells = parse(dom.stdout).cells
    assert ("vs cuBLAS", "num") in cells  # a header cell, as the browser parsed it
    assert ("PASS", "good") in cells and ("tiled_conflict", "") in cells
    assert "matmul 1000x1000x1000 (MxKxN) float32" in dom.stdout
    assert "svg" in parse(dom.stdout).tags or not html_render.plot.available()

    shot = tmp_path / "phone.png"
    run = subprocess.run([*base, f"--screenshot={shot}", "--window-size=412,915",
                          path.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = (int.from_bytes(data[i:i + 4], "big") for i in (16, 20))
    assert (width, height) == (412, 915)
    # A blank 412x915 page compresses to about 3 KB; text and tables take far more.
    assert len(data) > 15_000, len(data)
