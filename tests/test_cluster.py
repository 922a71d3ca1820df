"""--cluster ray on a CPU machine: a local Ray with two logical GPUs, real worker
processes (not local mode), fake engines in the tasks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import invoke

from cudabench.errors import UsageError
from cudabench.results import Status, load_results

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install ray: the `ray` extra)")

TESTS = Path(__file__).parent
QUICK = ("--no-batch", "--warmup", "0", "--max-time", "0.02")  # correctness, not timing
SUITE = """
[timing]
warmup = 0
min_samples = 5
max_time = 0.05

[[benchmark]]
op = "matmul"
sizes = ["24", "17x9x33"]
variants = ["naive", "tiled"]

[[benchmark]]
op = "transpose"
sizes = ["40", "33x7", "64"]

[[benchmark]]
op = "dot"
sizes = ["1000", "3", "4097"]
"""


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of two logical GPUs; its workers import the tests' fake specs."""
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_gpus=2, num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


def use_spec(monkeypatch, spec) -> None:
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: spec)


def test_a_suite_runs_as_ray_tasks_on_both_gpus(local_ray, monkeypatch, tmp_path):
    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec())
    suite = tmp_path / "cudabench.toml"
    suite.write_text(SUITE)
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--cluster", "ray", "--json", out, "--no-batch")
    assert done.exit_code == 0, done.stderr
    loaded = load_results(out)
    found: dict[tuple, set] = {}
    for r in loaded.benchmarks:
        found.setdefault((r.op, tuple(r.shape)), set()).add(r.device.index)
    assert len(found) == 8
    assert all(len(gpus) == 1 for gpus in found.values())  # one benchmark, one GPU
    assert {d.index for d in loaded.devices} == {0, 1}  # Ray used both logical GPUs
    assert all(r.status in (Status.PASS, Status.REF) for r in loaded.benchmarks)
    assert loaded.metadata["complete"] is True


def test_one_warm_worker_per_gpu_serves_every_benchmark(local_ray, monkeypatch, tmp_path):
    """Eight benchmarks on two GPUs open two GPU workers, not eight: each GPU's actor keeps
    its worker between benchmarks (a Ray task per benchmark started one each)."""
    from ray_specs import EnvironmentRecordingSpec

    use_spec(monkeypatch, EnvironmentRecordingSpec(out_dir=str(tmp_path)))
    suite = tmp_path / "cudabench.toml"
    suite.write_text(SUITE)
    done = invoke("run", suite, "--cluster", "ray", "--json", tmp_path / "r.json", "--no-batch")
    assert done.exit_code == 0, done.stderr
    opened = list(tmp_path.glob("env-*.json"))
    assert 1 <= len(opened) <= 2, [p.name for p in opened]
    assert len(load_results(tmp_path / "r.json").benchmarks) >= 8


