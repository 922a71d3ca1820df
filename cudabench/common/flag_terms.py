"""A message in another's terms: the checks are the command's own, whose messages name its
flags; a suite file's author wrote TOML keys, a Python caller gave arguments."""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar

_FLAG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")

# The suite file's key for each flag its entries stand for (cudabench.toml's format).
SUITE_KEYS = {
    "--size": "size", "--dtype": "dtype", "--variant": "variants", "--param": "params",
    "--tile": "params TILE", "--kernels-dir": "kernels_dirs", "--l2-flush": "l2_flush",
    "--seed": "seed", "--hot": "hot", "--full-check": "full_check", "--sanitize": "sanitize",
    "--warmup": "timing.warmup", "--min-samples": "timing.min_samples",
    "--max-samples": "timing.max_samples", "--precision": "timing.precision",
    "--max-time": "timing.max_time", "--timeout": "timing.timeout",
    "--compile-timeout": "timing.compile_timeout", "--rounds": "timing.rounds",
    # `transpose --inplace` is the op transpose_inplace; out of place, the op transpose
    "or drop --inplace": 'or use op = "transpose"', "--inplace": 'op = "transpose_inplace"',
}


# What the warnings of `cudabench run` name: the suite's keys, but for the flags `run` has
# too (--kernels-dir, --l2-flush, --full-check), which its command line may give.
RUN_SUITE_KEYS = {**{flag: key for flag, key in SUITE_KEYS.items()
                     if flag not in {"--kernels-dir", "--l2-flush", "--full-check"}},
                  "--hot": "hot = true"}


# What `cudabench ab` calls the sample counts: one --samples, both the minimum and the cap
# (a row's "raise --max-samples" named a flag ab does not have).
AB_FLAGS = {"--min-samples": "--samples", "--max-samples": "--samples"}


def terms_of_file(command: object) -> Mapping[str, str] | None:
    """Return what a results file's warnings named when its run showed them, by its
    `command` field: a suite's keys for `cudabench run` and `calibrate` (a suite file's
    runs), ab's --samples for `cudabench ab`, else None (the flags themselves)."""
    if isinstance(command, list) and command[1:2] in (["run"], ["calibrate"]):
        return RUN_SUITE_KEYS
    if isinstance(command, list) and command[1:2] == ["ab"]:
        return AB_FLAGS
    return None


def rename_flags(text: str, names: Mapping[str, str]) -> str:
    """Return text with each flag that names maps replaced by its name there; a key of
    several words (advice about a flag, "or drop --inplace") is replaced whole, first."""
    for phrase, name in names.items():
        if " " in phrase and phrase in text:
            text = text.replace(phrase, name)
    return _FLAG.sub(lambda flag: names.get(flag.group(), flag.group()), text)


# A Python caller's names for the flags, while its run() or compare() runs: the notes a
# command prints as it goes (a results file that cannot be written yet) name arguments.
LIVE_TERMS: ContextVar[Mapping[str, str] | None] = ContextVar("LIVE_TERMS", default=None)


def live(text: str) -> str:
    """Return a note printed during a run in its caller's terms (LIVE_TERMS)."""
    names = LIVE_TERMS.get()
    return rename_flags(text, names) if names else text
