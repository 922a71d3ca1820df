"""Several GPUs of one host (--devices, --replicate) on fake engines: real worker
processes, one per fake GPU, fed from one queue."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import signal
import time
from pathlib import Path

import pytest
from helpers import invoke

from cudabench.analysis.compare import card_changes, compare
from cudabench.errors import UsageError
from cudabench.runner.devices import BLAS_THREAD_VARIABLES, Slot, choose, visible_entries
from cudabench.engines.fake_kernels import Fault
from cudabench.results import DeviceInfo, Status, load_results

QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05", "--no-batch"]
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
sizes = ["40", "33x7"]

[[benchmark]]
op = "dot"
sizes = ["1000", "3", "4097"]
"""
BENCHMARKS = 7  # op, shape pairs in SUITE


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "cudabench.toml"
    path.write_text(SUITE)
    return path


def by_benchmark(path):
    """Map (op, shape) to the set of GPU indices its rows name, from a results file."""
    loaded = load_results(path)
    found: dict[tuple, set] = {}
    for r in loaded.benchmarks:
        found.setdefault((r.op, tuple(r.shape)), set()).add(r.device.index if r.device
                                                            else None)
    return loaded, found


# -- choosing GPUs -------------------------------------------------------------------------

def test_devices_all_and_a_list_count_as_cuda_does():
    assert choose("all", 3) == [Slot(0, "0"), Slot(1, "1"), Slot(2, "2")]
    assert choose(" 2,0 ", 3) == [Slot(2, "2"), Slot(0, "0")]
    # With CUDA_VISIBLE_DEVICES set, index i is its i-th entry (a UUID works too).
    assert choose("1", 2, ["GPU-aaaa", "3"]) == [Slot(1, "3")]


@pytest.mark.parametrize("text, count, says", [
    ("2", 2, "GPU 2 does not exist; there are 2 (0 to 1)"),
    ("0,0", 2, "GPU 0 is named twice"),
    ("first", 2, "expected `all` or GPU indices"),
    ("-1", 2, "expected `all` or GPU indices"),
    ("all", 0, "no CUDA GPU is visible"),
])
def test_bad_device_lists_are_usage_errors(text, count, says):
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")):
        choose(text, count)


def test_visible_entries_stop_where_cuda_stops():
    assert visible_entries({}) is None
    assert visible_entries({"CUDA_VISIBLE_DEVICES": "2, 3,,5"}) == ["2", "3"]
    assert visible_entries({"CUDA_VISIBLE_DEVICES": ""}) == []
    # as the driver read each on an H200 (one GPU; docs/measurements.md): "0,-1,1" showed
    # GPU 0 alone (all three were counted), "abc,0" none, "1a" GPU 1, "0,5" GPU 0 alone
    def shown(text: str, physical: int | None = 4) -> list[str] | None:
        return visible_entries({"CUDA_VISIBLE_DEVICES": text}, physical)

    assert shown("0,-1,1") == ["0"] and shown("-1,0") == [] and shown("abc,0") == []
    assert shown("+1, 2a") == ["1", "2"]
    assert shown("0,5") == ["0"] and shown("0,5", physical=None) == ["0", "5"]
    assert shown("GPU-c9f7,MIG-1,3") == ["GPU-c9f7", "MIG-1", "3"]
    assert shown("1,0x0") == ["1", "0"]


def test_the_pycuda_spec_counts_no_more_gpus_than_the_host_has(monkeypatch):
    # "UUID,0" is GPU 0 twice where the UUID is GPU 0's (the driver shows one): counted as
    # two, --devices all ran two workers timing one GPU
    from cudabench.engines import pycuda_engine

    monkeypatch.setattr(pycuda_engine, "device_count", lambda: 1)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-c9f7d7b9,0")
    assert pycuda_engine.PycudaSpec().count_devices() == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,-1,1")
    assert pycuda_engine.PycudaSpec().count_devices() == 1


def test_a_command_reads_cuda_visible_devices_against_the_hosts_gpus(use_fake, monkeypatch):
    # "0,7,7" on a one-GPU host is GPU 0 (the driver stops at 7, which it lacks): the
    # command refused it as GPU 7 listed twice
    from cudabench.runner import devices

    monkeypatch.setattr(devices, "device_count", lambda: 1)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,7,7")
    done = invoke("transpose", "--size", "16", "--devices", "0", *QUICK)
    assert done.exit_code == 0, done.output
    assert devices.shown_entries() == ["0"]
    # unset: NVML is not started for it
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(devices, "device_count", lambda: pytest.fail("NVML asked"))
    assert devices.shown_entries() is None


@pytest.mark.parametrize("text", ["0,0", "0, 0", "1,+1", "2,0,2"])
def test_a_gpu_listed_twice_in_cuda_visible_devices_is_refused(text):
    # the driver fails to start (CUDA_ERROR_INVALID_DEVICE); cudabench counted two GPUs,
    # and --devices all ran two workers timing the one GPU at once
    with pytest.raises(UsageError, match="is listed twice, which CUDA refuses"):
        visible_entries({"CUDA_VISIBLE_DEVICES": text}, physical=4)


def test_a_worker_sees_its_gpu_alone_and_a_share_of_the_cores(monkeypatch):
    for name in (*BLAS_THREAD_VARIABLES, "CUDA_DEVICE_ORDER"):
        monkeypatch.delenv(name, raising=False)
    env = Slot(3, "GPU-abc").environment(workers=2, cores=16)
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-abc"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert all(env[name] == "8" for name in BLAS_THREAD_VARIABLES)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's own choice wins
    assert "OMP_NUM_THREADS" not in Slot(0, "0").environment(workers=2, cores=16)


