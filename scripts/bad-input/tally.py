"""Count how cudabench handles bad input, per command family (tests/badinput.py).

    python3 scripts/bad-input/tally.py [--examples 300] [--seed 0]

Runs each family's hypothesis strategy for --examples inputs on the CPU (benchmark
commands stop after their checks: no GPU work), and prints a markdown table of the exit
codes and of the rules broken (exit 4, exit 0 on bad input, a gate passed on a broken or
regressed file, a file changed), for docs/measurements.md. Exit 1 if any rule was broken.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import badinput  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

CODES = ("exit 0", "exit 1", "exit 2", "exit 3")


def tally(family: str, examples: int, start: int) -> tuple[collections.Counter[str], list[str]]:
    """Run one family; return its outcome counts and the first few broken rules."""
    strategy, make = badinput.FAMILIES[family]
    counts: collections.Counter[str] = collections.Counter()
    broken: list[str] = []

    @seed(start)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(spec: dict) -> None:
        with tempfile.TemporaryDirectory(prefix="bad-input-") as folder:
            case = make(spec, Path(folder))
            result = badinput.run(case, Path(folder))
            found = badinput.violations(case, result)
            counts[f"exit {result.exit_code}"] += 1
            counts["violations"] += bool(found)
            if found and len(broken) < 5:
                broken.append(f"{' '.join(case.args)[:120]}: {found[0][:200]}")

    run()
    return counts, broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    lines = ["| family | inputs tried | " + " | ".join(CODES) + " | exit 4 | rules broken | s |",
             "|---|---:|" + "---:|" * (len(CODES) + 3)]
    failures = []
    for family in badinput.FAMILIES:
        began = time.monotonic()
        counts, broken = tally(family, options.examples, options.seed)
        tried = sum(counts[key] for key in counts if key.startswith("exit "))
        lines.append(f"| {family} | {tried} | " + " | ".join(str(counts[c]) for c in CODES)
                     + f" | {counts['exit 4']} | {counts['violations']} | "
                     f"{time.monotonic() - began:.0f} |")
        failures += [f"{family}: {line}" for line in broken]
    print("\n".join(lines))
    for line in failures:
        print(f"- {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
