"""`servotool sim fairino`: help, option errors, and the simulator run standalone in its own process."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
import xmlrpc.client

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.devices.arm import ConnectionLost
from servotool.devices.registry import open_arm
from tests.sim_process import start_sim_process

FREE_PORTS = ["--rpc-port", "0", "--cnde-port", "0", "--udp-port", "0"]
runner = CliRunner()


def test_help_lists_the_options():
    result = runner.invoke(app, ["sim", "fairino", "--help"])
    assert result.exit_code == 0
    for option in (
        "--profile",
        "--host",
        "--rpc-port",
        "--cnde-port",
        "--udp-port",
        "--lag-ms",
        "--tau-ms",
        "--noise-deg",
        "--state-ms",
        "--seed",
        "--param",
        "--json",
    ):
        assert option in result.output
    group = runner.invoke(app, ["sim", "--help"])
    assert group.exit_code == 0 and "fairino" in group.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--param", "bogus=1"], "unknown simulator parameter"),
        (["--param", "lag_ms"], "expected key=value"),
        (["--profile", "fr9"], "Invalid value for '--profile'"),
        (["--lag-ms", "-5"], "must not be negative"),
        (["--rpc-port", "70000"], "--rpc-port"),  # a port past 65535 was a traceback
        (["--udp-port", "-1"], "--udp-port"),
        (["--duration", "-1"], "--duration"),  # refused as the bus simulators refuse it, not a 0 s serve
        (["--duration", "nan"], "--duration"),
    ],
)
def test_bad_options_give_one_error_line(args, message):
    result = runner.invoke(app, ["sim", "fairino", *FREE_PORTS, *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_short_run_prints_its_address_as_json():
    args = ["--json", "--duration", "0.2", "--lag-ms", "50", "--param", "seed=3"]
    result = runner.invoke(app, ["sim", "fairino", *FREE_PORTS, *args])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["lag_ms"] == 50 and info["seed"] == 3 and info["profile"] == "fr3"
    assert all(info[k] > 0 for k in ("rpc_port", "cnde_port", "udp_port"))


def test_short_run_prints_a_panel():
    result = runner.invoke(app, ["sim", "fairino", *FREE_PORTS, "--profile", "fr20", "--duration", "0.1"])
    assert result.exit_code == 0
    assert "FAIRINO controller simulator" in result.stdout and "111 ms" in result.stdout
    assert "120, 120, 120, 180, 180, 180 deg/s" in result.stdout


def read_until(pipe, marker: bytes, timeout: float = 20.0) -> bytes:
    """What the pipe gave until `marker` appeared in it (or the deadline passed)."""
    out, deadline = b"", time.monotonic() + timeout
    while marker not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([pipe], [], [], 0.1)
        if ready:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            out += chunk
    return out


def start_standalone(*args: str) -> tuple[subprocess.Popen, dict]:
    return start_sim_process("fairino", *FREE_PORTS, *args, timeout_s=20.0)


@pytest.mark.slow
def test_standalone_simulator_serves_the_client_and_a_kill_is_a_connection_lost_within_100_ms():
    proc, info = start_standalone("--profile", "simmachine", "--param", "enable_ms=50")
    try:
        arm = open_arm(info["url"], now=time.perf_counter)
        assert not arm.simulated  # to the client this is a controller at an address
        arm.enable(wait_window=False)
        assert arm.warm_up(cmd_period_s=0.01, timeout_s=3.0) < 1.0
        q = list(arm.latest_state().q)
        q[5] += 5.0
        for _ in range(10):
            arm.servo_j(q, 0.01)
            time.sleep(0.01)  # paces the stream at 100 Hz
        deadline = time.monotonic() + 10
        while abs(arm.latest_state().q[5] - q[5]) > 0.05 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert arm.latest_state().q[5] == pytest.approx(q[5], abs=0.05)
        arm.poll_states()
        t_kill = time.perf_counter()
        proc.kill()
        while True:
            try:
                arm.servo_j(q, 0.01)
                arm.poll_states()
            except ConnectionLost as exc:
                assert "connection lost" in str(exc)
                break
            assert time.perf_counter() - t_kill < 0.5
            time.sleep(0.001)
        # immediate on EOF, else the 100 ms silence rule; the slack is for a loaded machine
        assert time.perf_counter() - t_kill < 0.3
        arm.close()
    finally:
        proc.kill()
        proc.wait(5)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_standalone_simulator_logs_faults_and_stops_cleanly(sig):
    proc, info = start_standalone("--param", "enable_ms=0", "--param", "noise_deg=0")
    try:
        rpc = xmlrpc.client.ServerProxy(f"http://{info['host']}:{info['rpc_port']}")
        assert rpc.RobotEnable(1) == 0
        err, *q = rpc.GetActualJointPosDegree(1)
        assert rpc.ServoJ(q, [0] * 4, 0, 0, 0.01, 0, 0, 0) == 0
        q[0] += 30
        assert rpc.ServoJ(q, [0] * 4, 0, 0, 0.01, 0, 0, 0) == 14
        logged = read_until(proc.stderr, b"axis 1 command speed")  # the fault is logged before the signal
        proc.send_signal(sig)
        assert proc.wait(10) == 0
        err_text = (logged + proc.stderr.read()).decode()
        assert "fault" in err_text and "axis 1 command speed" in err_text and "simulator stopped" in err_text
    finally:
        proc.kill()
        proc.wait(5)
        proc.stdout.close()
        proc.stderr.close()
