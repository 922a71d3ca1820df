"""Bad input by command family (tests/badinput.py), a bounded number of examples each:
no exit 4, no exit 0 on bad input, no gate pass on a broken or regressed current file, no
input changed, no existing file changed by a command that ended in an error.

scripts/bad-input/tally.py runs the same families with many more examples and counts
the outcomes (docs/measurements.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import badinput
import pytest
from hypothesis import HealthCheck, given, settings

EXAMPLES = 60  # per family: all eight in about 20 s on two cores


@pytest.mark.parametrize("family", sorted(badinput.FAMILIES))
def test_bad_input_is_handled(family):
    strategy, make = badinput.FAMILIES[family]

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(spec):
        with tempfile.TemporaryDirectory(prefix="bad-input-") as folder:
            case = make(spec, Path(folder))
            result = badinput.run(case, Path(folder))
            assert badinput.violations(case, result) == [], (case.args[:8], result.output)

    check()
