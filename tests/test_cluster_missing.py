"""--cluster without Ray installed: a one-line error that says how to get it."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from cudabench.cli import cli


def test_without_ray_the_error_says_how_to_install_it(use_fake, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:
        runner = CliRunner()
    done = runner.invoke(cli, ["dot", "--size", "100", "--cluster", "ray"])
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Ray is not installed" in lines[0] and "pip install 'ray>=2.9'" in lines[0]

