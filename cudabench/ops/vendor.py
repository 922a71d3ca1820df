"""Vendor routines: the library call that does an op's work, timed and verified beside it.

An op names the library (`vendor_library`, e.g. "cuBLAS") and returns, per type, either a
VendorCall or the reason there is none ("no vendor routine for int32"). A call binds to the
device addresses of the op's own buffers, by name, and returns the run to time: handles and
plans are made in bind, before any timing, so that only the library's launch is timed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

Shape = tuple[int, ...]
Run = Callable[[], None]
# Device addresses by buffer name, shape -> (the run to time, what releases its handle).
Bind = Callable[[Mapping[str, int], Shape], tuple[Run, Run]]


class VendorUnavailable(Exception):
    """The vendor library cannot be used here (not installed, no handle): a SKIP row."""


@dataclass(frozen=True)
class VendorCall:
    """One library routine doing an op's work on the op's buffers."""

    library: str  # the row's name and its column: "vs cuBLAS"
    routine: str  # what was called and how, for the row's source: pinned compute type...
    unit: str  # the roof it is held against: "cuda", "tensor", or "" for data movement
    compute_type: str  # the type of its arithmetic ("float32", "float16"...), "" if none
    bind: Bind
