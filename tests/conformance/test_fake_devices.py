"""The fake arm and bus themselves: what they compute, what they refuse, and their failure modes."""

from __future__ import annotations

import math

import pytest

from servotool.clock import FakeClock
from servotool.devices.arm import Reply
from servotool.devices.fake.arm import FakeArm
from servotool.devices.fake.bus import FakeBus
from servotool.devices.registry import DeviceURLError, open_arm, open_bus, url_facts
from servotool.errors import ConnectionLost, DeviceError

POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)


def test_the_arm_reaches_each_setpoint_its_lag_after_it_was_sent():
    clock = FakeClock()
    arm = FakeArm(clock, lag_s=0.05, state_s=0.01)
    clock.advance(0.1)
    arm.servo_j((10.0, *POSE[1:]), 0.02)  # after a pause: one command period's motion
    for k in range(1, 5):
        clock.advance(0.01)
        arm.servo_j((10.0 + 2.0 * k, *POSE[1:]), 0.01)  # then a steady stream at 200 deg/s
    clock.advance(0.1)
    frames = arm.poll_states()
    assert [round(f.t, 9) for f in frames] == [round(0.01 * k, 9) for k in range(25)]
    j1 = [f.q[0] for f in frames]
    # held until one period before the first setpoint, lag_s later
    assert j1[:14] == pytest.approx([0.0] * 14, abs=1e-9)
    assert j1[14:20] == pytest.approx([5.0, 10.0, 12.0, 14.0, 16.0, 18.0])
    assert frames[-1].q == (18.0, *POSE[1:])
    assert arm.poll_states() == [] and arm.latest_state() == frames[-1]


def test_on_a_host_clock_the_frames_due_come_in_at_the_next_read():
    now = [100.0]
    arm = FakeArm(now=lambda: now[0], state_s=0.008)
    assert arm.clock is None and arm.latest_state() is not None  # the pose read as the link opened
    now[0] += 0.02
    assert [round(f.t - 100.0, 9) for f in arm.poll_states()] == [0.0, 0.008, 0.016]


@pytest.mark.parametrize(
    "q", [POSE[:5], (*POSE, 0.0), (math.nan, *POSE[1:]), (math.inf, *POSE[1:]), (181.0, *POSE[1:])]
)
def test_the_arm_refuses_a_setpoint_it_cannot_take_and_nothing_moves(q):
    clock = FakeClock()
    arm = FakeArm(clock)
    with pytest.raises(ValueError):
        arm.servo_j(q, 0.01)
    clock.advance(0.2)
    assert arm.latest_state().q == POSE and arm.taken == 0


def test_the_arm_loses_its_link_after_the_setpoints_it_was_told():
    arm = open_arm("sim:fake-arm?clock=sim&lose_after=3")
    clock = arm.clock
    for _ in range(3):
        clock.advance(0.01)
        arm.servo_j(POSE, 0.01)
    assert arm.poll_states()  # received before the loss: still handed out once
    with pytest.raises(ConnectionLost, match="after 3 setpoints"):
        arm.poll_states()
    with pytest.raises(ConnectionLost):
        arm.servo_j(POSE, 0.01)
    for call in (arm.servo_end, arm.disable, arm.latest_state):
        with pytest.raises(ConnectionLost):
            call()
    arm.close()
    arm.close()


def test_a_silent_state_stream_is_a_lost_link_past_the_watchdog():
    clock = FakeClock()
    arm = FakeArm(clock, silence_s=0.1)
    arm.stall = (0.05, None)
    clock.advance(0.1)
    assert arm.poll_states()
    clock.advance(0.04)
    assert arm.poll_states() == []  # 92 ms without a frame: not yet
    clock.advance(0.02)
    with pytest.raises(ConnectionLost, match="no state frame for 112 ms"):
        arm.poll_states()


def test_the_arm_says_when_another_owner_holds_it_and_answers_setpoints_when_asked():
    with open_arm("sim:fake-arm?busy=1&reply=1&clock=sim") as arm:
        assert "another client" in arm.busy_reason()
        assert isinstance(arm.servo_j(POSE, 0.01), Reply)
    with open_arm("sim:fake-arm", transport="rpc") as arm:
        assert arm.busy_reason() is None and isinstance(arm.servo_j(POSE, 0.01), Reply)


