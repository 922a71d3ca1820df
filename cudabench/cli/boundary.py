"""The one error boundary: a CudabenchError becomes a one-line message and its exit code.

A traceback is shown only with --traceback; any other exception is reported as a bug.
"""

from __future__ import annotations

import sys
import traceback as traceback_module
from typing import Any

import click
from rich.text import Text

from cudabench.errors import CudabenchError, ExitCode


class BoundaryGroup(click.Group):
    """The one error boundary: errors become a one-line message and a typed exit code."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        """Run the CLI; Click's own usage errors also become one line and exit code 2."""
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Abort:
            print_error("cudabench: interrupted")
            code = ExitCode.INTERRUPTED
        except click.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            print_error(f"cudabench: error: {exc.format_message()}{where}")
            code = ExitCode.USAGE
        if not standalone_mode:
            return code
        sys.exit(int(code or 0))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            code = super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            print_error("cudabench: interrupted")
            code = ExitCode.INTERRUPTED
        except CudabenchError as exc:
            if ctx.params.get("traceback"):
                traceback_module.print_exc()
            print_error(f"cudabench: error: {exc}")
            code = exc.exit_code
        except Exception as exc:  # a bug: say so, and how to report it
            if ctx.params.get("traceback"):
                traceback_module.print_exc()
            print_error(
                f"cudabench: internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in cudabench: re-run with --traceback and report the output."
            )
            code = ExitCode.INTERNAL
        ctx.exit(int(code or 0))


def print_error(message: str) -> None:
    from cudabench.render.terminal import stderr_console

    stderr_console().print(Text(message, style="red"), soft_wrap=True)
