"""The child process that compute-sanitizer and ncu wrap (observers/sanitizer.py, ncu.py):
`python -m cudabench.runner.child PLAN_FILE` runs one variant's checked launch and a sample
on the GPU while the tool watches."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path


def main(plan_file: str) -> int:
    """Run the pickled plan's first job (its one variant) on the pickled device index."""
    from cudabench.engines.pycuda_engine import PycudaSpec
    from cudabench.runner.execute import run_jobs
    from cudabench.measure.jobs import jobs_of

    plan, device_index = pickle.loads(Path(plan_file).read_bytes())
    engine = PycudaSpec(device_index).open()
    try:
        run_jobs([plan], jobs_of([plan])[:1], engine)
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
