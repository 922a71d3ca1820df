"""The `--size` syntax: `1000`, `1<<24`, `512x256x128`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from cudabench.errors import UsageError
from cudabench.ops.types import INT32_MAX

# At most 30 digits (and a shift of 4): a longer number is no size, and Python refuses to
# convert one of over 4300 digits at all.
_NUMBER = re.compile(r"^\s*(\d{1,30})\s*(?:<<\s*(\d{1,4}))?\s*$", re.ASCII)


def parse_extent(text: str, flag: str = "--size") -> int:
    """Parse one positive extent, `1000` or `1<<24`, that fits the kernels' int arguments."""
    match = _NUMBER.match(text)
    shift = int(match[2] or 0) if match else 0
    value = int(match[1]) << shift if match and shift <= 62 else 0  # no 1<<10**9 integers
    if match and int(match[1]) and (shift > 62 or value > INT32_MAX):
        raise UsageError(f"{flag} {text!r}: each extent must be at most 2^31-1 "
                         "(kernels take int arguments)")
    if value <= 0:
        raise UsageError(
            f"{flag} {text!r}: sizes are positive integers such as 1000 or 1<<24"
        )
    if value > INT32_MAX:
        raise UsageError(f"{flag} {text!r}: each extent must be at most 2^31-1 "
                         "(kernels take int arguments)")
    return value


