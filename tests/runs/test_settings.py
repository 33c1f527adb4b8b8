"""Settings validation before any device opens: every problem reported, one line each, nothing clamped."""

import math
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.errors import ExitCode, SettingsError
from servotool.runs.arm import settings as S

FR3_RANGES = (
    (-175.0, 175.0),
    (-265.0, 85.0),
    (-160.0, 160.0),
    (-265.0, 85.0),
    (-175.0, 175.0),
    (-175.0, 175.0),
)


@dataclass
class Lag:
    joint: int = 0
    sweep_deg: float = 20.0
    speeds_deg_s: tuple = (5.0, 10.0, 20.0, 40.0)
    ramp_s: float = 0.2
    settle_s: float = 0.5
    cmd_period_s: float = 0.01
    a_max: float = 500.0
    v_max: float = 130.0
    warmup_timeout_s: float = 10.0


@dataclass
class Step:
    joint: int = 0
    size_deg: float = 10.0
    steps: int = 4
    hold_s: float = 0.6
    cmd_period_s: float = 0.01
    shaped: bool = True
    shaper: str = "accel"
    v_max: float = 130.0
    a_max: float = 500.0
    j_max: float = 10000.0
    guard: bool = True
    lag_ms: float | None = None
    guard_noise_deg: float = 0.01
    warmup_timeout_s: float = 10.0
    pre_hold_s: float = 0.5


def test_defaults_pass():
    assert S.validate_lag(Lag(), ranges=FR3_RANGES) == []
    assert S.validate_step(Step(), ranges=FR3_RANGES) == []


@pytest.mark.parametrize(
    ("change", "option"),
    [
        ({"sweep_deg": math.nan}, "--sweep"),
        ({"sweep_deg": math.inf}, "--sweep"),
        ({"sweep_deg": 1e9}, "--sweep"),
        ({"sweep_deg": -1e6}, "--sweep"),
        ({"sweep_deg": 0.0}, "--sweep"),
        ({"ramp_s": math.nan}, "--ramp-ms"),
        ({"ramp_s": math.inf}, "--ramp-ms"),
        ({"ramp_s": 0.0}, "--ramp-ms"),
        ({"settle_s": -0.1}, "--settle-ms"),
        ({"settle_s": math.nan}, "--settle-ms"),
        ({"a_max": math.nan}, "--a-max"),
        ({"a_max": math.inf}, "--a-max"),
        ({"a_max": 1e9}, "--a-max"),
        ({"v_max": math.nan}, "--v-max"),
        ({"v_max": math.inf}, "--v-max"),
        ({"v_max": -1.0}, "--v-max"),
        ({"cmd_period_s": 0.5}, "--cmd-ms"),
        ({"speeds_deg_s": ()}, "--speeds"),
        ({"speeds_deg_s": (5.0, math.nan)}, "--speeds"),
        ({"speeds_deg_s": (5.0, -5.0)}, "--speeds"),
        ({"speeds_deg_s": (200.0,)}, "--speeds"),
        ({"joint": 6}, "--joint"),
        ({"joint": -1}, "--joint"),
    ],
)
def test_lag_refusals_name_the_option(change, option):
    problems = S.validate_lag(replace(Lag(), **change), n_joints=6, ranges=FR3_RANGES)
    assert problems, change
    assert any(option in p for p in problems), problems
    assert all("\n" not in p for p in problems)


@pytest.mark.parametrize(
    ("change", "option"),
    [
        ({"size_deg": 1e6}, "--size"),
        ({"size_deg": math.nan}, "--size"),
        ({"size_deg": 0.0}, "--size"),
        ({"hold_s": math.nan}, "--hold-ms"),
        ({"hold_s": math.inf}, "--hold-ms"),
        ({"hold_s": 0.005}, "--hold-ms"),
        ({"v_max": math.nan}, "--v-max"),
        ({"a_max": math.inf}, "--a-max"),
        ({"j_max": math.nan}, "--j-max"),
        ({"j_max": math.inf}, "--j-max"),
        ({"shaper": "bogus"}, "--shaper"),
        ({"guard": False}, "--no-guard"),
        ({"steps": 0}, "--steps"),
        ({"lag_ms": math.nan}, "--lag-ms"),
        ({"lag_ms": -5.0}, "--lag-ms"),
    ],
)
def test_step_refusals_name_the_option(change, option):
    problems = S.validate_step(replace(Step(), **change), ranges=FR3_RANGES)
    assert any(option in p for p in problems), problems


