"""The HTML reports: self-contained, escaped, statuses and verdicts coloured, and readable in
a real browser at a phone's size (where Chromium is installed)."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import html
import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.analysis.compare import compare
from cudabench.analysis.verdicts import Comparison, ComparisonRow, Verdict
from cudabench.cli.boundary import BoundaryGroup
from cudabench.cli.report import report_command
from cudabench.render import html as html_render
from cudabench.render import html_page
from cudabench.results import load_results
from cudabench.results.model import Kind

DATA = Path(__file__).parent / "data" / "h100-insight"
COMPARE = Path(__file__).parent / "data" / "compare"
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
    sizes = re.findall(r"font-size:\s*([^;}]+)", html_page.CSS)
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
        # A figure per panel, each named for a screen reader: matmul and dot (both float32),
        # and the roofline of the one GPU these files ran on.
        labels = re.findall(r'<svg class="figure" role="img" aria-label="([^"]*)"', page)
        assert labels == ["throughput of matmul float32 against problem size",
                          "throughput of dot float32 against problem size",
                          "roofline of NVIDIA H100 80GB HBM3 (GPU 0 at 0000:00:06.0)"]
    else:
        assert "plotting needs matplotlib" in page
    # What a reader looks for first: figures, then tables; the devices after them.
    assert (page.index("<h2>Figures</h2>") < page.index("<h2>Tables</h2>")
            < page.index('<h2 id="devices">Devices</h2>') < page.index("Results files"))


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
        dataclasses.replace(naive, variant="faulted", verification=dataclasses.replace(
            v, passed=False), error="the kernel faulted", samples_s=()),
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
    assert "FAIL: matmul/faulted: the kernel faulted" in page  # FAIL, as its check cell


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


def test_the_change_figure_names_each_bar_s_gpu(monkeypatch):
    # a replicated run's rows differ only by their GPU: both bars read the same
    drawn = []
    monkeypatch.setattr(html_render.plot, "change_figure",
                        lambda bars: drawn.extend(bars))
    monkeypatch.setattr(html_render, "svg_figure", lambda figure, alt: "")
    base = comparison().rows[0]
    rows = tuple(dataclasses.replace(base, device=f"GPU {i}") for i in (0, 1))
    html_render.comparison_html(dataclasses.replace(comparison(), rows=rows))
    assert [bar.label for bar in drawn] == [
        f"matmul/tiled on GPU {i} TILE=16 64³ float32" for i in (0, 1)]


def test_the_change_figure_draws_the_regressions_and_largest_changes_of_many(monkeypatch):
    # half an inch a row, without a bound: 5,000 rows made a page of 24.7 MB in 40 s
    drawn = []
    monkeypatch.setattr(html_render.plot, "change_figure", lambda bars: drawn.extend(bars))
    monkeypatch.setattr(html_render, "svg_figure", lambda figure, alt: "")
    base = comparison().rows[3]  # a kernel, `same`
    rows = tuple(dataclasses.replace(base, variant=f"v{i:03d}", change=(i % 50) / 1000,
                                     verdict=Verdict.SAME) for i in range(300))
    slow = {7, 150, 299}  # small slowdowns, but regressions
    rows = tuple(dataclasses.replace(row, change=0.03, verdict=Verdict.SLOWER)
                 if i in slow else row for i, row in enumerate(rows))
    page = html_render.comparison_html(dataclasses.replace(comparison(), rows=rows))
    names = [bar.label.split()[0] for bar in drawn]
    assert len(drawn) == html_render.plot.MAX_BARS
    assert names == sorted(names)  # in the table's order
    kept = {int(name.split("/v")[1]) for name in names}
    assert slow <= kept
    # the others: the largest changes (49/1000 and down, six rows each)
    assert min((i % 50) for i in kept - slow) >= 43
    assert ("The figure draws 40 of the 300 changes: the regressions first, then the "
            "largest; the table above lists every one.") in page
    assert page.count("<tr") > 300  # the table keeps every row


def test_without_matplotlib_the_page_says_so(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page = html_render.report_html(files, "no plots")
    assert "<svg" not in page
    assert "plotting needs matplotlib: pip install &#x27;matplotlib&gt;=3.7&#x27;" in page
    assert "vs cuBLAS" in page


def test_report_writes_the_page(tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(BoundaryGroup("cudabench", commands=[report_command]),
                                ["report", *map(str, FILES), "--html", str(out),
                                 "--title", "H100 <insight>"])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "<title>H100 &lt;insight&gt;</title>" in page and "tiled_conflict" in page



def test_several_devices_share_one_table_with_differences_marked():
    files = [load_results(DATA / name) for name in ("m4096_full.json", "m1000.json")]
    page = html_render.report_html(files, "two GPUs")
    devices = page[page.index('<h2 id="devices">'):]
    cells = parse(devices).cells
    # One column a GPU, headed by its index and UUID (the same model, bus id and index).
    assert ("GPU 0, GPU-c39d14b7", "") in cells and ("GPU 0, GPU-533cbc01", "") in cells
    assert ("GPU-c39d14b7-d757-bb7d-c380-fcc394d30aa0", "differs") in cells
    assert ("132", "") in cells and ("132", "differs") not in cells
    assert devices.count("DRAM 3,352 GB/s") == 1  # the roofs once, where they agree


def test_a_report_without_flops_says_why_there_is_no_roofline():
    page = html_render.report_html([load_results(DATA / "t8192.json")], "transpose")
    if not html_render.plot.available():
        pytest.skip("matplotlib is not installed")
    assert "No roofline: no timed, verified benchmark counts FLOPs" in page
    assert page.count('<svg class="figure"') == 1  # the throughput panel only


def test_the_comparison_page_puts_the_verdict_first_and_shows_what_the_terminal_shows():
    c = dataclasses.replace(comparison(), setting_changes=("power limit: 700 W -> 500 W",))
    page = html_render.comparison_html(c, files=[])
    headers = [text for text, _ in parse(page).cells][:len(html_render.PAGE_COLUMNS)]
    assert headers[:3] == ["benchmark", "verdict", "change"]  # seen without scrolling
    assert sorted(headers) == sorted(html_render.COLUMNS)  # nothing lost, nothing added
    assert ("why", "wrap") in parse(page).cells  # prose wraps instead of widening the table
    assert "The cards differ" in page and "power limit: 700 W -&gt; 500 W" in page


def test_the_comparison_page_shows_both_devices_and_a_change_figure():
    before, after = (load_results(COMPARE / name) for name in ("baseline.json", "slower20.json"))
    page = html_render.comparison_html(compare(before, after, 0.02, 0.001))
    assert '<h2 id="devices">Devices</h2>' in page and "NVIDIA H200" in page
    assert "3201 MHz" in page  # the memory clock, read from the files
    if html_render.plot.available():
        assert 'aria-label="change of each benchmark&#x27;s median' in page
    assert EXTERNAL.search(page) is None and "http" not in page


# ---------------------------------------------------------------- in a real browser


def browser() -> str | None:
    return (shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))


needs_browser = pytest.mark.skipif(
    browser() is None, reason="no headless browser: chromium, chromium-browser or "
    "google-chrome is not on PATH (.ci/run installs Debian's chromium)")

PHONE = (390, 844)  # CSS pixels
# Headless Chromium makes no window narrower than 500 px: a phone's width is laid out in
# an iframe of that width inside a host page (media queries answer the iframe's width).
MEASURE = """<script>
(function () {
  var wide = [];
  document.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > innerWidth + 1 && !e.closest(".scroll")) {
      wide.push(e.tagName.toLowerCase() + "." + (e.getAttribute("class") || ""));
    }
  });
  parent.postMessage(JSON.stringify({viewport: innerWidth,
    page: document.documentElement.scrollWidth, wide: wide.slice(0, 5),
    scrolling: document.querySelectorAll(".scroll").length}), "*");
})();
</script>"""


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(browser()), "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--force-device-scale-factor=1",
               f"--user-data-dir={tmp_path / 'profile'}", *args]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def phone_host(tmp_path: Path, page_path: Path, height: int) -> Path:
    host = tmp_path / f"host-{page_path.stem}.html"
    host.write_text(
        '<!DOCTYPE html><html><head><title>pending</title></head><body style="margin:0">'
        f'<iframe src="{page_path.name}" style="width:{PHONE[0]}px;height:{height}px;'
        'border:0;display:block"></iframe><script>addEventListener("message", function (e)'
        ' { document.title = e.data; });</script></body></html>', encoding="utf-8")
    return host


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB or RGBA PNG (Chromium's screenshots) with zlib alone; return
    width, height and each pixel's bytes, alpha dropped."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), data[:8]
    at, chunks, header = 8, [], b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    n = 4 if colour == 6 else 3
    raw = zlib.decompress(b"".join(chunks))
    stride = width * n
    previous = bytes(stride)
    pixels: list[bytes] = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:  # sub: a running sum per channel
            for c in range(n):
                line[c::n] = bytes(itertools.accumulate(line[c::n],
                                                        lambda a, b: (a + b) & 0xFF))
        elif kind == 2:  # up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind in (3, 4):  # average, Paeth: byte by byte
            for x in range(stride):
                left = line[x - n] if x >= n else 0
                up, corner = previous[x], previous[x - n] if x >= n else 0
                if kind == 3:
                    line[x] = (line[x] + (left + up) // 2) & 0xFF
                    continue
                guess = left + up - corner
                far_left, far_up = abs(guess - left), abs(guess - up)
                far_corner = abs(guess - corner)
                best = (left if far_left <= far_up and far_left <= far_corner
                        else up if far_up <= far_corner else corner)
                line[x] = (line[x] + best) & 0xFF
        pixels += [bytes(line[i:i + 3]) for i in range(0, stride, n)]
        previous = bytes(line)
    return width, height, pixels


def test_the_png_decoder_reads_what_matplotlib_writes(tmp_path):
    # The decoder checks the screenshots below: it must itself be right. Every filter
    # type occurs in a real image; matplotlib reads the same file independently.
    image = pytest.importorskip("matplotlib.image")
    numpy = pytest.importorskip("numpy")
    rng = numpy.random.default_rng(1)
    picture = numpy.zeros((40, 50, 3), dtype=numpy.uint8)
    picture[:, :25] = rng.integers(0, 256, (40, 25, 3))
    picture[10:30, 25:] = [200, 40, 90]
    path = tmp_path / "check.png"
    image.imsave(path, picture)
    width, height, pixels = png_pixels(path.read_bytes())
    assert (width, height) == (50, 40)
    assert pixels == [bytes(p) for p in picture.reshape(-1, 3)]


def near(pixels: list[bytes], colour: str, slack: int = 4) -> int:
    """Count the pixels within `slack` of a #rrggbb colour."""
    want = bytes.fromhex(colour.removeprefix("#"))
    return sum(count for p, count in collections.Counter(pixels).items()
               if all(abs(a - b) <= slack for a, b in zip(p, want)))


