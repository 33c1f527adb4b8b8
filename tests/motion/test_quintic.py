"""Minimum-jerk moves and waypoint playback in whole pulses: shape, timing, the speed cap after rounding."""

from __future__ import annotations

import random

import pytest

from servotool.motion.quintic import (
    QUINTIC_PEAK,
    Trajectory,
    WaypointTrajectory,
    duration_for,
    effective_cap,
    min_jerk,
    round_pulse,
)

PERIOD = 0.04  # the bus-servo arm's 25 Hz move frames
CAP = 250.0  # the arm's goal speed cap, pulses/s


def max_step(poses: list[dict]) -> int:
    return max((abs(b[k] - a[k]) for a, b in zip(poses, poses[1:], strict=False) for k in a), default=0)


# -- the profile ---------------------------------------------------------------------------------------------


def test_profile_ends_and_clamping() -> None:
    assert min_jerk(0.0) == 0.0 and min_jerk(1.0) == 1.0
    assert min_jerk(-3.0) == 0.0 and min_jerk(7.0) == 1.0
    assert min_jerk(0.5) == pytest.approx(0.5)
    us = [i / 1000 for i in range(1001)]
    values = [min_jerk(u) for u in us]
    assert all(b >= a for a, b in zip(values, values[1:], strict=False))
    # Peak slope 1.875 at the middle.
    h = 1e-6
    assert (min_jerk(0.5 + h) - min_jerk(0.5 - h)) / (2 * h) == pytest.approx(QUINTIC_PEAK, rel=1e-6)


def test_first_and_last_five_percent_cover_under_one_percent() -> None:
    assert min_jerk(0.05) < 0.01
    assert 1.0 - min_jerk(0.95) < 0.01
    tr = Trajectory({1: 500}, {1: 700}, CAP)
    assert abs(tr.at(0.05 * tr.T)[1] - 500) < 0.01 * 200 + 0.5
    assert abs(700 - tr.at(0.95 * tr.T)[1]) < 0.01 * 200 + 0.5


def test_duration_rule() -> None:
    assert duration_for(200, CAP) == 1.5  # servo 1 from 500 to 700 at 250 pulses/s
    assert duration_for(-200, CAP) == 1.5
    assert duration_for(3, CAP) == 0.2  # the floor keeps tiny moves from being one jump
    assert duration_for(3, CAP, min_t=0.0) == pytest.approx(1.875 * 3 / 250)
    for bad in ((200, 0.0), (200, -1.0), (float("nan"), CAP), (200, float("inf"))):
        with pytest.raises(ValueError):
            duration_for(*bad)
    with pytest.raises(ValueError):
        duration_for(200, CAP, min_t=-1.0)


# -- Trajectory ----------------------------------------------------------------------------------------------


def test_servo_one_from_500_to_700_at_250_pulses_per_second() -> None:
    tr = Trajectory({1: 500}, {1: 700}, CAP, t0=10.0)
    assert tr.T == 1.5 and tr.peak_speed == pytest.approx(250.0)
    seq = [p[1] for p in tr.samples()]
    assert seq[:10] == [500, 500, 500, 501, 502, 504, 506, 510, 514, 519]
    assert seq[-8:] == [692, 695, 697, 699, 699, 700, 700, 700]
    assert max_step(tr.samples()) <= CAP * PERIOD
    assert not tr.done(11.49) and tr.done(11.5)
    assert tr.at(9.0) == {1: 500} and tr.at(11.5) == {1: 700} and tr.at(99.0) == {1: 700}


def test_joints_share_one_curve_and_arrive_together() -> None:
    start = {1: 500, 2: 776, 3: 211, 4: 161, 5: 500}
    goal = {1: 500, 2: 860, 3: 45, 4: 178, 5: 400}
    tr = Trajectory({**start, 10: 499}, goal, CAP)
    duration = tr.T
    assert duration == pytest.approx(duration_for(166, CAP))  # joint 3 is the longest
    assert set(tr.at(0.3)) == set(goal)  # joints not in the goal are not driven
    mid = tr.at(tr.T / 2)
    for k in goal:
        assert mid[k] == round_pulse((start[k] + goal[k]) / 2)
    assert tr.at(tr.T) == goal and tr.samples()[-1] == goal


def test_rounding_never_breaks_the_cap_over_many_random_moves() -> None:
    rng = random.Random(4)
    for _ in range(2000):
        cap = rng.uniform(10.0, 300.0)
        n = rng.randint(1, 6)
        start = {j: rng.randint(0, 1000) for j in range(n)}
        goal = {j: rng.randint(0, 1000) for j in range(n)}
        t0 = rng.uniform(-5.0, 5.0)
        tr = Trajectory(start, goal, cap, t0)
        assert tr.peak_speed <= cap * (1 + 1e-12)
        # Samples one period apart, at an arbitrary phase: never more than cap * period after rounding (and
        # at least a whole pulse is always allowed: positions are whole pulses).
        phase = rng.uniform(0.0, PERIOD)
        ticks = int(tr.T / PERIOD) + 3
        poses = [tr.at(t0 - PERIOD + phase + k * PERIOD) for k in range(ticks)]
        assert max_step(poses) <= max(cap * PERIOD, 1.0)
        assert poses[-1] == goal


