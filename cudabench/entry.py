"""The command's entry point (the console script and `python -m cudabench`), kept tiny.

Ctrl-C before the command's own boundary (cli/boundary.py) catches it, while the CLI's
modules load or its early worker starts, ends it as any other Ctrl-C does: one line and
exit 130, not a traceback. A spawned GPU worker imports the console script again
(multiprocessing's spawn runs __main__'s imports): this module is all that costs it.
"""

from __future__ import annotations

import signal
import sys

from cudabench.errors import Terminated, stopped_code, stopped_text


def main() -> None:
    """Load the command line and run it."""
    signal.signal(signal.SIGTERM, _terminate)
    # A character the output's encoding lacks (a file name that is no UTF-8, a ± on an
    # ASCII terminal) is written as \xNN rather than ending the command (exit 4)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        from cudabench.cli import main as run

        run()
    except KeyboardInterrupt as stop:
        sys.stderr.write(f"cudabench: {stopped_text(stop)}\n")
        raise SystemExit(int(stopped_code(stop))) from None


def _terminate(signum: int, frame: object) -> None:
    Terminated.received = True
    raise Terminated
