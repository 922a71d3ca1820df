"""Command names of ops and the --kernels-dir folders of a command line: what the group
needs before any command is built (kept light: see cudabench/cli/group.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from cudabench.common.infiles import not_a_folder
from cudabench.ops import Op
from cudabench.ops.registry import reserve_commands

# name -> (module, attribute, the short help `--help` shows)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "ab": ("cudabench.cli.ab", "ab_command",
           "Measure each variant in both OLD_DIR (A) and NEW_DIR (B), interleaved."),
    "calibrate": ("cudabench.cli.calibrate", "calibrate_command",
                  "Run a suite several times into the history store, then show each "
                  "benchmark's between-run spread."),
    "compare": ("cudabench.cli.compare", "compare_command",
                "Compare two results files; exit 1 on a significant slowdown, a new "
                "failure, a benchmark missing from CURRENT or an incomplete CURRENT."),
    "history": ("cudabench.cli.history", "history",
                "Record results files and follow each benchmark across commits."),
    "info": ("cudabench.cli.commands", "info",
             "Show the GPU, its limits and clocks, and the driver, CUDA and PyCUDA versions."),
    "list": ("cudabench.cli.listing", "list_command",
             "List ops, their variants, parameters and files (no GPU needed)."),
    "plot": ("cudabench.cli.report", "plot_command",
             "Plot saved results (FILE...): throughput by size, and the roofline."),
    "report": ("cudabench.cli.report", "report_command",
               "Show saved results (FILE...) as the run's tables, without a GPU."),
    "run": ("cudabench.cli.commands", "run_command",
            "Run the suite in CONFIG (default: ./cudabench.toml or [tool.cudabench] in "
            "pyproject.toml)."),
    "workers": ("cudabench.cli.kept", "workers_command",
                "List the GPU workers --keep-workers kept, or end them (--stop)."),
}

reserve_commands(COMMANDS)  # an op named `history` is refused wherever ops are loaded


def command_name(op: Op) -> str:
    """Return the command that runs op."""
    return op.command or op.name


def command_names(ops: Mapping[str, Op]) -> list[str]:
    """Return the commands the ops give, each once."""
    return list(dict.fromkeys(command_name(op) for op in ops.values()))


def kernels_dirs_in(args: Sequence[str]) -> list[Path]:
    """Return the folders given with --kernels-dir in a command line not yet parsed (one
    that is none, or cannot be, the command refuses: check_folders)."""
    return [path for path in given_kernels_dirs(args) if not_a_folder(path) is None]


def given_kernels_dirs(args: Sequence[str]) -> list[Path]:
    """Return every --kernels-dir value of a command line not yet parsed, folder or not."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--kernels-dir" and i + 1 < len(args):
            found.append(args[i + 1])
        elif arg.startswith("--kernels-dir="):
            found.append(arg.split("=", 1)[1])
    # An empty value is no folder (Path("") is the current one): the command refuses it.
    # `--kernels-dir=~/kk`: no shell expands a `~` after `=`, so expand it here
    return [Path(text).expanduser() for text in found if text.strip()]