def parse_dims(text: str, counts: Mapping[int, str], flag: str = "--size") -> tuple[int, ...]:
    """Split `AxBxC` into extents; counts maps an accepted count to an example."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) not in counts:
        examples = " or ".join(f"{flag} {example}" for example in counts.values())
        raise UsageError(f"{flag} {text!r}: expected {examples}")
    if len(parts) == 1:
        return (parse_extent(parts[0], flag),)
    extents = []
    for part in parts:
        try:
            extents.append(parse_extent(part, flag))
        except UsageError as exc:  # `--size '': ...` quoted the empty extent of `64x`
            why = str(exc).split(": ", 1)[1]
            raise UsageError(f"{flag} {text!r}: extent {part.strip()!r}: {why}") from None
    return tuple(extents)


# -- sweeps ---------------------------------------------------------------------------------
# A sweep is a comma-separated list of sizes; each extent of a size may be a range
# `FIRST..LAST:STEP`, STEP being `xK` (multiply by K) or `+K` (add K). The `x` that follows a
# range's colon is its step; any other `x` separates extents, so `4096x256..4096:x2x4096`
# reads 4096 | 256..4096:x2 | 4096 and `45x70x33` stays three plain extents.
_EXTENT = r"\d+(?:\s*<<\s*\d+)?"
_TOKEN = re.compile(rf"\s*(?:(?P<first>{_EXTENT})\s*\.\.\s*(?P<last>{_EXTENT})\s*:\s*"
                    rf"(?P<op>[x+])\s*(?P<step>\d+)|(?P<plain>{_EXTENT}))\s*", re.ASCII)
MAX_SWEEP_POINTS = 10_000


def expand_sizes(text: str, flag: str = "--size") -> list[str]:
    """Return the sizes a --size value names: one, a comma list, or ranges per extent."""
    sizes: list[str] = []
    for item in text.lower().replace("×", "x").split(","):
        extents = [_extent_values(token, flag, text) for token in _tokens(item, flag, text)]
        # counted before the product is built: 9000 x 9000 steps took 7 GB before the check
        if len(sizes) + math.prod(len(values) for values in extents) > MAX_SWEEP_POINTS:
            raise UsageError(f"{flag} {text!r}: more than {MAX_SWEEP_POINTS} sizes; "
                             "use a coarser step")
        combos: list[list[int]] = [[]]
        for values in extents:
            combos = [combo + [value] for combo in combos for value in values]
        sizes += ["x".join(str(v) for v in combo) for combo in combos]
    return list(dict.fromkeys(sizes))


def _tokens(item: str, flag: str, text: str) -> list[re.Match[str]]:
    """Split one size of a sweep into its extents (plain or ranges)."""
    tokens, position = [], 0
    while True:
        match = _TOKEN.match(item, position)
        if match is None:
            raise UsageError(f"{flag} {text!r}: cannot read {item.strip()!r}; sizes look like "
                             "1000, 512x256x128, 256,512 or 256..8192:x2 (see --help)")
        tokens.append(match)
        position = match.end()
        if position == len(item):
            return tokens
        if item[position:].startswith("..") and ":" not in item[position:]:
            raise UsageError(f"{flag} {text!r}: a range needs a step after a colon, "
                             "FIRST..LAST:xK or FIRST..LAST:+K (e.g. 256..8192:x2)")
        if item[position] != "x":
            raise UsageError(f"{flag} {text!r}: expected `x` between extents at "
                             f"{item[position:]!r}")
        position += 1


def _extent_values(token: re.Match[str], flag: str, text: str) -> list[int]:
    """Return the values of one extent: a plain number, or every step of a range."""
    if token["plain"] is not None:
        return [parse_extent(token["plain"], flag)]
    first, last = parse_extent(token["first"], flag), parse_extent(token["last"], flag)
    step = int(token["step"]) if len(token["step"]) <= 30 else 0  # 0: refused just below
    grows = step > 1 if token["op"] == "x" else step > 0
    if first > last or not grows:
        raise UsageError(f"{flag} {text!r}: a range runs from a smaller to a larger size "
                         "with a step that grows it (x2, +256)")
    values = [first]
    while len(values) <= MAX_SWEEP_POINTS:
        following = values[-1] * step if token["op"] == "x" else values[-1] + step
        if following > last:
            return values
        values.append(following)
    raise UsageError(f"{flag} {text!r}: more than {MAX_SWEEP_POINTS} steps in a range")


_PARAM = r"-?\s*(?:0[xX][0-9a-fA-F]+|\d+)(?:\s*<<\s*\d+)?"
_PARAM_ITEM = re.compile(rf"\s*(?:(?P<first>{_PARAM})\s*\.\.\s*(?P<last>{_PARAM})\s*:\s*"
                         rf"(?P<op>[x+])\s*(?P<step>\d+)|(?P<plain>{_PARAM}))\s*", re.ASCII)


def _param_int(text: str, flag: str) -> int:
    """Return one parameter value: `16`, `016`, `-2`, `0x10` or `1<<14`."""
    number, _, shift = text.replace(" ", "").partition("<<")
    if int(shift or 0) > 62:  # no 1<<10**9 integers
        raise UsageError(f"{flag} {text!r}: shifted by more than 62 bits")
    hexadecimal = number.lstrip("-")[:2].lower() == "0x"  # else decimal, 08 included
    return int(number, 16 if hexadecimal else 10) << int(shift or 0)


def expand_values(text: str, flag: str) -> list[int]:
    """Return the integers a parameter value names: `16`, `8,16,32`, `-2,2`, `8..64:x2` or
    `-4..4:+2` (parameters may be negative, unlike sizes)."""
    values: list[int] = []
    for item in text.split(","):
        match = _PARAM_ITEM.fullmatch(item)
        if match is None:
            raise UsageError(f"{flag} {text!r}: expected integers, a list (8,16,32) or a "
                             "range (8..64:x2, -4..4:+2)")
        if match["plain"] is not None:
            values.append(_param_int(match["plain"], flag))
            continue
        first, last = _param_int(match["first"], flag), _param_int(match["last"], flag)
        step = int(match["step"]) if len(match["step"]) <= 30 else 0
        grows = (step > 1 and first > 0) if match["op"] == "x" else step > 0
        if first > last or not grows:
            raise UsageError(f"{flag} {text!r}: a range runs from a smaller to a larger value "
                             "with a step that grows it (x2 from a positive value, +4)")
        count = len(values)
        value = first
        while value <= last:
            values.append(value)
            if len(values) - count > MAX_SWEEP_POINTS:
                raise UsageError(f"{flag} {text!r}: more than {MAX_SWEEP_POINTS} steps in a "
                                 "range")
            value = value * step if match["op"] == "x" else value + step
    return list(dict.fromkeys(values))
