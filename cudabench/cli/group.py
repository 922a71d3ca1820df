"""The command group, kept light: a command's module is imported only when it runs.

`cudabench --help` lists every command from the table in cli/names.py and the op registry,
without importing the measurement code, NumPy, PyCUDA or CuPy (tests/test_startup.py
checks it, and that each short help there matches its command's).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

from cudabench import __version__
from cudabench.cli.boundary import BoundaryGroup, OptionMistake
from cudabench.cli.names import COMMANDS


def load_command(name: str) -> click.Command:
    """Import and return a fixed command."""
    module, attribute, _ = COMMANDS[name]
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


def run_and_render(*args: Any, **kwargs: Any) -> int:
    """Run an op command's requests (cudabench.cli.commands, imported now)."""
    from cudabench.cli import commands

    code: int = commands.run_and_render(*args, **kwargs)
    return code


class OpsGroup(BoundaryGroup):
    """The command group: fixed commands, and one command per op of the registry."""

    kernels_dirs: list[Path] = []

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """Note the --kernels-dir folders first: a user's op there may be the command."""
        from cudabench.cli.names import kernels_dirs_in

        self.kernels_dirs = kernels_dirs_in(args)
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            name = click.utils.make_str(args[0]) if args else ""
            if (isinstance(error, OptionMistake) or not name.isidentifier()
                    or name in COMMANDS):  # the command was found; a path, a pattern: as is
                raise
            import difflib

            from cudabench.catalog.discovery import check_folders
            from cudabench.cli.names import given_kernels_dirs

            # `layernorm --kernels-dir myop` (a typo of myops): the folder is what is wrong
            check_folders(given_kernels_dirs(args))
            from cudabench.ops import builtin_ops

            op = builtin_ops().get(name)
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            if op is not None and op.command_flag:  # an op run by another's command
                hint = f"The op {name} is run by `cudabench {op.command} --{op.command_flag}`."
            else:
                hint = (f"Did you mean {close[0]!r}?" if close
                        else own_op_hint(name, self.kernels_dirs))
            raise click.UsageError(f"{error.message} {hint}", ctx) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse cudabench's own options; one of a command's given before the command
        (`cudabench --kernels-dir X vadd`: "No such option") is told to go after it."""
        given = list(args)  # Click's parser takes the words off args as it goes
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as error:
            command = self._command_of(ctx, given, error.option_name)
            if command is None:
                raise
            raise click.NoSuchOption(
                error.option_name, f"{error.option_name} is an option of `{command}`, not "
                f"of cudabench: put it after the command (`cudabench {command} "
                f"{error.option_name} ...`)", ctx=ctx) from None

    def _command_of(self, ctx: click.Context, args: list[str], option: str) -> str | None:
        """Return the command among args that has option, if any."""
        from cudabench.cli.names import kernels_dirs_in
        from cudabench.errors import CudabenchError

        self.kernels_dirs = kernels_dirs_in(args)  # a user's op there may be the command
        for word in args:
            if word.startswith("-") or not word.isidentifier():
                continue
            try:
                command = self.get_command(ctx, word)
            except (CudabenchError, click.ClickException):  # a broken op: Click's error
                continue
            if command is not None and any(option in param.opts for param in command.params):
                return word
        return None

    def list_commands(self, ctx: click.Context) -> list[str]:
        """List the op commands (built in and installed), then the others."""
        from cudabench.cli.names import command_names
        from cudabench.ops import builtin_ops

        return [*command_names(builtin_ops()), *sorted(COMMANDS)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """Return a fixed command, or the command of an op with that name."""
        from cudabench.cli.empty import refuse_empty

        if name in COMMANDS:
            if self.kernels_dirs:  # an op there named like this command could never run
                from cudabench.ops import load_ops

                load_ops(self.kernels_dirs)  # refuses it (ops/registry.py)
            return refuse_empty(load_command(name))
        from cudabench.cli.op_commands import op_command
        from cudabench.ops import load_ops

        command = op_command(name, load_ops(self.kernels_dirs), run_and_render)
        return refuse_empty(command) if command is not None else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands with their short help, importing none of the fixed ones."""
        from cudabench.cli.names import command_name
        from cudabench.errors import CudabenchError
        from cudabench.ops import builtin_ops

        summaries: dict[str, str] = {}
        try:
            ops = builtin_ops()
        except CudabenchError as exc:  # a broken installed op: the help still shows, and why
            ops, broken = {}, str(exc)
        else:
            broken = ""
        for op in ops.values():
            summaries.setdefault(command_name(op), op.summary)
        summaries.update({name: help_text for name, (_, _, help_text) in
                          sorted(COMMANDS.items())})
        width = formatter.width - 6 - max(len(name) for name in summaries)
        rows = [(name, _shorten(text, width)) for name, text in summaries.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
        if broken:  # one line, as the op commands' own error is
            formatter.write_paragraph()
            formatter.write_text(f"Op commands not listed: {broken} (fix or uninstall it)")


def own_op_hint(name: str, kernels_dirs: list[Path]) -> str:
    """Say how an op of one's own becomes a command, naming a folder near here that holds
    NAME.py (examples/softmax for softmax) when there is one."""
    if kernels_dirs:
        files = [folder / f"{name}.py" for folder in kernels_dirs
                 if (folder / f"{name}.py").is_file()]
        if files:  # the layout is right: the file itself names another op, or fails
            return f"{files[0]} does not define the op {name!r}: {_declared(files[0].parent)}"
        return (f"None of --kernels-dir {', '.join(map(str, kernels_dirs))} defines an op "
                f"{name!r} ({name}.py beside a {name}/ folder of kernels).")
    here = Path.cwd()
    found = sorted(str(path.parent.relative_to(here))
                   for pattern in (f"*/{name}.py", f"*/*/{name}.py")
                   for path in here.glob(pattern) if (path.parent / name).is_dir())
    if found:
        return f"An op of your own needs its folder: cudabench {name} --kernels-dir {found[0]}"
    return (f"An op of your own needs its folder: cudabench {name} --kernels-dir FOLDER "
            f"(FOLDER holding {name}.py; docs/writing-an-op.md).")


def _declared(folder: Path) -> str:
    """Say which ops a folder's op files declare, or why they cannot be loaded."""
    from cudabench.errors import CudabenchError
    from cudabench.ops import load_ops

    try:
        ops = load_ops([folder])  # an op named `list` too: no command of its own
    except CudabenchError as exc:
        return f"it cannot be used ({exc})"
    own = sorted(set(ops) - set(load_ops([])))
    return (f"the ops of {folder} are {', '.join(own)} (an op file's name = \"...\" is its "
            "command)" if own else f"{folder} declares no op of its own")


def _shorten(text: str, width: int) -> str:
    """Cut a help text to one line of width characters, as Click does."""
    text = text.rstrip(".")
    if len(text) <= width:
        return text
    cut = text[: max(10, width - 3)].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "..."


@click.group(cls=OpsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cudabench")
@click.option("--traceback", is_flag=True, help="Show the Python traceback of an error.")
@click.option("--wide", is_flag=True,
              help="Show every column of every table, however wide the terminal "
                   "(as CUDABENCH_WIDE=1 does).")
@click.pass_context
def cli(ctx: click.Context, traceback: bool, wide: bool) -> None:
    """Benchmark CUDA kernels: verified against NumPy, timed with CUDA events.

    \b
    Exit codes:
      0    every variant verified (compare, ab, history check: no regression);
           list, report, plot, workers, a dry run whose kernels compile
      1    compare, ab, history check or --check: a significant slowdown, too
           few samples to judge one, a benchmark that now fails verification or
           is missing, or an incomplete current file
      2    usage or environment error (bad flag or file, a corrupt results file;
           no GPU, driver, PyCUDA or nvcc; --counters without ncu), a row that
           could not be compiled or run (ERROR), or nothing measured (every
           kernel skipped)
      3    a variant (or the cuBLAS row) failed verification, timed out
           (TIMEOUT) or is faster than the GPU allows (SUSPECT)
      4    internal error: re-run with --traceback and report it
      130  interrupted (Ctrl-C)
      143  terminated (SIGTERM: a CI job cancelled), stopped as Ctrl-C stops it
    """
    from cudabench.render.fit import ask_wide  # text only: no Rich, nothing heavy

    ask_wide(wide)
    ctx.call_on_close(lambda: ask_wide(False))  # not kept past this command (tests, API)


def main(argv: list[str] | None = None) -> None:
    """Run the command line (console script and `python -m cudabench`); a plain run's GPU
    worker starts first (cli/early.py)."""
    import sys

    from cudabench.cli.early import start_early

    try:
        start_early(sys.argv[1:] if argv is None else argv)  # its Ctrl-C: cudabench.entry
        cli.main(args=argv, prog_name="cudabench")
    finally:
        starting = sys.modules.get("cudabench.runner.starting")  # not imported: none started
        if starting is not None:
            starting.discard_prestarted()  # the command ended before its run took the worker
        workers = sys.modules.get("cudabench.runner.workers")
        if workers is not None:
            workers.discard_kept()  # nor the worker a run kept warm for a next one
            workers.finish_closing()
