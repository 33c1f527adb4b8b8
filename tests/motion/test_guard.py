"""Divergence guard: trip rule and latch, tuning floors, clean tracking never trips, runaways trip fast,
fail-closed pairing with the shaper."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.motion import guard as guard_module
from servotool.motion.guard import (
    DivergenceGuard,
    GuardConfig,
    SafetyConfig,
    StreamSafety,
    UnsafeConfigError,
    build_stream_safety,
    margin_floor,
    tuning_from_measurement,
)
from servotool.motion.limits import JointLimits
from servotool.motion.ramp import ramp_profile
from servotool.motion.shaper import ShaperConfig, StreamShaper

DT = 0.01
# Measured commanded-to-measured lags: simulator, FR3, FR20.
LAGS = {"sim": 0.039, "fr3": 0.078, "fr20": 0.111}


def delayed(setpoints: np.ndarray, lag_s: float, dt: float) -> np.ndarray:
    """What a healthy arm reports at each tick: the setpoint stream delayed by lag_s, linear between ticks.
    Row 0 is the primed pose at t = 0, which the arm holds before the stream starts."""
    t = np.arange(setpoints.shape[0]) * dt
    return np.stack(
        [np.interp(t - lag_s, t, setpoints[:, j], left=setpoints[0, j]) for j in range(setpoints.shape[1])],
        axis=1,
    )


# -- the trip rule -------------------------------------------------------------------------------------------


def test_trips_only_above_margin_plus_velocity_times_lag_and_says_why() -> None:
    g = DivergenceGuard(margin_deg=1.6, lag_s=0.08)
    assert g.check([10.0], [9.0], [0.0]) is None  # 1.0 < 1.6
    assert g.check([10.0], [8.4], [0.0]) is None  # exactly the allowance is not over it
    assert g.check([10.0], [5.0], [50.0]) is None  # 5.0 < 1.6 + 50 * 0.08 = 5.6: the allowance breathes
    assert not g.tripped
    v = g.check([10.0, 20.0], [10.0, 16.0], [0.0, 20.0])  # 4.0 > 1.6 + 1.6 = 3.2 on the second joint
    assert v is not None and g.tripped
    assert v.joint == 1 and v.joint_name == "q2" and v.joints == (1,)
    assert v.delta == pytest.approx(4.0)
    assert v.allowance == pytest.approx(3.2)
    assert v.excess == pytest.approx(0.8)
    assert (v.setpoint, v.measured, v.velocity) == (20.0, 16.0, 20.0)
    assert "q2" in v.reason and "4.000" in v.reason and "3.200" in v.reason and "0.800" in v.reason
    assert g.reason == v.reason and g.verdict is v


def test_the_verdict_names_the_worst_joint_and_lists_all() -> None:
    g = DivergenceGuard(1.0, 0.05, joint_names=["J1", "J2", "J3"])
    v = g.check([0.0, 0.0, 0.0], [2.0, -5.0, 0.5], [0.0, 0.0, 0.0])
    assert v.joint == 1 and v.joint_name == "J2" and v.joints == (0, 1)
    assert v.delta == pytest.approx(5.0)  # setpoint - measured, signed


def test_the_guard_latches_until_reset() -> None:
    g = DivergenceGuard(1.0, 0.05)
    first = g.check([5.0], [0.0], [0.0])
    assert first is not None
    assert g.check([0.0], [0.0], [0.0]) is first  # healthy data does not clear it
    assert g.tripped and g.reason == first.reason
    g.reset()
    assert not g.tripped and g.reason is None
    assert g.check([0.0], [0.0], [0.0]) is None


@pytest.mark.parametrize("where", ["setpoint", "measured", "velocity"])
def test_non_finite_input_trips_rather_than_passing_silently(where: str) -> None:
    g = DivergenceGuard(1.6, 0.08)
    args = {"setpoint": [0.0, 0.0], "measured": [0.0, 0.0], "velocity": [0.0, 0.0]}
    args[where] = [0.0, float("nan")]
    v = g.check(args["setpoint"], args["measured"], args["velocity"])
    assert v is not None and v.joint == 1 and math.isinf(v.excess)
    assert where in v.reason and "non-finite" in v.reason


def test_mismatched_lengths_are_a_programming_error() -> None:
    with pytest.raises(ValueError):
        DivergenceGuard(1.6, 0.08).check([0.0, 0.0], [0.0], [0.0, 0.0])


# -- the floors ----------------------------------------------------------------------------------------------


def test_refuses_lag_below_the_measured_lag() -> None:
    with pytest.raises(UnsafeConfigError, match="lag"):
        DivergenceGuard(margin_deg=5.0, lag_s=0.07, measured_lag_s=0.078)
    assert isinstance(UnsafeConfigError("x"), ValueError)
    DivergenceGuard(margin_deg=5.0, lag_s=0.078, measured_lag_s=0.078)  # equal is enough


def test_refuses_margin_below_the_braking_transient_plus_noise() -> None:
    floor = 500.0 * 0.078**2 / 2 + 0.003  # 1.524 deg
    assert margin_floor(0.078, 500.0, 0.003) == pytest.approx(floor)
    with pytest.raises(UnsafeConfigError, match="margin"):
        DivergenceGuard(margin_deg=1.5, lag_s=0.08, measured_lag_s=0.078, a_max=500.0, noise_deg=0.003)
    with pytest.raises(ValueError):
        DivergenceGuard(margin_deg=1.521, lag_s=0.08, measured_lag_s=0.078, a_max=500.0, noise_deg=0.003)
    DivergenceGuard(margin_deg=1.53, lag_s=0.08, measured_lag_s=0.078, a_max=500.0, noise_deg=0.003)
    # Without a_max only the lag floor can be checked.
    DivergenceGuard(margin_deg=0.1, lag_s=0.08, measured_lag_s=0.078)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"margin_deg": 0.0, "lag_s": 0.08},
        {"margin_deg": -1.0, "lag_s": 0.08},
        {"margin_deg": float("nan"), "lag_s": 0.08},
        {"margin_deg": 1.0, "lag_s": -0.01},
        {"margin_deg": 1.0, "lag_s": float("inf")},
        {"margin_deg": 1.0, "lag_s": 0.08, "a_max": 0.0},
        {"margin_deg": 1.0, "lag_s": 0.08, "noise_deg": -0.1},
        {"margin_deg": "wide", "lag_s": 0.08},
    ],
)
def test_refuses_nonsense_settings(kwargs) -> None:
    with pytest.raises(ValueError):
        DivergenceGuard(**kwargs)


# -- tuning --------------------------------------------------------------------------------------------------


def test_tuning_for_the_fr3() -> None:
    t = tuning_from_measurement(L_s=0.078, a_max=500.0, v_max=130.0, noise_deg=0.003, dt=0.01)
    assert t.lag_s == 0.08
    assert t.braking_deg == pytest.approx(1.521)
    assert t.margin_deg == pytest.approx(1.6)
    assert t.trail_deg == pytest.approx(130.0**2 / 1000.0 + 1.3)
    assert t.trail_s == pytest.approx(t.trail_deg / 130.0)
    g = t.guard_config().build()
    assert (g.lag_s, g.margin_deg, g.measured_lag_s, g.a_max) == (0.08, t.margin_deg, 0.078, 500.0)


@pytest.mark.parametrize(
    ("L", "lag"), [(0.039, 0.04), (0.078, 0.08), (0.111, 0.12), (0.07, 0.07), (0.0, 0.0)]
)
def test_tuned_lag_is_the_measured_lag_rounded_up_to_10_ms(L: float, lag: float) -> None:
    assert tuning_from_measurement(L, 500.0, 120.0, 0.0, 0.01).lag_s == pytest.approx(lag, abs=1e-12)


def test_tuned_margin_is_never_zero() -> None:
    t = tuning_from_measurement(0.0, 500.0, 120.0, 0.0, 0.01)
    assert t.margin_deg == pytest.approx(0.1)
    t.guard_config().build()


def test_tuning_always_clears_its_own_floors() -> None:
    rng = np.random.default_rng(3)
    for _ in range(2000):
        L, a, noise = rng.uniform(0.0, 0.3), rng.uniform(100.0, 10000.0), rng.uniform(0.0, 0.5)
        t = tuning_from_measurement(L, a, rng.uniform(10.0, 300.0), noise, 0.01)
        assert L <= t.lag_s < L + 0.01 + 1e-9
        floor = margin_floor(L, a, noise)
        assert floor <= t.margin_deg < floor + 0.1 + 1e-9
        assert abs(t.margin_deg * 10 - round(t.margin_deg * 10)) < 1e-6  # a multiple of 0.1 deg
        t.guard_config().build()  # never refused by the guard's own floors


@pytest.mark.parametrize(
    "args",
    [
        (-0.01, 500, 120, 0, 0.01),
        (0.08, 0, 120, 0, 0.01),
        (0.08, 500, 0, 0, 0.01),
        (0.08, 500, 120, -1, 0.01),
        (0.08, 500, 120, 0, 0.0),
        (float("nan"), 500, 120, 0, 0.01),
    ],
)
def test_tuning_refuses_nonsense_measurements(args) -> None:
    with pytest.raises(ValueError):
        tuning_from_measurement(*args)


# -- clean tracking never trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("robot", sorted(LAGS))
@pytest.mark.parametrize("a_max", [500.0, 2000.0])
def test_clean_lagging_arm_never_trips_on_ramps_catch_ups_and_hard_stops(robot: str, a_max: float) -> None:
    L, v_max, noise = LAGS[robot], 130.0, 0.003
    tune = tuning_from_measurement(L, a_max, v_max, noise, DT)
    guard = tune.guard_config().build()
    rng = np.random.default_rng(5)

    # Three joints: a ramp-mode sweep up to 120 deg/s, a shock stream of raw jumps and freezes (full-speed
    # catch-ups and hard stops at a_max), and a joint that stays still.
    ramp = ramp_profile(0.0, 60.0, [5.0, 20.0, 60.0, 120.0], dt=DT).q
    n = ramp.size
    shock = np.repeat(rng.uniform(-30.0, 30.0, n // 40 + 1), 40)[:n]
    raw = np.stack([ramp, shock, np.full(n, 7.0)], axis=1)
    shaper = StreamShaper(v_max, a_max, DT)
    shaper.prime([0.0, 0.0, 7.0])
    sp = np.empty((n + 1, 3))
    vel = np.zeros((n + 1, 3))
    sp[0] = shaper.position
    for k in range(n):
        sp[k + 1] = shaper.step(raw[k])
        vel[k + 1] = shaper.velocity
    measured = delayed(sp, L, DT) + rng.uniform(-noise, noise, sp.shape)

    worst = 0.0
    for k in range(n + 1):
        assert guard.check(sp[k], measured[k], vel[k]) is None, guard.reason
        worst = max(worst, float(np.max(np.abs(sp[k] - measured[k]) / guard.allowance(vel[k]))))
    assert worst > 0.5  # the run came close enough to the allowance to mean something


def test_lag_setting_below_the_real_lag_would_trip_on_clean_cruise() -> None:
    # Why the floor exists: with lag_s under L, a healthy 120 deg/s cruise overruns the allowance.
    L = 0.078
    sp = np.arange(0, 300)[:, None] * (120.0 * DT)
    measured = delayed(sp, L, DT)
    guard = DivergenceGuard(margin_deg=1.6, lag_s=0.05)
    tripped = any(guard.check(sp[k], measured[k], [120.0]) for k in range(sp.shape[0]))
    assert tripped


# -- runaways trip fast --------------------------------------------------------------------------------------


@pytest.mark.parametrize("robot", ["sim", "fr3"])
def test_runaway_while_commanded_still_trips_within_two_ticks(robot: str) -> None:
    guard = tuning_from_measurement(LAGS[robot], 500.0, 130.0, 0.003, DT).guard_config().build()
    hold = np.array([0.0, 45.0])
    for _ in range(50):
        assert guard.check(hold, hold, [0.0, 0.0]) is None
    for tick in (1, 2):  # the base joint starts sweeping on its own at 150 deg/s
        measured = hold + np.array([150.0 * DT * tick, 0.0])
        if guard.check(hold, measured, [0.0, 0.0]) is not None:
            break
    assert guard.tripped and guard.verdict.joint == 0


def test_runaway_against_a_cruising_stream_trips_within_two_ticks() -> None:
    L = LAGS["fr3"]
    guard = tuning_from_measurement(L, 500.0, 130.0, 0.003, DT).guard_config().build()
    v = 40.0
    for k in range(100):  # healthy cruise: measured trails by v * L
        assert guard.check([v * k * DT], [v * (k * DT - L)], [v]) is None
    k0 = 100
    m0 = v * (k0 * DT - L)
    for tick in (1, 2):  # the arm turns and runs away backwards at 150 deg/s while we command +40
        s = v * (k0 + tick) * DT
        if guard.check([s], [m0 - 150.0 * DT * tick], [v]) is not None:
            break
    assert guard.tripped


# -- fail-closed pairing -------------------------------------------------------------------------------------


def fr3_guard_cfg(**over) -> GuardConfig:
    base = {"margin_deg": 1.6, "lag_s": 0.08, "measured_lag_s": 0.078, "a_max": 500.0, "noise_deg": 0.003}
    base.update(over)
    return GuardConfig(**base)


def test_a_shaper_without_a_guard_refuses_to_build() -> None:
    shaper_cfg = ShaperConfig(v_max=130.0, a_max=500.0, dt=DT)
    with pytest.raises(UnsafeConfigError, match="without a divergence guard"):
        build_stream_safety(shaper_cfg, None)
    with pytest.raises(UnsafeConfigError):
        SafetyConfig(shaper=shaper_cfg, guard=None)


def test_paired_shaper_and_guard_build_together() -> None:
    safety = build_stream_safety(ShaperConfig(130.0, 500.0, DT), fr3_guard_cfg(), n_joints=6)
    assert isinstance(safety, StreamSafety) and safety.shaped
    assert isinstance(safety.shaper, StreamShaper) and safety.shaper.n_joints == 6
    assert isinstance(safety.guard, DivergenceGuard) and safety.guard.margin_deg == 1.6
    # A guard alone and a raw stream are allowed: only a shaper without its guard is half-protected.
    assert build_stream_safety(None, fr3_guard_cfg()).guard is not None
    raw = build_stream_safety(None, None)
    assert not raw.shaped and raw.guard is None


def test_pairing_checks_the_margin_against_the_shapers_acceleration() -> None:
    # The guard was sized for 500 deg/s^2 but the shaper would brake at 2000.
    with pytest.raises(UnsafeConfigError, match="a_max"):
        build_stream_safety(ShaperConfig(130.0, [500.0, 2000.0], DT), fr3_guard_cfg())
    # A guard that did not say which a_max it was sized for is checked against the shaper's.
    with pytest.raises(UnsafeConfigError, match="margin"):
        build_stream_safety(ShaperConfig(130.0, 2000.0, DT), fr3_guard_cfg(a_max=None))
    build_stream_safety(ShaperConfig(130.0, 500.0, DT), fr3_guard_cfg(a_max=None))


def test_guard_config_applies_the_floors_on_construction() -> None:
    with pytest.raises(UnsafeConfigError):
        fr3_guard_cfg(lag_s=0.05)
    with pytest.raises(UnsafeConfigError):
        fr3_guard_cfg(margin_deg=1.0)


def test_joint_limits_are_reexported_from_the_guard_module() -> None:
    assert guard_module.JointLimits is JointLimits


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(allow_nan=True, allow_infinity=True, width=64),
            st.floats(-1e3, 1e3),
            st.floats(allow_nan=True, allow_infinity=True, width=64),
        ),
        min_size=1,
        max_size=8,
    ),
    st.floats(-2.0, 2.0),
)
def test_the_fast_tick_check_agrees_with_the_array_check(joints, shift):
    """check() takes plain floats the quick way; whatever it is given, the verdict is the array check's."""
    s = np.array([j[1] + shift for j in joints])
    m = np.array([j[1] for j in joints])
    v = np.array([j[2] for j in joints])
    m[0] = joints[0][0] if not np.isfinite(joints[0][0]) else m[0]
    fast, slow = DivergenceGuard(0.5, 0.02), DivergenceGuard(0.5, 0.02)
    slow._within = lambda *a: False  # the array check alone
    got, want = fast.check(s, m, v), slow.check(s, m, v)
    assert (got is None) == (want is None)
    assert (got and got.reason) == (want and want.reason) and fast.checks == slow.checks == 1
