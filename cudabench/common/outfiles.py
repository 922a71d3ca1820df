"""Output files that never destroy anything: checked before the work, written whole.

Every file a command writes (--json, --markdown, --csv, --html, --best-out, plots) goes
through here: its path is checked up front (not a folder, a folder that exists or can be
made, write access), it may not be any input of the run by whatever path reaches it
(relative, `..`, a symlink), and it is written to a temporary file beside the target and
renamed over it at the end, so a failed or interrupted run leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import os
import re
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from cudabench.common.own_files import own_folder_of
from cudabench.common.text import encodable
from cudabench.errors import UsageError


def target(path: Path) -> Path:
    """Return the file a write to path changes: a symlink's target, absolute."""
    return Path(os.path.realpath(path))


# The longest file name an output may have: its temporary files add `.` before it and
# `.partial.XXXXXXXX` after (replacing, the results writer), within the 255 bytes of a name.
MAX_NAME_BYTES = 255 - 20


# Where a results file's rows stream while an older file of its name is kept (the results
# writer's suffix): an output of that name would be taken for a stopped run's rows, or
# deleted by the run that streams there.
PARTIAL = ".partial"
# The outputs that are results files or stores themselves: each checks what it replaces
# (results/loader.check_replaceable, the history store). Every other output (a table, a
# page, a figure, a suite) refuses to replace measured data: a results file or a store.
# --record names its default store (or $CUDABENCH_HISTORY_DB's) where no --db was given.
DATA_FLAGS = frozenset({"--json", "--db", "--record", "--cudabench-json",
                        "--cudabench-record"})
SQLITE_MAGIC = b"SQLite format 3\x00"
# A results file's kind, anywhere in it: first as cudabench writes it, anywhere once keys
# were sorted (`jq -S`, json.tool --sort-keys), which the loader reads alike.
RESULTS_KIND = re.compile(rb'"kind"\s*:\s*"cudabench-results"')


# Files this process reads for as long as it runs (a pytest session's baseline, which a
# test's json= or to_json() replaced before the session compared with it): no output.
_READ_HERE: dict[Path, str] = {}


def keep_unwritten(path: Path, what: str) -> None:
    """Refuse every output onto path (what names it, and who reads it) until release()."""
    _READ_HERE[target(path)] = what


def release(path: Path) -> None:
    """Let outputs write path again (keep_unwritten's reader is done with it)."""
    _READ_HERE.pop(target(path), None)


_SUFFIXES = {"--json": ".json", "--markdown": ".md", "--csv": ".csv", "--html": ".html",
             "--best-out": ".toml", "-o": ".svg", "--output": ".svg", "--db": ".db"}


# /dev/stdout, /dev/fd/1, /proc/self/fd/1, /proc/1234/fd/1: links to what a descriptor has open
_STREAM = re.compile(r"/dev/std(in|out|err)|/dev/fd(/.*)?|/proc/[^/]+/fd(/.*)?")


def _stream_link(path: Path) -> str | None:
    """Return the first step of path's links that names a file descriptor's open file (a
    redirected stream's file), or None."""
    here = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a chain of links
        if _STREAM.fullmatch(here):
            return here
        if not os.path.islink(here):
            return None
        here = os.path.abspath(os.path.join(os.path.dirname(here), os.readlink(here)))
    return None


def names_a_folder(text: str) -> str | None:
    """Return why the path text names a folder, not a file, else None: it ends with a
    slash, `/.` or `/..` (pathlib drops the first two, and a file by the name before
    them was written over)."""
    plain = text.replace(os.sep, "/")
    last = plain.rsplit("/", 1)[-1]
    if not text.strip() or last not in ("", ".", ".."):
        return None
    ending = "/" + last if "/" in plain else last
    return f"{text}: names a folder (it ends with {ending}); give a file name"


