"""The neutral arm vocabulary (devices.arm): Fault, MotionState, Reply and the capability protocols."""

from __future__ import annotations

import dataclasses

import pytest

from servotool.clock import FakeClock
from servotool.devices import arm as a


def test_a_fault_holds_one_or_two_whole_codes_and_a_name():
    flag = a.Fault((1 << 3,), "joint_velocity_violation", "a joint moved faster than allowed")
    assert flag.padded_codes == (8, 0)
    assert str(flag) == "joint_velocity_violation: a joint moved faster than allowed"
    assert str(a.Fault((1, 32), "main 1 sub 32")) == "main 1 sub 32"
    for codes in ((), (1, 2, 3), (1.5,), (True,)):
        with pytest.raises(ValueError):
            a.Fault(codes, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        a.Fault((1,), "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        flag.name = "other"  # type: ignore[misc]


def test_faults_are_the_same_when_their_codes_are():
    assert a.Fault((1, 32), "main 1 sub 32", "one text") == a.Fault((1, 32), "main 1 sub 32", "another")
    assert a.Fault((1, 32), "x") != a.Fault((1, 23), "x")


def test_a_frame_records_its_fault_codes_as_the_csv_columns_do():
    assert a.fault_codes(None) == a.HEALTHY_CODES == (0, 0)
    frame = a.StateFrame(0.0, (0.0,), fault=a.Fault((3,), "reflex"))
    assert frame.codes == (3, 0) and (frame.main_code, frame.sub_code) == (3, 0)
    assert a.StateFrame(0.0, (0.0,)).codes == (0, 0)


def test_the_motion_states_another_arm_reports_have_a_place():
    # a 1 kHz arm's modes and a 125/500 Hz arm's robot and safety modes map onto the same states
    names = {s.name for s in a.MotionState}
    assert {
        "STOPPED",
        "MOVING",
        "PAUSED",
        "HAND_GUIDED",
        "PROTECTIVE_STOP",
        "EMERGENCY_STOP",
        "RECOVERING",
        "POWERED_OFF",
        "UNKNOWN",
    } <= names


def test_a_reply_defaults_to_the_answer_to_a_setpoint():
    assert a.Reply(0.0, 0).to_setpoint and a.Reply(0.0, 0).command == a.SETPOINT
    assert not a.Reply(0.0, 0, "start").to_setpoint


class _Bare:
    url = "x"


class _Full:
    url = "x"
    silence_s = 0.2
    state_period_s = 0.008

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.joint_ranges = ((-1.0, 1.0),)

    def busy_reason(self) -> str | None:
        return None

    def warm_up(self, q_hold=None, cmd_period_s=0.01, timeout_s=5.0) -> float:
        return 0.0


def test_capabilities_are_found_by_isinstance_not_by_name():
    bare, full = _Bare(), _Full()
    caps = (a.ReportsJointRanges, a.ReportsOwner, a.WarmsUp, a.HasWatchdog, a.HasStatePeriod, a.HasClock)
    assert not any(isinstance(bare, c) for c in caps)
    assert all(isinstance(full, c) for c in caps)
    assert a.clock_of(bare) is None and a.watchdog_of(bare) is None and a.state_period_of(bare) is None
    assert a.clock_of(full) is full.clock and a.watchdog_of(full) == 0.2 and a.state_period_of(full) == 0.008
    full.clock = None  # a real controller: runs keep their own clock
    assert a.clock_of(full) is None


def test_a_run_quotes_the_device_names_of_its_calls_or_neutral_words():
    named = _Full()
    named.command_names = a.CommandNames(servo_end="EndStream")  # type: ignore[attr-defined]
    assert a.command_names(named).servo_end == "EndStream" and a.command_names(named).disable == "disable"
    assert a.command_names(_Bare()) is a.NEUTRAL_NAMES
