"""Stream shaper: the bounds on every tick of random shock streams, landing, trailing, refusals, jump reports.

Many independent single-joint streams are run at once as the joints of one shaper (the law is per joint, with
per-joint limits), which keeps thousands of streams x hundreds of ticks fast.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.motion.shaper import (
    JumpEvent,
    ShaperConfig,
    ShaperNotPrimedError,
    StreamShaper,
    braking_velocity,
    max_trail,
)

DTS = (0.002, 0.008, 0.01, 0.02)


def random_limits(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.uniform(20.0, 300.0, n), rng.uniform(100.0, 5000.0, n)


def shock_targets(rng: np.random.Generator, n: int, ticks: int, q0: np.ndarray) -> np.ndarray:
    """(ticks, n) raw targets: jumps to +-30 deg, freezes, bursts of jitter, fast creeps and single-tick
    spikes, each stream switching between them at random."""
    out = np.empty((ticks, n))
    x = q0.copy()
    creep = np.zeros(n)
    for k in range(ticks):
        u = rng.random(n)
        jump = u < 0.04
        x = np.where(jump, q0 + rng.uniform(-30.0, 30.0, n), x)
        burst = (u >= 0.04) & (u < 0.20)
        x = np.where(burst, x + rng.normal(0.0, 3.0, n), x)
        start_creep = (u >= 0.20) & (u < 0.22)
        creep = np.where(start_creep, rng.uniform(-8.0, 8.0, n), creep)
        creep = np.where(u > 0.97, 0.0, creep)  # freeze
        x = x + creep
        spike = rng.random(n) < 0.01
        out[k] = np.where(spike, x + rng.uniform(-30.0, 30.0, n), x)
    return out


def run_stream(shaper: StreamShaper, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pos = np.empty_like(targets)
    vel = np.empty_like(targets)
    for k, x in enumerate(targets):
        pos[k] = shaper.step(x)
        vel[k] = shaper.velocity
    return pos, vel


# -- the bounds, on every tick -------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", DTS)
def test_bounds_hold_exactly_on_every_tick_of_random_shock_streams(dt: float) -> None:
    rng = np.random.default_rng(int(dt * 1000))
    n, ticks = 600, 300  # 4 x 600 = 2400 streams of 300 ticks
    v_max, a_max = random_limits(rng, n)
    q0 = rng.uniform(-90.0, 90.0, n)
    targets = shock_targets(rng, n, ticks, q0)
    shaper = StreamShaper(v_max, a_max, dt)
    shaper.prime(q0)
    pos, vel = run_stream(shaper, targets)

    assert np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))
    # Exact, no tolerance: the guarantee is stated on the reported velocities as evaluated in floating point.
    assert np.all(np.abs(vel) <= v_max)
    dv = np.diff(vel, axis=0, prepend=np.zeros((1, n)))
    assert np.all(np.abs(dv) <= a_max * dt)
    # The positions are the integral of those velocities, up to the rounding of each sum.
    fd = np.diff(pos, axis=0, prepend=q0[None, :]) / dt
    assert np.allclose(fd, vel, rtol=1e-9, atol=1e-7)
    # The streams really do push on both limits, so the checks above are not vacuous.
    assert np.mean(np.isclose(np.abs(vel), v_max, rtol=1e-12)) > 0.01
    assert np.mean(np.isclose(np.abs(dv), a_max * dt, rtol=1e-9)) > 0.05


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    v_max=st.floats(20.0, 300.0),
    a_max=st.floats(100.0, 5000.0),
    dt=st.sampled_from(DTS),
    targets=st.lists(
        st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=3, max_size=3), min_size=1, max_size=60
    ),
)
def test_bounds_hold_for_arbitrary_three_joint_streams(v_max, a_max, dt, targets) -> None:
    shaper = StreamShaper(v_max, a_max, dt, n_joints=3)
    shaper.prime([0.0, 10.0, -10.0])
    prev = np.zeros(3)
    for x in targets:
        shaper.step(x)
        v = shaper.velocity
        assert np.all(np.abs(v) <= v_max)
        assert np.all(np.abs(v - prev) <= a_max * dt)
        prev = v


def test_per_joint_limits_bound_each_joint_separately() -> None:
    v_max, a_max = [20.0, 100.0, 300.0], [100.0, 1000.0, 5000.0]
    shaper = StreamShaper(v_max, a_max, 0.01)
    shaper.prime([0.0, 0.0, 0.0])
    _, vel = run_stream(shaper, np.tile([30.0, -30.0, 30.0], (400, 1)))
    assert np.all(np.abs(vel) <= v_max)
    assert np.all(np.abs(np.diff(vel, axis=0)) <= np.array(a_max) * 0.01)
    assert np.allclose(np.max(np.abs(vel), axis=0), v_max)  # each joint reaches its own cap, not another's


# -- static targets: no overshoot, exact landing, then held --------------------------------------------------


@pytest.mark.parametrize("dt", DTS)
def test_static_target_from_rest_is_never_overshot_and_landed_on_exactly(dt: float) -> None:
    rng = np.random.default_rng(7 + int(dt * 1000))
    n = 1500
    v_max, a_max = random_limits(rng, n)
    q0 = rng.uniform(-90.0, 90.0, n)
    # Distances from a micro-degree to 30 degrees, both signs.
    target = q0 + rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-6.0, math.log10(30.0), n)
    direction = np.sign(target - q0)
    shaper = StreamShaper(v_max, a_max, dt)
    shaper.prime(q0)

    landed_at = np.full(n, -1)
    for k in range(1, 4000):
        s = shaper.step(target)
        assert np.all((target - s) * direction >= 0.0), "overshoot"
        on = s == target  # bit-exact
        assert np.all(on[landed_at > 0]), "left the target after landing"
        landed_at[on & (landed_at < 0)] = k
        if np.all(landed_at > 0):
            break
    assert np.all(landed_at > 0)
    for _ in range(20):  # and held, at rest
        assert np.array_equal(shaper.step(target), target)
    assert np.all(shaper.velocity == 0.0)

    # Time-optimal to within a few ticks of the continuous trapezoid / triangle.
    dist = np.abs(target - q0)
    t_opt = np.where(dist >= v_max**2 / a_max, dist / v_max + v_max / a_max, 2.0 * np.sqrt(dist / a_max))
    assert np.all(landed_at <= t_opt / dt + 3)


def test_a_static_target_reached_while_moving_is_still_landed_exactly() -> None:
    shaper = StreamShaper(130.0, 500.0, 0.01)
    shaper.prime([0.0])
    for _ in range(30):
        shaper.step([40.0])  # under way toward 40
    for _ in range(300):
        s = shaper.step([10.0])  # then told to stop at 10: it overshoots (it must brake), comes back, lands
    assert s[0] == 10.0 and shaper.velocity[0] == 0.0


# -- moving targets: trail bound, and identity for a stream that stays put -----------------------------------


@pytest.mark.parametrize("dt", DTS)
def test_ramp_target_is_trailed_by_at_most_the_braking_trail_and_never_passed(dt: float) -> None:
    rng = np.random.default_rng(11 + int(dt * 1000))
    n = 1500
    v_max, a_max = random_limits(rng, n)
    speed = v_max * rng.uniform(0.02, 0.999, n)
    direction = rng.choice([-1.0, 1.0], n)
    q0 = rng.uniform(-90.0, 90.0, n)
    shaper = StreamShaper(v_max, a_max, dt)
    shaper.prime(q0)
    bound = max_trail(speed, a_max, dt)
    worst = np.zeros(n)
    ticks = int(math.ceil((np.max(speed / a_max) + 0.5) / dt))  # every stream reaches its cruise
    for k in range(1, ticks + 1):
        target = q0 + direction * speed * (k * dt)
        trail = (target - shaper.step(target)) * direction
        assert np.all(trail >= 0.0), "passed a monotonic target"
        worst = np.maximum(worst, trail)
    assert np.all(worst <= bound * (1 + 1e-9))
    # The bound is tight: in steady cruise the trail is the braking distance v^2/(2a). (Targets slower than
    # a_max*dt per tick are landed on every tick instead, with no trail at all.)
    fast = speed > 3 * a_max * dt
    assert fast.sum() > n // 4
    assert np.all(worst[fast] >= 0.9 * speed[fast] ** 2 / (2 * a_max[fast]))
    assert np.all(worst[speed <= a_max * dt] == 0.0)


@pytest.mark.parametrize("dt", DTS)
def test_monotonic_target_with_random_speeds_is_trailed_within_bound(dt: float) -> None:
    # Cruise, slow down, pause, speed up again at random, never reversing and never faster than v.
    rng = np.random.default_rng(17 + int(dt * 1000))
    n = 1000
    v_max, a_max = random_limits(rng, n)
    v_top = v_max * rng.uniform(0.05, 1.0, n)
    direction = rng.choice([-1.0, 1.0], n)
    shaper = StreamShaper(v_max, a_max, dt)
    shaper.prime(np.zeros(n))
    bound = max_trail(v_top, a_max, dt)
    x, speed = np.zeros(n), np.zeros(n)
    for _ in range(1200):
        u = rng.random(n)
        speed = np.where(u < 0.03, rng.uniform(0.0, 1.0, n) * v_top, speed)
        speed = np.where((u >= 0.03) & (u < 0.04), 0.0, speed)
        speed = np.where((u >= 0.04) & (u < 0.05), v_top, speed)
        x = x + direction * speed * dt
        trail = (x - shaper.step(x)) * direction
        assert np.all(trail >= 0.0)
        assert np.all(trail <= bound * (1 + 1e-9))


def test_trapezoid_target_is_trailed_within_bound_then_landed_on_when_it_stops() -> None:
    v_max, a_max, dt = 130.0, 500.0, 0.01
    shaper = StreamShaper(v_max, a_max, dt)
    shaper.prime([0.0])
    v_top, accel = 100.0, 400.0  # the target itself accelerates at 400, cruises at 100, brakes at 400
    t = np.arange(1, 301) * dt
    t_acc = v_top / accel
    t_end = 2.0
    vel = np.clip(np.minimum(accel * t, accel * (t_end - t)), 0.0, v_top)
    target = np.cumsum(vel) * dt
    trails = []
    for x in target:
        trails.append(x - shaper.step([x])[0])
    assert min(trails) >= 0.0
    assert max(trails) <= max_trail(v_top, a_max, dt)
    assert shaper.position[0] == target[-1] and shaper.velocity[0] == 0.0
    assert t_acc < t_end


def test_shaper_is_not_an_identity_on_fast_moving_input_within_the_bounds() -> None:
    # A 100 deg/s ramp is within v_max, yet the shaper trails it by ~ the braking distance: that is the price
    # of being able to stop on it, and the documented guarantee is the trail bound, not transparency.
    shaper = StreamShaper(130.0, 500.0, 0.01)
    shaper.prime([0.0])
    for k in range(1, 200):
        s = shaper.step([100.0 * k * 0.01])
    trail = 100.0 * 199 * 0.01 - s[0]
    assert trail == pytest.approx(100.0**2 / (2 * 500.0), rel=0.05)


def test_a_stream_that_stays_put_passes_unchanged() -> None:
    q = np.array([12.5, -170.0, 0.1, 33.0, 1e-9, -0.0])
    shaper = StreamShaper(130.0, 500.0, 0.01)
    shaper.prime(q)
    for _ in range(500):
        out = shaper.step(q)
        assert np.array_equal(out, q)
        assert np.all(shaper.velocity == 0.0)


def test_a_creep_slower_than_one_tick_of_acceleration_passes_unchanged() -> None:
    # Up to a_max*dt per tick of speed, the target is reachable within the bounds on every tick.
    a_max, dt = 500.0, 0.01
    shaper = StreamShaper(130.0, a_max, dt)
    shaper.prime([0.0])
    for k in range(1, 200):
        x = 0.9 * a_max * dt * dt * k
        assert shaper.step([x])[0] == x


# -- refusals and state --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_targets_are_refused_and_state_is_unchanged(bad: float) -> None:
    shaper = StreamShaper(130.0, 500.0, 0.01)
    shaper.prime([0.0, 0.0])
    for _ in range(5):
        shaper.step([10.0, -10.0])
    before = (shaper.position, shaper.velocity, shaper.ticks)
    with pytest.raises(ValueError, match="non-finite"):
        shaper.step([bad, 0.0])
    with pytest.raises(ValueError, match="non-finite"):
        shaper.step([0.0, bad])
    assert np.array_equal(shaper.position, before[0])
    assert np.array_equal(shaper.velocity, before[1])
    assert shaper.ticks == before[2]
    # and the stream carries on from where it was
    nxt = shaper.step([10.0, -10.0])
    assert np.all(np.abs(nxt - before[0]) <= 130.0 * 0.01 + 1e-12)


def test_wrong_joint_count_is_refused_and_state_is_unchanged() -> None:
    shaper = StreamShaper(130.0, 500.0, 0.01, n_joints=3)
    shaper.prime([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="3"):
        shaper.step([1.0, 2.0])
    with pytest.raises(ValueError):
        shaper.step([[1.0, 2.0, 3.0]])
    assert np.array_equal(shaper.position, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        shaper.prime([1.0, 2.0])
    with pytest.raises(ValueError):
        shaper.prime([1.0, float("nan"), 3.0])


def test_a_target_too_far_to_represent_is_refused() -> None:
    shaper = StreamShaper(130.0, 500.0, 0.01)
    shaper.prime([-1e308])
    with pytest.raises(ValueError):
        shaper.step([1e308])
    assert shaper.position[0] == -1e308


def test_unprimed_shaper_refuses_to_step_and_reset_drops_the_state() -> None:
    shaper = StreamShaper(130.0, 500.0, 0.01)
    assert not shaper.primed and shaper.position is None and shaper.velocity is None
    with pytest.raises(ShaperNotPrimedError, match="prime"):
        shaper.step([1.0])
    shaper.prime([5.0])
    assert shaper.primed and shaper.position[0] == 5.0 and shaper.velocity[0] == 0.0
    shaper.step([50.0])
    shaper.reset()
    assert not shaper.primed
    with pytest.raises(ShaperNotPrimedError):
        shaper.step([50.0])
    # Priming again starts at rest at the new pose, not from the old motion.
    shaper.prime([20.0])
    assert shaper.velocity[0] == 0.0
    assert abs(shaper.step([50.0])[0] - 20.0) <= 500.0 * 0.01 * 0.01 + 1e-12


def test_returned_arrays_are_copies() -> None:
    shaper = StreamShaper(130.0, 500.0, 0.01)
    shaper.prime([0.0])
    out = shaper.step([10.0])
    out[0] = 1e6
    shaper.velocity[0] = 1e6
    assert shaper.position[0] != 1e6 and shaper.velocity[0] != 1e6


@pytest.mark.parametrize(
    "kwargs",
    [
        {"v_max": 0.0, "a_max": 500.0, "dt": 0.01},
        {"v_max": -1.0, "a_max": 500.0, "dt": 0.01},
        {"v_max": float("nan"), "a_max": 500.0, "dt": 0.01},
        {"v_max": 130.0, "a_max": float("inf"), "dt": 0.01},
        {"v_max": 130.0, "a_max": 500.0, "dt": 0.0},
        {"v_max": [130.0, 0.0], "a_max": 500.0, "dt": 0.01},
        {"v_max": [130.0, 130.0], "a_max": [500.0, 500.0, 500.0], "dt": 0.01},
        {"v_max": [130.0, 130.0], "a_max": 500.0, "dt": 0.01, "n_joints": 3},
        {"v_max": [], "a_max": 500.0, "dt": 0.01},
    ],
)
def test_bad_bounds_are_refused(kwargs) -> None:
    with pytest.raises(ValueError):
        StreamShaper(**kwargs)


def test_config_validates_and_builds() -> None:
    cfg = ShaperConfig(v_max=[130.0, 180.0], a_max=500.0, dt=0.01)
    assert cfg.v_max == (130.0, 180.0) and cfg.a_max_peak == 500.0
    shaper = cfg.build()
    assert shaper.n_joints == 2 and np.array_equal(shaper.v_max, [130.0, 180.0])
    with pytest.raises(ValueError):
        ShaperConfig(v_max=130.0, a_max=-5.0, dt=0.01)


# -- large jumps: reported, never tripped --------------------------------------------------------------------


def test_large_raw_jumps_are_reported_once_and_never_stop_the_stream() -> None:
    seen: list[JumpEvent] = []
    shaper = StreamShaper(130.0, 500.0, 0.01, on_large_jump=seen.append)
    shaper.prime([0.0, 0.0])
    thr = max_trail(130.0, 500.0, 0.01)  # 18.2 deg
    assert shaper.jump_threshold[0] == pytest.approx(thr)

    shaper.step([10.0, 0.0])  # a jump, but one a legitimately moving target could explain
    assert shaper.large_jumps == 0
    for _ in range(200):
        shaper.step([10.0, 0.0])

    shaper.step([40.0, 0.0])  # 30 deg away from the wire: reported once
    assert shaper.large_jumps == 1 and len(seen) == 1
    ev = seen[0]
    assert ev.joint == 0 and ev.target == 40.0 and ev.setpoint == 10.0
    assert ev.distance == pytest.approx(30.0) and ev.threshold == pytest.approx(thr)
    for _ in range(3):
        shaper.step([40.0, 0.0])  # holding the far target is the same event
    assert shaper.large_jumps == 1
    shaper.step([40.0, -25.0])  # another joint jumps
    shaper.step([-20.0, -25.0])  # a new raw jump while still far away is a new event
    assert shaper.large_jumps == 3 and [e.joint for e in shaper.jump_events] == [0, 1, 0]

    for _ in range(300):
        s = shaper.step([-20.0, -25.0])
    assert np.array_equal(s, [-20.0, -25.0])  # absorbed and landed, never tripped


def test_a_raising_jump_hook_abandons_the_step() -> None:
    def hook(event: JumpEvent) -> None:
        raise RuntimeError("logger down")

    shaper = StreamShaper(130.0, 500.0, 0.01, on_large_jump=hook)
    shaper.prime([0.0])
    with pytest.raises(RuntimeError):
        shaper.step([90.0])
    assert shaper.position[0] == 0.0 and shaper.ticks == 0 and shaper.large_jumps == 0


# -- helpers -------------------------------------------------------------------------------------------------


def test_braking_velocity_is_the_discrete_stopping_bound() -> None:
    a, dt = 500.0, 0.01
    assert braking_velocity(0.0, a, dt) == 0.0
    for d in (1e-9, 0.01, 1.0, 15.0, 30.0, -30.0):
        v = braking_velocity(d, a, dt)
        assert v >= 0.0
        assert v * dt + v * v / (2 * a) == pytest.approx(abs(d), rel=1e-12)
    # Far from the target it approaches the continuous braking curve sqrt(2 a d) from below.
    assert braking_velocity(1e6, a, dt) == pytest.approx(math.sqrt(2 * a * 1e6), rel=1e-3)
    assert braking_velocity(1e6, a, dt) < math.sqrt(2 * a * 1e6)
    arr = braking_velocity(np.array([0.0, 1.0]), np.array([500.0, 1000.0]), dt)
    assert arr.shape == (2,) and arr[0] == 0.0


def test_max_trail_matches_the_measured_campaign_numbers() -> None:
    # 120 deg/s at 500 deg/s^2 and 10 ms ticks: 14.4 deg of braking distance plus 1.2 deg of one tick.
    assert max_trail(120.0, 500.0, 0.01) == pytest.approx(15.6)
    assert max_trail(-120.0, 500.0, 0.01) == pytest.approx(15.6)
    assert max_trail(0.0, 500.0, 0.01) == 0.0
