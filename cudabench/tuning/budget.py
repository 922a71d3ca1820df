"""--budget: how many configurations a search may evaluate and/or for how long."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from cudabench.errors import UsageError

_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0}
# ASCII digits only ("٣" is a digit to \d), and few enough for int(): a 5000-digit count
# is a typo, not a budget
_ITEM = re.compile(r"^(\d{1,18}(?:\.\d{1,18})?)\s*([smh]?)$", re.ASCII)
_LONG = re.compile(r"^\d+(?:\.\d+)?\s*([smh]?)$", re.ASCII)  # an item past those digits


@dataclass(frozen=True)
class Budget:
    """Configurations to evaluate (cached ones count, at no cost) and seconds to spend."""

    configs: int | None = None
    seconds: float | None = None

    def configs_for(self, space_size: int) -> int:
        """Return how many configurations a space of space_size gets."""
        return space_size if self.configs is None else min(self.configs, space_size)


def parse_budget(text: str | None) -> Budget:
    """Parse `200` (configurations), `120s`, `10m`, `1h` (time) or both: `200,10m`."""
    if text is None:
        return Budget()
    configs, seconds = None, None
    usage = ("expected configurations and/or a time, e.g. --budget 200, --budget 90s, "
             "--budget 10m or --budget 200,10m")
    for item in (part.strip().lower() for part in text.split(",")):
        match = _ITEM.match(item)
        long = _LONG.match(item) if not match else None
        if long:  # a number, but too large: not a "configurations and/or a time" mistake
            raise UsageError(f"--budget {text!r}: too many "
                             f"{'seconds' if long.group(1) else 'configurations'} (18 digits "
                             "at most)")
        if not match:
            raise UsageError(f"--budget {text!r}: {usage}")
        number, unit = match.groups()
        if unit:
            value = float(number) * _UNITS_S[unit]
            if seconds is not None or not (math.isfinite(value) and value > 0):
                raise UsageError(f"--budget {text!r}: {usage}")
            seconds = value
        else:
            if configs is not None or "." in number or int(number) < 1:
                raise UsageError(f"--budget {text!r}: {usage}")
            configs = int(number)
    return Budget(configs, seconds)
