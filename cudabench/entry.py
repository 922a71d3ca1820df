"""The command's entry point (the console script and `python -m cudabench`), kept tiny.

Ctrl-C while the command's modules still load ends it as any other Ctrl-C does, one line
and exit 130, not a traceback from the middle of an import. A spawned GPU worker imports
the console script again (multiprocessing's spawn runs __main__'s imports): this module
is all that costs it.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130  # errors.ExitCode.INTERRUPTED, not imported: that is a module to load


def main() -> None:
    """Load the command line and run it."""
    try:
        from cudabench.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("cudabench: interrupted\n")
        raise SystemExit(INTERRUPTED) from None
    run()
