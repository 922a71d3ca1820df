"""The command line on the fake engine, run as a process: `python tests/fake_cli.py matmul
--size 64`. The commands open `cudabench.cli.commands.engine_spec` (tests replace it, as
conftest's use_fake does); a process started by a terminal (tmux) gets it replaced here.
"""

from cudabench.cli import commands
from cudabench.engines.fake_engine import FakeSpec
from cudabench.entry import main  # the console script's: its SIGTERM handler too

if __name__ == "__main__":  # workers are spawned: they import this file, and must not run it
    commands.engine_spec = lambda device: FakeSpec(device_index=device)
    main()
