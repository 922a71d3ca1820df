"""Where cudabench's own files lie: its package and its built-in kernels, which the catalog
reads on every run and no output may be written into."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def builtin_kernels_dir() -> Path:
    """Return the folder of the built-in kernels, in a source checkout or an install."""
    checkout = PACKAGE_DIR.parent / "kernels"
    # A checkout's own first: an editable install of another checkout maps
    # cudabench.kernels to its kernels, whichever checkout's package runs (PYTHONPATH).
    if (PACKAGE_DIR.parent / "pyproject.toml").is_file() and (checkout / "__init__.py").is_file():
        return checkout
    try:
        from importlib.resources import files

        installed = Path(str(files("cudabench.kernels")))
    except (ModuleNotFoundError, TypeError):
        installed = None
    if installed is not None and installed.is_dir():
        return installed
    return checkout


def own_folder_of(path: Path) -> Path | None:
    """Return cudabench's folder (its package, or its built-in kernels) that holds the
    resolved path, else None."""
    for folder in (PACKAGE_DIR, builtin_kernels_dir().resolve()):
        if path == folder or folder in path.parents:
            return folder
    return None
