"""Time-optimality of the online trajectory generator, checked against ruckig as the oracle.

Our durations come analytically from the plan (otg_duration / plan().duration), ruckig's from
Ruckig.calculate(...).duration. Start states are kept strictly inside the limits (including the velocity
reached by ramping the acceleration to zero), where both generators plan the same problem; cases ruckig does
not accept as Working are skipped and counted.
"""

from __future__ import annotations

import numpy as np
import pytest

ruckig = pytest.importorskip("ruckig")

from servotool.motion.otg import MultiOtg, Otg, OtgLimits, otg_duration  # noqa: E402

N_MOVES = 2000


def _ruckig_duration(p0, v0, a0, target, lims):
    n = len(p0)
    gen = ruckig.Ruckig(n)
    inp = ruckig.InputParameter(n)
    inp.current_position = list(p0)
    inp.current_velocity = list(v0)
    inp.current_acceleration = list(a0)
    inp.target_position = list(target)
    inp.target_velocity = [0.0] * n
    inp.target_acceleration = [0.0] * n
    inp.max_velocity = [lim.max_velocity for lim in lims]
    inp.max_acceleration = [lim.max_acceleration for lim in lims]
    inp.max_jerk = [lim.max_jerk for lim in lims]
    traj = ruckig.Trajectory(n)
    result = gen.calculate(inp, traj)
    if result != ruckig.Result.Working:
        return None, None
    return traj.duration, traj


def _random_limits(rng):
    return OtgLimits(10 ** rng.uniform(-2, 1), 10 ** rng.uniform(-2, 1.5), 10 ** rng.uniform(-1, 3))


def _distance(rng):
    return rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(-4, 1)


def test_seed_example_matches_ruckig():
    lim = OtgLimits(0.3, 0.5, 20.0)
    ours = otg_duration(0.0, 0.0, 0.0, 0.05, lim)
    theirs, _ = _ruckig_duration([0.0], [0.0], [0.0], [0.05], [lim])
    assert ours == pytest.approx(0.658, abs=5e-4)
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_rest_to_rest_durations_equal_ruckig():
    rng = np.random.default_rng(7001)
    worst = 0.0
    compared = 0
    for _ in range(N_MOVES):
        lim = _random_limits(rng)
        p0 = rng.uniform(-1, 1)
        target = p0 + _distance(rng)
        theirs, _ = _ruckig_duration([p0], [0.0], [0.0], [target], [lim])
        if theirs is None:
            continue
        ours = otg_duration(p0, 0.0, 0.0, target, lim)
        rel = abs(ours - theirs) / theirs
        worst = max(worst, rel)
        assert rel <= 1e-3, (p0, target, lim, ours, theirs)
        compared += 1
    assert compared >= 0.99 * N_MOVES
    assert worst < 1e-3


def _moving_state(rng, lim):
    """A random (v, a) strictly inside the limits whose v_rd = v + a|a|/(2j) is inside too."""
    vm, am, jm = lim.max_velocity, lim.max_acceleration, lim.max_jerk
    while True:
        kind = rng.integers(4)
        v = rng.uniform(-0.999, 0.999) * vm
        a = rng.uniform(-0.999, 0.999) * am
        if kind == 1:  # near the velocity limit
            v = rng.choice([-1.0, 1.0]) * rng.uniform(0.9, 0.999) * vm
        elif kind == 2:  # near the acceleration limit
            a = rng.choice([-1.0, 1.0]) * rng.uniform(0.9, 0.999) * am
        elif kind == 3:  # braking: acceleration against the velocity
            a = -np.sign(v) * abs(a)
        if abs(v + a * abs(a) / (2 * jm)) < 0.999 * vm:
            return v, a


def test_moving_states_to_rest_match_ruckig():
    rng = np.random.default_rng(7002)
    compared = 0
    for _ in range(N_MOVES):
        lim = _random_limits(rng)
        v0, a0 = _moving_state(rng, lim)
        p0 = rng.uniform(-1, 1)
        target = p0 + _distance(rng) * rng.choice([0.01, 1.0])
        theirs, _ = _ruckig_duration([p0], [v0], [a0], [target], [lim])
        if theirs is None:
            continue
        otg = Otg(p0, lim, velocity=v0, acceleration=a0)
        otg.set_target(target)
        ours = otg.plan().duration
        assert ours == pytest.approx(theirs, rel=1e-2), (p0, v0, a0, target, lim, ours, theirs)
        compared += 1
    assert compared >= 0.95 * N_MOVES


def test_stepped_rest_to_rest_trajectory_follows_ruckig():
    # The time-optimal rest-to-rest profile is unique, so the stepped positions coincide with ruckig's.
    rng = np.random.default_rng(7003)
    for _ in range(40):
        lim = _random_limits(rng)
        target = _distance(rng)
        theirs, traj = _ruckig_duration([0.0], [0.0], [0.0], [target], [lim])
        otg = Otg(0.0, lim)
        otg.set_target(target)
        dt = theirs / 200.0
        for k in range(1, 200):
            otg.step(dt)
            p, v, a = traj.at_time(k * dt)
            scale = abs(target)
            assert otg.position == pytest.approx(p[0], abs=1e-7 * scale)
            assert otg.velocity == pytest.approx(v[0], abs=1e-7 * lim.max_velocity + 1e-7 * scale / theirs)


def test_synchronised_rest_to_rest_duration_equals_ruckig():
    rng = np.random.default_rng(7004)
    for _ in range(200):
        lims = [_random_limits(rng) for _ in range(3)]
        p0 = rng.uniform(-1, 1, 3)
        target = p0 + np.array([_distance(rng) for _ in range(3)])
        theirs, _ = _ruckig_duration(p0, [0.0] * 3, [0.0] * 3, target, lims)
        if theirs is None:
            continue
        m = MultiOtg(p0, lims)
        m.set_target(target)
        durations = [plan.duration for plan in m.plan()]
        assert max(durations) == pytest.approx(theirs, rel=1e-3)
        assert min(durations) == pytest.approx(theirs, rel=1e-6)
