"""Benchmark history: recorded runs in a SQLite store, steps and drifts, history gates.

At the level of render: it reads results and analysis, never measure.
"""

import os
from pathlib import Path

from cudabench.common.infiles import refuse_unreachable
from cudabench.common.outfiles import names_a_folder
from cudabench.errors import UsageError

# Here, not in records.py: the commands' --db help names it without importing the store.
DEFAULT_PATH = Path(".cudabench") / "history.db"
STORE_VARIABLE = "CUDABENCH_HISTORY_DB"  # moves the default store, for every command
DEFAULT_HELP = f"{DEFAULT_PATH}, or ${STORE_VARIABLE}"


def default_store() -> Path:
    """Return the history store a command uses without --db: $CUDABENCH_HISTORY_DB where
    it is set, else .cudabench/history.db (one for `--record`, `history` and `compare`:
    a store the variable named that `--record` did not write passed every run as "too
    little history")."""
    chosen = os.environ.get(STORE_VARIABLE, "")
    if not chosen.strip():
        return DEFAULT_PATH
    # ~ expanded as a shell would: a YAML env: block sets it unexpanded, which made a
    # folder named ~ in the workspace (one that checkout cleans)
    given, chosen = chosen, os.path.expanduser(chosen)
    if chosen.startswith("~"):
        raise UsageError(f"{STORE_VARIABLE}={given}: cannot expand its ~ (no such user, or "
                         "no home folder): give the full path")
    why = names_a_folder(chosen)
    if why is not None:  # `store/` made a file named store
        raise UsageError(f"{STORE_VARIABLE}={why}")
    refuse_unreachable(chosen, f"{STORE_VARIABLE}={chosen}")
    if Path(chosen).is_dir():  # said as the variable: "/tmp: is a folder ... pass --db"
        raise UsageError(f"{STORE_VARIABLE}={chosen}: is a folder, not a history store; set "
                         "it to a file (or pass --db)")
    if Path(chosen).exists() and not Path(chosen).is_file():  # /dev/null: said as --record's
        raise UsageError(f"{STORE_VARIABLE}={chosen}: is not a regular file (a device, a pipe "
                         "or a socket), not a history store; set it to a file (or pass --db)")
    return Path(chosen)