def test_a_search_keeps_its_actors_from_one_hand_out_to_the_next(local_ray, monkeypatch,
                                                                    tmp_path):
    """A search hands out a batch after another, then --best's head-to-head: each ran on
    actors started afresh (a Ray worker and a GPU worker per GPU each time: 26 s where
    --devices all took 11 s); they stay warm over the command and end with it."""
    import time

    from ray_specs import EnvironmentRecordingSpec

    from cudabench.runner.ray_cluster import RayCluster

    runs = []
    running = RayCluster.run

    def run(self, plans, *args, **kwargs):
        runs.append(len(plans))
        return running(self, plans, *args, **kwargs)

    monkeypatch.setattr(RayCluster, "run", run)
    use_spec(monkeypatch, EnvironmentRecordingSpec(device_count=2, out_dir=str(tmp_path)))
    done = invoke("dot", "--size", "100000", "--variant", "atomic", "--strategy", "random",
                  "--budget", "40", "--best", "--no-tune-cache", "--cluster", "ray", *QUICK)
    assert done.exit_code == 0, done.stderr
    assert len(runs) >= 3, runs  # two hand-outs (32 and 8) and the head-to-head
    opened = list(tmp_path.glob("env-*.json"))
    assert 1 <= len(opened) <= 2, [p.name for p in opened]  # a GPU worker per GPU, once
    deadline = time.monotonic() + 30  # and the command's end frees both GPUs
    while ray.available_resources().get("GPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("GPU", 0) == 2


def test_a_gpu_given_up_in_a_search_is_said_and_left_out_of_the_next_hand_out(
        local_ray, monkeypatch, tmp_path):
    # with the warm actors holding the good GPU, each later hand-out's fresh actor found
    # the one given up (the only GPU free) and failed on it twice again
    from ray_specs import ActorRecordingSpec

    use_spec(monkeypatch, ActorRecordingSpec(device_count=2, crashing_devices=(1,),
                                             out_dir=str(tmp_path)))
    done = invoke("dot", "--size", "100000", "--variant", "atomic", "--strategy", "random",
                  "--budget", "40", "--best", "--no-tune-cache", "--cluster", "ray", *QUICK)
    assert done.exit_code == 0, done.stderr
    # two actors on GPU 1, whose workers died: given up, once
    assert len(list(tmp_path.glob("actor-1-*"))) == 2
    # and said, as --devices says it (a search's notes were dropped)
    assert " ".join(done.stderr.split()).count("note: a GPU of the cluster was given up (its "
                                               "fresh worker process died") == 1, done.stderr


def test_a_gpu_held_by_another_job_holds_no_benchmark(local_ray, monkeypatch, tmp_path):
    """Another job holds one of the two GPUs: every benchmark runs on the free one, none
    waits for an actor that cannot start (the held GPU is freed only after a minute)."""
    import time

    from cudabench.engines.fake_engine import FakeSpec

    @ray.remote(num_gpus=1)
    class Holder:
        def hold(self, seconds: float) -> None:
            time.sleep(seconds)

    holder = Holder.remote()
    holder.hold.remote(60)
    try:
        use_spec(monkeypatch, FakeSpec())
        out = tmp_path / "r.json"
        started = time.monotonic()
        done = invoke("dot", "--size", "1000,2000,3000,4000", "--cluster", "ray", "--json", out,
                      *QUICK)
        took = time.monotonic() - started
        assert done.exit_code == 0, done.stderr
        assert took < 40, f"a benchmark waited for the held GPU ({took:.0f} s)"
        rows = load_results(out).benchmarks
        assert {tuple(r.shape) for r in rows} == {(1000,), (2000,), (3000,), (4000,)}
        assert len({r.device.index for r in rows}) == 1  # the free GPU ran them all
    finally:
        ray.kill(holder)  # its sleep too


def test_a_run_whose_every_gpu_is_held_says_it_waits(local_ray, monkeypatch, tmp_path):
    # it waited for a GPU without a word, for as long as the other job held them
    import threading
    import time

    from cudabench.engines.fake_engine import FakeSpec

    @ray.remote(num_gpus=2)
    class Holder:
        def hold(self, seconds: float) -> None:
            time.sleep(seconds)

    holder = Holder.remote()
    ray.get(holder.__ray_ready__.remote())  # it holds both GPUs now
    holder.hold.remote(60)
    freed = threading.Timer(6, ray.kill, (holder,))  # then the GPUs are free
    monkeypatch.setattr("cudabench.runner.ray_cluster.WAITING_NOTE_S", 2.0)
    use_spec(monkeypatch, FakeSpec())
    try:
        freed.start()
        done = invoke("dot", "--size", "1000", "--cluster", "ray", *QUICK)
    finally:
        freed.cancel()
        ray.kill(holder)
    assert done.exit_code == 0, done.stderr
    assert "cudabench: waiting for a GPU of the Ray cluster (1 benchmark(s) queued, none " \
        "running for 2 s): other work holds its GPUs" in done.stderr


def test_actors_slow_to_start_are_not_blamed_on_other_work(local_ray, monkeypatch):
    # the note said "other work holds its GPUs" of a cluster whose GPUs were free
    from ray_specs import SlowStartSpec

    monkeypatch.setattr("cudabench.runner.ray_cluster.WAITING_NOTE_S", 1.0)
    use_spec(monkeypatch, SlowStartSpec(seconds=4.0))
    done = invoke("dot", "--size", "1000", "--cluster", "ray", *QUICK)
    assert done.exit_code == 0, done.stderr
    assert "none running for 1 s): 1 GPU(s) free, its actors still starting" in done.stderr
    assert "other work holds" not in done.stderr


def test_a_task_whose_process_dies_is_retried_once(local_ray, monkeypatch, tmp_path):
    from ray_specs import TaskKillingSpec

    use_spec(monkeypatch, TaskKillingSpec(marker_dir=str(tmp_path), kills=1))
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000", "--cluster", "ray", "--json", out, "--no-batch",
                  "--warmup", "0", "--max-time", "0.05")
    assert done.exit_code == 0, done.stderr
    assert len(list(tmp_path.glob("death-*"))) == 1  # it died once, then ran
    assert all(r.status in (Status.PASS, Status.REF) for r in load_results(out).benchmarks)


