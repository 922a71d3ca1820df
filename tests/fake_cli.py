"""The command line on the fake engine, run as a process: `python tests/fake_cli.py matmul
--size 64`. The commands open `cudabench.cli.commands.engine_spec` (tests replace it, as
conftest's use_fake does); a process started by a terminal (tmux) gets it replaced here.
FAKE_GPUS (an environment variable) gives the fake host that many GPUs.
"""

import os

from cudabench.cli import commands
from cudabench.engines.fake_engine import FakeSpec
from cudabench.entry import main  # the console script's: its SIGTERM handler too

if __name__ == "__main__":  # workers are spawned: they import this file, and must not run it
    gpus = int(os.environ.get("FAKE_GPUS", "1"))
    commands.engine_spec = lambda device: FakeSpec(device_index=device, device_count=gpus)
    main()
