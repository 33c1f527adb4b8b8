"""Every arm family's simulators, through what a run needs: open, identify, read, the braked stop, ownership,
a lost link and simulated time. The runs are the real ones (runs/arm: the run skeleton and a ramp job), in
lock-step on simulated time where the simulator has it, so no figure depends on the machine's load."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from servotool.clock import Clock, FakeClock
from servotool.devices.arm import Arm, clock_of
from servotool.devices.family import ARM
from servotool.devices.registry import DeviceURLError, open_arm, url_facts
from servotool.errors import Refused
from servotool.io.csvlog import read_csv
from servotool.runs.arm.prepare import wait_for_state
from servotool.runs.arm.ramp import RampJob, RampSettings
from servotool.runs.arm.run import ArmRun, RunCallbacks, RunResult
from servotool.runs.arm.stream import TickInfo
from servotool.runs.outcome import RunStatus
from servotool.runs.ownership import busy_problem
from tests.conformance.families import (
    ARM_BUSY,
    ARM_LOSSES,
    ARM_URLS,
    LOSS_TICK,
    SIM_CLOCK,
    opened,
    skip_unless,
    with_params,
)

T = 0.01
A_MAX = 500.0
# a short ramp of the first joint: out 4 deg and back at 20 deg/s, about 0.8 s of streaming
RAMP = RampSettings(
    joint=0,
    sweep_deg=4.0,
    speeds_deg_s=(20.0,),
    ramp_s=0.1,
    settle_s=0.1,
    cmd_period_s=T,
    a_max=A_MAX,
    realtime=False,
)


def ramp_settings(url: str) -> RampSettings:
    """RAMP on the family's own pace and within its acceleration bound where its controller sets them (the
    ramp then accelerates at most at that bound)."""
    motion = url_facts(url).motion
    if motion is None or not motion.fixed_period:
        return RAMP
    a_max = min(A_MAX, motion.a_cap)
    # slow enough to cruise within the sweep at that acceleration
    speed = min(RAMP.speeds_deg_s[0], 0.7 * math.sqrt(a_max * RAMP.sweep_deg))
    ramp_s = max(RAMP.ramp_s, speed / a_max)
    return dataclasses.replace(
        RAMP, cmd_period_s=motion.cmd_period_s, a_max=a_max, ramp_s=ramp_s, speeds_deg_s=(speed,)
    )


pytestmark = pytest.mark.parametrize("url", ARM_URLS)


def ramp(arm: Arm, clock: Clock, out: Path, on_tick=None) -> RunResult:
    """The ramp run on an open arm, through the run skeleton every arm command uses (not analysed)."""
    run = ArmRun(
        RampJob(ramp_settings(arm.url)),
        clock=clock,
        out_dir=out,
        command="conformance",
        callbacks=RunCallbacks(on_tick=on_tick),
        analyse=False,
    )
    return run.run(arm)


def end_line(result: RunResult) -> str:
    return result.path.read_text().rstrip().splitlines()[-1]


def test_open_and_close(url):
    arm = open_arm(url)
    with arm as same:
        assert same is arm
    arm.close()  # idempotent, never raises


def test_identify(url):
    facts = url_facts(url)
    with opened(url, ARM) as (arm, _):
        assert isinstance(arm, Arm)
        assert arm.url == with_params(url, SIM_CLOCK) or arm.url == url
        assert arm.simulated is True and facts.simulated
        assert arm.model == facts.model
        assert arm.n_joints == facts.n_joints
        assert len(arm.joint_speed_limits) == arm.n_joints
        assert all(v > 0 and math.isfinite(v) for v in arm.joint_speed_limits)
        assert len(arm.joint_ranges) == arm.n_joints
        if facts.joint_ranges:
            assert tuple(tuple(map(float, r)) for r in arm.joint_ranges) == facts.joint_ranges


def test_read_gives_a_state_frame_of_every_joint(url):
    with opened(url, ARM) as (arm, clock):
        frame = wait_for_state(arm, clock, timeout_s=10.0)
        assert len(frame.q) == arm.n_joints
        assert all(math.isfinite(x) for x in frame.q)
        assert math.isfinite(frame.t)


def test_a_setpoint_of_the_wrong_joint_count_or_not_finite_is_refused(url):
    with opened(url, ARM) as (arm, clock):
        q = list(wait_for_state(arm, clock, timeout_s=10.0).q)
        with pytest.raises(ValueError):
            arm.servo_j([*q, 0.0], T)
        with pytest.raises(ValueError):
            arm.servo_j(q[:-1], T)
        with pytest.raises(ValueError):
            arm.servo_j([math.nan, *q[1:]], T)


def test_a_run_cut_short_ends_through_the_braked_stop(url, tmp_path):
    cut: list[int] = []

    def ctrl_c_in_cruise(info: TickInfo) -> None:
        if info.phase == "cruise" and not cut:
            cut.append(info.k)
            raise KeyboardInterrupt

    with opened(url, ARM) as (arm, clock):
        result = ramp(arm, clock, tmp_path, ctrl_c_in_cruise)
    out = result.outcome
    assert cut and out.status == RunStatus.INTERRUPTED and out.reason == "Ctrl-C", out.reason
    assert out.at_rest is True
    assert end_line(result) == "# end: interrupted: Ctrl-C"
    _, df = read_csv(result.path)
    cmd = df[df.event == "cmd"]
    assert len(cmd[cmd.phase == "stop"]) > 0
    s = ramp_settings(url)
    v = np.diff(cmd.q1.to_numpy(dtype=float)) / s.cmd_period_s
    assert abs(v[cut[0] - 1]) > 1.0  # it was moving when the stop came ...
    # ... braked, never a jump in speed (beyond the CSV's rounding of q, magnified at a 1 ms period) ...
    assert np.max(np.abs(np.diff(v))) <= s.a_max * s.cmd_period_s * (1 + 1e-6) + 1e-5
    assert v[-1] == 0.0  # ... to rest


def test_clock_sim_runs_in_lock_step_without_waiting_on_the_wall_clock(url, tmp_path):
    try:
        arm = open_arm(with_params(url, SIM_CLOCK))
    except DeviceURLError as exc:
        pytest.skip(f"its simulator has no simulated time: {exc}")
    try:
        clock = clock_of(arm)
        assert isinstance(clock, FakeClock)
        start = clock.now()
        result = ramp(arm, clock, tmp_path)
        joints = [f"q{j + 1}" for j in range(arm.n_joints)]
    finally:
        arm.close()
    out = result.outcome
    assert out.status == RunStatus.COMPLETE, out.reason
    _, df = read_csv(result.path)
    cmd = df[df.event == "cmd"]
    # every tick went out exactly on its deadline: simulated time waits for nobody and nobody waits for it
    assert out.late_ticks == 0 and out.max_late_ms == 0.0
    period = ramp_settings(url).cmd_period_s
    np.testing.assert_allclose(cmd.t.to_numpy(dtype=float), np.arange(len(cmd)) * period, atol=1e-9)
    assert clock.now() - start >= (len(cmd) - 1) * period
    states = df[df.event == "state"]
    assert len(states) > 0 and np.isfinite(states[joints].to_numpy(float)).all()


def test_a_simulator_is_its_own_device_and_free(url, tmp_path):
    from servotool.devices.registry import lock_keys
    from servotool.runs.ownership import claim

    assert lock_keys(url) == []
    with claim(url) as lock:
        assert lock is None
        with opened(url, ARM) as (first, clock), opened(url, ARM) as (second, clock2):
            assert busy_problem(first) is None and busy_problem(second) is None
            wait_for_state(first, clock, timeout_s=10.0)
            wait_for_state(second, clock2, timeout_s=10.0)


def test_an_arm_another_owner_holds_is_refused_before_it_is_enabled(url, tmp_path):
    busy = skip_unless(ARM_BUSY, url, "report another owner")
    with opened(url, ARM, busy) as (arm, clock):
        assert busy_problem(arm)
        with pytest.raises(Refused, match="busy"):
            ramp(arm, clock, tmp_path)
    assert not list(tmp_path.glob("*.csv"))


def test_a_lost_link_ends_the_run_as_connection_lost(url, tmp_path):
    loss = skip_unless(ARM_LOSSES, url, "lose its link")
    done: list[int] = []

    with opened(url, ARM, loss.params) as (arm, clock):

        def inject(info: TickInfo) -> None:
            if loss.at_tick is not None and info.k >= LOSS_TICK and not done:
                done.append(info.k)
                loss.at_tick(arm)

        result = ramp(arm, clock, tmp_path, inject)
    out = result.outcome
    assert out.status == RunStatus.CONNECTION_LOST and out.exit_code == 3, out.reason
    assert out.link_lost
    assert end_line(result).startswith("# end: interrupted: connection lost")
    _, df = read_csv(result.path)
    sent = len(df[df.event == "cmd"])
    assert LOSS_TICK < sent <= LOSS_TICK + 20  # streamed until the loss, and not on past it