def assert_a_page_people_can_see(shot: Path, size: tuple[int, int]) -> list[bytes]:
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == size
    counts = collections.Counter(pixels)
    assert len(counts) > 40, len(counts)  # text, tables, lines: not one flat colour
    background, plain = counts.most_common(1)[0]
    ink = 1 - plain / len(pixels)
    assert ink > 0.05, ink  # something is drawn on a good part of the page
    return pixels


@needs_browser
def test_a_headless_browser_shows_the_report_on_a_screen_and_a_phone(tmp_path, page):
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    cells = parse(dom).cells
    assert ("vs cuBLAS", "num") in cells  # a header cell, as the browser parsed it
    assert ("PASS", "good") in cells and ("tiled_conflict", "") in cells
    assert "matmul 1000x1000x1000 (MxKxN) float32" in dom
    assert "svg" in parse(dom).tags or not html_render.plot.available()

    shot = tmp_path / "screen.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,900", path.as_uri())
    pixels = assert_a_page_people_can_see(shot, (1280, 900))
    if html_render.plot.available():  # the figures sit at the top: their series' colours
        assert near(pixels, plot_colour(0)) > 30 and near(pixels, plot_colour(1)) > 30

    # At a phone's width: the top of the page, and the status cells' colour further down.
    host = phone_host(tmp_path, path, 5000)
    shot = tmp_path / "phone.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=500,5000", host.as_uri())
    pixels = assert_a_page_people_can_see(shot, (500, 5000))
    assert near(pixels, "#dafbe1") > 200  # PASS cells: a green background


