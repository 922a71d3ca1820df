"""The one error boundary: a CudabenchError becomes a one-line message and its exit code.

A traceback is shown only with --traceback, which may stand anywhere on the command line
(`cudabench matmul --size x --traceback` too); any other exception is reported as a bug.
The group's --wide may stand anywhere too (`cudabench report FILE --wide`).
"""

from __future__ import annotations

import contextlib
import re
import sys
import traceback as traceback_module
from collections.abc import Iterator
from typing import IO, Any, TextIO, cast

import click

from cudabench.common.streams import lead_nowhere
from cudabench.errors import (CudabenchError, ExitCode, OutputNotWritten, folder_gone,
                              stopped_code, stopped_text)

TRACEBACK_FLAG = "--traceback"
GROUP_FLAGS = (TRACEBACK_FLAG, "--wide")  # the group's flags, given before or after a command
# Click >= 8.2 raises this for a group run without arguments; 8.1 prints the help itself.
_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", None)


class CheckedGroup(click.Group):
    """A group whose subcommands' options are checked before Click parses them."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """Find the subcommand, refusing an option of one value given twice (Click keeps
        the last: `--tile 8 --tile 32` measured TILE=32 alone, where -p refuses it), or an
        option taken as another's value. A group among the subcommands (`history`) checks
        its own, as it is a CheckedGroup too."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not isinstance(command, click.Group):
            refuse_repeated_options(command, rest)
            refuse_an_option_as_a_value(command, rest)
        return name, command, rest


