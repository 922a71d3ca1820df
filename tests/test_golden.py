"""A fixed fake-engine run writes the same results file, byte for byte.

The suite in tests/data/golden/suite.toml (several ops, dtypes and variants, a parameter,
a hot cache, vendor rows that PASS and SKIP, reference rows, one injected wrong element,
--transfers) runs on the fake engine with a fixed seed; its results file must equal
tests/data/golden/fake-run.json once what must vary is masked: times, host, Python,
commit, the command line, the kernels' folder, the CPU reference's duration and the
NVML poll count. A refactoring that changes what a run writes fails here.

The dtypes are the ones whose verification is exact on any CPU (float64 and int32 matmul,
float16 transpose, float64 dot): a float32 result's error depends on the BLAS's summation
order, which differs between machines.

When a change of the file is meant, rewrite the golden file and review its diff:
    CUDABENCH_WRITE_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest
from helpers import invoke

from cudabench.engines.fake_kernels import Fault

GOLDEN = Path(__file__).parent / "data" / "golden"
SUITE = GOLDEN / "suite.toml"
EXPECTED = GOLDEN / "fake-run.json"

# (pattern, replacement): each masks one field that differs between two identical runs.
MASKS = [
    (re.compile(r'"(created|updated|host|python)": "[^"]*"'), r'"\1": "<masked>"'),
    (re.compile(r'"git_commit": (null|"[0-9a-f]*")'), '"git_commit": "<masked>"'),
    (re.compile(r'"git_dirty": (null|true|false)'), '"git_dirty": "<masked>"'),
    (re.compile(r'"git_branch": (null|"[^"]*")'), '"git_branch": "<masked>"'),
    (re.compile(r'"command": \[[^\]]*\]'), '"command": "<masked>"'),
    # The kernels' folder, in each row's source and in an error that names a file.
    (re.compile(r'[^"\s]*/kernels/'), '<kernels>/'),
    # The suite's folder, in the run's notes (a note names the suite file and entry).
    (re.compile(r'[^"\s]*/tests/data/golden/'), '<golden>/'),
    (re.compile(r'"cpu_reference_s": [^,\n]+'), '"cpu_reference_s": "<masked>"'),
    (re.compile(r'"polls": \d+'), '"polls": "<masked>"'),
]


def masked(text: str) -> str:
    """Return the results file's text with the fields that must vary replaced."""
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def test_the_masks_hide_only_what_varies():
    text = ('{"created": "2026-01-01T00:00:00+00:00", "host": "box", "git_commit": "ab12",\n'
            ' "command": [\n  "cudabench",\n  "/tmp/x.json"\n ], "git_dirty": true,\n'
            ' "source": "/home/u/cudabench/kernels/matmul/naive.cu", "cpu_reference_s": 0.5,\n'
            ' "polls": 3, "median_s": 1e-05, "error": "/k/kernels/dot/atomic.cu: wrong"}')
    assert masked(text) == (
        '{"created": "<masked>", "host": "<masked>", "git_commit": "<masked>",\n'
        ' "command": "<masked>", "git_dirty": "<masked>",\n'
        ' "source": "<kernels>/matmul/naive.cu", "cpu_reference_s": "<masked>",\n'
        ' "polls": "<masked>", "median_s": 1e-05, "error": "<kernels>/dot/atomic.cu: wrong"}')


def test_a_fixed_fake_run_writes_the_golden_results_file(use_fake, tmp_path):
    use_fake(seed=11, faults={"shared_padded": Fault.WRONG_ELEMENT})
    path = tmp_path / "results.json"
    done = invoke("run", str(SUITE), "--json", str(path), "--transfers")
    assert done.exit_code == 3, done.output  # the wrong element: FAIL
    fresh = masked(path.read_text(encoding="utf-8"))
    if os.environ.get("CUDABENCH_WRITE_GOLDEN"):
        EXPECTED.write_text(fresh, encoding="utf-8")
        pytest.skip(f"rewrote {EXPECTED}: review its diff")
    expected = EXPECTED.read_text(encoding="utf-8")
    if fresh != expected:
        diff = difflib.unified_diff(expected.splitlines(), fresh.splitlines(),
                                    "golden", "this run", lineterm="", n=2)
        pytest.fail("the results file changed (CUDABENCH_WRITE_GOLDEN=1 rewrites it if "
                    "that is meant):\n" + "\n".join(list(diff)[:80]))