def test_every_problem_is_reported_not_the_first():
    bad = replace(Lag(), sweep_deg=math.nan, ramp_s=math.inf, settle_s=-0.1, a_max=math.nan, v_max=math.inf)
    problems = S.validate_lag(bad)
    for option in ("--sweep", "--ramp-ms", "--settle-ms", "--a-max", "--v-max"):
        assert sum(option in p for p in problems) >= 1, (option, problems)
    with pytest.raises(SettingsError) as info:
        S.require(problems)
    assert info.value.exit_code == ExitCode.USAGE
    assert str(info.value).count("\n") == len(problems) - 1


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, 1e-12])
def test_a_max_v_max_each_reported_once_for_step(bad):
    # -1 was refused twice, in two wordings ("> 0" and ">= 1e-09"), for one value
    problems = S.validate_step(replace(Step(), a_max=bad, v_max=bad))
    assert sum("--a-max" in p for p in problems) == 1, problems
    assert sum("--v-max" in p for p in problems) == 1, problems


def test_a_run_far_too_long_is_refused_with_a_readable_duration():
    # --speeds 1e-300: the duration was printed with all of its 300 digits
    problems = S.validate_lag(replace(Lag(), speeds_deg_s=(1e-300,)))
    (line,) = [p for p in problems if "stream for" in p]
    assert "stream for 4e+301 s" in line and len(line) < 160, line


def test_long_runs_are_refused_before_any_allocation():
    problems = S.validate_lag(replace(Lag(), sweep_deg=300.0, speeds_deg_s=(0.5,)))
    assert any("stream for" in p for p in problems), problems


def test_goal_outside_the_range_is_refused_with_start_pose():
    start = (-44.0, -90.0, 90.0, -90.0, -90.0, 0.0)
    assert S.lag_goal_problems(Lag(sweep_deg=20.0), FR3_RANGES, start) == []
    problems = S.lag_goal_problems(Lag(sweep_deg=-140.0), FR3_RANGES, start)
    assert len(problems) == 1 and "J1" in problems[0] and "-184.00" in problems[0]
    problems = S.step_goal_problems(Step(size_deg=150.0), FR3_RANGES, start)
    assert len(problems) == 1 and "-194.00" in problems[0]  # the -X level, though +X (106) is fine


def test_goal_span_refused_before_the_pose_is_known():
    problems = S.validate_step(replace(Step(), size_deg=176.0), ranges=FR3_RANGES)
    assert any("whole range" in p for p in problems)
    assert any("--sweep" in p for p in S.validate_lag(replace(Lag(), sweep_deg=2000.0), ranges=FR3_RANGES))


def test_start_outside_range_is_refused():
    problems = S.lag_goal_problems(Lag(), FR3_RANGES, (230.0, 0, 0, 0, 0, 0))
    assert problems and "outside its range" in problems[0]


def test_raw_on_a_real_arm_needs_test_arm():
    raw = replace(Step(), shaped=False, guard=True)
    assert S.validate_step(raw, simulated=True) == []
    assert any("--test-arm" in p for p in S.validate_step(raw, simulated=False))
    assert S.validate_step(raw, simulated=False, test_arm=True) == []


floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**12), 10**12))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(sweep=floats, ramp=floats, settle=floats, a=floats, v=floats, speed=floats)
def test_whatever_passes_is_finite_bounded_and_inside(sweep, ramp, settle, a, v, speed):
    s = Lag(sweep_deg=sweep, ramp_s=ramp, settle_s=settle, a_max=a, v_max=v, speeds_deg_s=(speed,))
    if S.validate_lag(s, ranges=FR3_RANGES):
        return
    for x in (sweep, ramp, settle, a, v, speed):
        assert math.isfinite(x)
    assert 0 < speed <= v and speed / ramp <= a <= S.MAX_A_DEG_S2
    assert S.lag_duration_s(s) <= S.MAX_RUN_S
    assert abs(sweep) <= 350.0