# -- a suite spread over two GPUs ----------------------------------------------------------

def test_a_suite_spreads_over_both_gpus_one_benchmark_per_gpu(use_fake, suite, tmp_path):
    use_fake(device_count=2)
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--devices", "all", "--json", out, "--no-batch")
    assert done.exit_code == 0, done.stderr
    loaded, found = by_benchmark(out)
    assert len(found) == BENCHMARKS
    # Every row of a benchmark on one GPU, so that its ratios come from one card.
    assert all(len(gpus) == 1 for gpus in found.values()), found
    assert set().union(*found.values()) == {0, 1}
    assert {d.index for d in loaded.devices} == {0, 1}
    assert len({d.uuid for d in loaded.devices}) == 2
    assert loaded.metadata["complete"] is True
    # Each benchmark's rows appear once: nothing measured twice, nothing lost.
    keys = [(r.key, r.device.index) for r in loaded.benchmarks]
    assert len(keys) == len(set(keys))
    assert all(r.status in (Status.PASS, Status.REF) for r in loaded.benchmarks
               if r.status is not Status.SKIP)
    raw = json.loads(out.read_text())
    assert len(raw["devices"]) == 2
    # Tables group by device: each caption names the GPU it ran on.
    assert "GPU 0 at" in done.stdout and "GPU 1 at" in done.stdout


def test_an_op_command_takes_devices_too(use_fake, tmp_path):
    use_fake(device_count=3)
    out = tmp_path / "r.json"
    done = invoke("transpose", "--size", "16,24,32", "--devices", "0,2", "--json", out, *QUICK)
    assert done.exit_code == 0, done.stderr
    loaded, found = by_benchmark(out)
    assert set().union(*found.values()) <= {0, 2} and len(found) == 3


def test_replicate_runs_every_benchmark_on_every_gpu_and_shows_the_spread(
        use_fake, suite, tmp_path):
    use_fake(device_count=2)
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--devices", "all", "--replicate", "--json", out,
                  "--no-batch")
    assert done.exit_code == 0, done.stderr
    loaded, found = by_benchmark(out)
    assert all(gpus == {0, 1} for gpus in found.values()), found
    assert "the same benchmarks on each GPU" in done.stdout
    assert "GPU 0:" in done.stdout and "GPU 1:" in done.stdout
    # each GPU's warnings name it (the one line that says which card throttled did not)
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert any(" on GPU 0: " in line for line in warned), done.stderr
    assert any(" on GPU 1: " in line for line in warned), done.stderr
    # A replicated run compares with a one-GPU baseline of the same model: every GPU's
    # row pairs with the baseline's.
    base = tmp_path / "base.json"
    use_fake(device_count=2, seed=1)  # another run: samples of its own
    assert invoke("run", suite, "--json", base, "--no-batch").exit_code == 0
    comparison = compare(load_results(base), loaded, 0.5)
    assert not comparison.added and not comparison.removed
    assert {row.device for row in comparison.rows} == {"GPU 0", "GPU 1"}
    assert len(comparison.rows) == 2 * len([r for r in load_results(base).benchmarks
                                            if r.status is not Status.SKIP])
    shown = invoke("compare", base, out, "--threshold", "50%")
    assert shown.exit_code == 0, shown.stderr
    assert " on GPU 1" in shown.stdout


def test_the_spread_table_at_80_columns_keeps_what_answers_it(use_fake, suite, tmp_path,
                                                              monkeypatch):
    # at 80 columns the medians per GPU, the table's figures, were left out whole: a long
    # text, each row's is a numbered note now
    use_fake(device_count=2)
    monkeypatch.setenv("COLUMNS", "80")
    done = invoke("run", suite, "--devices", "all", "--replicate", "--no-batch")
    assert done.exit_code == 0, done.stderr
    table = done.stdout[done.stdout.index("the same benchmarks on each GPU"):]
    header = next(line for line in table.splitlines() if "variant" in line)
    assert "spread" in header
    assert "] median per GPU: GPU 0: " in table  # a numbered note per row, not lost
    left_out = next((line for line in table.splitlines() if "left out to fit" in line), "")
    assert "median per GPU" not in left_out
    assert ("slowest" in header) != ("slowest" in left_out)  # kept, or said to be left out


def test_a_kernel_that_kills_its_worker_costs_its_row_not_the_gpu(use_fake, suite, tmp_path):
    use_fake(device_count=2, faults={"tiled": Fault.KILLS_WORKER})
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--devices", "all", "--json", out, "--no-batch")
    assert done.exit_code == 2
    loaded, _ = by_benchmark(out)
    errors = [r for r in loaded.benchmarks if r.status is Status.ERROR]
    assert {r.variant for r in errors} == {"tiled"}
    assert all("worker process died" in r.error for r in errors)
    assert "given up" not in done.stderr
    assert sum(r.status is Status.PASS for r in loaded.benchmarks) > 10


