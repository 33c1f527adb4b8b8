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
