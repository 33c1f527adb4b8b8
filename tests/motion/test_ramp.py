"""Ramp-mode profiles (no velocity discontinuity, exact ends, phases) and step-mode level cycles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from servotool.motion.ramp import PHASES, RampProfile, ramp_profile, step_levels


def assert_ramp_guarantees(p: RampProfile, speeds: list[float]) -> None:
    n_ramp = p.ramp_s / p.dt
    assert len(p.passes) == 2 * len(speeds)
    v_prev, q_prev = 0.0, p.start_deg
    for k in range(len(p)):
        speed = speeds[p.pass_index[k] // 2]
        bound = speed / n_ramp
        # Each tick's velocity step, from the designed velocities and from the positions themselves.
        assert abs(p.v[k] - v_prev) <= bound * (1 + 1e-12)
        assert abs((p.q[k] - q_prev) / p.dt - p.v[k]) <= 1e-9 * max(1.0, speed)
        v_prev, q_prev = p.v[k], p.q[k]
    assert p.v[-1] == 0.0
    end = p.start_deg + p.sweep_deg
    for ps in p.passes:
        speed = speeds[ps.index // 2]
        assert ps.speed == speed and ps.peak <= speed
        assert ps.direction == (1 if ps.index % 2 == 0 else -1) * (1 if p.sweep_deg > 0 else -1)
        assert (ps.q_from, ps.q_to) == ((p.start_deg, end) if ps.index % 2 == 0 else (end, p.start_deg))
        sl = slice(ps.first_tick, ps.end_tick)
        assert np.all(p.pass_index[sl] == ps.index) and np.all(p.direction[sl] == ps.direction)
        # Exactly at the target, bit for bit, on arrival and through the settle.
        assert p.q[ps.arrive_tick] == ps.q_to
        assert np.all(p.q[ps.arrive_tick : ps.end_tick] == ps.q_to)
        assert np.all(np.abs(p.v[sl]) <= ps.peak * (1 + 1e-12))
        # Never past the target.
        travelled = (p.q[sl] - ps.q_from) * ps.direction
        assert np.all(travelled >= -1e-12) and np.all(travelled <= abs(p.sweep_deg) + 1e-12)
        # Phases in order: ramp-up, cruise, ramp-down, settle; the settle is at rest.
        order = [name for name, _ in itertools.groupby(p.phase[sl])]
        expected = ["ramp-up", "cruise", "ramp-down", "settle"]
        if ps.triangular:
            expected.remove("cruise")
        if p.ramp_ticks == 1:
            expected.remove("ramp-down")
        assert order == expected
        assert np.all(p.v[sl][p.phase[sl] == "settle"] == 0.0)
        cruise = p.v[sl][p.phase[sl] == "cruise"]
        assert np.all(cruise == ps.direction * ps.peak) and cruise.size == ps.cruise_ticks
    assert p.q[-1] == p.start_deg


def test_campaign_profile() -> None:
    speeds = [5.0, 10.0, 20.0, 40.0]
    p = ramp_profile(12.5, 30.0, speeds)
    assert_ramp_guarantees(p, speeds)
    # 200 ms ramps at 10 ms ticks: the velocity changes by v/20 per tick.
    assert p.ramp_ticks == 20
    assert p.max_dv == pytest.approx(40.0 / 20)
    first = p.passes[0]
    assert np.count_nonzero(p.phase[first.first_tick : first.end_tick] == "ramp-up") == 20
    assert np.count_nonzero(p.phase[first.first_tick : first.end_tick] == "settle") == 50  # 0.5 s
    assert not any(ps.triangular for ps in p.passes) and p.notes == ()
    # The cruise speed is only trimmed so a whole number of ticks covers the sweep.
    for ps in p.passes:
        assert ps.peak == pytest.approx(ps.speed, rel=0.01)
    assert set(p.phase) <= set(PHASES)
    np.testing.assert_allclose(p.t, np.arange(1, len(p) + 1) * 0.01)
    np.testing.assert_array_equal(p.pass_speed, np.repeat(speeds, 2))


def test_short_sweep_lowers_the_peak_into_a_triangle_and_says_so() -> None:
    p = ramp_profile(0.0, 2.0, [5.0, 40.0])  # 2 deg cannot fit 0.2 s ramps at 40 deg/s (8 deg needed)
    assert_ramp_guarantees(p, [5.0, 40.0])
    slow_out, slow_back, fast_out, fast_back = p.passes
    assert not slow_out.triangular and not slow_back.triangular
    assert fast_out.triangular and fast_back.triangular
    assert fast_out.peak == pytest.approx(2.0 / 0.2) and fast_out.cruise_ticks == 0
    assert len(p.notes) == 2 and "triangle" in p.notes[0] and "40" in p.notes[0]


def test_negative_sweep_goes_out_the_other_way() -> None:
    p = ramp_profile(-5.0, -15.0, [10.0])
    assert_ramp_guarantees(p, [10.0])
    assert p.passes[0].direction == -1 and p.passes[0].q_to == -20.0


def test_zero_settle_still_rests_one_tick_between_reversals() -> None:
    p = ramp_profile(0.0, 10.0, [20.0, 30.0], settle_s=0.0)
    assert_ramp_guarantees(p, [20.0, 30.0])
    assert all(np.count_nonzero(p.phase[ps.first_tick : ps.end_tick] == "settle") == 1 for ps in p.passes)


def test_random_profiles_keep_the_guarantees() -> None:
    rng = np.random.default_rng(21)
    for _ in range(60):
        speeds = list(rng.uniform(0.5, 200.0, rng.integers(1, 4)))
        dt = float(rng.choice([0.002, 0.008, 0.01, 0.02]))
        ramp_s = float(rng.uniform(dt * 0.5, 0.5))  # not always a whole number of ticks
        p = ramp_profile(
            float(rng.uniform(-90, 90)),
            float(rng.choice([-1, 1]) * rng.uniform(0.05, 60.0)),
            speeds,
            dt=dt,
            ramp_s=ramp_s,
            settle_s=float(rng.uniform(0.0, 0.3)),
        )
        assert_ramp_guarantees(p, speeds)


def test_ticks_iterate_the_arrays() -> None:
    p = ramp_profile(0.0, 5.0, [10.0])
    ticks = list(p.ticks())
    assert len(ticks) == len(p)
    k = p.passes[1].first_tick + 3
    tk = ticks[k]
    assert (tk.index, tk.t, tk.q, tk.v) == (k, p.t[k], p.q[k], p.v[k])
    assert (tk.pass_index, tk.direction, tk.phase) == (1, -1, "ramp-up")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"speeds_deg_s": []},
        {"speeds_deg_s": [10.0, 0.0]},
        {"speeds_deg_s": [-5.0]},
        {"speeds_deg_s": [float("nan")]},
        {"speeds_deg_s": [float("inf")]},
        {"dt": 0.0},
        {"dt": float("nan")},
        {"ramp_s": 0.0},
        {"ramp_s": -0.2},
        {"settle_s": -0.1},
        {"sweep_deg": 0.0},
        {"sweep_deg": float("nan")},
        {"start_deg": float("inf")},
    ],
)
def test_refuses_bad_settings(kwargs) -> None:
    args = {"start_deg": 0.0, "sweep_deg": 30.0, "speeds_deg_s": [10.0]}
    args.update(kwargs)
    with pytest.raises(ValueError):
        ramp_profile(**args)


# -- step mode -----------------------------------------------------------------------------------------------


def test_step_levels_cycle_plus_zero_minus_zero() -> None:
    s = step_levels(10.0, 1.5, 6)
    assert s.hold_ticks == 60 and len(s) == 360
    np.testing.assert_array_equal(s.step_level, [1.5, 0.0, -1.5, 0.0, 1.5, 0.0])
    np.testing.assert_array_equal(s.step_size, [1.5, -1.5, -1.5, 1.5, 1.5, -1.5])
    np.testing.assert_array_equal(s.step_tick, [0, 60, 120, 180, 240, 300])
    np.testing.assert_allclose(s.step_time, [0.01, 0.61, 1.21, 1.81, 2.41, 3.01])
    for i, k in enumerate(s.step_tick):
        held = s.q[k : k + 60]
        assert np.all(held == 10.0 + s.step_level[i])  # one instantaneous change, then held
        assert np.all(s.step_index[k : k + 60] == i)
    jumps = np.flatnonzero(np.diff(s.q, prepend=10.0))
    np.testing.assert_array_equal(jumps, s.step_tick)
    assert s.end_deg == 10.0


def test_step_levels_truncated_cycle() -> None:
    s = step_levels(0.0, -2.0, 3, hold_s=0.05, dt=0.01)
    np.testing.assert_array_equal(s.step_level, [-2.0, 0.0, 2.0])
    assert s.hold_ticks == 5 and s.end_deg == 2.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size_deg": 0.0},
        {"size_deg": float("nan")},
        {"n_steps": 0},
        {"n_steps": 2.5},
        {"n_steps": True},
        {"hold_s": 0.0},
        {"dt": -0.01},
        {"start_deg": float("nan")},
    ],
)
def test_step_levels_refuse_bad_settings(kwargs) -> None:
    args = {"start_deg": 0.0, "size_deg": 1.0, "n_steps": 4}
    args.update(kwargs)
    with pytest.raises(ValueError):
        step_levels(**args)
