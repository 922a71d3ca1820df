"""Helpers every layer uses: numbers and names as people read them, lazy imports."""
