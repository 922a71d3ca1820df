#!/usr/bin/env python3
"""Compact lines from cudabench results files, for the issue-25 draft call (draft_call_2.sh).

    python3 scripts/ladder/draft_summary.py FILE.json...

Per benchmark (op, shape, dtype) of each file: one line per row, fastest first: variant,
parameters, status, median and min (cold L2, one launch), GB/s, the row's speed relative to
the device-to-device copy of the same run (copy median / row median: >= 0.97 is issue 25's
transpose target, >= 1.00 its dot target), and the same ratio from the batch (warm L2,
back-to-back) times where the run took them. A row whose cold-L2 ratio beats its warm one by
much more than the baselines' does is suspect of gaining from the flush memset's write-back
rather than from moving bytes faster (see the drafts' comments on cache hints).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def median(values):
    return statistics.median(values) if values else None


def fmt_us(seconds):
    return "-" if seconds is None else f"{seconds * 1e6:8.1f}"


def main(paths: list[str]) -> int:
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            print(f"{path}: unreadable ({exc})")
            continue
        groups = defaultdict(list)
        for row in data.get("benchmarks", []):
            key = (row.get("op"), tuple(row.get("shape") or ()), row.get("dtype"))
            groups[key].append(row)
        for (op, shape, dtype), rows in groups.items():
            copy = next((r for r in rows if r.get("variant") == "memcpy_dtod"), None)
            copy_med = (copy or {}).get("stats", {}) or {}
            copy_med = copy_med.get("median_s")
            copy_batch = median((copy or {}).get("batch_samples_s") or [])
            print(f"== {path}: {op} {'x'.join(map(str, shape))} {dtype} "
                  f"(copy {fmt_us(copy_med).strip()} us cold, "
                  f"{fmt_us(copy_batch).strip()} us warm)")
            print(f"   {'variant':<20} {'params':<52} {'status':<7} {'median':>8} {'min':>8} "
                  f"{'GB/s':>7} {'vs copy':>7} {'warm':>8} {'warm vs':>7}")

            def order(row):
                med = (row.get("stats") or {}).get("median_s")
                return med if med is not None else float("inf")

            for row in sorted(rows, key=order):
                stats = row.get("stats") or {}
                med, low = stats.get("median_s"), stats.get("min_s")
                gbps = (row.get("throughput") or {}).get("gbps")
                batch = median(row.get("batch_samples_s") or [])
                ratio = f"{copy_med / med:7.3f}" if copy_med and med else "      -"
                warm = f"{copy_batch / batch:7.3f}" if copy_batch and batch else "      -"
                params = " ".join(f"{k}={v}" for k, v in (row.get("params") or {}).items())
                print(f"   {row.get('variant', '?'):<20} {params[:52]:<52} "
                      f"{row.get('status', '?'):<7} {fmt_us(med)} {fmt_us(low)} "
                      f"{(f'{gbps:7.0f}' if gbps else '      -')} {ratio} {fmt_us(batch)} {warm}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
