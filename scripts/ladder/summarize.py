#!/usr/bin/env python3
"""Summarise cudabench results files against issue 25's goals (no GPU needed).

    python3 scripts/ladder/summarize.py RESULTS.json [...]

Per benchmark: each row's status, median, GFLOP/s or GB/s, its ratio to the vendor row
(vendor median / row median) and to the device-to-device copy (row GB/s / copy GB/s),
registers and local (spilled) bytes of its first launch; then, where issue 25 sets a goal
for that benchmark, the best ladder variant (a rung of rungs.py, in kernels/, or any kernel
of a --kernels-dir under scripts/ladder/: drafts) against it.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rungs import LADDER  # noqa: E402  (beside this script)

# (op, shape, dtype) -> (what the goal compares with, the ratio to reach): issue 25's targets
GOALS = {
    ("matmul", (4096, 4096, 4096), "float32"): ("vendor", 0.90),
    ("matmul", (1000, 1000, 1000), "float32"): ("vendor", 0.85),
    ("transpose", (8192, 8192), "float32"): ("copy", 0.97),
    ("transpose_inplace", (8192,), "float32"): ("copy", 0.90),
    ("dot", (1 << 26,), "float32"): ("copy", 1.00),
}


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds * 1e9:.4g} ns"


def main(paths: list[str]) -> int:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            print(f"{path}: unreadable ({exc})")
            continue
        for row in data.get("benchmarks", []):
            key = (row["op"], tuple(row["shape"]), row["dtype"], row.get("hot", False))
            groups[key].append(row)
    for (op, shape, dtype, hot), rows in groups.items():
        print(f"\n== {op} {'x'.join(map(str, shape))} {dtype}{' hot' if hot else ''}")
        vendor = next((r for r in rows if r["kind"] == "vendor" and r["status"] == "PASS"), None)
        copy = next((r for r in rows if r["kind"] == "reference"), None)
        best = None
        for row in rows:
            stats, tp = row.get("stats") or {}, row.get("throughput") or {}
            median = stats.get("median_s")
            vs_vendor = (vendor["stats"]["median_s"] / median
                         if vendor and median and row is not vendor else None)
            vs_copy = (tp["gbps"] / copy["throughput"]["gbps"]
                       if copy and tp.get("gbps") and row is not copy else None)
            launch = (row.get("launches") or [{}])[0]
            rate = (f"{tp['gflops']:,.0f} GFLOP/s" if copy is None and tp.get("gflops")
                    else f"{tp['gbps']:,.0f} GB/s" if tp.get("gbps") else "-")
            params = " ".join(f"{k}={v}" for k, v in (row.get("params") or {}).items())
            why = row.get("error") or row.get("skipped") or row.get("suspect") or ""
            print(f"  {row['variant']:<22} {row['status']:<7} {fmt_time(median):>11} "
                  f"{rate:>18}  vs vendor {'-' if vs_vendor is None else f'{vs_vendor:.3f}':>5}"
                  f"  of copy {'-' if vs_copy is None else f'{vs_copy:.3f}':>5}"
                  f"  regs {launch.get('registers', '-')} local {launch.get('local_bytes', '-')}"
                  f"  {params}{'  ' + str(why)[:160] if why else ''}")
            ladder = row["kind"] == "variant" and (
                row["variant"] in LADDER.get(op, ()) or "scripts/ladder/" in (row.get("source") or ""))
            goal = GOALS.get((op, shape, dtype))
            if ladder and row["status"] == "PASS" and goal and not hot:
                ratio = vs_vendor if goal[0] == "vendor" else vs_copy
                if ratio is not None and (best is None or ratio > best[0]):
                    best = (ratio, row["variant"], params)
        goal = GOALS.get((op, shape, dtype))
        if goal and not hot:
            what = "cuBLAS (vendor median / variant median)" if goal[0] == "vendor" \
                else "the copy (GB/s ratio)"
            if best is None:
                print(f"  GOAL {goal[1]:.2f}x of {what}: no passing ladder variant with a "
                      "ratio")
            else:
                verdict = "REACHED" if best[0] >= goal[1] else "not reached"
                print(f"  GOAL {goal[1]:.2f}x of {what}: best ladder variant {best[1]} "
                      f"({best[2]}) {best[0]:.3f} -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
