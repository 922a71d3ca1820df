"""`cudabench report` on real H100 files: every insight column, rendered without a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.results import load_results

DATA = Path(__file__).parent / "data" / "h100-insight"


def report(*names: str) -> str:
    done = CliRunner().invoke(cli, ["report", *(str(DATA / n) for n in names)])
    assert done.exit_code == 0, done.output
    return done.stdout


def test_the_full_matmul_file_shows_every_column():
    text = report("m4096_full.json")
    for column in ("vs cuBLAS", "vs naive", "% of peak", "bound", "batch (warm)", "SM MHz",
                   "energy/launch", "GFLOP/J", "bank confl. ld", "occupancy", "ncu time"):
        assert column in text, column
    assert "no TF32" in text and "roofs: DRAM 3,352 GB/s" in text and "FP32 66.9" in text


def test_the_seed_point_shows_tiled_conflict_has_far_more_bank_conflicts():
    rows = {b.variant: b for b in load_results(DATA / "m4096_full.json").benchmarks}
    loads = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    assert rows["tiled_conflict"].counters[loads] > 1000 * rows["tiled"].counters[loads]


def test_a_tensor_core_row_is_held_to_the_tensor_roof_and_its_slow_clock_shows():
    rows = {b.variant: b for b in load_results(DATA / "m4096_f16.json").benchmarks}
    cublas = rows["cuBLAS"]
    assert cublas.unit == "tensor" and cublas.compute_type == "float16"
    assert cublas.status.value == "PASS"  # 700 TFLOP/s is under the 989 TFLOP/s FP16 roof
    assert max(c for c in cublas.sample_clocks_mhz if c) < 0.75 * 1980
    text = report("m4096_f16.json")
    assert "tensor FP16 989.4" in text and "compute" in text


def test_transfers_render_with_the_link():
    text = report("t8192_transfers.json")
    assert "H2D pinned GB/s" in text and "63.0 GB/s per direction (PCIe gen 5 x16" in text
    trip = load_results(DATA / "t8192_transfers.json").benchmarks[0].transfers
    assert trip["pinned"]["h2d_gbps"] > 5 * trip["pageable"]["h2d_gbps"]


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json")))
def test_every_h100_file_reports_and_converts_to_markdown(tmp_path, name):
    out = tmp_path / "r.md"
    done = CliRunner().invoke(cli, ["report", str(DATA / name), "--markdown", str(out)])
    assert done.exit_code == 0, done.output
    assert "| variant |" in out.read_text()


def test_a_file_from_before_rows_named_their_roof_is_held_to_the_cuda_core_roof():
    # v2-matmul.json (schema 2, before `unit` and `compute_type`) and m1000.json (with them)
    # measured the same naive matmul 1000^3 on the same H100: the same % of peak, compute
    # bound, not 1% of intensity x DRAM
    from cudabench.render.insight import assessment

    old = next(b for b in load_results(DATA.parent / "h100" / "v2-matmul.json").benchmarks
               if b.variant == "naive")
    new = next(b for b in load_results(DATA / "m1000.json").benchmarks
               if b.variant == "naive")
    assert old.compute_type == "float32" and old.unit == ""
    before, after = assessment(old, None), assessment(new, None)
    assert before is not None and after is not None
    assert before.bound == after.bound == "compute"
    assert before.pct_of_peak == pytest.approx(after.pct_of_peak, rel=0.05)


def test_a_sweeps_detail_table_tells_its_configurations_apart():
    # naive, tiled and tiled_conflict at TILE 8, 16 and 32: nine rows, three per variant
    text = report("sweep_best.json")
    detail = text[text.index("behind the times"):]
    detail = detail[:detail.index("└")]
    header = next(line for line in detail.splitlines() if line.startswith("┃ variant"))
    assert [cell.strip() for cell in header.strip("┃").split("┃")][:2] == ["variant", "params"]
    assert {"TILE=8", "TILE=16", "TILE=32"} <= set(detail.split())


@pytest.mark.parametrize("name, heading", [
    ("transpose.json", "## Example output"),
    ("matmul.json", "## Seeing why: roofs, cuBLAS, counters, clocks, energy"),
])
def test_the_readmes_example_output_is_what_report_shows_of_its_file(name, heading):
    # the README's blocks drifted from the code (a clock range counted anew, a column
    # left out where a table now continues): they must be report's output of the file kept
    root = Path(__file__).parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split(heading, 1)[1].split("```\n", 2)[1]
    shown = [line for line in block.splitlines() if not line.startswith("note: ")]
    done = CliRunner().invoke(cli, ["report", str(root / "docs" / "data" /
                                                  "readme-examples-2026-11-27" / name)],
                              env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.output
    assert [line.rstrip() for line in done.stdout.splitlines()] == shown
