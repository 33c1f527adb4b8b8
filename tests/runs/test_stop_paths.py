"""Ways out of a run that are not the operator's: a bug inside the loop still ends braked (exit 1), and a
run whose goals or owner are wrong is refused after connecting, before anything is enabled."""

from __future__ import annotations

import numpy as np
import pytest

from servotool.clock import FakeClock
from servotool.devices.registry import open_arm
from servotool.errors import Refused
from servotool.io.csvlog import read_csv
from servotool.runs.arm.step import StepSettings, run_step

A_MAX, PERIOD = 500.0, 0.01
# in simulated time (lock-step on a FakeClock): the same run whatever the load on the machine
SIM = "sim:fr3?enable_ms=300"


def test_an_exception_in_our_own_code_inside_the_loop_ends_braked(tmp_path):
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)

    def injected(info):
        if info.k >= 65:  # mid-way through the first shaped step (the pre-hold is 50 ticks)
            raise RuntimeError("injected fault in a callback")

    try:
        run = run_step(
            arm,
            StepSettings(steps=2, hold_s=0.4, realtime=False),
            clock=clock,
            out_dir=tmp_path,
            on_tick=injected,
        )
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    assert not snap.servo_active and not snap.enabled
    assert run.outcome.status == "error" and run.outcome.exit_code == 1
    csv = next(tmp_path.glob("step_*.csv"))
    end = csv.read_text().rstrip().splitlines()[-1]
    assert end.startswith("# end: interrupted: internal error: RuntimeError")
    _, df = read_csv(csv)
    cmd = df[df["event"] == "cmd"]["q1"].to_numpy(dtype=float)
    v = np.diff(cmd) / PERIOD
    assert np.abs(np.diff(v)).max() <= A_MAX * PERIOD * (1 + 1e-6)
    assert np.abs(v[-60:-50]).max() > 1.0  # it was moving when the bug struck ...
    assert v[-1] == 0.0  # ... and was brought to rest


def _stall_mid_step(tmp_path, fault):
    """A step run on simulated time whose controller goes `fault` ("silent": the state stream alone;
    "garbled": its data frames keep coming but cannot be read; "frozen": nothing answers) in the middle of
    the first shaped step; (run, end line, controller state)."""
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)

    def inject(info):
        if info.k == 65:  # mid-way through the first shaped step (the pre-hold is 50 ticks)
            if fault == "silent":
                arm.sim.hold_stream(True)
            elif fault == "garbled":
                arm.sim.garble_stream(True)
            else:
                arm.sim.freeze(True)

    try:
        run = run_step(
            arm,
            StepSettings(steps=2, hold_s=0.4, realtime=False),
            clock=clock,
            out_dir=tmp_path,
            on_tick=inject,
        )
        snap = arm.sim.snapshot()
    finally:
        arm.close()  # a frozen simulator lets its held calls go as it stops
    csv = next(tmp_path.glob("step_*.csv"))
    _, df = read_csv(csv)
    assert not len(df[df["event"] == "guard"])  # a stale pose is not judged as if it were fresh
    return run, csv.read_text().rstrip().splitlines()[-1], snap


def test_a_state_stream_that_goes_silent_mid_step_is_a_lost_link_not_a_guard_trip(tmp_path):
    run, end, snap = _stall_mid_step(tmp_path, "silent")
    assert run.outcome.status == "connection-lost" and run.outcome.exit_code == 3
    assert end.startswith("# end: interrupted: connection lost:") and "no state frame" in end
    # XML-RPC still answers: the stop is confirmed, and the end line says nothing more
    assert "could not be confirmed" not in end
    assert not snap.servo_active and not snap.enabled


def test_a_state_stream_of_unreadable_frames_mid_step_is_a_lost_link_not_a_blind_run(tmp_path):
    # frames that keep coming but cannot be read reach no one: the guard, which judges fresh frames only, has
    # nothing to judge, so they must not keep the link watchdog quiet (before, the run streamed to the end
    # of its plan unguarded and ended "complete")
    run, end, snap = _stall_mid_step(tmp_path, "garbled")
    assert run.outcome.status == "connection-lost" and run.outcome.exit_code == 3
    assert end.startswith("# end: interrupted: connection lost:") and "no readable state frame" in end
    assert "unreadable" in end
    assert "could not be confirmed" not in end  # XML-RPC still answers
    assert not snap.servo_active and not snap.enabled


def test_a_controller_that_freezes_mid_step_ends_lost_with_its_stop_unconfirmed(tmp_path):
    run, end, _ = _stall_mid_step(tmp_path, "frozen")
    assert run.outcome.status == "connection-lost" and run.outcome.exit_code == 3
    assert end.startswith("# end: interrupted: connection lost:") and "no state frame" in end
    # both calls of the stop were tried, once each, and the end line and the verdict name them
    unanswered = "got no answer within 0.5 s after the link was lost"
    unconfirmed = f"; the stop could not be confirmed: ServoMoveEnd {unanswered}; RobotEnable {unanswered}"
    assert end.endswith(unconfirmed) and run.outcome.reason.endswith(unconfirmed)


class _Busy:
    """An arm whose controller says another client streams to it (the Arm's busy_reason)."""

    def __init__(self, arm, reason):
        self._arm, self._reason = arm, reason
        self.calls = []

    def __getattr__(self, name):
        attr = getattr(self._arm, name)
        if callable(attr) and name not in ("busy_reason", "poll_states", "latest_state"):
            self.calls.append(name)
        return attr

    def busy_reason(self):
        return self._reason


