"""Find kernel variants: the built-in kernels/ folder and the user's --kernels-dir folders."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from cudabench.catalog.headers import parse_header
from cudabench.catalog.variants import KernelVariant
from cudabench.common.infiles import (  # check_folders: the catalog's callers'
    MAX_SOURCE_BYTES,
    check_folders,
    read_capped,
    refuse_found_unreadable,
)
from cudabench.common.own_files import builtin_kernels_dir
from cudabench.errors import KernelFileError, UsageError
from cudabench.ops import Op, load_ops
from cudabench.ops.registry import op_files, package_kernel_folders, skipped_name

Catalog = dict[str, dict[str, KernelVariant]]  # op -> variant name -> variant

_PARSED: dict[tuple[object, ...], KernelVariant] = {}


def _parsed(path: Path, ops: dict[str, Op]) -> KernelVariant:
    """Return the file's parsed header, parsed once per content of the file and set of
    ops: a sweep plans each of its points (a file rewritten within the file system's
    time resolution is parsed again: the key is its bytes, not its modification time)."""
    try:
        content = read_capped(path, MAX_SOURCE_BYTES)
    except OSError:  # unreadable, endless: parse_header says so, naming the file
        return parse_header(path, ops=ops)
    key = (path.resolve(), hashlib.sha256(content).digest(),
           tuple(sorted((name, id(op)) for name, op in ops.items())))
    variant = _PARSED.get(key)
    if variant is None:
        variant = _PARSED[key] = parse_header(path, ops=ops)
    return variant


def kernel_files(folder: Path) -> list[Path]:
    """Return a folder's kernel files, FOLDER/*.cu and FOLDER/*/*.cu, as op files are found:
    a file or subfolder named with `_` is helper code (`_common.cu`, which kernels
    #include), not a variant, and one named with `.` is hidden (skipped_name). One that is
    no file (a pipe, whose reading waits for a writer forever; a loop of links) is refused."""
    paths = [path for path in sorted([*folder.glob("*.cu"), *folder.glob("*/*.cu")])
             if not skipped_name(path.name)
             and (path.parent == folder or not skipped_name(path.parent.name))]
    for path in paths:
        refuse_found_unreadable(path, "a kernel")
    return paths


def op_folders_below(folders: Iterable[Path]) -> list[Path]:
    """Return the folders of op files found one level down (FOLDER/softmax/softmax.py):
    their kernels are beside them (FOLDER/softmax/softmax/*.cu), as with the op folder
    given itself."""
    given = {Path(folder).resolve() for folder in folders}
    return list(dict.fromkeys(path.parent for path in op_files(folders)
                              if path.parent not in given))


def refuse_empty_folders(folders: Iterable[Path]) -> None:
    """Refuse a --kernels-dir that holds no kernel and no op file: a folder given by
    mistake, or kernels two levels down, said, not ignored. Files discovery skips count
    for nothing: a folder of `_common.cu` and `_ref.py` alone was taken, and added nothing."""
    for folder in folders:
        if not kernel_files(Path(folder)) and not op_files([folder]):
            raise UsageError(f"--kernels-dir {folder}: holds no kernel (a .cu file in it or "
                             "in a folder one level down) and no op file (.py); a name that "
                             "starts with _ or . is helper code or hidden, not counted")


def discover(extra_dirs: Iterable[Path] = ()) -> Catalog:
    """Return {op: {variant: KernelVariant}} from the built-in and the user's folders."""
    folders = [builtin_kernels_dir(), *map(Path, extra_dirs)]
    check_folders(folders)
    refuse_empty_folders(folders[1:])
    ops = load_ops(folders[1:])
    catalog: Catalog = {op: {} for op in ops}
    seen: set[Path] = set()
    files: set[Path] = set()  # the same file reached twice (kernels/dot given too): no clash
    for folder in [*folders, *op_folders_below(folders[1:]),
                   *package_kernel_folders(ops.values())]:
        if folder.resolve() in seen:  # the same folder twice adds nothing: not a name clash
            continue
        seen.add(folder.resolve())
        for path in kernel_files(folder):
            if path.resolve() in files:
                continue
            files.add(path.resolve())
            variant = _parsed(path, ops)
            if path.parent != folder and path.parent.name in ops and path.parent.name != variant.op:
                raise KernelFileError(
                    path, 1, f"file is in folder {path.parent.name}/ but declares op {variant.op}"
                )
            existing = catalog[variant.op].get(variant.name)
            if existing is not None:
                raise KernelFileError(
                    path, None, f"variant {variant.op}/{variant.name} is also defined by "
                    f"{existing.path}; rename one of the files",
                )
            catalog[variant.op][variant.name] = variant
    return catalog

