"""A results file measured on two H200s with `--devices all` (scripts/multi-gpu/run.sh,
nvidia-h200-x2) renders and compares on a machine without a GPU."""

from __future__ import annotations

from pathlib import Path

from cudabench.analysis.compare import compare
from cudabench.results import load_results
from tests.helpers import invoke

DATA = Path(__file__).parent / "data" / "h200x2"


def test_the_two_gpu_file_names_both_gpus_in_every_row():
    both = load_results(DATA / "all.json")
    assert len(both.devices) == 2 and {d.name for d in both.devices} == {"NVIDIA H200"}
    assert len({d.identity for d in both.devices}) == 2  # two cards, told apart
    assert all(r.device is not None for r in both.benchmarks)
    assert {r.device.index for r in both.benchmarks} == {0, 1}


def test_report_renders_the_two_gpu_file_grouped_by_gpu():
    done = invoke("report", DATA / "all.json")
    assert done.exit_code == 0, done.output
    text = done.stdout
    for device in load_results(DATA / "all.json").devices:
        assert device.pci_bus_id in text
    assert "Traceback" not in done.output


def test_a_one_gpu_run_compares_with_the_two_gpu_run_row_for_row():
    one, both = load_results(DATA / "one.json"), load_results(DATA / "all.json")
    comparison = compare(one, both)
    assert not comparison.missing and not comparison.added and not comparison.removed
    assert len(comparison.rows) == len([r for r in both.benchmarks if r.samples_s or r.error])
    assert {row.device for row in comparison.rows} == {"GPU 0", "GPU 1"}
    done = invoke("compare", DATA / "one.json", DATA / "all.json", "--threshold", "5%")
    assert done.exit_code == 0, done.output
    assert "no regression" in done.stdout