def test_kernels_that_kill_their_workers_cost_their_rows_not_the_gpus(use_fake, tmp_path):
    # a crash in a job, right after a fresh worker opened its GPU, was counted as a GPU that
    # will not open: both GPUs were given up, and every other benchmark was ERROR
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nwarmup = 0\nmin_samples = 5\nmax_time = 0.02\n\n'
                     '[[benchmark]]\nop = "matmul"\nsizes = ["24", "32", "40"]\n'
                     'variants = ["naive", "tiled", "tiled_conflict"]\n\n'
                     '[[benchmark]]\nop = "dot"\nsizes = ["1000", "3", "77", "5000"]\n')
    use_fake(device_count=2, faults={"naive": Fault.KILLS_WORKER,
                                     "tiled": Fault.KILLS_WORKER})
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--devices", "all", "--json", out, "--no-vendor",
                  "--no-batch")
    assert done.exit_code == 2, done.stderr
    assert "given up" not in done.stderr
    rows = load_results(out).benchmarks
    assert {r.variant for r in rows if r.status is Status.ERROR} == {"naive", "tiled"}
    assert all(r.status in (Status.PASS, Status.REF) for r in rows if r.op == "dot")
    assert all(r.status is Status.PASS for r in rows if r.variant == "tiled_conflict")


def test_a_gpu_whose_workers_die_as_they_open_it_is_given_up_and_others_take_its_work(
        use_fake, tmp_path):
    # its benchmark was lost: ERROR rows blaming the first two variants ("its worker
    # process died"), exit 2, where a GPU that raises as it opens hands its benchmark back
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\nsize = "24"\n'
                     'variants = ["naive", "tiled", "tiled_conflict"]\n\n'
                     '[[benchmark]]\nop = "dot"\nsizes = ["1000", "3", "77", "5000"]\n')
    use_fake(device_count=2, crashing_devices=(1,))
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--devices", "all", "--json", out, "--no-batch",
                  "--no-vendor")
    assert done.exit_code in (0, 3), done.stderr  # 3: the fake's times may read SUSPECT
    loaded = load_results(out)
    assert not [r.error for r in loaded.benchmarks if r.status is Status.ERROR]
    assert "__main__" not in done.stderr  # not a script
    assert ("note: GPU 1 was given up (its fresh worker process died 2 times in a row "
            "before it opened the GPU (exit code -11))") in " ".join(done.stderr.split())
    assert {(r.op, tuple(r.shape)) for r in loaded.benchmarks} == {
        ("matmul", (24, 24, 24)), ("dot", (1000,)), ("dot", (3,)), ("dot", (77,)),
        ("dot", (5000,))}
    assert {r.device.index for r in loaded.benchmarks} == {0}  # the other GPU took them


def test_gpus_whose_workers_all_die_as_they_open_them_are_a_one_line_error(use_fake):
    use_fake(device_count=2, crashing_devices=(0, 1))
    done = invoke("dot", "--size", "1000,2000", "--devices", "all", *QUICK)
    assert done.exit_code == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudabench: error: GPU ") \
        and "died 2 times in a row before it opened the GPU (exit code -11)" in lines[0], lines


def test_a_gpu_that_cannot_be_opened_hands_its_work_to_the_others(use_fake, suite, tmp_path):
    use_fake(device_count=2, lost_devices=(1,))
    out = tmp_path / "r.json"
    done = invoke("run", suite, "--devices", "all", "--json", out, "--no-batch")
    assert done.exit_code == 0, done.stderr
    _, found = by_benchmark(out)
    assert set().union(*found.values()) == {0} and len(found) == BENCHMARKS
    assert "GPU 1 was given up (it could not be opened: fake GPU 1 fell off the bus)" \
        in done.stderr
    # kept in the file, and said again by report (a shared report read as a one-GPU run)
    shown = invoke("report", out, "--markdown", tmp_path / "r.md")
    assert shown.exit_code == 0, shown.output
    assert "GPU 1 was given up" in " ".join(shown.stderr.split())
    assert "GPU 1 was given up" in (tmp_path / "r.md").read_text(encoding="utf-8")
    page = invoke("report", out, "--html", tmp_path / "r.html")
    assert page.exit_code == 0 and "GPU 1 was given up" in (tmp_path / "r.html").read_text()
    # a `notes` field a person wrote, of another shape, is none of the run's: no refusal
    edited = json.loads(out.read_text())
    edited["notes"] = "after driver 550"
    (tmp_path / "n.json").write_text(json.dumps(edited))
    assert invoke("report", tmp_path / "n.json").exit_code == 0


def test_a_replicated_run_s_rows_of_a_lost_gpu_say_so_in_their_caption(use_fake):
    # their table's caption read "(device not recorded)", as if the file had lost it
    use_fake(device_count=2, lost_devices=(1,))
    done = invoke("dot", "--size", "1000", *QUICK, "--no-vendor", "--devices", "all",
                  "--replicate")
    assert "(no GPU ran these rows: each row's error says why)" in done.stdout
    assert "device not recorded" not in done.stdout


def test_one_benchmark_moves_from_a_gpu_that_cannot_be_opened(use_fake, tmp_path,
                                                                monkeypatch):
    # The healthy GPUs found no work and stopped before GPU 0 handed its one benchmark
    # back: the run failed as if no GPU opened.
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
    use_fake(device_count=4, lost_devices=(0,))
    out = tmp_path / "r.json"
    done = invoke("matmul", "--size", "64", "--variant", "tiled", "--no-vendor", "--no-batch",
                  "--warmup", "0", "--max-time", "0.05", "--devices", "all", "--json", out)
    assert done.exit_code in (0, 3), done.stderr  # 3: the fake's times may read SUSPECT
    (row,) = [r for r in load_results(out).benchmarks if r.variant == "tiled"]
    assert row.samples_s and row.device.index != 0
    assert "GPU 0 was given up" in done.stderr


