"""Where `cudabench ab`'s wall time goes: each round's row phases (--profile-time's names),
summed per phase over the run, and the wall time; `ab` itself has no --profile-time.

    python3 scripts/wall-time/ab_phases.py OLD_DIR NEW_DIR [ab flags...]   # on a GPU
    python3 scripts/wall-time/ab_phases.py --fake OLD_DIR NEW_DIR [...]    # fake engine

The worker is spawned, so it imports this file as its main module: the wrapper around
run_jobs below is installed there too (outside the __main__ guard).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable

import cudabench.runner.execute as execute

_run_jobs = execute.run_jobs


def _profiled(plans, jobs, engine, on_result=None, on_phase=None):  # type: ignore[no-untyped-def]
    """run_jobs with every plan's --profile-time on; each row's phases go to stderr."""
    plans = [dataclasses.replace(p, insight=dataclasses.replace(p.insight, profile_time=True))
             for p in plans]

    def report(result):  # type: ignore[no-untyped-def]
        phases = " ".join(f"{name}={seconds:.4f}" for name, seconds in
                          sorted((result.phases or {}).items(), key=lambda item: -item[1]))
        print(f"PHASES {result.variant} {phases}", file=sys.stderr, flush=True)
        if on_result is not None:
            on_result(result)

    return _run_jobs(plans, jobs, engine, report, on_phase)


execute.run_jobs = _profiled


def main(argv: list[str]) -> int:
    from cudabench.cli import commands, main as cli_main

    if argv and argv[0] == "--fake":
        from cudabench.engines.fake_engine import FakeSpec

        argv = argv[1:]
        fake: Callable[[int], object] = lambda device: FakeSpec(device_index=device)
        commands.engine_spec = fake  # type: ignore[assignment]
    sys.argv = ["cudabench", "ab", *argv]
    started = time.perf_counter()
    try:
        cli_main()
    except SystemExit as exit_:
        print(f"WALL {time.perf_counter() - started:.2f} s, exit {exit_.code}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
