"""Kernel files: discovery, strict header parsing, launch arithmetic."""

from __future__ import annotations

from cudabench.catalog.discovery import Catalog, builtin_kernels_dir, discover
from cudabench.catalog.headers import parse_header
from cudabench.catalog.variants import ALL_VARIANTS, KernelVariant, Launch, ParamSpec

__all__ = ["ALL_VARIANTS", "Catalog", "KernelVariant", "Launch", "ParamSpec",
           "builtin_kernels_dir", "discover", "parse_header"]
