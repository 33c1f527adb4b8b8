"""Bad frames (a value no device could report) in the runs: counted and left out of every decision."""

from __future__ import annotations

import numpy as np
import pytest

from servotool.clock import FakeClock
from servotool.devices.fake.arm import FakeArm
from servotool.io.captures import read_capture
from servotool.io.csvlog import CsvLogWriter, read_csv
from servotool.motion.guard import DivergenceGuard
from servotool.motion.shaper import StreamShaper
from servotool.recorder import AxisSample, Sweep
from servotool.recorder.summary import value
from servotool.runs.arm.stream import COMPLETE, DEVICE_ERROR, Streamer, StreamPlan, columns, units
from servotool.runs.recorder.loop import RecordSettings, run_record
from tests.recorder.helpers import ScriptedSource

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

T = 0.01
POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)


def test_an_impossible_state_frame_is_recorded_counted_and_never_the_guards_pose(tmp_path):
    # every 25th frame reads q1 = 1e300: compared with the setpoint it would trip the guard at once
    clock = FakeClock()
    arm = FakeArm(clock, state_s=T, bad_q1=(1e300, 25))
    shaper = StreamShaper(130.0, 500.0, T, n_joints=6)
    shaper.prime(POSE)
    n = 100
    plan = StreamPlan(np.tile(POSE, (n, 1)), np.zeros(n, dtype=int), np.array(["hold"] * n, dtype=object))
    path = tmp_path / "run.csv"
    with CsvLogWriter(
        path, device=arm.url, simulated=True, config={"mode": "test"}, units=units(6, True),
        columns=columns(6, True), command="test",
    ) as writer:  # fmt: skip
        streamer = Streamer(arm, clock, writer, period_s=T, shaper=shaper, guard=DivergenceGuard(2.7, 0.08))
        outcome = streamer.run(plan)
    assert outcome.status == COMPLETE and outcome.guard_reason is None
    assert outcome.bad_frames == 4 and outcome.to_dict()["bad_frames_left_out"] == 4
    assert "4 bad frames left out (impossible readings: q1 = 1e+300)" in outcome.notes
    _, df = read_csv(path)
    assert (df[df.event == "state"].q1 == 1e300).sum() == 4  # recorded as they came
    assert not len(df[df.event == "guard"])


class _BadSource(ScriptedSource):
    """The scripted bus with servo 12 reading 1e300 in every 10th sweep."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, overload={12: 55.0})
        self.sweeps = 0

    def read_fast(self) -> Sweep:
        sweep = super().read_fast()
        self.sweeps += 1
        if self.sweeps % 10:
            return sweep
        axes = dict(sweep.axes)
        axes[12] = AxisSample(1e300, 2050.0, 100.0, 0.0, 5.0, 31.0)
        return Sweep(sweep.t, sweep.group, axes)


def test_the_recorder_leaves_an_impossible_position_out_of_its_captures_and_counts_it(tmp_path):
    clock = FakeClock(50.0)
    warnings: list[str] = []
    out = run_record(
        _BadSource(clock), clock, RecordSettings(dest=tmp_path, duration_s=14.0), on_warning=warnings.append
    )
    assert out.status == "complete" and out.captures
    assert out.bad_frames == out.frames // 10
    assert out.bad_note and out.bad_note.startswith(f"{out.bad_frames} bad frames left out")
    assert len([w for w in warnings if "no device could report" in w]) == 1  # said once, as it came
    header, samples = read_capture(out.captures[0].path)
    assert header["trigger_axes"] == [12]
    fast = [s for s in samples if s["ring"] == "fast"]
    positions = [value(header, s, "12", "position") for s in fast]
    assert len(fast) > 20 and None in positions  # the impossible ones left out, the sweep kept
    assert all(p is None or p == 2048.0 for p in positions)
    assert all(value(header, s, "12", "current") is not None for s in fast)


class _RunawayArm(FakeArm):
    """Joint 1 runs away at 2000 deg/s from 0.3 s: within a tick or two it reads past every range."""

    def measured(self, t: float) -> tuple[float, ...]:
        out = super().measured(t)
        return (out[0] + 2000.0 * max(0.0, t - 0.3), *out[1:]) if t > 0.3 else out


def test_a_run_of_impossible_frames_ends_the_run_braked_never_a_blind_guard(tmp_path):
    # a lone impossible frame is left out; frames that stay past what the arm can report leave its pose
    # unknown: the run ends through the braked stop (or the guard trips first), it never streams on blind
    clock = FakeClock()
    arm = _RunawayArm(clock, state_s=T, lag_s=0.05)
    n = 200
    plan = StreamPlan(np.tile(POSE, (n, 1)), np.zeros(n, dtype=int), np.array(["hold"] * n, dtype=object))
    path = tmp_path / "run.csv"
    with CsvLogWriter(
        path, device=arm.url, simulated=True, config={"mode": "test"}, units=units(6, False),
        columns=columns(6, False), command="test",
    ) as writer:  # fmt: skip
        outcome = Streamer(arm, clock, writer, period_s=T).run(plan)  # no guard: the range check alone
    assert outcome.status == DEVICE_ERROR and outcome.exit_code == 3
    assert "5 state frames in a row read what the arm cannot report" in (outcome.reason or "")
    assert outcome.ticks_sent < n and outcome.stop_ticks > 0


def test_a_checked_bus_read_leaves_an_impossible_position_out_and_reads_again(arm):
    from servotool.runs.bus.reads import CheckedReads
    from servotool.runs.bus.servo import move_to, read_arm, read_limits

    bus, clock = arm("bad_read=15496&bad_read_every=2&lag_ms=0")
    reads = CheckedReads(bus)
    rest = {1: 500, 2: 776, 3: 211, 4: 161, 5: 500, 10: 499}
    # every servo answers 15496 to every other read: in two reads of the arm each meets one at least
    assert read_arm(bus, read=reads.position).pose == read_arm(bus, read=reads.position).pose == rest
    assert len(rest) <= reads.bad.count <= 2 * len(rest)
    assert reads.bad.examples[0].endswith("position = 15496")
    # a move starts from the true pose and ends where it was sent, never from an impossible one
    result = move_to(bus, clock, {1: 600}, limits=read_limits(bus), speed=250)
    assert result.start[1] == 500 and result.final[1] == 600


def test_a_servo_that_answers_only_impossible_values_is_silent_to_the_run(arm):
    from servotool.runs.bus.reads import CheckedReads

    bus, _ = arm("bad_read_3=15496&bad_read_every_3=1")
    reads = CheckedReads(bus)
    assert reads.position(3) is None and reads.bad.count == 3 and reads.position(1) == 500


def test_a_start_pose_is_never_an_impossible_frame(tmp_path):
    from servotool.devices.arm import DeviceError
    from servotool.runs.arm.prepare import wait_for_state

    clock = FakeClock()
    arm = FakeArm(clock, state_s=T, bad_q1=(1e300, 1))  # every frame after the first reads 1e300
    clock.advance(0.05)
    first = arm.latest_state()
    assert first is not None and first.q[0] == 1e300
    with pytest.raises(DeviceError, match=r"with a pose it can report \(q1 = 1e\+300\)"):
        wait_for_state(arm, clock, timeout_s=0.1)
    good = FakeArm(clock, state_s=T, bad_q1=(1e300, 2))  # every other frame: the next good one is taken
    clock.advance(0.02)
    assert wait_for_state(good, clock).q[0] == POSE[0]
