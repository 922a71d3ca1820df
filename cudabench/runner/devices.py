"""Which GPUs a run uses (--devices), and the environment of a worker on one of them.

GPUs are counted as CUDA counts them with CUDA_DEVICE_ORDER=PCI_BUS_ID (the order
nvidia-smi shows), among those CUDA_VISIBLE_DEVICES leaves visible. A worker on GPU i sees
that GPU alone (CUDA_VISIBLE_DEVICES set to its entry): its own context, and vendor
libraries and profilers that cannot wander onto another card. Workers on several GPUs
share the host's cores, so each gets an equal share of BLAS threads for its NumPy
references.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cudabench.engines.nvml import device_count
from cudabench.engines.visibility import visible_entries
from cudabench.errors import UsageError

__all__ = ["Slot", "choose", "shown_entries"]

BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def shown_entries() -> list[str] | None:
    """Return CUDA_VISIBLE_DEVICES's entries as the driver reads them on this host (None:
    not set): an entry past the host's GPUs (NVML's count) ends the list, so "0,7,7" on a
    one-GPU host is GPU 0, not a GPU listed twice. NVML is asked only where the variable
    is set (its start costs every command otherwise)."""
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return None
    return visible_entries(physical=device_count())


@dataclass(frozen=True)
class Slot:
    """One chosen GPU: its index as the user counts, and the CUDA_VISIBLE_DEVICES entry
    that shows a process that GPU alone."""

    index: int
    visible: str

    def environment(self, workers: int, cores: int | None = None) -> dict[str, str]:
        """Return the variables a worker on this GPU starts with, one of `workers`."""
        env = {"CUDA_VISIBLE_DEVICES": self.visible}
        if "CUDA_DEVICE_ORDER" not in os.environ:
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        share = str(max(1, (cores or os.cpu_count() or 1) // max(1, workers)))
        env.update({name: share for name in BLAS_THREAD_VARIABLES if name not in os.environ})
        return env


def choose(text: str, count: int, entries: list[str] | None = None) -> list[Slot]:
    """Parse --devices (`all`, or indices such as `0,2`) against `count` GPUs.

    entries are CUDA_VISIBLE_DEVICES's when it is set: index i is then its i-th entry.
    """
    text = text.strip()
    if count < 1:
        raise UsageError("--devices: no CUDA GPU is visible (nvidia-smi; CUDA_VISIBLE_DEVICES)")
    if text.lower() == "all":
        indices = list(range(count))
    else:
        indices = []
        for part in text.split(","):
            part = part.strip()
            if not (part.isascii() and part.isdigit()):  # "²" and "٣" are digits too
                raise UsageError(f"--devices {text!r}: expected `all` or GPU indices such as "
                                 "0,2")
            index = int(part)
            if index >= count:
                raise UsageError(f"--devices {text!r}: GPU {index} does not exist; there "
                                 f"{'is' if count == 1 else 'are'} {count} (0 to {count - 1})")
            if index in indices:
                raise UsageError(f"--devices {text!r}: GPU {index} is named twice")
            indices.append(index)
        if not indices:
            raise UsageError(f"--devices {text!r}: name at least one GPU")
    return [Slot(i, entries[i] if entries is not None else str(i)) for i in indices]
