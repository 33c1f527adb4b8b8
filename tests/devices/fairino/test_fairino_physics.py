"""The simulated controller's physics on an explicit time axis: exact and deterministic, no sockets."""

from __future__ import annotations

import math
import statistics

import pytest

from servotool.devices.fairino.codes import ErrCode
from servotool.devices.fairino.physics import ControllerModel
from servotool.devices.fairino.profiles import (
    PARAM_HELP,
    PROFILES,
    ProfileError,
    SimProfile,
    get_profile,
    valid_params,
    with_overrides,
)

T = 0.01  # command period


def ready(profile: str = "fr3", **over) -> tuple[ControllerModel, float]:
    """A model enabled and out of its enable window, servo mode on; returns (model, time)."""
    prof = with_overrides(profile, {"noise_deg": 0.0, **over})
    m = ControllerModel(prof, 0.0)
    assert m.robot_enable(0.0, 1) == ErrCode.OK
    t = prof.enable_ms / 1000.0 + 0.01
    assert m.servo_start(t) == ErrCode.OK
    return m, t


def joint0(q0, x):
    q = list(q0)
    q[0] = x
    return tuple(q)


def ramp(m, t, speed, n, joint_start=None, accel_ticks=20):
    """Stream a ramp on joint 0 from rest (v/20 per tick); returns (t, x, v) at the end."""
    q0 = m.sample(t).q
    x = q0[0] if joint_start is None else joint_start
    v = 0.0
    for _ in range(n):
        t += T
        v = min(speed, v + speed / accel_ticks)
        x += v * T
        assert m.servo_j(t, joint0(q0, x), T) == ErrCode.OK
    return t, x, v


def test_profiles_hold_the_measured_figures():
    assert {n: p.lag_ms for n, p in PROFILES.items()} == {"simmachine": 39.0, "fr3": 78.0, "fr20": 111.0}
    assert PROFILES["fr3"].joint_speed_limits == (180.0,) * 6
    assert PROFILES["fr20"].joint_speed_limits == (120.0,) * 3 + (180.0,) * 3
    assert not PROFILES["simmachine"].runaway and PROFILES["fr3"].runaway
    assert PROFILES["fr3"].state_ms == 8 and PROFILES["fr3"].enable_ms == 1400


def test_overrides_parse_strings_and_refuse_unknown_names():
    p = with_overrides(
        "fr20",
        {
            "lag_ms": "70",
            "joint_speed_limits": "90",
            "runaway": "false",
            "seed": "4",
            "initial_pose": "1,2,3,4,5,6",
            "noise_deg": 0.01,
        },
    )
    assert (p.lag_ms, p.joint_speed_limits, p.runaway, p.seed) == (70.0, (90.0,) * 6, False, 4)
    assert p.initial_pose == (1, 2, 3, 4, 5, 6) and p.noise_deg == 0.01
    with pytest.raises(ProfileError, match="valid: .*lag_ms"):
        with_overrides("fr3", {"lagms": "1"})
    with pytest.raises(ProfileError, match="lag_ms"):
        with_overrides("fr3", {"lag_ms": "fast"})
    with pytest.raises(ProfileError):
        with_overrides("fr3", {"runaway_min_deg": "2", "runaway_max_deg": "1"})
    with pytest.raises(ProfileError):
        with_overrides("fr3", {"initial_pose": "1,2"})
    with pytest.raises(ProfileError, match="known: simmachine"):
        get_profile("fr5")
    fields = set(SimProfile.__dataclass_fields__) - {"name"}
    assert set(PARAM_HELP) == fields == set(valid_params())


@pytest.mark.parametrize("profile", ["simmachine", "fr3", "fr20"])
def test_measured_is_the_stream_delayed_by_the_lag_and_interpolated(profile):
    m, t0 = ready(profile)
    lag = m.p.lag_ms / 1000.0
    q0 = m.sample(t0).q
    sent = [(t0 + k * T, q0[0] + 0.2 * k) for k in range(1, 60)]  # 20 deg/s
    probes = [
        (ta + frac * T + lag, xa + frac * (xb - xa))
        for (ta, xa), (_, xb) in zip(sent[20:30], sent[21:31], strict=True)
        for frac in (0.0, 0.25, 0.5, 0.9)
    ]
    # the model only moves forward: send and probe in time order
    events = sorted([(t, 0, x) for t, x in sent] + [(t, 1, x) for t, x in probes])
    for t, kind, x in events:
        if kind == 0:
            assert m.servo_j(t, joint0(q0, x), T) == ErrCode.OK
        else:
            # between two received setpoints the measured pose is on the line joining them, L later
            assert m.sample(t).q[0] == pytest.approx(x, abs=1e-9)


