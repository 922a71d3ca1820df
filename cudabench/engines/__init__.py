"""Engines: the Engine protocol, the PyCUDA engine (the only pycuda importer), the NumPy fake
engine for tests, and their toolchain (nvcc, cubins, the CUDA driver API, TMA tensor maps)."""