def test_no_gpu_that_opens_is_a_one_line_error(use_fake, suite):
    use_fake(device_count=2, lost_devices=(0, 1))
    done = invoke("run", suite, "--devices", "all")
    assert done.exit_code == 2
    assert done.stderr.strip().startswith("cudabench: error: ")
    assert "fell off the bus" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args, says", [
    (["--devices", "4"], "--devices '4': GPU 4 does not exist; there are 2"),
    (["--devices", "0,\u00b2"], "--devices '0,\u00b2': expected `all` or GPU indices"),
    (["--devices", "\u0663"], "--devices '\u0663': expected `all` or GPU indices"),
    (["--device", "1", "--devices", "all"], "--device 1 and --devices all both choose"),
    (["--replicate"], "--replicate needs the GPUs"),
    (["--cluster", "slurm"], "--cluster 'slurm': expected `ray`"),
    # the hint RAY_ADDRESS=http://... got, which the flag's own check came before
    (["--cluster", "http://127.0.0.1:8265"], "(a dashboard's http:// address is for `ray "
                                             "job submit`: name the cluster's ray://HOST"),
    (["--cluster", "ray", "--devices", "all"], "--cluster and --devices both place"),
])
def test_placement_mistakes_are_one_line_errors(use_fake, args, says):
    use_fake(device_count=2)
    done = invoke("dot", "--size", "100", *args)
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


@pytest.mark.parametrize("cluster, ray_address, says", [
    ("ray://h:abc", "", "--cluster 'ray://h:abc': expected ray://HOST:PORT"),
    ("ray://", "", "--cluster 'ray://': expected ray://HOST:PORT"),
    ("ray://h:99999", "", "--cluster 'ray://h:99999': expected ray://HOST:PORT"),
    ("ray", ":6391", "--cluster ray: RAY_ADDRESS=':6391' is malformed: expected HOST:PORT"),
])
def test_a_dry_run_refuses_a_malformed_cluster_address(use_fake, monkeypatch, cluster,
                                                       ray_address, says):
    # exit 0 here, and the run then said "cannot reach the Ray cluster: Ray Client requires
    # pip package ray[client]", the wrong cause
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    done = invoke("dot", "--size", "100", "--dry-run", "--cluster", cluster)
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cudabench: error: {says}"), done.stderr


@pytest.mark.parametrize("given", [":6391", "head", "head:abc", "head:99999", "head:0",
                                   "head:\u0663", "::1:6379", "ray://head"])
def test_a_malformed_ray_address_is_named_before_ray_is_asked(monkeypatch, given):
    # RAY_ADDRESS=":6391": Ray logged "Failed to convert :6391 to host:port" and a traceback,
    # then "cannot reach the Ray cluster: Malformed host:"; `ray://h:abc`, "Ray Client
    # requires pip package ray[client]" (no Ray needed here: the address is read first)
    from cudabench.runner.ray_cluster import check_reachable

    monkeypatch.setenv("RAY_ADDRESS", given)
    with pytest.raises(UsageError, match=rf"^--cluster ray: RAY_ADDRESS='{given}' is "
                                         r"malformed: expected HOST:PORT .* 1 to 65535: fix"):
        check_reachable("ray")
    with pytest.raises(UsageError, match=r"^--cluster 'ray://h:abc': expected ray://HOST:PORT"):
        check_reachable("ray://h:abc")
    for fine in ("auto", "local", ""):  # Ray finds the cluster: nothing to connect to here
        monkeypatch.setenv("RAY_ADDRESS", fine)
        check_reachable("ray")


def test_workers_get_the_environment_and_the_parent_keeps_its_own(use_fake, tmp_path):
    before = dict(os.environ)
    use_fake(device_count=2)
    done = invoke("dot", "--size", "64,128", "--devices", "all", *QUICK)
    assert done.exit_code == 0, done.stderr
    assert dict(os.environ) == before


def test_compare_pairs_by_gpu_model_and_reports_a_model_the_baseline_lacks(
        use_fake, tmp_path):
    use_fake(device_count=2)
    base, mixed = tmp_path / "base.json", tmp_path / "mixed.json"
    args = ["dot", "--size", "1000", *QUICK, "--no-vendor"]
    assert invoke(*args, "--json", base).exit_code == 0
    use_fake(device_count=2, seed=1)  # another run: samples of its own
    assert invoke(*args, "--devices", "all", "--replicate", "--json", mixed).exit_code == 0
    raw = json.loads(mixed.read_text())
    raw["devices"][1]["name"] = "another GPU model"
    mixed.write_text(json.dumps(raw))
    comparison = compare(load_results(base), load_results(mixed), 0.5)
    current = load_results(mixed)
    on_other = [r for r in current.benchmarks if r.device.name == "another GPU model"]
    assert len(comparison.rows) == len(on_other)  # the shared model's rows, paired
    assert sorted(r.variant for r in comparison.added) == sorted(r.variant for r in on_other)
    assert any("another GPU model, which the baseline lacks" in note
               for note in comparison.notes)
    table = tmp_path / "c.csv"
    shown = invoke("compare", base, mixed, "--threshold", "50%", "--csv", table)
    assert "which the baseline lacks: listed as added, not compared" in shown.stdout
    # the CSV names every row's GPU one way, the table's: added rows said the model too
    gpus = {(row["verdict"], row["gpu"]) for row in csv.DictReader(table.open())}
    added = {gpu for verdict, gpu in gpus if verdict == "added"}
    paired = {gpu for verdict, gpu in gpus if verdict != "added"}
    assert added | paired == {"GPU 0", "GPU 1"} and len(added) == len(paired) == 1, gpus


