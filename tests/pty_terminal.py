"""Run a command on a real (pseudo-)terminal of a given width: what Python's print() and
pytest write there is fitted to the terminal's own size, which no COLUMNS says."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(code: str, columns: int, cwd: Path, *args: str, timeout: float = 120
                    ) -> str:
    """Run `python -c code args` with stdout and stderr on a terminal of columns columns
    (COLUMNS and LINES unset); return what it wrote, without its colours."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    # given, not inherited: pytest's readline sets COLUMNS=80 where os.environ does not show it
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    try:
        process = subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                                   stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    finally:
        os.close(follower)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        process.wait(timeout)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n"))