def test_a_shaped_a_max_probe_above_the_stop_bound_is_a_test_arm_trial():
    probe = replace(Step(), a_max=12500.0)
    assert S.needs_test_arm_probe(probe)
    assert S.validate_step(probe, simulated=True) == []
    refused = S.validate_step(probe, simulated=False, test_arm=False)
    assert any("--test-arm" in p and "--a-max 12500" in p for p in refused)
    assert S.validate_step(probe, simulated=False, test_arm=True) == []
    # a raw step never takes the probe's bound, and no step goes past the probe's own ceiling
    assert any("--a-max" in p for p in S.validate_step(replace(probe, shaped=False), simulated=True))
    too_high = S.validate_step(replace(Step(), a_max=S.MAX_PROBE_A_DEG_S2 * 1.01), simulated=True)
    assert any("--a-max" in p for p in too_high)
    # lag runs keep the braked-stop bound
    assert any("--a-max" in p for p in S.validate_lag(replace(Lag(), a_max=4000.0)))


@pytest.mark.parametrize("period_s", [0.02, 0.045, 0.06, 0.1])
def test_the_per_command_step_change_bounds_a_max_at_a_longer_period(period_s):
    """The runaway trigger is a change of the per-command step (1-1.5 deg from one command to the next); a
    stream bounded by a_max changes it by up to a_max * cmdT^2, so the braked-stop bound (0.2 deg at 10 ms)
    falls with the square of a longer period: a ramp, a shaped step and every braked stop stay under it."""
    bound = S.MAX_A_DEG_S2 * (0.01 / period_s) ** 2
    slow = replace(Lag(), cmd_period_s=period_s, speeds_deg_s=(min(5.0, bound * 0.2),), ramp_s=0.2)
    assert S.validate_lag(replace(slow, a_max=bound), ranges=FR3_RANGES) == []
    refused = S.validate_lag(replace(slow, a_max=bound * 1.01), ranges=FR3_RANGES)
    assert any("--a-max" in p and "--cmd-ms" in p and "per command" in p for p in refused), refused
    for shaped in (True, False):
        step = replace(Step(), cmd_period_s=period_s, shaped=shaped, hold_s=1.0)
        assert S.validate_step(replace(step, a_max=bound), simulated=False, test_arm=True) == []
        assert not S.needs_test_arm_probe(replace(step, a_max=bound))
    # above it a shaped step probes for the trigger (a test-arm trial on a real arm); a raw one is refused
    probe = replace(Step(), cmd_period_s=period_s, a_max=bound * 1.01, hold_s=1.0)
    assert S.needs_test_arm_probe(probe)
    assert any("--test-arm" in p for p in S.validate_step(probe, simulated=False))
    assert any("--a-max" in p for p in S.validate_step(replace(probe, shaped=False), simulated=True))
    assert any(
        "--a-max" in p
        for p in S.validate_step(replace(probe, a_max=S.MAX_PROBE_A_DEG_S2 * (0.01 / period_s) ** 2 * 1.01))
    )


def test_at_ten_ms_and_below_the_a_max_bounds_are_unchanged():
    for period_s in (0.001, 0.005, 0.01):
        lag = replace(Lag(), cmd_period_s=period_s, a_max=S.MAX_A_DEG_S2)
        assert S.validate_lag(lag, ranges=FR3_RANGES) == []
        assert not S.needs_test_arm_probe(replace(Step(), cmd_period_s=period_s, a_max=S.MAX_A_DEG_S2))