@pytest.mark.parametrize("replicate", [[], ["--replicate"]])
def test_a_run_on_two_gpus_and_report_of_its_file_list_rows_in_one_order(use_fake, tmp_path,
                                                                         replicate):
    # the first benchmark the largest: the other GPU's rows arrive first, and the file kept
    # them as they came while the run's tables and CSV listed them by benchmark
    use_fake(device_count=2)
    out, table, again = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "again.csv"
    done = invoke("transpose", "--size", "2048,64,96,128", "--variant", "naive", "--no-vendor",
                  *QUICK, "--devices", "all", *replicate, "--json", out, "--csv", table)
    assert done.exit_code == 0, done.stderr
    shown = [(r["shape"], r["variant"], r["pci_bus_id"])
             for r in csv.DictReader(table.open())]
    kept = [("x".join(map(str, r.shape)), r.variant, r.device.pci_bus_id if r.device else "")
            for r in load_results(out).benchmarks]
    assert kept == shown
    assert shown[0][0] == "2048x2048"  # the run's order: the benchmarks as asked for
    assert invoke("report", out, "--csv", again).exit_code == 0
    assert again.read_text() == table.read_text()


def test_compare_refuses_a_benchmark_twice_on_one_gpu(use_fake, tmp_path):
    use_fake()
    path = tmp_path / "r.json"
    assert invoke("dot", "--size", "1000", *QUICK, "--no-vendor", "--json", path).exit_code == 0
    raw = json.loads(path.read_text())
    raw["benchmarks"].append(raw["benchmarks"][0])
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(raw))
    done = invoke("compare", path, twice)
    assert done.exit_code == 2
    assert "appears twice on one GPU" in done.stderr


def test_progress_counts_every_gpus_rows_and_names_the_gpu(use_fake, tmp_path):
    use_fake(device_count=2)
    done = invoke("dot", "--size", "1000", *QUICK, "--no-vendor", "--devices", "all",
                  "--replicate", "--progress")
    assert done.exit_code == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    # atomic, bulk, deterministic, shared_tree, vectorized_shuffle, the copy
    assert len(lines) == 2 * 6 and all("/12]" in line for line in lines)
    assert sum(" on GPU 1 " in line for line in lines) == 6


def test_gpus_that_share_an_index_are_told_apart_by_uuid():
    from dataclasses import replace

    from cudabench.engines.fake_engine import FAKE_DEVICE
    from cudabench.render.run_table import gpu_names

    a = replace(FAKE_DEVICE, index=0, uuid="GPU-aaaaaaaa-1111")
    b = replace(FAKE_DEVICE, index=0, uuid="GPU-bbbbbbbb-2222")
    c = replace(FAKE_DEVICE, index=1, uuid="GPU-cccccccc-3333")
    names = gpu_names([a, b, c])
    assert names[a.identity] == "GPU 0 (GPU-aaaaaaaa)"
    assert names[b.identity] == "GPU 0 (GPU-bbbbbbbb)"
    assert names[c.identity] == "GPU 1"


def test_the_tables_of_two_nodes_gpu_0_name_which_node_s(use_fake):
    # two cluster nodes' GPU 0, in the same PCI slot: both tables said "GPU 0 at 0000:..."
    from dataclasses import replace

    from cudabench.engines.fake_engine import FAKE_DEVICE
    from cudabench.render.run_table import build_tables
    from cudabench.results import RunOutcome
    from cudabench.results.model import BenchmarkResult

    row = BenchmarkResult(op="dot", variant="atomic", params={}, shape=(8,), dims=("N",),
                          dtype="float32", hot=False, samples_s=(1e-5,) * 5)
    rows = [replace(row, device=replace(FAKE_DEVICE, index=0, uuid=f"GPU-{tag * 8}-1111"))
            for tag in "ab"]
    captions = [table.caption.splitlines()[0] for table in build_tables(RunOutcome(
        tuple(rows)))]
    assert any("GPU 0 (GPU-aaaaaaaa)" in caption for caption in captions), captions
    assert any("GPU 0 (GPU-bbbbbbbb)" in caption for caption in captions), captions
    one = build_tables(RunOutcome((rows[0],)))[0].caption  # one GPU 0: its name alone
    assert ", GPU 0" in one and "GPU-aaaa" not in one


def test_a_benchmark_handed_back_late_is_still_run_by_a_gpu_that_works(use_fake, tmp_path):
    # GPU 1 takes a benchmark, then fails to open only after GPU 0 has run out of work.
    use_fake(device_count=2, lost_devices=(1,), lost_after_s=3.0)
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000,2000", *QUICK, "--no-vendor", "--devices", "all",
                  "--json", out)
    assert done.exit_code == 0, done.stderr
    rows = load_results(out).benchmarks
    assert {tuple(r.shape) for r in rows} == {(1000,), (2000,)}
    assert all(r.status in (Status.PASS, Status.REF) and r.device.index == 0 for r in rows)
    assert "GPU 1 was given up (it could not be opened" in done.stderr


