"""The fake engine's command line with one configuration that races: TILE=8 builds right
the first time and wrong every time after (FLAKY_COUNT names the file counting its builds),
so a --best sweep or search passes it and its head-to-head finds it wrong; FLAKY_AFTER
builds right first (1 unless set)."""

import os
from pathlib import Path

from cudabench.cli import commands
from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.entry import main

COUNT, compile_once = os.environ["FLAKY_COUNT"], FakeEngine.compile


def compile(self, variant, defines, *args, **kwargs):
    compiled = compile_once(self, variant, defines, *args, **kwargs)
    if str(defines.get("TILE")) == "8":  # right on its first build, wrong after (a race)
        n = int(Path(COUNT).read_text()) if os.path.exists(COUNT) else 0
        Path(COUNT).write_text(str(n + 1))
        if n >= int(os.environ.get("FLAKY_AFTER", "1")):
            for kernel in compiled.functions:
                kernel.fault = Fault.WRONG_ELEMENT
    return compiled


FakeEngine.compile = compile
if __name__ == "__main__":  # FAKE_GPUS: that many fake GPUs, as tests/fake_cli.py
    gpus = int(os.environ.get("FAKE_GPUS", "1"))
    commands.engine_spec = lambda device: FakeSpec(device_index=device, device_count=gpus)
    main()
