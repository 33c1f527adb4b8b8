"""Regression: per-cycle logs replayed through the generator alone and through the generator and the backstop.

Two logs: one recorded on the Franka simulator (tests/fixtures/franka_lost_packets_cycle_log.json: a step
run whose generator stepped the measured period of lost packets, the backstop binding behind it), in joint
space under the joints' own per-axis limits; and a drawn Cartesian one under one vector-norm budget
(0.3 m/s, 0.5 m/s^2, 20 m/s^3), where a two-axis move first makes the limiter bind. Through the generator
alone, under the three rules, each lands exactly with every limit kept; through the generator and the
limiter with the rules broken, the command falls behind a generator that never hears of it, and the
limiter, with no braking logic, orbits the target instead of landing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from servotool.devices.franka.family import motion_caps
from servotool.devices.franka.profiles import FR3
from servotool.motion.backstop import RateBounds
from servotool.motion.replay import Rules, replay
from tests.motion.cycle_logs import FIXTURES, cartesian_log, load_compact

DT = 0.001
CAPS = motion_caps((FR3,))
JOINT_BUDGET = RateBounds(CAPS.v_max, CAPS.a_max, CAPS.j_max)
assert CAPS.backstop is not None
JOINT_LIMITS = RateBounds(*CAPS.backstop)
CARTESIAN = RateBounds(0.3, 0.5, 20.0, norm=True)
# the generator's budget a hair inside the limiter's, which keeps a margin of its own against rounding
GENERATOR = RateBounds(0.99 * 0.3, 0.99 * 0.5, 0.99 * 20.0, norm=True)
BROKEN = Rules(norm_budget=False, nominal_step=False, reanchor=False)


@pytest.fixture(scope="module")
def joint_log():
    return load_compact(FIXTURES / "franka_lost_packets_cycle_log.json")


def test_the_recorded_log_has_lost_packets(joint_log) -> None:
    late = joint_log.periods[joint_log.periods > DT * 1.5]
    assert len(late) > 200 and set(np.round(late * 1e3)) == {2.0, 3.0, 4.0}


def test_joint_log_through_the_generator_alone_lands_exactly_within_its_limits(joint_log) -> None:
    r = replay(joint_log, JOINT_BUDGET, DT)
    assert r.landed_exactly and r.landing_error == 0.0
    assert r.peak_velocity <= CAPS.v_max * (1 + 1e-9)
    assert r.peak_acceleration <= CAPS.a_max * (1 + 1e-9)
    assert r.peak_jerk <= CAPS.j_max * (1 + 1e-9)


def test_joint_log_under_the_rules_never_makes_the_backstop_bind(joint_log) -> None:
    r = replay(joint_log, JOINT_BUDGET, DT, backstop=JOINT_LIMITS)
    assert r.max_alteration == 0.0 and r.altered_cycles == 0 and r.landed_exactly


def test_joint_log_with_the_rules_broken_orbits(joint_log) -> None:
    r = replay(joint_log, JOINT_BUDGET, DT, BROKEN, backstop=JOINT_LIMITS)
    assert not r.landed_exactly
    assert r.first_altered_s == pytest.approx(0.511, abs=0.002)  # the first late cycle in the cruise
    assert r.orbit_amplitude == pytest.approx(0.26, abs=0.02)  # deg, about the last target, never landing
    assert r.max_gap == pytest.approx(0.50, abs=0.02)  # the command behind the generator's own state


def test_joint_log_re_anchoring_alone_bounds_it_as_the_live_run_did(joint_log) -> None:
    """What the recorded run itself did (re-anchoring on, the measured period stepped): the backstop binds
    by some 0.07 deg on about 440 commands, and the generator, hearing of it, still lands exactly."""
    r = replay(joint_log, JOINT_BUDGET, DT, Rules(nominal_step=False), backstop=JOINT_LIMITS)
    assert r.landed_exactly
    assert r.max_alteration == pytest.approx(0.065, abs=0.005) and 400 <= r.altered_cycles <= 500


def test_cartesian_log_through_the_generator_alone_lands_exactly() -> None:
    r = replay(cartesian_log(), GENERATOR, DT)
    assert r.landed_exactly and r.landing_error == 0.0
    # each axis got 1/sqrt(3) of the budget, so the vector keeps the norm
    assert r.peak_velocity <= 0.3 * (1 + 1e-9) and r.peak_acceleration <= 0.5 * (1 + 1e-9)
    assert r.peak_jerk <= 20.0 * (1 + 1e-9)


def test_cartesian_log_under_the_rules_never_makes_the_backstop_bind() -> None:
    r = replay(cartesian_log(), GENERATOR, DT, backstop=CARTESIAN)
    assert r.max_alteration == 0.0 and r.landed_exactly


def test_cartesian_log_with_the_rules_broken_orbits_by_centimetres() -> None:
    r = replay(cartesian_log(), GENERATOR, DT, BROKEN, backstop=CARTESIAN)
    assert not r.landed_exactly
    assert r.orbit_amplitude == pytest.approx(0.114, abs=0.01)  # m: the +-10 cm orbit
    assert r.altered_cycles > 3000


def test_cartesian_log_without_the_norm_split_binds_at_the_two_axis_move() -> None:
    """Rule 2 kept, rule 1 broken: the limiter first binds at 1.0 s, y braking while z starts (a norm of
    sqrt(2) times each axis's acceleration), and without rule 3 the run orbits from there."""
    r = replay(cartesian_log(), GENERATOR, DT, Rules(norm_budget=False, reanchor=False), backstop=CARTESIAN)
    assert r.first_altered_s == pytest.approx(1.001, abs=0.002)
    assert not r.landed_exactly and r.orbit_amplitude > 0.05
    assert math.isfinite(r.max_gap)