def test_enable_window_answers_101_then_accepts():
    prof = with_overrides("fr3", {"noise_deg": 0.0})
    m = ControllerModel(prof, 10.0)
    q = prof.initial_pose
    assert m.servo_j(10.0, q, T) == ErrCode.NOT_ENABLED  # disabled
    assert m.robot_enable(10.0, 1) == ErrCode.OK
    answers = [(10.0 + k * T, m.servo_j(10.0 + k * T, q, T)) for k in range(1, 200)]
    first_ok = next(t for t, e in answers if e == ErrCode.OK)
    assert all(e == ErrCode.NOT_ENABLED for t, e in answers if t < first_ok)
    assert all(e == ErrCode.OK for t, e in answers if t >= first_ok)
    assert first_ok - 10.0 == pytest.approx(1.4, abs=T + 1e-9)
    assert m.sample(first_ok).cmd_num > 0


def test_stream_started_inside_the_enable_window_runs_away():
    """A ramp sent while commands are dropped leaves a gap that the first executed command jumps across."""
    prof = with_overrides("fr3", {"noise_deg": 0.0, "enable_ms": 300})
    m = ControllerModel(prof, 0.0)
    m.robot_enable(0.0, 1)
    q0 = prof.initial_pose
    t, x, answers = 0.0, q0[0], []
    for _ in range(60):
        t += T
        x += 0.2
        answers.append(m.servo_j(t, joint0(q0, x), T))
    assert answers[0] == ErrCode.NOT_ENABLED and ErrCode.FAILED in answers
    assert (m.main_code, m.sub_code) == (1, 32)
    ev = m.drain_events()[0]
    assert ev.kind == "runaway" and ev.step_deg > 5


def test_smooth_ramps_never_run_away():
    for profile in ("fr3", "fr20"):
        m, t = ready(profile, runaway_min_deg="0.9")
        t, x, v = ramp(m, t, 120.0, 150)
        assert (m.main_code, m.sub_code) == (0, 0) and not m.drain_events()


def run_step(step: float, profile: str = "fr3", joint: int = 0, **over):
    m, t = ready(profile, **over)
    t, _, _ = ramp(m, t, 0.0001, 10)  # hold, executing
    t += 0.2
    q = list(m.sample(t).q)
    before = tuple(q)
    q[joint] += step
    t += T
    return m, t, before, m.servo_j(t, tuple(q), T)


def test_raw_step_runs_away_latches_rejects_sweeps_and_stops():
    m, t_step, before, err = run_step(2.5, seed="3")
    assert err == ErrCode.FAILED
    assert (m.main_code, m.sub_code) == (1, 32)  # at the step instant, before any motion
    ev = m.drain_events()
    assert len(ev) == 1 and ev[0].kind == "runaway" and ev[0].joint == 0
    assert ev[0].speed_deg_s == 180.0  # 2.5 deg / 10 ms = 250 deg/s, clamped at the joint maximum
    assert 14 * 2.5 <= ev[0].travel_deg <= 35 * 2.5
    lag = m.p.lag_ms / 1000.0
    assert m.sample(t_step + lag - 0.002).q[0] == pytest.approx(before[0], abs=1e-6)
    # every command is rejected during the window; the joint sweeps at the implied speed, then stops
    poses, t = [], t_step
    while t < t_step + 0.88:
        t += T
        assert m.servo_j(t, joint0(before, before[0] + 2.5), T) == ErrCode.FAILED
        poses.append(m.sample(t).q[0])
    speeds = [(b - a) / T for a, b in zip(poses, poses[1:], strict=False)]
    assert max(speeds) == pytest.approx(180.0, rel=1e-6)
    travel = poses[-1] - before[0]
    assert travel == pytest.approx(ev[0].travel_deg, abs=1e-6)
    assert poses[-1] == poses[-5]  # stopped by itself
    # after the window commands are taken again, from the resting pose, codes still latched
    t = t_step + 0.95
    rest = m.sample(t).q
    assert m.servo_j(t, rest, T) == ErrCode.OK
    assert m.servo_j(t + T, rest, T) == ErrCode.OK
    assert (m.main_code, m.sub_code) == (1, 32)
    assert m.reset_all_errors(t + 2 * T) == ErrCode.OK
    assert (m.main_code, m.sub_code) == (0, 0)


def test_negative_steps_sweep_the_other_way_and_reset_is_refused_inside_the_window():
    m, t, before, err = run_step(-3.0, profile="fr20", joint=1)
    assert err == ErrCode.FAILED
    ev = m.drain_events()[0]
    assert ev.joint == 1 and ev.step_deg == pytest.approx(-3.0) and ev.speed_deg_s == 120.0
    assert m.reset_all_errors(t + 0.1) == ErrCode.FAILED
    assert m.robot_enable(t + 0.1, 0) == ErrCode.FAILED
    assert m.sample(t + 0.85).q[1] == pytest.approx(before[1] - ev.travel_deg, abs=1e-6)


def test_below_the_band_a_jump_is_simply_followed():
    m, t, before, err = run_step(0.99)
    assert err == ErrCode.OK and (m.main_code, m.sub_code) == (0, 0)
    assert m.sample(t + m.p.lag_ms / 1000.0).q[0] == pytest.approx(before[0] + 0.99, abs=1e-6)


