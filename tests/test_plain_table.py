"""The direct drawing of a table (render/plain_table.py) prints Rich's bytes, or declines."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cudabench.render import terminal
from cudabench.render.plain_table import table_segments
from cudabench.render.terminal import fitted_table, print_table


def _console(width: int = 200, **options: object) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return terminal._Console(file=out, width=width, highlight=False, **options), out


# Consoles the tables are printed on: a file or a pipe, and terminals of each colour system
_OUTPUTS: list[dict[str, object]] = [
    {}, *({"force_terminal": True, "color_system": system}
          for system in ("standard", "256", "truecolor")),
    {"force_terminal": True, "color_system": "truecolor", "no_color": True}]


def _by_rich(table: Table, width: int | None, **options: object) -> str:
    console, out = _console(**options)
    saved = terminal.table_segments
    terminal.table_segments = lambda *args: None  # type: ignore[assignment]
    try:
        print_table(console, table, (), width)
    finally:
        terminal.table_segments = saved
    return out.getvalue()


def _printed(table: Table, width: int | None, **options: object) -> str:
    console, out = _console(**options)
    print_table(console, table, (), width)
    return out.getvalue()


_STYLES = {"PASS": "green", "FAIL": "bold red", "SKIP": "dim", "REF": "cyan"}


def _table(title: str, columns: list[str], rows: list[list[str]], right: set[str],
           width: int | None = None) -> Table:
    cells = [[Text(cell, style=_STYLES.get(cell, "")) for cell in row] for row in rows]
    return fitted_table(title, columns, cells, width, right=right)[0]


def test_a_run_table_is_drawn_plain_as_rich_draws_it() -> None:
    columns = ["variant", "check", "median", "GB/s"]
    rows = [["naive", "PASS", "1.234 ms", "1,234.5"], ["shared_padded", "FAIL", "98 us", "12"],
            ["memcpy_dtod ±", "REF", "9.9 us", "3,000.1"]]
    table = _table("transpose 8192x8192 float32", columns, rows, {"median", "GB/s"})
    for options in _OUTPUTS:
        console, _ = _console(**options)
        assert table_segments(console, table, 200) is not None  # the fast path is taken
        for width in (None, 80):
            assert _printed(table, width, **options) == _by_rich(table, width, **options)
    coloured = _printed(table, 80, force_terminal=True, color_system="standard")
    assert "\x1b[32mPASS \x1b[0m" in coloured and "\x1b[1m" in coloured  # colours drawn


def test_what_it_cannot_draw_as_rich_does_is_left_to_rich() -> None:
    rows = [["naive", "1 us"]]
    console, _ = _console()
    assert table_segments(console, _table("t", ["variant", "median"], rows, set()), 5) is None
    wide = _table("t", ["variant", "median"], [["全角", "1 us"]], set())
    assert table_segments(console, wide, 200) is None
    broken = _table("t", ["variant", "median"], [["a\nb", "1 us"]], set())
    assert table_segments(console, broken, 200) is None
    long_title = _table("a title longer than the table it heads", ["v"], [["x"]], set())
    assert table_segments(console, long_title, 200) is None
    for cell in ("x   ", "  x "):  # Rich drops the trailing spaces, then aligns
        trailing = _table("t", ["variant", "median"], [["a", cell]], {"median"})
        assert table_segments(console, trailing, 200) is None
        assert _printed(trailing, None) == _by_rich(trailing, None)
    emoji = Table(title="t")
    emoji.add_column("a:100:b")  # a str header: Rich reads its emoji code
    emoji.add_row(Text("x"))
    assert table_segments(console, emoji, 200) is None
    recorded, _ = _console(force_terminal=True, color_system="standard", record=True)
    assert table_segments(recorded, _table("t", ["v"], [["x"]], set()), 200) is None
    two_styles = Text("x")
    two_styles.append("y", style="red")  # a cell of two styles: Rich's to draw
    mixed = fitted_table("t", ["v"], [[two_styles]], None)[0]
    assert table_segments(console, mixed, 200) is None
    styled_title = fitted_table("t", ["v"], [[Text("x")]], None)[0]
    styled_title.title = Text("t", style="bold")
    assert table_segments(console, styled_title, 200) is None


_CELL = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(title=_CELL, columns=st.lists(_CELL.filter(bool), min_size=1, max_size=5),
       data=st.data(), fitted=st.booleans(), options=st.sampled_from(_OUTPUTS))
def test_plain_text_is_rich_text_for_any_table(title: str, columns: list[str],
                                               data: st.DataObject, fitted: bool,
                                               options: dict[str, object]) -> None:
    cell = st.one_of(_CELL, st.sampled_from(sorted(_STYLES)))
    rows = data.draw(st.lists(st.lists(cell, min_size=len(columns), max_size=len(columns)),
                              max_size=6))
    right = set(data.draw(st.lists(st.sampled_from(columns), max_size=len(columns))))
    width = 80 if fitted else None
    table = _table(title, columns, rows, right, width)
    assert _printed(table, width, **options) == _by_rich(table, width, **options)
