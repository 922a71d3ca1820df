"""Start the GPU worker of a plain benchmark run before the command line is even parsed.

A run's worker process takes about a second to be ready (its interpreter, NumPy, PyCUDA,
the CUDA context); the command's own process spends half of that importing Click, Rich
and the commands before `measure` starts one (runner/starting.prestart). Started from the
raw arguments instead, the two overlap. Only a plain run on one GPU qualifies, read
conservatively: anything else (help, a dry run, several GPUs, a cluster, an unreadable
--device) leaves the start to `measure`, which reuses a worker started here for the same
engine and ends one nobody used.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudabench.engines.protocol import EngineSpec

BENCHMARK_COMMANDS = frozenset({"matmul", "transpose", "dot", "run"})
GROUP_FLAGS = frozenset({"--traceback", "--wide"})  # the group's own, before the command
KEEP_WORKERS_ENV = "CUDABENCH_KEEP_WORKERS"  # cli/options.py's, not imported: kept light
NOT_ONE_GPU_RUN = frozenset({"-h", "--help", "--dry-run", "--devices", "--cluster",
                             "--replicate", "--version", "--arch"})


def early_device(args: Sequence[str]) -> int | None:
    """Return the GPU index a plain one-GPU run of args will use, else None."""
    rest = list(args)
    while rest and rest[0] in GROUP_FLAGS:
        rest.pop(0)
    if not rest or rest[0] not in BENCHMARK_COMMANDS:
        return None
    if any(arg.partition("=")[0] in NOT_ONE_GPU_RUN for arg in rest[1:]):
        return None
    value = _value(rest[1:], "--device")
    if value is None:
        return 0
    return int(value) if value.isascii() and value.isdecimal() else None


def early_keep(args: Sequence[str]) -> float | None:
    """Return --keep-workers' seconds in args, else CUDABENCH_KEEP_WORKERS's (0 without
    either), None if unreadable."""
    value = _value(args, "--keep-workers")
    if value is None:
        value = os.environ.get(KEEP_WORKERS_ENV, "").strip() or None
    if value is None:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0 <= seconds <= 86400 else None


def _value(args: Sequence[str], flag: str) -> str | None:
    """Return the value of flag's last use in args (`--flag V` or `--flag=V`; "" when it
    has none), None where flag is not given."""
    found = None
    for index, arg in enumerate(args):
        name, _, attached = arg.partition("=")
        if name == flag:
            found = attached or (args[index + 1] if index + 1 < len(args) else "")
    return found


def start_early(args: Sequence[str]) -> None:
    """Prestart the worker a plain one-GPU run of args will take (see the module): with
    --keep-workers, the connection to its kept worker."""
    device, keep_s = early_device(args), early_keep(args)
    if device is None or keep_s is None:
        return
    try:
        from cudabench.runner.starting import keep_across_commands, prestart

        keep_across_commands(keep_s)
        prestart(early_spec(device))
    except Exception:  # only a head start: `measure` starts the worker and says what fails
        return


def early_spec(device: int) -> EngineSpec:
    """Return the engine a run on device opens (cli/commands.engine_spec's, tests swap in a
    fake), imported without the commands."""
    from cudabench.engines.pycuda_engine import PycudaSpec

    return PycudaSpec(device)
