"""A Rich table drawn as plain text, fast, where Rich would draw exactly that text.

Rich lays out and renders every cell through its measuring and wrapping machinery: about
3 ms a row of a 14-column table, 9 s of CPU for `report` of a 3000-row sweep. A table
printed without colour (a pipe, a file, CI logs) whose cells each fit on one line needs
none of it: its lines are the cells padded to the widest of each column between the box's
characters. `plain_lines` draws those lines, and declines (None) every table it cannot
draw exactly as Rich does, which Rich then draws; tests/test_plain_table.py holds the two
to the same bytes.
"""

from __future__ import annotations

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

# Rich's default table: a heavy head, a padding of one space each side, edges, no lines
# between rows
_PADDING = (0, 1, 0, 1)


def plain_lines(console: Console, table: Table, max_width: int) -> list[str] | None:
    """Return the lines Rich would print for table on console at max_width columns, or
    None where this cannot promise Rich's text (colour or styles shown, a non-UTF-8
    output whose box Rich swaps, a cell that wraps or holds a line break or a control, a
    table wider than max_width, any layout option other than the defaults fitted_table
    uses)."""
    if not _plain_console(console) or not _default_layout(table):
        return None
    texts = [[_text(column.header), *(_text(cell) for cell in column._cells)]
             for column in table.columns]  # each column's header, then its cells
    columns = [[text for text in column if text is not None] for column in texts]
    title = _text(table.title) if table.title is not None else ""
    if any(len(kept) < len(column) for kept, column in zip(columns, texts)) or title is None:
        return None
    widths = [max(len(text) for text in column) for column in columns]
    total = sum(widths) + 3 * len(widths) + 1  # a space each side of a cell, and the rules
    if total > max_width or len(title) > total or title != title.strip():
        # Rich would fold or squeeze columns, wrap a title wider than the table, or trim
        # a title's spaces
        return None
    right = [column.justify == "right" for column in table.columns]

    def line(cells: list[str], left: str, middle: str, end: str) -> str:
        return left + middle.join(" " + _pad(text, width, at_right) + " "
                                  for text, width, at_right in zip(cells, widths, right)) + end

    def rule(left: str, fill: str, middle: str, end: str) -> str:
        return left + middle.join(fill * (width + 2) for width in widths) + end

    b = box.HEAVY_HEAD
    lines = []
    if title:  # Rich prints no line for an empty title
        space = total - len(title)
        lines.append(" " * (space // 2) + title + " " * (space - space // 2))
    lines.append(rule(b.top_left, b.top, b.top_divider, b.top_right))
    lines.append(line([column[0] for column in columns], b.head_left, b.head_vertical,
                      b.head_right))
    lines.append(rule(b.head_row_left, b.head_row_horizontal, b.head_row_cross,
                      b.head_row_right))
    for number in range(1, len(columns[0])):
        lines.append(line([column[number] for column in columns], b.mid_left, b.mid_vertical,
                          b.mid_right))
    lines.append(rule(b.bottom_left, b.bottom, b.bottom_divider, b.bottom_right))
    return lines


def _plain_console(console: Console) -> bool:
    """Return whether console prints no styles and Rich's own box characters."""
    return (console.color_system is None and not console.record
            and not console.legacy_windows
            and console.encoding.lower().replace("-", "").startswith("utf")
            and not console.options.ascii_only)


def _default_layout(table: Table) -> bool:
    """Return whether table has the layout fitted_table gives an unsqueezed table: the
    default box, padding and edges, no caption, footer, lines or row styles, and columns of
    natural width that never fold."""
    return (table.box is box.HEAVY_HEAD and tuple(table.padding) == _PADDING
            and table.show_header and table.show_edge and not table.show_footer
            and not table.show_lines and not table.expand and table.width is None
            and table.min_width is None and table.caption is None and not table.leading
            and table.pad_edge and not table.collapse_padding and bool(table.columns)
            and not any(row.style or row.end_section for row in table.rows)
            and all(column.max_width is None and column.min_width is None
                    and column.width is None and column.ratio is None
                    and column.justify in ("left", "right") and column.vertical == "top"
                    for column in table.columns))


def _text(value: object) -> str | None:
    """Return a cell's text where Rich prints it as it is: one line of printable
    characters, and no markup left to read (a str could hold some); else None."""
    if isinstance(value, Text):
        if value.justify is not None or value.overflow is not None or value.end != "\n":
            return None
        text = value.plain
    elif isinstance(value, str) and "[" not in value and ":" not in value:
        text = value  # a str's markup and :emoji: codes are Rich's to read
    else:
        return None
    # one cell a character, as Rich measures them (wide or joined characters: Rich's);
    # trailing spaces Rich drops before it aligns a cell
    plain = text.isprintable() and cell_len(text) == len(text) and text == text.rstrip()
    return text if plain else None


def _pad(text: str, width: int, at_right: bool) -> str:
    """Return text padded with spaces to width cells, at the left where it is right-aligned."""
    space = " " * (width - len(text))
    return space + text if at_right else text + space