def test_the_band_is_a_seeded_coin_flip_rising_across_it():
    def fires(step, seed):
        m, _, _, err = run_step(step, seed=str(seed))
        return err == ErrCode.FAILED

    low = sum(fires(1.1, s) for s in range(200)) / 200
    mid = sum(fires(1.25, s) for s in range(200)) / 200
    high = sum(fires(1.45, s) for s in range(200)) / 200
    assert 0.05 < low < 0.35 and 0.35 < mid < 0.65 and 0.75 < high < 0.97
    assert all(fires(1.5, s) for s in range(20))
    assert [fires(1.25, s) for s in range(30)] == [fires(1.25, s) for s in range(30)]


def test_same_seed_same_runaway():
    a = run_step(2.0, seed="11")[0].drain_events()
    b = run_step(2.0, seed="11")[0].drain_events()
    c = run_step(2.0, seed="12")[0].drain_events()
    assert a == b and a[0].travel_deg != c[0].travel_deg


@pytest.mark.parametrize("step,joint", [(30.0, 0), (-25.0, 3), (19.0, 5)])
def test_giant_step_is_refused_with_no_motion_until_reset(step, joint):
    m, t, before, err = run_step(step, joint=joint)
    assert err == ErrCode.FAILED
    assert (m.main_code, m.sub_code) == (1, 23 + joint)  # 19 deg: 1900 deg/s > 10 x 180
    ev = m.drain_events()
    assert ev[0].kind == "refused" and ev[0].joint == joint
    for k in range(1, 50):
        assert m.servo_j(t + k * T, before, T) == ErrCode.FAILED
        assert m.sample(t + k * T).q == pytest.approx(before, abs=1e-9)
    assert m.reset_all_errors(t + 0.6) == ErrCode.OK
    assert (m.main_code, m.sub_code) == (0, 0)
    assert m.servo_j(t + 0.61, before, T) == ErrCode.OK


def test_simmachine_follows_any_jump_after_the_lag():
    m, t, before, err = run_step(30.0, profile="simmachine")
    assert err == ErrCode.OK and (m.main_code, m.sub_code) == (0, 0)
    lag = 0.039
    assert m.sample(t + lag - 0.011).q[0] == pytest.approx(before[0], abs=1e-9)
    assert m.sample(t + lag).q[0] == pytest.approx(before[0] + 30.0, abs=1e-9)
    for step in (2.5, -5.0, 60.0):
        t += T
        q = list(m.sample(t).q)
        q[0] += step
        assert m.servo_j(t, tuple(q), T) == ErrCode.OK
    assert not m.drain_events()


def test_first_order_lag_and_noise():
    m, t = ready("fr3", tau_ms="20")
    q0 = m.sample(t).q
    assert m.servo_j(t + T, joint0(q0, q0[0] + 0.5), T) == ErrCode.OK
    lag = 0.078
    # a 0.5 deg move executed over one period, then first-order: 63 % one tau after the move's end
    s = m.sample(t + T + lag + 0.020).q[0] - q0[0]
    assert 0.5 * (1 - math.exp(-1)) - 0.05 < s < 0.5 * (1 - math.exp(-1)) + 0.05
    assert m.sample(t + 1.0).q[0] - q0[0] == pytest.approx(0.5, abs=1e-6)
    noisy = ControllerModel(with_overrides("fr3", {"noise_deg": "0.01"}), 0.0)
    xs = [noisy.sample(0.001 * k).q[0] for k in range(2000)]
    assert statistics.pstdev(xs) == pytest.approx(0.01, rel=0.1)


def test_a_pause_holds_then_moves_within_one_period():
    m, t = ready("fr3")
    q0 = m.sample(t).q
    m.servo_j(t + T, joint0(q0, q0[0] + 0.1), T)
    t_resume = t + 0.5  # no command for half a second
    m.servo_j(t_resume, joint0(q0, q0[0] + 0.2), T)
    lag = 0.078
    assert m.sample(t_resume + lag - T - 0.001).q[0] == pytest.approx(q0[0] + 0.1, abs=1e-9)
    assert m.sample(t_resume + lag).q[0] == pytest.approx(q0[0] + 0.2, abs=1e-9)


def test_stop_disable_and_bad_arguments():
    m, t = ready("fr3")
    q0 = m.sample(t).q
    assert m.servo_j(t, q0[:5], T) == ErrCode.PARAM_COUNT
    assert m.servo_j(t, joint0(q0, math.nan), T) == ErrCode.OUT_OF_RANGE
    assert m.servo_j(t, q0, 0.0) == ErrCode.OUT_OF_RANGE
    assert m.set_mode(t, 2) == ErrCode.OUT_OF_RANGE and m.robot_enable(t, 5) == ErrCode.OUT_OF_RANGE
    t, x, v = ramp(m, t, 20.0, 30)
    assert m.stop_motion(t) == ErrCode.OK
    here = m.sample(t).q[0]
    assert m.sample(t + 0.5).q[0] == pytest.approx(here, abs=1e-9)  # queued setpoints dropped
    assert m.robot_enable(t + 0.5, 0) == ErrCode.OK
    assert m.servo_j(t + 0.51, m.sample(t + 0.51).q, T) == ErrCode.NOT_ENABLED
    assert not m.sample(t + 0.6).enabled
