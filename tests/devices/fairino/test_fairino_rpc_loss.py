"""A controller whose XML-RPC port closes during a run, while its state stream and UDP port go on: a lost
link like a lost state stream (exit 3, `interrupted: connection lost`, the stop tried and said unconfirmed,
the arm said to be possibly still enabled and in servo mode), never "complete" with notes."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.clock import FakeClock
from servotool.devices.registry import open_arm
from servotool.io.csvlog import read_csv
from servotool.runs.arm.step import StepSettings, run_step

runner = CliRunner()
LEFT = "the arm may still be enabled and in servo mode"


@pytest.mark.parametrize("rpc", [False, True], ids=["udp", "rpc"])
def test_the_command_port_closing_mid_step_is_a_lost_link(tmp_path, rpc):
    # in simulated time: the port closes once 90 setpoints were taken (warm-up and pre-hold included),
    # inside the first step of two
    robot = "sim:fr3?clock=sim&rpc_close_after=90"
    args = ["step", "--robot", robot, "--steps", "2", "--out", str(tmp_path), *(["--rpc"] if rpc else [])]
    res = runner.invoke(app, args)
    assert res.exit_code == 3, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    csv = next(tmp_path.glob("step_*.csv"))
    end = csv.read_text().rstrip().splitlines()[-1]
    assert end.startswith("# end: interrupted: connection lost:"), end
    assert "XML-RPC" in end and LEFT in end and "the stop could not be confirmed: ServoMoveEnd" in end, end
    verdict = " ".join(res.stderr.split())  # however rich wrapped it
    assert "run ended early: connection lost:" in verdict and LEFT in verdict, res.stderr
    _, df = read_csv(csv)
    assert (df["event"] == "stop").sum() == 1  # found mid-run: the stream stopped there, not at its end
    assert (df["event"] == "cmd").sum() < 120  # of 170


def test_the_command_port_closing_as_the_stream_ends_is_a_lost_link_too(tmp_path):
    """Closed at the last tick: the servo end finds it, and the run is recorded as lost, not complete."""
    clock = FakeClock()
    arm = open_arm("sim:fr3?enable_ms=300", clock=clock)
    ticks = []

    def close_at_end(info):
        ticks.append(info.k)
        if info.k == info.n - 1:
            arm.sim.close_rpc()

    try:
        run = run_step(
            arm,
            StepSettings(steps=1, hold_s=0.3, realtime=False),
            clock=clock,
            out_dir=tmp_path,
            on_tick=close_at_end,
        )
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    assert run.outcome.status == "connection-lost" and run.outcome.exit_code == 3
    assert run.outcome.ticks_sent == ticks[-1] + 1  # every tick of the plan went out
    end = next(tmp_path.glob("step_*.csv")).read_text().rstrip().splitlines()[-1]
    assert end.startswith("# end: interrupted: connection lost:") and LEFT in end, end
    assert snap.enabled and snap.servo_active  # what the verdict warns of: nothing could end it


def test_an_idle_command_connection_the_controller_closed_is_not_a_loss():
    clock = FakeClock()
    arm = open_arm("sim:fr3?enable_ms=300", clock=clock)
    try:
        arm.enable()
        arm.sim._rpc.drop_connections()  # the port stays open: an idle keep-alive connection timed out
        clock.sleep(0.05)
        arm.poll_states()
        assert arm.connected
        assert arm.servo_start() == 0  # the next call opens another connection
    finally:
        arm.close()


def _step_losing_rpc(tmp_path, url: str):
    """A two-step run whose XML-RPC port closes mid-step (sim:fr3 `rpc_close_after`), in lock-step: (outcome,
    the controller's state at the end, the CSV's rows)."""
    clock = FakeClock()
    arm = open_arm(url, clock=clock)
    try:
        run = run_step(arm, StepSettings(steps=2, hold_s=0.3, realtime=False), clock=clock, out_dir=tmp_path)
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    _, df = read_csv(next(tmp_path.glob("step_*.csv")))
    return run.outcome, snap, df


def test_after_losing_xml_rpc_the_braked_stop_still_goes_out_over_udp(tmp_path):
    out, snap, df = _step_losing_rpc(tmp_path, "sim:fr3?enable_ms=300&rpc_close_after=90")
    assert out.status == "connection-lost" and out.exit_code == 3
    assert any("the braked stop went out over UDP ServoJ" in n for n in out.notes), out.notes
    cmds = df[df["event"] == "cmd"]
    stop_rows = cmds[cmds["phase"].isin(["stop", "rest"])]
    assert out.stop_ticks == len(stop_rows) > 0
    # the controller took the stop's ticks: its last accepted setpoint is the stop's last one, and it counted
    # at least every setpoint of the CSV
    last = stop_rows.iloc[-1][[f"q{i}" for i in range(1, 7)]].to_numpy(float)
    assert np.allclose(np.asarray(snap.last_target, dtype=float), last, atol=1e-3)  # as the wire rounds it
    assert snap.cmd_num >= len(cmds)
    assert out.at_rest is True and np.abs(np.asarray(snap.qd, dtype=float)).max() < 0.5  # seen at rest


def test_over_xml_rpc_setpoints_there_is_no_channel_left_for_a_stop(tmp_path):
    out, _, _ = _step_losing_rpc(tmp_path, "sim:fr3?enable_ms=300&rpc_close_after=90&transport=rpc")
    assert out.status == "connection-lost" and out.stop_ticks == 0 and out.at_rest is None
    assert not any("braked stop went out" in n for n in out.notes)
