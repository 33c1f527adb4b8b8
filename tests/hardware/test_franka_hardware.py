"""Checks of a real Franka arm, run when SERVOTOOL_TEST_ROBOT names one (franka://172.16.0.2, or with
`?model=fr3` and `?realtime=ignore` as the user needs them).

Read only by default: a connect, a second of every-cycle state, nothing commanded. The motion tests also
need SERVOTOOL_TEST_ALLOW_MOTION=1: a small, slow lag ramp and a jerk-limited step of a few degrees on the
joint named by SERVOTOOL_TEST_JOINT (default 5, J6: a wrist joint, a small motion envelope), out and back.
"""

from __future__ import annotations

import math
import os

import pytest

from servotool.clock import MonotonicClock

URL = os.environ.get("SERVOTOOL_TEST_ROBOT", "")
MOTION = os.environ.get("SERVOTOOL_TEST_ALLOW_MOTION") == "1"
JOINT = int(os.environ.get("SERVOTOOL_TEST_JOINT", "5"))
IS_FRANKA = URL.startswith("franka://")

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(
        not IS_FRANKA, reason="set SERVOTOOL_TEST_ROBOT=franka://HOST to run the checks of a real Franka arm"
    ),
]
needs_motion = pytest.mark.skipif(
    not (IS_FRANKA and MOTION),
    reason="set SERVOTOOL_TEST_ROBOT=franka://HOST and SERVOTOOL_TEST_ALLOW_MOTION=1 to let it move the arm",
)


def _motion():
    from servotool.devices.registry import ARM, url_facts

    return url_facts(URL, ARM).motion


@pytest.fixture
def arm():
    pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
    from servotool.devices.registry import open_arm

    clock = MonotonicClock()
    a = open_arm(URL, now=clock.now)
    try:
        yield a, clock
    finally:
        a.close()


def test_a_read_only_connect_gives_every_cycle_with_the_robots_names(arm):
    from servotool.devices.franka import codes
    from servotool.devices.franka.telemetry import FrankaSource

    a, clock = arm
    assert not a.simulated and a.n_joints == 7
    frame = a.latest_state()
    assert frame is not None and len(frame.q) == 7 and all(math.isfinite(x) for x in frame.q)
    assert frame.extra is not None and frame.extra["robot_mode"] in codes.ROBOT_MODES
    flags = str(frame.extra["current_errors"]).split() + str(frame.extra["last_motion_errors"]).split()
    assert set(flags) <= set(codes.ERROR_NAMES)
    source = FrankaSource(a)  # read only: it never starts a motion nor asks for a recovery
    try:
        end = clock.now() + 1.0
        sweeps = []
        while clock.now() < end:
            sweeps += source.read_fast()
            clock.sleep(0.03)
        sweeps += source.read_fast()
    finally:
        source.close()
    times = [s.state["time_s"] for s in sweeps if s.state is not None]
    assert len(times) > 900, f"{len(times)} of ~1000 cycles read in a second"
    assert all(b > a for a, b in zip(times, times[1:], strict=False))


@needs_motion
def test_a_small_lag_ramp_measures_lag_and_keeps_every_command(arm, tmp_path):
    from servotool.runs.arm.ramp import run_ramp
    from servotool.runs.arm.settings import LagOptions

    a, clock = arm
    # as `servotool lag --ramp --sweep 3 --speeds 3,6` builds them: the family's period and bounds
    settings = LagOptions(joint=JOINT, sweep=3.0, speeds=(3.0, 6.0)).for_device(_motion()).run_settings()
    run = run_ramp(a, settings, clock=clock, out_dir=tmp_path, command="pytest hardware franka")
    assert run.outcome.complete, run.outcome.reason
    assert run.analysis is not None
    res = run.analysis.result
    assert 0.5 < res.fit.lag_ms < 50.0
    assert a.cycles[-1].last_motion_errors == ()


@needs_motion
def test_a_generator_step_of_a_few_degrees_lands_without_a_reflex(arm, tmp_path):
    from servotool.runs.arm.settings import StepOptions
    from servotool.runs.arm.step import run_step

    a, clock = arm
    # as `servotool step --size 3 --steps 4 --shaper otg` builds them: the jerk-limited generator
    options = StepOptions(joint=JOINT, size=3.0, steps=4, shaper="otg")
    settings = options.for_device(_motion()).run_settings()
    assert settings.shaped and settings.shaper == "otg"
    run = run_step(a, settings, clock=clock, out_dir=tmp_path, command="pytest hardware franka")
    assert run.outcome.complete, run.outcome.reason
    assert run.outcome.fault is None
    assert a.cycles[-1].last_motion_errors == ()
