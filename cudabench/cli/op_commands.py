"""One command per op, built from the op registry: `cudabench matmul`, `cudabench softmax`.

Ops that share a command (transpose and transpose_inplace) are told apart by a flag
(`--inplace`); an op's shortcuts become options (`--tile` sets TILE). A user's op, declared
in a .py file of a --kernels-dir folder, gets its command the same way: the group looks for
--kernels-dir in the arguments before it looks the command up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cudabench.cli.boundary import GROUP_FLAGS
from cudabench.cli.names import command_name
from cudabench.cli.options import (
    Outputs,
    Placement,
    benchmark_options,
    build_requests,
    check_arch,
)
from cudabench.errors import OpFileError, UsageError
from cudabench.ops import Op
from cudabench.tuning.budget import parse_budget

if TYPE_CHECKING:  # the search loop (its strategies, the tuning cache) loads for --best only
    from cudabench.tuning.search import Settings

Runner = Callable[..., int]


def tune_settings(options: dict[str, Any], best: bool) -> Settings | None:
    """Return the search --strategy/--budget ask for (popped from options), or None."""
    strategy, budget = options.pop("strategy", None), options.pop("budget", None)
    no_cache = options.pop("no_tune_cache", False)
    if strategy is None and budget is None:
        if no_cache:
            raise UsageError("--no-tune-cache goes with --best --strategy or --budget")
        return None
    if not best:
        raise UsageError(f"{'--strategy' if strategy else '--budget'} chooses how --best "
                         "searches: add --best")
    from cudabench.tuning.search import Settings

    return Settings(strategy or "brute", parse_budget(budget), options["seed"],
                    use_cache=not no_cache)


def op_command(name: str, ops: Mapping[str, Op], run: Runner) -> click.Command | None:
    """Build the command `name` for the ops it runs, or None if no op has that command."""
    members = [op for op in ops.values() if command_name(op) == name]
    if not members:
        return None
    primary = next((op for op in members if not op.command_flag), members[0])
    flagged = {op.command_flag: op for op in members if op.command_flag}
    shortcuts = _shortcuts_of(members)

    def callback(device: int, json_path: Path | None, markdown_path: Path | None,
                 dry_run: bool, arch: str | None, best: bool, best_out: Path | None,
                 **options: Any) -> int:
        chosen = [flagged[flag] for flag in flagged if options.pop(f"flag_{flag}")]
        if len(chosen) > 1:
            raise UsageError(f"give at most one of {', '.join('--' + f for f in flagged)}")
        op = chosen[0] if chosen else primary
        values = {param: (flag_of(option), options.pop(f"short_{option}"))
                  for option, param in shortcuts.items()}
        if best_out is not None and not best:
            raise UsageError("--best-out needs --best")
        check_arch(arch, dry_run)  # here: a --best search never reaches run_and_render
        if best and options["rounds"] != 1:
            raise UsageError("--best measures each configuration once and re-measures close "
                             "calls head to head, interleaved: use it without --rounds")
        outputs = Outputs.of(options, json_path=json_path, markdown_path=markdown_path,
                             best=best, best_out=best_out)
        settings = tune_settings(options, best)
        if settings is not None:
            if dry_run:
                raise UsageError("--dry-run shows a plan; a --best search has none to show: "
                                 "drop --strategy/--budget")
            from cudabench.cli.tune import run_tuning

            return run_tuning(op.name, values, options, device, outputs,
                              Placement.of(options, device), settings)
        requests = build_requests(op.name, values, **options)
        return run(requests, device, outputs, dry_run=dry_run, arch=arch,
                   placement=Placement.of(options, device))

    function: Callable[..., int] = callback
    for flag, op in flagged.items():
        function = click.option(f"--{flag}", f"flag_{flag}", is_flag=True,
                                help=f"Run {op.name}: {op.summary}.")(function)
    for option, param in shortcuts.items():
        function = click.option(flag_of(option), f"short_{option}",
                                metavar="INT[,INT...]",
                                help=f"Set the {param} parameter (as -p {param}=...); a list "
                                "or range sweeps it."
                                )(function)
    function = benchmark_options(primary)(function)
    summary = primary.summary + "".join(f"; --{f}: {op.summary}" for f, op in flagged.items())
    # an op of one's own lists its variants only with its folder
    listing = ("cudabench list" if primary.origin is None or not primary.origin.endswith(".py")
               else "cudabench list --kernels-dir FOLDER")
    command = click.command(name, help=f"{summary}. Variants: `{listing}`.",
                            short_help=primary.summary)(function)
    _refuse_clashes(command, members)
    return command


def refuse_clashes_of(ops: Mapping[str, Op]) -> None:
    """Raise OpFileError where an op's shortcut or command flag takes an option its command
    has already, for every op: `list` and the Python API, which build no command, refuse
    such an op file as the command line does."""
    for name in sorted({command_name(op) for op in ops.values()}):
        op_command(name, ops, lambda *args, **kwargs: 0)


def flag_of(option: str) -> str:
    """Return the command-line flag of a shortcut's option name (block_rows: --block-rows)."""
    return f"--{option.replace('_', '-')}"


def _shortcuts_of(members: Sequence[Op]) -> dict[str, str]:
    """Return the shortcuts of the ops that share a command, option to parameter; raise
    OpFileError where two of them spell one parameter otherwise, or one option sets two
    parameters: the values were kept by parameter, the last option overwriting the first
    (check_op refuses the same within one op)."""
    shortcuts: dict[str, str] = {}
    for op in members:
        for option, param in op.shortcuts.items():
            other = next((o for o, p in shortcuts.items() if (o == option) != (p == param)),
                         None)
            if other is not None:
                raise OpFileError(f"{op.origin}: op {op.name!r}'s shortcut {option!r} sets "
                                  f"{param}, another op of the `{command_name(op)}` command's "
                                  f"{other!r} sets {shortcuts[other]}; give each parameter "
                                  "one option")
            shortcuts[option] = param
    return shortcuts


HELP_FLAGS = ("-h", "--help")  # the group's help_option_names: every command has them


def _refuse_clashes(command: click.Command, members: Sequence[Op]) -> None:
    """Raise OpFileError where an op's shortcut or command flag takes an option the command
    has already (shortcuts = {"seed": "BLOCK"} made --seed set BLOCK, the inputs' seed
    left as it was; one called help silently replaced --help), or a flag of the group,
    which the boundary takes wherever it stands (--traceback 64: "unexpected argument 64")."""
    seen: set[str] = {*HELP_FLAGS, *GROUP_FLAGS}
    for param in command.params:
        for option in param.opts:
            if option in seen:
                origin = next((op.origin for op in members
                               if option in (*map(flag_of, op.shortcuts),
                                             f"--{op.command_flag}")), members[0].origin)
                raise OpFileError(f"{origin}: a shortcut or command flag takes {option}, "
                                  "which cudabench already has; name it otherwise")
            seen.add(option)
