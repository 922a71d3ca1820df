"""Time to a trustworthy result (issue 29): the wall time of the runs it targets, with
--profile-time's breakdown of each.

    python3 benchmarks/time_to_result.py             # on a GPU (PyCUDA, nvcc)
    python3 benchmarks/time_to_result.py --fake      # the same runs on the fake engine
    python3 benchmarks/time_to_result.py --out DIR   # keep each run's JSON and the table
    python3 benchmarks/time_to_result.py --two-gpus  # and the suite over GPUs and Ray

Each run is a fresh `python3 -m cudabench` process, as a user would start it; its wall
time is the child's, from start to exit. "Compiled" runs are run once untimed first, so the
kernels are in the compile cache; "cold" runs get an empty cache directory
(XDG_CACHE_HOME) and so compile everything. Python's own bytecode is written before the
runs, as an installed package has it (PYTHONDONTWRITEBYTECODE unset: cudabench
byte-compiled, the libraries it imports imported once), unless --host-bytecode leaves it
to the host (one that sets PYTHONDONTWRITEBYTECODE and ships no bytecode compiles every
module in every process). A benchmark, not a test: it asserts nothing, it
prints the figures and how far each is from its target.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    """One run of the issue's table: its command, the wall time to beat, how it starts."""

    name: str
    args: tuple[str, ...]
    target_s: float
    warm: bool = False  # run once untimed first: the kernels are compiled
    cold: bool = False  # an empty compile cache
    share_target: float | None = None  # GPU sampling share of the wall to reach
    ray_head: bool = False  # join a Ray cluster started beforehand (`ray start --head`)
    kept: bool = False  # --keep-workers: its worker is ended after (stop_all)


TARGETS = (
    Target("suite.toml, one GPU", ("run", str(ROOT / "scripts/multi-gpu/suite.toml"),
                                   "--device", "0"), 12.0, warm=True, share_target=0.10),
    Target("matmul 1000 --tile 16, compiled", ("matmul", "--size", "1000", "--tile", "16"),
           1.0, warm=True),
    Target("transpose 8192", ("transpose", "--size", "8192"), 3.0, warm=True),
    # The same two with the worker kept from the untimed run before (--keep-workers): the
    # command connects to a warm worker (CUDA context, CuPy) instead of starting one.
    Target("matmul 1000 --tile 16, compiled, --keep-workers",
           ("matmul", "--size", "1000", "--tile", "16", "--keep-workers", "60"), 1.0,
           warm=True, kept=True),
    Target("transpose 8192, --keep-workers", ("transpose", "--size", "8192",
                                              "--keep-workers", "60"), 3.0, warm=True,
           kept=True),
    Target("--best, 48 configurations, cold cache",
           ("matmul", "--size", "1000", "--variant", "blocktile2d",
            "-p", "BM=64,128", "-p", "BN=64,128", "-p", "BK=8,16,32", "-p", "TM=4,8",
            "-p", "TN=4,8", "--best", "--no-vendor"), 8.0, cold=True),
)

# On a host with two or more GPUs (--two-gpus): the suite over every GPU, then through a
# local Ray; the target is Ray within 1.2x of --devices all.
SPREAD = (
    Target("suite.toml, --devices all", ("run", str(ROOT / "scripts/multi-gpu/suite.toml"),
                                         "--devices", "all"), 0.0, warm=True),
    Target("suite.toml, --cluster ray", ("run", str(ROOT / "scripts/multi-gpu/suite.toml"),
                                         "--cluster", "ray"), 0.0, warm=True),
    # As a cluster's user runs it: Ray already up (RAY_ADDRESS), cudabench joins it, so the
    # Ray start and stop a lone command pays (~3 s each way) are not in its wall time.
    Target("suite.toml, --cluster ray, Ray running",
           ("run", str(ROOT / "scripts/multi-gpu/suite.toml"), "--cluster", "ray"), 0.0,
           warm=True, ray_head=True),
    # And with the actors kept from the untimed run before it (--keep-workers): the timed
    # run finds each GPU's actor, worker and CUDA context warm.
    Target("suite.toml, --cluster ray, Ray running, --keep-workers",
           ("run", str(ROOT / "scripts/multi-gpu/suite.toml"), "--cluster", "ray",
            "--keep-workers", "120"), 0.0, warm=True, ray_head=True),
)
RAY_TARGET = 1.2

FAKE_MAIN = """
import sys
if __name__ == "__main__":
    import cudabench.cli.commands as commands
    from cudabench.engines.fake_engine import FakeSpec
    spec = FakeSpec()
    commands.engine_spec = lambda device: spec
    from cudabench.cli import cli
    sys.exit(cli.main(sys.argv[1:], standalone_mode=True))
"""


def run_once(target: Target, fake: bool, out: Path, cache: Path,
             bytecode: bool = False) -> dict[str, object]:
    """Run the target's command once; return its wall time, exit code and profile.
    bytecode: let Python write its compiled modules (False: the host's way)."""
    stem = target.name.split(",")[0] + ("_kept" if target.kept else "")
    results = out / (stem.replace(" ", "_").replace("-", "") + ".json")
    command = [sys.executable, *(["-c", FAKE_MAIN] if fake else ["-m", "cudabench"]),
               *target.args, "--profile-time", "--json", str(results), "--quiet"]
    env = {**bytecode_env(bytecode), "XDG_CACHE_HOME": str(cache), "PYTHONUNBUFFERED": "1"}
    if target.ray_head:
        env["RAY_ADDRESS"] = "auto"  # the head started by main()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    (out / (results.stem + ".log")).write_text(done.stdout + done.stderr)
    profile: dict[str, object] = {}
    if results.exists():
        profile = json.loads(results.read_text()).get("profile", {})
    return {"wall_s": wall, "exit": done.returncode, "profile": profile}