def test_a_benchmark_that_became_an_error_row_naming_no_gpu_still_fails_compare(
        use_fake, tmp_path):
    # Rows of a lost Ray task or a GPU that never opened name no device: they must pair
    # with the baseline (and fail the gate), not be listed as added and removed.
    use_fake()
    base, current = tmp_path / "base.json", tmp_path / "current.json"
    assert invoke("dot", "--size", "1000", *QUICK, "--no-vendor", "--json", base).exit_code == 0
    raw = json.loads(base.read_text())
    for row in raw["benchmarks"]:
        row.update(device=None, samples_s=[], stats=None, status="ERROR",
                   error="its Ray worker was lost twice (retried once)", verification=None)
    current.write_text(json.dumps(raw))
    done = invoke("compare", base, current)
    assert done.exit_code == 1, done.stdout + done.stderr
    assert "failed" in done.stdout and "added" not in done.stdout


def test_every_worker_starts_with_its_own_environment(monkeypatch, tmp_path):
    # Eight GPUs, every benchmark on each: the workers spawn while other threads have
    # their variables set; each must still get its GPU, the PCI order and a thread share.
    from ray_specs import EnvironmentRecordingSpec

    for name in (*BLAS_THREAD_VARIABLES, "CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    spec = EnvironmentRecordingSpec(device_count=8, out_dir=str(tmp_path))
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: spec)
    done = invoke("dot", "--size", "100", "--devices", "all", "--replicate", *QUICK,
                  "--no-vendor")
    assert done.exit_code == 0, done.stderr
    found = [json.loads(path.read_text()) for path in tmp_path.glob("env-*.json")]
    assert len(found) >= 8
    assert all(env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and env["OMP_NUM_THREADS"]
               for env in found), found
    assert {env["CUDA_VISIBLE_DEVICES"] for env in found} == {str(i) for i in range(8)}


@pytest.mark.parametrize("args, says", [
    (["--devices", "all", "--replicate", "--best"], "--best re-measures close calls"),
    (["--devices", "all", "--replicate", "--record"], "--record keeps one row per benchmark"),
])
@pytest.mark.parametrize("dry", [[], ["--dry-run"]], ids=["run", "dry_run"])
def test_options_that_cannot_work_together_fail_before_the_run(use_fake, tmp_path, args,
                                                               says, dry):
    # a dry run refuses them too: the command it checks would fail
    use_fake(device_count=2)
    store = ["--db", tmp_path / "h.db"] if "--record" in args else []  # --db is --record's
    done = invoke("dot", "--size", "100", *QUICK, *store, *args, *dry)
    assert done.exit_code == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("gpus, devices, chosen, dry", [
    (2, "0", "GPU 0", []), (2, "0", "GPU 0", ["--dry-run"]),
    (1, "all", "GPU 0, the only one visible", []),  # (a dry run does not count them)
])
def test_replicate_on_one_gpu_is_refused(use_fake, gpus, devices, chosen, dry):
    # it ran the benchmarks once, with nothing to compare, and said nothing (exit 0)
    use_fake(device_count=gpus)
    done = invoke("dot", "--size", "100", *QUICK, "--devices", devices, "--replicate", *dry)
    assert done.exit_code == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"cudabench: error: --replicate runs every benchmark on each chosen GPU to compare "
        f"them, and --devices {devices} chooses one ({chosen}): it needs two GPUs or more "
        "(e.g. --devices 0,1)"], done.stderr


def test_best_with_devices_re_measures_on_a_chosen_gpu(use_fake):
    # GPU 0 is broken and not chosen: the head-to-head re-measurement must not go there.
    use_fake(device_count=3, lost_devices=(0,))
    done = invoke("matmul", "--size", "32", "-p", "TILE=8,16", "--variant", "tiled",
                  *QUICK, "--no-vendor", "--devices", "1,2", "--best")
    assert done.exit_code == 0, done.stderr
    assert "best configuration per variant and size" in done.stdout


def test_best_re_measures_on_a_gpu_the_run_did_not_give_up(use_fake, tmp_path):
    # GPU 0 could not be opened and the sweep went to GPU 1; the head-to-head went back to
    # GPU 0 and failed the whole run: no winners, no --best-out, nothing recorded.
    use_fake(device_count=2, lost_devices=(0,))
    out, db = tmp_path / "r.json", tmp_path / "h.db"
    done = invoke("dot", "--size", "4096", "--variant", "atomic", "-p", "BLOCK=64,128,256",
                  *QUICK, "--no-vendor", "--devices", "all", "--best", "--json", out,
                  "--best-out", tmp_path / "best.toml", "--markdown", tmp_path / "r.md",
                  "--record", "--db", db)
    assert done.exit_code == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "GPU 0 was given up (it could not be opened" in said
    assert ("note: --best re-measures its close calls head to head on GPU 1: GPU 0 was "
            "given up in the run") in said
    assert "best configuration per variant and size" in done.stdout
    assert (tmp_path / "best.toml").exists() and db.exists()
    assert "best configuration per variant and size" in (tmp_path / "r.md").read_text()


def test_best_on_devices_re_measures_in_a_warm_worker_that_ends_with_the_command(
        use_fake, monkeypatch, worker_starts):
    import multiprocessing

    from cudabench.cli import best

    use_fake(device_count=2)
    starts = worker_starts
    args = ["dot", "--size", "4096,8192", "--variant", "atomic", "-p", "BLOCK=64,128,256",
            *QUICK, "--no-vendor", "--devices", "all", "--best"]
    done = invoke(*args)
    assert done.exit_code == 0, done.stderr
    assert "best configuration per variant and size" in done.stdout
    # a worker a GPU, the head-to-head's one of them (it started a third)
    assert len(starts) <= 2 and multiprocessing.active_children() == []

    def stopped(*args, **kwargs):  # Ctrl-C with the GPUs' workers kept for the re-measure
        raise KeyboardInterrupt

    monkeypatch.setattr(best, "choose", stopped)
    assert invoke(*args).exit_code == 130
    assert multiprocessing.active_children() == []


