"""Fake-engine specs for tests whose engines open in other processes (worker processes,
Ray's workers): importable there by module name."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from cudabench.engines.fake_engine import FakeSpec


@dataclass(frozen=True)
class TaskKillingSpec(FakeSpec):
    """A fake engine whose Ray task process dies, the first `kills` times it is set up,
    as when a node is lost (the task's process is gone, not only its GPU worker)."""

    marker_dir: str = ""
    kills: int = 1

    def restricted(self, index: int) -> FakeSpec:
        """Die here (the Ray task's own process) until `kills` deaths are recorded."""
        folder = Path(self.marker_dir)
        deaths = len(list(folder.glob("death-*")))
        if deaths < self.kills:
            (folder / f"death-{deaths}").touch()
            os._exit(1)
        return super().restricted(index)


@dataclass(frozen=True)
class EnvironmentRecordingSpec(FakeSpec):
    """A fake engine that writes the environment its worker process started with."""

    out_dir: str = ""

    def open(self):
        names = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS")
        path = Path(self.out_dir) / f"env-{self.device_index}-{os.getpid()}.json"
        path.write_text(json.dumps({name: os.environ.get(name) for name in names}))
        return super().open()


@dataclass(frozen=True)
class SlowStartSpec(FakeSpec):
    """A fake engine whose Ray actor takes `seconds` to start (as a slow runtime
    environment or a node slow to import makes it), holding its GPU meanwhile."""

    seconds: float = 5.0

    def restricted(self, index: int) -> FakeSpec:
        import time

        time.sleep(self.seconds)
        return super().restricted(index)
