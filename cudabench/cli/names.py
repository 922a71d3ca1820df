"""Command names of ops and the --kernels-dir folders of a command line: what the group
needs before any command is built (kept light: see cudabench/cli/group.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from cudabench.ops import Op


def command_name(op: Op) -> str:
    """Return the command that runs op."""
    return op.command or op.name


def command_names(ops: Mapping[str, Op]) -> list[str]:
    """Return the commands the ops give, each once."""
    return list(dict.fromkeys(command_name(op) for op in ops.values()))


def kernels_dirs_in(args: Sequence[str]) -> list[Path]:
    """Return the folders given with --kernels-dir in a command line not yet parsed."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--kernels-dir" and i + 1 < len(args):
            found.append(args[i + 1])
        elif arg.startswith("--kernels-dir="):
            found.append(arg.split("=", 1)[1])
    # An empty value is no folder (Path("") is the current one): the command refuses it.
    return [Path(text) for text in found if text.strip() and Path(text).is_dir()]
