"""Search one space of a matmul rung by brute force, random and bayes (and Kernel Tuner,
when importable) on a GPU, in one run: wall time, configurations measured, and each
winner against the brute-force best. Not a timed test; it needs a GPU (and Optuna for bayes).

    python benchmarks/tuning.py [--kernels-dir kernels]
        [--variant async_double_buffer] [--size 4096] [--fraction 0.25] [--widen]
        [--count-only]

With --widen (the default) the rung's header is copied into a scratch folder with BM and
BN allowed to be 256 too, and two constraints (threads per block, shared memory per
block) that prune what cannot launch: the ladder's own allowed values give at most 288
configurations (async_double_buffer), fewer than the 500 the comparison asks for. The
kernel's source is unchanged; a configuration it computes wrongly fails verification and
is never chosen. Each strategy runs as its own `cudabench matmul --best` process with
--no-tune-cache (so none reuses another's measurements); the compiled cubins are shared
(the compile cache), so brute force, run first, pays the compiles. Quick timing
(--min-samples 5 --max-time 0.1) keeps the whole comparison in minutes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--warmup", "0.02", "--min-samples", "5", "--max-samples", "30", "--max-time", "0.1",
         "--no-vendor", "--no-batch", "--progress"]
WIDER = {"BM": "64, 128, 256", "BN": "64, 128, 256"}
CONSTRAINTS = [
    "(BM // WM) * (BN // WN) * 32 <= 1024",
    "STAGES * (BK * (BM + 16 // ELEM_SIZE) + BK * BN) * ELEM_SIZE <= 232448",  # sm_90: 227 KiB
]


WIDE_PREFIX = "wide_"  # the widened copy's name: a built-in of the same name would clash


def widened(source: Path, folder: Path) -> Path:
    """Copy the rung, as wide_NAME, with the wider allowed values and the constraints;
    return the folder."""
    text = source.read_text()
    for name, values in WIDER.items():
        text = re.sub(rf"(// param {name}: default \d+; allowed )[^\n]*", rf"\g<1>{values}",
                      text)
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("// launch"))
    lines[at:at] = [f"// constraint: {c}" for c in CONSTRAINTS]
    target = folder / "matmul"
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{WIDE_PREFIX}{source.name}").write_text("\n".join(lines))
    return folder


def space_size(folder: Path, variant: str, size: str) -> tuple[int, int]:
    """Return (valid configurations, pruned ones) of the variant's allowed values."""
    from cudabench.planning.plan import Request
    from cudabench.tuning.space import build_spaces

    request = Request("matmul", size=size, variants=(variant,), kernels_dirs=(folder,))
    (space,) = build_spaces([request], {}, explore=True)
    return len(space.plans), sum(space.pruned.values())


def run(strategy: str, budget: int, folder: Path, variant: str, size: str, out: Path,
        resume: Path | None = None) -> dict[str, object]:
    """Run one search in its own process; return its wall time, rows and winner. With
    resume (brute force only), the search keeps its tuning cache there: a search cut
    short by a call's time limit picks up where it stopped when run again on that folder."""
    results, winners = out / f"{strategy}.json", out / f"{strategy}.toml"
    keep = resume is not None and strategy == "brute"
    command = [sys.executable, "-m", "cudabench", "matmul", "--size", size, "--variant",
               variant, "--kernels-dir", str(folder), "--best", "--strategy", strategy,
               "--budget", str(budget), *([] if keep else ["--no-tune-cache"]), "--seed", "1",
               *QUICK, "--json", str(results), "--best-out", str(winners)]
    env = {**os.environ, **({"CUDABENCH_CACHE_DIR": str(resume)} if keep else {})}
    log = out / f"{strategy}.log"  # written as it runs: a search cut short keeps its trail
    started = time.perf_counter()
    with log.open("w") as sink:
        done = subprocess.run(command, text=True, stdout=sink, stderr=subprocess.STDOUT,
                              env=env)
    wall = time.perf_counter() - started
    print(f"{strategy}: exit {done.returncode} after {wall:.0f} s; log {log}", flush=True)
    rows = json.loads(results.read_text())["benchmarks"] if results.is_file() else []
    match = re.search(r"params = \{ (.*) \}", winners.read_text()) if winners.is_file() else None
    winner = dict((k, int(v)) for k, v in re.findall(r"(\w+) = (\d+)", match[1])) if match else {}
    return {"strategy": strategy, "wall_s": wall, "rows": rows, "winner": winner,
            "code": done.returncode}


