"""The plain drawing of a table (render/plain_table.py) prints Rich's bytes, or declines."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cudabench.render import terminal
from cudabench.render.plain_table import plain_lines
from cudabench.render.terminal import fitted_table, print_table


def _console(width: int = 200, **options: object) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return terminal._Console(file=out, width=width, highlight=False, **options), out


def _by_rich(table: Table, width: int | None) -> str:
    console, out = _console()
    saved = terminal.plain_lines
    terminal.plain_lines = lambda *args: None  # type: ignore[assignment]
    try:
        print_table(console, table, (), width)
    finally:
        terminal.plain_lines = saved
    return out.getvalue()


def _printed(table: Table, width: int | None) -> str:
    console, out = _console()
    print_table(console, table, (), width)
    return out.getvalue()


def _table(title: str, columns: list[str], rows: list[list[str]], right: set[str],
           width: int | None = None) -> Table:
    cells = [[Text(cell, style="green" if cell == "PASS" else "") for cell in row]
             for row in rows]
    return fitted_table(title, columns, cells, width, right=right)[0]


def test_a_run_table_is_drawn_plain_as_rich_draws_it() -> None:
    columns = ["variant", "check", "median", "GB/s"]
    rows = [["naive", "PASS", "1.234 ms", "1,234.5"], ["shared_padded", "FAIL", "98 us", "12"],
            ["memcpy_dtod ±", "REF", "9.9 us", "3,000.1"]]
    table = _table("transpose 8192x8192 float32", columns, rows, {"median", "GB/s"})
    console, _ = _console()
    assert plain_lines(console, table, 200) is not None  # the fast path is taken
    assert _printed(table, None) == _by_rich(table, None)


def test_what_it_cannot_draw_as_rich_does_is_left_to_rich() -> None:
    rows = [["naive", "1 us"]]
    console, _ = _console()
    assert plain_lines(console, _table("t", ["variant", "median"], rows, set()), 5) is None
    wide = _table("t", ["variant", "median"], [["全角", "1 us"]], set())
    assert plain_lines(console, wide, 200) is None
    broken = _table("t", ["variant", "median"], [["a\nb", "1 us"]], set())
    assert plain_lines(console, broken, 200) is None
    long_title = _table("a title longer than the table it heads", ["v"], [["x"]], set())
    assert plain_lines(console, long_title, 200) is None
    for cell in ("x   ", "  x "):  # Rich drops the trailing spaces, then aligns
        trailing = _table("t", ["variant", "median"], [["a", cell]], {"median"})
        assert plain_lines(console, trailing, 200) is None
        assert _printed(trailing, None) == _by_rich(trailing, None)
    emoji = Table(title="t")
    emoji.add_column("a:100:b")  # a str header: Rich reads its emoji code
    emoji.add_row(Text("x"))
    assert plain_lines(console, emoji, 200) is None
    coloured, _ = _console(force_terminal=True, color_system="standard")
    assert plain_lines(coloured, _table("t", ["v"], [["x"]], set()), 200) is None


_CELL = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(title=_CELL, columns=st.lists(_CELL.filter(bool), min_size=1, max_size=5),
       data=st.data(), fitted=st.booleans())
def test_plain_text_is_rich_text_for_any_table(title: str, columns: list[str],
                                               data: st.DataObject, fitted: bool) -> None:
    rows = data.draw(st.lists(st.lists(_CELL, min_size=len(columns), max_size=len(columns)),
                              max_size=6))
    right = set(data.draw(st.lists(st.sampled_from(columns), max_size=len(columns))))
    width = 80 if fitted else None
    table = _table(title, columns, rows, right, width)
    assert _printed(table, width) == _by_rich(table, width)