def check_output(path: Path, flag: str) -> None:
    """Refuse, before any work, a path the output cannot be written to."""
    if not str(path).strip():
        raise UsageError(f"{flag}: give a file name (an empty path is not one)")
    if str(path) == "-":  # the Unix habit for stdout; stdout holds the tables here
        raise UsageError(f"{flag} -: names a file here, not stdout: give a file name, "
                         f"e.g. {flag} out{_SUFFIXES.get(flag, '')}")
    stream = _stream_link(path)
    if stream is not None:
        # /dev/stderr is a link to an open file: renamed over, a redirected CI log is lost
        raise UsageError(f"{flag} {path}: names an open stream ({stream}), not a file: "
                         "outputs are files written whole; give a file name, e.g. "
                         f"{flag} out{_SUFFIXES.get(flag, '')}")
    real = target(path)
    if real in _READ_HERE:
        raise UsageError(f"{flag} {path}: is {_READ_HERE[real]}; nothing is written over a "
                         "file the run reads: name another file")
    own = own_folder_of(real)
    if own is not None:  # read by every run: an output there breaks cudabench itself
        raise UsageError(f"{flag} {path}: lies among cudabench's own code and kernels "
                         f"({own}); write it elsewhere")
    if len(os.fsencode(real.name)) > MAX_NAME_BYTES:
        raise UsageError(f"{flag} {path}: a file name of more than {MAX_NAME_BYTES} bytes; "
                         "give a shorter one")
    if os.path.islink(path) and not real.parent.exists():  # a dangling link's folders
        raise UsageError(f"{flag} {path}: is a link to {real}, whose folder does not exist; "
                         "name another file")
    if real.name.endswith(PARTIAL):
        raise UsageError(f"{flag} {path}: names ending in {PARTIAL} are where a run's rows "
                         "stream while an older results file is kept; name another file")
    try:
        info = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):  # a folder on the way: said below
        info = None
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write there: {exc.strerror}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{flag} {path}: is a folder; give a file name")
    if info is not None and not stat.S_ISREG(info.st_mode):
        # replaced by a rename, /dev/null would become a file (as root) and a pipe's
        # reader would never hear from it
        raise UsageError(f"{flag} {path}: is not a regular file (a device, a pipe or a "
                         f"socket); outputs are files written whole: give a file name, or "
                         f"leave {flag} out to write nothing")
    if info is not None and not os.access(real, os.W_OK):
        raise UsageError(f"{flag} {path}: cannot write: permission denied")
    if info is not None and not _may_replace(real, info):
        raise UsageError(f"{flag} {path}: cannot replace it: it is another user's, in a "
                         f"sticky folder ({real.parent}, as /tmp is) that is not yours; "
                         "name another file")
    folder = real.parent
    while not folder.exists():  # it will be made: the first folder that exists decides
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: cannot write in {folder}: permission denied")
    # Where os.access says yes and no file can be made (/proc): a probe file in the folder
    # that exists, the first of those the output's folders would be made in.
    try:
        handle, probe = tempfile.mkstemp(prefix=f".{real.name}.", dir=folder)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write there: {exc.strerror or exc}") from None
    os.close(handle)
    os.unlink(probe)


def _may_replace(real: Path, info: os.stat_result) -> bool:
    """Return whether this user may rename a file over real (whose stat is info): in a
    sticky folder (/tmp) only the file's owner, the folder's or root may (EPERM at the
    end of the run, its rows left in a .partial, though os.access said yes)."""
    try:
        folder = os.stat(real.parent)
    except OSError:
        return True  # said by the checks of the folder
    if not folder.st_mode & stat.S_ISVTX:
        return True
    user = os.geteuid()  # renames are checked as the effective user
    return user == 0 or user in (info.st_uid, folder.st_uid)


def check_outputs(outputs: Mapping[str, Path | None], inputs: Iterable[Path] = ()) -> None:
    """Check each output (check_output), and refuse one that would overwrite an input of
    the run or another output: by any path that reaches it (relative, `..`, a symlink, a
    hard link)."""
    inputs = list(inputs)
    sources = {target(path) for path in inputs}
    files = {identity for path in inputs if (identity := _file_id(path)) is not None}
    seen: dict[Path, str] = {}
    for flag, path in outputs.items():
        if path is None:
            continue
        check_output(path, flag)
        real = target(path)
        if real in sources or _file_id(path) in files:
            raise UsageError(f"{flag} {path}: that is one of the files this command reads; write "
                             "it elsewhere")
        if real in seen:
            raise UsageError(f"{flag} {path}: {seen[real]} writes there too; give each "
                             "output its own path")
        if flag not in DATA_FLAGS:
            check_not_data(path, flag)
        seen[real] = flag


