"""`cudabench ab`: two kernel folders measured interleaved on the fake engine, and its statistics.

Both copies of a variant share its name, and the fake keys its slowdowns and faults by name,
so these tests plant B's difference in B's source instead: MarkedSpec's engine reads a
marker comment there. It is a spec of this module (not a monkeypatch) because the kernels
run in a spawned worker process, which unpickles the spec and imports this module again.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import (
    MATMUL_BODY,
    MATMUL_HEADER,
    full_disk_at_the_end,
    second_ctrl_c_in,
    stop_in_the_final_write,
    write_kernel,
)

from cudabench.analysis.ab import (
    check_settings,
    coverage,
    judge,
    min_rounds,
    sign_interval,
)
from cudabench.analysis.verdicts import Verdict
from cudabench.cli.ab import ab_command
from cudabench.cli.boundary import BoundaryGroup
from cudabench.engines.protocol import Compiled, Engine
from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.errors import UsageError
from cudabench.results import load_results
from cudabench.results.model import BenchmarkResult, Verification

ROOT = Path(__file__).resolve().parents[1]
SLOWER = re.compile(r"ab-test: slower ([0-9.]+)")
WRONG = "ab-test: wrong"
FAST = ("--size", "32", "--samples", "9", "--warmup", "0")


@dataclass(frozen=True)
class MarkedSpec(FakeSpec):
    """A fake engine whose kernels misbehave by a marker in their source, not their name."""

    def open(self) -> Engine:
        """Return a fresh MarkedEngine."""
        return MarkedEngine(self)


class MarkedEngine(FakeEngine):
    """The fake, with `ab-test: slower F` and `ab-test: wrong` read from each kernel's source."""

    def compile(self, variant, defines, signature, headers=()) -> Compiled:
        compiled = super().compile(variant, defines, signature, headers)
        kernel = compiled.functions[0]  # one FakeKernel shared by every launch
        match = SLOWER.search(variant.source)
        if match:
            kernel.slowdown *= float(match[1])
        if WRONG in variant.source:
            kernel.fault = Fault.WRONG_ELEMENT
        return compiled


def invoke(*args: object):
    """Run `ab` behind the CLI's error boundary, stdout and stderr apart."""
    group = BoundaryGroup(name="cudabench", commands={"ab": ab_command})
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always separates them
        runner = CliRunner()
    return runner.invoke(group, ["ab", *(str(a) for a in args)])


def folder(root: Path, names: list[str], marker: str = "") -> Path:
    """Write matmul variants into root/matmul/, each with the marker in its body."""
    for name in names:
        write_kernel(root / "matmul", name, MATMUL_HEADER, f"// {marker}\n{MATMUL_BODY}")
    return root


@pytest.fixture
def marked(monkeypatch):
    """Make the CLI open MarkedSpec engines with the seed given."""

    def use(seed: int = 0) -> None:
        spec = MarkedSpec(seed=seed)
        monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: spec)

    use()
    return use


NAMES = [f"v{i}" for i in range(10)]  # ten variants: ten independent trials in one run


def verdicts(stdout: str) -> dict[str, str]:
    """Return variant -> verdict word from the table."""
    found = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 9 and cells[1].startswith("matmul/"):
            found[cells[1].removeprefix("matmul/")] = cells[9]
    return found


def test_a_3_percent_slowdown_in_b_is_slower_and_exits_1(marked, tmp_path):
    old = folder(tmp_path / "old", NAMES)
    new = folder(tmp_path / "new", NAMES, "ab-test: slower 1.03")
    result = invoke(old, new, *FAST)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    found = verdicts(result.stdout)
    assert len(found) == 10
    assert sum(word == "slower" for word in found.values()) >= 9, found
    assert "regression" in result.stdout


def test_an_ab_whose_results_file_cannot_be_written_still_shows_its_table(marked, tmp_path,
                                                                          monkeypatch):
    # a full disk at the final write exited 2 before the table: every row unseen
    full_disk_at_the_end(monkeypatch, always=True)
    old = folder(tmp_path / "old", NAMES[:2])
    new = folder(tmp_path / "new", NAMES[:2])
    result = invoke(old, new, *FAST, "--json", tmp_path / "ab.json")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert len(verdicts(result.stdout)) == 2 and "No space left" in result.stderr


