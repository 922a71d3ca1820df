"""Fake-engine specs for the Ray tests, importable by Ray's worker processes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cudabench.measure.fake_engine import FakeSpec


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
