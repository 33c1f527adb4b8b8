"""Pulses, radians and degrees for the bus servos."""

from __future__ import annotations

import math

import numpy as np
import pytest

from servotool.devices.hiwonder.units import (
    DEG_PER_PULSE,
    PULSE_CENTER,
    PULSE_MAX,
    PULSE_MIN,
    RAD_PER_PULSE,
    deg_from_pulses,
    deg_from_rad,
    pulses_from_deg,
    pulses_from_rad,
    rad_from_deg,
    rad_from_pulses,
    span_deg_from_pulses,
    span_pulses_from_deg,
)


def test_constants() -> None:
    assert (PULSE_MIN, PULSE_CENTER, PULSE_MAX) == (0, 500, 1000)
    assert RAD_PER_PULSE == 0.0041887902047863905
    assert math.radians(DEG_PER_PULSE) == pytest.approx(RAD_PER_PULSE, rel=1e-15)


def test_factory_conversion_is_centred_and_sign_flipped() -> None:
    assert rad_from_pulses(500) == 0.0
    assert rad_from_pulses(600) == pytest.approx(-100 * RAD_PER_PULSE)  # more pulses, negative angle
    assert rad_from_pulses(400) == (500 - 400) * 0.0041887902047863905
    assert deg_from_pulses(860) == pytest.approx(-86.4)


def test_spans() -> None:
    assert span_deg_from_pulses(375) == pytest.approx(90.0)  # 375 pulses are 90 degrees
    assert deg_from_pulses(PULSE_CENTER - 375) == pytest.approx(90.0)
    assert abs(deg_from_pulses(PULSE_MAX) - deg_from_pulses(PULSE_MIN)) == pytest.approx(240.0)
    assert span_pulses_from_deg(240.0) == pytest.approx(1000.0)
    assert rad_from_pulses(PULSE_MIN) - rad_from_pulses(PULSE_MAX) == pytest.approx(math.radians(240.0))


def test_round_trips_are_exact_over_the_whole_range() -> None:
    pulses = np.arange(PULSE_MIN - 50, PULSE_MAX + 51)  # sagged joints can read outside 0..1000
    np.testing.assert_array_equal(pulses_from_rad(rad_from_pulses(pulses)), pulses)
    np.testing.assert_array_equal(pulses_from_deg(deg_from_pulses(pulses)), pulses)
    for p in (0, 1, 499, 500, 501, 999, 1000):
        back = pulses_from_rad(rad_from_pulses(p))
        assert back == p and isinstance(back, int)


def test_pulses_are_rounded_to_whole_pulses() -> None:
    assert pulses_from_deg(0.1) == 500  # 0.1 deg is less than half a pulse
    assert pulses_from_deg(-0.13) == 501
    assert pulses_from_rad(math.radians(90.0)) == 125
    assert pulses_from_deg(0.12) == 500  # exactly half a pulse rounds up (toward more pulses)
    arr = pulses_from_deg(np.array([0.0, 90.0, -90.0]))
    assert arr.dtype.kind == "i" and list(arr) == [500, 125, 875]


def test_radians_and_degrees() -> None:
    assert deg_from_rad(math.pi) == pytest.approx(180.0)
    assert rad_from_deg(90.0) == pytest.approx(math.pi / 2)
    np.testing.assert_allclose(deg_from_rad(rad_from_deg(np.array([-170.0, 0.0, 33.3]))), [-170.0, 0.0, 33.3])
    assert isinstance(deg_from_rad(1.0), float)


@pytest.mark.parametrize(
    "fn",
    [rad_from_pulses, pulses_from_rad, deg_from_pulses, pulses_from_deg, deg_from_rad, rad_from_deg],
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), [1.0, float("nan")]])
def test_non_finite_values_are_refused(fn, bad) -> None:
    with pytest.raises(ValueError):
        fn(bad)
