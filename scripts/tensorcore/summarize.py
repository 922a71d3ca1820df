#!/usr/bin/env python3
"""Summarise scripts/tensorcore/run.sh's results files against issue 26 (no GPU needed).

    python3 scripts/tensorcore/summarize.py --verify V.json [...] --bench B.json [...]

Verify files: every row of a tensor-core rung must PASS, except a TMA rung's SKIP at a
shape whose K or N is not a multiple of 8 halves (its tensor maps cannot describe rows that
are not 16 bytes apart; the skip must say so). Anything else is listed and makes exit 1.

Bench files: per benchmark, each row's median, TFLOP/s and share of cuBLAS (the vendor
row's median over the row's), and for the rungs the issue's target at 4096^3: mma_sync
>= 30%, mma_async >= 45%, wgmma_tma and wgmma_ws >= 70% (100% the stretch). A missed target
is printed as MISS; it does not change the exit status (the measurement is the result).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict

RUNGS = ("mma_sync", "mma_async", "wgmma_async", "wgmma_tma", "wgmma_ws")
TMA_RUNGS = ("wgmma_tma", "wgmma_ws")
TARGETS = {"mma_sync": 0.30, "mma_async": 0.45, "wgmma_tma": 0.70, "wgmma_ws": 0.70}
TMA_SKIP = "TMA needs a multiple of 16 bytes"


def rows_of(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                rows += json.load(handle).get("benchmarks", [])
        except (OSError, ValueError) as exc:
            print(f"{path}: unreadable ({exc})")
            rows.append({"variant": path, "status": "UNREADABLE", "shape": [], "params": {}})
    return rows


def params_text(row: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in (row.get("params") or {}).items()) or "defaults"


def verify(paths: list[str]) -> int:
    """Print each rung's verification tally; return the number of unexpected rows."""
    bad = 0
    tally: dict[str, Counter] = defaultdict(Counter)
    for row in rows_of(paths):
        name, status = row["variant"], row["status"]
        if name not in RUNGS and status != "UNREADABLE":
            continue
        shape = "x".join(map(str, row.get("shape", [])))
        m_k_n = row.get("shape") or [0, 0, 0]
        expected_skip = (name in TMA_RUNGS and status == "SKIP"
                         and (m_k_n[1] % 8 or m_k_n[2] % 8)
                         and TMA_SKIP in (row.get("skipped") or ""))
        tally[name][status if status != "SKIP" or not expected_skip else "SKIP (TMA rows)"] += 1
        if status != "PASS" and not expected_skip:
            bad += 1
            why = row.get("error") or row.get("skipped") or row.get("suspect") or ""
            verification = row.get("verification") or {}
            detail = (f"{verification.get('bad_elements')} of "
                      f"{verification.get('total_elements')} bad, rel error "
                      f"{verification.get('rel_error')}" if verification else "")
            print(f"  UNEXPECTED {name} {shape} {params_text(row)}: {status} "
                  f"{str(why)[:300]} {detail}")
    for name in RUNGS:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(tally[name].items())) or "no rows"
        print(f"  {name:<10} {counts}")
    return bad


def bench(paths: list[str]) -> None:
    """Print each benchmark's rows with their share of cuBLAS and the rungs' targets."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows_of(paths):
        groups[(tuple(row.get("shape", [])), row.get("dtype"), row.get("hot", False))].append(row)
    for (shape, dtype, hot), rows in groups.items():
        print(f"\n== matmul {'x'.join(map(str, shape))} {dtype}{' hot L2' if hot else ''}")
        vendor = next((r for r in rows if r.get("kind") == "vendor"
                       and r["status"] == "PASS"), None)
        reference = vendor["stats"]["median_s"] if vendor else None
        best: dict[str, tuple[float, str]] = {}
        for row in rows:
            median = (row.get("stats") or {}).get("median_s")
            flops = (row.get("throughput") or {}).get("gflops")
            share = reference / median if reference and median else None
            launch = (row.get("launches") or [{}])[0]
            name = row["variant"]
            print(f"  {name:<10} {params_text(row):<28} {row['status']:<7} "
                  f"{'-' if median is None else f'{median * 1e6:9.1f} us':>12} "
                  f"{'-' if not flops else f'{flops / 1e3:7.1f} TFLOP/s':>15} "
                  f"{'-' if share is None else f'{share:6.1%} of cuBLAS':>16} "
                  f"regs {launch.get('registers', '-')} local {launch.get('local_bytes', '-')}")
            if name in TARGETS and row["status"] == "PASS" and share is not None and not hot:
                if name not in best or share > best[name][0]:
                    best[name] = (share, params_text(row))
        if shape == (4096, 4096, 4096) and dtype == "float16" and not hot:
            print("  targets at 4096^3 (best PASS row of each rung, cold L2):")
            for name, target in TARGETS.items():
                if name not in best:
                    print(f"    {name:<10} no PASS row")
                    continue
                share, params = best[name]
                verdict = "MET" if share >= target else "MISS"
                print(f"    {name:<10} {share:6.1%} of cuBLAS (target {target:.0%}) {verdict}"
                      f"  [{params}]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", nargs="*", default=[])
    parser.add_argument("--bench", nargs="*", default=[])
    args = parser.parse_args()
    bad = 0
    if args.verify:
        print("== verification (every rung's rows; SKIP only where a tensor map cannot be made)")
        bad = verify(args.verify)
        print(f"  {bad} unexpected row(s)")
    if args.bench:
        bench(args.bench)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
