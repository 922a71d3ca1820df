"""An empty value is not a value: `--size ''`, `--kernels-dir ''` are usage errors; nor is a
file's name that ends with a slash (`--markdown notes.txt/`).

Click would pass "" on (a Path of "" even reads as the current folder), and a Path drops a
trailing slash (the user named a folder; `notes.txt` was written over), so each option and
argument of a command is given a check of its raw command-line value before conversion.
That check also expands a path's leading `~`: the shell does not after `=` (`--json=~/r.json`),
and a folder named `~` would be made in the current one.
"""

from __future__ import annotations

import os
from typing import Any

import click
from click.core import ParameterSource

from cudabench.common.outfiles import names_a_folder


def refuse_empty(command: click.Command) -> click.Command:
    """Make every value-taking parameter of command (and its subcommands) refuse ""."""
    if getattr(command, "_refuses_empty", False):
        return command
    setattr(command, "_refuses_empty", True)  # noqa: B010 (a mark on a Click object)
    for param in command.params:
        if isinstance(param, click.Option) and (param.is_flag or param.count):
            continue
        setattr(param, "consume_value", _checked(param))  # noqa: B010
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            refuse_empty(sub)
    return command


def _checked(param: click.Parameter) -> Any:
    """Return param.consume_value, refusing an empty value given on the command line."""
    original = param.consume_value

    def consume_value(ctx: click.Context, opts: Any) -> tuple[Any, ParameterSource]:
        value, source = original(ctx, opts)
        if isinstance(param.type, click.Path):
            value = _expand_user(value)
        if source is ParameterSource.COMMANDLINE and _empty(value):
            raise click.BadParameter(f"an empty value is not one: {_instead(param)}",
                                     ctx=ctx, param=param)
        if source is ParameterSource.COMMANDLINE and _names_a_file(param):
            for text in value if isinstance(value, (list, tuple)) else (value,):
                why = names_a_folder(text) if isinstance(text, str) else None
                if why is not None:
                    raise click.BadParameter(why, ctx=ctx, param=param)
        return value, source

    return consume_value


def _instead(param: click.Parameter) -> str:
    """Say what to give instead of an empty value: an argument (`run ''`) is no option to
    leave out, and a required one has no default."""
    if isinstance(param, click.Option):
        return "give a value, or leave the option out for its default"
    if param.required:
        return "give a value"
    return f"give a value, or leave {param.human_readable_name} out for its default"


def _names_a_file(param: click.Parameter) -> bool:
    """Whether param takes a file's path (an output, a results file, a suite): a Path whose
    name is no folder's (--kernels-dir, ab's OLD_DIR and NEW_DIR take folders)."""
    return (isinstance(param.type, click.Path) and param.name is not None
            and not param.name.endswith(("dir", "dirs")))


def _expand_user(value: Any) -> Any:
    """Return a path's text (or each of several) with a leading `~` made the home folder."""
    if isinstance(value, str):
        return os.path.expanduser(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_expand_user(item) for item in value)
    return value


def _empty(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return any(_empty(item) for item in value)
    return False