def test_a_worker_whose_parent_is_killed_ends(tmp_path):
    """A GPU worker does not outlive its parent (a Ray actor stopped by force, a SIGKILL):
    it would wait on its inbox forever, holding a GPU context."""
    import subprocess
    import sys
    import time

    script = ("import sys, time\n"
              "from cudabench.engines.fake_engine import FakeSpec\n"
              "from cudabench.runner.workers import Worker\n"
              "worker = Worker(FakeSpec(), [])\n"
              "worker.start()\n"
              "print(worker._process.pid, flush=True)\n"
              "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    time.sleep(1.0)  # the worker is up and waiting on its inbox
    parent.kill()
    parent.wait()

    def alive() -> bool:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        return "\nState:\tZ" not in state  # a zombie has ended; only reaping is left

    deadline = time.monotonic() + 15
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(), "the worker outlived its killed parent"


@pytest.mark.parametrize("value, refused", [("1", True), (" 1 ", True), ("0", False),
                                            ("", False), (None, False)])
def test_launch_blocking_is_refused_before_the_gpu_is_touched(value, refused):
    from cudabench.engines.visibility import refuse_launch_blocking
    from cudabench.errors import UsageError

    environ = {} if value is None else {"CUDA_LAUNCH_BLOCKING": value}
    if not refused:
        refuse_launch_blocking(environ)
        return
    with pytest.raises(UsageError, match="unset it"):
        refuse_launch_blocking(environ)


def test_the_pycuda_engine_refuses_launch_blocking_before_importing_pycuda(monkeypatch):
    from cudabench.engines.pycuda_engine import PycudaSpec
    from cudabench.errors import UsageError

    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    with pytest.raises(UsageError, match="CUDA_LAUNCH_BLOCKING=1"):
        PycudaSpec(0).open()


def test_a_command_under_launch_blocking_stops_before_any_worker(use_fake, monkeypatch):
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    done = invoke("dot", "--size", "1024")
    assert done.exit_code == 2
    assert "CUDA_LAUNCH_BLOCKING=1" in done.stderr and "Traceback" not in done.stderr


def test_rows_arriving_after_ctrl_c_are_not_kept():
    # the workers Ctrl-C ended sent ERROR rows ("its worker process died (exit code -15)")
    # that reached the results file after the note had said how many rows it holds
    from cudabench.results.model import BenchmarkResult
    from cudabench.runner.devices import Slot
    from cudabench.runner.gpus import Board

    heard = []
    board = Board(units=[], plans=[], on_result=heard.append, on_start=None, queues={})
    row = BenchmarkResult(op="dot", variant="atomic", params={}, shape=(8,), dims=("N",),
                          dtype="float32", hot=False)
    board.emit(0, Slot(0, "0"), row)
    board.interrupted = True
    board.emit(0, Slot(0, "0"), row)
    assert heard == [row] and board.rows == {(0, 0): [row]}


class _WorkerEndedByCtrlC:
    """A worker whose batch ends as Ctrl-C ends it: the run stops, its process dies; or
    (block) one stuck in a kernel, which only abandon() ends; interrupting: it sends the
    main thread Ctrl-C (once running is set: the other GPU's worker is running too)."""

    def __init__(self, board, block: bool = False, interrupting: int = 0,
                 running=None) -> None:
        import threading

        self.board, self.block, self.interrupting = board, block, interrupting
        self.running = running or threading.Event()
        self.batches = 0
        self.failure = None
        self.device = None
        self.answered = True  # it opened its GPU
        self.abandoned = threading.Event()

    def run(self, jobs, on_result, on_start=None, first=True, hand_back=False):
        from cudabench.runner.workers import Failure

        self.batches += 1
        if self.block:  # a kernel that never returns: Ctrl-C reaches the main thread only
            if not self.interrupting:
                self.running.set()
            for _ in range(self.interrupting):  # Ctrl-C, as many times (a real signal:
                # interrupt_main only sets a flag, seen when the main thread next wakes)
                self.running.wait(10)
                time.sleep(0.3)  # the main thread waits: on the first GPU's thread, then
                os.kill(os.getpid(), signal.SIGINT)  # in the grace
            self.abandoned.wait(30)
        else:
            self.board.stopping = self.board.interrupted = True
        self.failure = Failure.DIED
        return []

    def abandon(self):
        self.abandoned.set()

    def close(self):
        pass


def _board(units: int = 1, gpus: int = 1):
    import collections

    from cudabench.measure.jobs import Job
    from cudabench.runner.gpus import Board

    jobs = [Job(plan_index=0, reference=f"r{i}") for i in range(3)]
    shared = collections.deque(range(units))
    return Board(units=[jobs] * units, plans=[], on_result=lambda row: None, on_start=None,
                 queues={index: shared for index in range(gpus)},
                 environments={index: {} for index in range(gpus)})


def test_a_worker_ended_by_ctrl_c_is_not_replaced(monkeypatch):
    # after Ctrl-C on several GPUs, each GPU's thread saw its worker die and spawned a fresh
    # one (twice) while the command exited: its inbox's feeder could hold the exit for good
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner import gpus

    board = _board()
    worker = _WorkerEndedByCtrlC(board)
    monkeypatch.setattr(gpus, "new_worker", lambda *args, **kwargs: worker)
    gpus._serve(board, FakeSpec(), Slot(0, "0"))
    assert worker.batches == 1 and not board.lost


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_abandons_the_workers_stuck_in_a_kernel(monkeypatch, presses):
    # the main thread raised at once and left the stuck GPUs' workers (and their threads)
    # running: the command's exit waited on them. And a Thread.join that Ctrl-C interrupts
    # marks its thread as ended while it runs (CPython <= 3.12): that GPU's worker was
    # never abandoned, and the exit waited on it for good (two H200s, a spinning kernel).
    import threading

    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner import gpus

    board = _board(units=2, gpus=2)
    running = threading.Event()
    workers = iter([_WorkerEndedByCtrlC(board, block=True, running=running),
                    _WorkerEndedByCtrlC(board, block=True, interrupting=presses,
                                        running=running)])
    made = []
    monkeypatch.setattr(gpus, "new_worker",
                        lambda *args, **kwargs: made.append(next(workers)) or made[-1])
    # a second Ctrl-C comes during the grace, and must end it: those still running go now
    monkeypatch.setattr(gpus, "STOP_GRACE_S", 0.2 if presses == 1 else 60)
    # Python's handler, where SIGINT came ignored (a suite started with `&`)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            gpus._serve_all(board, FakeSpec(), [Slot(0, "0"), Slot(1, "1")])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(made) == 2 and all(worker.abandoned.is_set() for worker in made)
    assert board.interrupted and time.monotonic() - started < 20


def test_a_baseline_model_the_current_run_lacks_is_removed_with_a_true_note(use_fake,
                                                                            tmp_path):
    # its kernels read `missing` (exit 1, "renamed, deleted or not run") while the note
    # said they were listed as removed, and counted only the cuBLAS row among them
    use_fake(device_count=2)
    mixed, one = tmp_path / "mixed.json", tmp_path / "one.json"
    args = ["dot", "--size", "1000,2000", *QUICK]
    assert invoke(*args, "--devices", "all", "--replicate", "--json", mixed).exit_code == 0
    raw = json.loads(mixed.read_text())
    raw["devices"][1]["name"] = "another GPU model"
    mixed.write_text(json.dumps(raw))
    use_fake(device_count=1, seed=1)  # another run: samples of its own
    assert invoke(*args, "--json", one).exit_code == 0
    comparison = compare(load_results(mixed), load_results(one), 0.5)
    lacked = [r for r in load_results(mixed).benchmarks if r.device.name == "another GPU model"]
    assert not comparison.regressions and comparison.exit_code == 0
    assert len(comparison.removed) == len(lacked)
    assert f"{len(lacked)} benchmark(s) of the baseline ran on another GPU model" in \
        comparison.notes[0]
    shown = invoke("compare", mixed, one, "--threshold", "50%", "--html", tmp_path / "c.html")
    assert shown.exit_code == 0, shown.output
    removed = shown.stdout[shown.stdout.index("removed (only in baseline)"):]
    assert removed.count("on another GPU model") == len(lacked)  # which model, said
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert "which the current file lacks: listed as removed" in page  # the page has notes
    assert page.count("on another GPU model</li>") == len(lacked)


def test_the_cards_settings_pair_card_by_card_in_any_order(use_fake, tmp_path):
    # the writer lists a run's cards in no fixed order: paired by position, one card's
    # power limit read as changed on both ("GPU 1: 350 -> 300", "GPU 0: 300 -> 350")
    use_fake(device_count=2)
    first = tmp_path / "a.json"
    assert invoke("dot", "--size", "1000", *QUICK, "--devices", "all", "--replicate",
                  "--json", first).exit_code == 0
    data = json.loads(first.read_text())
    data["devices"][1]["settings"]["power_limit_w"] = 300.0
    first.write_text(json.dumps(data))
    data["devices"].reverse()
    for row in data["benchmarks"]:  # another run, not a copy of the first
        row["samples_s"] = [s * 1.001 for s in row["samples_s"]]
    (tmp_path / "b.json").write_text(json.dumps(data))
    assert compare(load_results(first), load_results(tmp_path / "b.json")).setting_changes == ()


def test_a_card_the_current_run_has_again_pairs_with_itself_whatever_the_order():
    # card by card, GPU 0's fallback to a card of its name took GPU 1, the one card of
    # the baseline: "power limit (W) on GPU 0: 250.0 -> 350.0"; reversed, nothing said
    def card(index: int, watts: float, uuid: str) -> DeviceInfo:
        return DeviceInfo("H100", "9.0", 132, 80 << 30, 50 << 20, 1980000, 2619000, 5120,
                          1024, 49152, "550.54", "12.4", index=index, uuid=uuid,
                          settings={"power_limit_w": watts})

    gpu0, gpu1 = card(0, 350.0, "GPU-a"), card(1, 250.0, "GPU-b")
    for current in ([gpu0, gpu1], [gpu1, gpu0]):
        assert card_changes([gpu1], current, several=True) == ()
    lower = dataclasses.replace(gpu1, settings={"power_limit_w": 200.0})
    for current in ([gpu0, lower], [lower, gpu0]):
        assert card_changes([gpu1], current, several=True) == (
            "power limit (W) on GPU 1: 250.0 -> 200.0",)
    # no same card: by name, then any, as before
    other = dataclasses.replace(card(3, 300.0, "GPU-c"), name="A100")
    assert card_changes([other, gpu1], [card(5, 350.0, "GPU-d")]) == (
        "power limit (W): 250.0 -> 350.0",)
