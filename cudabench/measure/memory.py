"""Memory checked before anything is allocated: the plan's needs against what is free.

From the plans alone (no GPU touched): the device bytes a benchmark needs (inputs,
outputs, guard zones, the L2 flush buffer, reference rows) and the host bytes (inputs,
the float64 reference and the verification's temporaries). Device free memory comes from
NVML, so the check makes no CUDA context; the host's limit from its cgroup, else
MemAvailable. Too much is a usage error naming the size, the need and what would fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.common.flag_terms import SUITE_KEYS, rename_flags
from cudabench.errors import UsageError
from cudabench.measure import guards, placement
from cudabench.planning.plan import Plan, header_variables
from cudabench.common.units import format_bytes, shape_text

FLUSH_BYTES = 256 * 2**20  # twice the largest L2 of current GPUs: the flush buffer's upper bound
SM_BOUND = 1024  # more SMs than any GPU has: per-block scratch is not underestimated
HOST_MARGIN = 0.9  # leave a tenth of what is available to everything else


@dataclass(frozen=True)
class Need:
    """Bytes one benchmark needs at once on the device and on the host."""

    device_bytes: int
    host_bytes: int


def need(plan: Plan, shape: Sequence[int] | None = None) -> Need:
    """Return what the plan needs at its shape (or at another shape of the same op).

    Inputs are counted from the op's bytes (what it reads: its bytes moved less its
    outputs), not drawn: drawing them would cost the very memory being checked. For an
    in-place op that counts its buffer twice, on the safe side.
    """
    shape = tuple(shape or plan.shape)
    op, types = plan.op, plan.types
    written = sum(math.prod(s) for s in op.outputs(shape, types, 1).values())
    input_bytes = max(op.bytes_moved(shape, types) - written * types.output.itemsize, 0)
    input_elements = input_bytes // types.input.itemsize
    biggest = 0
    for planned in plan.variants:
        variables = header_variables(op, shape, types, planned.params, SM_BOUND)
        blocks = math.prod(planned.variant.geometry(variables)[0][0])
        sizes = [math.prod(s) * types.output.itemsize
                 for s in op.outputs(shape, types, blocks).values()] + [input_bytes]
        # Twice: the recheck on fresh inputs at new addresses allocates a second set.
        biggest = max(biggest, 2 * sum(n + 2 * guards.guard_bytes(n) for n in sizes))
    reference = op.bytes_moved(shape, types) if op.references else 0
    device = max(biggest, reference) + FLUSH_BYTES
    if plan.timing.rounds > 1 or plan.placement:  # a round's buffers behind a spacer
        device += placement.MAX_BYTES
    # The inputs, a float64 copy of them, and the reference with the verification's
    # float64 temporaries (the result, a bound, differences).
    host = input_bytes + input_elements * 8 + 5 * max(written, 1) * 8
    return Need(device, host)


def check(plans: Sequence[Plan], device_free: int | None, host_available: int | None,
          device_name: str = "the GPU") -> None:
    """Raise UsageError if a plan cannot fit; say the need and the largest size that fits."""
    for plan in plans:
        required = need(plan)
        sides: tuple[tuple[str, Callable[[Need], int], int | None], ...] = (
            ("on " + device_name, _device_side, device_free),
            ("in host memory", _host_side, host_available))
        for where, side, have in sides:
            wanted = side(required)
            if have is None or wanted <= have:
                continue
            fits = _largest_fit(plan, have, side)
            hint = f"about --size {shape_text(fits)} would fit" if fits else "no size fits"
            text = (f"--size {shape_text(plan.shape)}: {plan.op.name} {plan.dtype.name} needs "
                    f"{format_bytes(wanted)} {where} but {format_bytes(have)} is free; {hint}")
            # a suite's entry: named, in its keys, as the suite's other errors are
            raise UsageError(f"{plan.entry}: {rename_flags(text, SUITE_KEYS)}"
                             if plan.entry else text)


def _device_side(need: Need) -> int:
    return need.device_bytes


def _host_side(need: Need) -> int:
    return need.host_bytes


def _largest_fit(plan: Plan, have: int, measure: Callable[[Need], int]) -> tuple[int, ...]:
    """Return the plan's shape scaled down until it fits (None-like () if nothing does)."""
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        shape = tuple(max(1, int(extent * middle)) for extent in plan.shape)
        if measure(need(plan, shape)) <= have:
            low = middle
        else:
            high = middle
    shape = tuple(max(1, int(extent * low)) for extent in plan.shape)
    return shape if measure(need(plan, shape)) <= have else ()


def device_free_bytes(gpu: int | str) -> int | None:
    """Return the free memory of a GPU through NVML, or None without NVML: gpu is a
    CUDA_VISIBLE_DEVICES entry (an index in PCI bus order, or a UUID) or an index."""
    from cudabench.engines.nvml import free_memory

    return free_memory(gpu)


def host_available_bytes() -> int | None:
    """Return the memory this process may still use: the cgroup's limit, else MemAvailable.

    Some GPU hosts report a total that grows as it is used, so a cgroup limit wins.
    """
    available = _meminfo("MemAvailable")
    limit = _cgroup_room()
    candidates = [value for value in (available, limit) if value is not None]
    return int(min(candidates) * HOST_MARGIN) if candidates else None


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """Return the cgroup's memory limit minus its usage (v2, then v1), if there is one."""
    pairs = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
             ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
              "/sys/fs/cgroup/memory/memory.usage_in_bytes"))
    for limit_path, usage_path in pairs:
        try:
            limit_text = Path(limit_path).read_text().strip()
            usage = int(Path(usage_path).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit_text == "max" or int(limit_text) >= 1 << 60:
            return None  # no limit
        return max(int(limit_text) - usage, 0)
    return None
