"""The Arm interface as the FAIRINO client implements it: joint ranges, busy evidence, error classes."""

from __future__ import annotations

import pytest

from servotool.devices.arm import Arm, StateFrame
from servotool.devices.fairino.busy import busy_evidence
from servotool.devices.fairino.client import soft_limits_from_answer
from servotool.devices.fairino.codes import motion_state
from servotool.devices.fairino.profiles import FR3_RANGES, FR20_RANGES, ProfileError, with_overrides
from servotool.devices.fairino.protocol import CndeFrameError, FairinoFrameError, UdpFrameError
from servotool.devices.fairino.sim import SimError
from servotool.errors import DeviceError, ProtocolError, SettingsError

POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)


def test_error_classes_join_the_family():
    assert issubclass(CndeFrameError, FairinoFrameError) and issubclass(UdpFrameError, FairinoFrameError)
    assert issubclass(FairinoFrameError, ProtocolError)
    assert issubclass(ProfileError, SettingsError) and issubclass(SimError, DeviceError)


def test_ranges_come_from_the_controller_and_match_the_profile(open_sim):
    arm = open_sim("sim:fr20")
    assert isinstance(arm, Arm)
    assert arm.joint_ranges == FR20_RANGES and arm.joint_ranges_source == "controller"
    arm = open_sim("sim:fr3?joint_ranges=-170,170,-260,80,-140,140,-260,80,-170,170,-170,170")
    assert arm.joint_ranges[2] == (-140.0, 140.0)


def test_profile_ranges_are_the_datasheet_ones():
    assert FR3_RANGES[0] == (-175.0, 175.0) and FR3_RANGES[1] == (-265.0, 85.0)
    assert FR20_RANGES[2] == (-160.0, 160.0)
    with pytest.raises(ProfileError):
        with_overrides("fr3", {"joint_ranges": "1,2,3"})
    with pytest.raises(ProfileError):
        with_overrides("fr3", {"joint_ranges": [(10.0, -10.0)] * 6})


@pytest.mark.parametrize(
    "answer,ok",
    [
        ([0, *[v for lh in FR3_RANGES for v in lh]], True),
        ([0, [v for lh in FR3_RANGES for v in lh]], True),
        ([14], False),
        ([0, 1, 2], False),
        ([0, *([10.0, -10.0] * 6)], False),
        ([0, *(["x"] * 12)], False),
        ("garbage", False),
    ],
)
def test_soft_limit_answers(answer, ok):
    got = soft_limits_from_answer(answer)
    assert (got == FR3_RANGES) if ok else got is None


def _frame(t, q=POSE, cmd=None, qd=None, servo=None, state=None):
    return StateFrame(
        t,
        tuple(q),
        qd=qd,
        cmd_num=cmd,
        servo_active=servo,
        motion=motion_state(state) if state is not None else None,
    )


def test_busy_evidence():
    still = [_frame(k * 0.008, cmd=5, qd=(0.0,) * 6, servo=False, state=1) for k in range(10)]
    assert busy_evidence(still) is None
    streaming = [_frame(k * 0.008, cmd=5 + k, servo=True) for k in range(10)]
    why = busy_evidence(streaming)
    assert why and "another client is streaming ServoJ (9 commands" in why and "servo mode" in why
    assert busy_evidence(streaming, own_commands=9, own_servo=True) is None
    moving = [_frame(k * 0.008, q=(k * 0.1, *POSE[1:])) for k in range(10)]
    assert "J1 travelled" in (busy_evidence(moving) or "")
    fast = [_frame(0.0, qd=(0.0, 0.0, 12.0, 0.0, 0.0, 0.0))]
    assert "J3 at +12.0 deg/s" in (busy_evidence(fast) or "")
    assert busy_evidence([]) is None


def test_a_fresh_simulator_is_free(open_sim):
    arm = open_sim("sim:fr3")
    assert arm.busy_reason() is None
    assert arm.latest_state().servo_active is False
