"""Show results and comparisons in a notebook (HTML) and a terminal (Rich), through the
renderers the commands use: the HTML report's tables and the terminal's tables.

A notebook shows an output's HTML inside its own page, so the report's stylesheet, written
for a page of its own (`body`, `table`, `:root`...), is scoped here to one wrapper element:
the notebook's own tables and fonts stay as they were. Nothing is fetched and no script
runs.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from cudabench.render.html_page import CSS, esc
from cudabench.render.terminal import stdout_console, within_width

SCOPE = "cudabench-output"  # the class of the wrapper every notebook output sits in
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_MEDIA = re.compile(r"(@media[^{]+)\{((?:[^{}]*\{[^{}]*\})*)\s*\}")


def scoped_css(css: str = CSS) -> str:
    """Return the report's stylesheet with every rule limited to the wrapper: `:root`, `html`
    and `body` become the wrapper itself, any other selector a descendant of it."""
    def rules(text: str) -> str:
        return "\n".join(f"{_scope(selectors)} {{{body}}}"
                         for selectors, body in _RULE.findall(text))

    parts = []
    for media, inner in _MEDIA.findall(css):
        parts.append(f"{media.strip()} {{\n{rules(inner)}\n}}")
    parts.insert(0, rules(_MEDIA.sub("", css)))
    return "\n".join(parts)


def _scope(selectors: str) -> str:
    scoped = []
    for selector in (s.strip() for s in selectors.split(",")):
        head, _, rest = selector.partition(" ")
        if head in (":root", "html", "body"):
            scoped.append(f".{SCOPE} {rest}".rstrip() if rest else f".{SCOPE}")
        else:
            scoped.append(f".{SCOPE} {selector}")
    return ", ".join(scoped)


def fragment(parts: Iterable[str]) -> str:
    """Return notebook HTML: the scoped stylesheet and the parts inside the wrapper."""
    body = "\n".join(part for part in parts if part)
    return f'<style>{scoped_css()}</style>\n<div class="{SCOPE}">\n{body}\n</div>'


def lines_html(lines: Iterable[tuple[str, str]]) -> str:
    """Return (text, class) lines as the report's list of diagnostics ('' when none)."""
    items = "".join(f'<li class="{esc(style)}">{esc(text)}</li>' if style else
                    f"<li>{esc(text)}</li>" for text, style in lines)
    return f'<ul class="lines">{items}</ul>' if items else ""


class Printed:
    """A Rich renderable that prints what a terminal renderer prints to a console, so that
    `rich.print(results)` and the command line show the same tables."""

    def __init__(self, render: Callable[[Console], None]) -> None:
        self.render = render

    def __str__(self) -> str:  # print(results.table(wide=True)): the text, not an object
        return plain_text(self)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Render as a terminal of the width given would show it (the columns that fit; with
        wide, every column narrowed to it), then yield its lines as they are: the console
        wrapped each line that was wider again, at words, breaking every row."""
        # Full colour inside: Text.from_ansi turns it back into styles, and the outer
        # console prints those in the colours it has (none on a plain stream).
        inner = Console(file=io.StringIO(), width=options.max_width,
                        color_system="truecolor" if console.color_system else None,
                        force_terminal=True, highlight=False)
        with within_width():
            self.render(inner)
        output = inner.file.getvalue()  # type: ignore[attr-defined]
        yield Text.from_ansi(output.rstrip("\n"), no_wrap=True, overflow="crop")


def plain_text(renderable: Printed, width: int | None = None, terminal: bool | None = None
               ) -> str:
    """Return what a renderable prints without colour to standard output, as the commands
    print: on a terminal (terminal True, else when sys.stdout is one) the columns that fit
    its width (width, else the terminal's); elsewhere every column (200 columns, unless
    COLUMNS names a width to fit)."""
    if width is None or terminal is None:
        stdout = stdout_console()  # the commands' console: its width and whether a terminal
        width = stdout.width if width is None else width
        terminal = stdout.is_terminal if terminal is None else terminal
    console = Console(file=io.StringIO(), width=width, color_system=None,
                      force_terminal=terminal, highlight=False)
    renderable.render(console)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]
