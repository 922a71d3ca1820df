"""What a regular (non-editable) install ships: every package of the source tree."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

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
    # the kernels' folders (cudabench.kernels.dot...): unlisted, every build warned
    # "Package would be ignored" for each
    kernels = {f"cudabench.kernels.{folder.name}" for folder in (ROOT / "kernels").iterdir()
               if folder.is_dir() and not folder.name.startswith(("_", "."))}
    assert kernels and kernels - listed == set(), "add these to [tool.setuptools] packages"


def test_the_license_ships():
    # `license = "MIT"` named no file: the wheel carried no license text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 the cudabench developers" \
        in text and "WITHOUT WARRANTY OF ANY KIND" in text


def test_the_package_s_stub_names_every_api_name_and_ships():
    # `cudabench.run` came through the package's lazy __getattr__, typed Any: a misspelt
    # keyword (variant= for variants=) passed mypy. The stub names the API's definitions.
    import ast

    import cudabench

    stub = ast.parse((ROOT / "cudabench" / "__init__.pyi").read_text(encoding="utf-8"))
    imported = {alias.asname or alias.name for node in stub.body
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == set(cudabench._API)
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "__init__.pyi" in data["tool"]["setuptools"]["package-data"]["cudabench"]
