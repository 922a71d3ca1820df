"""Judging measurements: statistics over samples and the comparison of two runs."""
