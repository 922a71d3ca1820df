"""Bad input, family by family: hypothesis strategies of specs, files made from a spec, and
the rules every outcome must keep.

A spec is plain data (what to put where); `make(spec, folder)` writes its files and returns
a Case: the command line, whether the input holds a bad value, whether compare's gate must
fail, and the files that must not change. `violations(case, result)` lists every rule the
outcome broke: an internal error (exit 4) or traceback, exit 0 on bad input, a gate that
passed a broken or regressed current file, an input file changed, or an existing file
changed by a command that ended in an error. tests/test_fuzz_commands.py runs each family with a
bounded example count; scripts/bad-input/tally.py runs more and counts the outcomes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from click.testing import CliRunner
from hypothesis import strategies as st

from cudabench.cli import cli
from cudabench.results import RunOutcome

DATA = Path(__file__).parent / "data" / "compare"
HUGE = "9" * 5000  # past Python's int-to-str limit
VARIANT_ROWS = 6  # baseline.json: six kernel rows, then the copy (a reference row)


@dataclass
class Case:
    """One command line to run, and what its outcome must respect."""

    args: list[str]
    bad: bool  # holds a value the command must refuse: exit 0 is wrong
    gate_must_fail: bool = False  # compare: the current file is regressed or broken
    inputs: dict[Path, bytes] = field(default_factory=dict)  # never changed
    existing: dict[Path, bytes] = field(default_factory=dict)  # unchanged when it fails


def snapshot(*paths: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in paths if path.is_file()}


@contextlib.contextmanager
def no_gpu_work() -> Iterator[None]:
    """Stop benchmark commands after their checks: the input is what is tried."""
    with mock.patch("cudabench.cli.commands.run_plans", _skips_only), \
            mock.patch("cudabench.measure.memory.device_free_bytes", lambda index: None), \
            mock.patch("cudabench.cli.commands.prestart", lambda spec: None):
        yield


def _skips_only(plans: Any, spec: Any, on_result: Any = None, on_start: Any = None,
                **placement: Any) -> RunOutcome:
    """Stand in for run_plans: measure nothing, but add the SKIP rows the plans hold, as
    the real pipeline does (a run whose every variant was left out must still exit 2)."""
    from cudabench.runner.pipeline import outcome_of

    return outcome_of(plans, [], [], on_result or (lambda result: None))


def run(case: Case, folder: Path) -> Any:
    """Run a case in folder, in process."""
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 keeps them apart anyway
        runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with no_gpu_work():
            return runner.invoke(cli, case.args)
    finally:
        os.chdir(cwd)


def violations(case: Case, result: Any) -> list[str]:
    """Return each rule the outcome broke ([] when it kept them all)."""
    code = result.exit_code
    text = (result.stdout or "") + (getattr(result, "stderr", "") or "")
    found = []
    if code == 4 or "internal error" in text or "Traceback" in text:
        found.append(f"internal error (exit {code}): {text.strip()[-300:]}")
    if case.bad and code == 0:
        found.append("exit 0 on bad input")
    if case.gate_must_fail and code == 0:
        found.append("the gate passed a regressed or broken current file")
    for path, content in case.inputs.items():
        if not path.is_file() or path.read_bytes() != content:
            found.append(f"an input file changed: {path.name}")
    if code not in (0, 1, 3):  # an error, not a verdict (a gate or a verification fails)
        for path, content in case.existing.items():
            if not path.is_file() or path.read_bytes() != content:
                found.append(f"a failed command changed {path.name}")
    return found


def outcome(case: Case, result: Any) -> str:
    """Name the outcome for the tally: the exit code, or the first rule broken."""
    broken = violations(case, result)
    return f"VIOLATION: {broken[0][:60]}" if broken else f"exit {result.exit_code}"


# -- benchmark commands: flags --------------------------------------------------------------

GOOD_FLAGS = [("--size", "16"), ("--size", "16,32"), ("--size", "16..64:x2"),
              ("--dtype", "float32"), ("--seed", "7"), ("--warmup", "0"),
              ("--min-samples", "3"), ("--max-time", "0.01"), ("--no-vendor", None),
              ("--no-batch", None), ("--quiet", None)]
BAD_FLAGS = [("--size", ""), ("--size", "0"), ("--size", "-5"), ("--size", "abc"),
             ("--size", HUGE), ("--size", "1<<99"), ("--size", "64..16:x2"),
             ("--size", "16..64:x1"), ("--size", "1x2x3x4x5"), ("--size", "16..999999:+1"),
             ("--size", "16.."), ("--size", f"16..{HUGE}:x2"), ("--dtype", "float8"),
             ("--dtype", ""), ("--device", "-1"), ("--device", HUGE), ("--seed", "-1"),
             ("--seed", HUGE), ("--warmup", "-1"), ("--warmup", "nan"),
             ("--min-samples", "0"), ("--max-time", "-1"), ("--max-time", "inf"),
             ("--kernels-dir", ""), ("--kernels-dir", "no/such/folder"),
             ("--variant", "nosuch"), ("--variant", ""), ("--json", ""), ("--json", "."),
             ("--markdown", "."), ("--csv", ""), ("-p", "=3"), ("-p", f"TILE={HUGE}"),
             ("-p", "TILE="), ("--timeout", "0"), ("--precision", "-1")]
OPS = ["matmul", "transpose", "dot"]


@st.composite
def op_flags(draw: Callable[..., Any]) -> dict[str, Any]:
    """A benchmark command and a few flags, at least one of them bad."""
    command = draw(st.sampled_from(OPS))
    good = draw(st.lists(st.sampled_from(GOOD_FLAGS), max_size=4))
    bad = draw(st.lists(st.sampled_from(BAD_FLAGS), min_size=1, max_size=3))
    flags = draw(st.permutations(good + bad))
    return {"command": command, "flags": flags}


REPEATABLE = {"--variant", "-p", "--kernels-dir"}  # the others: the last one given counts


def make_op_flags(spec: dict[str, Any], folder: Path) -> Case:
    args = [spec["command"]]
    effective: dict[str, Any] = {}
    bad = False
    for flag, value in spec["flags"]:
        args += [flag] if value is None else [flag, value]
        if flag in REPEATABLE:
            bad |= (flag, value) in BAD_FLAGS
        else:
            effective[flag] = value
    bad |= any(pair in BAD_FLAGS for pair in effective.items())
    return Case(args, bad=bad)


# -- run: suites ----------------------------------------------------------------------------

GOOD_KEYS = [("op", '"matmul"'), ("size", '"16"'), ("sizes", '["16", "32"]'),
             ("dtype", '"float32"'), ("params", "{ TILE = 16 }"), ("hot", "false"),
             ("seed", "3")]
BAD_KEYS = [("op", '"nosuch"'), ("op", "3"), ("size", '""'), ("size", f'"{HUGE}"'),
            ("sizes", "[]"), ("sizes", '"16"'), ("sizes", '["16..1000000:+1"]'),
            ("dtype", '"float8"'), ("params", "{ TILE = 7 }"), ("params", f"{{ TILE = {HUGE} }}"),
            ("params", '{ TILE = "x" }'), ("params", "{ A = [" + ", ".join(map(str, range(1, 300)))
                                                       + "], B = [" + ", ".join(
                                                           map(str, range(1, 300))) + "] }"),
            ("hot", '"yes"'), ("seed", "-1"), ("seed", HUGE), ("nonsense", "1"),
            ("variants", '["nosuch"]'), ("variants", "3"), ("x", "[" * 2000 + "]" * 2000)]


@st.composite
def suites(draw: Callable[..., Any]) -> dict[str, Any]:
    """A one-benchmark suite with at least one bad key (later keys replace earlier)."""
    good = draw(st.lists(st.sampled_from(GOOD_KEYS), max_size=4))
    bad = draw(st.lists(st.sampled_from(BAD_KEYS), min_size=1, max_size=2))
    return {"keys": draw(st.permutations(good + bad)), "timing": draw(st.booleans())}


def make_suite(spec: dict[str, Any], folder: Path) -> Case:
    keys = dict([("op", '"matmul"'), *spec["keys"]])
    bad = any(pair in BAD_KEYS for pair in keys.items())
    text = ("[timing]\nmax_time = 0.01\n\n" if spec["timing"] else "") + "[[benchmark]]\n"
    text += "".join(f"{key} = {value}\n" for key, value in keys.items())
    suite = folder / "cudabench.toml"
    suite.write_text(text, encoding="utf-8")
    return Case(["run", "cudabench.toml"], bad=bad, inputs=snapshot(suite))


# -- compare: results files -----------------------------------------------------------------

REGRESS = ["drop", "rename", "slower", "skip", "error", "timeout", "fail", "few-slower",
           "reparam"]
CORRUPT = ["pass-no-samples", "status-mismatch", "telemetry-junk", "energy-junk",
           "huge-int", "negative-sample"]
BENIGN = ["noop", "faster", "reorder"]


@st.composite
def compare_edits(draw: Callable[..., Any]) -> dict[str, Any]:
    """Edits to the current file of compare (baseline.json against itself, edited)."""
    edits = draw(st.lists(st.tuples(st.sampled_from(REGRESS + CORRUPT + BENIGN),
                                    st.integers(0, VARIANT_ROWS - 1),
                                    st.floats(1.5, 10.0)), min_size=1, max_size=4))
    return {"edits": edits, "incomplete": draw(st.booleans()),
            "markdown": draw(st.sampled_from(["none", "fresh", "existing", "baseline",
                                              "current", "link-to-baseline"]))}


STATUS_EDITS = {"skip", "error", "timeout", "fail", "pass-no-samples", "status-mismatch"}
FIELD_CORRUPTION = {"telemetry-junk", "energy-junk", "huge-int", "negative-sample"}


def _edit(row: dict[str, Any], kind: str, factor: float, marks: dict[str, Any]) -> None:
    """Apply one edit to a row, noting in marks what it made of the row."""
    if kind in ("slower", "faster", "few-slower"):
        if kind == "few-slower":
            row["samples_s"] = row["samples_s"][:2]
            marks["few"] = True
        scale = 1 / factor if kind == "faster" else factor
        row["samples_s"] = [s * scale for s in row["samples_s"]]
        marks["scale"] *= scale
    elif kind in ("rename", "reparam"):
        if kind == "rename":
            row["variant"] += "_renamed"
        else:
            row["params"] = {**row["params"], "EXTRA": 1}
        marks["missing"] = True
    elif kind in STATUS_EDITS:
        if kind == "status-mismatch" and marks.get("mismatched"):
            return  # a second flip would undo the first: the row already contradicts itself
        marks["mismatched"] = kind == "status-mismatch"
        _status_edit(row, kind)
        marks["status"] = "corrupt" if kind in ("pass-no-samples", "status-mismatch") \
            else "regress"
    elif kind in FIELD_CORRUPTION:
        marks["corrupt"] = True
        if kind == "telemetry-junk":
            row["telemetry"] = {"sm_clock_mhz": "fast", "power_w": [1]}
        elif kind == "energy-junk":
            row["energy"] = {"joules": "many"}
        elif kind == "huge-int":
            row["throughput"]["flops"] = "__HUGE__"
        else:
            row["samples_s"] = [-1.0, *row["samples_s"][1:]]


def _status_edit(row: dict[str, Any], kind: str) -> None:
    """Turn a row SKIP, ERROR, TIMEOUT or FAIL (consistently), or make it inconsistent."""
    if kind == "pass-no-samples":  # stated PASS without samples: corrupt whatever it was
        row["samples_s"], row["status"] = [], "PASS"
        return
    if kind == "status-mismatch":  # a stated status its other fields do not bear out
        row["status"] = "FAIL" if row["status"] == "PASS" else "PASS"
        return
    row["samples_s"], row["error"], row["skipped"] = [], None, None
    if kind == "skip":
        row["skipped"], row["status"], row["verification"] = "no", "SKIP", None
    elif kind in ("error", "timeout"):
        row["error"], row["status"], row["verification"] = "boom", kind.upper(), None
    else:
        row["verification"] = {"passed": False, "rel_error": 0.5, "max_abs_error": 1.0,
                               "bad_elements": 3, "total_elements": 9, "criterion": "x"}
        row["status"], row["samples_s"] = "FAIL", [1e-3] * 5


def _verdict(marks: dict[str, Any]) -> str:
    """Return what the gate must make of a row: corrupt, regress, ok or maybe."""
    if marks["corrupt"] or marks["status"] == "corrupt":
        return "corrupt"
    if marks["dropped"] or marks["missing"] or marks["status"] == "regress":
        return "regress"
    if marks["scale"] > (1.03 if marks["few"] else 1.06):
        return "regress"
    return "ok" if marks["scale"] <= 1.0 or marks["few"] else "maybe"  # near the threshold


def make_compare(spec: dict[str, Any], folder: Path) -> Case:
    document = json.loads((DATA / "identical.json").read_text(encoding="utf-8"))
    rows = document["benchmarks"]
    marks = [{"scale": 1.0, "few": False, "missing": False, "status": None, "corrupt": False,
              "dropped": False} for _ in rows]
    for kind, index, factor in spec["edits"]:
        if marks[index]["dropped"]:
            continue
        if kind == "drop":
            marks[index]["dropped"] = True
        elif kind != "reorder":
            _edit(rows[index], kind, factor, marks[index])
    kept = [row for row, mark in zip(rows, marks) if not mark["dropped"]]
    if any(kind == "reorder" for kind, _, _ in spec["edits"]):
        kept.reverse()
    document["benchmarks"] = kept
    if spec["incomplete"]:
        document["complete"] = False
    baseline, current = folder / "baseline.json", folder / "current.json"
    baseline.write_bytes((DATA / "baseline.json").read_bytes())
    current.write_text(json.dumps(document).replace('"__HUGE__"', HUGE), encoding="utf-8")
    states = {_verdict(mark) for mark in marks}
    args = ["compare", "baseline.json", "current.json", "--db", "none.db"]
    existing: dict[Path, bytes] = {}
    target = spec["markdown"]
    refused = target in ("baseline", "current", "link-to-baseline")
    if target != "none":
        path = {"fresh": folder / "summary.md", "existing": folder / "summary.md",
                "baseline": baseline, "current": current,
                "link-to-baseline": folder / "link.md"}[target]
        if target == "existing":
            path.write_text("kept\n", encoding="utf-8")
            existing = snapshot(path)
        if target == "link-to-baseline":
            os.symlink(baseline, path)
        args += ["--markdown", path.name]
    return Case(args, bad="corrupt" in states or refused,
                gate_must_fail=bool(states & {"corrupt", "regress"}) or spec["incomplete"],
                inputs=snapshot(baseline, current), existing=existing)


# -- report: results files with random values at random places -----------------------------

JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                        st.floats(allow_nan=False), st.text(max_size=5),
                        st.lists(st.integers(), max_size=3), st.just({}), st.just({"a": "b"}))
FIELDS = ["samples_s", "status", "verification", "telemetry", "energy", "params", "shape",
          "dtype", "op", "variant", "throughput", "launches", "counters", "transfers", "device",
          "kind", "hot", "skipped", "error", "sample_clocks_mhz", "batch_samples_s"]


@st.composite
def report_edits(draw: Callable[..., Any]) -> dict[str, Any]:
    return {"edits": draw(st.lists(st.tuples(st.integers(0, 6), st.sampled_from(FIELDS),
                                             JSON_VALUES), min_size=1, max_size=3))}


def make_report(spec: dict[str, Any], folder: Path) -> Case:
    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    for index, name, value in spec["edits"]:
        document["benchmarks"][index][name] = value
    path = folder / "results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    out = folder / "report.md"
    out.write_text("kept\n", encoding="utf-8")
    return Case(["report", "results.json", "--markdown", "report.md"], bad=False,
                inputs=snapshot(path), existing=snapshot(out))


# -- history stores -------------------------------------------------------------------------

@st.composite
def stores(draw: Callable[..., Any]) -> dict[str, Any]:
    return {"content": draw(st.one_of(st.binary(max_size=64), st.sampled_from(
        [b"", b"SQLite format 3\x00" + b"\x00" * 80, b"{}", b"not a database"]))),
        "command": draw(st.sampled_from(["show", "check", "compare", "plot"]))}


def make_store(spec: dict[str, Any], folder: Path) -> Case:
    store = folder / "store.db"
    store.write_bytes(spec["content"])
    (folder / "current.json").write_bytes((DATA / "identical.json").read_bytes())
    args = {"show": ["history", "show", "--db", "store.db"],
            "check": ["history", "check", "current.json", "--db", "store.db"],
            "compare": ["compare", "current.json", "current.json", "--db", "store.db"],
            "plot": ["history", "plot", "out.png", "--db", "store.db"]}[spec["command"]]
    # A file that is no store: whatever a command makes of it, it may not crash on it, and
    # a command that fails leaves it as it was.
    return Case(args, bad=False, inputs=snapshot(folder / "current.json"),
                existing=snapshot(store))


# -- headers --------------------------------------------------------------------------------

HEADER_LINES = ["// param TILE: default 16; allowed 8, 16, 32", "// param TILE: default 7",
                f"// param TILE: default {HUGE}", "// dtypes: float32", "// dtypes: float8",
                "// launch k: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE",
                "// launch k: grid 1; block 1", "// launch k: grid 2**99999; block 1",
                "// launch k: grid N<<100000; block 1", "// launch k: grid cdiv(N, 0); block 1",
                "// launch k: grid " + "(" * 500 + "1" + ")" * 500 + "; block 1",
                f"// launch k: grid {HUGE}; block 1", "// launch k: grid 1; block 0",
                "// launch k: grid 1; block 1; dynamic_shared -1",
                "// launch k: grid 1; block 1; dynamic_shared 10**30",
                "// shared_bytes: TILE*TILE*9999999", "// description: x", "// arch: sm_9z",
                "// tensor_map A: box 0, 0", "// launch: grid; block", "// cudabench: nosuch"]


@st.composite
def headers(draw: Callable[..., Any]) -> dict[str, Any]:
    return {"lines": draw(st.lists(st.sampled_from(HEADER_LINES), min_size=1, max_size=5))}


def make_header(spec: dict[str, Any], folder: Path) -> Case:
    kernels = folder / "kernels"
    kernels.mkdir(exist_ok=True)
    path = kernels / "v.cu"
    path.write_text("// cudabench: matmul\n" + "\n".join(spec["lines"]) + "\n\n"
                    'extern "C" __global__ void k(const float* A, const float* B, float* C,'
                    " int M, int K, int N) {}\n", encoding="utf-8")
    return Case(["matmul", "--size", "16", "--kernels-dir", "kernels", "--variant", "v"],
                bad=False, inputs=snapshot(path))


# -- output paths ---------------------------------------------------------------------------

OUTPUT_KINDS = ["fresh", "existing", "folder", "suite", "link-to-suite", "dotdot-suite",
                "new-folder", "kernel", "same-as-json"]


@st.composite
def outputs(draw: Callable[..., Any]) -> dict[str, Any]:
    flags = draw(st.lists(st.tuples(st.sampled_from(["--json", "--markdown", "--csv"]),
                                    st.sampled_from(OUTPUT_KINDS)),
                          min_size=1, max_size=3, unique_by=lambda pair: pair[0]))
    return {"flags": flags, "fail": draw(st.booleans())}


def make_outputs(spec: dict[str, Any], folder: Path) -> Case:
    suite = folder / "cudabench.toml"
    size = '"0"' if spec["fail"] else '"16"'  # a suite that fails its checks, or passes them
    # variants named: the stand-in measures nothing, and a default float32 matmul run whose
    # only rows are the float16 tensor-core rungs' SKIPs would exit 2 as "nothing measured"
    suite.write_text(f'[[benchmark]]\nop = "matmul"\nsize = {size}\n'
                     'variants = ["mine", "naive"]\n', encoding="utf-8")
    kernels = folder / "kernels"
    kernels.mkdir(exist_ok=True)
    kernel = kernels / "mine.cu"
    kernel.write_text("// cudabench: matmul\n// launch k: grid 1; block 1\n\n"
                      'extern "C" __global__ void k(const float* A, const float* B, float* C,'
                      " int M, int K, int N) {}\n", encoding="utf-8")
    (folder / "sub").mkdir(exist_ok=True)
    args = ["run", "cudabench.toml", "--kernels-dir", "kernels"]
    bad, existing, taken = spec["fail"], {}, set()
    for flag, kind in spec["flags"]:
        name = {"fresh": f"out{flag}", "existing": f"old{flag}", "folder": "sub",
                "suite": "cudabench.toml", "link-to-suite": f"link{flag}",
                "dotdot-suite": "sub/../cudabench.toml", "new-folder": f"new/deep/out{flag}",
                "kernel": "kernels/mine.cu", "same-as-json": "out--json"}[kind]
        if kind == "existing":
            (folder / name).write_text("kept\n", encoding="utf-8")
            existing.update(snapshot(folder / name))
        if kind == "link-to-suite":
            os.symlink(suite, folder / name)
        target = os.path.realpath(folder / name)
        bad |= kind in ("folder", "suite", "link-to-suite", "dotdot-suite", "kernel")
        bad |= target in taken
        taken.add(target)
        args += [flag, name]
    return Case(args, bad=bad, inputs=snapshot(suite, kernel), existing=existing)


# -- ab -------------------------------------------------------------------------------------

AB_BAD = [("--rounds", "0"), ("--rounds", "-1"), ("--samples", "1"), ("--threshold", "5"),
          ("--threshold", ""), ("--threshold", "abc"), ("--alpha", "2"), ("--size", "0"),
          ("--size", HUGE), ("--op", "nosuch"), ("--dtype", "float8"), ("--warmup", "-1"),
          ("-p", "=1"), ("--json", ""), ("--markdown", "."), ("--device", "-1"),
          ("--seed", "-1")]


@st.composite
def ab_flags(draw: Callable[..., Any]) -> dict[str, Any]:
    return {"flags": draw(st.lists(st.sampled_from(AB_BAD), min_size=1, max_size=3)),
            "same": draw(st.booleans())}


def make_ab(spec: dict[str, Any], folder: Path) -> Case:
    import shutil

    kernels = Path(__file__).parent.parent / "kernels" / "matmul"
    for side in ("old", "new"):
        if not (folder / side).exists():
            shutil.copytree(kernels, folder / side)
    args = ["ab", "old", "old" if spec["same"] else "new"]
    for flag, value in spec["flags"]:
        args += [flag, value]
    return Case(args, bad=True, inputs=snapshot(*(folder / "old").iterdir()))


FAMILIES: dict[str, tuple[Any, Callable[[dict[str, Any], Path], Case]]] = {
    "benchmark flags": (op_flags(), make_op_flags),
    "run suites": (suites(), make_suite),
    "compare files": (compare_edits(), make_compare),
    "report files": (report_edits(), make_report),
    "history stores": (stores(), make_store),
    "kernel headers": (headers(), make_header),
    "output paths": (outputs(), make_outputs),
    "ab flags": (ab_flags(), make_ab),
}