def test_ab_does_not_write_over_a_file_that_is_no_results_file(marked, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    old = folder(tmp_path / "old", NAMES[:2])
    new = folder(tmp_path / "new", NAMES[:2])
    result = invoke(old, new, *FAST, "--json", notes)
    assert result.exit_code == 2 and "is not a cudabench results file" in result.stderr
    assert notes.read_text(encoding="utf-8") == "my notes\n"


@pytest.mark.parametrize("seed", [1, 2])
def test_a_folder_against_a_copy_of_itself_gives_no_slower(marked, tmp_path, seed):
    marked(seed)
    old = folder(tmp_path / "old", NAMES)
    new = folder(tmp_path / "new", NAMES)
    result = invoke(old, new, *FAST)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    found = verdicts(result.stdout)
    assert len(found) == 10 and "slower" not in found.values(), found
    assert "no regression" in result.stdout


def test_one_folder_as_both_sides_is_named_an_a_a_run(marked, tmp_path):
    # a CI job whose base checkout landed on the pull request's own folder passed, unsaid
    old = folder(tmp_path / "old", ["naive"])
    result = invoke(old, f"{old}/", *FAST, "--rounds", "6")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    assert "OLD_DIR and NEW_DIR are the same folder" in said and "an A/A run" in said
    other = invoke(old, folder(tmp_path / "new", ["naive"]), *FAST, "--rounds", "6")
    assert "same folder" not in other.stderr


def test_a_wrong_result_in_b_is_a_failed_regression(marked, tmp_path):
    old = folder(tmp_path / "old", ["naive"])
    new = folder(tmp_path / "new", ["naive"], WRONG)
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert verdicts(result.stdout) == {"naive": "failed"}
    assert "B FAIL" in result.stdout


def test_a_wrong_result_in_a_only_is_fixed(marked, tmp_path):
    old = folder(tmp_path / "old", ["naive"], WRONG)
    new = folder(tmp_path / "new", ["naive"])
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert verdicts(result.stdout) == {"naive": "fixed"}


def test_variants_in_one_folder_are_listed_and_built_ins_never_stand_in(marked, tmp_path):
    # kernels/matmul/ has naive and tiled too: neither may fill the gaps here.
    old = folder(tmp_path / "old", ["shared", "naive"])
    new = folder(tmp_path / "new", ["shared", "tiled"])
    json_path, markdown_path = tmp_path / "ab.json", tmp_path / "ab.md"
    # A variant of A that B lacks fails the gate, as compare fails a missing kernel (a
    # slow kernel deleted or renamed must not pass); --allow-missing passes it.
    missing = invoke(old, new, *FAST, "--rounds", "6", "--progress")  # lines in a CI log
    assert "[1/" in missing.stderr and "shared" in missing.stderr
    assert missing.exit_code == 1, (missing.stdout, missing.stderr)
    assert "missing (only in A; fails the gate, --allow-missing passes it):\n  matmul/naive" \
        in missing.stdout and "1 regression" in missing.stdout
    assert "1 missing" in missing.stdout and "removed" not in missing.stdout  # compare's word
    result = invoke(old, new, *FAST, "--rounds", "6", "--json", json_path,
                    "--markdown", markdown_path, "--allow-missing")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert list(verdicts(result.stdout)) == ["shared"]
    assert "added (only in B):\n  matmul/tiled" in result.stdout
    assert "removed (only in A):\n  matmul/naive" in result.stdout
    assert "1 removed" in result.stdout
    saved = load_results(json_path)
    rows = {row.variant: row for row in saved.benchmarks}
    assert sorted(rows) == ["shared@A", "shared@B", "tiled@B"]  # the added one, verified
    assert rows["tiled@B"].status.value == "PASS" and rows["tiled@B"].samples_s
    assert len(rows["shared@A"].samples_s) == 6 * 9  # every round's samples, pooled
    assert rows["shared@A"].rounds == 6 and len(rows["shared@B"].round_medians_s) == 6
    assert rows["shared@A"].source.startswith(str(old))
    assert rows["shared@B"].source.startswith(str(new))
    assert json.loads(json_path.read_text())["complete"] is True
    text = markdown_path.read_text()
    assert "| matmul/shared |" in text and "- matmul/tiled" in text


def test_rounds_alternate_which_side_goes_first(marked, tmp_path, monkeypatch):
    seen = []
    import cudabench.cli.ab as ab

    real = ab.run_plans

    def spy(plans, spec, *args, **kwargs):
        seen.extend(str(plans[job.plan_index].variants[0].variant.path.parents[1].name)
                    for job in kwargs["jobs"])
        return real(plans, spec, *args, **kwargs)

    monkeypatch.setattr(ab, "run_plans", spy)
    result = invoke(folder(tmp_path / "old", ["naive"]), folder(tmp_path / "new", ["naive"]),
                    *FAST, "--rounds", "6")
    assert result.exit_code == 0, result.stderr
    # A warm-up round first (never judged), then the judged rounds, alternating.
    assert seen == ["new", "old"] + ["old", "new", "new", "old"] * 3


def assert_usage(result, *fragments: str) -> None:
    """Check a one-line usage error (exit 2) holding every fragment."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudabench: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_usage_errors(use_fake, tmp_path):
    old = folder(tmp_path / "old", ["naive"])
    other = folder(tmp_path / "other", ["tiled"])
    (tmp_path / "empty").mkdir()
    assert_usage(invoke(tmp_path / "nowhere", old), "OLD_DIR", "no such directory")
    assert_usage(invoke(old, tmp_path / "empty"), "NEW_DIR", "holds no .cu kernel files")
    assert_usage(invoke(old, other), "no variant is in both")
    assert_usage(invoke(old, old, "--op", "dot"), "--op dot", "no dot variant is in both")
    assert_usage(invoke(old, old, "--op", "nope"), "--op nope", "no such op")
    assert_usage(invoke(old, old, "--rounds", "5"), "--rounds 5", "needs 6")
    assert_usage(invoke(old, old, "--threshold", "5"), "--threshold")
    assert_usage(invoke(old, old, "--param", "TILE=8,16"), "--param TILE", "one value")
    assert_usage(invoke(old, old, "--param", "WIDTH=8"), "--param WIDTH", "no compared variant")
    assert_usage(invoke(old, old, "--param", "TILE=12"), "TILE 12", "allows")
    assert_usage(invoke(old, old, "--dtype", "int8"), "--dtype int8")
    # as a run says it, not a list of every variant that "supports ... only"
    assert_usage(invoke(old, old, "--op", "matmul", "--dtype", "float99"),
                 "--dtype float99: matmul supports float16, float32, float64, int32")


# -- the statistics ------------------------------------------------------------------------

def row(median: float, passed: bool = True, variant: str = "naive") -> BenchmarkResult:
    """Return a row with samples around median (or a failed verification)."""
    check = Verification(passed, 0.0, 0.0, 0 if passed else 1, 100, "test")
    return BenchmarkResult(op="matmul", variant=variant, params={}, shape=(8, 8, 8),
                           dims=("M", "K", "N"), dtype="float32", hot=False,
                           samples_s=(median * 0.99, median, median * 1.01), verification=check)


def test_the_sign_interval_takes_the_widest_order_statistics_that_keep_the_level():
    assert min_rounds(0.05) == 6 and min_rounds(0.01) == 8
    assert coverage(10, 2) == pytest.approx(0.9785, abs=1e-4)
    interval = sign_interval([float(v) for v in range(10, 0, -1)], 0.05)
    assert (interval.low, interval.high) == (2.0, 9.0)  # k = 2: the 2nd and 9th of 10
    assert sign_interval([1.0] * 5, 0.05) is None  # 5 values cannot give 95%


def test_a_tiny_alpha_needs_the_rounds_its_level_takes_and_says_its_level():
    # 1 - 1e-300 is 1.0 in floats: 55 rounds "reached" it, and the level read "a 1 interval"
    assert min_rounds(1e-300) == 998 and min_rounds(1e-6) == 21
    assert sign_interval([1.0] * 100, 1e-300) is None
    with pytest.raises(UsageError, match=r"a 1 - 1e-300 interval .* needs 998 to 1000"):
        check_settings(100, 0.005, 1e-300)
    with pytest.raises(UsageError, match=r"--alpha 1e-320: .* more than the 1000 rounds"):
        check_settings(1000, 0.005, 1e-320)
    interval = sign_interval([1.0 + i / 1e4 for i in range(40)], 1e-9)
    assert interval is not None and interval.coverage < 1
    reason = judge([row(1e-3)] * 40, [row(1e-3 * 1.02)] * 40, alpha=1e-9).reason
    assert "the 1 - 7.5e-11 interval" in reason, reason
    # from 55 rounds on, 1 - coverage is 0.0 in floats: it read "the 1 - 0 interval"
    reason = judge([row(1e-3)] * 58, [row(1e-3 * 1.02)] * 58, alpha=1e-17).reason
    assert "the 1 - 6.9e-18 interval" in reason, reason


@pytest.mark.parametrize("ratios, verdict", [
    ([1.03] * 10, Verdict.SLOWER),
    ([0.97] * 10, Verdict.FASTER),
    ([1.0, 1.001, 0.999] * 3 + [1.0], Verdict.SAME),
    ([1.0, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0], Verdict.NOISY),  # too wide
    ([1.004, 1.006, 1.009, 1.006, 1.007, 1.006, 1.008, 1.006, 1.005, 1.009], Verdict.NOISY),
    # +0.4%, its interval +0.1% to +0.8%: a 0.6% slowdown is not ruled out (it was "same")
    ([1.0, 1.001, 1.003, 1.004, 1.004, 1.004, 1.005, 1.006, 1.008, 1.009], Verdict.NOISY),
])
def test_verdicts_rest_on_the_interval_of_the_round_ratios(ratios, verdict):
    result = judge([row(1e-3)] * len(ratios), [row(1e-3 * r) for r in ratios])
    assert result.verdict is verdict, result.reason
    if "reaches past" in result.reason:  # its end named to two decimals (-0.5% read inside)
        assert "reaches past ±0.5% (to +0.80%)" in result.reason, result.reason
    assert result.ratio == pytest.approx(sorted(ratios)[4] / 2 + sorted(ratios)[5] / 2)


def test_a_change_of_exactly_the_threshold_reads_alike_whatever_the_rounding():
    # 672/640 computes a hair above 1.05 and 21/20 a hair below: both are +5% exactly, and
    # a change must be more than the threshold (the first read "reaches inside ±5%")
    for a, b in ((640e-9, 672e-9), (20e-6, 21e-6)):
        result = judge([row(a)] * 10, [row(b)] * 10, threshold=0.05)
        assert result.verdict is Verdict.SAME, result.reason


def test_a_change_whose_sign_differs_from_the_two_sides_medians_says_so():
    # the rounds' ratios are +1% or -1%, their median +1%, while B's median of its rounds'
    # medians lies 1% below A's: the table showed "+1.0%" beside a smaller B, unexplained
    a = [1, 2, 3, 4, 5, 6]
    b = [1.01, 2.02, 2.97, 3.96, 5.05, 6.06]
    result = judge([row(x * 1e-3) for x in a], [row(x * 1e-3) for x in b], threshold=0.05)
    assert result.change == pytest.approx(0.01) and result.b_median_s < result.a_median_s
    assert result.reason.endswith("(the medians of A's and B's rounds differ by -1.0%: the "
                                  "change is the median of the rounds' B/A ratios, paired)")
    alike = judge([row(x * 1e-3) for x in a], [row(x * 1.01e-3) for x in a], threshold=0.05)
    assert "paired" not in alike.reason


def test_one_failing_round_in_b_fails_and_a_failing_a_is_fixed():
    good, bad = [row(1e-3)] * 6, [row(1e-3)] * 5 + [row(1e-3, passed=False)]
    failed = judge(good, bad)
    assert failed.verdict is Verdict.FAILED and failed.regressed
    assert "B FAIL (A PASS): 1 of 100 elements wrong" in failed.reason
    assert judge(bad, good).verdict is Verdict.FIXED
    assert judge(bad, bad).verdict is Verdict.FAILED


def test_a_copy_only_b_runs_says_a_s_was_not_run_and_few_rounds_count_pairs():
    # "6 round(s) with samples; a 95% interval needs 6": B's rounds counted, A's skipped
    skipped = dataclasses.replace(row(1e-3), samples_s=(), skipped="built for sm_100")
    only_b = judge([skipped] * 6, [row(1e-3)] * 6)
    assert only_b.verdict is Verdict.NOISY and not only_b.regressed
    assert only_b.reason == ("A's copy was not run (built for sm_100) where B's was: "
                             "nothing to compare B's with")
    unpaired = dataclasses.replace(row(1e-3), samples_s=())
    few = judge([unpaired] * 3 + [row(1e-3)] * 3, [row(1e-3)] * 6)
    assert few.verdict is Verdict.NOISY
    assert few.reason.startswith("3 round(s) with samples on both sides; a 95% interval "
                                 "needs 6"), few.reason


def test_a_fix_much_slower_than_the_timed_wrong_kernel_it_replaces_is_slower():
    # "fixed", exit 0, for a B twice as slow as A's FAIL rows, timed in every round;
    # `compare` fails the same change ("a fix 1.5x slower is slower")
    wrong = [row(1e-3, passed=False)] * 10
    slow = judge(wrong, [row(2e-3)] * 10)
    assert slow.verdict is Verdict.SLOWER and slow.regressed, slow.reason
    assert slow.reason.startswith("B passes (A FAIL: 1 of 100 elements wrong (test)), but the ")
    assert slow.ratio == pytest.approx(2.0)
    assert judge(wrong, [row(1e-3)] * 10).verdict is Verdict.FIXED
    assert judge(wrong, [row(1.03e-3)] * 10).verdict is Verdict.FIXED  # within drift
    # A's worker killed in its 9th round (the machine, perhaps): 8 rounds timed before it,
    # a 49% slower B passed as "fixed", exit 0
    lost = dataclasses.replace(row(1e-3), samples_s=(), verification=None,
                               error="its worker process died (exit code -9)")
    died = judge([row(1e-3)] * 8 + [lost] * 2, [row(1.49e-3)] * 10)
    assert died.verdict is Verdict.SLOWER, died.reason
    assert died.reason.startswith("B passes (A ERROR: its worker process died")
    suspect = [dataclasses.replace(row(1e-3), suspect="beyond the roof")] * 10
    assert judge(suspect, [row(2e-3)] * 10).verdict is Verdict.FIXED  # no timing believed


def test_a_size_beyond_the_host_s_memory_is_refused_before_anything_runs(marked, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr("cudabench.measure.memory.host_available_bytes", lambda: 2**30)
    a = folder(tmp_path / "a", ["v0"])
    done = invoke(a, a, "--size", "20000", "--rounds", "6")
    assert done.exit_code == 2
    assert "needs" in done.stderr and "would fit" in done.stderr
    assert "Traceback" not in done.stderr


def test_launch_blocking_is_refused_before_anything_runs(marked, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    a = folder(tmp_path / "a", ["v0"])
    done = invoke(a, a, "--size", "32", "--rounds", "6")
    assert done.exit_code == 2 and "CUDA_LAUNCH_BLOCKING=1" in done.stderr


def test_a_copy_b_no_longer_runs_fails_like_a_missing_one(marked, tmp_path):
    # B's header asks for a newer GPU (its row is SKIP) or drops the type compared: B's
    # copy was never measured, and a slow kernel must not pass by opting out of the run.
    old = folder(tmp_path / "old", ["naive", "shared", "tiled"])
    new = folder(tmp_path / "new", ["naive"])
    write_kernel(new / "matmul", "shared", (*MATMUL_HEADER, "// arch: sm_100a"))
    write_kernel(new / "matmul", "tiled", (*MATMUL_HEADER, "// dtypes: float64"))
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert verdicts(result.stdout)["shared"] == "missing"
    assert "B's copy was not run" in result.stdout and "9.0" in result.stdout
    assert "matmul/tiled: B supports float64 only" in result.stdout
    assert "2 regressions" in result.stdout
    allowed = invoke(old, new, *FAST, "--rounds", "6", "--allow-missing")
    assert allowed.exit_code == 0, (allowed.stdout, allowed.stderr)
    assert "no regression" in allowed.stdout


def test_a_failing_a_whose_b_copy_never_ran_is_missing_not_fixed(marked, tmp_path):
    # A wrong, B asking for a newer GPU: "fixed: B passes" said of a copy never run
    old = folder(tmp_path / "old", ["naive"], WRONG)
    new = tmp_path / "new"
    write_kernel(new / "matmul", "naive", (*MATMUL_HEADER, "// arch: sm_100a"))
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert verdicts(result.stdout)["naive"] == "missing"


def test_b_dropping_the_type_of_every_variant_is_missing_not_a_usage_error(marked, tmp_path):
    # it was exit 2, "no variant in both folders supports --dtype None"
    old = folder(tmp_path / "old", ["naive"])
    new = tmp_path / "new"
    write_kernel(new / "matmul", "naive", (*MATMUL_HEADER, "// dtypes: float64"))
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "matmul/naive: B supports float64 only" in result.stdout
    assert invoke(old, new, *FAST, "--rounds", "6", "--allow-missing").exit_code == 0


def test_an_op_b_lacks_entirely_is_missing(marked, tmp_path):
    # only the ops in both folders were looked at: B dropping every dot kernel passed,
    # "no regression: 1 same", dot/atomic listed nowhere
    old = folder(tmp_path / "old", ["shared"])
    new = folder(tmp_path / "new", ["shared"])
    dot = ROOT / "kernels" / "dot"
    (old / "dot").mkdir()
    for source in [dot / "atomic.cu", *dot.glob("*.cuh")]:
        shutil.copy(source, old / "dot" / source.name)
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "missing (only in A; fails the gate, --allow-missing passes it):\n  dot/atomic" \
        in result.stdout
    assert invoke(old, new, *FAST, "--rounds", "6", "--allow-missing").exit_code == 0
    # and the other way round, an op only B has is listed as added, not a failure
    assert invoke(new, old, *FAST, "--rounds", "6").exit_code == 0
    # asked for by name (--op dot), B's dropping it is as missing, not a usage error (exit 2)
    named = invoke(old, new, *FAST, "--rounds", "6", "--op", "dot")
    assert named.exit_code == 1, (named.stdout, named.stderr)
    assert "  dot/atomic" in named.stdout and "1 missing" in named.stdout
    assert invoke(old, new, *FAST, "--rounds", "6", "--op", "dot",
                  "--allow-missing").exit_code == 0
    # a variant of a named op renamed in B (x -> y) is missing, as without --op (it was a
    # usage error that --allow-missing could not pass, where deleting it was missing)
    renamed_a, renamed_b = folder(tmp_path / "ra", ["x"]), folder(tmp_path / "rb", ["y"])
    both = invoke(renamed_a, renamed_b, *FAST, "--rounds", "6", "--op", "matmul")
    assert both.exit_code == 1, (both.stdout, both.stderr)
    assert "  matmul/x" in both.stdout and "added (only in B):\n  matmul/y" in both.stdout
    assert invoke(renamed_a, renamed_b, *FAST, "--rounds", "6", "--op", "matmul",
                  "--allow-missing").exit_code == 0
    # an op A has none of, named: nothing to judge
    assert_usage(invoke(new, old, *FAST, "--rounds", "6", "--op", "dot"),
                 "--op dot: no dot variant is in both folders")


def test_sides_whose_op_files_set_different_work_are_refused(use_fake, tmp_path):
    # B's op file changed the op's default size: A was timed at 4096x1024 and B at
    # 1024x1024, and B read "-67.8% faster", exit 0
    sides = [tmp_path / "a", tmp_path / "b"]
    for side in sides:
        shutil.copytree(ROOT / "examples" / "softmax", side)
    op_file = sides[1] / "softmax.py"
    text = op_file.read_text(encoding="utf-8")
    assert 'default_size = "4096x1024"' in text
    op_file.write_text(text.replace('default_size = "4096x1024"', 'default_size = "1024x1024"'),
                       encoding="utf-8")
    assert_usage(invoke(*sides, "--rounds", "6", "--samples", "5", "--warmup", "0"),
                 "softmax: A and B would not do the same work", "shape",
                 "A 4096x1024 float32, B 1024x1024 float32", "give --size")
    same_size = invoke(*sides, "--rounds", "6", "--samples", "5", "--warmup", "0", "--size",
                       "256x64")
    assert same_size.exit_code in (0, 1), (same_size.stdout, same_size.stderr)
    assert "softmax/naive" in same_size.stdout
    # a FLOP count changed moves rates, not the times ab judges: compared
    text = op_file.read_text(encoding="utf-8")
    assert "5 * rows * cols" in text
    op_file.write_text(text.replace("5 * rows * cols", "4 * rows * cols"), encoding="utf-8")
    counted = invoke(*sides, "--rounds", "6", "--samples", "5", "--warmup", "0", "--size",
                     "256x64")
    assert counted.exit_code in (0, 1), (counted.stdout, counted.stderr)



def test_two_copies_of_an_op_folder_each_use_their_own_helper_modules(use_fake, tmp_path):
    # both sides' op files load in one process, and each imports a `_ref.py` beside it:
    # B's was refused ("_ref was imported from a/_ref.py already"), or would have been A's
    from cudabench.ops.registry import forget_file_ops

    sides = [tmp_path / "a", tmp_path / "b"]
    for side, body in zip(sides, ("return exact(x)", "raise RuntimeError('B reference')")):
        shutil.copytree(ROOT / "examples" / "softmax", side)
        op_file = side / "softmax.py"
        text = op_file.read_text(encoding="utf-8")
        op_file.write_text(text.replace("import numpy as np\n", "import numpy as np\n\n"
                                        "import _ref\n", 1).replace(
            '        x = inputs["x"].astype(np.float64)\n', '        return _ref.reference('
            'inputs["x"])\n', 1), encoding="utf-8")
        (side / "_ref.py").write_text(
            "import numpy as np\n\n\ndef exact(x):\n    x = x.astype(np.float64)\n"
            "    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
            "    return e / e.sum(axis=1, keepdims=True)\n\n\n"
            f"def reference(x):\n    {body}\n", encoding="utf-8")
    forget_file_ops()
    try:
        done = invoke(*sides, "--rounds", "6", "--samples", "5", "--warmup", "0", "--size",
                      "64x64")
    finally:
        forget_file_ops()
    assert done.exit_code == 1, (done.stdout, done.stderr)
    assert "imported from" not in done.stderr
    rows = [line for line in done.stdout.splitlines() if "softmax/" in line]
    assert len(rows) == 2 and all("B ERROR (A PASS)" in line and
                                  "reference raised RuntimeError" in line for line in rows)


def test_a_copy_that_fails_a_round_is_not_run_again(marked, tmp_path, monkeypatch):
    # each round was a plan of its own: a wrong (or hanging, or crashing) B copy ran, and
    # cost its timeout or a fresh worker, in every one of the rounds
    import cudabench.cli.ab as ab

    real, outcomes = ab.run_plans, []

    def spy(*args, **kwargs):
        outcomes.append(real(*args, **kwargs))
        return outcomes[-1]

    monkeypatch.setattr(ab, "run_plans", spy)
    old = folder(tmp_path / "old", ["naive"])
    new = folder(tmp_path / "new", ["naive"], WRONG)
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1 and verdicts(result.stdout) == {"naive": "failed"}
    b_rows = [row for row in outcomes[0].results if row.source.startswith(str(new))]
    assert len(b_rows) == 7  # the warm-up and six rounds, one row each
    # measured once: the later rounds repeat the warm-up's row
    assert len({row.samples_s for row in b_rows}) == 1 and b_rows[0].status.value == "FAIL"
    # a failed copy has no change or interval: its earlier rounds timed a rejected kernel
    cells = [line for line in result.stdout.splitlines() if "matmul/naive" in line][0]
    assert "%" not in cells.split("│")[7] + cells.split("│")[8], cells


def test_ab_takes_a_timeout(marked, tmp_path):
    old = folder(tmp_path / "old", ["naive"])
    assert_usage(invoke(old, old, *FAST, "--rounds", "6", "--timeout", "0"),
                 "--timeout must be > 0")
    assert_usage(invoke(old, old, "--size", "32", "--rounds", "6", "--warmup", "2",
                        "--timeout", "1"),
                 "--timeout 1 s leaves no time to sample: a variant's warm-up (--warmup 2 s)")
    done = invoke(old, old, *FAST, "--rounds", "6", "--timeout", "5")
    assert done.exit_code == 0, (done.stdout, done.stderr)


def ab_of_two_copies(tmp_path: Path, path: Path):
    """Run `ab` (six rounds, to the results file path) on two copies of one naive kernel."""
    old = folder(tmp_path / "old", ["naive"])
    new = folder(tmp_path / "new", ["naive"])
    return invoke(old, new, *FAST, "--rounds", "6", "--json", path)


def stop_after_three_and_a_half_rounds(monkeypatch) -> None:
    """Make ab's run stop (Ctrl-C) after its first 9 jobs: the warm-up and 3.5 rounds of
    one variant."""
    import cudabench.cli.ab as ab

    real = ab.run_plans

    def stopped(plans, spec, on_result, **kwargs):
        jobs = kwargs.pop("jobs")
        real(plans, spec, on_result, jobs=jobs[:9], **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(ab, "run_plans", stopped)


def test_a_stopped_ab_keeps_the_rounds_it_measured(marked, tmp_path, monkeypatch):
    # the rows reached the results file only after every round: Ctrl-C (or a CI job's
    # SIGTERM) an hour in left no file at all, where the README promises the rows so far
    stop_after_three_and_a_half_rounds(monkeypatch)
    path = tmp_path / "ab.json"
    result = ab_of_two_copies(tmp_path, path)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    assert f"2 of its rows are in {path}, marked incomplete" in said, said
    saved = load_results(path)
    assert saved.metadata["complete"] is False
    rows = {row.variant: row for row in saved.benchmarks}
    # round 4 had begun (B first): the rounds both sides ran are kept, paired
    assert rows["naive@A"].rounds == 3 and rows["naive@B"].rounds == 3


def test_ab_stopped_inside_a_row_s_write_keeps_its_rows(marked, tmp_path, monkeypatch):
    # a SIGTERM inside the writer's add of a row: its place was noted before the row was
    # added, and the stop's own write replaced a row that was not there (IndexError, exit 4)
    from cudabench.results.writer import ResultsWriter

    real, calls = ResultsWriter._encode, []

    def stopped_once(self, result):
        calls.append(result)
        if len(calls) == 1:  # the first row's add
            raise KeyboardInterrupt
        return real(self, result)

    monkeypatch.setattr(ResultsWriter, "_encode", stopped_once)
    path = tmp_path / "ab.json"
    result = ab_of_two_copies(tmp_path, path)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    rows = {row.variant: row for row in load_results(path).benchmarks}
    assert set(rows) == {"naive@A", "naive@B"}, rows


def test_ab_stopped_while_its_verdicts_print_keeps_them_in_its_markdown(marked, tmp_path,
                                                                         monkeypatch):
    # --markdown was written after the table printed: a SIGTERM while it printed (a reader
    # that stalled) lost every verdict, unsaid
    import cudabench.cli.ab as ab

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ab.terminal, "render_rows", stopped)
    old = folder(tmp_path / "old", ["naive"])
    summary = tmp_path / "ab.md"
    result = invoke(old, old, *FAST, "--rounds", "6", "--markdown", summary)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    assert "| matmul/naive |" in summary.read_text(encoding="utf-8")
    assert f"the run stopped after measuring: its verdicts are in {summary} (--markdown)" in \
        " ".join(result.stderr.split())


@pytest.mark.parametrize("where, json", [("judge", False), ("_keep_stopped", True)])
def test_a_second_ctrl_c_while_ab_saves_its_verdicts_stops_it_once_they_are_saved(
        marked, tmp_path, monkeypatch, where, json):
    # a second Ctrl-C inside the verdicts' statistics (NumPy's import) lost them all; one
    # while --json's rows were pooled again skipped --markdown's verdicts
    import cudabench.cli.ab as ab

    second_ctrl_c_in(monkeypatch, ab, where)
    stop_after_three_and_a_half_rounds(monkeypatch)
    old = folder(tmp_path / "old", ["naive"])
    summary = tmp_path / "ab.md"
    result = invoke(old, old, *FAST, "--rounds", "6", "--markdown", summary,
                    *(["--json", tmp_path / "ab.json"] if json else []))
    assert result.exit_code == 130, (result.stdout, result.stderr)
    assert "| matmul/naive |" in summary.read_text(encoding="utf-8")


def test_ab_refuses_a_markdown_whose_partial_holds_a_stopped_run_s_rows(marked, tmp_path):
    # it measured, and a stop then kept its verdicts nowhere ("not written over")
    old = folder(tmp_path / "old", ["naive"])
    summary = tmp_path / "ab.md"
    summary.write_text("an earlier job's summary\n", encoding="utf-8")
    (tmp_path / "ab.md.partial").write_text("a stopped run's verdicts\n", encoding="utf-8")
    result = invoke(old, old, *FAST, "--rounds", "6", "--markdown", summary)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert f"--markdown {summary}: {summary}.partial holds the rows of a run that stopped; " \
        "move it away or delete it first" in " ".join(result.stderr.split())
    assert result.stderr.count("\n") == 1 and result.stdout == ""  # before measuring


def test_ab_stopped_before_any_row_leaves_no_file(marked, tmp_path, monkeypatch):
    # an empty file marked incomplete was left, and refused the next run to its path
    import cudabench.cli.ab as ab

    def stopped(plans, spec, on_result, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ab, "run_plans", stopped)
    old = folder(tmp_path / "old", ["naive"])
    path = tmp_path / "ab.json"
    assert invoke(old, old, *FAST, "--rounds", "6", "--json", path).exit_code == 130
    assert not path.exists()


def test_ab_stopped_in_its_warm_up_round_says_it_kept_nothing(marked, tmp_path, monkeypatch):
    # "cudabench: interrupted" alone, and an empty results file marked incomplete, which
    # refused the next run to its path
    import cudabench.cli.ab as ab

    real = ab.run_plans

    def stopped(plans, spec, on_result, **kwargs):
        real(plans, spec, on_result, jobs=kwargs.pop("jobs")[:1], **kwargs)  # warm-up A
        raise KeyboardInterrupt

    monkeypatch.setattr(ab, "run_plans", stopped)
    old = folder(tmp_path / "old", ["naive"])
    path, summary = tmp_path / "ab.json", tmp_path / "ab.md"
    summary.write_text("an earlier job's summary\n", encoding="utf-8")
    result = invoke(old, old, *FAST, "--rounds", "6", "--json", path, "--markdown", summary)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    assert "the run stopped before any round was measured (A and B both): no rows to keep; " \
        f"{path} (--json) was not written, {summary} (--markdown) is as it was" in \
        " ".join(result.stderr.split()), result.stderr
    assert not path.exists() and not (tmp_path / "ab.json.partial").exists()
    assert summary.read_text(encoding="utf-8") == "an earlier job's summary\n"


def test_ab_s_rounds_are_on_disk_as_they_are_measured(marked, tmp_path, monkeypatch):
    # written only on a stop or at the end: a SIGKILL (the OOM killer) an hour in left
    # no file at all
    import cudabench.cli.ab as ab

    real, on_disk = ab.run_plans, []
    path = tmp_path / "ab.json"

    def killed(plans, spec, on_result, **kwargs):
        jobs = kwargs.pop("jobs")
        real(plans, spec, on_result, jobs=jobs[:9], **kwargs)  # the warm-up, 3.5 rounds
        on_disk.append(load_results(path))  # what a SIGKILL here would leave
        raise KeyboardInterrupt

    monkeypatch.setattr(ab, "run_plans", killed)
    assert ab_of_two_copies(tmp_path, path).exit_code == 130
    (saved,) = on_disk
    rows = {row.variant: row for row in saved.benchmarks}
    assert saved.metadata["complete"] is False and set(rows) == {"naive@A", "naive@B"}
    assert rows["naive@A"].rounds == 3 and rows["naive@B"].rounds == 3


def test_ab_says_a_failed_write_of_its_file_as_it_happens(marked, tmp_path, monkeypatch):
    from helpers import first_write_fails

    first_write_fails(monkeypatch)
    old = folder(tmp_path / "old", ["naive"])
    new = folder(tmp_path / "new", ["naive"])
    path = tmp_path / "ab.json"
    done = invoke(old, new, *FAST, "--rounds", "6", "--json", path)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert "cannot write: No space left on device; the run goes on, and writes the file " \
        "again with the next rows" in " ".join(done.stderr.split())
    assert load_results(path).metadata["complete"] is True


def test_a_copy_that_fails_its_warm_up_says_so_and_is_kept_when_stopped(marked, tmp_path,
                                                                         monkeypatch):
    # the row read "round 1 of 6 is the one shown" for a copy that failed in the warm-up
    # (round 1 repeated it, unrun); and a run stopped before round 1 kept no row of it
    old = folder(tmp_path / "old", ["naive"])
    new = folder(tmp_path / "new", ["naive"], WRONG)
    path = tmp_path / "ab.json"
    result = invoke(old, new, *FAST, "--rounds", "6", "--json", path)
    assert result.exit_code == 1 and verdicts(result.stdout) == {"naive": "failed"}
    saved = load_results(path).benchmarks
    assert [row.variant for row in saved] == ["naive@A", "naive@B"]  # as the table: A, B
    rows = {row.variant: row for row in saved}
    b_row = rows["naive@B"]
    assert b_row.status.value == "FAIL" and b_row.rounds == 6, b_row
    assert any("the warm-up round is the one shown (FAIL)" in w for w in b_row.warnings)
    assert not any("round 1 of" in w for w in b_row.warnings), b_row.warnings
    assert rows["naive@A"].status.value == "PASS" and rows["naive@A"].rounds == 6

    import cudabench.cli.ab as ab

    real = ab.run_plans

    def stopped(plans, spec, on_result, **kwargs):
        jobs = kwargs.pop("jobs")
        real(plans, spec, on_result, jobs=jobs[:2], **kwargs)  # the warm-up only
        raise KeyboardInterrupt

    monkeypatch.setattr(ab, "run_plans", stopped)
    path.unlink()
    result = invoke(old, new, *FAST, "--rounds", "6", "--json", path)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    saved = {row.variant: row for row in load_results(path).benchmarks}
    assert set(saved) == {"naive@B"} and saved["naive@B"].status.value == "FAIL"


def test_folders_of_kernels_only_take_their_op_from_kernels_dir(use_fake, tmp_path):
    # OLD/ and NEW/ hold softmax kernels, the op file is elsewhere: ab had no --kernels-dir
    sides = [tmp_path / "old", tmp_path / "new"]
    for side in sides:
        shutil.copytree(ROOT / "examples" / "softmax" / "softmax", side)
    quick = ("--rounds", "6", "--samples", "5", "--warmup", "0", "--size", "64x64")
    assert_usage(invoke(*sides, *quick), "unknown op 'softmax'", "--kernels-dir")
    done = invoke(*sides, *quick, "--kernels-dir", ROOT / "examples" / "softmax")
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert "softmax/naive" in done.stdout and "softmax/block_per_row" in done.stdout
    assert_usage(invoke(*sides, *quick, "--kernels-dir", tmp_path / "none"),
                 f"--kernels-dir {tmp_path / 'none'}: no such directory")
    (tmp_path / "empty").mkdir()  # passed, exit 0: every other command refuses it
    assert_usage(invoke(*sides, *quick, "--kernels-dir", tmp_path / "empty"),
                 f"--kernels-dir {tmp_path / 'empty'}: holds no kernel")


def test_an_op_folder_one_level_down_with_its_kernels_beside_it(use_fake, tmp_path):
    # OLD/softmax/{softmax.py, naive.cu, ...}: each kernel was found twice (once as
    # OLD/*/*.cu, once beside the op file), "also defined by" the same file
    sides = [tmp_path / "old", tmp_path / "new"]
    for side in sides:
        (side / "softmax").mkdir(parents=True)
        for path in [ROOT / "examples" / "softmax" / "softmax.py",
                     *(ROOT / "examples" / "softmax" / "softmax").glob("*.cu")]:
            shutil.copy(path, side / "softmax" / path.name)
    done = invoke(*sides, "--rounds", "6", "--samples", "5", "--warmup", "0", "--size",
                  "64x64")
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert "softmax/naive" in done.stdout and "softmax/block_per_row" in done.stdout


def test_a_variant_only_in_b_is_verified_and_a_wrong_one_fails_the_gate(marked, tmp_path):
    # listed as added and never run: a new kernel with wrong results passed, exit 0
    old = folder(tmp_path / "old", ["naive"])
    new = folder(tmp_path / "new", ["naive"])
    write_kernel(new / "matmul", "fresh", MATMUL_HEADER, f"// {WRONG}\n{MATMUL_BODY}")
    result = invoke(old, new, *FAST, "--rounds", "6", "--json", tmp_path / "ab.json",
                    "--markdown", tmp_path / "ab.md", "--allow-missing")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "added (only in B), failing verification (fails the gate):\n  matmul/fresh: FAIL: " \
        in result.stdout
    assert "1 regression: " in result.stdout and "1 added (1 failing)" in result.stdout
    rows = {row.variant: row for row in load_results(tmp_path / "ab.json").benchmarks}
    assert rows["fresh@B"].status.value == "FAIL"
    assert "matmul/fresh: FAIL" in (tmp_path / "ab.md").read_text(encoding="utf-8")
    # a right one passes, listed as added
    write_kernel(new / "matmul", "fresh", MATMUL_HEADER)
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "added (only in B):\n  matmul/fresh" in result.stdout
    # one its own header keeps from this size: listed, not run, not the run's usage error
    write_kernel(new / "matmul", "fresh", (*MATMUL_HEADER, "// constraint: M >= 4096"))
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "  matmul/fresh: only in B, not run: " in result.stdout, result.stdout


def test_a_variant_of_another_type_only_is_compared_at_its_own_type(marked, tmp_path):
    # ab measured the op's float32 only: the float16-only (tensor-core) kernels were "not
    # compared", and one twice as slow passed, exit 0
    header = (*MATMUL_HEADER, "// dtypes: float16")
    old, new = tmp_path / "old", tmp_path / "new"
    write_kernel(old / "matmul", "half", header)
    write_kernel(new / "matmul", "half", header, f"// ab-test: slower 2.0\n{MATMUL_BODY}")
    folder(old, ["naive"]), folder(new, ["naive"])
    result = invoke(old, new, *FAST, "--rounds", "6")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert verdicts(result.stdout)["half"] == "slower", result.stdout
    assert "float16" in result.stdout and "not compared" not in result.stdout
    # --dtype float32 asked for: not compared, as asked
    asked = invoke(old, new, *FAST, "--rounds", "6", "--dtype", "float32")
    assert "not compared:\n  matmul/half: A supports float16 only" in asked.stdout, asked.stdout


def test_ab_s_markdown_keeps_html_and_links_of_a_file_name_as_text():
    # a pull request's kernel file named `[docs](https:evil)<img src=x>.cu` reached the
    # job summary as a link and HTML (compare's markdown already escaped them)
    from cudabench.analysis.ab import ABRun
    from cudabench.cli.ab import to_markdown

    run = ABRun((), ("dot/[docs](https:evil)<img src=x>",), (), (), 0.01, 0.05, 6)
    text = to_markdown(run, "cudabench ab: A a | B b", "GPU")
    assert "- dot/\\[docs\\](https:evil)&lt;img src=x&gt;" in text, text
    assert "<img" not in text


def test_a_stopped_ab_with_only_markdown_keeps_the_verdicts_on_its_rounds(marked, tmp_path,
                                                                          monkeypatch):
    # without --json, Ctrl-C dropped every round measured without a word
    stop_after_three_and_a_half_rounds(monkeypatch)
    old = folder(tmp_path / "old", ["naive", "gone"])
    new = folder(tmp_path / "new", ["naive"])
    summary = tmp_path / "ab.md"
    summary.write_text("an earlier job's summary\n", encoding="utf-8")
    result = invoke(old, new, *FAST, "--rounds", "6", "--markdown", summary)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    partial = tmp_path / "ab.md.partial"
    assert f"the verdicts on the rounds so far (1 variant) are in {partial}" in said, said
    assert summary.read_text(encoding="utf-8") == "an earlier job's summary\n"
    text = partial.read_text(encoding="utf-8")
    assert "| matmul/naive |" in text and "3 rounds" in text and "incomplete" in text
    # what the run lacked is said as the complete run says it: not "no regression"
    assert "1 regression: " in text and "- matmul/gone" in text, text


@pytest.mark.parametrize("old", [True, False])
@pytest.mark.parametrize("renamed", [False, True])
def test_ab_stopped_in_the_final_write_of_its_results_says_where_its_rows_are(
        marked, tmp_path, monkeypatch, old, renamed):
    # the end's write ran outside the stop's handling: the rows were left in the .partial
    # (or a new file left incomplete) without a word, and no markdown was written
    path, summary = tmp_path / "ab.json", tmp_path / "ab.md"
    stop_in_the_final_write(monkeypatch, path, renamed)
    if old:
        shutil.copy(ROOT / "tests" / "data" / "compare" / "baseline.json", path)
    before = path.read_bytes() if old else None
    copies = folder(tmp_path / "old", ["naive"]), folder(tmp_path / "new", ["naive"])
    result = invoke(*copies, *FAST, "--rounds", "6", "--json", path, "--markdown", summary)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    partial = tmp_path / "ab.json.partial"
    if renamed:  # every row is in the file
        assert f"once its results file was written: its 2 rows are in {path}" in said, said
        assert not partial.exists() and load_results(path).metadata["complete"] is True
    elif old:
        assert f"the run stopped: 2 of its rows are in {partial}; {path} is as it was" in said
        assert path.read_bytes() == before
    else:
        assert f"the run stopped: 2 of its rows are in {path}, marked incomplete" in said
    rows = load_results(partial if old and not renamed else path)
    assert {row.variant: row.rounds for row in rows.benchmarks} == {"naive@A": 6, "naive@B": 6}
    assert "| matmul/naive |" in summary.read_text(encoding="utf-8")
