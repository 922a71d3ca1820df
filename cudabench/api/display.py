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
import shutil
from collections.abc import Callable, Iterable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from cudabench.render.html_page import CSS, esc

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
        """Render into a console of the same width and colours, then yield its lines."""
        # Full colour inside: Text.from_ansi turns it back into styles, and the outer
        # console prints those in the colours it has (none on a plain stream).
        inner = Console(file=io.StringIO(), width=options.max_width,
                        color_system="truecolor" if console.color_system else None,
                        force_terminal=console.color_system is not None, highlight=False)
        self.render(inner)
        output = inner.file.getvalue()  # type: ignore[attr-defined]
        yield Text.from_ansi(output.rstrip("\n"))


def plain_text(renderable: Printed, width: int | None = None) -> str:
    """Return what a renderable prints on a plain (colourless) console: as wide as
    COLUMNS says, else the terminal, else 200 columns (as the commands print when piped)."""
    if width is None:
        width = shutil.get_terminal_size((200, 24)).columns
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    renderable.render(console)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]
