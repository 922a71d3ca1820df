"""What a regular (non-editable) install ships: every package of the source tree."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_the_source_tree_is_installed():
    # A package left out of pyproject's list is missing from the wheel: `pip install .`
    # (the README's CI install) then failed every compare with an ImportError of
    # cudabench.render.plot, which an editable install never showed.
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for init in (ROOT / "cudabench").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages"