def plot_colour(index: int) -> str:
    return html_render.plot.COLOURS[index]


@needs_browser
@pytest.mark.parametrize("which", ["report", "comparison"])
def test_nothing_but_the_scrolling_tables_is_wider_than_a_phone(tmp_path, page, which):
    before, after = (load_results(COMPARE / name) for name in ("baseline.json", "slower20.json"))
    text = page if which == "report" else html_render.comparison_html(
        compare(before, after, 0.02, 0.001))
    path = tmp_path / f"{which}.html"
    path.write_text(text.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    host = phone_host(tmp_path, path, PHONE[1])
    dom = chromium(tmp_path, "--virtual-time-budget=5000", f"--window-size=500,{PHONE[1]}",
                   "--dump-dom", host.as_uri()).stdout
    found = re.search(r"<title>(.*?)</title>", dom, re.DOTALL)
    assert found and found.group(1) != "pending", dom[:500]
    seen = json.loads(html.unescape(found.group(1)))
    assert seen["viewport"] == PHONE[0], seen
    # The page never scrolls sideways: only a table's own wrapper does.
    assert seen["page"] <= PHONE[0], seen
    assert seen["wide"] == [], seen
    assert seen["scrolling"] >= 1


@needs_browser
def test_a_headless_browser_shows_the_comparison_verdicts_coloured(tmp_path):
    before, after = (load_results(COMPARE / name) for name in ("baseline.json", "slower20.json"))
    path = tmp_path / "compare.html"
    path.write_text(html_render.comparison_html(compare(before, after, 0.02, 0.001)),
                    encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    assert ("slower", "bad") in parse(dom).cells and ("same", "") in parse(dom).cells
    assert "1 regression" in dom
    host = phone_host(tmp_path, path, 1200)
    shot = tmp_path / "compare.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=500,1200", host.as_uri())
    pixels = assert_a_page_people_can_see(shot, (500, 1200))
    # Within a phone's width the slower verdict shows: its cell's red background, and
    # the red of the summary's "1 regression".
    phone = [p for i, p in enumerate(pixels) if i % 500 < PHONE[0]]
    assert near(phone, "#ffebe9") > 200 and near(phone, "#b42318", 12) > 50


def test_a_search_s_figures_draw_its_fastest_configurations_and_say_so(tmp_path):
    # a search's 384 configurations made two SVG panels 80 inches tall, nearly all legend
    pytest.importorskip("matplotlib")
    from test_report import search_file

    files = [load_results(search_file(tmp_path / "search.json", 384))]
    page = html_render.report_html(files, "search")
    heights = [float(height) for height in re.findall(
        r'<svg class="figure"[^>]* viewBox="[\d.]+ [\d.]+ [\d.]+ ([\d.]+)"', page)]
    assert len(heights) == 2 and max(heights) < 8 * 72  # points: under 8 inches each
    assert ("atomic (dot): the 5 fastest of its 384 configurations drawn and its default, "
            "378 left out (the tables below list every one).") in html.unescape(page)
    assert html.unescape(page).count("BLOCKS_PER_SM=64") >= 6  # the tables list them all