periods = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0.0005, 0.2))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(period=periods, a=floats, shaped=st.booleans())
def test_whatever_runs_without_a_test_arm_changes_its_step_by_at_most_the_stop_bound(period, a, shaped):
    lag = replace(Lag(), cmd_period_s=period, a_max=a, speeds_deg_s=(1.0,), ramp_s=1.0)
    step = replace(Step(), cmd_period_s=period, a_max=a, shaped=shaped, hold_s=1.0)
    for runs in (
        not S.validate_lag(lag, ranges=FR3_RANGES),
        not S.validate_step(step, simulated=True) and not S.needs_test_arm_probe(step),
    ):
        if runs:
            assert a * period**2 <= S.MAX_A_DEG_S2 * 0.01**2 * (1 + 1e-12)


FR3_SPEEDS = (180.0,) * 6
FR20_SPEEDS = (120.0, 120.0, 120.0, 180.0, 180.0, 180.0)


@pytest.mark.parametrize("shaper", ["accel", "otg"])
def test_a_shaped_step_that_would_outrun_the_joint_is_refused_not_clamped(shaper):
    # --v-max 360 on an FR3 (180 deg/s): a 90 deg step at 2000 deg/s^2 cruises at 360 deg/s on the wire
    fast = replace(Step(), size_deg=90.0, v_max=360.0, a_max=2000.0, shaper=shaper)
    problems = S.validate_step(fast, ranges=FR3_RANGES, speed_limits=FR3_SPEEDS)
    assert any("--v-max 360" in p and "J1's speed limit of 180" in p for p in problems), problems
    assert S.validate_step(replace(fast, v_max=180.0), ranges=FR3_RANGES, speed_limits=FR3_SPEEDS) == []
    # the defaults (10 deg at 500 deg/s^2 peak near 71 deg/s) run on every profile, FR20's 120 deg/s axes too
    assert S.validate_step(replace(Step(), shaper=shaper), ranges=FR3_RANGES, speed_limits=FR20_SPEEDS) == []
    # a step too short to reach --v-max is judged by the speed it can reach
    short = replace(Step(), size_deg=5.0, v_max=360.0, a_max=2000.0, shaper=shaper)
    assert S.validate_step(short, ranges=FR3_RANGES, speed_limits=FR20_SPEEDS) == []
    assert S.validate_step(replace(short, joint=3), ranges=FR3_RANGES, speed_limits=FR20_SPEEDS) == []
    big = replace(Step(), size_deg=40.0, shaper=shaper)  # 130 deg/s cruise on FR20's J2 (120)
    assert any(
        "J2's speed limit of 120" in p
        for p in S.validate_step(replace(big, joint=1), ranges=FR3_RANGES, speed_limits=FR20_SPEEDS)
    )


def test_a_generator_steps_default_hold_covers_its_landing_on_a_slow_arm():
    """A slow arm's acceleration bound (about 115 deg/s²) needs ~0.6 s to land a 10 deg generator step: the
    default hold grows to the landing time plus the margin, and a hold the user gave that is too short is
    refused with the hold that would do, never cut."""
    from servotool.devices.registry import url_facts
    from servotool.runs.arm.settings import LAND_MARGIN_S, StepOptions

    motion = url_facts("sim:franka-fr3", "arm").motion
    opts = StepOptions().for_device(motion)
    land = opts.landing_s()
    assert land is not None and 0.5 < land < 0.7
    assert opts.hold_ms >= (land + LAND_MARGIN_S) * 1e3
    assert not any("--hold-ms" in p for p in opts.problems(n_joints=7, motion=motion))
    short = StepOptions(hold_ms=300.0, given=frozenset({"hold_ms"})).for_device(motion)
    assert short.hold_ms == 300.0
    (line,) = [p for p in short.problems(n_joints=7, motion=motion) if "--hold-ms" in p]
    assert "to land" in line and "hold at least" in line


def test_the_joint_count_is_checked_only_once_known():
    from servotool.runs.arm.settings import StepOptions

    seventh = StepOptions(joint=6)
    assert not any("--joint" in p for p in seventh.problems())
    assert any("J1..J6" in p for p in seventh.problems(n_joints=6))
    assert not any("--joint" in p for p in seventh.problems(n_joints=7))