def median_of(rows: list[dict], params: dict) -> float | None:
    """Return the median a run measured for params (None if it did not pass there)."""
    for row in rows:
        if row["params"] == params and row["status"] == "PASS" and row.get("stats"):
            return float(row["stats"]["median_s"])
    return None


def kernel_tuner(folder: Path, variant: str, size: int, budget: int, entry: str
                 ) -> dict | None:
    """The same space through Kernel Tuner's random sampler with the same budget, if it is
    importable: Kernel Tuner compiles, times and checks on its own (PyCUDA backend; its
    answer is NumPy's product, compared with a relative tolerance of 1e-3).

    Kernel Tuner's backends never raise a kernel's dynamic shared memory limit past the
    default 48 KiB (cudabench opts in to 227 KiB), so it searches the configurations that
    fit 48 KiB; its winner is also read from the brute-force run for the comparison."""
    try:
        import kernel_tuner
        import numpy as np
    except ImportError:
        return None
    path = folder / "matmul" / f"{variant}.cu"
    header = [line for line in path.read_text().splitlines() if line.startswith("// param")]
    params: dict[str, list[int]] = {
        m[1]: [int(v) for v in m[2].split(",")]
        for m in (re.match(r"// param (\w+): default \d+; allowed (.*)", line)
                  for line in header) if m}
    params["block_size_x"] = [32 * n for n in (1, 2, 4, 8, 16, 32)]

    def shared_bytes(p: dict) -> int:  # the header's dynamic_shared, float32
        return p.get("STAGES", 1) * (p["BK"] * (p["BM"] + 4) + p["BK"] * p["BN"]) * 4

    def allowed(p: dict) -> bool:
        return (p["block_size_x"] == (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32
                and shared_bytes(p) <= 48 * 1024)

    rng = np.random.default_rng(1)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    c = np.zeros_like(a)
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    n = np.int32(size)

    def close(answer: list, result: list, atol: float | None = None) -> bool:
        return bool(np.allclose(result[2], answer[2], rtol=1e-3, atol=0))

    started = time.perf_counter()
    found, _ = kernel_tuner.tune_kernel(
        entry, str(path), (size, size), [a, b, c, n, n, n], params,
        grid_div_x=["BN"], grid_div_y=["BM"], block_size_names=["block_size_x"],
        restrictions=allowed, smem_args={"size": shared_bytes},
        answer=[None, None, expected, None, None, None], verify=close,
        # Given defines replace Kernel Tuner's own: the tunable parameters are named again.
        defines={"DTYPE": "float", "ACC_TYPE": "float", "OUT_TYPE": "float",
                 "ELEM_SIZE": 4, "ACC_SIZE": 4, "OUT_SIZE": 4,
                 **{k: (lambda p, k=k: p[k]) for k in params if k != "block_size_x"}},
        strategy="random_sample", strategy_options={"max_fevals": budget}, verbose=False,
        lang="PYCUDA", iterations=7)
    timed = [r for r in found if isinstance(r.get("time"), float)]
    best = min(timed, key=lambda r: r["time"], default=None)
    return {"wall_s": time.perf_counter() - started, "measured": len(found),
            "failed": len(found) - len(timed),
            "winner": {k: best[k] for k in params if k != "block_size_x"} if best else {}}


def main() -> int:
    """Count the space, run the strategies, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels-dir", type=Path, default=ROOT / "kernels")
    parser.add_argument("--variant", default="async_double_buffer")
    parser.add_argument("--size", default="4096")
    parser.add_argument("--fraction", type=float, default=0.25)
    parser.add_argument("--no-widen", dest="widen", action="store_false")
    parser.add_argument("--count-only", action="store_true",
                        help="Count the space (no GPU) and stop.")
    parser.add_argument("--strategies", default="brute,random,bayes,kernel_tuner",
                        help="Comma-separated, run in this order: brute, random, bayes, "
                        "kernel_tuner.")
    parser.add_argument("--brute-json", type=Path,
                        help="An earlier brute-force run's results file to compare against "
                        "(when brute is not among --strategies).")
    parser.add_argument("--out", type=Path, help="Keep each run's results files here.")
    parser.add_argument("--resume-dir", type=Path,
                        help="Keep the brute-force search's tuning cache here, so that a run "
                        "cut short resumes (the cache folder: CUDABENCH_CACHE_DIR).")
    options = parser.parse_args()
    source = options.kernels_dir / "matmul" / f"{options.variant}.cu"
    scratch = Path(tempfile.mkdtemp(prefix="cudabench-tuning-"))
    out = options.out or scratch
    out.mkdir(parents=True, exist_ok=True)
    folder = widened(source, scratch / "kernels") if options.widen else options.kernels_dir
    variant = f"{WIDE_PREFIX}{options.variant}" if options.widen else options.variant
    valid, pruned = space_size(folder, variant, options.size)
    budget = max(1, int(valid * options.fraction))
    print(f"space: matmul/{variant} at {options.size}: {valid} configurations "
          f"({pruned} pruned by constraints); random and bayes get {budget}", flush=True)
    if options.count_only:
        return 0
    asked = options.strategies.split(",")
    runs = [run(s, valid if s == "brute" else budget, folder, variant,
                options.size, out, options.resume_dir) for s in asked if s != "kernel_tuner"]
    brute = next((r for r in runs if r["strategy"] == "brute"), None)
    if brute is None and options.brute_json is not None:
        raw = options.brute_json.read_bytes()
        rows = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["benchmarks"]
        passed = [r for r in rows if r["status"] == "PASS" and r.get("stats")]
        fastest = min(passed, key=lambda r: r["stats"]["median_s"], default=None)
        brute = {"strategy": "brute (earlier)", "rows": rows,
                 "winner": fastest["params"] if fastest else {}}
    best_s = median_of(brute["rows"], brute["winner"]) if brute else None
    print(f"{'strategy':10} {'wall s':>8} {'measured':>9} {'failed':>7} "
          f"{'winner / brute best':>20} {'(in brute run)':>15}  winner")
    for r in runs:
        rows = r["rows"]
        own = median_of(rows, r["winner"])
        again = median_of(brute["rows"], r["winner"]) if brute else None
        failed = sum(1 for row in rows if row["status"] != "PASS")
        ratio = f"{own / best_s:.3f}" if own and best_s else "-"
        ratio2 = f"{again / best_s:.3f}" if again and best_s else "-"
        print(f"{r['strategy']:10} {r['wall_s']:8.1f} {len(rows):9d} {failed:7d} "
              f"{ratio:>20} {ratio2:>15}  {r['winner']} (exit {r['code']})", flush=True)
    if "kernel_tuner" not in asked:
        return 0
    tuned = kernel_tuner(folder, variant, int(options.size.split("x")[0]), budget,
                         f"matmul_{options.variant}")
    if tuned is None:
        print("kernel_tuner: not importable; skipped")
    else:
        again = median_of(brute["rows"], tuned["winner"]) if brute else None
        print(f"{'kt-random':10} {tuned['wall_s']:8.1f} {tuned['measured']:9d} "
              f"{tuned['failed']:7d} "
              f"{'-':>20} {f'{again / best_s:.3f}' if again and best_s else '-':>15}  "
              f"{tuned['winner']}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
