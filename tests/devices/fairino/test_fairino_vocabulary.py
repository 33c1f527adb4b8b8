"""The FAIRINO client in the neutral arm vocabulary: its latch as a Fault, its robot_state as a MotionState,
the answer to a setpoint, the context manager and the capabilities it declares."""

from __future__ import annotations

import pytest

from servotool.devices import arm as a
from servotool.devices.fairino.codes import (
    FAULTS,
    MOTION_STATES,
    RUNAWAY_FAULT,
    decode_fault,
    describe_fault,
    motion_state,
    speed_limit_fault,
)
from servotool.devices.fairino.stream import _frame

POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)


def test_a_healthy_latch_is_no_fault():
    assert decode_fault(0, 0) is None


def test_the_runaway_latch_decodes_to_a_named_fault():
    fault = decode_fault(*RUNAWAY_FAULT)
    assert fault is not None and fault.codes == (1, 32) and fault.name == "main 1 sub 32"
    assert "TCP speed over the limit" in fault.text and "unconfirmed" not in fault.text
    assert str(fault) == describe_fault(1, 32).removeprefix("fault ")


def test_an_axis_speed_latch_says_its_numbering_is_unconfirmed():
    fault = decode_fault(*speed_limit_fault(2))
    assert fault is not None and fault.codes == (1, 25) and "axis 3" in fault.text
    assert "[numbering unconfirmed]" in fault.text and not FAULTS[(1, 25)].confirmed


def test_a_latch_not_in_the_table_is_still_a_fault():
    fault = decode_fault(7, 3)
    assert fault is not None and fault.codes == (7, 3) and fault.text == "not in the table"
    assert describe_fault(7, 3) == "fault main 7 sub 3 (not in the table)"


@pytest.mark.parametrize(
    "raw,state",
    [
        (1, a.MotionState.STOPPED),
        (2, a.MotionState.MOVING),
        (3, a.MotionState.PAUSED),
        (4, a.MotionState.HAND_GUIDED),
        (0, a.MotionState.UNKNOWN),
        (99, a.MotionState.UNKNOWN),
    ],
)
def test_robot_state_maps_to_the_motion_state(raw, state):
    assert motion_state(raw) is state
    assert set(MOTION_STATES) == {1, 2, 3, 4}


def test_a_decoded_frame_carries_the_fault_and_motion_state():
    raw = {"actual_joint_pos": POSE, "main_code": 1, "sub_code": 32, "robot_state": 2}
    frame = _frame(raw, 1.5)
    assert frame.fault == a.Fault((1, 32), "main 1 sub 32") and frame.motion is a.MotionState.MOVING
    assert frame.codes == (1, 32)
    healthy = _frame({"actual_joint_pos": POSE, "main_code": 0, "sub_code": 0}, 1.6)
    assert healthy.fault is None and healthy.motion is None and healthy.codes == a.HEALTHY_CODES


def test_the_client_is_a_context_manager_and_declares_every_capability(open_sim):
    arm = open_sim("sim:fr3", lockstep=True)
    with arm as same:
        assert same is arm and arm.connected
        for capability in (
            a.Arm,
            a.ReportsJointRanges,
            a.ReportsOwner,
            a.WarmsUp,
            a.HasWatchdog,
            a.HasStatePeriod,
            a.HasClock,
            a.NamesCommands,
        ):
            assert isinstance(arm, capability), capability.__name__
        assert a.clock_of(arm) is arm.clock and a.watchdog_of(arm) == arm.silence_s
        assert a.state_period_of(arm) == arm.state_period_s
        assert a.command_names(arm).servo_end == "ServoMoveEnd"
    assert not arm.connected  # closed on the way out
    arm.close()  # idempotent


def test_the_answer_to_a_setpoint_is_named_by_what_it_answers(open_sim):
    arm = open_sim("sim:fr3?transport=rpc", lockstep=True)
    arm.enable()
    assert arm.servo_start() == 0
    reply = arm.servo_j(POSE, 0.01)
    assert reply is not None and reply.command == a.SETPOINT and reply.to_setpoint
