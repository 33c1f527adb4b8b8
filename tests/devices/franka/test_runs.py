"""Runs on the Franka simulator in lock-step (clock=sim): pylibfranka unchanged over real sockets, the stream
paced by the robot's state cycles, the lag figures of every pass, and each way a run must refuse or end."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from servotool.analysis.lag import LagResult
from servotool.clock import FakeClock
from servotool.devices.arm import clock_of, device_cycle_of
from servotool.devices.registry import open_arm, url_facts
from servotool.errors import DeviceError
from servotool.io.csvlog import read_csv
from servotool.runs.arm.ramp import RampJob, RampSettings
from servotool.runs.arm.run import ArmRun, RunCallbacks, RunResult
from servotool.runs.arm.stream import Streamer, StreamPlan
from servotool.runs.outcome import RunStatus

pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
pytestmark = pytest.mark.timeout(120)

URL = "sim:franka-fr3?clock=sim"


def settings(url: str = URL, speeds: tuple[float, ...] = (10.0, 15.0)) -> RampSettings:
    """A short ramp of J1 at the family's pace and acceleration bound: about 3 s of robot time."""
    motion = url_facts(url).motion
    assert motion is not None and motion.fixed_period
    a = motion.a_cap
    return RampSettings(
        joint=0,
        sweep_deg=6.0,
        speeds_deg_s=speeds,
        ramp_s=1.05 * max(speeds) / a,
        settle_s=0.15,
        cmd_period_s=motion.cmd_period_s,
        a_max=a,
        realtime=False,
    )


def ramp(url: str, out: Path, on_tick=None, analyse: bool = False) -> RunResult:
    arm = open_arm(url)
    try:
        run = ArmRun(
            RampJob(settings(url)),
            clock=clock_of(arm) or FakeClock(),
            out_dir=out,
            command="test",
            callbacks=RunCallbacks(on_tick=on_tick),
            analyse=analyse,
        )
        return run.run(arm)
    finally:
        arm.close()


