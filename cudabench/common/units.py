"""Numbers as people read them: the one place where units are chosen (seconds inside)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping


def format_seconds(seconds: float | None) -> str:
    """Format a duration with a unit that keeps 3-4 significant digits: the smallest unit
    whose rounded value stays below 1000 (0.99996 ms reads "1 ms", not "1000 us")."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if abs(float(f"{seconds / scale:.4g}")) < 1000:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds:.4g} s"


ROUNDING = 1e-9  # a ratio this close to 1 + threshold is the threshold, not past it


def exceeds(change: float, threshold: float) -> bool:
    """Return whether a relative change is beyond a threshold by more than float rounding:
    672 ns over 640 ns and 21 us over 20 us are both +5% exactly, yet one computes a hair
    above 0.05 and the other below, and "more than the threshold" must judge them alike."""
    return change > threshold + ROUNDING * (1 + threshold)


def format_change(change: float | None, threshold: float | None = None) -> str:
    """Format a relative change as a signed percentage, to one decimal, or where a
    threshold is given to as many (up to 8) as show it on the threshold's side it lies:
    +5.04% past a 5% threshold and +4.96% within it both read "+5.0%"."""
    if change is None:
        return "-"
    for places in range(1, 9):  # past 8, within exceeds()'s rounding: at the threshold
        # never "-0.0%"
        text = "0.0%" if abs(change) < 0.5 * 10 ** -(places + 2) else f"{change:+.{places}%}"
        if threshold is None or _side(float(text[:-1]) / 100, threshold) == \
                _side(change, threshold):
            break
    return text


def _side(change: float, threshold: float) -> int:
    """Return 1 where a change lies past +-threshold, -1 within it, 0 at it."""
    return 1 if exceeds(abs(change), threshold) else -1 if exceeds(threshold, abs(change)) else 0


def format_percent(fraction: float) -> str:
    """Format a fraction such as a threshold as a percentage: 0.05 -> 5%."""
    return f"{fraction * 100:.4g}%"


def format_amount(value: float, places: int = 1, grouped: bool = True) -> str:
    """Format a rate or ratio with `places` decimals (thousands grouped), or with 2
    significant digits where those decimals would show fewer: a true 0.0059x read "0.01x",
    70% off, and a small input's 0.0003 GFLOP/s "0.0"."""
    if value and abs(value) < 10 ** (1 - places):
        return f"{value:#.2g}"  # '#' keeps the trailing zero: 0.50, not 0.5
    return f"{value:{',' if grouped else ''}.{places}f}"


def format_p_value(p: float | None, alpha: float | None = None) -> str:
    """Format a p-value with two significant digits, or more where two would put it on the
    other side of alpha (as alpha reads, :g) than it lies: 0.000996 read "0.001 < 0.001"."""
    if p is None:
        return "-"
    if p < 1e-99:
        return "<1e-99"
    shown = float(f"{alpha:g}") if alpha is not None else None
    for digits in range(2, 17):
        text = f"{p:.{digits}g}"
        if shown is None or (float(text) < shown) == (p < shown):
            return text
    return f"{p:.17g}"


def p_test_text(p: float, alpha: float) -> str:
    """Return a p-value against alpha as a reason says it: "p=0.00018 < 0.001", and
    "p<1e-99 < 0.001" for one too small to print."""
    value = format_p_value(p, alpha)
    return (f"p{value}" if value.startswith("<") else f"p={value}") + \
        f" {'<' if p < alpha else '>='} {alpha:g}"


def params_text(params: Mapping[str, int]) -> str:
    """Format parameters as NAME=value pairs."""
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def shape_text(shape: Iterable[int]) -> str:
    """Format a shape as 1000x1000x1000."""
    return "x".join(map(str, shape)) or "-"


def format_bytes(count: int) -> str:
    """Format a byte count in binary units, up to GiB."""
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{value:.4g} {unit}"


def format_error(value: float) -> str:
    """Format an error measure, inf for a result that is not finite."""
    return f"{value:.2e}" if math.isfinite(value) else "inf"


def gpu_text(model: str | None) -> str:
    """Return a GPU model as a table cell: without the vendor's name, which every model
    shares ("NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3"); '-' when none was recorded."""
    if not model:
        return "-"
    return model.removeprefix("NVIDIA ").strip() or model
