"""The command line on the fake engine, run as a process: `python tests/fake_cli.py matmul
--size 64`. The commands open `cudabench.cli.commands.engine_spec` (tests replace it, as
conftest's use_fake does); a process started by a terminal (tmux) gets it replaced here.
FAKE_GPUS (an environment variable) gives the fake host that many GPUs, of which
CUDA_VISIBLE_DEVICES (a list of indices) shows some, as on a real host; FAKE_SEED seeds its
noise (two runs with different seeds are not copies of one run to `compare`).
Its times model a launch and the bytes of its buffers, not arithmetic: a matmul beyond a
few hundred a side outruns the fake GPU's 1.5 TFLOP/s roof and its rows read SUSPECT.
"""

import os

from cudabench.cli import commands, early
from cudabench.engines.fake_engine import FakeSpec
from cudabench.engines.visibility import visible_entries
from cudabench.entry import main  # the console script's: its SIGTERM handler too
from cudabench.errors import UsageError

if __name__ == "__main__":  # workers are spawned: they import this file, and must not run it
    gpus = int(os.environ.get("FAKE_GPUS", "1"))
    try:
        visible = visible_entries(physical=gpus)  # the GPUs shown, of those the host has
    except UsageError:  # a GPU listed twice: the command says so
        visible = None
    if visible is not None:
        gpus = len(visible)
    seed = int(os.environ.get("FAKE_SEED", "0"))
    commands.engine_spec = lambda device: FakeSpec(device_index=device, device_count=gpus,
                                                   seed=seed)
    # the worker a --keep-workers run starts before its commands are imported: fake too
    early.early_spec = commands.engine_spec
    main()
