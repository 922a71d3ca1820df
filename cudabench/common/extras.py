"""How to install an optional feature's packages: an extra's requirements, named.

cudabench is installed from a clone (`pip install -e '.[plot]'`), not from a package index,
so a hint of `pip install 'cudabench[plot]'` sent users to a package that is not there. The
hint names the extra's own packages, as the installed metadata lists them (pyproject.toml's
optional dependencies, the one place they are written).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re

_EXTRA = re.compile(r"""extra\s*==\s*["']([\w.-]+)["']""")


@functools.cache
def requirements(extra: str) -> tuple[str, ...]:
    """Return the requirements of one of cudabench's extras ("matplotlib>=3.7"); none
    when the metadata cannot be read (an uninstalled checkout)."""
    try:
        listed = importlib.metadata.requires("cudabench") or []
    except importlib.metadata.PackageNotFoundError:
        return ()
    found = []
    for requirement in listed:
        spec, _, marker = requirement.partition(";")
        named = _EXTRA.search(marker)
        if named is not None and named.group(1) == extra:
            found.append(spec.strip().replace(" ", ""))
    return tuple(found)


def install_hint(extra: str) -> str:
    """Return how to install an extra: `pip install 'matplotlib>=3.7'` (cudabench's `plot`
    extra, or pip install -e '.[plot]' in its clone)."""
    packages = " ".join(f"'{r}'" for r in requirements(extra))
    if not packages:
        return f"pip install -e '.[{extra}]' in the cudabench clone"
    return f"pip install {packages} (cudabench's `{extra}` extra)"


def broken(package: str, exc: ImportError) -> str | None:
    """Return why an installed package cannot be imported ("matplotlib is installed but
    cannot be imported: No module named 'pyparsing'"), or None where the package itself
    is missing: "not installed" sent its user to a pip that says "already satisfied"."""
    if getattr(exc, "name", None) == package:
        return None  # the package itself
    try:
        found = importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        found = False
    return f"{package} is installed but cannot be imported: {exc}" if found else None
