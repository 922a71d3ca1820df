"""Device identity through NVML (nvidia-ml-py), when it is installed: optional."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _ask(question: Callable[[Any], T]) -> T | None:
    """Return question(pynvml) between an init and a shutdown, or None when NVML is not
    installed, cannot start (no driver library; refused in containers, gVisor) or fails
    to answer (no such device; a host that hides it)."""
    try:
        nvml: Any = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:
        return None
    try:
        return question(nvml)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def device_uuid(pci_bus_id: str) -> str | None:
    """Return the UUID of the GPU at a PCI bus id, or None without NVML."""
    def uuid(nvml: Any) -> str:
        text = nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id))
        return text.decode() if isinstance(text, bytes) else str(text)

    return _ask(uuid)


def _index(text: str) -> bool:
    """Return whether text is a GPU index (ASCII digits: "²" is a digit to str.isdigit)."""
    return text.isascii() and text.isdigit()


def free_memory(gpu: int | str) -> int | None:
    """Return the free memory of a GPU, or None without NVML: gpu is an NVML index (the
    CUDA index when devices are ordered by PCI bus id, or with one GPU), as a number or
    text, or a UUID (GPU-..., as CUDA_VISIBLE_DEVICES may name it)."""
    def free(nvml: Any) -> int:
        text = str(gpu).strip()
        handle = (nvml.nvmlDeviceGetHandleByIndex(int(text)) if _index(text)
                  else nvml.nvmlDeviceGetHandleByUUID(text))
        return int(nvml.nvmlDeviceGetMemoryInfo(handle).free)

    return _ask(free)


def device_name(gpu: int | str) -> str | None:
    """Return the model name of a GPU (an NVML index or a UUID, as free_memory takes), or
    None without NVML."""
    def name(nvml: Any) -> str:
        text = str(gpu).strip()
        handle = (nvml.nvmlDeviceGetHandleByIndex(int(text)) if _index(text)
                  else nvml.nvmlDeviceGetHandleByUUID(text))
        found = nvml.nvmlDeviceGetName(handle)
        return found.decode() if isinstance(found, bytes) else str(found)

    return _ask(name)


def driver_version() -> str | None:
    """Return the installed driver's version ("580.95.05"), or None without NVML."""
    def version(nvml: Any) -> str:
        found = nvml.nvmlSystemGetDriverVersion()
        return found.decode() if isinstance(found, bytes) else str(found)

    return _ask(version)


def device_count() -> int | None:
    """Return how many GPUs NVML sees (all of the host's), or None without NVML."""
    return _ask(lambda nvml: int(nvml.nvmlDeviceGetCount()))
