"""The command line (Click): options to a request, one library call, a renderer."""

from __future__ import annotations

from cudabench.cli.group import cli, main

__all__ = ["cli", "main"]