def test_a_closed_arm_refuses_every_call():
    arm = FakeArm(FakeClock())
    arm.close()
    with pytest.raises(DeviceError, match="closed"):
        arm.servo_j(POSE, 0.01)


def test_the_facts_of_a_fake_arm_are_the_arm_it_opens():
    url = "sim:fake-arm?joints=3&lag_ms=20&state_ms=4&clock=sim"
    facts = url_facts(url)
    with open_arm(url) as arm:
        assert (arm.n_joints, arm.joint_ranges, arm.joint_speed_limits) == (
            facts.n_joints,
            facts.joint_ranges,
            facts.joint_speed_limits,
        )
        assert arm.nominal_lag_ms == pytest.approx(20.0) and arm.state_period_s == pytest.approx(0.004)


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("joints=0", "joints='0'"),
        ("joints=13", "1..12"),
        ("lag_ms=-1", "lag_ms"),
        ("lag_ms=nan", "lag_ms"),
        ("state_ms=20&silence_ms=30", "two state periods"),
        ("busy=maybe", "not a boolean"),
        ("lose_after=1.5", "an integer"),
        ("speed=1", "unknown parameter"),
        ("clock=fast", "want clock=host"),
    ],
)
def test_a_fake_arm_url_it_cannot_take_is_refused_before_it_opens(query, match):
    with pytest.raises(DeviceURLError, match=match):
        url_facts(f"sim:fake-arm?{query}")
    with pytest.raises(DeviceURLError, match=match):
        open_arm(f"sim:fake-arm?{query}")


def test_the_bus_moves_each_servo_in_a_straight_line_over_the_duration():
    clock = FakeClock()
    bus = FakeBus(clock, servos=2)
    bus.move({1: 3048}, 1000)
    clock.advance(0.25)
    assert bus.read_pose() == {1: 2298, 2: 2048}
    clock.advance(1.0)
    assert bus.read_position(1) == 3048
    bus.move({1: 2048}, 1000)
    clock.advance(0.5)
    bus.hold()
    clock.advance(1.0)
    assert bus.read_position(1) == 2548 and bus.read_torque(1) is True
    bus.torque_off(1)
    assert bus.read_torque(1) is False and bus.read_position(1) == 2548


@pytest.mark.parametrize(
    ("targets", "duration"),
    [
        ({}, 100),
        ({5: 100}, 100),
        ({1: -1}, 100),
        ({1: 4096}, 100),
        ({1: 10.5}, 100),
        ({1: True}, 100),
        ({1: 100}, -1),
        ({1: 100}, 65536),
    ],
)
def test_the_bus_refuses_a_move_it_cannot_take_and_nothing_moves(targets, duration):
    clock = FakeClock()
    bus = FakeBus(clock)
    with pytest.raises(ValueError):
        bus.move(targets, duration)
    clock.advance(1.0)
    assert set(bus.read_pose().values()) == {2048} and bus.commands == 0


def test_silent_servos_never_answer_nor_move_and_a_lost_link_silences_all():
    with open_bus("sim:fake-bus?servos=3&silent=2&lose_after=2&clock=sim") as bus:
        assert bus.read_pose() == {1: 2048, 2: None, 3: 2048}
        bus.move({1: 2100, 2: 2100}, 0)
        assert bus.read_pose() == {1: 2100, 2: None, 3: 2048}
        bus.hold()  # the second command: taken, then the link is down
        assert bus.read_pose() == {1: None, 2: None, 3: None}
        assert bus.last_position == {1: 2100, 3: 2048}
        with pytest.raises(ConnectionLost, match="after 2 commands"):
            bus.hold()
    with pytest.raises(DeviceError, match="closed"):
        bus.read_position(1)


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("servos=0", "servos"),
        ("servos=33", "servos"),
        ("silent=5", "no servo 5"),
        ("silent=1,1", "twice"),
        ("lose_after=-1", "lose_after"),
        ("baud=9600", "unknown parameter"),
    ],
)
def test_a_fake_bus_url_it_cannot_take_is_refused_before_it_opens(query, match):
    with pytest.raises(DeviceURLError, match=match):
        open_bus(f"sim:fake-bus?{query}")
