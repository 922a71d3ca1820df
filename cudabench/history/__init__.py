"""Benchmark history: recorded runs in a SQLite store, steps and drifts, history gates.

At the level of render: it reads results and analysis, never measure.
"""

from pathlib import Path

# Here, not in records.py: the commands' --db help names it without importing the store.
DEFAULT_PATH = Path(".cudabench") / "history.db"
