"""Errors in Python's terms: the API's checks are the commands' own, whose messages name
the command's flags; a caller of run() or compare() gave arguments, not flags (and a
switch given as "no" is no False)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from cudabench.common.flag_terms import rename_flags
from cudabench.errors import CudabenchError, UsageError


@contextlib.contextmanager
def python_terms(arguments: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a cudabench error whose message names one of the command's flags
    (arguments: flag -> the argument, or TimingPolicy field, it stands for) with the
    argument's name in its place (a UsageError, or a GpuEnvironmentError: "--device 5:
    there are 1 GPU(s)"); any other error as it is."""
    try:
        yield
    except CudabenchError as exc:
        text = str(exc)
        # a Python caller has no --help to see: the docstrings and docs/python.md
        named = rename_flags(text.replace(" (see --help)", ""), arguments)
        if named == text:
            raise
        exc.args = (named,)  # the same error, in Python's terms: its type and fields kept
        raise exc from None


def switch(value: object, name: str) -> bool:
    """Return an argument given as True or False, else UsageError: "no" or 0 is not False
    here, and bool("no") would turn it on."""
    if not isinstance(value, bool):
        raise UsageError(f"{name} {value!r}: expected True or False")
    return value
