"""The streaming loop on a FakeClock with a scripted arm: deadlines, stamping, every way a run ends early."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from servotool.analysis.recording import recording_from_frame
from servotool.clock import FakeClock
from servotool.devices.arm import CommandNames, ConnectionLost, Fault, StateFrame
from servotool.devices.fake.arm import FakeArm
from servotool.io.csvlog import CsvLogWriter, read_csv
from servotool.motion.guard import DivergenceGuard
from servotool.motion.ramp import ramp_profile
from servotool.motion.shaper import StreamShaper
from servotool.runs.arm.lateness import BIN_S, LatenessStats
from servotool.runs.arm.run import ArmRun, RunCallbacks, RunOptions, StreamSetup
from servotool.runs.arm.stream import (
    COMPLETE,
    CONNECTION_LOST,
    ERROR,
    FAULT,
    GUARD,
    INTERRUPTED,
    RunStatus,
    StopSettings,
    Streamer,
    StreamPlan,
    columns,
    finish,
    prepare,
    units,
)

T = 0.01
RUNAWAY = Fault((1, 32), "main 1 sub 32", "the runaway latch")
POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)


class ScriptedArm(FakeArm):
    """The shipped fake arm (servotool.devices.fake.arm) with a script of failures: `fail_at` {send index:
    an exception to raise, "sigint" (a real SIGINT to the process) or "lost" (the cable pulled)}; a
    controller fault latched from `fault_from` (fake time); the first joint running away at
    `runaway_speed` deg/s from `runaway_from`."""

    command_names = CommandNames(servo_end="ServoMoveEnd")  # the notes quote the device's own names

    def __init__(self, clock: FakeClock, **kwargs):
        self.fail_at: dict[int, BaseException | str] = {}
        self.fault_from: float | None = None
        self.runaway_from: float | None = None
        self.runaway_speed = 180.0
        super().__init__(clock, **kwargs)

    def measured(self, t: float) -> tuple[float, ...]:
        out = super().measured(t)
        if self.runaway_from is not None and t > self.runaway_from:
            out = (out[0] + self.runaway_speed * (t - self.runaway_from), *out[1:])
        return out

    def _frame(self, t: float) -> StateFrame:
        frame = super()._frame(t)
        if self.fault_from is not None and t >= self.fault_from:
            frame = dataclasses.replace(frame, fault=RUNAWAY)
        return frame

    def servo_j(self, q, cmd_period_s: float):
        what = self.fail_at.get(self.sends) if self.lost is None else None
        if what == "sigint":
            os.kill(os.getpid(), signal.SIGINT)
        elif what == "lost":
            self.sends += 1
            self.lose("fake: cable pulled")
            raise ConnectionLost(self.lost)
        elif isinstance(what, BaseException):
            self.sends += 1
            raise what
        return super().servo_j(q, cmd_period_s)


def ramp_plan(start: float = 0.0, sweep: float = 5.0, speeds=(20.0, 40.0)) -> StreamPlan:
    prof = ramp_profile(start, sweep, speeds, dt=T, ramp_s=0.1, settle_s=0.3)
    targets = np.tile(POSE, (len(prof), 1))
    targets[:, 0] = prof.q
    return StreamPlan(targets, prof.pass_index, prof.phase)


def hold_plan(n: int) -> StreamPlan:
    return StreamPlan(np.tile(POSE, (n, 1)), np.zeros(n, dtype=int), np.array(["hold"] * n, dtype=object))


def run(tmp_path: Path, arm: ScriptedArm, clock: FakeClock, plan: StreamPlan, **kwargs):
    path = tmp_path / "run.csv"
    raw = kwargs.get("shaper") is not None
    with CsvLogWriter(
        path,
        device=arm.url,
        simulated=True,
        config={"mode": "test"},
        units=units(6, raw),
        columns=columns(6, raw),
        command="test",
    ) as writer:
        outcome = Streamer(arm, clock, writer, period_s=T, **kwargs).run(plan)
        if not outcome.complete:
            writer.interrupt(outcome.reason)
    meta, df = read_csv(path)
    return outcome, meta, df, path


def stop_rows(df):
    cmd = df[df.event == "cmd"]
    return cmd[cmd.phase.isin(["stop", "rest"])]


def test_sends_on_absolute_deadlines_and_records_everything(tmp_path):
    clock = FakeClock(100.0)
    arm = ScriptedArm(clock)
    plan = ramp_plan()
    outcome, meta, df, _ = run(tmp_path, arm, clock, plan)
    assert outcome.status == COMPLETE and meta.complete
    cmd = df[df.event == "cmd"]
    assert len(cmd) == len(plan)
    # tick k goes out at exactly start + k * period, recorded relative to the run start
    np.testing.assert_allclose(cmd.t.to_numpy(), np.arange(len(plan)) * T, atol=1e-9)
    np.testing.assert_allclose(cmd.q1.to_numpy(), plan.targets[:, 0])
    assert (cmd.seq.to_numpy() == np.arange(len(plan))).all()
    st = df[df.event == "state"]
    assert len(st) >= len(plan) * T / arm.state_s - 2
    assert np.all(np.diff(df.t.to_numpy()) >= 0)  # rows in time order
    assert outcome.late_ticks == 0


def test_ctrl_c_stops_through_a_braking_profile_and_marks_the_csv(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    plan = ramp_plan(sweep=10.0, speeds=(40.0,))
    cruise = int(np.flatnonzero(plan.phase == "cruise")[3])
    arm.fail_at[cruise] = KeyboardInterrupt()
    a_max = 500.0
    outcome, meta, df, path = run(tmp_path, arm, clock, plan, stop=StopSettings(a_max=a_max))
    assert outcome.status == INTERRUPTED and outcome.reason == "Ctrl-C"
    assert not meta.complete and meta.end_reason == "Ctrl-C"
    assert path.read_text().rstrip().endswith("# end: interrupted: Ctrl-C")
    stop = df[df.event == "stop"]
    assert list(stop["info"]) == ["Ctrl-C"]
    q = df[df.event == "cmd"].q1.to_numpy()
    v = np.diff(q) / T
    # the stream never jumps in velocity: the stop brakes at a_max from cruise speed to rest
    assert np.max(np.abs(np.diff(v))) <= a_max * T + 1e-6
    assert abs(v[-1]) < 1e-9
    s = stop_rows(df)
    assert (s.phase == "stop").sum() == pytest.approx(40.0 / (a_max * T), abs=1)
    assert outcome.at_rest is True


@pytest.mark.parametrize("phase", ["ramp-up", "cruise", "ramp-down", "settle"])
def test_a_stop_at_any_tick_of_a_ramp_stays_within_a_max(tmp_path, phase):
    """Whatever the tick (accelerating, cruising, already slowing down), the stop's speed changes by at most
    a_max * period per tick, the first braking tick included."""
    a_max = 500.0
    plan = ramp_plan(sweep=10.0, speeds=(40.0,))
    ticks = np.flatnonzero(plan.phase == phase)
    for i, k in enumerate(ticks[:: max(1, len(ticks) // 4)]):
        clock = FakeClock()
        arm = ScriptedArm(clock)
        arm.fail_at[int(k)] = KeyboardInterrupt()
        _, _, df, _ = run(tmp_path / f"{phase}{i}", arm, clock, plan, stop=StopSettings(a_max=a_max))
        v = np.diff(df[df.event == "cmd"].q1.to_numpy()) / T
        assert np.max(np.abs(np.diff(v))) <= a_max * T * (1 + 1e-9) + 1e-9, (phase, int(k))
        assert abs(v[-1]) < 1e-9


def test_a_real_sigint_is_taken_as_a_stop_request(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    plan = ramp_plan(sweep=10.0, speeds=(40.0,))
    arm.fail_at[30] = "sigint"
    outcome, meta, df, _ = run(tmp_path, arm, clock, plan)
    assert outcome.status == INTERRUPTED and meta.end_reason == "Ctrl-C"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    assert len(stop_rows(df)) > 0


def test_a_lost_connection_ends_the_run_cleanly(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    plan = ramp_plan()
    arm.fail_at[40] = "lost"
    outcome, meta, df, path = run(tmp_path, arm, clock, plan)
    assert outcome.status == CONNECTION_LOST
    assert "cable pulled" in outcome.reason
    assert not meta.complete and "connection lost" in meta.end_reason
    assert len(df[df.event == "cmd"]) == 40  # nothing after the loss
    assert arm.sends == 41
    assert finish(arm, keep=False)  # servo_end fails and says so, disable still tried
    assert arm.calls[-1] == "disable"


class _RecordingArm(ScriptedArm):
    """A ScriptedArm that keeps every state frame it emitted (`emitted`), polled or not."""

    def __init__(self, clock: FakeClock, **kwargs):
        self.emitted: list[StateFrame] = []
        super().__init__(clock, **kwargs)

    def _advance(self, now: float) -> None:
        before = len(self.frames)
        super()._advance(now)
        self.emitted += self.frames[before:]


@pytest.mark.parametrize("when", ["loop", "stop"])
def test_every_state_frame_received_before_a_lost_link_is_recorded(tmp_path, when):
    # the send that finds the link lost comes before its tick's poll: the frames that came since the last
    # poll (two at 8 ms over a 10 ms tick) were left unread, and missing from the CSV
    clock = FakeClock()
    arm = _RecordingArm(clock)
    if when == "loop":
        arm.fail_at[40] = "lost"
    else:  # the loss is found by a send of the braked stop after Ctrl-C
        arm.fail_at[40], arm.fail_at[44] = "sigint", "lost"
    outcome, _, df, _ = run(tmp_path, arm, clock, ramp_plan())
    assert outcome.status == (CONNECTION_LOST if when == "loop" else INTERRUPTED)
    cmd = df[df.event == "cmd"]
    t0 = arm.sent_t[1] - float(cmd.t.iloc[0])
    t_loss = t0 + (40 if when == "loop" else 44) * T
    expected = [round(f.t - t0, 9) for f in arm.emitted if t0 - 1e-9 <= f.t <= t_loss + 1e-9]
    recorded = [round(float(t), 9) for t in df[df.event == "state"].t]
    assert recorded == expected
    # in time order: the frames from before the loss come before the stop row
    assert df.index[df.event == "state"].max() < df.index[df.event == "stop"].min() or when == "stop"


def test_a_controller_fault_is_recorded_and_ends_the_run(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    arm.fault_from = 0.5
    plan = hold_plan(200)
    outcome, meta, df, _ = run(tmp_path, arm, clock, plan)
    assert outcome.status == FAULT and outcome.fault == (1, 32)
    assert outcome.fault_t == pytest.approx(0.5, abs=0.01)
    faults = df[df.event == "fault"]
    assert len(faults) == 1 and int(faults.main_code.iloc[0]) == 1 and int(faults.sub_code.iloc[0]) == 32
    assert "main 1 sub 32" in meta.end_reason
    # the fault by its name and what it means, in the outcome and the CSV's end line alike
    assert outcome.reason == "controller fault main 1 sub 32: the runaway latch"
    assert meta.end_reason.endswith("main 1 sub 32: the runaway latch")
    assert len(df[(df.event == "cmd") & (df.phase == "hold")]) < 60


def test_guard_catches_an_arm_moving_on_its_own_within_two_ticks(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock, state_s=T)
    onset = 0.3
    arm.runaway_from = onset
    shaper = StreamShaper(130.0, 500.0, T, n_joints=6)
    shaper.prime(POSE)
    guard = DivergenceGuard(2.7, 0.08)
    outcome, meta, df, _ = run(tmp_path, arm, clock, hold_plan(100), shaper=shaper, guard=guard)
    assert outcome.status == GUARD
    # 180 deg/s: 1.8 deg per tick, beyond the 2.7 deg margin in the second tick after the arm starts
    assert outcome.guard_t - onset <= 2 * T + 1e-9
    assert len(df[df.event == "guard"]) == 1
    assert "diverged" in meta.end_reason


def step_plan(size: float, pre_s: float = 0.2, n: int = 100) -> StreamPlan:
    """A hold at POSE for pre_s, then J1's target `size` deg away (the shaper makes the motion)."""
    targets = np.tile(POSE, (n, 1))
    targets[int(round(pre_s / T)) :, 0] += size
    return StreamPlan(targets, np.zeros(n, dtype=int), np.array(["hold"] * n, dtype=object))