def check_not_data(path: Path, flag: str) -> None:
    """Refuse an output (a table, a page, a figure) that would replace measured data: a
    cudabench results file (.json or .json.gz) or an SQLite database (a history store),
    which no command could give back; or that takes a name of code or configuration, a new
    file's too (_check_not_source)."""
    what = measured_data(path)
    if what:
        raise UsageError(f"{flag} {path}: is {what}, which this output would replace; name "
                         "another file")
    _check_not_source(path, flag)


# Files whose presence can change a run: kernels, headers, op modules, suites, build files
# (results/writer.py: an untracked one makes a checkout dirty).
CODE_SUFFIXES = frozenset({".cu", ".cuh", ".h", ".hpp", ".c", ".cc", ".cpp", ".py", ".toml",
                           ".cfg", ".ptx"})
# Code and configuration: no table, page, figure or suite takes such a name (but --best-out's)
SOURCE_SUFFIXES = CODE_SUFFIXES | {
    ".ini", ".yaml", ".yml", ".json", ".jsonc", ".xml", ".env", ".lock", ".sh", ".bash",
    ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".mk", ".cmake", ".js", ".mjs", ".cjs", ".ts",
    ".jsx", ".tsx", ".rs", ".go", ".java", ".rb", ".pl", ".lua", ".jl", ".r", ".ipynb",
    ".cuf", ".f90", ".hip", ".sql", ".proto", ".gradle", ".in"}
# Files known by their whole name: the project's own (a README.md is markdown, which a
# --markdown may have written: not by name)
SOURCE_NAMES = ("makefile", "gnumakefile", "dockerfile", "containerfile", "cmakelists.txt",
                "readme", "license", "licence", "copying", "notice", "authors", "codeowners",
                "jenkinsfile", "vagrantfile", "justfile")
WRITTEN_BY = "# Written by cudabench"  # the head of what --best-out writes (cli/best.py)


def _check_not_source(path: Path, flag: str) -> None:
    """Refuse an output named as code or configuration (SOURCE_SUFFIXES, a dotfile,
    SOURCE_NAMES), by its own name or its link's target: it replaced a suite or a script,
    and a new one was refused by the next run as a file cudabench did not write. Only
    --best-out's suite is a .toml: it replaces one cudabench wrote (WRITTEN_BY), never a
    user's (a pyproject.toml that its head said to "paste into")."""
    # The write follows a link (replacing): `summary.md -> cudabench.toml` is the suite.
    real = target(path)
    known = next((name for name in (path, real) if _source_by_name(name)), None)
    if known is None:
        return
    where = f"links to {real}; " if known is real and real.name != path.name else ""
    kind = _suffix(known) or known.name
    if flag != "--best-out" or kind.lower() != ".toml":
        suffix = _SUFFIXES.get(flag)
        hint = (f"name it e.g. {_named_as(path, suffix)}" if suffix and not where
                else "name another file")
        only = ("--best-out writes a .toml suite" if flag == "--best-out"
                else "only --best-out writes one, its .toml suite")
        raise UsageError(f"{flag} {path}: {where}{kind} is a name of code or configuration, "
                         f"not of an output ({only}): {hint}")
    try:
        with open(path, "rb") as stream:
            head = stream.read(len(WRITTEN_BY))
    except OSError:  # none yet: a new suite
        return
    if head and head != WRITTEN_BY.encode():
        link = f", through a link to {real}" if where else ""
        raise UsageError(f"{flag} {path}: is a source or configuration file ({kind}{link}) "
                         "that cudabench did not write, which this output would replace; "
                         "name another file")


def _named_as(path: Path, suffix: str) -> str:
    """Return path's name with suffix, for a hint: a dotfile's without its dot (.bashrc:
    bashrc.md), and out.md for one that is the suffix alone (.md was told .md.md)."""
    kind = _suffix(path)  # x.json.gz: x.md
    if kind:
        return path.name[:-len(kind)] + suffix
    stem = path.name.lstrip(".")
    return ("out" if not stem or f".{stem}".lower() == suffix else stem) + suffix


# Suffixes of a compressed file: its kind is the suffix before (x.json.gz is JSON, which the
# results loader reads as such)
COMPRESSED_SUFFIXES = frozenset({".gz", ".bz2", ".xz", ".zst", ".lz4", ".z"})


