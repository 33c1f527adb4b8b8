"""One uncertainty convention: the 95 % interval by its bounds, the standard error by its name."""

import math

from servotool.analysis.uncertainty import ci95_text, stderr_text, with_stderr


def test_the_interval_is_named_by_its_bounds_never_a_plus_minus():
    assert ci95_text(78.04, 78.18) == "95 % CI 78.04 to 78.18 ms"
    assert ci95_text(0.1, 0.3, "deg", ".1f") == "95 % CI 0.1 to 0.3 deg"
    assert ci95_text(math.nan, math.nan) == "one pass: no 95 % CI"


def test_the_standard_error_is_named_and_never_shown_as_zero():
    assert stderr_text(0.02) == "standard error 0.02 ms"
    assert stderr_text(0.0041) == "standard error 0.004 ms"
    assert stderr_text(math.nan) == "" and stderr_text(None) == ""
    assert with_stderr("78.25", 0.03, "ms") == "78.25 ms (standard error 0.03 ms)"
    assert with_stderr("0.00", math.nan, "ms") == "0.00 ms"
