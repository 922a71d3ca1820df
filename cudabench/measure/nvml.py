"""Device identity through NVML (nvidia-ml-py), when it is installed: optional."""

from __future__ import annotations

import contextlib
import importlib
from typing import Any


def device_uuid(pci_bus_id: str) -> str | None:
    """Return the UUID of the GPU at a PCI bus id, or None without NVML."""
    try:
        nvml: Any = importlib.import_module("pynvml")
    except ImportError:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # no driver library, or NVML refused (containers, gVisor)
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        uuid = nvml.nvmlDeviceGetUUID(handle)
        return uuid.decode() if isinstance(uuid, bytes) else str(uuid)
    except Exception:  # NVML and CUDA may disagree on bus-id format on odd hosts
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def free_memory(index: int) -> int | None:
    """Return the free memory of the GPU at NVML index (the CUDA index when devices are
    ordered by PCI bus id, or with one GPU), or None without NVML."""
    try:
        nvml: Any = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # not installed, no driver library, or NVML refused
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        return int(nvml.nvmlDeviceGetMemoryInfo(handle).free)
    except Exception:  # no such index, or a host that hides memory information
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def device_count() -> int | None:
    """Return how many GPUs NVML sees (all of the host's), or None without NVML."""
    try:
        nvml: Any = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # not installed, no driver library, or NVML refused
        return None
    try:
        return int(nvml.nvmlDeviceGetCount())
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
