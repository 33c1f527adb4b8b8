"""Checks of a real arm, run when SERVOTOOL_TEST_ROBOT names one (e.g. fairino://192.168.58.2).

Read-only by default. The motion test (a small, slow lag ramp on one joint: ramps never create the velocity
discontinuity that triggers a runaway) also needs SERVOTOOL_TEST_ALLOW_MOTION=1, and moves the joint named by
SERVOTOOL_TEST_JOINT (default 5, the wrist J6: the smallest motion envelope) by 5 degrees out and back.
"""

import math
import os

import pytest

from servotool.clock import MonotonicClock
from servotool.devices.registry import ARM, open_arm, url_facts
from servotool.runs.arm.prepare import wait_for_state
from servotool.runs.arm.ramp import run_ramp
from servotool.runs.arm.settings import LagOptions

URL = os.environ.get("SERVOTOOL_TEST_ROBOT")
MOTION = os.environ.get("SERVOTOOL_TEST_ALLOW_MOTION") == "1"
JOINT = int(os.environ.get("SERVOTOOL_TEST_JOINT", "5"))

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(not URL, reason="set SERVOTOOL_TEST_ROBOT to a real arm URL to run"),
]


@pytest.fixture
def arm():
    clock = MonotonicClock()
    a = open_arm(URL, now=clock.now)
    try:
        yield a, clock
    finally:
        a.close()


def test_state_stream_arrives_with_a_full_pose(arm):
    a, clock = arm
    assert not a.simulated
    frame = wait_for_state(a, clock, timeout_s=1.0)
    assert len(frame.q) == a.n_joints
    assert all(math.isfinite(x) for x in frame.q)
    assert frame.fault is None or all(isinstance(c, int) for c in frame.fault.codes)


@pytest.mark.skipif(not MOTION, reason="set SERVOTOOL_TEST_ALLOW_MOTION=1 to let the test move the arm")
def test_small_lag_ramp_gives_a_constant_lag(arm, tmp_path):
    a, clock = arm
    # the family's command period and bounds, as the CLI gives them (a Franka sets its own 1 ms pace)
    motion = url_facts(URL, ARM).motion
    settings = (
        LagOptions(joint=JOINT, sweep=5.0, speeds=(5.0, 10.0), keep=True).for_device(motion).run_settings()
    )
    run = run_ramp(a, settings, clock=clock, out_dir=tmp_path, command="pytest hardware")
    assert run.outcome.complete, run.outcome.reason
    res = run.analysis.result
    assert 5.0 < res.fit.lag_ms < 500.0
    assert res.model is not None
