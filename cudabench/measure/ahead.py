"""What a batch of jobs will compile, in the order it runs them: the engine starts them
all on the CPU's cores (Engine.compile_ahead) while the first ones are measured.

A request is what variant.py's compile_variant asks the engine for (the variant, its
-D defines, the type's headers), so that the compile a job waits for is one already
under way. A variant this GPU would skip is left out: it is never compiled.
"""

from __future__ import annotations

from collections.abc import Sequence

from cudabench.engines.protocol import CompileRequest
from cudabench.measure.jobs import Job
from cudabench.planning.plan import Plan, compile_defines, unsupported_on


def compile_requests(plans: Sequence[Plan], jobs: Sequence[Job], compute_capability: str
                     ) -> list[CompileRequest]:
    """Return the compile of each job's variant (once each), in the jobs' order."""
    requests, seen = [], set()
    for job in jobs:
        if job.variant is None:
            continue
        plan, variant = plans[job.plan_index], job.variant.variant
        if unsupported_on(variant, compute_capability) is not None:
            continue
        defines = compile_defines(job.variant.params, plan.types)
        key = (str(variant.path), variant.source, tuple(sorted(defines.items())),
               plan.types.headers)
        if key not in seen:
            seen.add(key)
            requests.append(CompileRequest(variant, defines, tuple(plan.types.headers)))
    return requests
