"""The vendor's own Python SDK (fairino.Robot.RPC, V3.9.x), unchanged, against the simulator.

Skipped unless SERVOTOOL_FAIRINO_SDK names a directory holding the SDK's `fairino` package (or the package
directory itself). The SDK hard-codes ports 20003/20005/20007, so the simulator binds those on loopback; the
test is skipped when they are taken. The SDK runs in a child process so its threads and prints stay there.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from servotool.devices.fairino.sim import FairinoSim, SimError

SDK_ENV = "SERVOTOOL_FAIRINO_SDK"

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, sys.argv[1])
    from fairino import Robot

    out = {}
    robot = Robot.RPC("127.0.0.1")
    out["connected"] = bool(Robot.RPC.is_connect)
    out["enable"] = robot.RobotEnable(1)
    out["mode"] = robot.Mode(0)
    err, pos = robot.GetActualJointPosDegree()
    out["pos_err"], out["pos"] = err, pos
    out["in_window"] = robot.ServoJ(pos, [0, 0, 0, 0], cmdT=0.008)
    time.sleep(0.35)
    out["servo_start"] = robot.ServoMoveStart()
    q = list(pos)
    rpc_codes = []
    for _ in range(100):
        q[0] += 0.02
        rpc_codes.append(robot.ServoJ(q, [0, 0, 0, 0], cmdT=0.008))
        time.sleep(0.008)
    udp_codes = []
    for _ in range(100):
        q[0] += 0.02
        udp_codes.append(robot.ServoJ(q, [0, 0, 0, 0], cmdT=0.008, cmdType=1))
        time.sleep(0.008)
    time.sleep(0.3)
    out["rpc_codes"], out["udp_codes"] = sorted(set(rpc_codes)), sorted(set(udp_codes))
    out["target"] = q[0]
    out["after"] = robot.GetActualJointPosDegree()[1][0]
    out["state_pos"] = robot.robot_state_pkg.jt_cur_pos[0]
    out["state_enabled"] = robot.robot_state_pkg.rbtEnableState
    out["state_last_target"] = robot.robot_state_pkg.lastServoTarget[0]
    out["codes_ok"] = list(robot.GetRobotErrorCode()[1])
    q[0] += 30.0
    out["giant"] = robot.ServoJ(q, [0, 0, 0, 0], cmdT=0.008)
    time.sleep(0.1)
    out["codes_fault"] = list(robot.GetRobotErrorCode()[1])
    out["reset"] = robot.ResetAllError()
    time.sleep(0.1)
    out["codes_reset"] = list(robot.GetRobotErrorCode()[1])
    out["servo_end"] = robot.ServoMoveEnd()
    robot.CloseRPC()
    print("RESULT " + json.dumps(out))
    """
)


def sdk_dir() -> pathlib.Path:
    raw = os.environ.get(SDK_ENV)
    if not raw:
        pytest.skip(f"{SDK_ENV} not set (a directory holding the vendor SDK's fairino package)")
    path = pathlib.Path(raw)
    if (path / "Robot.py").is_file():
        path = path.parent
    if not (path / "fairino" / "Robot.py").is_file():
        pytest.skip(f"{SDK_ENV}={raw} holds no fairino/Robot.py")
    return path


def test_vendor_sdk_connects_enables_streams_and_reads(tmp_path):
    path = sdk_dir()
    try:
        sim = FairinoSim("fr3", host="127.0.0.1", overrides={"enable_ms": 250}).start()
    except SimError as exc:
        pytest.skip(f"default FAIRINO ports unavailable: {exc}")
    try:
        script = tmp_path / "sdk_check.py"
        script.write_text(SCRIPT)
        proc = subprocess.run(
            [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
    finally:
        sim.stop()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["connected"] and out["enable"] == 0 and out["mode"] == 0 and out["pos_err"] == 0
    assert out["pos"] == pytest.approx([0, -90, 90, -90, -90, 0], abs=0.05)
    assert out["in_window"] == 101
    assert out["servo_start"] == 0 and out["rpc_codes"] == [0] and out["udp_codes"] == [0]
    assert out["after"] == pytest.approx(out["target"], abs=0.05)
    assert out["state_pos"] == pytest.approx(out["target"], abs=0.05)  # parsed from the 1318-byte frames
    assert out["state_last_target"] == pytest.approx(out["target"], abs=1e-3)
    assert out["state_enabled"] == 1 and out["codes_ok"] == [0, 0]
    assert out["giant"] == 14 and out["codes_fault"] == [1, 23]
    assert out["reset"] == 0 and out["codes_reset"] == [0, 0] and out["servo_end"] == 0