def _suffix(path: Path) -> str:
    """Return the suffix that tells path's kind: its last, and the one before for a
    compressed file's (".json.gz"); '' where it has none."""
    suffixes = path.suffixes
    first = len(suffixes) - 1
    while first > 0 and suffixes[first].lower() in COMPRESSED_SUFFIXES:
        first -= 1
    return "".join(suffixes[first:])


def _source_by_name(path: Path) -> bool:
    """Return whether path's name is one of code or configuration (SOURCE_SUFFIXES, a
    dotfile, SOURCE_NAMES), compressed or not (x.json.gz)."""
    name = path.name.lower()
    dotfile = name.startswith(".") and "." not in name[1:]  # .gitignore, .bashrc
    kind = _suffix(path).lower()
    code = bool(kind) and "." + kind.split(".")[1] in SOURCE_SUFFIXES
    return code or dotfile or name in SOURCE_NAMES


def measured_data(path: Path) -> str:
    """Return what measured data path holds ('a cudabench results file', 'an SQLite
    database'), or '' (no such file, or another kind)."""
    import gzip
    import zlib

    try:
        with open(path, "rb") as stream:
            # after a BOM an editor wrote: the loader reads such a file too
            head = stream.read(4096).removeprefix(b"\xef\xbb\xbf")
            text = head + stream.read() if head.lstrip().startswith(b"{") else head
    except OSError:
        return ""
    if head.startswith(SQLITE_MAGIC):
        return "an SQLite database (a history store?)"
    if head.startswith(b"\x1f\x8b"):  # a .json.gz: decompressed
        try:
            with gzip.open(path, "rb") as stream:
                text = stream.read()
        except (OSError, EOFError, zlib.error):
            return ""
    if text.lstrip().startswith(b"{") and RESULTS_KIND.search(text):
        return "a cudabench results file"
    return ""


