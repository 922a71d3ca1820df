"""The child process that compute-sanitizer and ncu wrap (observers/sanitizer.py, ncu.py):
`python -m cudabench.runner.child PLAN_FILE` runs one variant's checked launch and a sample
on the GPU while the tool watches. It exits with NOT_RUN, saying why on stderr, when that
launch did not run to a verified result under the tool: a tool that then found nothing has
checked nothing."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from cudabench.observers.sanitizer import NOT_RUN, NOT_RUN_MARK


def main(plan_file: str) -> int:
    """Run the pickled plan's first job (its one variant) on the pickled device index."""
    from cudabench.engines.pycuda_engine import PycudaSpec
    from cudabench.runner.execute import run_jobs
    from cudabench.measure.jobs import jobs_of

    plan, device_index = pickle.loads(Path(plan_file).read_bytes())
    engine = PycudaSpec(device_index).open()
    try:
        results = run_jobs([plan], jobs_of([plan])[:1], engine)
    finally:
        engine.close()
    unrun = [r for r in results if r.verification is None]
    for result in unrun:
        why = result.skipped or result.error or ("timed out" if result.timed_out else "no result")
        print(f"{NOT_RUN_MARK} {why}", file=sys.stderr)
    return NOT_RUN if unrun or not results else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
