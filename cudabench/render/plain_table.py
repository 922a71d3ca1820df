"""A Rich table drawn directly, fast, where Rich would draw exactly that output.

Rich lays out and renders every cell through its measuring and wrapping machinery: about
3 ms a row of a 14-column table, 9 s of CPU for `report` of a 3000-row sweep, 10 s to show
a 2000-row sweep on a terminal. A table whose cells each fit on one line, each of one style
(a run table's PASS in green), needs none of it: its lines are the cells padded to the
widest of each column between the box's characters, each piece in the style Rich gives it.
`table_segments` draws those pieces, and declines (None) every table it cannot draw exactly
as Rich does, which Rich then draws; tests/test_plain_table.py holds the two to the same
bytes, with colour and without.
"""

from __future__ import annotations

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

# Rich's default table: a heavy head, a padding of one space each side, edges, no lines
# between rows
_PADDING = (0, 1, 0, 1)


def table_segments(console: Console, table: Table, max_width: int) -> list[Segment] | None:
    """Return the segments Rich would print for table on console at max_width columns
    (a line break after each line), or None where this cannot promise Rich's output (a
    recorded or legacy console, a non-UTF-8 output whose box Rich swaps, a cell that wraps,
    holds a line break or a control or more than one style, a styled title, a table wider
    than max_width, any layout option other than the defaults fitted_table uses)."""
    if not _plain_console(console) or not _default_layout(table):
        return None
    texts = [[_text(column.header), *(_text(cell) for cell in column._cells)]
             for column in table.columns]  # each column's header, then its cells
    columns = [[text for text in column if text is not None] for column in texts]
    title = _text(table.title) if table.title is not None else ("", "")
    if any(len(kept) < len(column) for kept, column in zip(columns, texts)) or title is None:
        return None
    if isinstance(table.title, Text) and (table.title.style or table.title.spans):
        return None  # Rich prints a Text title in its own styles
    widths = [max(len(text) for text, _ in column) for column in columns]
    total = sum(widths) + 3 * len(widths) + 1  # a space each side of a cell, and the rules
    if total > max_width or len(title[0]) > total or title[0] != title[0].strip():
        # Rich would fold or squeeze columns, wrap a title wider than the table, or trim
        # a title's spaces
        return None
    right = [column.justify == "right" for column in table.columns]
    styles = _Styles(console)
    # the styles Rich gives a cell's padding (and under the cell's own, its text): the
    # table's and column's header styles in the head, the column's style in the body
    head = [styles.get(table.header_style) + styles.get(column.header_style)
            for column in table.columns]
    body = [styles.get(column.style) for column in table.columns]
    border = styles.get(table.style) + styles.get(table.border_style)
    out: list[Segment] = []
    new_line = Segment.line()

    def row(cells: list[tuple[str, str | Style]], pads: list[Style], left: str, middle: str,
            end: str) -> None:
        out.append(Segment(left, border))
        for number, ((text, style), width, at_right, pad) in enumerate(
                zip(cells, widths, right, pads)):
            if number:
                out.append(Segment(middle, border))
            space = " " * (width - len(text))
            out.append(Segment(" ", pad))
            out.append(Segment(space + text if at_right else text + space,
                               pad + styles.get(style)))
            out.append(Segment(" ", pad))
        out.append(Segment(end, border))
        out.append(new_line)

    def rule(left: str, fill: str, middle: str, end: str) -> None:
        out.append(Segment(left + middle.join(fill * (width + 2) for width in widths) + end,
                           border))
        out.append(new_line)

    b = box.HEAVY_HEAD
    if title[0]:  # Rich prints no line for an empty title
        space = total - len(title[0])
        out.append(Segment(" " * (space // 2) + title[0] + " " * (space - space // 2)))
        out.append(new_line)
    rule(b.top_left, b.top, b.top_divider, b.top_right)
    row([column[0] for column in columns], head, b.head_left, b.head_vertical, b.head_right)
    rule(b.head_row_left, b.head_row_horizontal, b.head_row_cross, b.head_row_right)
    for number in range(1, len(columns[0])):
        row([column[number] for column in columns], body, b.mid_left, b.mid_vertical,
            b.mid_right)
    rule(b.bottom_left, b.bottom, b.bottom_divider, b.bottom_right)
    return out


class _Styles:
    """The console's styles by name, each parsed once (a sweep's cells share a few)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._parsed: dict[str | Style | None, Style] = {}

    def get(self, style: str | Style | None) -> Style:
        parsed = self._parsed.get(style)
        if parsed is None:
            parsed = self._parsed[style] = self._console.get_style(style or "")
        return parsed


def _plain_console(console: Console) -> bool:
    """Return whether console prints Rich's own box characters, its output not recorded
    (Rich records what it renders) nor written through Windows' legacy console calls."""
    return (not console.record and not console.legacy_windows
            and console.encoding.lower().replace("-", "").startswith("utf")
            and not console.options.ascii_only)


def _default_layout(table: Table) -> bool:
    """Return whether table has the layout fitted_table gives an unsqueezed table: the
    default box, padding and edges, a centred title, no caption, footer, lines or row
    styles, and columns of natural width that never fold nor highlight."""
    return (table.box is box.HEAVY_HEAD and tuple(table.padding) == _PADDING
            and table.show_header and table.show_edge and not table.show_footer
            and not table.show_lines and not table.expand and table.width is None
            and table.min_width is None and table.caption is None and not table.leading
            and table.pad_edge and not table.collapse_padding and bool(table.columns)
            and not table.row_styles and table.title_justify == "center"
            and not any(row.style or row.end_section for row in table.rows)
            and all(column.max_width is None and column.min_width is None
                    and column.width is None and column.ratio is None
                    and column.justify in ("left", "right") and column.vertical == "top"
                    and not column.highlight
                    for column in table.columns))


def _text(value: object) -> tuple[str, str | Style] | None:
    """Return a cell's text and style where Rich prints it as it is: one line of printable
    characters in one style, and no markup left to read (a str could hold some); else
    None."""
    style: str | Style = ""
    if isinstance(value, Text):
        if (value.justify is not None or value.overflow is not None or value.end != "\n"
                or value.spans):
            return None
        text, style = value.plain, value.style
    elif isinstance(value, str) and "[" not in value and ":" not in value:
        text = value  # a str's markup and :emoji: codes are Rich's to read
    else:
        return None
    # one cell a character, as Rich measures them (wide or joined characters: Rich's);
    # trailing spaces Rich drops before it aligns a cell
    plain = text.isprintable() and cell_len(text) == len(text) and text == text.rstrip()
    return (text, style) if plain else None
