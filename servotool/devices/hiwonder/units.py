"""Unit conversions for the bus servos: pulses, radians and degrees.

A bus servo position is a pulse count from PULSE_MIN to PULSE_MAX with PULSE_CENTER in the middle. One pulse
is 0.24 degrees, so the 1000-pulse range spans 240 degrees. The joint angle is zero at the centre and its sign
is flipped: more pulses means a more negative angle, rad = (500 - pulse) * RAD_PER_PULSE.

Every function accepts a scalar (and then returns a Python scalar) or an array-like (and then returns a numpy
array). Non-finite input is refused with ValueError rather than converted into a meaningless pulse count.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

# A scalar in gives a Python scalar out; an array-like in gives a numpy array out.
Numbers = Any

PULSE_MIN = 0
PULSE_MAX = 1000
PULSE_CENTER = 500

DEG_PER_PULSE = 0.24
# The factory's pulse_to_rad constant, equal to 0.24 * pi / 180.
RAD_PER_PULSE = 0.0041887902047863905


def _checked(value: npt.ArrayLike, name: str) -> tuple[np.ndarray, bool]:
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr, arr.ndim == 0


def _round_half_up(arr: np.ndarray) -> np.ndarray:
    # Half-up rather than numpy's half-to-even, so that shifting a value by a whole number of pulses shifts
    # its rounded pulse by exactly that number.
    return np.floor(arr + 0.5).astype(np.int64)


def _out_float(arr: np.ndarray, scalar: bool) -> Numbers:
    return float(arr) if scalar else arr


def _out_int(arr: np.ndarray, scalar: bool) -> Numbers:
    return int(arr) if scalar else arr


def rad_from_pulses(pulse: npt.ArrayLike) -> Numbers:
    """Joint angle in radians of a servo position in pulses (sign flipped, zero at PULSE_CENTER)."""
    arr, scalar = _checked(pulse, "pulse")
    return _out_float((PULSE_CENTER - arr) * RAD_PER_PULSE, scalar)


def pulses_from_rad(rad: npt.ArrayLike) -> Numbers:
    """Servo position of a joint angle in radians, rounded to the nearest whole pulse (halves round up).

    The result is not range-checked: an angle outside the servo's travel gives a pulse outside
    [PULSE_MIN, PULSE_MAX], and deciding whether that is allowed is the job of the joint limits.
    """
    arr, scalar = _checked(rad, "rad")
    return _out_int(_round_half_up(PULSE_CENTER - arr / RAD_PER_PULSE), scalar)


def deg_from_pulses(pulse: npt.ArrayLike) -> Numbers:
    """Joint angle in degrees of a servo position in pulses (sign flipped, zero at PULSE_CENTER)."""
    arr, scalar = _checked(pulse, "pulse")
    return _out_float((PULSE_CENTER - arr) * DEG_PER_PULSE, scalar)


def pulses_from_deg(deg: npt.ArrayLike) -> Numbers:
    """Servo position of a joint angle in degrees, rounded to the nearest whole pulse (halves round up)."""
    arr, scalar = _checked(deg, "deg")
    return _out_int(_round_half_up(PULSE_CENTER - arr / DEG_PER_PULSE), scalar)


def deg_from_rad(rad: npt.ArrayLike) -> Numbers:
    """Degrees from radians."""
    arr, scalar = _checked(rad, "rad")
    return _out_float(np.degrees(arr), scalar)


def rad_from_deg(deg: npt.ArrayLike) -> Numbers:
    """Radians from degrees."""
    arr, scalar = _checked(deg, "deg")
    return _out_float(np.radians(arr), scalar)


def span_deg_from_pulses(pulses: npt.ArrayLike) -> Numbers:
    """Angular size in degrees of a distance in pulses (no offset, no sign flip): 375 pulses = 90 degrees."""
    arr, scalar = _checked(pulses, "pulses")
    return _out_float(arr * DEG_PER_PULSE, scalar)


def span_pulses_from_deg(deg: npt.ArrayLike) -> Numbers:
    """Distance in pulses of an angular size in degrees (no offset, no sign flip, not rounded)."""
    arr, scalar = _checked(deg, "deg")
    return _out_float(arr / DEG_PER_PULSE, scalar)
