"""Showing results: one run-table model, rendered for the terminal (Rich) and markdown.

Nothing here imports cudabench.measure: renderers see results, never the GPU.
"""
