"""FrankaArm over pylibfranka against the simulator in lock-step (no cycle is lost to the machine's load):
paced by the robot, a finish, reflexes by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from servotool.devices.arm import MotionState
from servotool.devices.franka.sim import spawn, stop
from servotool.errors import DeviceError

pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def sim_address() -> Iterator[str]:
    proc, address = spawn("franka-fr3", lockstep=True)
    try:
        yield address
    finally:
        stop(proc)


def _arm(address: str, realtime_ignore: bool = True):
    from servotool.devices.franka.client import FrankaArm

    return FrankaArm("sim", address, "fr3", True, realtime_ignore=realtime_ignore)


def test_a_held_stream_records_every_cycle_and_finishes(sim_address):
    with _arm(sim_address) as arm:
        arm.enable()
        hold = arm.latest_state().q
        arm.servo_start()
        for _ in range(100):
            arm.servo_j(hold)
        assert arm.servo_end() == 0
        frames = arm.poll_states()
        assert len(frames) == 102 and frames[-1].fault is None
        last = arm.cycles[-1]
        assert last.robot_mode in ("Move", "Idle") and last.control_command_success_rate > 0.5
        assert arm.read().motion is MotionState.STOPPED


def test_a_jump_is_the_reflex_by_name_and_recovery_clears_it(sim_address):
    with _arm(sim_address) as arm:
        arm.enable()
        q = list(arm.latest_state().q)
        arm.servo_start()
        q[0] += 1.0
        with pytest.raises(DeviceError, match="joint_motion_generator_velocity"):
            for _ in range(20):
                arm.servo_j(q)
        frame = arm.read()
        assert frame.motion is MotionState.PROTECTIVE_STOP and frame.fault is not None
        assert frame.fault.name.startswith("joint_motion_generator_velocity")
        assert arm.reset_faults() == 0 and arm.read().motion is MotionState.STOPPED


def test_enforce_refuses_a_kernel_that_is_not_real_time(sim_address, monkeypatch):
    from servotool.devices.franka import client

    monkeypatch.setattr(client, "realtime_kernel", lambda: False)
    with pytest.raises(DeviceError, match="realtime=ignore"):
        _arm(sim_address, realtime_ignore=False)


def test_every_state_row_of_a_run_carries_the_cycle_by_the_robots_names(sim_address, tmp_path):
    import numpy as np

    from servotool.clock import MonotonicClock
    from servotool.devices.franka import codes
    from servotool.devices.franka.client import STATE_COLUMNS, FrankaArm
    from servotool.io.csvlog import read_csv
    from servotool.runs.arm.stream import StreamPlan, record_stream

    clock = MonotonicClock()
    with FrankaArm("sim", sim_address, "fr3", True, realtime_ignore=True, now=clock.now) as arm:
        arm.enable()
        hold = arm.latest_state().q
        arm.servo_start()
        path, outcome = record_stream(
            arm,
            clock,
            StreamPlan(np.tile(hold, (100, 1))),
            mode="hold",
            out_dir=tmp_path,
            config={},
            header={},
            command="pytest",
            period_s=0.001,
            catch_sigint=False,
        )
        arm.servo_end()
    meta, df = read_csv(path)
    assert set(STATE_COLUMNS) <= set(df.columns)
    assert all(meta.units.get(c) == u for c, u in STATE_COLUMNS.items())
    states = df[df["event"] == "state"]
    assert outcome.complete, outcome.reason  # in lock-step no cycle is lost to the machine's load
    assert len(states) >= 100
    assert set(states["robot_mode"]) <= set(codes.ROBOT_MODES) and "Move" in set(states["robot_mode"])
    assert states["e1"].notna().all() and states["tau_J7"].notna().all() and states["dq4"].notna().all()
    for text in states["current_errors"].fillna(""):
        assert set(text.split()) <= set(codes.ERROR_NAMES)
    assert float(states["success"].iloc[-1]) > 0.5
    cmds = df[df["event"] == "cmd"]
    assert cmds["robot_mode"].isna().all()  # the robot's values ride on its state rows only