def shaped_guarded() -> dict:
    shaper = StreamShaper(130.0, 500.0, T, n_joints=6)
    shaper.prime(POSE)
    return {"shaper": shaper, "guard": DivergenceGuard(2.7, 0.08)}


def test_a_state_stream_that_stalls_mid_step_is_a_lost_link_not_a_guard_trip(tmp_path):
    # the setpoints move on while the newest pose stays the one from before the stall: judged as if it were
    # fresh, it diverges beyond the allowance (the guard tripped, exit 1) before the 100 ms watchdog fires
    clock = FakeClock()
    arm = ScriptedArm(clock)
    arm.stall = (0.3, None)  # in the middle of the shaped 10 deg step that starts at 0.2 s
    outcome, meta, df, _ = run(tmp_path, arm, clock, step_plan(10.0), **shaped_guarded())
    assert outcome.status == CONNECTION_LOST and outcome.exit_code == 3
    assert outcome.guard_reason is None and not len(df[df.event == "guard"])
    assert "no state frame" in meta.end_reason
    # ticks from 16 ms after the last frame until the loss were left unjudged, and the note says so
    assert any(n.startswith("the guard left unjudged 8 ticks") for n in outcome.notes), outcome.notes


def test_a_late_frame_on_a_healthy_stream_leaves_a_tick_unjudged_without_a_note(tmp_path):
    # a 40 ms gap between frames (a loaded host): two ticks see a pose over 20 ms old and are not judged, the
    # next frame is; the run completes, and a hiccup that short is no news in its notes
    clock = FakeClock()
    arm = ScriptedArm(clock)
    arm.stall = (0.3, 0.33)
    outcome, meta, df, _ = run(tmp_path, arm, clock, step_plan(10.0), **shaped_guarded())
    assert outcome.status == COMPLETE and meta.complete
    assert not any(n.startswith("the guard left unjudged") for n in outcome.notes), outcome.notes


