"""Kernel folders and op files sent to the Ray actors, written out where a node lacks them;
Ctrl-C while benchmarks are out on the actors."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from cudabench.runner.ray_cluster import bundle, place_files
from cudabench.planning.plan import Request, make_plan
from cudabench.common.relocation import ENVIRONMENT_VARIABLE, local_path

EXAMPLE = Path(__file__).parents[1] / "examples" / "softmax"


def test_a_users_op_and_its_kernels_travel_and_load_where_the_folder_is_gone(
        tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    plan = make_plan(Request(op="softmax", size="64x32", kernels_dirs=(folder,)))
    files = bundle([plan])
    op_file = next(path for path in files if path.endswith(".py"))
    assert any(path.endswith(".cu") for path in files)
    # On the node the folder is the planner's and is the same: nothing is written.
    assert place_files(files) == {}
    # A node without the folder: it is written out, and the op loads from the copy.
    shutil.rmtree(folder)
    moved = place_files(files)
    assert set(moved) == {str(folder)}  # the op file, its kernels' subfolder with it
    assert (Path(moved[str(folder)]) / "softmax" / "naive.cu").is_file()
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, json.dumps(moved))
    copy = local_path(Path(op_file))
    assert copy.parent == Path(moved[str(folder)]) and copy.read_text() == files[op_file]
    from cudabench.ops.registry import _import_file

    for name in [n for n in sys.modules if n.startswith("cudabench.ops.user.softmax")]:
        monkeypatch.delitem(sys.modules, name)  # as in the task's fresh process
    module = _import_file(Path(op_file))  # the original path names it; the copy is read
    assert module.__file__ == str(copy)


def test_an_ops_helper_modules_travel_and_import_where_the_folder_is_gone(
        tmp_path, monkeypatch):
    # the op file imports _ref.py beside it, which imports a _helpers/ package: on a node
    # without the folder, the copy must hold them where the imports look
    from cudabench.ops.registry import _import_file, forget_file_ops

    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    (folder / "_ref.py").write_text("from _helpers.body import SCALE\n")
    (folder / "_helpers").mkdir()
    (folder / "_helpers" / "__init__.py").write_text("")
    (folder / "_helpers" / "body.py").write_text("SCALE = 3\n")
    op_file = folder / "softmax.py"
    op_file.write_text(op_file.read_text().replace("import numpy as np\n",
                                                   "import numpy as np\n\nimport _ref\n", 1))
    forget_file_ops()
    plan = make_plan(Request(op="softmax", size="64x32", kernels_dirs=(folder,)))
    files = bundle([plan])
    assert str((folder / "_helpers" / "body.py").resolve()) in files
    forget_file_ops()  # as in the task's fresh process
    shutil.rmtree(folder)
    moved = place_files(files)
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, json.dumps(moved))
    try:
        module = _import_file(op_file)
        assert module._ref.SCALE == 3
        body, = [m for n, m in sys.modules.items() if n.endswith("._helpers.body")]
        assert body.__file__.startswith(moved[str(folder)]), body.__file__
    finally:
        forget_file_ops()


def test_a_folder_that_differs_on_the_node_is_replaced_by_the_planners(tmp_path):
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "a.cu").write_text("// old")
    moved = place_files({str(folder / "a.cu"): "// new"})
    assert (Path(moved[str(folder)]) / "a.cu").read_text() == "// new"
    assert (folder / "a.cu").read_text() == "// old"  # the node's own file is left alone


class InterruptedRay:
    """Ray's calls as RayCluster.run makes them (a two-GPU cluster, one actor per GPU),
    with Ctrl-C during the first wait."""

    def __init__(self) -> None:
        self.cancelled: list[object] = []
        self.killed: list[object] = []
        self.calls: list[str] = []
        self.shut_down = False
        self.waited = False

    def put(self, value):
        return value

    def cluster_resources(self):
        return {"GPU": 2.0, "CPU": 8.0}

    def remote(self, **options):
        ray = self

        def wrap(cls):
            class Method:
                def __init__(self, actor: str, name: str) -> None:
                    self.actor, self.name = actor, name

                def remote(self, *args):
                    ray.calls.append(f"{self.actor}.{self.name}")
                    return f"{self.actor}.{self.name}-{len(ray.calls)}"

            class Actor:
                count = 0

                def __init__(self) -> None:
                    Actor.count += 1
                    self.name = f"actor-{Actor.count}"
                    self.run, self.close = Method(self.name, "run"), Method(self.name, "close")
                    self.ready = Method(self.name, "ready")

            class ActorClass:
                @staticmethod
                def remote(*args):
                    return Actor()
            return ActorClass
        return wrap

    def wait(self, refs, num_returns, timeout):
        if not self.waited:  # first, every actor answers that it has started
            self.waited = True
            return list(refs), []
        raise KeyboardInterrupt

    def cancel(self, ref, force=False):
        self.cancelled.append(ref)

    def kill(self, actor, no_restart):
        self.killed.append(actor.name)

    def get(self, ref, timeout=None):
        assert ".ready-" in ref, "nothing is waited for after Ctrl-C"
        return True

    def shutdown(self):
        self.shut_down = True


def test_ctrl_c_cancels_every_call_still_out_ends_the_actors_and_stops_the_ray_it_started():
    from cudabench.runner.ray_cluster import RayCluster
    from cudabench.engines.fake_engine import FakeSpec

    plans = [make_plan(Request(op="dot", size=size)) for size in ("100", "200", "300")]
    ray = InterruptedRay()
    rows = []
    cluster = RayCluster(ray, started=True, address="ray")
    with pytest.raises(KeyboardInterrupt):
        cluster.run(plans, FakeSpec(), rows.append)
    # Two GPUs: two actors, started, then one benchmark each in flight; the third was never
    # handed out.
    assert ray.calls == ["actor-1.ready", "actor-2.ready", "actor-1.run", "actor-2.run"]
    assert ray.cancelled == ["actor-1.run-3", "actor-2.run-4"] and rows == []
    assert ray.killed == ["actor-1", "actor-2"]
    cluster.close()  # as the command does, whatever happened
    assert ray.shut_down


def test_an_actor_hands_a_benchmark_back_only_before_its_first_row(monkeypatch):
    # hand_back on every attempt: a fresh worker dead before it opened the GPU after some
    # of the benchmark's rows had streamed (heard) sent the benchmark back whole, to run
    # again on another GPU, its first rows twice
    from cudabench.runner.ray_cluster import GpuRunner
    from cudabench.runner.workers import DiedBeforeOpening

    asked = []

    class Worker:
        def run(self, jobs, on_result, on_start, first, hand_back):
            asked.append(hand_back)
            if len(asked) == 1:  # the first job's row, then the process dies
                on_result("row 0")
                return ["row 0"]
            if hand_back:
                raise DiedBeforeOpening("exit code -11")
            return ["ERROR row 1"]  # a job never begun: named as the worker's death

    runner = GpuRunner.__new__(GpuRunner)
    runner.units, runner.worker = [["job 0", "job 1"]], Worker()
    monkeypatch.setattr("cudabench.runner.ray_cluster.remaining",
                        lambda jobs, rows: jobs[len(rows):])
    rows, _ = runner._run(0)
    assert rows == ["row 0", "ERROR row 1"] and asked == [True, False]