def test_an_arm_someone_else_drives_is_refused_before_enabling(tmp_path):
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)
    try:
        busy = _Busy(arm, "another client is in servo mode")
        with pytest.raises(Refused, match="another client is in servo mode"):
            run_step(busy, StepSettings(realtime=False), clock=clock, out_dir=tmp_path)
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    assert not snap.enabled and snap.cmd_num == 0
    # the other owner's arm is left alone: no reset, enable, servo mode change or disable from us
    assert not {"reset_faults", "enable", "servo_start", "servo_end", "disable", "servo_j"} & set(busy.calls)
    assert not list(tmp_path.glob("*.csv"))


class _Ranged:
    def __init__(self, arm, ranges):
        self._arm, self.joint_ranges = arm, ranges

    def __getattr__(self, name):
        return getattr(self._arm, name)


def test_a_goal_outside_the_joint_range_is_refused_before_enabling(tmp_path):
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)  # J1 starts at 0 deg
    ranges = ((-100.0, 175.0),) + ((-265.0, 85.0),) * 5  # only the -X level leaves the range
    try:
        with pytest.raises(Refused, match=r"goal -170.00 deg of J1"):
            run_step(
                _Ranged(arm, ranges),
                StepSettings(size_deg=170.0, realtime=False),
                clock=clock,
                out_dir=tmp_path,
            )
        with pytest.raises(Refused, match=r"goal 180.00 deg of J1"):
            run_step(
                _Ranged(arm, ((-170.0, 170.0),) * 6),
                StepSettings(size_deg=180.0, realtime=False),
                clock=clock,
                out_dir=tmp_path,
            )
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    assert not snap.enabled and snap.cmd_num == 0


class _Recorded:
    """The arm, with every setpoint sent kept (the CSV cannot be trusted when the disk is full)."""

    def __init__(self, arm):
        self._arm, self.sent = arm, []

    def servo_j(self, q, period):
        self.sent.append(q[0])
        return self._arm.servo_j(q, period)

    def __getattr__(self, name):
        return getattr(self._arm, name)


def test_a_recording_that_cannot_be_written_mid_run_still_ends_braked(tmp_path, monkeypatch):
    import errno

    from servotool.io.csvlog import CsvLogWriter

    full = {"disk": False}
    original = CsvLogWriter.write

    def write(self, row=None, /, **fields):
        if full["disk"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, row, **fields)

    monkeypatch.setattr(CsvLogWriter, "write", write)
    monkeypatch.setattr(CsvLogWriter, "close", lambda self: write(self, {}))  # the end line fails too
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)
    recorded = _Recorded(arm)

    def fill_the_disk(info):
        if info.k >= 65:  # mid-way through the first shaped step
            full["disk"] = True

    try:
        run = run_step(
            recorded,
            StepSettings(steps=2, hold_s=0.4, realtime=False),
            clock=clock,
            out_dir=tmp_path,
            on_tick=fill_the_disk,
        )
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    assert not snap.servo_active and not snap.enabled
    assert run.outcome.status == "error" and "No space left on device" in (run.outcome.reason or "")
    v = np.diff(np.array(recorded.sent)) / PERIOD
    assert np.abs(np.diff(v)).max() <= A_MAX * PERIOD * (1 + 1e-6)
    assert np.abs(v[-60:-50]).max() > 1.0 and v[-1] == 0.0  # it was moving, and was brought to rest


def test_a_loop_that_stalled_ends_braked_and_never_catches_up_in_a_burst(tmp_path):
    """The process stopped for 1 s in the middle of a shaped step (Ctrl-Z then fg, a host that froze): the
    controller had no setpoint meanwhile. Before, the loop then sent every missed tick back to back (100
    setpoints within 3 ms: the rest of the plan, out and back, at once) and called the run complete. Now the
    run ends there through the braked stop, on the current tick, exit 1."""
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)

    def suspend(info):
        if info.k == 65:  # mid-way through the first shaped step, the arm moving
            clock.sleep(1.0)

    try:
        run = run_step(
            arm,
            StepSettings(steps=2, hold_s=0.4, realtime=False),
            clock=clock,
            out_dir=tmp_path,
            on_tick=suspend,
        )
        snap = arm.sim.snapshot()
    finally:
        arm.close()
    assert not snap.servo_active and not snap.enabled and (snap.main_code, snap.sub_code) == (0, 0)
    assert run.outcome.status == "error" and run.outcome.exit_code == 1
    csv = next(tmp_path.glob("step_*.csv"))
    assert csv.read_text().rstrip().splitlines()[-1].startswith("# end: interrupted: the stream stalled")
    _, df = read_csv(csv)
    cmd = df[df["event"] == "cmd"]
    t, q = cmd["t"].to_numpy(dtype=float), cmd["q1"].to_numpy(dtype=float)
    assert np.diff(t).min() > PERIOD / 2  # no burst
    assert len(q) < 120 and q[-1] != q[65]  # the plan went no further; the stop braked from its speed
    increments = np.diff(q)  # per command, as the controller sees them: no jump, the gap included
    assert np.abs(np.diff(increments)).max() <= A_MAX * PERIOD**2 * (1 + 1e-6)
    assert increments[-1] == 0.0
    assert not [n for n in run.outcome.notes if "during the stop" in n]
