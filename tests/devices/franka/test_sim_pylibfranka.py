"""pylibfranka against the simulator, unchanged: connect, read, a short joint position motion, reflexes."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator

import pytest

pf = pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")

# pylibfranka against the simulator in real time at 1 kHz: minutes of load elsewhere can cost it cycles
pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]


@pytest.fixture
def sim_address() -> Iterator[str]:
    yield from _sim()


@pytest.fixture
def lockstep_address() -> Iterator[str]:
    # the simulator waits for each answer: a late wake-up of this host is no lost cycle, so a motion's
    # outcome is the protocol's, not the machine's load
    yield from _sim("0", "0", "", "lockstep")


@pytest.fixture
def lossy_address() -> Iterator[str]:
    yield from _sim("0.3", "7")


def _sim(*args: str) -> Iterator[str]:
    # a process of its own: pylibfranka holds the interpreter lock while it waits on the robot
    proc = subprocess.Popen(
        [sys.executable, "-m", "servotool.devices.franka.sim", "franka-fr3", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def _robot(address: str):
    return pf.Robot(address, pf.RealtimeConfig.kIgnore)


def test_connect_and_read_once(sim_address):
    robot = _robot(sim_address)
    state = robot.read_once()
    assert len(list(state.q)) == 7 and state.robot_mode == pf.RobotMode.Idle
    assert list(state.q_d) == pytest.approx(list(state.q))


def test_a_short_joint_position_motion_finishes(lockstep_address):
    _short_motion(lockstep_address)


@pytest.mark.skipif(
    "PREEMPT_RT" not in __import__("platform").version(),
    reason="a 1 kHz motion in real time needs a PREEMPT_RT kernel: elsewhere one late answer is a reflex",
)
def test_a_short_joint_position_motion_finishes_in_real_time(sim_address):
    _short_motion(sim_address)


def _short_motion(address: str) -> None:
    robot = _robot(address)
    robot.set_collision_behavior([20.0] * 7, [20.0] * 7, [10.0] * 6, [10.0] * 6)
    q0 = list(robot.read_once().q)
    control = robot.start_joint_position_control(pf.ControllerMode.JointImpedance)
    n = 400
    for i in range(n):
        state, _ = control.readOnce()
        q = list(q0)
        q[3] = q0[3] + 0.002 * (1 - math.cos(math.pi * min(i, n - 100) / (n - 100))) / 2
        command = pf.JointPositions(q)
        command.motion_finished = i == n - 1
        control.writeOnce(command)
    state = robot.read_once()
    assert state.robot_mode == pf.RobotMode.Idle
    assert state.q[3] == pytest.approx(q0[3] + 0.002, abs=2e-4)


def test_a_discontinuous_command_raises_the_reflex_by_name(sim_address):
    robot = _robot(sim_address)
    q0 = list(robot.read_once().q)
    control = robot.start_joint_position_control(pf.ControllerMode.JointImpedance)
    with pytest.raises(pf.ControlException, match="joint_motion_generator_velocity"):
        for _ in range(50):
            control.readOnce()
            q = list(q0)
            q[0] += 0.01  # 10 rad/s in one cycle
            control.writeOnce(pf.JointPositions(q))
    state = robot.read_once()
    assert state.robot_mode == pf.RobotMode.Reflex
    assert (
        state.current_errors.joint_motion_generator_velocity_discontinuity
        or state.current_errors.joint_motion_generator_velocity_limits_violation
    )
    robot.automatic_error_recovery()
    assert robot.read_once().robot_mode == pf.RobotMode.Idle


def test_lost_packets_lower_the_success_rate(lossy_address):
    robot = _robot(lossy_address)
    q0 = list(robot.read_once().q)
    control = robot.start_joint_position_control(pf.ControllerMode.JointImpedance)
    rates = []
    for i in range(150):
        state, _ = control.readOnce()
        rates.append(state.control_command_success_rate)
        command = pf.JointPositions(q0)
        command.motion_finished = i == 149
        control.writeOnce(command)
    assert 0.3 < rates[-2] < 0.95
