"""`servotool sim franka` standalone: it prints the address to dial, pylibfranka connects to it unchanged,
and a client that goes away (mid-motion, or after sending garbage, or resetting the connection) leaves no
traceback: the simulator serves the next one and stops cleanly on SIGTERM."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess

import pytest

from tests.sim_process import start_sim_process

pf = pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
pytestmark = pytest.mark.timeout(60)


def _start() -> tuple[subprocess.Popen, dict]:
    return start_sim_process("franka")


def test_clients_that_go_away_leave_no_traceback_and_the_next_one_is_served():
    proc, info = _start()
    try:
        address = info["address"]
        assert info["url"] == f"franka://{address}?model=fr3"
        # garbage, then a reset: the session ends, the simulator does not
        for data in (b"\xff" * 40, b"\x00\x01"):
            s = socket.create_connection((address, 1337), timeout=5)
            s.sendall(data)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        robot = pf.Robot(address, pf.RealtimeConfig.kIgnore)
        q = list(robot.read_once().q)
        control = robot.start_joint_position_control(pf.ControllerMode.JointImpedance)
        for _ in range(5):
            control.readOnce()
            control.writeOnce(pf.JointPositions(q))
        del control, robot  # gone mid-motion (libfranka's control stops the motion on its way out)
        robot = pf.Robot(address, pf.RealtimeConfig.kIgnore)
        assert robot.read_once().robot_mode == pf.RobotMode.Idle
        del robot
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        err = proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0, err
    assert "Traceback" not in err and "simulator stopped" in err


def test_an_address_it_cannot_take_is_one_refusal_not_a_traceback():
    from servotool.devices.franka.serve import start
    from servotool.devices.url import DeviceURLError
    from servotool.errors import DeviceError

    with pytest.raises(DeviceURLError, match="not a loopback address"):
        start("franka-fr3", {}, address="10.0.0.1")
    with pytest.raises(DeviceURLError, match="runs in real time"):
        start("franka-fr3", {"clock": "sim"})
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        held.bind(("127.0.0.250", 1337))
        held.listen(1)
        with pytest.raises(DeviceError, match=r"cannot bind 127\.0\.0\.250 port 1337"):
            start("franka-fr3", {}, address="127.0.0.250")
    finally:
        held.close()


def test_a_scheduled_reflex_reaches_the_standalone_simulator(monkeypatch):
    # the keys `sim franka --help` lists are all taken: reflex and reflex_at schedule the reflex
    from servotool.devices.franka import serve, sim

    asked: dict = {}
    real = sim.start_sim

    def spy(*args, **kwargs):
        asked.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(sim, "start_sim", spy)
    served = serve.start("franka-fr3", {"reflex": "cartesian_reflex", "reflex_at": "0.5"})
    served.stop()
    assert asked["reflex"] == ("cartesian_reflex", 0.5)
