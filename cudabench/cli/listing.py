"""`cudabench list`: the catalog of ops and variants (no GPU, no measurement code)."""

from __future__ import annotations

from pathlib import Path

import click

from cudabench.catalog import discover
from cudabench.ops import load_ops
from cudabench.render import terminal


@click.command("list")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Also list variants and ops (.py) from this folder (repeatable).")
def list_command(kernels_dirs: tuple[Path, ...]) -> int:
    """List ops, their variants, parameters and files (no GPU needed)."""
    from cudabench.cli.op_commands import refuse_clashes_of

    ops = load_ops(kernels_dirs)
    refuse_clashes_of(ops)  # an op file the op's command would refuse
    terminal.render_catalog(discover(kernels_dirs), ops, terminal.stdout_console())
    return 0
