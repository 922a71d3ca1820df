"""Install hints name each extra's own packages (cudabench is installed from a clone, not
an index: `pip install 'cudabench[plot]'` found nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cudabench.common.extras import install_hint, requirements

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

EXTRAS = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(
    encoding="utf-8"))["project"]["optional-dependencies"]


# ids not "gpu": a keyword of that name marks a GPU test here (conftest)
@pytest.mark.parametrize("extra", sorted(EXTRAS), ids=lambda extra: f"extra-{extra}")
def test_each_extra_s_hint_names_its_packages(extra):
    assert requirements(extra) == tuple(r.replace(" ", "") for r in EXTRAS[extra])
    hint = install_hint(extra)
    assert hint.startswith("pip install '") and "cudabench[" not in hint


def test_a_package_that_is_installed_but_broken_is_not_called_missing(monkeypatch):
    # matplotlib without pyparsing (or built for another NumPy): "plotting needs
    # matplotlib: pip install ..." sent the user to a pip that says "already satisfied"
    import builtins

    import pytest

    from cudabench.common.extras import broken
    from cudabench.errors import UsageError
    from cudabench.render.plot import style

    missing = ModuleNotFoundError("No module named 'pyparsing'", name="pyparsing")
    assert broken("matplotlib", missing) == ("matplotlib is installed but cannot be "
                                             "imported: No module named 'pyparsing'")
    assert broken("matplotlib", ModuleNotFoundError("x", name="matplotlib")) is None
    assert broken("no_such_package_here", missing) is None
    real = builtins.__import__

    def failing(name, *args, **kwargs):
        if name == "matplotlib":
            raise missing
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    with pytest.raises(UsageError, match="plotting needs matplotlib, and matplotlib is "
                                         "installed but cannot be imported: No module named"):
        style.require()
