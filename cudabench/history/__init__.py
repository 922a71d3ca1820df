"""Benchmark history: recorded runs in a SQLite store, steps and drifts, history gates.

At the level of render: it reads results and analysis, never measure.
"""
