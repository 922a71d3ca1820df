"""Turning a plan into results: the engine seam, timing policy, pipeline and workers.

Only pycuda_engine.py imports pycuda, and only when an engine is opened.
"""
