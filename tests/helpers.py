"""Helpers shared by several test files: writing kernel files with a header."""

from __future__ import annotations

from pathlib import Path

# A small valid matmul variant: one launch, one parameter.
MATMUL_HEADER = (
    "// cudabench: matmul",
    "// description: a test variant",
    "// param TILE: default 16; allowed 8, 16, 32",
    "// launch k: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE",
)

# A body that compiles for every op: `k` takes the matmul arguments.
MATMUL_BODY = (
    'extern "C" __global__ void k(const DTYPE* A, const DTYPE* B, DTYPE* C,\n'
    "                             int M, int K, int N) {}\n"
)


def write_kernel(folder: Path, name: str, header: tuple[str, ...] | list[str],
                 body: str = MATMUL_BODY) -> Path:
    """Write folder/name.cu with the given header lines, a blank line, then body."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.cu"
    path.write_text("\n".join(header) + "\n\n" + body, encoding="utf-8")
    return path


def header_with(*lines: str, op: str = "matmul") -> list[str]:
    """Return a valid header for op (one launch `k: grid 1; block 1`) plus extra lines."""
    return [f"// cudabench: {op}", *lines, "// launch k: grid 1; block 1"]