def test_a_task_lost_twice_is_reported_and_the_file_stays_valid(local_ray, monkeypatch,
                                                                 tmp_path):
    from ray_specs import TaskKillingSpec

    use_spec(monkeypatch, TaskKillingSpec(marker_dir=str(tmp_path), kills=2))
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000", "--cluster", "ray", "--json", out, "--no-batch",
                  "--warmup", "0", "--max-time", "0.05")
    assert done.exit_code == 2
    rows = load_results(out).benchmarks
    assert rows and all(r.status is Status.ERROR for r in rows)
    assert all("lost twice (retried once)" in r.error for r in rows), rows[0].error


def test_a_gpu_that_cannot_be_opened_is_given_up_and_said(local_ray, monkeypatch, tmp_path):
    # its benchmarks were ERROR rows whose reason was Ray's coloured header
    # ("\x1b[36mray::GpuRunner.run()..."), and the GPU was never given up
    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec(device_count=2, lost_devices=(1,)))
    out = tmp_path / "r.json"
    # long enough that the second GPU's actor starts before the first ran out of work
    done = invoke("dot", "--size", "1000..8000:+1000", "--variant", "atomic", "--no-vendor",
                  "--cluster", "ray", "--json", out, "--no-batch", "--warmup", "0",
                  "--max-time", "0.5", "--min-samples", "5000")
    assert done.exit_code == 0, done.stderr
    assert "a GPU of the cluster was given up (it could not be opened: fake GPU 1 fell off " \
        "the bus)" in done.stderr
    rows = [r for r in load_results(out).benchmarks if r.variant == "atomic"]
    assert len(rows) == 8 and all(r.status is Status.PASS for r in rows)


def test_a_gpu_whose_workers_die_as_they_open_it_is_given_up(local_ray, monkeypatch,
                                                              tmp_path):
    # it was never given up: each benchmark it took came back ERROR ("GPU 1: its worker
    # process died (exit code -11); the jobs after it ran in a fresh worker"), exit 2
    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec(device_count=2, crashing_devices=(1,)))
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000..8000:+1000", "--variant", "atomic", "--no-vendor",
                  "--cluster", "ray", "--json", out, "--no-batch", "--warmup", "0",
                  "--max-time", "0.5", "--min-samples", "5000")
    assert done.exit_code == 0, done.stderr
    assert "a GPU of the cluster was given up (its fresh worker process died before it " \
        "opened the GPU (exit code -11))" in " ".join(done.stderr.split())
    rows = [r for r in load_results(out).benchmarks if r.variant == "atomic"]
    assert len(rows) == 8 and all(r.status is Status.PASS for r in rows)
    assert {r.device.index for r in rows} == {0}


def test_a_cluster_whose_every_gpu_kills_its_worker_is_a_one_line_error(local_ray,
                                                                        monkeypatch):
    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec(device_count=2, crashing_devices=(0, 1)))
    done = invoke("dot", "--size", "1000,2000", "--cluster", "ray", *QUICK)
    assert done.exit_code == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "a GPU of the Ray cluster: its fresh worker process died " \
        "before it opened the GPU (exit code -11)" in lines[0], done.stderr


@pytest.mark.parametrize("raises", [False, True], ids=["dies", "raises"])
def test_a_gpu_whose_actor_cannot_start_is_given_up_with_a_note(local_ray, monkeypatch,
                                                                 tmp_path, raises):
    # it was dropped without a word (exit 0, no note)
    from ray_specs import StartFailingSpec

    use_spec(monkeypatch, StartFailingSpec(device_count=2, failing=(1,), raises=raises))
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000..8000:+1000", "--variant", "atomic", "--no-vendor",
                  "--cluster", "ray", "--json", out, "--no-batch", "--warmup", "0",
                  "--max-time", "0.5", "--min-samples", "5000")
    assert done.exit_code == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "note: a GPU of the cluster was given up (its Ray actor could not start" in said
    assert ("ModuleNotFoundError: No module named 'cudabench'" in said) == raises, said
    assert "\x1b" not in done.stderr and "ray::" not in done.stderr
    rows = [r for r in load_results(out).benchmarks if r.variant == "atomic"]
    assert len(rows) == 8 and all(r.status is Status.PASS for r in rows)