def test_why_the_effective_cap_exists() -> None:
    # Timed naively at 240 pulses/s (9.6 pulses per 40 ms), a 200-pulse move rounds one step up to 10 pulses.
    cap, dist = 240.0, 200
    T = duration_for(dist, cap)
    naive = [round_pulse(dist * min_jerk(k * PERIOD / T)) for k in range(int(T / PERIOD) + 2)]
    assert max(b - a for a, b in zip(naive, naive[1:], strict=False)) > cap * PERIOD
    # Timing against floor(9.6) / 0.04 = 225 pulses/s keeps every step within 9.6.
    assert effective_cap(cap, PERIOD) == pytest.approx(225.0)
    tr = Trajectory({0: 0}, {0: dist}, cap)
    duration = tr.T
    assert duration == pytest.approx(duration_for(dist, 225.0))
    assert max_step(tr.samples()) <= cap * PERIOD
    # When cap * period is whole, as for the arm's 250 pulses/s, nothing is lengthened.
    assert effective_cap(250.0, PERIOD) == 250.0 and effective_cap(20.0, PERIOD) == 20.0


@pytest.mark.parametrize(
    ("start", "goal", "speed"),
    [
        ({1: 500}, {}, CAP),
        ({1: 500}, {2: 600}, CAP),
        ({1: 500}, {1: 600}, 0.0),
        ({1: 500}, {1: 600}, -10.0),
        ({1: 500}, {1: float("nan")}, CAP),
        ({1: float("inf")}, {1: 600}, CAP),
        ([500], {1: 600}, CAP),
    ],
)
def test_trajectory_refusals(start, goal, speed) -> None:
    with pytest.raises(ValueError):
        Trajectory(start, goal, speed)


# -- WaypointTrajectory --------------------------------------------------------------------------------------


def test_waypoints_within_the_cap_play_on_their_own_timeline() -> None:
    points = [(1.0, {1: 600, 2: 450}), (2.0, {1: 700, 2: 450})]
    w = WaypointTrajectory({1: 500, 2: 500, 9: 0}, points, CAP, t0=3.0)
    assert w.scale == 1.0 and w.T == 2.0
    assert w.at(0.0) == {1: 500, 2: 500}
    assert w.at(3.5) == {1: 550, 2: 475}
    assert w.at(4.0) == {1: 600, 2: 450}
    assert w.at(4.25) == {1: 625, 2: 450}
    assert w.at(5.0) == w.at(50.0) == {1: 700, 2: 450}
    assert not w.done(4.99) and w.done(5.0)
    assert w.samples() == [
        {1: 500, 2: 500},
        {1: 550, 2: 475},
        {1: 600, 2: 450},
        {1: 650, 2: 450},
        {1: 700, 2: 450},
    ]


def test_a_too_fast_segment_stretches_the_whole_timeline() -> None:
    # The second segment asks for 500 pulses/s: everything is slowed by 2x, nothing is refused.
    w = WaypointTrajectory({1: 500}, [(1.0, {1: 600}), (1.2, {1: 700})], CAP)
    assert w.scale == pytest.approx(2.0)
    assert [t for t, _ in w.points] == pytest.approx([0.0, 2.0, 2.4])
    duration = w.T
    assert duration == pytest.approx(2.4)
    assert w.at(1.0) == {1: 550}
    assert max_step([w.at(k * PERIOD) for k in range(70)]) <= CAP * PERIOD


def test_waypoint_rounding_never_breaks_the_cap() -> None:
    rng = random.Random(8)
    for _ in range(1000):
        cap = rng.uniform(10.0, 300.0)
        joints = range(rng.randint(1, 4))
        start = {j: rng.randint(0, 1000) for j in joints}
        t, points = 0.0, []
        for _ in range(rng.randint(1, 6)):
            t += rng.uniform(0.01, 2.0)
            points.append((t, {j: rng.randint(0, 1000) for j in joints}))
        w = WaypointTrajectory(start, points, cap)
        assert w.scale >= 1.0
        # Pairs of samples one period apart: at random times, and straddling every waypoint.
        times = [rng.uniform(-PERIOD, w.T) for _ in range(100)]
        times += [tw - rng.uniform(0.0, PERIOD) for tw, _ in w.points]
        for t in times:
            assert max_step([w.at(t), w.at(t + PERIOD)]) <= max(cap * PERIOD, 1.0)
        assert w.at(w.T) == points[-1][1]


@pytest.mark.parametrize(
    ("start", "points", "speed"),
    [
        ({1: 500}, [], CAP),
        ({1: 500}, [(0.0, {1: 600})], CAP),
        ({1: 500}, [(-1.0, {1: 600})], CAP),
        ({1: 500}, [(1.0, {1: 600}), (1.0, {1: 650})], CAP),
        ({1: 500}, [(1.0, {1: 600}), (0.5, {1: 650})], CAP),
        ({1: 500}, [(1.0, {1: 600}), (2.0, {2: 650})], CAP),
        ({1: 500}, [(1.0, {2: 600})], CAP),
        ({1: 500}, [(1.0, {})], CAP),
        ({1: 500}, [(1.0, {1: float("nan")})], CAP),
        ({1: 500}, [(float("nan"), {1: 600})], CAP),
        ({1: 500}, [(1.0, {1: 600})], 0.0),
        ({1: 500}, [(1.0,)], CAP),
    ],
)
def test_waypoint_refusals(start, points, speed) -> None:
    with pytest.raises(ValueError):
        WaypointTrajectory(start, points, speed)