def _file_id(path: Path) -> tuple[int, int] | None:
    """Return an existing file's (device, inode): one file under every name (None: none)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


@contextlib.contextmanager
def replacing(path: Path, flag: str, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside path; when the block ends without an error, rename it
    over path (readers see the old file or the new, never half); on an error, drop it."""
    real = target(path)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{real.name}.", dir=real.parent)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write there: {exc}") from None
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(handle, mode, encoding=encoding) as stream:
            yield stream
        _take_over(temporary, real)
        os.replace(temporary, real)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise UsageError(f"{flag} {path}: cannot write: {exc}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class EachWritten:
    """Outputs written one after another, where one that cannot be written (a full disk)
    must not cost the others: each is tried, and the failures are raised together at the
    end, as one line (UsageError)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def attempt(self, write: Callable[[], object]) -> None:
        """Run one output's write, keeping its error for raise_any."""
        try:
            write()
        except UsageError as exc:
            self.errors.append(str(exc))

    def raise_any(self) -> None:
        """Raise the failures kept, if any."""
        if self.errors:
            raise UsageError("; ".join(self.errors))


def write_text(path: Path, text: str, flag: str) -> None:
    """Write a text output whole (replacing); a file name in it that is no UTF-8 is
    written as \\udcNN (encodable)."""
    with replacing(path, flag) as stream:
        stream.write(encodable(text))


def write_bytes(path: Path, data: bytes, flag: str) -> None:
    """Write a binary output whole (replacing)."""
    with replacing(path, flag, "wb") as stream:
        stream.write(data)


# The lock files of the paths this process's writers hold now (claim_output). lockf's lock
# is the process's: it never refuses a second writer here, and closing any handle of a lock
# file drops the process's lock on it. So a lock file is open here once at most: every open
# and close of one is made under _CLAIMING (reentrant: the garbage collector may release a
# dropped claim while this thread claims another).
_CLAIMED: set[Path] = set()
_CLAIMING = threading.RLock()


# A lock on a file written (Claim.follow): a descriptor open on the file, the lock file
# of its device and inode, and the handle that holds the lock.
_FileLock = tuple[int, Path, IO[Any]]


class Claim:
    """One writer's hold on a path's results (claim_output): released by close(), or when
    it is garbage."""

    def __init__(self, lock: Path, handle: IO[Any]) -> None:
        _CLAIMED.add(lock)
        self._files: list[_FileLock] = []  # the files written that still have a name
        self._release = weakref.finalize(self, _release, lock, handle, self._files)

    def follow(self, descriptor: int) -> None:
        """Hold a lock on the file just written too (descriptor: open on it; the claim
        closes it), by its device and inode: a hard link to it is then known as being
        written (writer_of), not as a run that stopped. A file replaced whole is a new
        file: the lock of one written before is let go once no name holds it."""
        with _CLAIMING:
            if not self._release.alive:  # closed: this writer holds nothing any more
                os.close(descriptor)
                return
            for held in [held for held in self._files if _nameless(held[0])]:
                self._files.remove(held)
                _let_go(held)
            taken = _lock_file(descriptor)
            if taken is None:
                os.close(descriptor)
            else:
                self._files.append(taken)

    def close(self) -> None:
        """Let another writer, of this process too, write the path: this one is done."""
        self._release()


def _release(lock: Path, handle: IO[Any], files: list[_FileLock]) -> None:
    with _CLAIMING:
        while files:
            _let_go(files.pop())
        _CLAIMED.discard(lock)
        handle.close()


def _nameless(descriptor: int) -> bool:
    """Return whether the file open at descriptor has no name left (replaced whole)."""
    try:
        return os.fstat(descriptor).st_nlink == 0
    except OSError:
        return True


def _lock_file(descriptor: int) -> _FileLock | None:
    """Lock the file open at descriptor by its device and inode (Claim.follow); None where
    no lock can be taken. Holds _CLAIMING."""
    import fcntl

    info = os.fstat(descriptor)
    folder, lock = _file_lock_of(info)
    if lock in _CLAIMED or not _own_folder(folder):
        return None
    try:
        handle = open(lock, "a+")  # noqa: SIM115 (kept open: the lock lives as long)
    except OSError:
        return None
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
    except OSError:
        handle.close()
        return None
    _CLAIMED.add(lock)
    return descriptor, lock, handle


def _let_go(held: _FileLock) -> None:
    """Drop a file's lock (Claim.follow) and its lock file. Holds _CLAIMING."""
    descriptor, lock, handle = held
    _CLAIMED.discard(lock)
    with contextlib.suppress(OSError):
        lock.unlink()  # before the close: a reader that opens it now finds no writer
    handle.close()
    os.close(descriptor)


def claim_output(path: Path, flag: str) -> Claim | None:
    """Hold an exclusive lock on path's results until the returned claim is closed (or is
    garbage, or its process ends); UsageError while another writer holds it: of another
    process (a POSIX record lock, lockf) or of this one (another thread, _CLAIMED). Writers
    one after another are never refused. The lock file is a hash of the path in a folder of
    the user's own under the temporary folder, so nothing appears beside the user's files;
    it holds the writer's pid, for writer_of. None where no lock can be taken (no fcntl, no
    such folder): the write then goes on unguarded, as it did."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    folder, lock = _lock_of(target(path))
    with _CLAIMING:
        if lock in _CLAIMED:
            gc.collect()  # a writer done with it may be garbage not yet collected (a cycle)
            if lock in _CLAIMED:
                raise _busy(path, flag, "this process")
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            if not _own_folder(folder):
                return None  # is not used: its files could be links to this user's files
            # kept open: the lock lives as long as the handle (the claim holds it)
            handle = open(lock, "a+")  # noqa: SIM115
        except OSError:
            return None
        for attempt in range(5):  # writer_of's shared lock is held for a moment: not a writer
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if attempt == 4:
                    holder = _pid_in(handle.fileno())
                    handle.close()
                    raise _busy(path, flag, holder) from None
                time.sleep(0.01)
        with contextlib.suppress(OSError):  # who writes: for the messages of the others
            handle.truncate(0)
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        return Claim(lock, handle)


def writer_of(path: Path) -> str | None:
    """Return who is writing path's results now (holds its claim_output): 'pid N' (another
    process), 'this process' (another writer of it here), '' (a process of unknown pid); or
    None where no cudabench writes it. A PATH.partial is PATH's rows. Probed on a handle of
    its own with a shared lock of a moment, never where this process holds the claim:
    closing that handle would drop the claim's lock."""
    try:
        import fcntl  # noqa: F401 (_holder's: here, whether there are locks at all)
    except ImportError:  # not POSIX: claim_output takes no lock either
        return None
    real = target(path)
    if real.name.endswith(PARTIAL):  # the writer streams PATH's rows there
        real = target(real.with_name(real.name.removesuffix(PARTIAL)))
    folder, lock = _lock_of(real)
    try:  # the file path names now: another name of it (a hard link) is written too
        _, file_lock = _file_lock_of(os.stat(path))
    except OSError:
        file_lock = None
    with _CLAIMING:  # no claim here opens or closes the lock file meanwhile
        if lock in _CLAIMED or file_lock in _CLAIMED:
            return "this process"
        if not _own_folder(folder):  # claim_output takes no lock there: nor is one believed
            return None
        who = _holder(lock)
        return who if who is not None or file_lock is None else _holder(file_lock)