def bytecode_env(bytecode: bool) -> dict[str, str]:
    """Return this process's environment, with Python allowed to write its bytecode where
    bytecode is True (else as the host says)."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# What a command and its GPU worker import, besides cudabench: imported once by
# write_bytecode, so that no timed run compiles them.
LIBRARIES = ("numpy", "click", "rich.console", "rich.progress", "rich.table", "pynvml",
             "pycuda.driver", "pycuda.compiler", "cupy")


def write_bytecode() -> None:
    """Write the bytecode an installed cudabench has: cudabench byte-compiled, and each
    library it imports imported once (each writes its own where its folder is writable)."""
    env = bytecode_env(True)
    package = ROOT / "cudabench"
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(package)],
                   env=env, capture_output=True)
    for name in LIBRARIES:  # one process each: a missing one (no GPU) stops nothing
        subprocess.run([sys.executable, "-c", f"import {name}"], env=env, capture_output=True)


@contextlib.contextmanager
def ray_head(wanted: bool, bytecode: bool = False) -> Iterator[None]:
    """Start a local Ray head with this host's GPUs for the block (`ray start --head`), and
    stop it after; nothing when not wanted. Its workers keep their bytecode as the runs do."""
    if not wanted:
        yield
        return
    ray = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
    subprocess.run([*ray, "start", "--head", "--include-dashboard=false",
                    "--disable-usage-stats"], check=True, capture_output=True,
                   env=bytecode_env(bytecode))
    try:
        yield
    finally:
        subprocess.run([*ray, "stop"], capture_output=True)


def top_phases(profile: dict[str, object], count: int = 3) -> str:
    """Return the largest phases of a profile, command's and rows' together."""
    phases: dict[str, float] = {}
    for key in ("phases", "row_phases"):
        for name, seconds in dict(profile.get(key) or {}).items():  # type: ignore[call-overload]
            phases[name] = phases.get(name, 0.0) + float(seconds)
    ranked = sorted(phases.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{name} {seconds:.2f}" for name, seconds in ranked)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fake", action="store_true", help="run on the fake engine")
    parser.add_argument("--out", type=Path, help="keep each run's JSON, log and the table")
    parser.add_argument("--only", help="run the targets whose name contains this")
    parser.add_argument("--two-gpus", action="store_true",
                        help="also the suite over every GPU and through Ray (their ratio)")
    parser.add_argument("--host-bytecode", action="store_true",
                        help="compile Python modules as the host says (by default their "
                             "bytecode is written before the runs, as an installed "
                             "package has it)")
    options = parser.parse_args()
    out = options.out or Path(tempfile.mkdtemp(prefix="ttr-"))
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| run | wall s | target s | GPU sampling s | share | exit | largest phases |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    warm_cache = Path(tempfile.mkdtemp(prefix="ttr-cache-"))
    caches = [warm_cache]  # compile caches made here: removed at the end
    # A package installed by pip comes byte-compiled; a host that sets
    # PYTHONDONTWRITEBYTECODE (container images often do) and ships modules without their
    # bytecode compiles every module from source in every process: 0.3 s and more of each
    # command's start on the GPU hosts. By default the bytecode is written before the runs.
    bytecode = not options.host_bytecode
    if bytecode:
        write_bytecode()
    print(f"bytecode: {'written before the runs' if bytecode else 'as the host says'}"
          f" (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})",
          flush=True)
    walls: dict[str, float] = {}
    for target in (*TARGETS, *(SPREAD if options.two_gpus else ())):
        if options.only and options.only not in target.name:
            continue
        cache = warm_cache
        if target.cold:
            cache = Path(tempfile.mkdtemp(prefix="ttr-cold-"))
            caches.append(cache)
        with ray_head(target.ray_head, bytecode):
            if target.warm:
                run_once(target, options.fake, out, cache, bytecode)
            measured = run_once(target, options.fake, out, cache, bytecode)
        if target.kept:  # the next target starts from a GPU no kept worker holds
            from cudabench.runner.kept_worker import stop_all

            stop_all()
        profile = dict(measured["profile"])  # type: ignore[call-overload]
        gpu = float(profile.get("gpu_sampling_s", 0.0))
        wall = float(measured["wall_s"])  # type: ignore[arg-type]
        share = f"{gpu / wall:.1%}" + (f" (≥ {target.share_target:.0%})"
                                       if target.share_target else "")
        walls[target.name] = wall
        bound = f"≤ {target.target_s:g}" if target.target_s else "-"
        lines.append(f"| {target.name} | {wall:.2f} | {bound} | {gpu:.3f} | "
                     f"{share} | {measured['exit']} | {top_phases(profile)} |")
        print(lines[-1], flush=True)
    for ray_run in SPREAD[1:]:
        if SPREAD[0].name in walls and ray_run.name in walls:
            ratio = walls[ray_run.name] / walls[SPREAD[0].name]
            lines.append(f"\n{ray_run.name.split(', ', 1)[1]} against --devices all: "
                         f"{ratio:.2f}x (target ≤ {RAY_TARGET}x)")
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
    table = "\n".join(lines)
    print(("fake engine\n" if options.fake else "") + table)
    (out / "time_to_result.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
