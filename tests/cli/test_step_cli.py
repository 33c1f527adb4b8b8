"""`servotool step` end to end: shaped by default, the raw runaway on the simulator, the raw-step gate."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


def test_shaped_step_json(tmp_path):
    res = runner.invoke(app, ["step", "--size", "10", "--steps", "2", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    result = out["analysis"]["result"]
    assert result["shaped"] and result["runaways"] == 0 and result["total_rejects"] == 0
    assert all(250 < s["arrive_ms"] < 360 for s in result["steps"])
    assert out["guard"]["margin_deg"] > 0


def test_raw_step_runs_away_exits_non_zero_and_says_so(tmp_path):
    res = runner.invoke(
        app, ["step", "--raw", "--size", "2.5", "--steps", "1", "--rpc", "--out", str(tmp_path), "--plot"]
    )
    assert res.exit_code == 1
    assert "runaway" in res.stdout
    assert "run ended early" in res.stderr and "main 1 sub 32" in res.stderr
    assert list(tmp_path.glob("step_*.png"))
    analyzed = runner.invoke(app, ["analyze", str(tmp_path), "--json"])
    entry = json.loads(analyzed.stdout)["files"][0]
    assert not entry["complete"] and entry["result"]["steps"][0]["verdict"] == "runaway"


@pytest.fixture
def real_looking_arm():
    """A simulator in its own process, reached through a fairino:// address: not 'simulated' to the client."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "servotool",
            "sim",
            "fairino",
            "--json",
            "--rpc-port",
            "0",
            "--cnde-port",
            "0",
            "--udp-port",
            "0",
            "--profile",
            "simmachine",
            "--duration",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    text, deadline = "", time.monotonic() + 20
    info = None
    while info is None and time.monotonic() < deadline:
        text += proc.stdout.readline()
        try:
            info = json.loads(text)
        except json.JSONDecodeError:
            continue
    assert info is not None, text
    yield (
        f"fairino://127.0.0.1?rpc_port={info['rpc_port']}&cnde_port={info['cnde_port']}"
        f"&udp_port={info['udp_port']}"
    )
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def terminal(monkeypatch):
    """A pseudo-terminal standing in for /dev/tty: `type(text)` puts keystrokes on it."""
    import os

    import servotool.cli.confirm as confirm

    master, slave = os.openpty()
    monkeypatch.setattr(confirm, "TTY", os.ttyname(slave))

    def type_(text: str) -> None:
        os.write(master, text.encode())

    yield type_
    os.close(master)
    os.close(slave)


def test_raw_steps_on_a_real_address_need_test_arm_and_the_typed_phrase(tmp_path, real_looking_arm, terminal):
    base = [
        "step",
        "--robot",
        real_looking_arm,
        "--raw",
        "--size",
        "0.5",
        "--steps",
        "1",
        "--out",
        str(tmp_path),
    ]
    res = runner.invoke(app, base)
    assert res.exit_code == 2 and "--test-arm" in res.stderr
    terminal("yes\n")
    res = runner.invoke(app, [*base, "--test-arm"])
    assert res.exit_code == 2 and "confirmation" in res.stderr
    # the phrase from a pipe is never an answer: only the terminal counts
    terminal("no\n")
    res = runner.invoke(app, [*base, "--test-arm"], input="RAW 0.5 J1\n")
    assert res.exit_code == 2 and "confirmation" in res.stderr
    assert not list(tmp_path.glob("*.csv"))  # nothing was streamed
    terminal("RAW 0.5 J1\n")
    res = runner.invoke(app, [*base, "--test-arm", "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["run"]["status"] == "complete" and not out["analysis"]["simulated"]


def test_raw_step_confirmation_from_a_pipe_without_a_terminal_is_refused(tmp_path, real_looking_arm):
    """`echo "RAW 10 J1" | servotool step --raw --test-arm ...` with no terminal: refused, nothing sent."""
    res = subprocess.run(
        [sys.executable, "-m", "servotool", "step", "--robot", real_looking_arm, "--raw", "--test-arm",
         "--size", "0.5", "--steps", "1", "--out", str(tmp_path)],
        input="RAW 0.5 J1\n", capture_output=True, text=True, start_new_session=True, timeout=120,
    )
    assert res.returncode == 2, res.stderr
    assert "typed on a terminal" in res.stderr and "Traceback" not in res.stderr
    assert not list(tmp_path.glob("*.csv"))