@pytest.mark.parametrize("raises", [False, True], ids=["dies", "raises"])
def test_a_cluster_whose_every_actor_cannot_start_is_a_one_line_error(local_ray, monkeypatch,
                                                                      raises):
    # every benchmark's rows were ERROR, "its Ray worker was lost twice (retried once)"
    from ray_specs import StartFailingSpec

    use_spec(monkeypatch, StartFailingSpec(device_count=2, failing=(0, 1), raises=raises))
    done = invoke("dot", "--size", "1000,2000", "--cluster", "ray", *QUICK)
    assert done.exit_code == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "a GPU of the Ray cluster: its Ray actor could not start" \
        in lines[0], done.stderr
    assert ("No module named 'cudabench' (install cudabench, this version, on its node)"
            in lines[0]) == raises, lines
    assert "\x1b" not in done.stderr and "ray::" not in done.stderr


def test_the_time_profile_of_a_cluster_run_counts_its_gpus(local_ray, monkeypatch,
                                                            tmp_path):
    # its rows' phases, summed over both GPUs, were counted as one worker's: ~180% of wall
    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec(device_count=2))
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000..8000:+1000", "--variant", "atomic", "--no-vendor",
                  "--cluster", "ray", "--json", out, "--no-batch", "--warmup", "0",
                  "--max-time", "0.5", "--min-samples", "5000", "--profile-time")
    assert done.exit_code == 0, done.stderr
    loaded = load_results(out)
    gpus = len({r.device.identity for r in loaded.benchmarks if r.device is not None})
    assert gpus == 2 and loaded.metadata["profile"]["gpus"] == 2
    assert "workers (2 GPUs)" in done.stderr, done.stderr


@pytest.mark.parametrize("search", [[], ["--strategy", "random", "--budget", "6"]],
                         ids=["sweep", "search"])
def test_best_on_a_cluster_re_measures_its_close_calls_on_one_actor(local_ray, monkeypatch,
                                                                     tmp_path, search):
    # a sweep's --best was refused with --cluster, a search's accepted
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.measure.jobs import jobs_of
    from cudabench.runner.gpus import units_of
    from cudabench.runner.ray_cluster import RayCluster

    benchmarks: list[int] = []  # each cluster run's
    running = RayCluster.run

    def run(self, plans, *args, **kwargs):
        benchmarks.append(len(units_of(plans, jobs_of(list(plans)))))
        return running(self, plans, *args, **kwargs)

    monkeypatch.setattr(RayCluster, "run", run)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    use_spec(monkeypatch, FakeSpec(device_count=2))
    done = invoke("dot", "--size", "4096,8192", "--variant", "atomic", "-p",
                  "BLOCK=64,128,256", "--no-vendor", "--best", "--cluster", "ray", *QUICK,
                  *search)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.count("atomic") >= 2  # a winner per size
    # the sweep's two benchmarks (or the searches' hand-outs), then each size's close
    # calls re-measured as one benchmark: on one actor
    assert benchmarks[-2:] == [1, 1] and benchmarks[0] == (6 if search else 2), benchmarks


def test_a_cluster_whose_every_gpu_cannot_be_opened_is_a_one_line_error(local_ray,
                                                                       monkeypatch):
    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec(device_count=2, lost_devices=(0, 1)))
    done = invoke("dot", "--size", "1000,2000", "--cluster", "ray", *QUICK)
    assert done.exit_code == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "a GPU of the Ray cluster: it could not be opened: fake GPU " \
        in lines[0], done.stderr
    assert "\x1b" not in done.stderr and "ray::" not in done.stderr