def _holder(lock: Path) -> str | None:
    """Return who holds the lock file lock (writer_of's answer), probed with a shared lock
    of a moment on a handle of its own; None where nobody does. Holds _CLAIMING."""
    import fcntl

    try:
        handle = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # none: never written, or not by this user
        return None
    try:
        fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return _pid_in(handle) if exc.errno in (errno.EACCES, errno.EAGAIN) else None
    else:
        fcntl.lockf(handle, fcntl.LOCK_UN)
        return None
    finally:
        os.close(handle)


def being_written(path: Path) -> str | None:
    """Return 'being written by a running cudabench (pid N)' where one writes path now
    (writer_of), else None: what a reader of its incomplete rows is told, not "stopped"."""
    who = writer_of(path)
    return None if who is None else f"being written by a running cudabench{_in_brackets(who)}"


def refuse_written(path: Path, flag: str) -> None:
    """Refuse an output a running cudabench is writing now (writer_of)."""
    who = writer_of(path)
    if who is not None:
        raise _busy(path, flag, who)


def _own_folder(folder: Path) -> bool:
    """Return whether the lock folder is a folder of this user's: not one (or a link)
    another user planted under its name, whose lock files could block this user's runs or
    name a writer that is none."""
    try:
        state = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(state.st_mode) and state.st_uid == os.getuid()


def _lock_folder() -> Path:
    """Return the folder of this user's lock files."""
    return Path(tempfile.gettempdir()) / f"cudabench-locks-{os.getuid()}"


def _lock_of(real: Path) -> tuple[Path, Path]:
    """Return the folder of this user's lock files and the lock file of the path real."""
    folder = _lock_folder()
    name = os.fsencode(real)  # any bytes a file name may hold, not just UTF-8
    return folder, folder / f"{hashlib.sha256(name).hexdigest()[:32]}.lock"


def _file_lock_of(info: os.stat_result) -> tuple[Path, Path]:
    """Return the folder of this user's lock files and the lock file of the file whose
    stat is info, by its device and inode (any name of it)."""
    folder = _lock_folder()
    return folder, folder / f"file-{info.st_dev}-{info.st_ino}.lock"


def _pid_in(handle: int) -> str:
    """Return 'pid N' as the lock file open at handle holds it, else ''."""
    try:
        text = os.pread(handle, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f"pid {text}" if text.isdigit() else ""


def _in_brackets(who: str) -> str:
    return f" ({who})" if who else ""


def _busy(path: Path, flag: str, who: str) -> UsageError:
    """Return the error of an output another writer (who: writer_of's) is writing now."""
    return UsageError(f"{flag} {path}: another cudabench run is writing it now"
                      f"{_in_brackets(who)}; wait for it to end, or write elsewhere")


def _take_over(temporary: str, real: Path) -> None:
    """Give the new file the mode and owner of the one it replaces (a private 0600 results
    file stays private), else the umask's (mkstemp makes it 0600). A new PATH.partial, where
    the rows stream beside an existing PATH, takes PATH's: the same rows, as private. A hard
    link to the old file keeps the old content: a file replaced whole is a new file."""
    beside = real.with_name(real.name.removesuffix(PARTIAL))
    try:
        old = os.stat(real if real.exists() or beside == real else beside)
    except OSError:
        os.chmod(temporary, 0o666 & ~_umask())
        return
    os.chmod(temporary, stat.S_IMODE(old.st_mode))
    with contextlib.suppress(OSError):  # another user's file: only root may give it back
        if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
            os.chown(temporary, old.st_uid, old.st_gid)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
