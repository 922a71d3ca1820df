"""Install hints name each extra's own packages (cudabench is installed from a clone, not
an index: `pip install 'cudabench[plot]'` found nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from cudabench.common.extras import install_hint, requirements

EXTRAS = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(
    encoding="utf-8"))["project"]["optional-dependencies"]


# ids not "gpu": a keyword of that name marks a GPU test here (conftest)
@pytest.mark.parametrize("extra", sorted(EXTRAS), ids=lambda extra: f"extra-{extra}")
def test_each_extra_s_hint_names_its_packages(extra):
    assert requirements(extra) == tuple(r.replace(" ", "") for r in EXTRAS[extra])
    hint = install_hint(extra)
    assert hint.startswith("pip install '") and "cudabench[" not in hint