def test_a_fresh_frame_beyond_bounds_after_a_stall_trips_the_guard_at_once(tmp_path):
    # a real trip stays a trip: the arm runs away during a 60 ms stall (under the 100 ms watchdog); the first
    # frame after it is fresh and beyond bounds, and the guard trips on the tick that receives it
    clock = FakeClock()
    arm = ScriptedArm(clock, state_s=T)
    arm.runaway_from, arm.stall = 0.3, (0.3, 0.36)
    outcome, meta, df, _ = run(tmp_path, arm, clock, hold_plan(100), **shaped_guarded())
    assert outcome.status == GUARD and "diverged" in meta.end_reason
    assert 0.36 <= outcome.guard_t <= 0.36 + 1e-9


def test_prepare_warms_up_before_the_run_and_finish_disables(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    clock.advance(0.1)
    prep = prepare(arm, clock, T)
    assert arm.calls[:3] == ["enable", "servo_start", "warm_up"]
    np.testing.assert_allclose(prep.pose, POSE)
    assert finish(arm, keep=True) == [] and "disable" not in arm.calls
    assert finish(arm, keep=False) == [] and arm.calls[-1] == "disable"


def test_a_recording_on_the_fake_arm_reads_back_its_exact_lag(tmp_path):
    from servotool.analysis.lag import analyze_lag

    clock = FakeClock()
    arm = ScriptedArm(clock, lag_s=0.063)
    outcome, meta, df, _ = run(tmp_path, arm, clock, ramp_plan(sweep=8.0, speeds=(10.0, 20.0, 40.0)))
    res = analyze_lag(recording_from_frame(df), joint=0, cmd_period_s=T)
    assert res.fit.lag_ms == pytest.approx(63.0, abs=0.05)
    assert res.midpoint.mean_ms == pytest.approx(63.0, abs=0.3)
    assert res.dynamics.lag_ms == pytest.approx(63.0, abs=0.3) and not res.dynamics.has_filter
    # the guard sees the newest frame, on average half a state period old
    assert res.guard_fit.lag_ms == pytest.approx(63.0 + 4.0, abs=1.5)
    assert res.model.constant


def test_an_exception_in_our_own_code_still_ends_through_the_braked_stop(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    plan = ramp_plan(sweep=10.0, speeds=(40.0,))
    cruise = int(np.flatnonzero(plan.phase == "cruise")[3])

    def on_tick(info):
        if info.k >= cruise:
            raise ZeroDivisionError("a bug in a progress callback")

    outcome, meta, df, _ = run(tmp_path, arm, clock, plan, on_tick=on_tick, tick_every=1)
    assert outcome.status == ERROR and "ZeroDivisionError" in outcome.reason
    assert outcome.exit_code == 1
    assert not meta.complete and "ZeroDivisionError" in meta.end_reason
    q = df[df.event == "cmd"].q1.to_numpy()
    v = np.diff(q) / T
    assert np.max(np.abs(np.diff(v))) <= 500.0 * T + 1e-6  # braked, never a velocity jump
    assert abs(v[-1]) < 1e-9 and outcome.at_rest is True


def test_lateness_is_kept_in_bounded_memory_with_quantiles_within_a_bin():
    rng = np.random.default_rng(7)
    late = np.concatenate([rng.exponential(0.0002, 20_000), rng.uniform(0.004, 0.02, 200)])
    stats = LatenessStats(late_threshold_s=T / 2)
    size = stats._hist.nbytes
    for x in late:
        stats.add(float(x))
    assert stats._hist.nbytes == size  # nothing grows with the ticks
    assert stats.count == len(late)
    assert stats.max_s == pytest.approx(late.max())
    assert stats.mean_s == pytest.approx(late.mean())
    assert stats.late_ticks == int(np.sum(late > T / 2))
    for q in (0.5, 0.99):
        assert abs(stats.quantile_s(q) - np.quantile(late, q)) <= BIN_S + 1e-12


def test_run_status_values_and_exit_codes_are_the_documented_ones():
    assert [s.value for s in RunStatus] == [
        "complete",
        "interrupted",
        "fault",
        "guard",
        "rejected",
        "connection-lost",
        "device-error",
        "error",
    ]
    assert {s: int(s.exit_code) for s in RunStatus} == {
        RunStatus.COMPLETE: 0,
        RunStatus.INTERRUPTED: 130,
        RunStatus.FAULT: 1,
        RunStatus.GUARD: 1,
        RunStatus.REJECTED: 1,
        RunStatus.CONNECTION_LOST: 3,
        RunStatus.DEVICE_ERROR: 3,
        RunStatus.ERROR: 1,
    }
    assert json.dumps({"status": COMPLETE}) == '{"status": "complete"}'


class _HoldJob:
    """A job that holds the start pose for n ticks (what a recorder session would stream)."""

    mode = "hold"

    def __init__(self, n: int, fail_in_build: bool = False) -> None:
        self.n = n
        self.fail_in_build = fail_in_build
        self.options = RunOptions(cmd_period_s=T)
        self.checked: list[str] = []

    def check_settings(self) -> None:
        self.checked.append("settings")

    def check_arm(self, arm) -> None:
        self.checked.append("arm")

    def goal_problems(self, ranges, start) -> list[str]:
        self.checked.append("goals")
        return []

    def build(self, arm, prep):
        if self.fail_in_build:
            raise RuntimeError("cannot build")
        targets = np.tile(prep.pose, (self.n, 1))
        return StreamSetup(plan=StreamPlan(targets), config={"mode": "hold"}, message="holding")


def test_the_run_skeleton_orders_its_stages_and_always_finishes(tmp_path):
    clock = FakeClock()
    arm = ScriptedArm(clock)
    clock.advance(0.1)
    job = _HoldJob(50)
    said: list[str] = []
    result = ArmRun(
        job,
        clock=clock,
        out_dir=tmp_path,
        command="test",
        callbacks=RunCallbacks(on_status=said.append),
        analyse=False,
    ).run(arm)
    assert job.checked == ["settings", "arm", "goals"]
    assert arm.calls == ["enable", "servo_start", "warm_up", "servo_end", "disable"]
    assert result.outcome.complete and result.path.exists()
    meta, df = read_csv(result.path)
    assert meta.complete and meta.mode == "hold" and len(df[df.event == "cmd"]) == 50
    assert said[-1] == "holding"
    d = result.to_dict()
    assert list(d) == ["run", "notes", "analysis", "analysis_error"] and d["run"]["status"] == "complete"

    # a failure after the warm-up, before the stream: the robot is still taken out of servo mode and
    # disabled, and no CSV is left behind
    arm2 = ScriptedArm(clock)
    with pytest.raises(RuntimeError, match="cannot build"):
        ArmRun(_HoldJob(10, fail_in_build=True), clock=clock, out_dir=tmp_path / "b").run(arm2)
    assert arm2.calls[-2:] == ["servo_end", "disable"]
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").iterdir())


@pytest.mark.parametrize(
    "answer",
    [ValueError("invalid literal for int()"), IndexError("empty answer"), KeyError("unexpected reply")],
)
def test_finish_disables_whatever_ending_servo_mode_raises(answer):
    """finish never raises: a controller answer the client cannot read (not a DeviceError) must not skip
    the disable."""
    clock = FakeClock()
    arm = ScriptedArm(clock)

    def servo_end():
        arm.calls.append("servo_end")
        raise answer

    arm.servo_end = servo_end
    notes = finish(arm, keep=False)
    assert arm.calls[-2:] == ["servo_end", "disable"]
    assert len(notes) == 1 and "ServoMoveEnd failed" in notes[0] and type(answer).__name__ in notes[0]
