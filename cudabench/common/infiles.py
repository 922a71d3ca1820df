"""Reading an input file whole, with a cap: /dev/zero, a FIFO that never ends or a gzip
bomb named as a results, suite or kernel file read on until the host ran out of memory."""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Iterable
from pathlib import Path

from cudabench.errors import UsageError

MiB = 2**20
MAX_SOURCE_BYTES = 16 * MiB  # a kernel, header, op or suite file: text a person wrote


class TooLarge(OSError):
    """An input longer than the cap its reader sets, or a device that is no file."""


def read_capped(path: Path, limit: int) -> bytes:
    """Return the file's bytes; TooLarge past limit bytes, or for a character or block
    device (/dev/zero, /dev/urandom: endless). Other OSErrors pass through."""
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
            raise TooLarge(f"{path}: a device, not a file")
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise TooLarge(f"{path}: more than {limit // MiB} MiB")
        # in chunks: read(limit + 1) reserves the whole limit at once (a MemoryError
        # under `ulimit -v` for a file of a few KB); a pipe's length is known at its end
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = handle.read(min(MiB, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
    raise TooLarge(f"{path}: more than {limit // MiB} MiB")


def gunzip_capped(data: bytes, limit: int) -> bytes:
    """Return a gzip stream's content; TooLarge where it unpacks to more than limit bytes.
    zlib errors (a damaged stream) pass through, EOFError for a cut one."""
    out = b""
    while True:  # member after member, as gzip.decompress reads `cat a.gz b.gz`
        unpack = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)  # gzip's header and trailer
        out += unpack.decompress(data, limit + 1 - len(out))
        if len(out) > limit or unpack.unconsumed_tail:
            raise TooLarge(f"unpacks to more than {limit // MiB} MiB")
        if not unpack.eof:
            raise EOFError("the compressed stream ends early")
        data = unpack.unused_data
        if not data.strip(b"\0"):  # padding after the last member, as gzip allows
            return out


def unreachable(path: Path | str) -> str | None:
    """Return why nothing can be at path (a name in it too long for the file system, or
    symbolic links that loop), else None: Path.exists() and .is_dir() raise for these
    where they answer False for a path that is merely not there, and resolve() raises."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return "too long a name for the file system (255 bytes a name at most)"
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links (it leads to no file)"
    return None


def refuse_unreachable(path: Path | str, name: str) -> None:
    """Raise a UsageError `NAME: why` where nothing can be at path (unreachable); name is
    what the user gave it as: `--db PATH`, `VARIABLE=PATH`, or the path itself."""
    why = unreachable(path)
    if why is not None:
        raise UsageError(f"{name}: {why}")


def refuse_found_unreadable(path: Path, what: str) -> None:
    """Refuse a file a folder's listing found (what: "a kernel", "an op file") that is a
    loop of links (no file) or a pipe (its reading waits for a writer, forever: the user
    named the folder, not the pipe). Its reader says what else it cannot read."""
    why = unreachable(path)
    if why is None and path.exists() and stat.S_ISFIFO(path.stat().st_mode):
        why = "is a pipe (its reading waits for a writer)"
    if why is not None:
        raise UsageError(f"{path}: {why}, not {what}: remove it, or start its name with _ "
                         "or . to have it skipped")


def not_a_folder(path: Path) -> str | None:
    """Return why path is no folder ("no such directory", "is a file, not a folder"), or
    None: the one wording of every flag and argument that takes a folder."""
    trouble = unreachable(path)
    if trouble is not None:
        return trouble
    if path.is_dir():
        return None
    return "is a file, not a folder" if path.exists() else "no such directory"


def check_folders(folders: Iterable[Path]) -> None:
    """Refuse a --kernels-dir that is not a folder, naming it."""
    for folder in folders:
        problem = not_a_folder(folder)
        if problem:
            raise UsageError(f"--kernels-dir {folder}: {problem}")
