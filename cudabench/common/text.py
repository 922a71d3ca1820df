"""Text from files people and other jobs wrote: its newlines as a text-mode read gives
them, and the terminal controls no name may hold and no printed line may carry."""

from __future__ import annotations

import re

# C0 and C1 controls and DEL: none belongs in a name (a tab or newline neither); a pull
# request's results file or a kernel's file name could retitle or clear a terminal.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_PRINTED_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a line's tab, newline kept


def decoded(data: bytes, encoding: str = "utf-8") -> str:
    """Return bytes as text with newlines as a text-mode read gives them (\\r\\n and \\r as
    \\n); UnicodeDecodeError where they are not of encoding."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def escape_controls(text: str) -> str:
    """Return text to print: each terminal control written out as \\xNN, a \\r\\n line end
    as \\n, tabs and newlines kept."""
    if text.isascii() and text.isprintable():  # most text: nothing to write out
        return text
    escaped = _PRINTED_CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}", text.replace("\r\n", "\n"))
    return encodable(escaped)  # a file name that is no UTF-8: \\udcNN, not a crash


def encodable(text: str) -> str:
    """Return text that UTF-8 can encode: a file name that is no UTF-8 (bytes Python
    decoded to lone surrogates, `bad\\xff.json`) with each such byte as \\udcNN, where a
    write or an SQLite store raised UnicodeEncodeError (an internal error, exit 4)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