def header_of(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("# ") and ": " in line:
            key, _, value = line[2:].partition(": ")
            out[key] = value
    return out


def test_a_lag_ramp_in_lock_step_measures_l_the_echo_lag_and_every_pass(tmp_path):
    result = ramp(URL, tmp_path, analyse=True)
    out = result.outcome
    assert out.status == RunStatus.COMPLETE, out.reason
    assert out.lost_cycles == 0 and out.late_ticks == 0 and out.max_late_ms == 0.0
    lag = result.analysis.result if result.analysis is not None else None
    assert isinstance(lag, LagResult) and lag.fit is not None
    # the profile's joint: one dead cycle plus a critically damped joint, 2 * zeta / omega_n behind a ramp
    assert lag.fit.lag_ms == pytest.approx(1.0 + 2.0 / 350.0 * 1e3, abs=0.1)
    assert lag.midpoint is not None and abs(lag.midpoint.mean_ms - lag.fit.lag_ms) < 0.2
    measured = [p for p in lag.passes if math.isfinite(p.lag_ms)]
    assert len(measured) == 4
    for p in measured:
        assert p.echo_lag_ms == pytest.approx(1.0, abs=0.01)  # q_d is the command of the cycle before
        assert p.success_rate == 1.0 and p.lost_cycles == 0
    # tick k is the k-th state cycle: commands 1 ms apart in robot time, no sleep between them
    _, df = read_csv(result.path)
    cmd = df[df.event == "cmd"]
    np.testing.assert_allclose(np.diff(cmd.t.to_numpy(float)), 0.001, atol=1e-9)
    state = df[df.event == "state"]
    assert {"e1", "success"} <= set(df.columns) and state.success.min() == 1.0
    head = header_of(result.path)
    assert head["pacing"].startswith("by the device") and head["clock"].startswith("simulated")
    device = json.loads(head["device_settings"])
    assert device["collision_behavior"]["torque_thresholds_nm"] == [20.0, 20.0, 18.0, 18.0, 16.0, 14.0, 12.0]
    assert device["realtime"] == "not needed (a simulator)"


def test_a_packet_the_host_misses_is_a_robot_time_gap_counted_as_a_lost_cycle(tmp_path):
    arm = open_arm(f"{URL}&drop=0.05&seed=3")
    try:
        assert device_cycle_of(arm) == 0.001
        arm.enable()
        arm.servo_start()
        hold = [float(x) for x in arm.latest_state().q]
        arm.warm_up(hold)
        rows: list[dict] = []

        class Rows:
            def write(self, row: dict) -> None:
                rows.append(row)

        plan = StreamPlan(np.tile(hold, (400, 1)))  # held still: a late command changes nothing
        out = Streamer(arm, clock_of(arm), Rows(), period_s=0.001).run(plan)
        arm.servo_end()
    finally:
        arm.close()
    assert out.status == RunStatus.COMPLETE, out.reason
    dev = np.array([r["dev_t"] for r in rows if r["event"] == "state"])
    gaps = np.rint(np.diff(dev) / 0.001).astype(int) - 1
    assert out.lost_cycles == int(gaps.sum()) > 0
    assert out.late_ticks == int(np.count_nonzero(gaps)) and out.max_late_ms == pytest.approx(gaps.max())


@pytest.mark.parametrize("signum, reason", [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")])
def test_a_signal_mid_stream_ends_through_the_braked_stop_and_the_end_line(tmp_path, signum, reason):
    sent: list[int] = []

    def kill(info) -> None:
        if info.phase == "cruise" and not sent:
            sent.append(info.k)
            os.kill(os.getpid(), signum)

    result = ramp(URL, tmp_path, kill)
    out = result.outcome
    assert sent and out.status == RunStatus.INTERRUPTED and out.reason == reason, out.reason
    assert out.at_rest is True and out.stop_ticks > 0
    assert result.path.read_text().rstrip().splitlines()[-1] == f"# end: interrupted: {reason}"


def test_an_exception_of_ours_ends_through_the_braked_stop(tmp_path):
    def fail(info) -> None:
        if info.phase == "cruise":
            raise RuntimeError("a bug")

    result = ramp(URL, tmp_path, fail)
    out = result.outcome
    assert out.status == RunStatus.ERROR and "RuntimeError: a bug" in (out.reason or "")
    assert out.at_rest is True
    _, df = read_csv(result.path)
    assert len(df[(df.event == "cmd") & (df.phase == "stop")]) > 0
    assert result.path.read_text().rstrip().splitlines()[-1].startswith("# end: interrupted: internal error")


def test_nothing_moves_unless_the_robot_is_ready(tmp_path):
    with pytest.raises(DeviceError, match="robot_mode is UserStopped.*release it"):
        ramp(f"{URL}&mode=user_stopped", tmp_path)
    assert not list(tmp_path.glob("*.csv"))


def test_a_robot_that_is_not_ready_is_refused_with_exit_2(tmp_path, monkeypatch):
    # the robot answers: a pressed user stop is a refusal before anything moved, not a device lost
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    args = ["lag", "--ramp", "--robot", f"{URL}&mode=user_stopped", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "robot_mode is UserStopped" in result.stderr and "release it" in result.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_a_second_client_is_refused_with_the_robots_own_words():
    from servotool.devices.franka.client import FrankaArm

    arm = open_arm(URL)
    try:
        assert isinstance(arm, FrankaArm)
        with pytest.raises(DeviceError, match=r"refused the connection \(libfranka: .*\).*busy"):
            FrankaArm("second", arm.host, "fr3", True, True)
        assert arm.read().q  # the first one is served on
    finally:
        arm.close()


def test_the_collision_thresholds_are_the_urls_and_checked_before_anything_opens():
    from servotool.devices.registry import DeviceURLError

    for bad in ("collision_torque=1,2", "collision_force=0", "collision_torque=x", "collision_force=1e9"):
        with pytest.raises(DeviceURLError, match="collision_"):
            url_facts(f"sim:franka-fr3?{bad}")
    arm = open_arm(f"{URL}&collision_torque=30&collision_force=10,10,10,12,12,12")
    try:
        assert arm.device_settings()["collision_behavior"] == {
            "torque_thresholds_nm": [30.0] * 7,
            "force_thresholds": [10.0, 10.0, 10.0, 12.0, 12.0, 12.0],
        }
    finally:
        arm.close()


def test_a_real_arm_without_a_realtime_kernel_names_the_parameter(monkeypatch):
    from servotool.devices.franka import client

    monkeypatch.setattr(client, "realtime_kernel", lambda: False)
    with pytest.raises(DeviceError, match=r"not real-time.*PREEMPT_RT.*\?realtime=ignore"):
        open_arm("franka://127.0.0.1?model=fr3")


def test_the_lag_command_end_to_end_in_text_and_json(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    args = ["lag", "--ramp", "--robot", URL, "--sweep", "4", "--speeds", "10", "--settle-ms", "100"]
    args += ["--no-realtime", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["run"]["status"] == "complete" and doc["run"]["lost_cycles"] == 0
    passes = doc["analysis"]["result"]["passes"]
    assert [p["lost_cycles"] for p in passes] == [0, 0]
    assert all(p["echo_lag_ms"] == pytest.approx(1.0, abs=0.01) and p["success_rate"] == 1.0 for p in passes)
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "the controller's view" in text.stdout and "lost" in text.stdout
    # both tables number the passes alike, from 1
    numbered = [
        line.split()[0] for line in text.stdout.splitlines() if line.split()[1:2] in (["out"], ["back"])
    ]
    assert numbered == ["1", "2", "1", "2"], text.stdout


def _reject_nan(token: str) -> float:
    raise AssertionError(f"{token} in the JSON document")


def test_the_step_guard_counts_one_cycle_of_frame_age(tmp_path, monkeypatch):
    # the robot sends one state per cycle: the guard's margin counts a cycle's frame age, never NaN
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    args = ["step", "--robot", URL, "--size", "2", "--steps", "1", "--hold-ms", "600", "--no-realtime"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    guard = json.loads(result.stdout, parse_constant=_reject_nan)["guard"]
    assert guard["frame_age_ms"] == pytest.approx(1.0)


def test_a_reflex_latched_before_the_run_is_cleared_first_and_said(tmp_path):
    result = ramp(f"{URL}&mode=reflex", tmp_path)
    assert result.outcome.status == RunStatus.COMPLETE, result.outcome.reason
    assert any("reset a fault latched before the run (joint_reflex)" in n for n in result.notes), result.notes


def test_a_reflex_mid_run_ends_it_as_a_controller_fault_exit_1(tmp_path):
    # the robot aborts the motion (pylibfranka raises) and latches the reflex: the reflex, not a failing
    # device, ends the run, and the exit is the fault's
    result = ramp(f"{URL}&reflex=cartesian_reflex&reflex_at=1.0", tmp_path)
    outcome = result.outcome
    assert outcome.status == RunStatus.FAULT and outcome.exit_code == 1, outcome.reason
    assert outcome.reason is not None and outcome.reason.startswith("controller fault cartesian_reflex")
    end = header_of(result.path)["end"]
    assert end.startswith("interrupted: controller fault cartesian_reflex"), end


@pytest.mark.parametrize("command", [["lag", "--ramp"], ["step"]])
def test_rpc_is_refused_in_one_line_before_anything_opens(command, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    result = CliRunner().invoke(app, [*command, "--robot", URL, "--rpc", "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--rpc: a Franka takes setpoints over its real-time link only" in result.stderr
    assert "Traceback" not in result.output and not list(tmp_path.glob("*.csv"))


class SlowBuildJob(RampJob):
    """A ramp whose plan takes over a second of wall time to build (as a long plan on a loaded host does):
    past the lock-step simulator's patience, so every state nobody answers meanwhile is a lost command."""

    def build(self, arm, prep):
        import threading

        done = threading.Event()
        # wait for the holder's answers, or the time an unanswered robot takes to count three lost commands
        deadline = 3.2 * 0.5
        while not done.wait(0.01):
            deadline -= 0.01
            if arm.held_cycles >= 800 or deadline <= 0:
                done.set()
        return super().build(arm, prep)


def test_every_state_between_the_warm_up_and_the_first_tick_is_answered(tmp_path):
    import gc
    import sys

    switch = sys.getswitchinterval()
    arm = open_arm(URL)
    try:
        run = ArmRun(
            SlowBuildJob(settings()), clock=clock_of(arm), out_dir=tmp_path, command="t", analyse=False
        )
        result = run.run(arm)
        held = arm.held_cycles
    finally:
        arm.close()
    assert result.outcome.status == RunStatus.COMPLETE, result.outcome.reason
    _, df = read_csv(result.path)
    state = df[df.event == "state"]
    # the robot's own count: not one command it waited for was missing, before or during the stream
    assert state.success.min() == 1.0 and result.outcome.lost_cycles == 0
    assert held > 0  # the robot's states while the plan was built were answered, with the held pose
    # the interpreter held still for the holder and the stream is as it was once both are done
    assert gc.isenabled() and sys.getswitchinterval() == switch


def test_a_recording_that_falls_behind_ends_the_run_braked_and_loses_no_row(tmp_path, monkeypatch):
    from servotool.io.csvlog import QueuedCsvLogWriter, RecordingBehind

    behind = {"now": False, "raised": 0}
    original = QueuedCsvLogWriter._emit

    def emit(self, data):
        original(self, data)  # the row is kept, as the writer keeps it when its queue is full
        if behind["now"] and not behind["raised"]:
            behind["raised"] += 1
            raise RecordingBehind("the recording fell behind the stream: 8192 rows were waiting")

    monkeypatch.setattr(QueuedCsvLogWriter, "_emit", emit)

    def slow_disk(info):
        if info.k >= 300:
            behind["now"] = True

    result = ramp(URL, tmp_path, on_tick=slow_disk)
    out = result.outcome
    assert out.status == RunStatus.ERROR and "fell behind" in (out.reason or "") and out.stop_ticks > 0
    meta, df = read_csv(result.path)
    assert not meta.complete and "fell behind" in (meta.end_reason or "")
    cmd = df[df.event == "cmd"]
    assert cmd.seq.tolist() == list(range(len(cmd)))  # every setpoint sent is recorded
    assert (df.event == "stop").sum() == 1 and "stop" in set(cmd.phase.dropna())
