"""What the PyCUDA engine reports of its GPU: name, capability, SMs, memory, limits,
driver and toolkit versions, and the identity (PCI bus id, UUID) other tools name it by."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from cudabench.engines.nvml import device_uuid
from cudabench.results.model import DeviceInfo


def device_info(cuda: ModuleType, device: Any, device_index: int) -> DeviceInfo:
    """Return a device's facts from the driver (and its UUID from NVML)."""
    attrs = device.get_attributes()
    attr = cuda.device_attribute
    major, minor = device.compute_capability()
    driver = cuda.get_driver_version()
    built = cuda.get_version()
    pci_bus_id = str(device.pci_bus_id())
    return DeviceInfo(
        name=device.name(),
        compute_capability=f"{major}.{minor}",
        sm_count=int(attrs[attr.MULTIPROCESSOR_COUNT]),
        memory_bytes=int(device.total_memory()),
        l2_bytes=int(attrs[attr.L2_CACHE_SIZE]),
        sm_clock_khz=int(attrs.get(attr.CLOCK_RATE, 0)),
        memory_clock_khz=int(attrs.get(attr.MEMORY_CLOCK_RATE, 0)),
        memory_bus_bits=int(attrs.get(attr.GLOBAL_MEMORY_BUS_WIDTH, 0)),
        max_threads_per_block=int(attrs[attr.MAX_THREADS_PER_BLOCK]),
        max_shared_bytes_per_block=int(attrs[attr.MAX_SHARED_MEMORY_PER_BLOCK]),
        max_shared_bytes_per_block_optin=int(
            attrs.get(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0)) or None,
        driver_version=f"{driver // 1000}.{driver % 1000 // 10}",
        cuda_version=".".join(map(str, built)),
        index=device_index,
        pci_bus_id=pci_bus_id,
        uuid=device_uuid(pci_bus_id),
    )
