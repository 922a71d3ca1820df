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
    """A fake engine whose Ray actor's process dies, the first `kills` times an actor is
    handed its first benchmark, as when a node is lost (the actor's process is gone, not
    only its GPU worker). An actor compares the spec of its first run with its own (one
    that fails to start is another case: StartFailingSpec)."""

    marker_dir: str = ""
    kills: int = 1

    def __eq__(self, other: object) -> bool:
        """Die here, in an actor's run, until `kills` deaths are recorded."""
        import ray

        if ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None:
            folder = Path(self.marker_dir)
            deaths = len(list(folder.glob("death-*")))
            if deaths < self.kills:
                (folder / f"death-{deaths}").touch()
                os._exit(1)
        return super().__eq__(other)


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
class ActorRecordingSpec(FakeSpec):
    """A fake engine that writes a file for each Ray actor started with it, named by the
    GPU it was given."""

    out_dir: str = ""

    def restricted(self, index: int) -> FakeSpec:
        (Path(self.out_dir) / f"actor-{index}-{os.getpid()}").touch()
        return super().restricted(index)


@dataclass(frozen=True)
class SlowStartSpec(FakeSpec):
    """A fake engine whose Ray actor takes `seconds` to start (as a slow runtime
    environment or a node slow to import makes it), holding its GPU meanwhile."""

    seconds: float = 5.0

    def restricted(self, index: int) -> FakeSpec:
        import time

        time.sleep(self.seconds)
        return super().restricted(index)


@dataclass(frozen=True)
class StartFailingSpec(FakeSpec):
    """A fake engine whose Ray actor cannot start on the GPUs `failing` lists: its process
    dies there, or, with `raises`, its start raises ModuleNotFoundError (a node without
    cudabench)."""

    failing: tuple[int, ...] = ()
    raises: bool = False

    def restricted(self, index: int) -> FakeSpec:
        if index in self.failing:
            if self.raises:
                raise ModuleNotFoundError("No module named 'cudabench'")
            os._exit(1)
        return super().restricted(index)
