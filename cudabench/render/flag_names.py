"""The flags the renderers' own words name (a footer's --wide, a threshold's source), in
the reader's terms: the commands print them as they are; the Python API renders its tables
with run()'s and compare()'s argument names in their place (cudabench.api.terms)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType

from cudabench.common.flag_terms import rename_flags

_names: ContextVar[Mapping[str, str]] = ContextVar("flag_names",
                                                   default=MappingProxyType({}))


def named(text: str) -> str:
    """Return a flag, or a text naming flags ("capped at 25% (--max-threshold)"), as the
    reader of what is being rendered names them."""
    return rename_flags(text, _names.get())


@contextlib.contextmanager
def flags_named(names: Mapping[str, str]) -> Iterator[None]:
    """Render, within, with names' word for each flag it maps (flag -> the reader's)."""
    token = _names.set(names)
    try:
        yield
    finally:
        _names.reset(token)