class BoundaryGroup(CheckedGroup):
    """The one error boundary: errors become a one-line message and a typed exit code."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        """Run the CLI; Click's own usage errors also become one line and exit code 2.

        A --traceback or --wide after the subcommand is moved before it, where the group's
        option parses it; no arguments at all (or --traceback alone) print the help, exit 0.
        """
        args = hoist_group_flags(sys.argv[1:] if args is None else list(args))
        with guarded_stdout():
            try:
                code = self._main(args, prog_name, complete_var, **extra)
            except OutputNotWritten as exc:  # Click's help or version, to a full disk
                print_error(f"cudabench: error: {exc}")
                code = exc.exit_code
        return finish(code, standalone_mode)

    def _main(self, args: list[str], prog_name: str | None, complete_var: str | None,
              **extra: Any) -> Any:
        """Run Click's main; return the exit code of a Ctrl-C or of Click's usage errors."""
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Abort as abort:  # Click's word for Ctrl-C (or SIGTERM)
            stop = abort.__cause__ if isinstance(abort.__cause__, KeyboardInterrupt) \
                else KeyboardInterrupt()
            print_error(f"cudabench: {stopped_text(stop)}")
            return stopped_code(stop)
        except click.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            if _NO_ARGS is not None and isinstance(exc, _NO_ARGS) and ctx is not None:
                click.echo(ctx.get_help())  # `cudabench` (or a group) alone: its help
                return ExitCode.OK
            where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            print_error(f"cudabench: error: {_negative_value(exc, args) or exc.format_message()}"
                        f"{where}")
            return ExitCode.USAGE

    def invoke(self, ctx: click.Context) -> Any:
        try:
            code = super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (entry.py)
            print_error(f"cudabench: {stopped_text(stop)}")
            code = stopped_code(stop)
        except CudabenchError as exc:
            if ctx.params.get("traceback"):
                traceback_module.print_exc()
            print_error(f"cudabench: error: {exc}")
            code = exc.exit_code
        except Exception as exc:  # a bug: say so, and how to report it
            if ctx.params.get("traceback"):
                traceback_module.print_exc()
            gone = folder_gone()  # not a bug: the shell's folder was deleted under it
            if gone is not None:
                print_error(f"cudabench: error: {gone}")
                code = gone.exit_code
            else:
                print_error(
                    f"cudabench: internal error: {type(exc).__name__}: {exc}\n"
                    "This is a bug in cudabench: re-run with --traceback and report the "
                    "output.")
                code = ExitCode.INTERNAL
        ctx.exit(int(code or 0))


def _negative_value(exc: click.ClickException, args: list[str]) -> str | None:
    """Return what `--energy -1` (or `--energy=-1`) got wrong, or None: an option whose
    value is optional (--energy, --counters, --sanitize) reads a value starting with '-' as
    an option, and Click said "No such option '-1'"; none of them takes such a value.
    After '=' any such value is one (`--counters=-x`); after a space only a number is, as
    `--counters -x` may be a mistyped option."""
    name = getattr(exc, "option_name", None) or ""
    if not isinstance(exc, click.NoSuchOption) or not name.startswith("-"):
        return None
    for i, arg in enumerate(args):
        # Click names the first letter of `-0.5` or `-inf` as the option: "-0", "-i"
        option, value = arg.split("=", 1) if arg.startswith("--") and "=" in arg \
            else (args[i - 1] if i > 0 else "", arg)
        if value == name and "=" in arg or value.startswith(name) and _negative_number(value):
            if option.startswith("--") and "=" not in option:
                return f"{option} {value}: {option} takes no value starting with '-'"
    return None


def _negative_number(text: str) -> bool:
    """Whether text reads as a negative number: -1, -0.5, -.5, -1e3, -inf, -nan."""
    return re.fullmatch(r"-(?:[0-9.][0-9.eE+-]*|inf(?:inity)?|nan)", text, re.I) is not None


def refuse_an_option_as_a_value(command: click.Command, args: list[str]) -> None:
    """Raise a usage error where an option that takes a value is followed by another of
    the command's options: Click took it for the value (`--json --quiet` wrote the results
    to a file named --quiet, and --quiet was not applied). `--json=--quiet` is taken."""
    valued: set[str] = set()
    names: set[str] = {"-h", "--help"}  # Click's own, not among the command's params
    for option in command.params:
        if isinstance(option, click.Option):
            names.update((*option.opts, *option.secondary_opts))
            # a value that may be left out (--energy, --counters) never takes an option's
            if not option.is_flag and not option.count \
                    and not getattr(option, "_flag_needs_value", False):
                valued.update(option.opts)
    words = args[:args.index("--")] if "--" in args else args
    for word, following in zip(words, words[1:]):
        if word in valued and following in names:
            raise OptionMistake(f"{word} {following}: {word} takes a value, and "
                                   f"{following} is one of this command's options: give "
                                   f"{word} its value first")


class OptionMistake(click.UsageError):
    """A mistake in a command's options (not in the command's name: no "did you mean")."""


class RepeatedOption(OptionMistake):
    """An option of one value given more than once."""


# Options of one value that name what is measured or shown, which a user may repeat for
# several (as an op command's --variant): `ab --size 64 --size 96` measured 96 alone.
SEVERAL_EXPECTED = frozenset({"dtype", "size", "devices", "op", "variant", "gpu"})


def refuse_repeated_options(command: click.Command, args: list[str]) -> None:
    """Raise a usage error for an option naming what is measured or shown (a size, a type,
    the GPUs, a kernel parameter: one value, or one comma list that sweeps) given more than
    once in args (before `--`): `--tile 8 --tile 32` reads as a sweep and measured TILE=32
    alone. Other options keep Click's last-wins, the idiom of flags appended to shared
    ones (`$COMMON --warmup 1`)."""
    single: dict[str, click.Option] = {}
    for option in command.params:
        if isinstance(option, click.Option) and not option.multiple and not option.count \
                and not option.is_flag and (option.name in SEVERAL_EXPECTED
                                            or "sweep" in (option.help or "")):
            single.update((opt, option) for opt in option.opts)
    seen: dict[str, list[str]] = {}
    options: dict[str, click.Option] = {}
    words = list(args[:args.index("--")] if "--" in args else args)
    index = 0
    while index < len(words):
        opt, equals, value = words[index].partition("=")
        index += 1
        found = single.get(opt)
        word = words[index - 1]
        if found is None and not word.startswith("--") and word[:2] in single:
            # a short option with its value attached (`-s128`), as Click reads it
            opt, equals, value, found = word[:2], "=", word[2:], single[word[:2]]
        if found is None:
            continue
        if not equals and index < len(words) and not words[index].startswith("--"):
            value = words[index]  # its value (--counters' may be absent): not an option
            index += 1
        seen.setdefault(found.name or opt, []).append(f"{opt} {value}".strip())
        options[found.name or opt] = found
    for name, given in seen.items():
        if len(given) > 1:
            flag, metavar = given[0].split()[0], options[name].metavar or ""
            how = (f" (a comma list sweeps: {flag} A,B)" if "sweep" in (options[name].help or "")
                   else f" (several in one: {flag} {metavar})" if "," in metavar else "")
            raise RepeatedOption(f"{' and '.join(given)}: {flag} takes one value; give it "
                                 f"once{how}")


def hoist_group_flags(args: list[str]) -> list[str]:
    """Return args with every group flag (--traceback, --wide) before `--` taken out and
    put first (each once); group flags alone give no arguments (the help)."""
    end = args.index("--") if "--" in args else len(args)
    rest = [arg for arg in args[:end] if arg not in GROUP_FLAGS] + args[end:]
    if len(rest) == len(args):
        return args
    return [flag for flag in GROUP_FLAGS if flag in args[:end]] + rest if rest else []


class _GuardedStdout:
    """Standard output as the command writes it (click.echo, Click's own help and version,
    the Rich consoles): a reader gone (`| head`) drops the rest and the command's own exit
    code stands; an output that cannot be written (a full disk) is OutputNotWritten, exit
    2, not a crash. Its binary buffer is guarded alike: Click writes there when the stream's
    encoding is ASCII (PYTHONIOENCODING=ascii), through a text stream of its own."""

    def __init__(self, stream: IO[Any], text: _GuardedStdout | None = None) -> None:
        self.stream = stream
        self.text = text or self  # the guard of sys.stdout, which holds why it failed
        self.unwritable = ""  # why, once a write failed: every later one fails too

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    @property
    def buffer(self) -> _GuardedStdout:
        return _GuardedStdout(self.stream.buffer, self.text)  # type: ignore[attr-defined]

    def write(self, data: Any) -> int:
        self._refuse()
        try:
            return self.stream.write(data)
        except OSError as exc:
            self._failed(exc)
            return len(data)

    def flush(self) -> None:
        self._refuse()
        try:
            self.stream.flush()
        except OSError as exc:
            self._failed(exc)

    def _refuse(self) -> None:
        # Click probes a stream with a write it expects may fail, and goes on
        if self.text.unwritable:
            raise OutputNotWritten(self.text.unwritable)

    def _failed(self, exc: OSError) -> None:
        lead_nowhere(self.stream)
        if not isinstance(exc, BrokenPipeError):
            self.text.unwritable = f"cannot write to standard output: {exc.strerror or exc}"
            self._refuse()


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """Write standard output through _GuardedStdout while the command runs."""
    stream = sys.stdout
    if stream is None or isinstance(stream, _GuardedStdout):  # closed (`>&-`), or nested
        yield
        return
    sys.stdout = cast(TextIO, _GuardedStdout(stream))
    try:
        yield
    finally:
        sys.stdout = stream


def finish(code: Any, standalone_mode: bool) -> Any:
    """Return the exit code (standalone_mode False, as in tests) or exit with it."""
    if not standalone_mode:
        return code
    sys.exit(int(code or 0))


def print_error(message: str) -> None:
    from rich.text import Text

    from cudabench.common.text import escape_controls
    from cudabench.render.terminal import stderr_console

    # an error quotes what the user gave (a suite's op = "\x1b[2J..."): never a control
    # that reaches the terminal as one. A standard error that cannot be written (closed,
    # full) leaves the exit code to say it: the error must not become another one.
    with contextlib.suppress(CudabenchError, OSError):
        stderr_console().print(Text(escape_controls(message), style="red"), soft_wrap=True)