def test_a_stopped_run_keeps_the_rows_its_running_benchmark_measured(local_ray, monkeypatch,
                                                                     tmp_path):
    # Ctrl-C threw away the rows of every benchmark still out (rows came back only with a
    # whole benchmark), and a run stopped before one finished wrote no results file at all
    import signal
    import threading

    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.engines.fake_kernels import Fault

    use_spec(monkeypatch, FakeSpec(faults={"shared_tree": Fault.HANGS}))
    out = tmp_path / "r.json"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(10, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()  # atomic measured by then, shared_tree hanging (its timeout: 120 s)
        done = invoke("dot", "--size", "1000", "--variant", "atomic", "--variant",
                      "shared_tree", "--no-vendor", "--cluster", "ray", "--json", out, *QUICK,
                      "--timeout", "120")
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert done.exit_code == 130, done.output
    kept = load_results(out)
    assert kept.metadata.get("complete") is False
    assert [(r.variant, r.status) for r in kept.benchmarks] == [("atomic", Status.PASS)]


def _release_kept() -> None:
    """End the kept actors a test left, and wait until Ray has freed their GPUs."""
    import time

    from cudabench.runner.ray_cluster import kept_actors, release_kept

    release_kept(ray)
    deadline = time.monotonic() + 30
    while kept_actors(ray) and time.monotonic() < deadline:
        time.sleep(0.2)
    while ray.available_resources().get("GPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)


def test_kept_workers_serve_the_next_command(local_ray, monkeypatch, tmp_path):
    """--keep-workers: the second command runs on the first one's actors and GPU workers
    (no worker opens an engine again), with every row measured and the file complete."""
    import time

    from ray_specs import EnvironmentRecordingSpec

    from cudabench.runner.ray_cluster import kept_actors

    use_spec(monkeypatch, EnvironmentRecordingSpec(out_dir=str(tmp_path)))
    suite = tmp_path / "cudabench.toml"
    suite.write_text(SUITE)
    try:
        first = invoke("run", suite, "--cluster", "ray", "--keep-workers", "60", "--json",
                       tmp_path / "a.json", "--no-batch")
        assert first.exit_code == 0, first.stderr
        opened = {p.name for p in tmp_path.glob("env-*.json")}
        assert 1 <= len(opened) <= 2, opened
        assert kept_actors(ray), "no actor was kept"
        second = invoke("run", suite, "--cluster", "ray", "--keep-workers", "60", "--json",
                        tmp_path / "b.json", "--no-batch")
        assert second.exit_code == 0, second.stderr
        assert {p.name for p in tmp_path.glob("env-*.json")} == opened  # none opened again
        rows = load_results(tmp_path / "b.json")
        assert len({(r.op, tuple(r.shape)) for r in rows.benchmarks}) == 8
        assert all(r.status in (Status.PASS, Status.REF) for r in rows.benchmarks)
        assert rows.metadata["complete"] is True
        # Another command's plans on the same actors: a dot alone, not the suite's
        # benchmark of the same index.
        third = invoke("dot", "--size", "77", "--cluster", "ray", "--keep-workers", "60",
                       "--json", tmp_path / "c.json", *QUICK)
        assert third.exit_code == 0, third.stderr
        assert {(r.op, tuple(r.shape)) for r in load_results(tmp_path / "c.json").benchmarks
                } == {("dot", (77,))}
        # A command without the flag runs on the kept actors too (they hold both GPUs: it
        # would otherwise wait their 60 s out), opens nothing, and leaves them kept.
        started = time.monotonic()
        fourth = invoke("run", suite, "--cluster", "ray", "--json", tmp_path / "d.json",
                        "--no-batch")
        assert fourth.exit_code == 0, fourth.stderr
        assert time.monotonic() - started < 30
        assert {p.name for p in tmp_path.glob("env-*.json")} == opened
        assert kept_actors(ray)
    finally:
        _release_kept()


def test_kept_actors_end_themselves_after_their_idle_time(local_ray, monkeypatch, tmp_path):
    import time

    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner.ray_cluster import kept_actors

    use_spec(monkeypatch, FakeSpec())
    try:
        done = invoke("dot", "--size", "1000,2000", "--cluster", "ray", "--keep-workers", "1",
                      "--json", tmp_path / "r.json", *QUICK)
        assert done.exit_code == 0, done.stderr
        deadline = time.monotonic() + 20
        while kept_actors(ray) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not kept_actors(ray), "a kept actor outlived its idle time"
    finally:
        _release_kept()


def test_idle_actors_of_other_code_are_ended_first(local_ray, monkeypatch, tmp_path):
    """Actors kept by another cudabench (another code key) would hold both GPUs: a command
    of this code ends the idle ones and runs on actors of its own."""
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner.ray_cluster import kept_actors

    use_spec(monkeypatch, FakeSpec())
    args = ("dot", "--size", "1000,2000", "--cluster", "ray", "--keep-workers", "60",
            *QUICK)
    try:
        monkeypatch.setattr("cudabench.runner.ray_cluster.code_key", lambda: "oldcode")
        assert invoke(*args, "--json", tmp_path / "a.json").exit_code == 0
        assert all("-oldcode-" in name for name in kept_actors(ray)) and kept_actors(ray)
        monkeypatch.setattr("cudabench.runner.ray_cluster.code_key", lambda: "newcode")
        done = invoke(*args, "--json", tmp_path / "b.json")
        assert done.exit_code == 0, done.stderr
        names = kept_actors(ray)
        assert names and all("-newcode-" in name for name in names), names
    finally:
        _release_kept()



@pytest.mark.parametrize("in_helper", [False, True], ids=["op-file", "helper-module"])
def test_a_kept_actor_loads_an_edited_op_file_afresh(local_ray, monkeypatch, tmp_path,
                                                     in_helper):
    """The kept actors' GPU workers imported the user's op file (and its helper modules)
    for the first command; after an edit the second command must use the edit."""
    from test_op_plugins import an_edit_reaches_the_next_command

    from cudabench.engines.fake_engine import FakeSpec

    use_spec(monkeypatch, FakeSpec())
    try:
        an_edit_reaches_the_next_command(tmp_path, "--cluster", "ray", "--keep-workers", "60",
                                         *QUICK, in_helper=in_helper)
    finally:
        _release_kept()


def test_the_workers_command_lists_and_ends_kept_actors(local_ray, monkeypatch, tmp_path):
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner.ray_cluster import kept_actors

    use_spec(monkeypatch, FakeSpec())
    try:
        done = invoke("dot", "--size", "1000,2000", "--cluster", "ray", "--keep-workers", "60",
                      *QUICK)
        assert done.exit_code == 0, done.stderr
        names = kept_actors(ray)
        listed = invoke("workers", "--cluster", "ray")
        assert listed.exit_code == 0 and names and all(n in listed.stdout for n in names)
        stopped = invoke("workers", "--cluster", "ray", "--stop")
        assert stopped.exit_code == 0 and f"ended {len(names)} kept actor" in stopped.stdout
    finally:
        _release_kept()

# Last: these two shut the module's Ray down.
def test_a_cluster_that_cannot_be_reached_is_a_one_line_error(monkeypatch):
    from cudabench.engines.fake_engine import FakeSpec

    if ray.is_initialized():
        ray.shutdown()
    use_spec(monkeypatch, FakeSpec())
    done = invoke("dot", "--size", "100", "--cluster", "ray://127.0.0.1:1")
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Ray cluster" in lines[0], done.stderr


def test_a_ray_address_that_does_not_answer_is_named_at_once(monkeypatch):
    # Ray waited on its own timeouts (over two minutes, its log lines on stderr)
    import socket
    import time

    from cudabench.engines.fake_engine import FakeSpec

    if ray.is_initialized():
        ray.shutdown()
    use_spec(monkeypatch, FakeSpec())
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    started = time.monotonic()
    done = invoke("dot", "--size", "100", "--cluster", "ray")
    assert done.exit_code == 2 and time.monotonic() - started < 10
    assert done.stderr.strip().splitlines() == [
        "cudabench: error: --cluster ray: cannot reach the Ray cluster at 127.0.0.1:1 "
        "(RAY_ADDRESS=127.0.0.1:1): Connection refused"], done.stderr

    def silent(address, timeout):
        assert timeout == 3.0
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    done = invoke("workers", "--cluster", "ray://head.example:10001")
    assert done.exit_code == 2 and done.stderr.strip().splitlines() == [
        "cudabench: error: --cluster ray://head.example:10001: cannot reach the Ray cluster "
        "at head.example:10001: no answer in 3 s"], done.stderr
    assert not ray.is_initialized()


def test_a_dashboard_address_is_named_as_one(monkeypatch):
    # RAY_ADDRESS=http://127.0.0.1:8265 (set for `ray job submit`) read as a host named
    # "http://127.0.0.1": "Name or service not known"
    from cudabench.runner.ray_cluster import check_reachable

    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:8265")
    with pytest.raises(UsageError, match=r"http://127.0.0.1:8265 \(RAY_ADDRESS=http://127.0.0"
                       r".1:8265\) is not a Ray cluster's address .* HOST:6379, or "
                       r"ray://HOST:10001"):
        check_reachable("ray")


def test_a_usage_error_found_before_the_run_starts_no_ray(monkeypatch, tmp_path):
    from cudabench.engines.fake_engine import FakeSpec

    if ray.is_initialized():
        ray.shutdown()
    use_spec(monkeypatch, FakeSpec())
    (tmp_path / "a-file").write_text("", encoding="utf-8")  # no folder can be made there
    done = invoke("dot", "--size", "100", "--cluster", "ray",
                  "--markdown", tmp_path / "a-file" / "x.md")
    assert done.exit_code == 2 and "--markdown" in done.stderr
    assert not ray.is_initialized()


def test_listing_kept_actors_starts_no_ray_of_its_own(monkeypatch):
    # it started a local Ray (11 s) to list none, then failed for want of a GPU
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    done = invoke("workers", "--cluster", "ray")
    assert done.exit_code == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Ray cluster is running here" in lines[0], done.stderr
    assert not ray.is_initialized()


def test_the_command_s_signal_handlers_outlive_ray_init(monkeypatch):
    # ray.init put in its own SIGTERM handler (sys.exit): a cancelled CI job exited 1 with
    # Ray's crash dump, not 143 with "terminated"
    import signal

    from cudabench.runner import ray_cluster

    def ours(signum, frame):  # the command's (entry.py's), set before the run
        raise AssertionError("not called")

    def init(**options):
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        signal.signal(signal.SIGINT, lambda signum, frame: None)

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        signal.signal(signal.SIGTERM, ours)
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        monkeypatch.setattr(ray, "init", init)
        monkeypatch.setattr(ray, "cluster_resources", lambda: {"GPU": 1.0})
        ray_cluster.connect("ray")
        assert signal.getsignal(signal.SIGTERM) is ours
        assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)



def test_the_waiting_note_says_both_causes_when_the_cluster_does_not_answer():
    # an unanswered query read as infinitely many GPUs held: "other work holds its GPUs"
    from types import SimpleNamespace

    from cudabench.runner.ray_cluster import _why_waiting

    def silent():
        raise ConnectionError("no answer")

    ray = SimpleNamespace(cluster_resources=silent, available_resources=silent)
    assert _why_waiting(ray, 1).startswith("its actors are still starting, or other work")
    held = SimpleNamespace(cluster_resources=lambda: {"GPU": 2.0},
                           available_resources=lambda: {"GPU": 0.0})
    assert _why_waiting(held, 1).startswith("other work holds its GPUs")


def test_a_sigterm_while_ray_init_connects_is_terminated_not_exit_15(monkeypatch):
    # Ray's handler, in place while ray.init connects, calls sys.exit(15): the command
    # exited 15 with no word, where a terminated one exits 143 saying so
    import os
    import signal
    import sys

    from cudabench.errors import Terminated
    from cudabench.runner import ray_cluster

    def init(**options):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # Ray's
        os.kill(os.getpid(), signal.SIGTERM)  # the CI job cancelled meanwhile

    before = signal.getsignal(signal.SIGTERM)
    try:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        monkeypatch.setattr(ray, "init", init)
        monkeypatch.setattr(Terminated, "received", False)
        with pytest.raises(Terminated):
            ray_cluster.connect("ray")
        assert Terminated.received
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_kept_actor_busy_with_another_command_s_run_is_not_retired():
    # with a second thread (measured() beside a run) a busy actor answered ready() at once,
    # and retire_stale ended it in the middle of another command's benchmark
    from types import SimpleNamespace

    from cudabench.runner.ray_cluster import _idle

    class Ray:
        def get(self, answer, timeout):
            if isinstance(answer, Exception):
                raise answer
            return answer

    busy = SimpleNamespace(idle=SimpleNamespace(remote=lambda: False),
                           ready=SimpleNamespace(remote=lambda: True))
    assert _idle(Ray(), busy) is False
    free = SimpleNamespace(idle=SimpleNamespace(remote=lambda: True))
    assert _idle(Ray(), free) is True
    older = SimpleNamespace(ready=SimpleNamespace(remote=lambda: True))  # no idle(): one thread
    assert _idle(Ray(), older) is True
